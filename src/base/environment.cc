#include "src/base/environment.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace vkspmd::base {

std::optional<std::string> EnvironmentValue(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

absl::StatusOr<bool> BoolFromEnvironment(const char* name, bool otherwise) {
  std::optional<std::string> value = EnvironmentValue(name);
  if (!value || value->empty()) return otherwise;
  if (*value == "0") return false;
  if (*value == "1") return true;
  return absl::InvalidArgumentError(absl::StrCat(name, "=", *value, " must be 0 or 1"));
}

absl::StatusOr<std::optional<double>> NumberFromEnvironment(const char* name, double low,
                                                            double high, const char* unit) {
  std::optional<std::string> value = EnvironmentValue(name);
  if (!value || value->empty()) return std::optional<double>();
  double number = 0;
  if (!absl::SimpleAtod(*value, &number) || !(number >= low && number <= high)) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be a number of ", unit, " from ",
                                                   low, " to ", high, ", not '", *value, "'"));
  }
  return std::optional<double>(number);
}

absl::StatusOr<std::optional<int64_t>> IntegerFromEnvironment(const char* name, int64_t low,
                                                              int64_t high, const char* unit) {
  std::optional<std::string> value = EnvironmentValue(name);
  if (!value || value->empty()) return std::optional<int64_t>();
  // Digits with an optional leading minus only: SimpleAtoi alone also takes " 12 " and "+5".
  const bool decimal =
      value->find_first_not_of("0123456789", (*value)[0] == '-' ? 1 : 0) == std::string::npos &&
      value->size() > ((*value)[0] == '-' ? 1u : 0u);
  int64_t number = 0;
  if (!decimal || !absl::SimpleAtoi(*value, &number) || number < low || number > high) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be a whole number of ", unit,
                                                   " from ", low, " to ", high, ", not '", *value,
                                                   "'"));
  }
  return std::optional<int64_t>(number);
}

}  // namespace vkspmd::base
