// Manual regions in the per-device program (JAX's shard_map, torch_xla's manual sharding):
// SPMDFullToShardShape hands each device its shard, the user's code between the boundaries runs
// as written, SPMDShardToFullShape makes per-device values the shards of a sharded value again.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "src/spmd/reshard.h"

namespace vkspmd::spmd {

// SPMDFullToShardShape: each device's shard of `operand` under the operand's annotation in the
// input (replicated when it has none), padding zeroed as the reference evaluator pads shards.
absl::StatusOr<PartitionedValue> EnterManualRegion(SpmdBuilder& builder,
                                                   const ir::Instruction& instruction,
                                                   const PartitionedValue& operand);

// SPMDShardToFullShape: the manual values are the shards of the result under `tiling`.
absl::StatusOr<PartitionedValue> LeaveManualRegion(const Mesh& mesh,
                                                   const ir::Instruction& instruction,
                                                   const PartitionedValue& manual,
                                                   const AxisSharding& tiling);

// An op inside the region, emitted as written (collectives and partition-id included); operands
// must be manual or replicated. One value per leaf of the result.
absl::StatusOr<std::vector<PartitionedValue>> CloneManualOp(
    SpmdBuilder& builder, const ir::Instruction& instruction,
    const std::vector<PartitionedValue>& operands, ir::Computation* to_apply);

}  // namespace vkspmd::spmd
