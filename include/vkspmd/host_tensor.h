// HostTensor: a tensor's values copied to host memory (row-major, bool as one byte per element).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "vkspmd/dtype.h"

namespace vkspmd {

struct HostTensor {
  std::vector<int64_t> shape;
  DType dtype = DType::kFloat32;
  std::vector<std::byte> bytes;

  int64_t numel() const {
    int64_t count = 1;
    for (int64_t dim : shape) count *= dim;
    return count;
  }
  // Element i converted to T, as numpy's astype does (bool: 0 or 1).
  template <typename T>
  T at(int64_t i) const {
    switch (dtype) {
      case DType::kFloat32:
        return static_cast<T>(Load<float>(i));
      case DType::kInt32:
        return static_cast<T>(Load<int32_t>(i));
      case DType::kUInt32:
        return static_cast<T>(Load<uint32_t>(i));
      case DType::kBool:
        return static_cast<T>(Load<uint8_t>(i) != 0);
    }
    return T{};
  }
  // Every element converted to T.
  template <typename T>
  std::vector<T> values() const {
    std::vector<T> out;
    out.reserve(static_cast<size_t>(numel()));
    for (int64_t i = 0; i < numel(); ++i) out.push_back(at<T>(i));
    return out;
  }

 private:
  template <typename S>
  S Load(int64_t i) const {
    S value;
    std::memcpy(&value, bytes.data() + i * sizeof(S), sizeof(S));
    return value;
  }
};

}  // namespace vkspmd
