// Shape inference for while and conditional: the called computations' signatures must match the
// state (while) or each branch's operand (conditional), as XLA's ShapeInference requires.
#include <optional>

#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/ir/module.h"
#include "src/ir/shape_inference_internal.h"

namespace vkspmd::ir::shape_inference_internal {
namespace {

// `callee` takes one parameter of shape `parameter`; returns what it computes.
absl::StatusOr<Shape> CheckUnaryCallee(std::string_view role, const Computation* callee,
                                       const Shape& parameter) {
  if (callee == nullptr) return Invalid(fmt::format("needs {}=", role));
  if (callee->parameter_count() != 1 || callee->parameter(0) == nullptr) {
    return Invalid(fmt::format("{}=%{} must take 1 parameter, not {}", role, callee->name(),
                               callee->parameter_count()));
  }
  if (callee->parameter(0)->shape() != parameter) {
    return Invalid(fmt::format("{}=%{} takes {} but is given {}", role, callee->name(),
                               callee->parameter(0)->shape().ToString(), parameter.ToString()));
  }
  if (callee->root() == nullptr)
    return Invalid(fmt::format("{}=%{} is empty", role, callee->name()));
  return callee->root()->shape();
}

}  // namespace

absl::StatusOr<Shape> InferWhile(const Instruction& instruction) {
  VKSPMD_RETURN_IF_ERROR(CheckOperandCount(instruction, 1));
  const std::vector<Computation*>& called = instruction.attributes().called;
  if (called.size() != 2) return Invalid("while needs condition= and body=");
  const Shape& state = instruction.operand(0)->shape();
  VKSPMD_ASSIGN_OR_RETURN(Shape condition, CheckUnaryCallee("condition", called[0], state));
  if (condition != Shape::Scalar(DType::kPred)) {
    return Invalid(fmt::format("condition=%{} must return pred[], not {}", called[0]->name(),
                               condition.ToString()));
  }
  VKSPMD_ASSIGN_OR_RETURN(Shape body, CheckUnaryCallee("body", called[1], state));
  if (body != state) {
    return Invalid(fmt::format("body=%{} must return the state {}, not {}", called[1]->name(),
                               state.ToString(), body.ToString()));
  }
  return state;
}

absl::StatusOr<Shape> InferConditional(const Instruction& instruction) {
  const std::vector<Computation*>& called = instruction.attributes().called;
  if (instruction.operand_count() < 2) {
    return Invalid("conditional takes a selector and one operand per branch");
  }
  const Shape& selector = instruction.operand(0)->shape();
  const bool pred = selector == Shape::Scalar(DType::kPred);
  if (!pred && selector != Shape::Scalar(DType::kS32)) {
    return Invalid(
        fmt::format("conditional's selector must be pred[] or s32[], not {}", selector.ToString()));
  }
  if (called.empty()) {
    return Invalid(
        "conditional needs true_computation=/false_computation= or branch_computations=");
  }
  if (pred && called.size() != 2) {
    return Invalid(fmt::format("a pred[] conditional has 2 branches, not {}", called.size()));
  }
  if (instruction.operand_count() != static_cast<int64_t>(called.size()) + 1) {
    return Invalid(fmt::format("conditional with {} branches takes {} operands, got {}",
                               called.size(), called.size() + 1, instruction.operand_count()));
  }
  std::optional<Shape> result;
  for (size_t i = 0; i < called.size(); ++i) {
    const std::string role = pred ? (i == 0 ? "true_computation" : "false_computation")
                                  : fmt::format("branch_computations[{}]", i);
    VKSPMD_ASSIGN_OR_RETURN(Shape shape,
                            CheckUnaryCallee(role, called[i], instruction.operand(i + 1)->shape()));
    if (result.has_value() && shape != *result) {
      return Invalid(fmt::format("{}=%{} returns {} but the first branch returns {}", role,
                                 called[i]->name(), shape.ToString(), result->ToString()));
    }
    result = std::move(shape);
  }
  return *result;
}

}  // namespace vkspmd::ir::shape_inference_internal
