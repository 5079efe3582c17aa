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

// Sharding(x) under `sharding` then SPMDFullToShardShape {manual}: the result is each device's
// shard. Refuses dims that `sharding` does not split evenly, naming the dim and the axes.
absl::StatusOr<NodePtr> EnterManual(const NodePtr& x, const spmd::AxisSharding& sharding,
                                    PlacementPtr placement);
// Sharding(x) {manual} then SPMDShardToFullShape under `sharding`: the per-device values become
// the shards of a value of `full_dims`. x must be manual, of the shard shape of `full_dims`.
absl::StatusOr<NodePtr> LeaveManual(const NodePtr& x, const spmd::AxisSharding& sharding,
                                    const std::vector<int64_t>& full_dims);

// The mesh axes `names` of the mesh a manual value `x` is on; `op` names the caller in errors.
absl::StatusOr<std::vector<int64_t>> ManualAxes(const NodePtr& x,
                                                const std::vector<std::string>& names,
                                                const std::string& op);

// JAX's axis_index: each device's linear index over mesh `axes` (first major; its rank in the
// group of a collective along them) as an s32 scalar of the manual region `x` is in.
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
