#include "mmpt/text/added_tokens.h"

#include <algorithm>
#include <cstring>

namespace mmpt::text {

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens) {
  nodes_.emplace_back();
  for (size_t t = 0; t < tokens.size(); ++t) {
    const std::string& content = tokens[t].content;
    if (content.empty()) continue;
    int32_t node = 0;
    for (char c : content) {
      const auto byte = static_cast<uint8_t>(c);
      int32_t child = Child(node, byte);
      if (child < 0) {
        child = int32_t(nodes_.size());
        nodes_.emplace_back();
        auto& edges = nodes_[node].edges;
        edges.insert(
            std::lower_bound(edges.begin(), edges.end(), std::make_pair(byte, int32_t(-1))),
            {byte, child});
      }
      node = child;
    }
    nodes_[node].token = int32_t(t);  // the last of duplicates wins, as in the reference's Map
    first_byte_[static_cast<uint8_t>(content[0])] = true;
  }
  int distinct = 0;
  for (int b = 0; b < 256; ++b) {
    if (first_byte_[b]) {
      ++distinct;
      single_first_byte_ = b;
    }
  }
  if (distinct != 1) single_first_byte_ = -1;
}

int32_t AddedTokenMatcher::Child(int32_t node, uint8_t byte) const {
  const auto& edges = nodes_[node].edges;
  auto it = std::lower_bound(edges.begin(), edges.end(), std::make_pair(byte, int32_t(-1)));
  return it != edges.end() && it->first == byte ? it->second : -1;
}

int32_t AddedTokenMatcher::Find(std::string_view text, size_t pos, size_t* begin) const {
  if (nodes_.size() == 1) return -1;
  const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
  for (size_t i = pos; i < text.size(); ++i) {
    if (single_first_byte_ >= 0) {
      const void* hit = std::memchr(bytes + i, single_first_byte_, text.size() - i);
      if (hit == nullptr) return -1;
      i = size_t(static_cast<const uint8_t*>(hit) - bytes);
    } else if (!first_byte_[bytes[i]]) {
      continue;
    }
    int32_t node = 0, longest = -1;
    for (size_t j = i; j < text.size(); ++j) {
      node = Child(node, bytes[j]);
      if (node < 0) break;
      if (nodes_[node].token >= 0) longest = nodes_[node].token;
    }
    if (longest >= 0) {
      *begin = i;
      return longest;
    }
  }
  return -1;
}

}  // namespace mmpt::text
