// Reference evaluation of gather and scatter with XLA's dimension numbers (batching dims
// included): gather clamps each start index so the slice stays inside the operand; scatter skips
// an update whose whole window does not fit inside the operand, and applies the others in the
// updates' row-major order.
#pragma once

#include "absl/status/statusor.h"
#include "src/interp/contraction.h"
#include "src/ir/instruction.h"
#include "src/ir/literal.h"

namespace vkspmd::interp {

ir::Literal EvaluateGather(const ir::Instruction& instruction, const ir::Literal& operand,
                           const ir::Literal& indices);
absl::StatusOr<ir::Literal> EvaluateScatter(const ir::Instruction& instruction,
                                            const ir::Literal& operand, const ir::Literal& indices,
                                            const ir::Literal& updates,
                                            const ComputationCaller& call);

}  // namespace vkspmd::interp
