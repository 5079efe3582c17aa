// Reference evaluation of dot (batch and contracting dims) and reduce (variadic, with a to_apply
// reducer), plus the elementwise combining of whole literals that collectives use.
#pragma once

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/module.h"

namespace vkspmd::interp {

// Evaluates a called computation (a reducer) on scalar arguments.
using ComputationCaller =
    std::function<absl::StatusOr<ir::Literal>(const ir::Computation&, std::vector<ir::Literal>)>;

// Floats accumulate in double and round once; integers wrap in their own width.
ir::Literal EvaluateDot(const ir::Instruction& instruction, const ir::Literal& lhs,
                        const ir::Literal& rhs);
// Visits the reduced elements of each output in row-major order: acc = reducer(acc, value).
absl::StatusOr<ir::Literal> EvaluateReduce(const ir::Instruction& instruction,
                                           const std::vector<const ir::Literal*>& operands,
                                           const ComputationCaller& call);
// accumulator[i] = reducer(accumulator[i], value[i]) for every element.
absl::Status CombineElementwise(const ir::Computation& reducer, ir::Literal& accumulator,
                                const ir::Literal& value, const ComputationCaller& call);

}  // namespace vkspmd::interp
