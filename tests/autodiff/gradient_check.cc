// Gradient checking on the CPU reference.
#include "tests/autodiff/gradient_check.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "src/interp/evaluator.h"

namespace vkspmd::autodiff::testing {

std::vector<ir::Literal> RandomArguments(const ir::Module& module, double low, double high,
                                         uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> real(low, high);
  std::uniform_int_distribution<int> integer(0, 3);
  std::vector<ir::Literal> arguments;
  for (const ir::Instruction* parameter : module.entry()->parameters()) {
    ir::Literal literal(parameter->shape());
    for (int64_t i = 0; i < literal.ElementCount(); ++i) {
      if (ir::IsFloat(parameter->shape().dtype())) {
        literal.SetFromDouble(i, real(random));
      } else {
        literal.SetFromInt64(i, integer(random));
      }
    }
    arguments.push_back(std::move(literal));
  }
  return arguments;
}

absl::StatusOr<std::vector<ir::Literal>> EvaluateGradients(
    const ir::Module& gradients, const std::vector<ir::Literal>& arguments) {
  absl::StatusOr<ir::Literal> result = interp::Evaluate(gradients, arguments);
  if (!result.ok()) return result.status();
  return result->tuple_elements();
}

absl::StatusOr<ir::Literal> NumericGradient(const ir::Module& module,
                                            std::optional<int64_t> loss_index,
                                            std::vector<ir::Literal> arguments, int64_t parameter,
                                            double step) {
  auto loss = [&]() -> absl::StatusOr<double> {
    absl::StatusOr<ir::Literal> result = interp::Evaluate(module, arguments);
    if (!result.ok()) return result.status();
    const ir::Literal& value = loss_index ? result->tuple_elements()[*loss_index] : *result;
    return value.GetAsDouble(0);
  };
  ir::Literal gradient(arguments[parameter].shape());
  for (int64_t i = 0; i < gradient.ElementCount(); ++i) {
    const double original = arguments[parameter].GetAsDouble(i);
    arguments[parameter].SetFromDouble(i, original + step);
    absl::StatusOr<double> plus = loss();
    arguments[parameter].SetFromDouble(i, original - step);
    absl::StatusOr<double> minus = loss();
    arguments[parameter].SetFromDouble(i, original);
    if (!plus.ok()) return plus.status();
    if (!minus.ok()) return minus.status();
    gradient.SetFromDouble(i, (*plus - *minus) / (2 * step));
  }
  return gradient;
}

std::string CompareLiterals(const ir::Literal& actual, const ir::Literal& expected,
                            double relative) {
  if (actual.shape() != expected.shape()) {
    return absl::StrCat("shape ", actual.shape().ToString(), " != expected ",
                        expected.shape().ToString());
  }
  for (int64_t i = 0; i < actual.ElementCount(); ++i) {
    double got = actual.GetAsDouble(i);
    double want = expected.GetAsDouble(i);
    if (!(std::fabs(got - want) <= relative * std::max(1.0, std::fabs(want)))) {
      return absl::StrCat("element ", i, ": got ", got, ", expected ", want);
    }
  }
  return "";
}

}  // namespace vkspmd::autodiff::testing
