// Names and sizes of the collectives' element types and reductions.
#include "src/collectives/communicator.h"

namespace vkspmd::collectives {

size_t ElementSize(ElementType type) {
  switch (type) {
    case ElementType::kPred:
    case ElementType::kS8:
    case ElementType::kU8:
      return 1;
    case ElementType::kS16:
    case ElementType::kU16:
    case ElementType::kF16:
    case ElementType::kBF16:
      return 2;
    case ElementType::kS32:
    case ElementType::kU32:
    case ElementType::kF32:
      return 4;
    default:
      return 8;
  }
}

const char* ElementTypeName(ElementType type) {
  static constexpr const char* kNames[] = {"pred", "s8",  "u8",  "s16", "u16", "s32", "u32",
                                           "s64",  "u64", "f32", "f64", "f16", "bf16"};
  return kNames[static_cast<int>(type)];
}

const char* ReduceOpName(ReduceOp op) {
  static constexpr const char* kNames[] = {"sum", "product", "min", "max", "and", "or"};
  return kNames[static_cast<int>(op)];
}

}  // namespace vkspmd::collectives
