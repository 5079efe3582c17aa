// Reference evaluation of sort (every operand permuted alike along `dimensions`, a stable sort
// under the comparator computation) and of compare with type=TOTALORDER (floats ordered as
// -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN by their bits, as XLA orders them).
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "src/interp/contraction.h"
#include "src/ir/instruction.h"
#include "src/ir/literal.h"

namespace vkspmd::interp {

absl::StatusOr<ir::Literal> EvaluateSort(const ir::Instruction& instruction,
                                         const std::vector<const ir::Literal*>& operands,
                                         const ComputationCaller& call);
ir::Literal EvaluateTotalOrderCompare(ir::ComparisonDirection direction, const ir::Literal& lhs,
                                      const ir::Literal& rhs);

}  // namespace vkspmd::interp
