// The trace context: every live tensor (so a sync finds what is pending), the random generator's
// seed and counter, the global mesh, and sync itself: pending nodes grouped by placement,
// lowered, hashed and launched on the engine.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "src/lazy/tensor_state.h"

namespace vkspmd::lazy {

enum class SyncCause { kUserSync, kValueRead, kStepMarker };

class Context {
 public:
  static Context& Get();

  // An old value (a leaf) whose buffers a pending output may take over.
  struct Donation {
    NodePtr donor;
    const Node* output;
  };

  // A new tensor of `node`, registered so that sync finds it while it lives.
  std::shared_ptr<TensorState> NewTensor(NodePtr node);
  // Launches every pending node of every live tensor (user sync, step marker). A tensor assigned
  // a new value whose old device value nothing else refers to any more donates that value's
  // buffers to the graph, which writes the new value into them (input_output_alias).
  absl::Status SyncAll(SyncCause cause, const std::source_location& where);
  // Launches the pending nodes of `tensors` only (reading values).
  absl::Status Sync(const std::vector<std::shared_ptr<TensorState>>& tensors, SyncCause cause,
                    const std::source_location& where);

  // The first counter of `count` fresh Philox blocks for the current seed.
  uint64_t TakeRandomCounter(uint64_t count);
  uint64_t seed();
  void SetSeed(uint64_t seed);
  // The counter of the next fresh block, and setting seed and counter together (checkpoints).
  uint64_t random_counter();
  void SetRandomState(uint64_t seed, uint64_t counter);

  // The tensors alive now (backward looks for those with requires_grad).
  std::vector<std::shared_ptr<TensorState>> LiveTensors();

  std::optional<Mesh>& global_mesh() { return global_mesh_; }
  std::mutex& mutex() { return mutex_; }

 private:
  Context() = default;
  std::vector<std::shared_ptr<TensorState>> LiveTensorsLocked();
  absl::Status SyncNodes(std::vector<NodePtr> outputs, const std::vector<Donation>& donations,
                         SyncCause cause, const std::source_location& where);

  // A lowering a later sync with the same graph signature (and aliases) reuses.
  struct CachedLowering {
    std::string hash;                         // Structural hash of the module.
    std::shared_ptr<const std::string> text;  // The module, for compiling it again.
  };

  std::mutex mutex_;  // Guards the trace: tensors are traced from one thread at a time.
  std::vector<std::weak_ptr<TensorState>> tensors_;
  uint64_t seed_ = 0;
  uint64_t random_counter_ = 0;
  std::optional<Mesh> global_mesh_;
  // By graph signature and input_output_aliases (see SyncNodes).
  absl::flat_hash_map<std::string, CachedLowering> lowerings_;
};

}  // namespace vkspmd::lazy
