// Sorts with long rows as a merging network of plain ops, for the device compiler, whose sort
// kernel ranks each element against its whole row (sort_code.h) and so takes short rows only.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "src/ir/module.h"

namespace vkspmd::ir {

// Whether `module`'s entry sorts rows longer than `max_row`.
bool HasLongSort(const Module& module, int64_t max_row);

// A copy of `module` whose sorts of rows longer than `max_row` are bitonic sorting networks:
// each row (padded to a power of two P) goes through log2(P) (log2(P) + 1) / 2 compare-exchange
// stages, each made of reshapes, slices, the comparator mapped elementwise, selects and a
// concatenate. Every operand moves with the keys, and each element carries its position in the
// row: ties under the comparator keep their order (XLA's is_stable=true, which also satisfies an
// unstable sort) and padding sorts last. The comparator must be elementwise (map's rule).
absl::StatusOr<std::unique_ptr<Module>> ExpandLongSorts(const Module& module, int64_t max_row);

}  // namespace vkspmd::ir
