// Shared checks for gradient tests: evaluate a gradient module and compare it with central
// differences of the original module, both on the f64 CPU reference.
#pragma once

#include <random>
#include <string>
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

}  // namespace vkspmd::autodiff::testing
