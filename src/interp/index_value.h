// An integer element read as an index (a start, a position) by the ops that clamp or bounds-check
// it: dynamic-slice, dynamic-update-slice, gather and scatter.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "src/ir/dtype.h"
#include "src/ir/literal.h"

namespace vkspmd::interp {

// Element `linear_index` of `indices` as a signed index; an unsigned one above INT64_MAX is
// saturated there, so clamping or a bounds check sees how large it is (Literal::GetAsInt64 wraps
// u64 values of 2^63 and more to negatives, which clamp to 0 instead of the last window).
inline int64_t IndexValue(const ir::Literal& indices, int64_t linear_index) {
  if (!ir::IsUnsignedInteger(indices.dtype())) return indices.GetAsInt64(linear_index);
  return static_cast<int64_t>(
      std::min<uint64_t>(indices.GetAsUint64(linear_index), std::numeric_limits<int64_t>::max()));
}

}  // namespace vkspmd::interp
