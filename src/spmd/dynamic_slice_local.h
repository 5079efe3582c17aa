// Local dynamic-slice and dynamic-update-slice of a partitioned program whose operand is split
// along a dim the window covers in part: each device slices (or updates) only what it holds.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "src/spmd/local_ops.h"

namespace vkspmd::spmd {

// A dynamic-slice at a start known only at run time (a reduction factor of DynamicSlice's rule
// in op_rules.cc): each device slices what it holds of the window and zeroes the rest; the caller
// all-reduces. `locals`: the operand and the start indices in the shardings of `op`'s factor
// assignment.
absl::StatusOr<ir::Instruction*> EmitLocalDynamicSlice(SpmdBuilder& builder, const LocalOp& op,
                                                       const std::vector<ir::Instruction*>& locals);

// A dynamic-update-slice, its operand split along dims the update covers in part or not, its
// update whole on those dims: each device writes the rows of the update that land in its shard
// (no communication, whatever the start; GSPMD gathers unless the update lies in one shard).
// `locals`: the operand, the update and the start indices.
absl::StatusOr<ir::Instruction*> EmitLocalDynamicUpdateSlice(
    SpmdBuilder& builder, const LocalOp& op, const std::vector<ir::Instruction*>& locals);

}  // namespace vkspmd::spmd
