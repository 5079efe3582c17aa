// The reverse-mode rule of each op: given the adjoint of an instruction's result, the adjoints of
// its operands, built from ordinary IR ops. Rules see the forward instruction as it stands in the
// gradient computation, so forward values are reused, never recomputed.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "src/autodiff/gradient_emitter.h"
#include "src/ir/instruction.h"

namespace vkspmd::autodiff {

struct RuleInput {
  const ir::Instruction& forward;  // In the gradient computation; operands are forward values.
  ir::Instruction* adjoint;        // d(loss)/d(forward), an array of forward's shape.
  std::vector<bool> wanted;        // Whether operand i needs its adjoint.
  // For a tuple-shaped forward (a multi-operand sort), in place of `adjoint` (then null): each
  // element's adjoint, null where no path to the loss reads that element.
  std::vector<ir::Instruction*> element_adjoints = {};
};

// One entry per operand: its adjoint contribution, or null where none is wanted or the operand
// is not differentiable (indices, predicates). An op without a rule is an UNIMPLEMENTED error
// naming it.
using OperandAdjoints = std::vector<ir::Instruction*>;

absl::StatusOr<OperandAdjoints> ApplyGradientRule(const RuleInput& input, GradientEmitter& emit);

// Elementwise and structural halves of the rule table (gradient_rules_*.cc); ApplyGradientRule
// dispatches to them.
absl::StatusOr<OperandAdjoints> ElementwiseGradient(const RuleInput& input, GradientEmitter& emit);
absl::StatusOr<OperandAdjoints> StructuralGradient(const RuleInput& input, GradientEmitter& emit);
// gather and scatter (gradient_rules_indexing.cc).
absl::StatusOr<OperandAdjoints> IndexingGradient(const RuleInput& input, GradientEmitter& emit);
// sort, with one operand or several (gradient_rules_sort.cc).
absl::StatusOr<OperandAdjoints> SortGradient(const RuleInput& input, GradientEmitter& emit);
// Collectives and the SPMDFullToShardShape / SPMDShardToFullShape boundaries of manual regions
// (gradient_rules_collectives.cc).
absl::StatusOr<OperandAdjoints> CollectiveGradient(const RuleInput& input, GradientEmitter& emit);
absl::StatusOr<OperandAdjoints> ManualBoundaryGradient(const RuleInput& input,
                                                       GradientEmitter& emit);

// Ops whose derivative is zero wherever it exists (floor, sign, ...): the gradient stops there.
bool HasZeroGradient(ir::Opcode opcode);
// Whether some rule handles this op (true for ops that stop the gradient too).
bool HasGradientRule(ir::Opcode opcode);

}  // namespace vkspmd::autodiff
