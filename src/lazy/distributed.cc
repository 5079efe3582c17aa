// Joining a job of several processes.
#include "src/lazy/distributed.h"

#include <atomic>
#include <mutex>
#include <optional>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/lazy/device_pool.h"
#include "src/lazy/device_value.h"

namespace vkspmd::lazy {
namespace {

std::mutex initialize_mutex;
std::optional<DistributedState> initialized;  // Under initialize_mutex.
std::atomic<const DistributedState*> joined{nullptr};

absl::StatusOr<DistributedState> Join() {
  VKSPMD_ASSIGN_OR_RETURN(collectives::DistributedOptions options,
                          collectives::DistributedOptionsFromEnvironment());
  DistributedState state;
  state.process_index = options.process_index;
  state.process_count = options.process_count;
  VKSPMD_ASSIGN_OR_RETURN(state.local_devices, DevicePool::AvailableDeviceCount());
  state.global_devices = state.local_devices;
  if (options.process_count == 1) return state;
  if (DeviceValue::LiveBufferCount() > 0) {
    // The devices would have to be renumbered under tensors that live on them.
    return absl::FailedPreconditionError(
        "distributed::initialize() must come before the first tensor is computed");
  }
  VKSPMD_ASSIGN_OR_RETURN(
      state.world, collectives::GlooWorld::Create(options, static_cast<int>(state.local_devices)));
  const std::vector<int> ranks = state.world->local_ranks();
  state.first_device = ranks.empty() ? 0 : ranks.front();
  state.global_devices = state.world->size();
  return state;
}

}  // namespace

absl::StatusOr<DistributedState> InitializeDistributed() {
  std::lock_guard<std::mutex> lock(initialize_mutex);
  if (initialized.has_value()) return *initialized;
  // A failure is not kept: the caller may fix the environment (or wait for a peer) and retry.
  VKSPMD_ASSIGN_OR_RETURN(DistributedState state, Join());
  initialized = std::move(state);
  if (initialized->process_count > 1) joined = &*initialized;
  return *initialized;
}

const DistributedState* Distributed() { return joined.load(); }

}  // namespace vkspmd::lazy
