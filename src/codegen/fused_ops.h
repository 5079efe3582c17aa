// Which instructions a kernel computes inline, and in which order a fused instruction reads its
// operands: shared by planning (which buffers a kernel binds) and row fusion.
#pragma once

#include <cstdint>
#include <vector>

#include "src/ir/instruction.h"

namespace vkspmd::codegen {

// Elementwise ops whose element i reads their operands' elements i (scalars at 0).
bool IsFusedElementwise(ir::Opcode opcode);

// The operand indices of `instruction`, computed inline, in the order its code first reads them
// (dynamic slices read their start indices first). Kernels bind buffers in first-read order.
std::vector<int64_t> OperandReadOrder(const ir::Instruction& instruction);

}  // namespace vkspmd::codegen
