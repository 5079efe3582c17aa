// Collectives among mesh devices that share one VkDevice (queues of one GPU), run by the devices
// themselves instead of through host memory (the default; VKSPMD_DEVICE_COLLECTIVES=0 turns it
// off).
//
// Each member copies its collective input into an exchange buffer at the end of its segment and
// publishes the timeline value that marks it written; the member's next segment is submitted
// waiting on its group's values and starts with a kernel (reductions) or copies (gathers,
// permutes) reading the members' exchange buffers. The host only exchanges the values (a
// rendezvous of submissions, not of finished work); nothing waits for the device until the run
// ends. Exchange buffers are written once per run and a run ends with every device idle, so no
// member overwrites one a peer may still read. Reductions combine in group order, one rounding
// per step, as the host path (collectives/host_communicator.cc) does: results are bit for bit
// the same.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "src/exec/collective_step.h"
#include "src/runtime/buffer.h"
#include "src/runtime/command_sequence.h"
#include "src/runtime/mesh_device.h"

namespace vkspmd::exec {

// How one device runs a collective on the device.
struct DeviceCollectivePlan {
  std::vector<int> members;  // Its group in position order (a permute: every rank).
  int position = 0;          // Its index in members.
  int source = -1;           // Collective-permute: the rank it receives from; -1: zeros.
  // Ranks whose exchange buffers it reads, itself included: their submissions it waits for.
  std::vector<int> waits_for;
};

class DeviceCollectives {
 public:
  // Null with VKSPMD_DEVICE_COLLECTIVES=0 or when no two devices share a VkDevice; on by default
  // (INVALID_ARGUMENT for a value that is no boolean).
  // `devices[d]` runs rank d; the world must be this process's alone (every device given).
  static absl::StatusOr<std::unique_ptr<DeviceCollectives>> FromEnvironment(
      const std::vector<runtime::MeshDevice*>& devices);
  DeviceCollectives(std::vector<runtime::MeshDevice*> devices, std::chrono::milliseconds timeout);

  // The plan of rank `me` for `step` (operand and result of the given byte sizes), or nullopt
  // when it stays on the host: element types other than 4-byte f32/s32/u32 for reductions, chunks
  // that are not contiguous, buffers the device cannot bind, or a group (for a permute, the
  // world) whose members are not all on me's VkDevice. Every member of a group decides alike.
  std::optional<DeviceCollectivePlan> Plan(const CollectiveStep& step, int me, uint64_t input_bytes,
                                           uint64_t output_bytes) const;

  // `member`'s exchange buffer for collective `collective` (made on first use).
  absl::StatusOr<runtime::Buffer*> Exchange(size_t collective, int member, uint64_t bytes);

  // Records rank `me`'s part of collective `collective` into `recorder`: reads the members'
  // exchange buffers (of `input_bytes`), writes `output`. An all-reduce of a bucket reads its
  // elements from `exchange_offset` on (exec/collective_step.h: BucketMember).
  absl::Status Record(runtime::CommandRecorder& recorder, size_t collective,
                      const CollectiveStep& step, int me, const DeviceCollectivePlan& plan,
                      const runtime::Buffer& output, uint64_t input_bytes, uint64_t output_bytes,
                      uint64_t exchange_offset = 0);

  // Publishes that `mine` marks rank me's exchange buffer of `collective` written, and returns,
  // once every rank plan.waits_for names has published, the waits for its next submission.
  // ABORTED after Abort or the collective timeout (VKSPMD_COLLECTIVE_TIMEOUT_S).
  absl::StatusOr<std::vector<runtime::SemaphoreWait>> Meet(size_t collective, int me,
                                                           const DeviceCollectivePlan& plan,
                                                           runtime::SemaphoreWait mine);
  void Abort(const absl::Status& status);
  void Reset();  // After every run: the next run publishes afresh.

 private:
  absl::StatusOr<std::shared_ptr<const runtime::ComputePipeline>> CombinePipeline(
      runtime::MeshDevice& device, collectives::ElementType type, collectives::ReduceOp op,
      size_t inputs);

  const std::vector<runtime::MeshDevice*> devices_;
  const std::chrono::milliseconds timeout_;
  std::mutex buffers_mutex_;
  std::map<std::pair<size_t, int>, std::unique_ptr<runtime::Buffer>> exchange_;
  std::mutex mutex_;
  std::condition_variable published_;
  std::map<size_t, std::vector<std::optional<runtime::SemaphoreWait>>> slots_;
  absl::Status aborted_;
};

}  // namespace vkspmd::exec
