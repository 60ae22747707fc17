#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mmpt/core/status.h"

namespace mmpt::vision {

/// Element types of the safetensors format.
enum class DType : uint8_t { kF64, kF32, kF16, kBF16, kI64, kI32, kI16, kI8, kU8, kBool };

size_t DTypeBytes(DType dtype);
std::string_view DTypeName(DType dtype);

/// One tensor of a safetensors file: its name, element type, shape and little-endian bytes
/// (a view into the mapped file, not necessarily aligned to the element size).
struct TensorEntry {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::span<const std::byte> data;
};

/// Parse safetensors bytes: an 8-byte little-endian header length, a JSON header
/// {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}, then the
/// data. Entries come back in name order and point into `bytes`. Errors: Corrupt naming
/// `origin` (and the tensor) for a short file, a header that is not a JSON object, an unknown
/// dtype, offsets outside the data, a size that does not match dtype × shape, or overlapping
/// tensors.
Result<std::vector<TensorEntry>> ParseSafetensors(std::span<const std::byte> bytes,
                                                  std::string_view origin);

}  // namespace mmpt::vision
