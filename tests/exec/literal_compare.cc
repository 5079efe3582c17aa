#include "tests/exec/literal_compare.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace vkspmd::testing {

std::string CompareLiterals(const ir::Literal& got, const ir::Literal& want, double relative) {
  if (got.shape().IsTuple() != want.shape().IsTuple()) {
    return absl::StrCat("shape ", got.shape().ToString(), " != ", want.shape().ToString());
  }
  if (got.shape().IsTuple()) {
    if (got.tuple_elements().size() != want.tuple_elements().size()) {
      return absl::StrCat("shape ", got.shape().ToString(), " != ", want.shape().ToString());
    }
    for (size_t k = 0; k < got.tuple_elements().size(); ++k) {
      std::string difference =
          CompareLiterals(got.tuple_elements()[k], want.tuple_elements()[k], relative);
      if (!difference.empty()) return absl::StrCat("element ", k, " of the tuple: ", difference);
    }
    return "";
  }
  if (got.shape() != want.shape()) {
    return absl::StrCat("shape ", got.shape().ToString(), " != ", want.shape().ToString());
  }
  for (int64_t i = 0; i < got.ElementCount(); ++i) {
    if (ir::IsFloat(want.dtype())) {
      const double a = got.GetAsDouble(i), b = want.GetAsDouble(i);
      if (std::isnan(a) && std::isnan(b)) continue;
      if (a == b) continue;  // Equal infinities too.
      // Any other pair with a NaN or an infinity differs (the tolerance of an infinite reference
      // would be infinite).
      if (!std::isfinite(a) || !std::isfinite(b) ||
          !(std::fabs(a - b) <= relative * std::max(1.0, std::fabs(b)))) {
        return absl::StrCat("element ", i, ": device ", a, ", reference ", b);
      }
    } else if (got.GetAsUint64(i) != want.GetAsUint64(i)) {
      return absl::StrCat("element ", i, ": device ", got.GetAsInt64(i), ", reference ",
                          want.GetAsInt64(i));
    }
  }
  return "";
}

}  // namespace vkspmd::testing
