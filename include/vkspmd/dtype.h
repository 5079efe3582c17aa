// Element types of vkspmd tensors, named as PyTorch names them (float32, int32, bool).
#pragma once

#include <string>

namespace vkspmd {

enum class DType { kFloat32, kInt32, kUInt32, kBool };

inline constexpr DType float32 = DType::kFloat32;
inline constexpr DType int32 = DType::kInt32;
inline constexpr DType uint32 = DType::kUInt32;
inline constexpr DType bool_ = DType::kBool;

// "float32", "int32", "uint32", "bool".
std::string dtype_name(DType dtype);

}  // namespace vkspmd
