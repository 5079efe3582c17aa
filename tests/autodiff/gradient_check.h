// Shared checks for gradient tests: evaluate a gradient module and compare it with central
// differences of the original module, both on the f64 CPU reference.
#pragma once

#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/literal.h"
#include "src/ir/module.h"

namespace vkspmd::autodiff::testing {

// Uniform random f64 (or f32) literals for the entry's parameters, in [low, high]; integer
// parameters get values in [0, 3].
std::vector<ir::Literal> RandomArguments(const ir::Module& module, double low, double high,
                                         uint32_t seed);

// The loss (element 0) and gradients (elements 1..) of a gradient module's tuple result.
absl::StatusOr<std::vector<ir::Literal>> EvaluateGradients(
    const ir::Module& gradients, const std::vector<ir::Literal>& arguments);

// d loss / d arguments[parameter] by central differences with step `step` on the original module
// (the loss is its root, or element `loss_index` of a root tuple).
absl::StatusOr<ir::Literal> NumericGradient(const ir::Module& module,
                                            std::optional<int64_t> loss_index,
                                            std::vector<ir::Literal> arguments, int64_t parameter,
                                            double step);

// "" when every element of `actual` is within `relative` * max(1, |expected|) of `expected`,
// else a description of the first mismatch.
std::string CompareLiterals(const ir::Literal& actual, const ir::Literal& expected,
                            double relative);

// "" when the gradients Gradients() gives `module` for `wrt` at `arguments` are within `relative`
// of central differences with step `step`, else the first mismatch and the gradient module.
std::string GradientsDifferFromDifferences(const ir::Module& module,
                                           const std::vector<int64_t>& wrt,
                                           const std::vector<ir::Literal>& arguments,
                                           double step = 1e-6, double relative = 1e-6);

// One rule's check: an HLO program computing %y from its parameters, to which RuleModuleText
// appends the loss sum(y * sin(y)), so the adjoint reaching %y differs from element to element.
struct RuleCase {
  std::string name;
  std::vector<std::pair<std::string, std::string>> parameters;  // name, shape ("f64[3,4]")
  std::string body;     // HLO lines defining %y (and anything it needs)
  std::string y_shape;  // e.g. "f64[3,4]"
  double low = -2;      // Parameter values are uniform in [low, high].
  double high = 2;
  double step = 1e-6;
  double tolerance = 1e-6;
};

// gtest prints a case by its name.
inline void PrintTo(const RuleCase& c, std::ostream* out) { *out << c.name; }

// The module of `c`, with %add, %max and %min (f64) and `computations` before its entry.
std::string RuleModuleText(const RuleCase& c, const std::string& computations = "");

// "" when the module parses, its gradient module (every float parameter) verifies and prints
// as a program that parses again, and its gradients match central differences for two random
// draws of the parameters; else what failed.
std::string RuleCaseDiffers(const RuleCase& c, const std::string& computations = "");

}  // namespace vkspmd::autodiff::testing
