// Manual-region boundaries and user collectives as trace nodes (see trace_manual.h).
#include "src/lazy/trace_manual.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/status_macros.h"
#include "src/lazy/trace_ops.h"

namespace vkspmd::lazy::trace {
namespace {

absl::StatusOr<NodePtr> CustomCall(const NodePtr& x, const std::string& target,
                                   const ir::Sharding& sharding, const ir::Shape& shape,
                                   PlacementPtr placement) {
  ir::InstructionAttributes attributes;
  attributes.custom_call_target = target;
  VKSPMD_ASSIGN_OR_RETURN(NodePtr node, MakeOp(ir::Opcode::kCustomCall, {x}, attributes, shape));
  node->proto->set_sharding(sharding);
  node->placement = std::move(placement);
  return node;
}

absl::Status CheckManual(const NodePtr& x, const std::string& op) {
  if (!x->manual || x->placement == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        op, ": the ", ShapeText(x),
        " operand is not inside a manual sharding region; collectives over mesh axes take the "
        "per-device values of enable_manual_sharding or shard_map"));
  }
  return absl::OkStatus();
}

absl::Status CheckDim(const NodePtr& x, int64_t dim, const std::string& op) {
  if (dim < 0 || dim >= x->shape().rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": dim ", dim, " is outside the ", ShapeText(x), " operand"));
  }
  return absl::OkStatus();
}

// The collective `opcode` over the groups along `axes` (partition ids of the local mesh).
absl::StatusOr<NodePtr> Collective(ir::Opcode opcode, const NodePtr& x,
                                   const std::vector<int64_t>& axes,
                                   ir::InstructionAttributes attributes) {
  const spmd::Mesh& mesh = x->placement->local_mesh;
  attributes.channel_id = 1;
  attributes.use_global_device_ids = opcode != ir::Opcode::kAllToAll;
  attributes.replica_groups.groups = mesh.GroupsAlong(axes);
  return MakeOp(opcode, {x}, std::move(attributes));
}

absl::Status CheckDivisible(const NodePtr& x, int64_t dim, int64_t parts, const std::string& op,
                            const std::vector<int64_t>& axes) {
  VKSPMD_RETURN_IF_ERROR(CheckDim(x, dim, op));
  if (x->shape().dimensions()[dim] % parts != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": dim ", dim, " of the ", ShapeText(x), " operand does not split into ",
                     parts, " equal pieces over mesh axes ",
                     x->placement->local_mesh.AxesLabel(axes), "; uneven pieces are refused"));
  }
  return absl::OkStatus();
}

constexpr char kAutoAxis[] = "the region leaves to the automatic partitioner (an auto axis)";

bool Contains(const std::vector<int64_t>& axes, int64_t axis) {
  return std::find(axes.begin(), axes.end(), axis) != axes.end();
}

// The sharding of a rank-`rank` value of a region manual over `manual` (ascending) mesh axes:
// {manual} when that is every axis, else a manual subgroup over them, replicated over the rest.
ir::Sharding RegionSharding(int64_t rank, const std::vector<int64_t>& manual,
                            const spmd::Mesh& mesh) {
  if (static_cast<int64_t>(manual.size()) == mesh.axis_count()) return ir::Sharding::Manual();
  spmd::AxisSharding sharding = spmd::AxisSharding::Replicated(rank);
  sharding.manual_axes = manual;
  return spmd::ToHloSharding(sharding, mesh);
}

// Refuses a sharding that splits a dim over an axis outside `allowed`; `why` says what such an
// axis is ("the region leaves to the automatic partitioner").
absl::Status CheckNamesOnly(const spmd::AxisSharding& sharding, const std::vector<int64_t>& allowed,
                            const spmd::Mesh& mesh, const std::string& op, const std::string& why) {
  for (int64_t d = 0; d < sharding.rank(); ++d) {
    for (int64_t axis : sharding.dims[d]) {
      if (Contains(allowed, axis)) continue;
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": dim ", d, " is split over mesh axis ", mesh.AxisLabel(axis),
                       ", which ", why, "; it may name only mesh axes ", mesh.AxesLabel(allowed)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<NodePtr> EnterManual(const NodePtr& x, const spmd::AxisSharding& sharding,
                                    PlacementPtr placement, const std::vector<int64_t>& auto_axes) {
  if (x->manual) {
    return absl::FailedPreconditionError(absl::StrCat("enable_manual_sharding: the ", ShapeText(x),
                                                      " tensor is already inside a manual region"));
  }
  const spmd::Mesh& mesh = placement->local_mesh;
  std::vector<int64_t> manual;
  for (int64_t axis = 0; axis < mesh.axis_count(); ++axis) {
    if (!Contains(auto_axes, axis)) manual.push_back(axis);
  }
  if (manual.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("enable_manual_sharding: auto axes ", mesh.AxesLabel(auto_axes),
                     " leave no manual axis of mesh ", placement->mesh.ToString()));
  }
  VKSPMD_RETURN_IF_ERROR(
      CheckNamesOnly(sharding, manual, mesh, "enable_manual_sharding", kAutoAxis));
  for (int64_t d = 0; d < x->shape().rank(); ++d) {
    const int64_t tiles = sharding.TilesOn(d, mesh);
    if (x->shape().dimensions()[d] % tiles != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("enable_manual_sharding: dim ", d, " of the ", ShapeText(x),
                       " tensor does not split into ", tiles, " equal shards over mesh axes ",
                       mesh.AxesLabel(sharding.dims[d]), "; manual regions need even shards"));
    }
  }
  VKSPMD_ASSIGN_OR_RETURN(NodePtr constrained,
                          ShardingConstraint(x, spmd::ToHloSharding(sharding, mesh), placement));
  return CustomCall(constrained, "SPMDFullToShardShape",
                    RegionSharding(x->shape().rank(), manual, mesh),
                    spmd::ShardShape(x->shape(), sharding, mesh), std::move(placement));
}

absl::StatusOr<NodePtr> LeaveManual(const NodePtr& x, const spmd::AxisSharding& sharding,
                                    const std::vector<int64_t>& full_dims) {
  VKSPMD_RETURN_IF_ERROR(CheckManual(x, "disable_manual_sharding"));
  const spmd::Mesh& mesh = x->placement->local_mesh;
  VKSPMD_ASSIGN_OR_RETURN(const std::vector<int64_t> manual, RegionManualAxes(x));
  VKSPMD_RETURN_IF_ERROR(
      CheckNamesOnly(sharding, manual, mesh, "disable_manual_sharding", kAutoAxis));
  const ir::Shape full(x->shape().dtype(), full_dims);
  if (full.rank() != x->shape().rank() || spmd::ShardShape(full, sharding, mesh) != x->shape()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "disable_manual_sharding: the per-device ", ShapeText(x), " is not the shard shape of ",
        full.ToString(), " under ", sharding.ToString(mesh)));
  }
  for (int64_t d = 0; d < full.rank(); ++d) {
    if (full_dims[d] % sharding.TilesOn(d, mesh) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "disable_manual_sharding: dim ", d, " of ", full.ToString(), " does not split into ",
          sharding.TilesOn(d, mesh), " equal shards over mesh axes ",
          mesh.AxesLabel(sharding.dims[d]), "; manual regions need even shards"));
    }
  }
  VKSPMD_ASSIGN_OR_RETURN(NodePtr constrained,
                          CustomCall(x, "Sharding", RegionSharding(full.rank(), manual, mesh),
                                     x->shape(), x->placement));
  return CustomCall(constrained, "SPMDShardToFullShape", spmd::ToHloSharding(sharding, mesh), full,
                    x->placement);
}

absl::StatusOr<std::vector<int64_t>> RegionManualAxes(const NodePtr& x) {
  const spmd::Mesh& mesh = x->placement->local_mesh;
  std::vector<int64_t> all(mesh.axis_count());
  std::iota(all.begin(), all.end(), 0);
  // The region's entry (its SPMDFullToShardShape, or axis_index's partition-id) carries the
  // region's manual sharding; the node was given it when it was made (Node::region_entry).
  const Node* node = x->region_entry;
  // Never "every axis" here: that would let a collective over an auto axis through.
  if (node == nullptr) {
    return absl::InternalError(absl::StrCat(
        "the manual region of the ", ShapeText(x), " tensor has no entry (", x->proto->Describe(),
        " has no manual operand leading back to its "
        "SPMDFullToShardShape), so its manual axes are unknown"));
  }
  const std::optional<ir::Sharding>& sharding = node->proto->sharding();
  if (!sharding.has_value() || sharding->kind() == ir::Sharding::Kind::kManual) return all;
  VKSPMD_ASSIGN_OR_RETURN(spmd::AxisSharding axes,
                          spmd::FromHloSharding(*sharding, mesh, node->shape().rank()));
  if (axes.manual_axes.empty()) return all;
  return axes.manual_axes;
}

absl::StatusOr<NodePtr> ConstrainInRegion(const NodePtr& x, const spmd::AxisSharding& sharding,
                                          PlacementPtr placement) {
  VKSPMD_RETURN_IF_ERROR(CheckManual(x, "mark_sharding"));
  if (!SamePlacement(x->placement, placement)) {
    return absl::InvalidArgumentError(absl::StrCat("mark_sharding: the manual region is on ",
                                                   x->placement->mesh.ToString(), ", not on ",
                                                   placement->mesh.ToString()));
  }
  const spmd::Mesh& mesh = placement->local_mesh;
  VKSPMD_ASSIGN_OR_RETURN(const std::vector<int64_t> manual, RegionManualAxes(x));
  if (static_cast<int64_t>(manual.size()) == mesh.axis_count()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "mark_sharding: the ", ShapeText(x),
        " tensor is inside a manual region over every mesh axis, so there is nothing to "
        "partition; leave axes to the partitioner with shard_map's auto_axes"));
  }
  std::vector<int64_t> automatic;
  for (int64_t axis = 0; axis < mesh.axis_count(); ++axis) {
    if (!Contains(manual, axis)) automatic.push_back(axis);
  }
  VKSPMD_RETURN_IF_ERROR(
      CheckNamesOnly(sharding, automatic, mesh, "mark_sharding", "is manual in this region"));
  spmd::AxisSharding in_region = sharding;
  in_region.manual_axes = manual;
  return ShardingConstraint(x, spmd::ToHloSharding(in_region, mesh), std::move(placement));
}

absl::StatusOr<std::vector<int64_t>> ManualAxes(const NodePtr& x,
                                                const std::vector<std::string>& names,
                                                const std::string& op) {
  VKSPMD_RETURN_IF_ERROR(CheckManual(x, op));
  const spmd::Mesh& mesh = x->placement->mesh;
  if (names.empty()) return absl::InvalidArgumentError(op + ": no mesh axis given");
  std::vector<int64_t> axes;
  for (const std::string& name : names) {
    absl::StatusOr<int64_t> axis = mesh.AxisIndex(name);
    if (!axis.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": ", axis.status().message()));
    }
    if (std::find(axes.begin(), axes.end(), *axis) != axes.end()) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": mesh axis \"", name, "\" twice"));
    }
    axes.push_back(*axis);
  }
  VKSPMD_ASSIGN_OR_RETURN(const std::vector<int64_t> manual, RegionManualAxes(x));
  // JAX refuses both too: a collective over an auto axis would cross the partitioner's own
  // layout, and a device's position along one is the partitioner's choice, not the program's.
  const std::string why =
      op == "axis_index"
          ? "a device's index along an automatic axis is the partitioner's business (JAX "
            "refuses it too); axis_index takes only manual axes"
          : "collectives run only over manual axes";
  for (size_t i = 0; i < axes.size(); ++i) {
    if (Contains(manual, axes[i])) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": mesh axis \"", names[i], "\" is automatic in this manual region (manual over ",
        x->placement->mesh.AxesLabel(manual), "); ", why));
  }
  return axes;
}

absl::StatusOr<NodePtr> AxisIndex(const NodePtr& x, const std::vector<int64_t>& axes) {
  VKSPMD_RETURN_IF_ERROR(CheckManual(x, "axis_index"));
  VKSPMD_ASSIGN_OR_RETURN(const std::vector<int64_t> manual, RegionManualAxes(x));
  // partition-id is the device's id in the local mesh (0..N-1), which may list its devices in
  // any order: the coordinate comes from a table indexed by it, not from arithmetic on the id.
  // The region's sharding ({manual}, or the manual subgroup of a region with auto axes, which
  // RegionManualAxes reads back) keeps the operand-less partition-id inside the region, so the
  // partitioner copies it as the user's per-device code rather than refusing it; every device
  // reads its own id there, so the table gives each its coordinate along the manual `axes`.
  const spmd::Mesh& mesh = x->placement->local_mesh;
  VKSPMD_ASSIGN_OR_RETURN(NodePtr id, MakeOp(ir::Opcode::kPartitionId, {}));
  id->proto->set_sharding(RegionSharding(0, manual, mesh));
  id->placement = x->placement;
  id->manual = true;
  id->region_entry = id.get();
  std::vector<int32_t> table(mesh.device_count());
  for (int64_t p = 0; p < mesh.device_count(); ++p) {
    table[p] = static_cast<int32_t>(mesh.IndexAlong(p, axes));
  }
  ir::InstructionAttributes constant;
  constant.literal =
      ir::Literal::Create<int32_t>(ir::DType::kS32, {static_cast<int64_t>(table.size())}, table);
  VKSPMD_ASSIGN_OR_RETURN(NodePtr coordinates, MakeOp(ir::Opcode::kConstant, {}, constant));
  VKSPMD_ASSIGN_OR_RETURN(NodePtr start, Convert(id, ir::DType::kS32));
  ir::InstructionAttributes slice;
  slice.dynamic_slice_sizes = {1};
  VKSPMD_ASSIGN_OR_RETURN(NodePtr entry,
                          MakeOp(ir::Opcode::kDynamicSlice, {coordinates, start}, slice));
  return Reshape(entry, {});
}

absl::StatusOr<NodePtr> AllReduce(const NodePtr& x, const std::vector<int64_t>& axes,
                                  ir::Opcode reducer) {
  VKSPMD_RETURN_IF_ERROR(CheckManual(x, "all_reduce"));
  ir::InstructionAttributes attributes;
  attributes.to_apply = TraceReducer(reducer, x->shape().dtype());
  return Collective(ir::Opcode::kAllReduce, x, axes, std::move(attributes));
}

absl::StatusOr<NodePtr> AllGather(const NodePtr& x, const std::vector<int64_t>& axes, int64_t dim) {
  VKSPMD_RETURN_IF_ERROR(CheckManual(x, "all_gather"));
  VKSPMD_RETURN_IF_ERROR(CheckDim(x, dim, "all_gather"));
  ir::InstructionAttributes attributes;
  attributes.dimensions = {dim};
  return Collective(ir::Opcode::kAllGather, x, axes, std::move(attributes));
}

absl::StatusOr<NodePtr> ReduceScatter(const NodePtr& x, const std::vector<int64_t>& axes,
                                      int64_t dim) {
  VKSPMD_RETURN_IF_ERROR(CheckManual(x, "reduce_scatter"));
  VKSPMD_RETURN_IF_ERROR(
      CheckDivisible(x, dim, x->placement->local_mesh.SizeOf(axes), "reduce_scatter", axes));
  ir::InstructionAttributes attributes;
  attributes.dimensions = {dim};
  attributes.to_apply = TraceReducer(ir::Opcode::kAdd, x->shape().dtype());
  return Collective(ir::Opcode::kReduceScatter, x, axes, std::move(attributes));
}

absl::StatusOr<NodePtr> AllToAll(const NodePtr& x, const std::vector<int64_t>& axes,
                                 int64_t split_dim, int64_t concat_dim) {
  VKSPMD_RETURN_IF_ERROR(CheckManual(x, "all_to_all"));
  const int64_t size = x->placement->local_mesh.SizeOf(axes);
  VKSPMD_RETURN_IF_ERROR(CheckDivisible(x, split_dim, size, "all_to_all", axes));
  VKSPMD_RETURN_IF_ERROR(CheckDim(x, concat_dim, "all_to_all"));
  // The IR's all-to-all splits and concatenates one dim. Split `split_dim` into [size, rest],
  // move the size-`size` dim just before `concat_dim`, exchange along it (it then counts
  // senders), and merge it into `concat_dim` sender-major.
  const std::vector<int64_t>& dims = x->shape().dimensions();
  std::vector<int64_t> split = dims;
  split[split_dim] = dims[split_dim] / size;
  split.insert(split.begin() + split_dim, size);
  VKSPMD_ASSIGN_OR_RETURN(NodePtr pieces, Reshape(x, split));
  // Positions in `split`: the piece dim is split_dim; dims after it moved up by one.
  const int64_t concat = concat_dim >= split_dim ? concat_dim + 1 : concat_dim;
  std::vector<int64_t> order;
  for (int64_t d = 0; d < static_cast<int64_t>(split.size()); ++d) {
    if (d == split_dim) continue;
    if (d == concat) order.push_back(split_dim);
    order.push_back(d);
  }
  VKSPMD_ASSIGN_OR_RETURN(NodePtr moved, Transpose(pieces, order));
  const int64_t piece_dim = std::find(order.begin(), order.end(), split_dim) - order.begin();
  ir::InstructionAttributes attributes;
  attributes.dimensions = {piece_dim};
  VKSPMD_ASSIGN_OR_RETURN(NodePtr exchanged,
                          Collective(ir::Opcode::kAllToAll, moved, axes, std::move(attributes)));
  std::vector<int64_t> merged = exchanged->shape().dimensions();
  merged[piece_dim + 1] *= size;
  merged.erase(merged.begin() + piece_dim);
  return Reshape(exchanged, merged);
}

absl::StatusOr<NodePtr> Permute(const NodePtr& x, int64_t axis,
                                const std::vector<std::pair<int64_t, int64_t>>& pairs) {
  VKSPMD_RETURN_IF_ERROR(CheckManual(x, "ppermute"));
  const spmd::Mesh& mesh = x->placement->local_mesh;
  const int64_t size = mesh.axis_size(axis);
  std::vector<bool> source_seen(size, false), target_seen(size, false);
  for (const auto& [source, target] : pairs) {
    if (source < 0 || source >= size || target < 0 || target >= size) {
      return absl::InvalidArgumentError(absl::StrCat("ppermute: the pair (", source, ", ", target,
                                                     ") is outside mesh axis ",
                                                     mesh.AxisLabel(axis), " of size ", size));
    }
    if (source_seen[source] || target_seen[target]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ppermute: position ", source_seen[source] ? source : target, " of mesh axis ",
          mesh.AxisLabel(axis), " is a source or a target twice; a permutation is one-to-one"));
    }
    source_seen[source] = target_seen[target] = true;
  }
  ir::InstructionAttributes attributes;
  attributes.channel_id = 1;
  for (const std::vector<int64_t>& group : mesh.GroupsAlong({axis})) {
    for (const auto& [source, target] : pairs) {
      attributes.source_target_pairs.emplace_back(group[source], group[target]);
    }
  }
  return MakeOp(ir::Opcode::kCollectivePermute, {x}, std::move(attributes));
}

}  // namespace vkspmd::lazy::trace
