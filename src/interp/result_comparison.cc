#include "src/interp/result_comparison.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace vkspmd::interp {

void Compare(const ir::Literal& got, const ir::Literal& reference, double rtol, double atol,
             const std::string& label, Comparison& comparison) {
  if (got.shape() != reference.shape()) {
    const int64_t count = reference.shape().IsTuple() ? 1 : reference.ElementCount();
    comparison.elements += count;
    if (comparison.beyond == 0) {
      comparison.first_beyond = absl::StrCat(label, ": shape ", got.shape().ToString(),
                                             ", reference ", reference.shape().ToString());
    }
    comparison.beyond += count;
    if (comparison.max_absolute != std::numeric_limits<double>::infinity()) {
      comparison.largest = absl::StrCat(label, ": shape ", got.shape().ToString(), ", reference ",
                                        reference.shape().ToString());
    }
    comparison.max_absolute = comparison.max_relative = std::numeric_limits<double>::infinity();
    return;
  }
  if (got.shape().IsTuple()) {
    for (size_t k = 0; k < got.tuple_elements().size(); ++k) {
      Compare(got.tuple_elements()[k], reference.tuple_elements()[k], rtol, atol,
              absl::StrCat(label, " element ", k), comparison);
    }
    return;
  }
  const bool is_float = ir::IsFloat(reference.dtype());
  double scale = 0;
  for (int64_t i = 0; i < reference.ElementCount(); ++i) {
    const double b = reference.GetAsDouble(i);
    if (std::isfinite(b)) scale = std::max(scale, std::fabs(b));
  }
  for (int64_t i = 0; i < got.ElementCount(); ++i) {
    ++comparison.elements;
    const double a = got.GetAsDouble(i), b = reference.GetAsDouble(i);
    bool within;
    double difference;
    if (!is_float) {
      within = got.GetAsUint64(i) == reference.GetAsUint64(i);
      difference = within ? 0 : std::fabs(a - b);
    } else if ((std::isnan(a) && std::isnan(b)) || a == b) {
      within = true;
      difference = 0;
    } else if (!std::isfinite(a) || !std::isfinite(b)) {
      within = false;
      difference = std::numeric_limits<double>::infinity();
    } else {
      difference = std::fabs(a - b);
      within = difference <= atol + rtol * std::fabs(b);
    }
    if (difference > comparison.max_absolute) {
      comparison.max_absolute = difference;
      comparison.largest = absl::StrFormat("%s index %d: got %.9g, reference %.9g", label, i, a, b);
    }
    comparison.max_relative = std::max(comparison.max_relative,
                                       difference / std::max({std::fabs(b), 1e-3 * scale, 1e-30}));
    if (!within && comparison.beyond++ == 0) {
      comparison.first_beyond =
          absl::StrFormat("%s index %d: got %.9g, reference %.9g", label, i, a, b);
    }
  }
}

}  // namespace vkspmd::interp
