// HostTensor: a tensor's values copied to host memory (row-major, bool as one byte per element,
// float16 and bfloat16 as their 16 raw bits).
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
      case DType::kFloat16:
        return static_cast<T>(HalfToFloat(Load<uint16_t>(i)));
      case DType::kBFloat16:
        return static_cast<T>(BFloat16ToFloat(Load<uint16_t>(i)));
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
  static float BitsToFloat(uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, sizeof(value));
    return value;
  }
  static float BFloat16ToFloat(uint16_t bits) { return BitsToFloat(uint32_t{bits} << 16); }
  static float HalfToFloat(uint16_t bits) {
    const uint32_t sign = uint32_t{bits & 0x8000u} << 16;
    const uint32_t exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
    if (exponent == 0x1f) return BitsToFloat(sign | 0x7f800000u | (mantissa << 13));
    if (exponent != 0) return BitsToFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign != 0 ? -magnitude : magnitude;
  }
  template <typename S>
  S Load(int64_t i) const {
    S value;
    std::memcpy(&value, bytes.data() + i * sizeof(S), sizeof(S));
    return value;
  }
};

}  // namespace vkspmd
