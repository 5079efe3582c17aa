// Gradient checking on the CPU reference.
#include "tests/autodiff/gradient_check.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/autodiff/gradients.h"
#include "src/interp/evaluator.h"
#include "src/ir/parser.h"
#include "src/ir/printer.h"
#include "src/ir/verifier.h"

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

std::string GradientsDifferFromDifferences(const ir::Module& module,
                                           const std::vector<int64_t>& wrt,
                                           const std::vector<ir::Literal>& arguments, double step,
                                           double relative) {
  absl::StatusOr<std::unique_ptr<ir::Module>> gradients = Gradients(module, std::nullopt, wrt);
  if (!gradients.ok()) return gradients.status().ToString();
  absl::StatusOr<std::vector<ir::Literal>> results = EvaluateGradients(**gradients, arguments);
  if (!results.ok()) return results.status().ToString();
  if (results->size() != wrt.size() + 1) return "the gradient module's tuple has the wrong size";
  for (size_t k = 0; k < wrt.size(); ++k) {
    absl::StatusOr<ir::Literal> numeric =
        NumericGradient(module, std::nullopt, arguments, wrt[k], step);
    if (!numeric.ok()) return numeric.status().ToString();
    std::string differs = CompareLiterals((*results)[k + 1], *numeric, relative);
    if (!differs.empty()) {
      return absl::StrCat("d loss / d parameter ", wrt[k], ": ", differs, "\n",
                          ir::PrintModule(**gradients));
    }
  }
  return "";
}

namespace {

std::string Dimensions(const std::string& shape) {
  size_t open = shape.find('[');
  return shape.substr(open + 1, shape.find(']') - open - 1);
}

}  // namespace

std::string RuleModuleText(const RuleCase& c, const std::string& computations) {
  std::vector<std::string> signature;
  std::string lines;
  for (size_t i = 0; i < c.parameters.size(); ++i) {
    signature.push_back(absl::StrCat(c.parameters[i].first, ": ", c.parameters[i].second));
    absl::StrAppend(&lines, "  %", c.parameters[i].first, " = ", c.parameters[i].second,
                    " parameter(", i, ")\n");
  }
  std::string dims = Dimensions(c.y_shape);
  std::vector<std::string> all;
  int rank = dims.empty() ? 0 : static_cast<int>(std::count(dims.begin(), dims.end(), ',') + 1);
  for (int i = 0; i < rank; ++i) all.push_back(std::to_string(i));
  return absl::StrCat("HloModule ", c.name, "\n\n",
                      "%add (lhs: f64[], rhs: f64[]) -> f64[] {\n  %lhs = f64[] parameter(0)\n"
                      "  %rhs = f64[] parameter(1)\n  ROOT %sum = f64[] add(%lhs, %rhs)\n}\n\n",
                      "%max (lhs: f64[], rhs: f64[]) -> f64[] {\n  %lhs = f64[] parameter(0)\n"
                      "  %rhs = f64[] parameter(1)\n  ROOT %m = f64[] maximum(%lhs, %rhs)\n}\n\n",
                      "%min (lhs: f64[], rhs: f64[]) -> f64[] {\n  %lhs = f64[] parameter(0)\n"
                      "  %rhs = f64[] parameter(1)\n  ROOT %m = f64[] minimum(%lhs, %rhs)\n}\n\n",
                      computations, "ENTRY %main (", absl::StrJoin(signature, ", "),
                      ") -> f64[] {\n", lines, c.body, "  %sin_y = ", c.y_shape, " sine(%y)\n",
                      "  %weighted = ", c.y_shape, " multiply(%y, %sin_y)\n",
                      "  %zero = f64[] constant(0)\n",
                      "  ROOT %loss = f64[] reduce(%weighted, %zero), dimensions={",
                      absl::StrJoin(all, ","), "}, to_apply=%add\n}\n");
}

std::string RuleCaseDiffers(const RuleCase& c, const std::string& computations) {
  const std::string text = RuleModuleText(c, computations);
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  if (!module.ok()) return absl::StrCat(module.status().ToString(), "\n", text);
  std::vector<int64_t> wrt;
  for (const ir::Instruction* parameter : (*module)->entry()->parameters()) {
    if (ir::IsFloat(parameter->shape().dtype()))
      wrt.push_back(parameter->attributes().parameter_number);
  }
  absl::StatusOr<std::unique_ptr<ir::Module>> gradients = Gradients(**module, std::nullopt, wrt);
  if (!gradients.ok()) return gradients.status().ToString();
  if (absl::Status verified = ir::VerifyModule(**gradients); !verified.ok()) {
    return absl::StrCat(verified.ToString(), "\n", ir::PrintModule(**gradients));
  }
  // The printed gradient module reads back: it is an ordinary program.
  if (absl::Status parsed = ir::ParseAndVerifyModule(ir::PrintModule(**gradients)).status();
      !parsed.ok()) {
    return absl::StrCat("the printed gradient module does not parse: ", parsed.ToString());
  }
  for (uint32_t seed : {1u, 2u}) {
    std::string differs = GradientsDifferFromDifferences(
        **module, wrt, RandomArguments(**module, c.low, c.high, seed), c.step, c.tolerance);
    if (!differs.empty()) return absl::StrCat("seed ", seed, ": ", differs);
  }
  return "";
}

}  // namespace vkspmd::autodiff::testing
