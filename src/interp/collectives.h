// Reference evaluation of the collectives over N emulated devices: given every device's operand,
// computes every device's result with XLA's replica-group semantics.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "src/interp/contraction.h"

namespace vkspmd::interp {

// `operands[d]` is device d's operand (d = replica * partition_count + partition).
absl::StatusOr<std::vector<ir::Literal>> EvaluateCollective(
    const ir::Instruction& instruction, const std::vector<const ir::Literal*>& operands,
    int64_t replica_count, int64_t partition_count, const ComputationCaller& call);

// SPMDShardToFullShape: assembles the full value from the shards of every partition of the same
// replica, placing each at its tile offset under the instruction's sharding.
absl::StatusOr<std::vector<ir::Literal>> EvaluateShardToFull(
    const ir::Instruction& instruction, const std::vector<const ir::Literal*>& operands,
    int64_t partition_count);

// SPMDFullToShardShape into a partially manual region (`manual_sharding` has a manual subgroup)
// on one device: its manual group's value, where each device of the group puts its tile of
// `full` under `full_sharding` (the operand's) at its tile under `manual_sharding`, as XLA's
// partitioner hands each device's shard over unchanged. SPMDShardToFullShape out of such a
// region does the reverse (EvaluateShardToFull, when the operand's sharding has a manual
// subgroup).
absl::StatusOr<ir::Literal> ExtractManualValue(const ir::Shape& manual_shape,
                                               const ir::Literal& full,
                                               const ir::Sharding& full_sharding,
                                               const ir::Sharding& manual_sharding,
                                               int64_t partition);

// SPMDFullToShardShape on one device: the tile of `full` that `partition` holds under `sharding`
// (the operand's), padded with zeros where the tile overhangs.
absl::StatusOr<ir::Literal> ExtractShard(const ir::Shape& shard_shape, const ir::Literal& full,
                                         const ir::Sharding& sharding, int64_t partition);

}  // namespace vkspmd::interp
