// The local gather and scatter of a partitioned program (see GatherRule and ScatterRule in
// op_rules.cc): slice sizes follow the shard shapes, and indices into an operand dim split across
// devices are shifted by this device's offset. A gather then zeroes the rows another device holds
// (the caller all-reduces them); a scatter lets them fall out of bounds, where it skips them.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "src/spmd/local_ops.h"

namespace vkspmd::spmd {

// `locals`: the operand and indices in the shardings of `op`'s factor assignment.
absl::StatusOr<ir::Instruction*> EmitLocalGather(SpmdBuilder& builder, const LocalOp& op,
                                                 const std::vector<ir::Instruction*>& locals);
// `locals`: the operand, indices and updates.
absl::StatusOr<ir::Instruction*> EmitLocalScatter(SpmdBuilder& builder, const LocalOp& op,
                                                  const std::vector<ir::Instruction*>& locals);

}  // namespace vkspmd::spmd
