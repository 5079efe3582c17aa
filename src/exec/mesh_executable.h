// A per-device (SPMD) program on every device of its replicas x partitions: one Executable per
// device (partition-id and replica-id specialised; identical kernels share their generated
// source), run concurrently with one long-lived host thread per device, collectives through the
// collectives::World it is given (threads of this process unless told otherwise).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "src/collectives/world.h"
#include "src/exec/device_collectives.h"
#include "src/exec/device_workers.h"
#include "src/exec/executable.h"
#include "src/exec/sharded_buffer.h"

namespace vkspmd::exec {

class MeshExecutable {
 public:
  // `devices[d]` runs global device d (= replica * partition_count + partition); there must be
  // exactly replica_count * partition_count of them. Borrowed; they must outlive the executable,
  // and so must `module`. Global device d is rank d of `world`, which must have that many ranks;
  // without one, a new in-process world. Only the world's local ranks run here (the others are
  // other processes'): their devices must be given, the rest may be null.
  static absl::StatusOr<std::unique_ptr<MeshExecutable>> Compile(
      const ir::Module& module, const std::vector<runtime::MeshDevice*>& devices,
      bool timestamps = false, std::shared_ptr<collectives::World> world = nullptr);

  // `arguments[d]` are device d's arguments; returns device d's result at index d (an empty
  // literal for devices of other processes, whose arguments are ignored). On failure, the error
  // of the first device that failed for a reason other than a peer's absence.
  absl::StatusOr<std::vector<ir::Literal>> Run(
      const std::vector<std::vector<ir::Literal>>& arguments);

  // The same with values on the devices: argument k's shard d is device d's argument k, and each
  // result leaf comes back as a ShardedBuffer with the given global shape and sharding (the
  // partitioner's result_shardings over `mesh`). Nothing passes through the host except the
  // collectives' data.
  absl::StatusOr<std::vector<std::unique_ptr<ShardedBuffer>>> RunSharded(
      const std::vector<const ShardedBuffer*>& arguments,
      const std::vector<ir::Shape>& result_shapes,
      const std::vector<spmd::AxisSharding>& result_shardings, const spmd::Mesh& mesh);
  // The same, where argument k is donated when donate[k]: its shards are given up (the
  // ShardedBuffer is left donated) and, where the module aliases it to a result
  // (input_output_alias), updated in place and returned as that result, so a training step
  // keeps its parameters in the same device buffers from step to step without copying them.
  absl::StatusOr<std::vector<std::unique_ptr<ShardedBuffer>>> RunSharded(
      const std::vector<ShardedBuffer*>& arguments, const std::vector<bool>& donate,
      const std::vector<ir::Shape>& result_shapes,
      const std::vector<spmd::AxisSharding>& result_shardings, const spmd::Mesh& mesh);

  size_t device_count() const { return executables_.size(); }
  // The devices this process runs, ascending.
  const std::vector<size_t>& local_devices() const { return local_; }
  // A device this process runs.
  Executable& executable(size_t device) { return *executables_[device]; }
  // Whether collectives among devices sharing a VkDevice run on the devices
  // (the default unless VKSPMD_DEVICE_COLLECTIVES=0; every rank in this process, two or more on
  // one VkDevice).
  bool device_collectives() const { return device_collectives_ != nullptr; }

 private:
  MeshExecutable() = default;
  // Runs body(d) for every device on its own (long-lived) thread; a failing device aborts the
  // collectives so its peers stop waiting. Returns the first failure that is not a peer's timeout.
  absl::Status OnEveryDevice(const std::function<absl::Status(size_t)>& body);

  std::unique_ptr<DeviceWorkers> workers_;
  std::shared_ptr<collectives::World> world_;
  std::vector<std::unique_ptr<collectives::Communicator>> communicators_;
  // VKSPMD_DEVICE_COLLECTIVES: before the executables, whose recordings use its buffers.
  std::unique_ptr<DeviceCollectives> device_collectives_;
  std::vector<std::unique_ptr<Executable>> executables_;  // Null for other processes' devices.
  std::vector<size_t> local_;
};

}  // namespace vkspmd::exec
