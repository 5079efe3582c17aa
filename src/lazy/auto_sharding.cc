// The registry of auto-sharded placements and the planning of their graphs.
#include "src/lazy/auto_sharding.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/spmd/propagation.h"

namespace vkspmd::lazy {
namespace {

struct Registration {
  AutoShardingConfig config;
  int64_t generation = 0;
  std::optional<AutoShardingRecord> record;
};

struct Registry {
  std::mutex mutex;
  absl::flat_hash_map<std::string, Registration> placements;  // by Placement::key
  int64_t generations = 0;
};

Registry& GetRegistry() {
  static Registry* registry = new Registry();
  return *registry;
}

}  // namespace

void SetAutoSharding(const Placement& placement, std::optional<AutoShardingConfig> config) {
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  if (!config.has_value()) {
    registry.placements.erase(placement.key);
    return;
  }
  Registration& registration = registry.placements[placement.key];
  registration.config = std::move(*config);
  registration.generation = ++registry.generations;
  registration.record.reset();
}

std::string AutoShardingCacheKeyPrefix(const Placement& placement) {
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  auto found = registry.placements.find(placement.key);
  if (found == registry.placements.end()) return "";
  return absl::StrCat("auto", found->second.generation, " ");
}

absl::Status AutoShardGraph(LoweredGraph& graph) {
  if (graph.placement == nullptr || !graph.placement->is_mesh) return absl::OkStatus();
  Registry& registry = GetRegistry();
  AutoShardingConfig config;
  {
    std::lock_guard<std::mutex> lock(registry.mutex);
    auto found = registry.placements.find(graph.placement->key);
    if (found == registry.placements.end()) return absl::OkStatus();
    config = found->second.config;
  }
  const spmd::Mesh& mesh = graph.placement->local_mesh;
  ir::Module& module = *graph.module;
  absl::StatusOr<spmd::AutoShardingPlan> plan =
      spmd::AutoShard(module, mesh, config.model, config.options);
  if (!plan.ok()) {
    // A later graph on the mesh that the ILP has no rule for (a manual region's collectives)
    // is left to propagation, as without auto-sharding; auto_shard's own step (the one reading
    // free leaves) reports it.
    const bool planning_step =
        std::any_of(graph.parameters.begin(), graph.parameters.end(),
                    [](const NodePtr& parameter) { return parameter->free_sharding; });
    if (!planning_step && plan.status().code() == absl::StatusCode::kUnimplemented) {
      return absl::OkStatus();
    }
    return absl::Status(plan.status().code(), absl::StrCat("auto-sharding the graph on ",
                                                           graph.placement->mesh.ToString(), ": ",
                                                           plan.status().message()));
  }
  AutoShardingRecord record;
  record.report = plan->Report(module, mesh);
  const std::vector<ir::Instruction*>& parameters = module.entry()->parameters();
  for (size_t p = 0; p < graph.parameters.size() && p < parameters.size(); ++p) {
    auto found = plan->shardings.find(parameters[p]);
    if (found != plan->shardings.end() && !found->second.empty()) {
      record.parameters[graph.parameters[p].get()] = found->second[0];
    }
  }
  spmd::AnnotateModule(module, plan->shardings, mesh);
  record.plan = std::move(*plan);
  record.plan.shardings.clear();
  std::lock_guard<std::mutex> lock(registry.mutex);
  auto found = registry.placements.find(graph.placement->key);
  if (found == registry.placements.end()) return absl::OkStatus();
  // A step of several graphs (one that reads a value midway) reports its last graph's plan and
  // each leaf where the first graph reading it put it.
  std::optional<AutoShardingRecord>& kept = found->second.record;
  if (kept.has_value()) {
    kept->parameters.merge(record.parameters);  // keeps the earlier graph's entries
    record.parameters = std::move(kept->parameters);
  }
  kept = std::move(record);
  return absl::OkStatus();
}

std::optional<AutoShardingRecord> TakeAutoShardingRecord(const Placement& placement) {
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  auto found = registry.placements.find(placement.key);
  if (found == registry.placements.end()) return std::nullopt;
  return std::exchange(found->second.record, std::nullopt);
}

}  // namespace vkspmd::lazy
