#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace mmpt::vision::testing {

/// A safetensors file of F32 tensors, each filled with `fill`: for tests of the reader.
struct SafetensorsWriter {
  struct Tensor {
    std::string name;
    std::vector<int64_t> shape;
    float fill = 0;
  };
  std::vector<Tensor> tensors;

  std::string Bytes() const {
    std::string header = "{", data;
    for (const Tensor& t : tensors) {
      int64_t n = 1;
      std::string dims;
      for (int64_t d : t.shape) {
        n *= d;
        dims += (dims.empty() ? "" : ",") + std::to_string(d);
      }
      header +=
          fmt::format("{}\"{}\":{{\"dtype\":\"F32\",\"shape\":[{}],\"data_offsets\":[{},{}]}}",
                      header.size() > 1 ? "," : "", t.name, dims, data.size(), data.size() + 4 * n);
      for (int64_t i = 0; i < n; ++i) {
        char bytes[4];
        std::memcpy(bytes, &t.fill, 4);
        data.append(bytes, 4);
      }
    }
    header += "}";
    std::string out(8, '\0');
    uint64_t size = header.size();
    for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((size >> (8 * i)) & 0xff);
    return out + header + data;
  }
};

}  // namespace mmpt::vision::testing
