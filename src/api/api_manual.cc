// Manual sharding regions and the collectives inside them (include/vkspmd/manual.h).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "src/api/api_support.h"
#include "src/lazy/trace_manual.h"
#include "src/lazy/trace_ops.h"
#include "vkspmd/manual.h"

namespace vkspmd {
namespace {

using lazy::NodeOf;
using lazy::NodePtr;
using lazy::Unwrap;
using lazy::Wrap;

spmd::AxisSharding Resolve(const lazy::PlacementPtr& placement, const PartitionSpec& spec,
                           int64_t rank, const char* op) {
  absl::StatusOr<spmd::AxisSharding> sharding =
      spmd::ResolvePartitionSpec(lazy::ToSpmdSpec(spec), placement->mesh, rank);
  if (!sharding.ok()) {
    throw Error(ErrorCode::kInvalidArgument, absl::StrCat(op, ": ", sharding.status().message()));
  }
  return *sharding;
}

std::vector<int64_t> MeshAxes(const NodePtr& node, const std::vector<std::string>& axes,
                              const char* op) {
  return Unwrap(lazy::trace::ManualAxes(node, axes, op));
}

}  // namespace

Tensor enable_manual_sharding(const Tensor& tensor, const Mesh& mesh, const PartitionSpec& spec,
                              const std::vector<std::string>& auto_axes) {
  NodePtr node = NodeOf(tensor, "enable_manual_sharding");
  lazy::PlacementPtr placement = lazy::PlacementOf(mesh);
  const spmd::AxisSharding sharding =
      Resolve(placement, spec, node->shape().rank(), "enable_manual_sharding");
  std::vector<int64_t> auto_indices;
  for (const std::string& name : auto_axes) {
    absl::StatusOr<int64_t> axis = placement->mesh.AxisIndex(name);
    if (!axis.ok()) {
      throw Error(ErrorCode::kInvalidArgument,
                  absl::StrCat("enable_manual_sharding: auto axes: ", axis.status().message()));
    }
    if (std::find(auto_indices.begin(), auto_indices.end(), *axis) != auto_indices.end()) {
      throw Error(ErrorCode::kInvalidArgument,
                  absl::StrCat("enable_manual_sharding: auto axis \"", name, "\" twice"));
    }
    auto_indices.push_back(*axis);
  }
  return Wrap(lazy::trace::EnterManual(node, sharding, placement, auto_indices));
}

Tensor disable_manual_sharding(const Tensor& tensor, const Mesh& mesh, const PartitionSpec& spec,
                               const std::vector<int64_t>& full_shape) {
  NodePtr node = NodeOf(tensor, "disable_manual_sharding");
  lazy::PlacementPtr placement = lazy::PlacementOf(mesh);
  if (node->manual && !lazy::SamePlacement(node->placement, placement)) {
    throw Error(
        ErrorCode::kInvalidArgument,
        absl::StrCat("disable_manual_sharding: the region is on ", node->placement->mesh.ToString(),
                     ", not on ", placement->mesh.ToString()));
  }
  const spmd::AxisSharding sharding =
      Resolve(placement, spec, static_cast<int64_t>(full_shape.size()), "disable_manual_sharding");
  return Wrap(lazy::trace::LeaveManual(node, sharding, full_shape));
}

ShardMapFunction shard_map(ShardMapFunction fn, const Mesh& mesh,
                           std::vector<PartitionSpec> in_specs,
                           std::vector<PartitionSpec> out_specs,
                           std::vector<std::string> auto_axes) {
  return [fn = std::move(fn), mesh, in_specs = std::move(in_specs),
          out_specs = std::move(out_specs),
          auto_axes = std::move(auto_axes)](const std::vector<Tensor>& inputs) {
    if (inputs.size() != in_specs.size()) {
      throw Error(
          ErrorCode::kInvalidArgument,
          absl::StrCat("shard_map: ", inputs.size(), " inputs for ", in_specs.size(), " in_specs"));
    }
    std::vector<Tensor> shards;
    for (size_t i = 0; i < inputs.size(); ++i) {
      shards.push_back(enable_manual_sharding(inputs[i], mesh, in_specs[i], auto_axes));
    }
    const std::vector<Tensor> results = fn(shards);
    if (results.size() != out_specs.size()) {
      throw Error(ErrorCode::kInvalidArgument,
                  absl::StrCat("shard_map: the function returned ", results.size(), " values for ",
                               out_specs.size(), " out_specs"));
    }
    lazy::PlacementPtr placement = lazy::PlacementOf(mesh);
    std::vector<Tensor> outputs;
    for (size_t j = 0; j < results.size(); ++j) {
      NodePtr node = NodeOf(results[j], "shard_map");
      const spmd::AxisSharding sharding =
          Resolve(placement, out_specs[j], node->shape().rank(), "shard_map");
      std::vector<int64_t> full = node->shape().dimensions();
      for (size_t d = 0; d < full.size(); ++d) {
        full[d] *= placement->local_mesh.SizeOf(sharding.dims[d]);
      }
      outputs.push_back(disable_manual_sharding(results[j], mesh, out_specs[j], full));
    }
    return outputs;
  };
}

Tensor all_reduce(const Tensor& tensor, const std::vector<std::string>& axes, ReduceOp op) {
  NodePtr node = NodeOf(tensor, "all_reduce");
  const std::vector<int64_t> axis_indices = MeshAxes(node, axes, "all_reduce");
  const ir::Opcode reducer = op == ReduceOp::kMax   ? ir::Opcode::kMaximum
                             : op == ReduceOp::kMin ? ir::Opcode::kMinimum
                                                    : ir::Opcode::kAdd;
  NodePtr reduced = Unwrap(lazy::trace::AllReduce(node, axis_indices, reducer));
  if (op != ReduceOp::kAvg) return Wrap(reduced);
  const double size = static_cast<double>(node->placement->local_mesh.SizeOf(axis_indices));
  return Wrap(lazy::trace::Binary(ir::Opcode::kDivide, reduced,
                                  lazy::trace::Constant(size, node->shape().dtype()),
                                  "all_reduce"));
}

Tensor all_gather(const Tensor& tensor, const std::vector<std::string>& axes, int64_t dim) {
  NodePtr node = NodeOf(tensor, "all_gather");
  const int64_t d = lazy::NormalizeDim(dim, node->shape().rank(), "all_gather");
  return Wrap(lazy::trace::AllGather(node, MeshAxes(node, axes, "all_gather"), d));
}

Tensor reduce_scatter(const Tensor& tensor, const std::vector<std::string>& axes, int64_t dim) {
  NodePtr node = NodeOf(tensor, "reduce_scatter");
  const int64_t d = lazy::NormalizeDim(dim, node->shape().rank(), "reduce_scatter");
  return Wrap(lazy::trace::ReduceScatter(node, MeshAxes(node, axes, "reduce_scatter"), d));
}

Tensor all_to_all(const Tensor& tensor, const std::vector<std::string>& axes, int64_t split_dim,
                  int64_t concat_dim) {
  NodePtr node = NodeOf(tensor, "all_to_all");
  const int64_t rank = node->shape().rank();
  return Wrap(lazy::trace::AllToAll(node, MeshAxes(node, axes, "all_to_all"),
                                    lazy::NormalizeDim(split_dim, rank, "all_to_all"),
                                    lazy::NormalizeDim(concat_dim, rank, "all_to_all")));
}

Tensor ppermute(const Tensor& tensor, const std::string& axis,
                const std::vector<std::pair<int64_t, int64_t>>& permutation) {
  NodePtr node = NodeOf(tensor, "ppermute");
  return Wrap(lazy::trace::Permute(node, MeshAxes(node, {axis}, "ppermute")[0], permutation));
}

Tensor axis_index(const Tensor& region_tensor, const std::vector<std::string>& axes) {
  NodePtr node = NodeOf(region_tensor, "axis_index");
  return Wrap(lazy::trace::AxisIndex(node, MeshAxes(node, axes, "axis_index")));
}

}  // namespace vkspmd
