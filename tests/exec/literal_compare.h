// Device results against the CPU reference: the first element where two literals differ, with
// NaN and Inf mismatches counted as differences.
#pragma once

#include <string>

#include "src/ir/literal.h"

namespace vkspmd::testing {

// "" when `got` equals `want`: integers and predicates exactly, floats within `relative` of
// max(1, |want|) (NaN only where the reference is NaN, an infinity only where it is the same
// infinity); else the first difference (tuple element, element index, both values).
std::string CompareLiterals(const ir::Literal& got, const ir::Literal& want,
                            double relative = 1e-4);

}  // namespace vkspmd::testing
