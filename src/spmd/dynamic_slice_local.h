// The local dynamic-slice of a partitioned program whose operand is split along a dim it slices
// with a start known only at run time (a reduction factor of DynamicSlice's rule in op_rules.cc):
// each device slices what it holds of the window and zeroes the rest; the caller all-reduces.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "src/spmd/local_ops.h"

namespace vkspmd::spmd {

// `locals`: the operand and the start indices in the shardings of `op`'s factor assignment.
absl::StatusOr<ir::Instruction*> EmitLocalDynamicSlice(SpmdBuilder& builder, const LocalOp& op,
                                                       const std::vector<ir::Instruction*>& locals);

}  // namespace vkspmd::spmd
