// Sync: from pending nodes to launched graphs.
#include "src/lazy/context.h"

#include <filesystem>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "src/ir/status_macros.h"
#include "src/ir/structural_hash.h"
#include "src/lazy/engine.h"
#include "src/lazy/lowering.h"

namespace vkspmd::lazy {
namespace {

std::string CauseName(SyncCause cause) {
  switch (cause) {
    case SyncCause::kUserSync:
      return "user sync (vkspmd::sync)";
    case SyncCause::kValueRead:
      return "value read";
    case SyncCause::kStepMarker:
      return "step marker (vkspmd::mark_step)";
  }
  return "unknown";
}

std::string SourceText(const std::source_location& where) {
  return absl::StrCat(std::filesystem::path(where.file_name()).filename().string(), ":",
                      where.line(), " (", where.function_name(), ")");
}

// The sharding a constraint node's value will have, known before its graph compiles.
std::optional<spmd::AxisSharding> KnownSharding(const Node& node, const Placement& placement) {
  if (!placement.is_mesh || !node.proto->sharding().has_value()) return std::nullopt;
  absl::StatusOr<spmd::AxisSharding> sharding =
      spmd::FromHloSharding(*node.proto->sharding(), placement.local_mesh, node.shape().rank());
  if (!sharding.ok()) return std::nullopt;
  return *sharding;
}

}  // namespace

Context& Context::Get() {
  static Context* context = new Context();
  return *context;
}

std::shared_ptr<TensorState> Context::NewTensor(NodePtr node) {
  auto state = std::make_shared<TensorState>();
  state->node = std::move(node);
  std::lock_guard<std::mutex> lock(mutex_);
  tensors_.push_back(state);
  return state;
}

absl::Status Context::SyncAll(SyncCause cause, const std::source_location& where) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<NodePtr> outputs;
  std::vector<std::weak_ptr<TensorState>> live;
  for (const std::weak_ptr<TensorState>& weak : tensors_) {
    std::shared_ptr<TensorState> state = weak.lock();
    if (state == nullptr) continue;
    live.push_back(weak);
    outputs.push_back(state->node);
  }
  tensors_ = std::move(live);
  return SyncNodes(std::move(outputs), cause, where);
}

absl::Status Context::Sync(const std::vector<std::shared_ptr<TensorState>>& tensors,
                           SyncCause cause, const std::source_location& where) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<NodePtr> outputs;
  for (const std::shared_ptr<TensorState>& state : tensors) outputs.push_back(state->node);
  return SyncNodes(std::move(outputs), cause, where);
}

absl::Status Context::SyncNodes(std::vector<NodePtr> nodes, SyncCause cause,
                                const std::source_location& where) {
  // Pending op nodes, once each, grouped by placement in order of first appearance.
  std::vector<std::pair<PlacementPtr, std::vector<NodePtr>>> groups;
  absl::flat_hash_set<const Node*> seen;
  for (NodePtr& node : nodes) {
    if (node->is_leaf() || !seen.insert(node.get()).second) continue;
    PlacementPtr placement = node->placement ? node->placement : SingleDevicePlacement();
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const auto& g) { return SamePlacement(g.first, placement); });
    if (group == groups.end()) {
      groups.push_back({placement, {}});
      group = groups.end() - 1;
    }
    group->second.push_back(std::move(node));
  }
  for (auto& [placement, outputs] : groups) {
    VKSPMD_ASSIGN_OR_RETURN(LoweredGraph graph, Lower(outputs, placement));
    GraphTask task;
    task.placement = placement;
    task.hash = ir::StructuralHashHex(*graph.module);
    for (const NodePtr& parameter : graph.parameters) {
      GraphInput input;
      const bool failed = parameter->device_value != nullptr && parameter->device_value->Failed();
      if (parameter->host_value.has_value() && (parameter->device_value == nullptr || failed)) {
        // Uploaded replicated (see Lower), so its sharding is known now.
        parameter->device_value = std::make_shared<DeviceValue>(
            placement, parameter->shape(),
            spmd::AxisSharding::Replicated(parameter->shape().rank()));
        input.host = *parameter->host_value;
      }
      input.value = parameter->device_value;
      task.inputs.push_back(std::move(input));
    }
    for (const NodePtr& output : graph.outputs) {
      auto value = std::make_shared<DeviceValue>(placement, output->shape(),
                                                 KnownSharding(*output, *placement));
      task.outputs.push_back(value);
      output->Materialize(std::move(value));
    }
    task.analysis.cause = CauseName(cause);
    task.analysis.source = SourceText(where);
    task.analysis.graph_hash = task.hash;
    task.analysis.inputs = static_cast<int64_t>(task.inputs.size());
    task.analysis.outputs = static_cast<int64_t>(task.outputs.size());
    task.analysis.placement =
        placement->is_mesh ? placement->mesh.ToString() : std::string("device 0");
    task.module = std::move(graph.module);
    Engine::Get().Launch(std::move(task));
  }
  return absl::OkStatus();
}

uint64_t Context::TakeRandomCounter(uint64_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t first = random_counter_;
  random_counter_ += count;
  return first;
}

uint64_t Context::seed() {
  std::lock_guard<std::mutex> lock(mutex_);
  return seed_;
}

void Context::SetSeed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  seed_ = seed;
  random_counter_ = 0;
}

}  // namespace vkspmd::lazy
