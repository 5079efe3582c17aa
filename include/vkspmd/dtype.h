// Element types of vkspmd tensors, named as PyTorch names them (float32, bfloat16, int32, bool).
#pragma once

#include <string>

namespace vkspmd {

enum class DType { kFloat32, kInt32, kUInt32, kBool, kFloat16, kBFloat16 };

inline constexpr DType float32 = DType::kFloat32;
inline constexpr DType int32 = DType::kInt32;
inline constexpr DType uint32 = DType::kUInt32;
inline constexpr DType bool_ = DType::kBool;
// IEEE half precision (1 sign, 5 exponent, 10 mantissa bits) and bfloat16 (float32's 8 exponent
// bits, 7 mantissa bits), stored in 2 bytes; float32 values round to them to nearest even.
inline constexpr DType float16 = DType::kFloat16;
inline constexpr DType half = DType::kFloat16;
inline constexpr DType bfloat16 = DType::kBFloat16;

// "float32", "int32", "uint32", "bool", "float16", "bfloat16".
std::string dtype_name(DType dtype);

// float32, float16 and bfloat16.
constexpr bool is_floating_point(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16;
}

// Bytes per element (bool: one).
constexpr int element_size(DType dtype) {
  return dtype == DType::kBool ? 1 : dtype == DType::kFloat16 || dtype == DType::kBFloat16 ? 2 : 4;
}

}  // namespace vkspmd
