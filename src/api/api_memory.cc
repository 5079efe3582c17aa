// Device memory by kind: tensors marked as parameters or optimizer state have their shard
// buffers tagged (runtime::MemoryTag) when the statistics are read, so the allocator's per-tag
// counts and the totals come from the same place.
#include <algorithm>
#include <map>
#include <mutex>

#include "src/api/api_support.h"
#include "src/lazy/engine.h"
#include "src/lazy/tensor_state.h"
#include "src/runtime/buffer.h"
#include "vkspmd/lazy.h"

namespace vkspmd {
namespace {

struct Marked {
  std::weak_ptr<lazy::TensorState> state;
  MemoryKind kind;
};

std::mutex& RegistryMutex() {
  static std::mutex mutex;
  return mutex;
}

std::vector<Marked>& Registry() {
  static auto* registry = new std::vector<Marked>();
  return *registry;
}

runtime::MemoryTag TagOf(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kParameter:
      return runtime::MemoryTag::kParameter;
    case MemoryKind::kOptimizerState:
      return runtime::MemoryTag::kOptimizerState;
    default:
      return runtime::MemoryTag::kOther;
  }
}

}  // namespace

void set_memory_kind(const std::vector<Tensor>& tensors, MemoryKind kind) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto& registry = Registry();
  registry.erase(std::remove_if(registry.begin(), registry.end(),
                                [](const Marked& marked) { return marked.state.expired(); }),
                 registry.end());
  for (const Tensor& tensor : tensors) {
    if (tensor.defined()) registry.push_back({tensor.state(), kind});
  }
}

std::vector<DeviceMemory> memory_stats() {
  wait_device_ops();
  std::vector<std::pair<lazy::NodePtr, MemoryKind>> values;
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    for (const Marked& marked : Registry()) {
      if (auto state = marked.state.lock(); state != nullptr && state->node != nullptr) {
        values.emplace_back(state->node, marked.kind);
      }
    }
  }
  std::vector<DeviceMemory> stats;
  lazy::ThrowIfError(lazy::Engine::Get().Call([&](lazy::DevicePool& pool) -> absl::Status {
    for (const auto& [node, kind] : values) {
      if (node->device_value == nullptr) continue;
      absl::StatusOr<const exec::ShardedBuffer*> buffer = node->device_value->WaitBuffer();
      if (!buffer.ok() || *buffer == nullptr || (*buffer)->donated()) continue;
      for (size_t d = 0; d < (*buffer)->shard_count(); ++d) {
        if (!(*buffer)->addressable(d)) continue;
        const_cast<runtime::Buffer&>((*buffer)->shard(d)).set_tag(TagOf(kind));
      }
    }
    const std::vector<runtime::MeshDevice*> devices = pool.OpenDevices();
    for (size_t d = 0; d < devices.size(); ++d) {
      const runtime::MemoryStatistics memory = devices[d]->device().memory().statistics();
      DeviceMemory entry;
      entry.device = static_cast<int64_t>(d);
      entry.bytes_in_use = memory.bytes_in_use;
      entry.peak_bytes = memory.peak_bytes_in_use;
      entry.parameter_bytes =
          memory.bytes_by_tag[static_cast<size_t>(runtime::MemoryTag::kParameter)];
      entry.optimizer_state_bytes =
          memory.bytes_by_tag[static_cast<size_t>(runtime::MemoryTag::kOptimizerState)];
      stats.push_back(entry);
    }
    return absl::OkStatus();
  }));
  return stats;
}

void reset_memory_peaks() {
  wait_device_ops();
  lazy::ThrowIfError(lazy::Engine::Get().Call([](lazy::DevicePool& pool) -> absl::Status {
    for (runtime::MeshDevice* device : pool.OpenDevices()) device->device().memory().ResetPeaks();
    return absl::OkStatus();
  }));
}

}  // namespace vkspmd
