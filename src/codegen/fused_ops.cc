// Fused instructions (see fused_ops.h).
#include "src/codegen/fused_ops.h"

namespace vkspmd::codegen {

using ir::Opcode;

bool IsFusedElementwise(Opcode opcode) {
  return ir::IsElementwiseUnary(opcode) || ir::IsElementwiseBinary(opcode) ||
         opcode == Opcode::kCompare || opcode == Opcode::kSelect || opcode == Opcode::kClamp ||
         opcode == Opcode::kConvert || opcode == Opcode::kCopy;
}

std::vector<int64_t> OperandReadOrder(const ir::Instruction& instruction) {
  const int64_t count = instruction.operand_count();
  std::vector<int64_t> order;
  switch (instruction.opcode()) {
    case Opcode::kDynamicSlice:  // Start indices, then the operand.
      for (int64_t k = 1; k < count; ++k) order.push_back(k);
      order.push_back(0);
      break;
    case Opcode::kDynamicUpdateSlice:  // Start indices, then the update, then the operand.
      for (int64_t k = 2; k < count; ++k) order.push_back(k);
      order.push_back(1);
      order.push_back(0);
      break;
    default:
      for (int64_t k = 0; k < count; ++k) order.push_back(k);
      break;
  }
  return order;
}

}  // namespace vkspmd::codegen
