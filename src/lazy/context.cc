// Sync: from pending nodes to launched graphs.
#include "src/lazy/context.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/environment.h"
#include "src/base/status_macros.h"
#include "src/debug/trace_writer.h"
#include "src/ir/printer.h"
#include "src/ir/structural_hash.h"
#include "src/lazy/auto_sharding.h"
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

// The input_output_aliases a graph takes for `donations`: the donor is a parameter of this graph
// only (host data uploaded by this run included) and the output is one of this graph's. Sets
// `donated` per parameter.
std::vector<ir::InputOutputAlias> Aliases(
    const std::vector<NodePtr>& parameters, const std::vector<NodePtr>& outputs,
    const std::vector<Context::Donation>& donations,
    const absl::flat_hash_map<const Node*, int>& graphs_reading, std::vector<bool>& donated) {
  std::vector<ir::InputOutputAlias> aliases;
  donated.assign(parameters.size(), false);
  for (const Context::Donation& donation : donations) {
    auto parameter = std::find(parameters.begin(), parameters.end(), donation.donor);
    auto output = std::find_if(outputs.begin(), outputs.end(),
                               [&](const NodePtr& node) { return node.get() == donation.output; });
    // A shared scalar upload (see SharedScalars) is read by other leaves: never given away.
    if (parameter == parameters.end() || output == outputs.end() ||
        graphs_reading.at(donation.donor.get()) != 1 ||
        (donation.donor->device_value != nullptr && donation.donor->device_value->shared())) {
      continue;
    }
    const int64_t number = parameter - parameters.begin();
    const int64_t index = output - outputs.begin();
    ir::InputOutputAlias alias;
    if (outputs.size() > 1) alias.output_index = {index};
    alias.parameter_number = number;
    aliases.push_back(std::move(alias));
    donated[number] = true;
  }
  return aliases;
}

std::string ScalarKey(const ir::Literal& value, const Placement& placement) {
  return absl::StrCat(
      placement.key, "|", std::string(ir::DTypeName(value.dtype())), "|",
      absl::string_view(reinterpret_cast<const char*>(value.bytes().data()), value.bytes().size()));
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

std::vector<std::shared_ptr<TensorState>> Context::LiveTensorsLocked() {
  std::vector<std::shared_ptr<TensorState>> states;
  std::vector<std::weak_ptr<TensorState>> live;
  for (const std::weak_ptr<TensorState>& weak : tensors_) {
    std::shared_ptr<TensorState> state = weak.lock();
    if (state == nullptr) continue;
    live.push_back(weak);
    states.push_back(std::move(state));
  }
  tensors_ = std::move(live);
  return states;
}

std::vector<std::shared_ptr<TensorState>> Context::LiveTensors() {
  std::lock_guard<std::mutex> lock(mutex_);
  return LiveTensorsLocked();
}

absl::Status Context::SyncAll(SyncCause cause, const std::source_location& where) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<TensorState>> states = LiveTensorsLocked();
  // A tensor inside a manual region has no whole value to keep: it stays pending, and the graph
  // that leaves the region computes it.
  std::erase_if(states, [](const std::shared_ptr<TensorState>& state) {
    return state->node->manual && !state->node->is_leaf();
  });
  std::vector<NodePtr> outputs;
  for (const std::shared_ptr<TensorState>& state : states) outputs.push_back(state->node);
  // Every live tensor's value is an output of this sync, so an old value that is no tensor's
  // current value is needed by nothing after the step: its buffers can hold the new value. A
  // value that two tensors replaced, or an output two tensors took, is left alone.
  absl::flat_hash_set<const Node*> current;
  absl::flat_hash_map<const Node*, int> donor_claims, output_claims;
  for (const std::shared_ptr<TensorState>& state : states) current.insert(state->node.get());
  for (const std::shared_ptr<TensorState>& state : states) {
    if (state->replaced == nullptr || state->node->is_leaf()) continue;
    ++donor_claims[state->replaced.get()];
    ++output_claims[state->node.get()];
  }
  std::vector<Donation> donations;
  for (const std::shared_ptr<TensorState>& state : states) {
    NodePtr donor = std::move(state->replaced);
    state->replaced = nullptr;
    if (donor == nullptr || state->node->is_leaf() || current.contains(donor.get()) ||
        donor_claims[donor.get()] != 1 || output_claims[state->node.get()] != 1 ||
        (donor->device_value != nullptr && donor->device_value->Failed())) {
      continue;
    }
    donations.push_back({std::move(donor), state->node.get()});
  }
  return SyncNodes(std::move(outputs), donations, cause, where);
}

absl::Status Context::Sync(const std::vector<std::shared_ptr<TensorState>>& tensors,
                           SyncCause cause, const std::source_location& where) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<NodePtr> outputs;
  for (const std::shared_ptr<TensorState>& state : tensors) {
    if (state->node->manual && !state->node->is_leaf()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "a ", ShapeText(state->node),
          " tensor inside a manual sharding region has one value per device and no whole value "
          "to read; leave the region with disable_manual_sharding (or return it from shard_map) "
          "first"));
    }
    outputs.push_back(state->node);
  }
  // Other tensors' pending values may still read an old value: nothing is donated here.
  return SyncNodes(std::move(outputs), {}, cause, where);
}

absl::Status Context::SyncNodes(std::vector<NodePtr> nodes, const std::vector<Donation>& donations,
                                SyncCause cause, const std::source_location& where) {
  debug::ScopedTraceSpan span("sync: lower graphs");
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
  // A graph whose signature was seen before reuses that lowering's hash (and, should the
  // executable be gone, its text) instead of lowering and printing thousands of instructions.
  // VKSPMD_LOWERING_CACHE=0 lowers every graph; VKSPMD_CHECK_LOWERING_CACHE=1 lowers every graph
  // too and fails the sync when a cached lowering differs from the fresh one (tests).
  VKSPMD_ASSIGN_OR_RETURN(const bool use_cache,
                          base::BoolFromEnvironment("VKSPMD_LOWERING_CACHE", true));
  VKSPMD_ASSIGN_OR_RETURN(const bool check_cache,
                          base::BoolFromEnvironment("VKSPMD_CHECK_LOWERING_CACHE"));
  struct Pending {
    PlacementPtr placement;
    std::vector<NodePtr> outputs;
    std::vector<NodePtr> parameters;
    uint64_t signature[2] = {0, 0};
    std::optional<LoweredGraph> lowered;
    std::vector<bool> donated;
    GraphTask task;
  };
  std::vector<Pending> graphs;
  absl::flat_hash_map<const Node*, int> graphs_reading;  // Per leaf, the graphs that read it.
  for (auto& [placement, outputs] : groups) {
    Pending graph;
    graph.placement = placement;
    if (use_cache) {
      VKSPMD_ASSIGN_OR_RETURN(GraphSignature signature, Signature(outputs, *placement));
      graph.parameters = std::move(signature.parameters);
      graph.signature[0] = signature.hash[0];
      graph.signature[1] = signature.hash[1];
    } else {
      VKSPMD_ASSIGN_OR_RETURN(LoweredGraph lowered, Lower(outputs, placement));
      graph.parameters = lowered.parameters;
      graph.lowered = std::move(lowered);
    }
    graph.outputs = std::move(outputs);
    for (const NodePtr& parameter : graph.parameters) ++graphs_reading[parameter.get()];
    graphs.push_back(std::move(graph));
  }
  // Every graph is lowered before any task is made: making a task gives its host leaves device
  // values, which would change how a later graph of this sync lowers them.
  for (Pending& graph : graphs) {
    const PlacementPtr& placement = graph.placement;
    GraphTask& task = graph.task;
    task.placement = placement;
    task.aliases =
        Aliases(graph.parameters, graph.outputs, donations, graphs_reading, graph.donated);
    std::string key;
    if (use_cache) {
      key = absl::StrCat(AutoShardingCacheKeyPrefix(*placement),
                         absl::Hex(graph.signature[0], absl::kZeroPad16),
                         absl::Hex(graph.signature[1], absl::kZeroPad16));
      for (const ir::InputOutputAlias& alias : task.aliases) {
        absl::StrAppend(&key, " ", absl::StrJoin(alias.output_index, ","), "<-",
                        alias.parameter_number);
      }
    }
    auto cached = use_cache ? lowerings_.find(key) : lowerings_.end();
    if (cached != lowerings_.end() && !check_cache) {
      task.hash = cached->second.hash;
      task.module_text = cached->second.text;
    } else {
      if (!graph.lowered.has_value()) {
        VKSPMD_ASSIGN_OR_RETURN(graph.lowered, Lower(graph.outputs, placement));
      }
      LoweredGraph& lowered = *graph.lowered;
      if (lowered.parameters != graph.parameters) {
        return absl::InternalError(
            "lazy sync: the graph signature numbers the parameters unlike the lowering");
      }
      lowered.module->input_output_aliases() = task.aliases;
      VKSPMD_RETURN_IF_ERROR(AutoShardGraph(lowered));
      task.hash = ir::StructuralHashHex(*lowered.module);
      if (cached != lowerings_.end() && cached->second.hash != task.hash) {
        return absl::InternalError(absl::StrCat("lazy sync: the lowering cache gave graph ",
                                                cached->second.hash, " for a graph that lowers to ",
                                                task.hash));
      }
      if (use_cache && cached == lowerings_.end()) {
        // Unbounded growth would only come from a program that traces new graphs forever.
        if (lowerings_.size() >= 4096) lowerings_.clear();
        CachedLowering& entry = lowerings_[key];
        entry.hash = task.hash;
        entry.text = std::make_shared<const std::string>(ir::PrintModule(*lowered.module));
        task.module_text = entry.text;
      }
      task.module = std::move(lowered.module);
    }
  }
  for (Pending& graph : graphs) {
    const PlacementPtr& placement = graph.placement;
    GraphTask& task = graph.task;
    for (size_t p = 0; p < graph.parameters.size(); ++p) {
      const NodePtr& parameter = graph.parameters[p];
      GraphInput input;
      const bool failed = parameter->device_value != nullptr && parameter->device_value->Failed();
      if (parameter->host_value.has_value() && (parameter->device_value == nullptr || failed)) {
        // A scalar equal to one uploaded before (and not donated) reads that upload.
        const bool shareable =
            parameter->shape().rank() == 0 && !graph.donated[p] && !parameter->free_sharding;
        const std::string key =
            shareable ? ScalarKey(*parameter->host_value, *placement) : std::string();
        parameter->device_value = shareable ? SharedScalars::Find(key) : nullptr;
        if (parameter->device_value == nullptr) {
          // Uploaded replicated (see Lower), so its sharding is known now; a free leaf goes
          // where the graph's auto-sharding plan put it, known when the graph compiles.
          parameter->device_value = std::make_shared<DeviceValue>(
              placement, parameter->shape(),
              parameter->free_sharding
                  ? std::nullopt
                  : std::optional(spmd::AxisSharding::Replicated(parameter->shape().rank())));
          input.host = *parameter->host_value;
          if (shareable) {
            parameter->device_value->MarkShared();
            SharedScalars::Insert(key, parameter->device_value);
          }
        }
      }
      input.value = parameter->device_value;
      input.donate = graph.donated[p];
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

uint64_t Context::random_counter() {
  std::lock_guard<std::mutex> lock(mutex_);
  return random_counter_;
}

void Context::SetRandomState(uint64_t seed, uint64_t counter) {
  std::lock_guard<std::mutex> lock(mutex_);
  seed_ = seed;
  random_counter_ = counter;
}

void Context::SetSeed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  seed_ = seed;
  random_counter_ = 0;
}

}  // namespace vkspmd::lazy
