// DeviceValue: the result of a launched graph (or an upload), filled in by the engine's worker
// thread. Its sharding is known once the graph has compiled, its buffer once it has run; readers
// wait for what they need. A failed computation leaves its error here for every reader.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "src/exec/sharded_buffer.h"
#include "src/lazy/placement.h"

namespace vkspmd::lazy {

class DeviceValue {
 public:
  DeviceValue(PlacementPtr placement, ir::Shape shape,
              std::optional<spmd::AxisSharding> sharding = std::nullopt);
  ~DeviceValue();
  DeviceValue(const DeviceValue&) = delete;
  DeviceValue& operator=(const DeviceValue&) = delete;

  const PlacementPtr& placement() const { return placement_; }
  const ir::Shape& shape() const { return shape_; }

  void SetSharding(const spmd::AxisSharding& sharding);
  void SetBuffer(std::unique_ptr<exec::ShardedBuffer> buffer);
  // Both waits end with the error when the computation failed.
  void SetError(const absl::Status& error);
  // The sharding when known now (does not wait).
  std::optional<spmd::AxisSharding> KnownSharding() const;
  // Waits until the sharding over placement()->local_mesh is known.
  absl::StatusOr<spmd::AxisSharding> WaitSharding() const;
  // Waits until the value is on the devices.
  absl::StatusOr<const exec::ShardedBuffer*> WaitBuffer() const;
  // The same, for a run that takes the buffer's shards over (a donated argument).
  absl::StatusOr<exec::ShardedBuffer*> WaitBufferToDonate();

  // Whether the computation has failed (does not wait).
  bool Failed() const;
  // A value that several host leaves share (one upload of an often repeated scalar): never
  // donated. Set and read by the tracing thread only.
  void MarkShared() { shared_ = true; }
  bool shared() const { return shared_; }

  // Buffers alive in the process: the engine may reopen devices only when none are.
  static int64_t LiveBufferCount();
  // Frees the buffer of every DeviceValue alive and leaves `why` as its error for later readers
  // (the runtime is shutting down and closes the devices next). Only while no graph runs.
  static void ReleaseAll(const absl::Status& why);

 private:
  const PlacementPtr placement_;
  const ir::Shape shape_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::optional<spmd::AxisSharding> sharding_;
  std::unique_ptr<exec::ShardedBuffer> buffer_;
  absl::Status error_;
  bool shared_ = false;
};

// The device values of host scalars, by placement, type and bytes, that equal scalars of later
// steps read instead of uploading again (an optimizer's constants are hundreds of fresh scalars
// every step). Its lock is never held while waiting. Emptied before the devices close or grow,
// so it never keeps a buffer alive that would stop them.
class SharedScalars {
 public:
  // A value not failed, or null.
  static std::shared_ptr<DeviceValue> Find(const std::string& key);
  static void Insert(const std::string& key, std::shared_ptr<DeviceValue> value);
  static void Clear();
};

}  // namespace vkspmd::lazy
