// auto_shard: a training step's graph sharded by auto-sharding's ILP (src/lazy/auto_sharding.h),
// under the default, a file's or a measured cost model (src/exec/cost_calibration.h).
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "src/api/api_support.h"
#include "src/base/status_macros.h"
#include "src/exec/cost_calibration.h"
#include "src/lazy/auto_sharding.h"
#include "src/lazy/context.h"
#include "src/lazy/device_pool.h"
#include "src/lazy/engine.h"
#include "src/spmd/axis_sharding.h"
#include "vkspmd/auto_sharding.h"
#include "vkspmd/distributed.h"
#include "vkspmd/lazy.h"

namespace vkspmd {
namespace {

using lazy::NodePtr;

spmd::CostModel LoadCostModel(const std::string& path, const spmd::Mesh& mesh) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  if (!file) {
    throw Error(ErrorCode::kNotFound,
                absl::StrCat("auto_shard: cannot read the cost model file ", path));
  }
  absl::StatusOr<spmd::CostModel> model = spmd::CostModel::Parse(text.str(), mesh);
  if (!model.ok()) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("auto_shard: cost model ", path, ": ", model.status().message()));
  }
  return *std::move(model);
}

// The model timed on the placement's devices (exec/cost_calibration.h), or read from the cache.
// It runs on the engine's worker, after what is queued, as a graph would.
spmd::CostModel MeasureCostModel(const lazy::Placement& placement, bool recalibrate,
                                 std::string& source) {
  if (distributed::process_count() > 1) {
    throw Error(ErrorCode::kFailedPrecondition,
                "auto_shard: measure_cost_model in a job of several processes: each would time "
                "its own devices and could choose another plan; measure once (`vkspmd partition "
                "--cost-model measured` prints the model) and pass it as cost_model_file");
  }
  std::optional<exec::Calibration> calibration;
  std::string device;
  lazy::ThrowIfError(lazy::Engine::Get().Call([&](lazy::DevicePool& pool) -> absl::Status {
    VKSPMD_ASSIGN_OR_RETURN(std::vector<runtime::MeshDevice*> devices, pool.DevicesFor(placement));
    exec::CalibrationOptions options;
    options.refresh = recalibrate;
    VKSPMD_ASSIGN_OR_RETURN(calibration,
                            exec::MeasuredCostModel(placement.local_mesh, devices, options));
    device = devices.at(0)->device().physical_device().name;
    return absl::OkStatus();
  }));
  source = calibration->from_cache
               ? absl::StrCat("measured earlier on ", device, " (from the cache ",
                              calibration->cache_path, ")")
               : absl::StrFormat("measured in %.1f s on %s (%s)", calibration->seconds, device,
                                 calibration->cache_path.empty()
                                     ? std::string("not cached")
                                     : absl::StrCat("cached in ", calibration->cache_path));
  return std::move(calibration->model);
}

// The model the options name, and where it came from (AutoShardPlan::cost_model).
spmd::CostModel ChosenCostModel(const AutoShardOptions& options, const lazy::Placement& placement,
                                std::string& source) {
  if (options.measure_cost_model) {
    if (!options.cost_model_file.empty()) {
      throw Error(ErrorCode::kInvalidArgument,
                  absl::StrCat("auto_shard: measure_cost_model and cost_model_file ",
                               options.cost_model_file, " both name a cost model; give one"));
    }
    return MeasureCostModel(placement, options.recalibrate, source);
  }
  if (options.cost_model_file.empty()) {
    source = "defaults";
    return spmd::CostModel::Default(placement.local_mesh);
  }
  source = absl::StrCat("file ", options.cost_model_file);
  return LoadCostModel(options.cost_model_file, placement.local_mesh);
}

// A state tensor as it was before auto_shard, to put back when planning fails.
struct Saved {
  std::shared_ptr<lazy::TensorState> state;
  NodePtr node;
  std::optional<lazy::ShardingAnnotation> annotation;
  NodePtr free_leaf;      // The leaf the ILP places (null: the tensor keeps its marked sharding).
  bool assigned = false;  // step() gave it a new value (found state only)
};

// A leaf holding the same value whose sharding the ILP chooses on `placement`.
NodePtr FreeLeaf(const NodePtr& leaf, const lazy::PlacementPtr& placement) {
  auto node = std::make_shared<lazy::Node>();
  node->proto = std::make_unique<ir::Instruction>(ir::Opcode::kParameter, leaf->shape(),
                                                  std::vector<ir::Instruction*>{});
  node->host_value = leaf->host_value;
  node->device_value = leaf->device_value;
  node->placement = placement;
  node->free_sharding = true;
  return node;
}

// What auto_shard without a state list may find as state: the live tensors with a value, on no
// other mesh, not inside a manual region. Each is a free leaf during the step (unless marked on
// the mesh); the state is those the step assigns and whose old value its graph reads.
std::vector<Tensor> Candidates(const lazy::PlacementPtr& placement) {
  std::vector<Tensor> candidates;
  for (std::shared_ptr<lazy::TensorState>& state : lazy::Context::Get().LiveTensors()) {
    if (state->node == nullptr || !state->node->is_leaf() || state->node->manual) continue;
    const std::optional<lazy::ShardingAnnotation>& annotation = state->annotation;
    if (annotation.has_value() && annotation->placement->key != placement->key) continue;
    const lazy::PlacementPtr& at = state->node->placement;
    if (at != nullptr && at->key != placement->key) continue;
    candidates.emplace_back(std::move(state));
  }
  return candidates;
}

// auto_shard with `state` given (`find_state` false), or the live tensors as candidates of which
// the state is found (`find_state`).
AutoShardPlan AutoShard(const std::function<void()>& step, const Mesh& mesh,
                        const std::optional<std::vector<Tensor>>& given,
                        const AutoShardOptions& options) {
  if (options.memory_limit_bytes.has_value() && *options.memory_limit_bytes <= 0) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("auto_shard: memory_limit_bytes must be positive, not ",
                             *options.memory_limit_bytes));
  }
  if (!(options.time_limit_seconds > 0)) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("auto_shard: time_limit_seconds must be positive, not ",
                             options.time_limit_seconds));
  }
  const lazy::PlacementPtr placement = lazy::PlacementOf(mesh);
  lazy::AutoShardingConfig config;
  std::string cost_model_source;
  config.model = ChosenCostModel(options, *placement, cost_model_source);
  config.options.memory_limit_bytes = options.memory_limit_bytes;
  config.options.time_limit_seconds = options.time_limit_seconds;
  sync();  // The state's pending values become data the ILP can place.
  const bool find_state = !given.has_value();
  const std::vector<Tensor> state = find_state ? Candidates(placement) : *given;
  std::vector<Saved> saved;
  for (const Tensor& tensor : state) {
    const NodePtr node = lazy::NodeOf(tensor, "auto_shard");
    lazy::TensorState& tensor_state = *tensor.state();
    Saved entry{tensor.state(), node, tensor_state.annotation, nullptr};
    const std::optional<lazy::ShardingAnnotation>& annotation = tensor_state.annotation;
    if (annotation.has_value() && !annotation->sharding.IsReplicated()) {
      if (annotation->placement->key != placement->key) {
        throw Error(ErrorCode::kInvalidArgument,
                    absl::StrCat("auto_shard: a state tensor ", lazy::ShapeText(node),
                                 " is marked on ", annotation->mesh.to_string(), ", not on ",
                                 mesh.to_string(), "; clear_sharding it first"));
      }
    } else if (!node->is_leaf()) {
      throw Error(ErrorCode::kInvalidArgument,
                  absl::StrCat("auto_shard: a state tensor ", lazy::ShapeText(node),
                               " has no value to place (inside a manual sharding region?)"));
    } else {
      entry.free_leaf = FreeLeaf(node, placement);
    }
    saved.push_back(std::move(entry));
  }
  for (Saved& entry : saved) {
    if (entry.free_leaf == nullptr) continue;
    entry.state->node = entry.free_leaf;
    entry.state->annotation.reset();
  }
  lazy::SetAutoSharding(*placement, std::move(config));
  std::optional<lazy::AutoShardingRecord> record;
  try {
    step();
    if (find_state) {
      // A candidate the step did not assign is no state: it gets its value and sharding back,
      // and the graph reads it as it would have read the tensor (not placed by the ILP).
      for (Saved& entry : saved) {
        entry.assigned = entry.state->node != (entry.free_leaf ? entry.free_leaf : entry.node);
        if (entry.assigned) continue;
        if (entry.free_leaf != nullptr) entry.free_leaf->free_sharding = false;
        entry.state->node = entry.node;
        entry.state->annotation = entry.annotation;
      }
    }
    mark_step();
    record = lazy::TakeAutoShardingRecord(*placement);
    if (!record.has_value()) {
      throw Error(ErrorCode::kInvalidArgument,
                  absl::StrCat("auto_shard: the step computed nothing on ", mesh.to_string(),
                               " (it must update the state tensors)"));
    }
  } catch (...) {
    lazy::SetAutoSharding(*placement, std::nullopt);
    for (Saved& entry : saved) {
      entry.state->node = entry.node;
      entry.state->annotation = entry.annotation;
      entry.state->replaced = nullptr;
    }
    throw;
  }
  AutoShardPlan plan;
  for (const Saved& entry : saved) {
    if (find_state && (!entry.assigned || (entry.free_leaf != nullptr &&
                                           !record->parameters.contains(entry.free_leaf.get())))) {
      // Not assigned, or assigned a value computed without reading the old one: no state.
      entry.state->annotation = entry.annotation;
      continue;
    }
    spmd::AxisSharding sharding = entry.annotation.has_value() && entry.free_leaf == nullptr
                                      ? entry.annotation->sharding
                                      : spmd::AxisSharding::Replicated(entry.node->shape().rank());
    if (entry.free_leaf != nullptr) {
      auto found = record->parameters.find(entry.free_leaf.get());
      if (found != record->parameters.end()) sharding = found->second;
    }
    plan.state.emplace_back(entry.state);
    plan.shardings.push_back(spmd::ToHloSharding(sharding, placement->mesh).ToString());
    plan.axes.push_back(sharding.ToString(placement->mesh));
    // Later updates stay where the plan put the tensor (Tensor::assign constrains to it).
    entry.state->annotation = lazy::ShardingAnnotation{mesh, placement, sharding};
  }
  const spmd::AutoShardingPlan& chosen = record->plan;
  plan.compute_seconds = chosen.compute;
  plan.communication_seconds = chosen.communication;
  plan.resharding_seconds = chosen.resharding;
  plan.peak_memory_bytes = chosen.peak_memory_bytes;
  plan.instructions = chosen.instructions;
  plan.variables = chosen.variables;
  plan.solve_seconds = chosen.solve_seconds;
  plan.optimal = chosen.optimal;
  plan.stopped_at_time_limit = chosen.stopped_at_time_limit;
  plan.report = std::move(record->report);
  plan.cost_model = std::move(cost_model_source);
  return plan;
}

}  // namespace

AutoShardPlan auto_shard(const std::function<void()>& step, const Mesh& mesh,
                         const std::vector<Tensor>& state, const AutoShardOptions& options) {
  return AutoShard(step, mesh, state, options);
}

AutoShardPlan auto_shard(const std::function<void()>& step, const Mesh& mesh,
                         const AutoShardOptions& options) {
  return AutoShard(step, mesh, std::nullopt, options);
}

}  // namespace vkspmd
