#include "mmpt/ingest/merge.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "mmpt/core/mapped_file.h"
#include "mmpt/store/planning_table.h"

namespace mmpt::ingest {
namespace fs = std::filesystem;

namespace {

struct Part {
  std::string manifest_path;
  fs::path base;  // directory the part's shard paths are relative to
  store::Manifest manifest;
};

Status AddParts(const std::string& input, std::vector<Part>& parts) {
  std::error_code error;
  std::vector<std::string> files;
  if (fs::is_directory(input, error)) {
    if (fs::exists(fs::path(input) / store::kManifestName)) {
      files.push_back((fs::path(input) / store::kManifestName).string());
    } else {
      for (const auto& entry : fs::directory_iterator(input, error)) {
        std::string name = entry.path().filename().string();
        if (name.rfind("mmpt.part-", 0) == 0 && name.size() > 5 &&
            name.substr(name.size() - 5) == ".json") {
          files.push_back(entry.path().string());
        }
      }
      std::sort(files.begin(), files.end());
      if (files.empty()) {
        return Status::NotFound("{}: neither {} nor mmpt.part-*.json", input, store::kManifestName);
      }
    }
  } else {
    files.push_back(input);
  }
  for (const std::string& file : files) {
    Part part;
    part.manifest_path = file;
    part.base = fs::absolute(fs::path(file).parent_path()).lexically_normal();
    MMPT_ASSIGN_OR_RETURN(part.manifest, store::ReadManifestFile(file));
    parts.push_back(std::move(part));
  }
  return Status::OK();
}

}  // namespace

Result<store::Manifest> MergeDatasets(const std::string& out_dir,
                                      const std::vector<std::string>& inputs) {
  if (inputs.empty()) return Status::InvalidArgument("merge: no parts given");
  std::vector<Part> parts;
  for (const std::string& input : inputs) MMPT_RETURN_IF_ERROR(AddParts(input, parts));
  const store::Manifest& first = parts.front().manifest;
  for (const Part& part : parts) {
    const store::Manifest& m = part.manifest;
    if (!m.SameAs(first)) {
      return Status::InvalidArgument(
          "{} was prepared with {}; {} with {}: token counts would not be comparable (prepare "
          "them with the same settings)",
          part.manifest_path, m.Describe(), parts.front().manifest_path, first.Describe());
    }
  }
  std::error_code error;
  fs::create_directories(out_dir, error);
  if (error) return Status::IOError("{}: cannot create: {}", out_dir, error.message());
  const fs::path out = fs::absolute(out_dir).lexically_normal();

  std::vector<std::string> sources;
  std::vector<std::string> bases;
  struct Keyed {
    size_t source_rank, base_rank;
    store::ShardInfo shard;
  };
  std::vector<Keyed> shards;
  std::set<std::string> seen;
  for (const Part& part : parts) {
    auto base_it = std::find(bases.begin(), bases.end(), part.base.string());
    size_t base_rank = base_it - bases.begin();
    if (base_it == bases.end()) bases.push_back(part.base.string());
    for (store::ShardInfo shard : part.manifest.shards) {
      fs::path absolute = (part.base / shard.stem).lexically_normal();
      if (!seen.insert(absolute.string()).second) {
        return Status::InvalidArgument("{}: shard {} is listed by more than one part",
                                       part.manifest_path, absolute.string());
      }
      for (const auto& [suffix, file] : shard.files) {
        std::string path = absolute.string() + suffix;
        uintmax_t size = fs::file_size(path, error);
        if (error) return Status::NotFound("{}: {}", path, error.message());
        if (size != file.bytes) {
          return Status::Corrupt("{}: {} bytes, {} says {}", path, size, part.manifest_path,
                                 file.bytes);
        }
      }
      auto source_it = std::find(sources.begin(), sources.end(), shard.source);
      size_t source_rank = source_it - sources.begin();
      if (source_it == sources.end()) sources.push_back(shard.source);
      shard.stem = absolute.lexically_relative(out).string();
      shards.push_back({source_rank, base_rank, std::move(shard)});
    }
  }
  std::stable_sort(shards.begin(), shards.end(), [](const Keyed& a, const Keyed& b) {
    return std::tie(a.source_rank, a.base_rank, a.shard.stem) <
           std::tie(b.source_rank, b.base_rank, b.shard.stem);
  });
  store::Manifest merged;
  merged.format_version = first.format_version;
  static_cast<store::DatasetSettings&>(merged) = first;
  for (Keyed& keyed : shards) merged.shards.push_back(std::move(keyed.shard));
  MMPT_RETURN_IF_ERROR(store::FinishDataset(out_dir, merged));
  return store::ReadManifest(out_dir);
}

}  // namespace mmpt::ingest
