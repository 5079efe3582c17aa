// The IR element type of a public one: what src/api and the layers written on the public API
// (src/nn) both need, kept in one place below them.
#pragma once

#include "src/ir/dtype.h"
#include "vkspmd/dtype.h"

namespace vkspmd::lazy {

inline ir::DType ToIrType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return ir::DType::kF32;
    case DType::kInt32:
      return ir::DType::kS32;
    case DType::kUInt32:
      return ir::DType::kU32;
    case DType::kBool:
      return ir::DType::kPred;
    case DType::kFloat16:
      return ir::DType::kF16;
    case DType::kBFloat16:
      return ir::DType::kBF16;
  }
  return ir::DType::kF32;
}

}  // namespace vkspmd::lazy
