#include "mmpt/vision/safetensors.h"

#include <fmt/format.h>
#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

namespace mmpt::vision {
namespace {

using json = nlohmann::json;

// A header past this is not a checkpoint's (Hugging Face's own reader refuses 100 MB).
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  size_t bytes;
};
constexpr std::array<DTypeInfo, 10> kDTypes = {{{DType::kF64, "F64", 8},
                                                {DType::kF32, "F32", 4},
                                                {DType::kF16, "F16", 2},
                                                {DType::kBF16, "BF16", 2},
                                                {DType::kI64, "I64", 8},
                                                {DType::kI32, "I32", 4},
                                                {DType::kI16, "I16", 2},
                                                {DType::kI8, "I8", 1},
                                                {DType::kU8, "U8", 1},
                                                {DType::kBool, "BOOL", 1}}};

const DTypeInfo& Info(DType dtype) { return kDTypes[static_cast<size_t>(dtype)]; }

Result<TensorEntry> ParseEntry(const std::string& name, const json& e,
                               std::span<const std::byte> data, std::string_view origin) {
  auto bad = [&](std::string_view why) {
    return Status::Corrupt("{}: tensor '{}': {}", origin, name, why);
  };
  if (!e.is_object()) return bad("its entry is not an object");
  auto dtype = e.find("dtype");
  auto shape = e.find("shape");
  auto offsets = e.find("data_offsets");
  if (dtype == e.end() || !dtype->is_string()) return bad("no string 'dtype'");
  if (shape == e.end() || !shape->is_array()) return bad("no array 'shape'");
  if (offsets == e.end() || !offsets->is_array() || offsets->size() != 2 ||
      !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned()) {
    return bad("'data_offsets' is not [begin, end]");
  }
  TensorEntry t;
  t.name = name;
  const std::string& dtype_name = dtype->get_ref<const std::string&>();
  auto info = std::find_if(kDTypes.begin(), kDTypes.end(),
                           [&](const DTypeInfo& i) { return i.name == dtype_name; });
  if (info == kDTypes.end()) return bad(fmt::format("unknown dtype '{}'", dtype_name));
  t.dtype = info->dtype;
  uint64_t elements = 1;
  for (const json& dim : *shape) {
    if (!dim.is_number_unsigned()) return bad("a dimension is not a non-negative integer");
    const uint64_t d = dim.get<uint64_t>();
    if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        (d != 0 && elements > std::numeric_limits<uint64_t>::max() / d / info->bytes)) {
      return bad("its shape overflows");
    }
    elements *= d;
    t.shape.push_back(static_cast<int64_t>(d));
  }
  const uint64_t begin = (*offsets)[0].get<uint64_t>(), end = (*offsets)[1].get<uint64_t>();
  if (begin > end || end > data.size()) {
    return bad(fmt::format("data_offsets [{}, {}] lie outside the {} data bytes", begin, end,
                           data.size()));
  }
  if (end - begin != elements * info->bytes) {
    return bad(fmt::format("{} bytes for {} {} elements", end - begin, elements, dtype_name));
  }
  t.data = data.subspan(begin, end - begin);
  return t;
}

}  // namespace

size_t DTypeBytes(DType dtype) { return Info(dtype).bytes; }
std::string_view DTypeName(DType dtype) { return Info(dtype).name; }

Result<std::vector<TensorEntry>> ParseSafetensors(std::span<const std::byte> bytes,
                                                  std::string_view origin) {
  if (bytes.size() < 8) {
    return Status::Corrupt("{}: {} bytes, too short for a safetensors header", origin,
                           bytes.size());
  }
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | uint8_t(bytes[i]);
  if (header_bytes > kMaxHeaderBytes || header_bytes > bytes.size() - 8) {
    return Status::Corrupt(
        "{}: header of {} bytes in a file of {} (truncated, or not "
        "safetensors)",
        origin, header_bytes, bytes.size());
  }
  std::string_view text(reinterpret_cast<const char*>(bytes.data()) + 8, header_bytes);
  json header = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) {
    return Status::Corrupt("{}: the safetensors header is not a JSON object", origin);
  }
  const auto data = bytes.subspan(8 + header_bytes);
  std::vector<TensorEntry> tensors;
  tensors.reserve(header.size());
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    MMPT_ASSIGN_OR_RETURN(TensorEntry t, ParseEntry(name, entry, data, origin));
    tensors.push_back(std::move(t));
  }
  std::vector<const TensorEntry*> by_offset;
  for (const TensorEntry& t : tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorEntry* a, const TensorEntry* b) {
    return a->data.data() != b->data.data() ? a->data.data() < b->data.data()
                                            : a->data.size() < b->data.size();
  });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorEntry& prev = *by_offset[i - 1];
    if (by_offset[i]->data.data() < prev.data.data() + prev.data.size()) {
      return Status::Corrupt("{}: tensors '{}' and '{}' overlap", origin, prev.name,
                             by_offset[i]->name);
    }
  }
  return tensors;
}

}  // namespace mmpt::vision
