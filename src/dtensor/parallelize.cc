// parallelize_module: a tensor-parallel plan's styles as DTensor placements of each planned
// module's parameters, marked with mark_sharding (the partitioner derives the collectives).
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "vkspmd/dtensor_parallel.h"
#include "vkspmd/sharded_tensor.h"

namespace vkspmd {
namespace {

// The mesh axis tensor parallelism uses: `axis`, or the only axis of a 1-D mesh.
int64_t ModelAxis(const DeviceMesh& mesh, const std::string& axis) {
  if (!axis.empty()) return mesh.mesh().axis_index(axis);
  if (mesh.ndim() != 1) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("parallelize_module: ", mesh.to_string(),
                             " has several axes; name the tensor-parallel one"));
  }
  return 0;
}

// The placements (over the mesh) splitting tensor dim `dim` over `axis`; -1 replicates.
Placements SplitOver(const DeviceMesh& mesh, int64_t axis, int64_t dim) {
  Placements placements(mesh.ndim(), Replicate{});
  if (dim >= 0) placements[axis] = Shard{dim};
  return placements;
}

// The partition spec of placements without Partial: per tensor dim the axes that Shard it.
PartitionSpec SpecOf(const Placements& placements, int64_t rank) {
  PartitionSpec spec;
  for (int64_t dim = 0; dim < rank; ++dim) {
    Axes axes({});
    for (size_t axis = 0; axis < placements.size(); ++axis) {
      if (placements[axis].is_shard() && placements[axis].dim() == dim) {
        axes.axes.emplace_back(static_cast<int64_t>(axis));
      }
    }
    spec.emplace_back(std::move(axes));
  }
  return spec;
}

// Parameter name (within the module) -> the dim the style splits, for the module's type.
std::map<std::string, int64_t> SplitDims(const std::string& name, const nn::Module& module,
                                         const ParallelStyle& style) {
  if (std::holds_alternative<SequenceParallel>(style)) {
    if (dynamic_cast<const nn::LayerNorm*>(&module) == nullptr) {
      throw Error(ErrorCode::kInvalidArgument,
                  absl::StrCat("parallelize_module: SequenceParallel applies to LayerNorm; \"",
                               name, "\" is not one"));
    }
    return {};  // The weight and bias stay replicated.
  }
  const bool colwise = std::holds_alternative<ColwiseParallel>(style);
  if (dynamic_cast<const nn::Linear*>(&module) != nullptr) {
    if (colwise) return {{"weight", 0}, {"bias", 0}};
    return {{"weight", 1}, {"bias", -1}};
  }
  if (dynamic_cast<const nn::Embedding*>(&module) != nullptr) {
    return {{"weight", colwise ? 1 : 0}};
  }
  throw Error(ErrorCode::kInvalidArgument,
              absl::StrCat("parallelize_module: ", colwise ? "ColwiseParallel" : "RowwiseParallel",
                           " applies to Linear and Embedding; \"", name, "\" is neither"));
}

}  // namespace

void parallelize_module(nn::Module& module, const DeviceMesh& mesh, const ParallelizePlan& plan,
                        const std::string& axis) {
  const int64_t model_axis = ModelAxis(mesh, axis);
  std::map<std::string, nn::Module*> modules;
  for (const auto& [name, child] : module.named_modules()) modules[name] = child;
  // Parameter dotted name -> split dim, checked for every entry before anything is marked.
  std::map<std::string, int64_t> split;
  for (const auto& [name, style] : plan) {
    const auto found = modules.find(name);
    if (found == modules.end()) {
      std::vector<std::string> names;
      for (const auto& entry : modules) names.push_back(entry.first);
      throw Error(ErrorCode::kInvalidArgument,
                  absl::StrCat("parallelize_module: the model has no module \"", name,
                               "\" (its modules: ", absl::StrJoin(names, ", "), ")"));
    }
    for (const auto& [parameter, dim] : SplitDims(name, *found->second, style)) {
      split[absl::StrCat(name, ".", parameter)] = dim;
    }
  }
  for (const auto& [name, style] : plan) {
    if (std::holds_alternative<SequenceParallel>(style)) {
      modules.at(name)->set_sequence_parallel(mesh.mesh(), model_axis, /*dim=*/1);
    }
  }
  for (const auto& [name, tensor] : module.named_parameters()) {
    const auto found = split.find(name);
    const int64_t dim = found == split.end() ? -1 : found->second;
    mark_sharding(tensor, mesh.mesh(), SpecOf(SplitOver(mesh, model_axis, dim), tensor.dim()));
  }
}

}  // namespace vkspmd
