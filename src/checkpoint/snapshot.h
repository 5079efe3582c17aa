// Staging a state for saving: every named tensor's distinct shards copied from the devices to
// host memory (a shard several devices hold, by replication, is copied once, from the first of
// them), with what the manifest says about the tensor. Nothing is gathered: each shard comes
// straight from its device; in a job of several processes, only from this process's devices.
// Once staged, later changes to the tensors do not change what is written, so the write may run
// in the background.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "src/checkpoint/box.h"
#include "src/io/checkpoint_manifest.h"
#include "src/lazy/tensor_state.h"

namespace vkspmd::checkpoint {

// A tensor of the state, by the name it is saved under.
struct NamedTensor {
  std::string name;
  std::shared_ptr<lazy::TensorState> state;
};

// Staging buffers are overwritten whole right after they are allocated: zero-filling them first
// would be a second pass over freshly faulted-in memory, a sizeable part of a save's time.
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  template <typename U>
  void construct(U* place) noexcept {
    ::new (static_cast<void*>(place)) U;
  }
  template <typename U, typename... Args>
  void construct(U* place, Args&&... args) {
    ::new (static_cast<void*>(place)) U(std::forward<Args>(args)...);
  }
};
using ShardBytes = std::vector<uint8_t, UninitializedAllocator<uint8_t>>;

struct ShardSnapshot {
  Box box;
  std::vector<int64_t> devices;  // Mesh device ids holding it (empty: host data).
  ShardBytes bytes;              // The box's elements, row-major, bool as one byte.
};

struct TensorSnapshot {
  io::ManifestTensor description;  // Everything but the shards' file placement.
  std::vector<ShardSnapshot> shards;
};

struct Snapshot {
  std::vector<TensorSnapshot> tensors;
  std::map<std::string, std::vector<uint64_t>> integers;
  std::map<std::string, std::string> metadata;

  int64_t ByteSize() const;
};

// Runs what is pending for the tensors, then copies their shards to the host (on the engine's
// worker, after everything queued before). Errors name the tensor: duplicate or empty names, a
// value inside a manual region, a failed computation.
absl::StatusOr<Snapshot> TakeSnapshot(const std::vector<NamedTensor>& tensors);

}  // namespace vkspmd::checkpoint
