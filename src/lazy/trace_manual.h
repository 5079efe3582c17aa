// The trace side of manual sharding (torch_xla's enable/disable_manual_sharding, JAX's shard_map):
// the region's boundary custom-calls and the collectives a user calls inside it over mesh axes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "src/lazy/node.h"
#include "src/spmd/axis_sharding.h"

namespace vkspmd::lazy::trace {

// Sharding(x) under `sharding` then SPMDFullToShardShape: the result is each device's shard.
// With `auto_axes` (mesh axes, JAX's shard_map auto=) the region is manual over the other axes
// only: its values carry a manual subgroup (last_tile_dims={manual, replicated}) and the auto
// axes stay with the automatic partitioner; else it is {manual}. Refuses dims that `sharding`
// does not split evenly, a sharding that names an auto axis, and auto axes that leave no manual
// one, naming them.
absl::StatusOr<NodePtr> EnterManual(const NodePtr& x, const spmd::AxisSharding& sharding,
                                    PlacementPtr placement,
                                    const std::vector<int64_t>& auto_axes = {});
// Sharding(x) under the region's manual sharding then SPMDShardToFullShape under `sharding`: the
// per-device values become the shards of a value of `full_dims`. x must be manual, of the shard
// shape of `full_dims`; `sharding` may name only the region's manual axes.
absl::StatusOr<NodePtr> LeaveManual(const NodePtr& x, const spmd::AxisSharding& sharding,
                                    const std::vector<int64_t>& full_dims);

// The mesh axes (ascending) the manual region of `x` is manual over: every axis of its mesh, or
// the axes a region with auto axes left to the user. INTERNAL when the region's entry cannot be
// found from `x` (a manual node whose manual operands do not lead back to it).
absl::StatusOr<std::vector<int64_t>> RegionManualAxes(const NodePtr& x);

// mark_sharding inside a region with auto axes: `x` constrained to `sharding` over the auto axes
// (a manual-subgroup sharding, as JAX's with_sharding_constraint inside shard_map(auto=)).
// Refuses a region manual over every axis and a sharding that names a manual axis.
absl::StatusOr<NodePtr> ConstrainInRegion(const NodePtr& x, const spmd::AxisSharding& sharding,
                                          PlacementPtr placement);

// The mesh axes `names` of the mesh a manual value `x` is on, each one the region is manual
// over (an auto axis is an error); `op` names the caller in errors.
absl::StatusOr<std::vector<int64_t>> ManualAxes(const NodePtr& x,
                                                const std::vector<std::string>& names,
                                                const std::string& op);

// JAX's axis_index: each device's linear index over mesh `axes` (first major; its rank in the
// group of a collective along them) as an s32 scalar of the manual region `x` is in. `axes` are
// manual axes of that region (ManualAxes checks names; an auto axis is its error), so in a
// region with auto axes too the index is the device's coordinate along the manual ones.
absl::StatusOr<NodePtr> AxisIndex(const NodePtr& x, const std::vector<int64_t>& axes);

// Collectives over the device groups along `axes` (major first) of a manual value's mesh.
// `reducer` is kAdd, kMaximum or kMinimum.
absl::StatusOr<NodePtr> AllReduce(const NodePtr& x, const std::vector<int64_t>& axes,
                                  ir::Opcode reducer);
// Concatenates the group's values along `dim` in group order.
absl::StatusOr<NodePtr> AllGather(const NodePtr& x, const std::vector<int64_t>& axes, int64_t dim);
// Sums the group's values; member k keeps the k-th piece along `dim`.
absl::StatusOr<NodePtr> ReduceScatter(const NodePtr& x, const std::vector<int64_t>& axes,
                                      int64_t dim);
// JAX's all_to_all(tiled=True): `split_dim` is cut into one piece per member, piece k goes to
// member k, and the received pieces are concatenated along `concat_dim` in sender order.
absl::StatusOr<NodePtr> AllToAll(const NodePtr& x, const std::vector<int64_t>& axes,
                                 int64_t split_dim, int64_t concat_dim);
// JAX's ppermute: (source, target) positions along `axis`; a device no pair targets gets zeros.
absl::StatusOr<NodePtr> Permute(const NodePtr& x, int64_t axis,
                                const std::vector<std::pair<int64_t, int64_t>>& pairs);

}  // namespace vkspmd::lazy::trace
