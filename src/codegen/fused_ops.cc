// Fused instructions (see fused_ops.h).
#include "src/codegen/fused_ops.h"

namespace vkspmd::codegen {

using ir::Opcode;

bool IsFusedElementwise(Opcode opcode) {
  return ir::IsElementwiseUnary(opcode) || ir::IsElementwiseBinary(opcode) ||
         opcode == Opcode::kCompare || opcode == Opcode::kSelect || opcode == Opcode::kClamp ||
         opcode == Opcode::kConvert || opcode == Opcode::kCopy ||
         opcode == Opcode::kBitcastConvert || opcode == Opcode::kReducePrecision;
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
    case Opcode::kGather:  // Indices, then the operand.
      order = {1, 0};
      break;
    case Opcode::kScatter:  // The operand, the updates, then the indices.
      order = {0, 2, 1};
      break;
    default:
      for (int64_t k = 0; k < count; ++k) order.push_back(k);
      break;
  }
  return order;
}

bool ReadsOperandAtOwnIndex(const ir::Instruction& instruction, int64_t k) {
  const ir::Instruction& operand = *instruction.operand(k);
  // Kernels index values by their row-major linear index, which a reshape keeps whatever the
  // dimensions.
  if (instruction.opcode() == Opcode::kReshape) {
    return operand.shape().ElementCount() == instruction.shape().ElementCount();
  }
  if (operand.shape().dimensions() != instruction.shape().dimensions()) return false;
  const ir::InstructionAttributes& attributes = instruction.attributes();
  switch (instruction.opcode()) {
    case Opcode::kPad:
      if (k != 0) return false;
      for (const ir::PaddingDimension& padding : attributes.padding) {
        if (padding.low != 0 || padding.high != 0 || padding.interior != 0) return false;
      }
      return true;
    case Opcode::kTranspose:
    case Opcode::kBroadcast:
      for (size_t d = 0; d < attributes.dimensions.size(); ++d) {
        if (attributes.dimensions[d] != static_cast<int64_t>(d)) return false;
      }
      return true;
    case Opcode::kSlice:
      for (const ir::SliceDimension& slice : attributes.slice) {
        if (slice.start != 0 || slice.stride != 1) return false;
      }
      return true;
    default:
      return IsFusedElementwise(instruction.opcode());
  }
}

bool ReadsOnlyAtOwnIndex(const std::map<const ir::Instruction*, int>& materialized,
                         const ir::Instruction* value, const ir::Instruction* target,
                         bool same_index, bool is_root,
                         const std::set<const ir::Instruction*>& here,
                         std::set<std::pair<const ir::Instruction*, bool>>& checked) {
  if (value == target) return same_index;
  if (!is_root && !here.count(value) && materialized.count(value)) {
    // Read from its own buffer, unless that is the target's (a reshape aliasing it).
    auto found = materialized.find(target);
    return found == materialized.end() || materialized.at(value) != found->second;
  }
  if (!checked.insert({value, same_index}).second) return true;
  for (int64_t k = 0; k < value->operand_count(); ++k) {
    const bool keeps_index = ReadsOperandAtOwnIndex(*value, k);
    if (!ReadsOnlyAtOwnIndex(materialized, value->operand(k), target, same_index && keeps_index,
                             false, here, checked)) {
      return false;
    }
  }
  return true;
}

}  // namespace vkspmd::codegen
