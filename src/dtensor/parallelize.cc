// parallelize_module: a tensor-parallel plan's styles as DTensor placements of each planned
// module's parameters, marked with mark_sharding (the partitioner derives the collectives).
#include <algorithm>
#include <map>
#include <memory>
#include <optional>

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
  if (std::holds_alternative<FullyShard>(style)) return {};  // Over the data axis (FsdpDim).
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

// A style's layout option as the module's boundary layout (nullopt: not set).
std::optional<nn::Module::AxisLayout> LayoutOf(const std::optional<Placement>& placement,
                                               const std::string& name, const std::string& option) {
  if (!placement.has_value()) return std::nullopt;
  if (placement->is_partial()) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("parallelize_module: ", option, " of \"", name, "\" is ",
                             placement->to_string(), "; a module's input or output is Shard or ",
                             "Replicate (a pending reduction does not leave a module)"));
  }
  if (placement->is_replicate()) return nn::Module::AxisLayout{true, 0};
  return nn::Module::AxisLayout{false, placement->dim()};
}

// A Colwise/Rowwise style's (input_layouts, output_layouts) as boundary layouts; "style" names
// it in errors. Throws for a Partial layout.
std::pair<std::optional<nn::Module::AxisLayout>, std::optional<nn::Module::AxisLayout>> Layouts(
    const ParallelStyle& style, const std::string& name) {
  if (const auto* colwise = std::get_if<ColwiseParallel>(&style)) {
    return {LayoutOf(colwise->input_layouts, name, "ColwiseParallel input_layouts"),
            LayoutOf(colwise->output_layouts, name, "ColwiseParallel output_layouts")};
  }
  const auto& rowwise = std::get<RowwiseParallel>(style);
  return {LayoutOf(rowwise.input_layouts, name, "RowwiseParallel input_layouts"),
          LayoutOf(rowwise.output_layouts, name, "RowwiseParallel output_layouts")};
}

// Sets the module's boundary layouts from its style (SequenceParallel, or the layout options).
void SetLayouts(nn::Module& module, const std::string& name, const ParallelStyle& style,
                const DeviceMesh& mesh, int64_t model_axis) {
  if (std::holds_alternative<FullyShard>(style)) return;
  if (std::holds_alternative<SequenceParallel>(style)) {
    module.set_sequence_parallel(mesh.mesh(), model_axis, /*dim=*/1);
    return;
  }
  auto [input, output] = Layouts(style, name);
  if (!input.has_value() && !output.has_value()) return;
  module.set_layouts(
      mesh.mesh(), model_axis, input, output,
      absl::StrCat(std::holds_alternative<ColwiseParallel>(style) ? "ColwiseParallel \""
                                                                  : "RowwiseParallel \"",
                   name, "\""));
}

// A style that splits parameters over the tensor-parallel axis (all but FullyShard).
bool UsesModelAxis(const ParallelStyle& style) {
  return !std::holds_alternative<FullyShard>(style);
}

// The dim FullyShard splits of parameter `name` of `shape`: `dim` (negative from the end), or the
// first of the largest dims (nn::fsdp_v2's choice); -1 for a scalar.
int64_t FsdpDim(const std::optional<int64_t>& dim, const std::string& name,
                const std::vector<int64_t>& shape) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank == 0) return -1;
  if (!dim.has_value()) return std::max_element(shape.begin(), shape.end()) - shape.begin();
  const int64_t d = *dim < 0 ? *dim + rank : *dim;
  if (d < 0 || d >= rank) {
    throw Error(
        ErrorCode::kInvalidArgument,
        absl::StrCat("parallelize_module: FullyShard dim ", *dim, " is outside parameter \"", name,
                     "\" of shape [", absl::StrJoin(shape, ","), "]"));
  }
  return d;
}

}  // namespace

void parallelize_module(nn::Module& module, const DeviceMesh& mesh, const ParallelizePlan& plan,
                        const std::string& axis, const std::string& data_axis) {
  // A plan of no tensor-parallel style (data parallelism, FSDP) splits nothing over a model axis.
  const bool tensor_parallel = std::any_of(
      plan.begin(), plan.end(), [](const auto& entry) { return UsesModelAxis(entry.second); });
  const int64_t model_axis = !tensor_parallel && axis.empty() ? -1 : ModelAxis(mesh, axis);
  if (!data_axis.empty() && mesh.mesh().axis_index(data_axis) == model_axis) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("parallelize_module: the data axis \"", data_axis,
                             "\" is the tensor-parallel axis; they must differ"));
  }
  std::map<std::string, nn::Module*> modules{{"", &module}};
  for (const auto& [name, child] : module.named_modules()) modules[name] = child;
  // Parameter dotted name -> split dim, checked for every entry before anything is marked.
  std::map<std::string, int64_t> split;
  // Parameter dotted name -> FullyShard's dim option.
  std::map<std::string, std::optional<int64_t>> fully_sharded;
  for (const auto& [name, style] : plan) {
    const auto found = modules.find(name);
    if (found == modules.end()) {
      std::vector<std::string> names;
      for (const auto& entry : modules) {
        if (!entry.first.empty()) names.push_back(entry.first);  // "" is the module itself.
      }
      throw Error(ErrorCode::kInvalidArgument,
                  absl::StrCat("parallelize_module: the model has no module \"", name,
                               "\" (its modules: ", absl::StrJoin(names, ", "), ")"));
    }
    const std::string prefix = name.empty() ? "" : name + ".";
    for (const auto& [parameter, dim] : SplitDims(name, *found->second, style)) {
      split[prefix + parameter] = dim;
    }
    if (const auto* fsdp = std::get_if<FullyShard>(&style)) {
      if (data_axis.empty()) {
        throw Error(ErrorCode::kInvalidArgument,
                    absl::StrCat("parallelize_module: FullyShard on ",
                                 name.empty() ? "the whole model" : "\"" + name + "\"",
                                 " shards over the data axis; name it (data_axis)"));
      }
      for (const auto& [parameter, tensor] : found->second->named_parameters()) {
        fully_sharded[prefix + parameter] = fsdp->dim;
        (void)FsdpDim(fsdp->dim, prefix + parameter, tensor.shape());
      }
    }
    if (std::holds_alternative<ColwiseParallel>(style) ||
        std::holds_alternative<RowwiseParallel>(style)) {
      (void)Layouts(style, name);
    }
  }
  // Data parallelism: the inputs' batch over the data axis; activations are left to propagation,
  // except under FSDP alone: each device computes its part of the batch with the gathered
  // parameters, so the activations are kept split on the batch as nn::fsdp_v2 keeps them (the
  // partitioner then all-gathers the parameters rather than resharding the activations).
  if (!data_axis.empty()) {
    const bool fsdp = std::any_of(plan.begin(), plan.end(), [](const auto& entry) {
      return std::holds_alternative<FullyShard>(entry.second);
    });
    module.set_parallel_plan(std::make_shared<const nn::ParallelPlan>(
        nn::ParallelPlan{"parallelize_module", mesh.mesh(), data_axis, "", "",
                         /*constrain_activations=*/fsdp && !tensor_parallel}));
  }
  for (const auto& [name, style] : plan)
    SetLayouts(*modules.at(name), name, style, mesh, model_axis);
  for (const auto& [name, tensor] : module.named_parameters()) {
    const auto found = split.find(name);
    const int64_t dim = found == split.end() ? -1 : found->second;
    Placements placements = SplitOver(mesh, model_axis, dim);
    if (const auto fsdp = fully_sharded.find(name); fsdp != fully_sharded.end()) {
      const int64_t fsdp_dim = FsdpDim(fsdp->second, name, tensor.shape());
      if (fsdp_dim >= 0) placements[mesh.mesh().axis_index(data_axis)] = Shard{fsdp_dim};
    }
    mark_sharding(tensor, mesh.mesh(), SpecOf(placements, tensor.dim()));
  }
}

ParallelizePlan tensor_parallel_plan(const nn::Module& module) {
  ParallelizePlan plan;
  for (const auto& [name, child] : module.named_modules()) {
    const bool linear = dynamic_cast<const nn::Linear*>(child) != nullptr;
    const bool embedding = dynamic_cast<const nn::Embedding*>(child) != nullptr;
    if (!linear && !embedding) continue;
    for (const nn::NamedParameter& parameter : child->parameter_table()) {
      if (parameter.name != "weight" || parameter.tensor_parallel_dim < 0) continue;
      // Column-parallel Linear weights split dim 0; row-parallel ones dim 1, as does nothing
      // else; a vocabulary-parallel Embedding splits its rows (dim 0), RowwiseParallel's rule.
      if (linear && parameter.tensor_parallel_dim == 0) {
        plan.emplace_back(name, ColwiseParallel{});
      } else {
        plan.emplace_back(name, RowwiseParallel{});
      }
    }
  }
  return plan;
}

}  // namespace vkspmd
