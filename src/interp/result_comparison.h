// Results against the CPU reference: the largest errors and the elements outside a tolerance,
// with NaN and Inf mismatches counted as infinite errors (never skipped). `vkspmd run --compare`
// reports with it.
#pragma once

#include <cstdint>
#include <string>

#include "src/ir/literal.h"

namespace vkspmd::interp {

struct Comparison {
  double max_absolute = 0;
  // Against max(|reference|, 1e-3 * the array's largest finite |reference|), so reference values
  // that cancel to nearly zero (a long sum of mixed signs) do not dominate it.
  double max_relative = 0;
  int64_t elements = 0;
  int64_t beyond = 0;        // Elements outside the tolerance.
  std::string first_beyond;  // The first of them: where, and both values.
  std::string largest;       // Where the largest absolute error is, and both values.
};

// Adds `got` against `reference` (tuples element by element) to `comparison`. A float element is
// within the tolerance when |got - reference| <= atol + rtol * |reference| (numpy's allclose),
// or both are NaN, or both are the same infinity; integers and predicates must be equal. A shape
// mismatch counts every element as beyond. `label` names the value in `first_beyond`.
void Compare(const ir::Literal& got, const ir::Literal& reference, double rtol, double atol,
             const std::string& label, Comparison& comparison);

}  // namespace vkspmd::interp
