// GSPMD's halo exchange (GSPMD-NOTES, "windowed ops"): ops that move elements along a split dim
// by a few positions (slice, pad, reverse, concatenate, reshapes merging or splitting a split
// dim) keep the tiling and fetch only the boundary rows each device lacks from its neighbours
// with collective-permutes, instead of gathering the whole dim.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/instruction.h"
#include "src/spmd/reshard.h"
#include "src/spmd/spmd_builder.h"

namespace vkspmd::spmd {

// What the device holding shard k of a split dim wants of that dim: the positions
// [start, start + size) (size is common to all shards), of which the first `valid` are the
// result's own elements (the rest is padding of the result and may hold anything).
struct HaloWindow {
  int64_t start = 0;
  int64_t valid = 0;
};

// `local` is every device's shard of a value split along `dim` over mesh `axes` (shard k holds
// positions [k*s, (k+1)*s), s = its size; positions from `valid_size` on are padding). Returns
// per device the window `windows[k]` of the device's shard index k, `size` long: wanted
// positions inside [0, valid_size) are exact, the others unspecified (callers mask them). Each
// neighbour distance a window reaches costs one collective-permute of only the rows some
// device needs from that distance; a window inside the device's own shard moves nothing.
absl::StatusOr<ir::Instruction*> ExchangeHalo(SpmdBuilder& builder, ir::Instruction* local,
                                              int64_t dim, const std::vector<int64_t>& axes,
                                              int64_t valid_size,
                                              const std::vector<HaloWindow>& windows, int64_t size);

// The local form of a slice, pad, reverse, concatenate or reshape whose operands are split along
// a dim the op changes, run with halo exchange so that the result keeps the tiling: `operands`
// as they are now, `target` the result's wanted sharding. Operands of a slice, pad, reverse or
// concatenate split otherwise are resharded to `target` first. nullopt when the case is not one
// of these (the caller's general rule then gathers what must be whole): maximal or manual
// values, strided slices, interior padding, and reshapes other than merging or splitting one
// split dim with its unsplit neighbours in the result's device order.
absl::StatusOr<std::optional<PartitionedValue>> PartitionWithHalo(
    SpmdBuilder& builder, const ir::Instruction& instruction,
    const std::vector<PartitionedValue>& operands, const AxisSharding& target);

// Bytes per device PartitionWithHalo would send (its collectives emitted into a scratch
// program), or nullopt when it does not apply; the partitioner compares them with its rule's.
absl::StatusOr<std::optional<int64_t>> HaloBytes(const SpmdBuilder& builder,
                                                 const ir::Instruction& instruction,
                                                 const std::vector<PartitionedValue>& operands,
                                                 const AxisSharding& target);

}  // namespace vkspmd::spmd
