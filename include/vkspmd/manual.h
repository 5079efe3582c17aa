// Manual sharding: regions where each mesh device works on its own shard and the user calls the
// collectives (PyTorch/XLA's enable_manual_sharding / disable_manual_sharding, JAX's shard_map).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "vkspmd/dtensor.h"
#include "vkspmd/mesh.h"
#include "vkspmd/sharding.h"
#include "vkspmd/tensor.h"

namespace vkspmd {

// Enters a manual region: `tensor` (the global value) is laid out over `mesh` by `spec` as
// mark_sharding does, and the result is one device's shard (dims split over their axes' sizes).
// Every op on it runs per device on that device's shard; ops combining it with other tensors
// treat those as the same on every device. Each dim must split evenly (uneven dims throw, naming
// the dim and the axes). Traced as XLA does: a Sharding custom-call, then SPMDFullToShardShape
// with sharding={manual}. Gradients flow through the region (see docs/manual_sharding.md).
// `auto_axes` (mesh axis names; JAX's shard_map auto=) makes the region manual over the other
// axes only: each device group along the auto axes holds one manual value, which the automatic
// partitioner splits over the auto axes as mark_sharding inside the region says (replicated over
// them by default). `spec` may then name only manual axes; collectives inside name only manual
// axes. Throws for an unknown axis, a spec naming an auto axis, or auto axes covering the mesh.
Tensor enable_manual_sharding(const Tensor& tensor, const Mesh& mesh, const PartitionSpec& spec,
                              const std::vector<std::string>& auto_axes = {});
// Leaves the region: the per-device values of `tensor` are the shards of a tensor of
// `full_shape` laid out by `spec` (SPMDShardToFullShape). A spec that leaves an axis out says the
// values are equal along it (one device's copy is taken, as JAX's out_specs). In a region with
// auto axes the spec names only manual axes, and the value keeps its automatic layout over the
// others. Throws when `tensor` is not manual, is not the shard shape of `full_shape` under
// `spec`, or `spec` names an auto axis.
Tensor disable_manual_sharding(const Tensor& tensor, const Mesh& mesh, const PartitionSpec& spec,
                               const std::vector<int64_t>& full_shape);

// JAX's shard_map: a function of global tensors that calls `fn` on each input's shard (enable_
// manual_sharding with in_specs[i]) and leaves the region with fn's per-device results by
// out_specs[j]; an output's global shape is its shard shape times the sizes of the axes its spec
// names. `auto_axes` is JAX's auto=: the region is manual over the other mesh axes only (see
// enable_manual_sharding); inside, mark_sharding over the auto axes partitions the per-group
// values automatically. The returned function throws when the number of inputs or outputs
// differs from the specs', and for the errors of the two calls above.
using ShardMapFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
ShardMapFunction shard_map(ShardMapFunction fn, const Mesh& mesh,
                           std::vector<PartitionSpec> in_specs,
                           std::vector<PartitionSpec> out_specs,
                           std::vector<std::string> auto_axes = {});

// Collectives inside a manual region over the device groups along mesh axes `axes` (names of the
// region's mesh; several axes vary together, first major). They throw for a tensor outside a
// manual region, an axis name the mesh lacks or one the region leaves automatic, a dim out of
// range, or a dim that does not split evenly. In a region with auto axes, what the partitioner
// does not take there is refused when the graph is partitioned (docs/manual_sharding.md).
// Gradients: all_reduce(sum) -> all_reduce, all_gather <-> reduce_scatter, all_to_all -> all_to_all
// back, ppermute -> the inverse permutation, max/min -> the summed adjoint shared evenly among the
// members holding the extremum (as a reduce max/min).
//
// Every member gets the reduction (kAvg: the sum divided by the group size) of the group.
Tensor all_reduce(const Tensor& tensor, const std::vector<std::string>& axes,
                  ReduceOp op = ReduceOp::kSum);
// The group's values concatenated along `dim` in group order.
Tensor all_gather(const Tensor& tensor, const std::vector<std::string>& axes, int64_t dim);
// The sum of the group's values; member k keeps the k-th of the equal pieces along `dim`.
Tensor reduce_scatter(const Tensor& tensor, const std::vector<std::string>& axes, int64_t dim);
// `split_dim` cut into one piece per member, piece k sent to member k, the pieces received
// concatenated along `concat_dim` in sender order (JAX's all_to_all with tiled=True).
Tensor all_to_all(const Tensor& tensor, const std::vector<std::string>& axes, int64_t split_dim,
                  int64_t concat_dim);
// JAX's ppermute: each (source, target) pair of positions along `axis` sends source's value to
// target, in every group along the axis; a position no pair targets receives zeros.
Tensor ppermute(const Tensor& tensor, const std::string& axis,
                const std::vector<std::pair<int64_t, int64_t>>& permutation);

// JAX's lax.axis_index: each device's index along mesh axes `axes` (several: their linear index,
// first major, i.e. its rank in the group of a collective over them) as an s32 scalar, a
// per-device value of the manual region. JAX takes only the axis name because shard_map binds
// the mesh; here `region_tensor`, any tensor of the region, says which mesh (its devices may be
// in any order: the index is the device's coordinate, not its id). In a region with auto axes it
// is the coordinate along the manual `axes`. Throws when `region_tensor` is not inside a manual
// region, the mesh lacks an axis, or an axis is automatic in the region (as JAX).
Tensor axis_index(const Tensor& region_tensor, const std::vector<std::string>& axes);

}  // namespace vkspmd
