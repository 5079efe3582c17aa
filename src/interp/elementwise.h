// Elementwise op semantics of the reference evaluator (XLA's): unary, binary, compare, select,
// clamp and convert, including integer wrap-around, division by zero and NaN rules.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "src/ir/instruction.h"
#include "src/ir/literal.h"

namespace vkspmd::interp {

// Element `out_index` of `out` = OP(lhs[lhs_index], rhs[rhs_index]); the three share an element
// type except for compare (pred out). Used directly by reductions whose reducer is one binary op.
void ApplyBinaryElement(ir::Opcode opcode, const ir::Literal& lhs, int64_t lhs_index,
                        const ir::Literal& rhs, int64_t rhs_index, ir::Literal& out,
                        int64_t out_index);

absl::StatusOr<ir::Literal> EvaluateUnary(const ir::Instruction& instruction,
                                          const ir::Literal& operand);
absl::StatusOr<ir::Literal> EvaluateBinary(const ir::Instruction& instruction,
                                           const ir::Literal& lhs, const ir::Literal& rhs);
ir::Literal EvaluateCompare(ir::ComparisonDirection direction, const ir::Literal& lhs,
                            const ir::Literal& rhs);
ir::Literal EvaluateSelect(const ir::Literal& predicate, const ir::Literal& on_true,
                           const ir::Literal& on_false);
ir::Literal EvaluateClamp(const ir::Literal& minimum, const ir::Literal& operand,
                          const ir::Literal& maximum);
// XLA's convert: float to integer rounds toward zero and saturates, NaN becomes 0; integer to
// integer wraps; anything to pred is "!= 0".
ir::Literal Convert(const ir::Literal& operand, ir::DType type);

}  // namespace vkspmd::interp
