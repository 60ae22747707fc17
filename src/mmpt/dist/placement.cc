#include "mmpt/dist/placement.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mmpt/core/mapped_file.h"

namespace mmpt::dist {

Result<Placement> Placement::RoundRobin(size_t num_shards, uint32_t peers) {
  if (peers == 0) return Status::InvalidArgument("placement: peers must be at least 1");
  Placement placement;
  placement.peers_ = peers;
  for (size_t shard = 0; shard < num_shards; ++shard) {
    placement.holder_.push_back(static_cast<uint32_t>(shard % peers));
  }
  return placement;
}

Result<Placement> Placement::Read(const std::string& path, const store::Manifest& manifest) {
  MMPT_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("peers") || !doc["peers"].is_number_unsigned() ||
      !doc.contains("shards") || !doc["shards"].is_object()) {
    return Status::Corrupt(
        "{}: not a placement file (expected {{\"peers\": P, \"shards\": {{path: peer}}}})", path);
  }
  Placement placement;
  placement.peers_ = doc["peers"].get<uint32_t>();
  if (placement.peers_ == 0) return Status::InvalidArgument("{}: peers must be at least 1", path);
  const nlohmann::json& shards = doc["shards"];
  for (const store::ShardInfo& shard : manifest.shards) {
    auto it = shards.find(shard.stem);
    if (it == shards.end()) {
      return Status::InvalidArgument("{}: shard '{}' of the manifest has no holder", path,
                                     shard.stem);
    }
    if (!it->is_number_unsigned() || it->get<uint64_t>() >= placement.peers_) {
      return Status::InvalidArgument("{}: shard '{}' is held by peer {}, outside 0..{}", path,
                                     shard.stem, it->dump(), placement.peers_ - 1);
    }
    placement.holder_.push_back(it->get<uint32_t>());
  }
  if (shards.size() != manifest.shards.size()) {
    for (const auto& item : shards.items()) {
      const std::string& stem = item.key();
      auto known = std::find_if(manifest.shards.begin(), manifest.shards.end(),
                                [&](const store::ShardInfo& s) { return s.stem == stem; });
      if (known == manifest.shards.end()) {
        return Status::InvalidArgument("{}: shard '{}' is not in the manifest", path, stem);
      }
    }
  }
  return placement;
}

Status Placement::Write(const std::string& path, const store::Manifest& manifest) const {
  nlohmann::ordered_json doc;
  doc["peers"] = peers_;
  doc["shards"] = nlohmann::ordered_json::object();
  for (size_t shard = 0; shard < manifest.shards.size(); ++shard) {
    doc["shards"][manifest.shards[shard].stem] = holder_[shard];
  }
  return WriteFileAtomic(path, doc.dump(2) + "\n");
}

std::vector<size_t> Placement::ShardsOf(uint32_t peer) const {
  std::vector<size_t> shards;
  for (size_t shard = 0; shard < holder_.size(); ++shard) {
    if (holder_[shard] == peer) shards.push_back(shard);
  }
  return shards;
}

}  // namespace mmpt::dist
