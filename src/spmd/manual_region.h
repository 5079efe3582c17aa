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

// SPMDFullToShardShape into a partially manual region (`target` is manual over some axes, JAX's
// shard_map with auto= axes). As in XLA, each device's shard of the operand under `tiling` (its
// annotation as propagation left it) becomes its shard of the manual value under `target`
// unchanged (the shapes must agree): the devices of one manual group together hold that group's
// value, split over the other axes.
absl::StatusOr<PartitionedValue> EnterPartiallyManualRegion(SpmdBuilder& builder,
                                                            const ir::Instruction& instruction,
                                                            const PartitionedValue& operand,
                                                            const AxisSharding& tiling,
                                                            const AxisSharding& target);

// SPMDShardToFullShape out of a partially manual region: each device's shard of the manual value
// becomes its shard of the result under `target` unchanged (the shapes must agree).
absl::StatusOr<PartitionedValue> LeavePartiallyManualRegion(const Mesh& mesh,
                                                            const ir::Instruction& instruction,
                                                            const PartitionedValue& manual,
                                                            const AxisSharding& target);

// An op inside the region, emitted as written (collectives and partition-id included); operands
// must be manual or replicated. One value per leaf of the result.
absl::StatusOr<std::vector<PartitionedValue>> CloneManualOp(
    SpmdBuilder& builder, const ir::Instruction& instruction,
    const std::vector<PartitionedValue>& operands, ir::Computation* to_apply);

}  // namespace vkspmd::spmd
