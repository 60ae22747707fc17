#include "mmpt/vision/checkpoint.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

namespace mmpt::vision {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefixes[] = {"visual.", "model.visual."};
// A buffer some exports save; the encoder computes it from rope_theta.
constexpr std::string_view kRotaryTable = "rotary_pos_emb.inv_freq";

// The shard files an index names, in first-use order, relative to the index's folder.
Result<std::vector<std::string>> IndexShards(const std::string& index_path) {
  MMPT_ASSIGN_OR_RETURN(std::string text, ReadFileToString(index_path));
  auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto map = doc.is_object() ? doc.find("weight_map") : doc.end();
  if (doc.is_discarded() || !doc.is_object() || map == doc.end() || !map->is_object()) {
    return Status::Corrupt("{}: not a safetensors index (no object 'weight_map')", index_path);
  }
  const fs::path folder = fs::path(index_path).parent_path();
  std::vector<std::string> shards;
  std::set<std::string> seen;
  for (const auto& [name, file] : map->items()) {
    if (!file.is_string()) {
      return Status::Corrupt("{}: weight_map['{}'] is not a file name", index_path, name);
    }
    const std::string& shard = file.get_ref<const std::string&>();
    if (seen.insert(shard).second) shards.push_back((folder / shard).string());
  }
  return shards;
}

template <typename Range>
std::string Listed(const Range& names, size_t total) {
  std::string text = fmt::format("{}", fmt::join(names, ", "));
  if (total > names.size()) text += fmt::format(" and {} more", total - names.size());
  return text;
}

}  // namespace

Result<Checkpoint> Checkpoint::Open(const std::string& path) {
  std::string file = path;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (fs::exists(fs::path(path) / "model.safetensors", ec)) {
      file = (fs::path(path) / "model.safetensors").string();
    } else if (fs::exists(fs::path(path) / "model.safetensors.index.json", ec)) {
      file = (fs::path(path) / "model.safetensors.index.json").string();
    } else {
      return Status::NotFound("{}: no model.safetensors or model.safetensors.index.json in it",
                              path);
    }
  }
  std::vector<std::string> shards{file};
  if (file.ends_with(".json")) {
    MMPT_ASSIGN_OR_RETURN(shards, IndexShards(file));
  }
  Checkpoint c;
  c.path_ = path;
  std::set<std::string_view> names;
  for (const std::string& shard : shards) {
    MMPT_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::Open(shard));
    MMPT_ASSIGN_OR_RETURN(auto entries, ParseSafetensors(mapped.bytes(), shard));
    c.files_.push_back(std::move(mapped));
    for (TensorEntry& t : entries) c.tensors_.push_back(std::move(t));
  }
  for (const TensorEntry& t : c.tensors_) {
    if (!names.insert(t.name).second) {
      return Status::Corrupt("{}: tensor '{}' appears in two shards", path, t.name);
    }
  }
  // The tower's names: under a prefix when any tensor has one, else every name as it is.
  bool prefixed = false;
  for (const TensorEntry& t : c.tensors_) {
    for (std::string_view prefix : kPrefixes) prefixed |= t.name.starts_with(prefix);
  }
  for (const TensorEntry& t : c.tensors_) {
    std::string name = prefixed ? "" : t.name;
    for (std::string_view prefix : kPrefixes) {
      if (t.name.starts_with(prefix)) name = t.name.substr(prefix.size());
    }
    c.vision_names_.push_back(name == kRotaryTable ? "" : name);
  }
  return c;
}

const TensorEntry* Checkpoint::FindVision(std::string_view name) const {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (vision_names_[i] == name) return &tensors_[i];
  }
  return nullptr;
}

Result<std::vector<const TensorEntry*>> Checkpoint::Match(
    const std::vector<ParameterSpec>& specs) const {
  std::unordered_map<std::string_view, size_t> index;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (!vision_names_[i].empty()) index.emplace(vision_names_[i], i);
  }
  constexpr size_t kShown = 4;
  std::vector<std::string> missing, misshaped, unexpected;
  size_t n_missing = 0, n_misshaped = 0, n_unexpected = 0;
  std::vector<const TensorEntry*> matched;
  std::set<std::string_view> expected;
  for (const ParameterSpec& spec : specs) {
    expected.insert(spec.name);
    auto it = index.find(spec.name);
    if (it == index.end()) {
      if (n_missing++ < kShown) missing.push_back("'" + spec.name + "'");
      continue;
    }
    const TensorEntry& t = tensors_[it->second];
    if (t.shape != spec.shape && n_misshaped++ < kShown) {
      misshaped.push_back(fmt::format("'{}' is {} where {} is expected", t.name,
                                      FormatShape(t.shape), FormatShape(spec.shape)));
    }
    matched.push_back(&t);
  }
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (!vision_names_[i].empty() && !expected.contains(vision_names_[i]) &&
        n_unexpected++ < kShown) {
      unexpected.push_back("'" + tensors_[i].name + "'");
    }
  }
  if (n_missing + n_misshaped + n_unexpected == 0) return matched;
  std::vector<std::string> problems;
  if (n_missing) problems.push_back("missing " + Listed(missing, n_missing));
  if (n_misshaped) problems.push_back("mis-shaped " + Listed(misshaped, n_misshaped));
  if (n_unexpected) problems.push_back("unexpected " + Listed(unexpected, n_unexpected));
  return Status::InvalidArgument(
      "{}: not the vision tower this encoder builds ({} tensors expected): {}", path_, specs.size(),
      fmt::join(problems, "; "));
}

}  // namespace mmpt::vision
