// Reading VKSPMD_* settings from the environment, with errors that name the variable and the
// value it must have: the one place every layer reads the environment through.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace vkspmd::base {

// The variable's value, or nullopt when it is not set.
std::optional<std::string> EnvironmentValue(const char* name);

// Unset or empty: `otherwise`; "0": false; "1": true; anything else INVALID_ARGUMENT naming the
// variable.
absl::StatusOr<bool> BoolFromEnvironment(const char* name, bool otherwise = false);

// Unset or empty: nullopt; a number in [low, high]: it; anything else INVALID_ARGUMENT naming the
// variable, the value and the range, in `unit` ("seconds").
absl::StatusOr<std::optional<double>> NumberFromEnvironment(const char* name, double low,
                                                            double high, const char* unit);

// Unset or empty: nullopt; a whole decimal number in [low, high]: it; anything else (a fraction,
// letters, a number out of range) INVALID_ARGUMENT naming the variable, the value and the range,
// in `unit` ("invocations").
absl::StatusOr<std::optional<int64_t>> IntegerFromEnvironment(const char* name, int64_t low,
                                                              int64_t high, const char* unit);

}  // namespace vkspmd::base
