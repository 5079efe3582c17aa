// One mesh device: a (VkDevice, VkQueue) pair with its timeline semaphore and command pool.
// Submission goes through here, with a timeout: a submission that does not finish in time is
// DEADLINE_EXCEEDED (never a hang) and marks the device failed.
#pragma once

#include <vulkan/vulkan.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "src/runtime/logical_device.h"

namespace vkspmd::runtime {

// A submission waits until `semaphore` (a timeline of the same VkDevice) reaches `value`.
struct SemaphoreWait {
  VkSemaphore semaphore = VK_NULL_HANDLE;
  uint64_t value = 0;
};

class MeshDevice {
 public:
  // `device` is borrowed and must outlive the mesh device.
  static absl::StatusOr<std::unique_ptr<MeshDevice>> Create(int mesh_index, LogicalDevice& device,
                                                            uint32_t queue_index);
  ~MeshDevice();
  MeshDevice(const MeshDevice&) = delete;
  MeshDevice& operator=(const MeshDevice&) = delete;

  int mesh_index() const { return mesh_index_; }
  uint32_t queue_index() const { return queue_index_; }
  LogicalDevice& device() const { return device_; }
  const DeviceFunctions& functions() const { return device_.functions(); }
  VkDevice handle() const { return device_.handle(); }
  const std::string& label() const { return label_; }

  // Submits a recorded command buffer and returns the timeline value that marks its completion.
  // The work starts once every wait in `waits` is reached (timelines of mesh devices on the same
  // VkDevice: device-side collectives order the queues with them, no host wait between).
  absl::StatusOr<uint64_t> Submit(VkCommandBuffer command_buffer,
                                  std::span<const SemaphoreWait> waits = {});
  // The timeline the submissions signal, for other queues of the same VkDevice to wait on.
  VkSemaphore timeline() const { return timeline_; }
  // Waits until the timeline reaches `value`: DEADLINE_EXCEEDED after `timeout` (the device is
  // then marked failed), UNAVAILABLE if the device was lost.
  absl::Status Wait(uint64_t value, std::chrono::milliseconds timeout);
  // Wait with the configured submit timeout.
  absl::Status Wait(uint64_t value);
  absl::Status SubmitAndWait(VkCommandBuffer command_buffer);

  // Command buffers from this mesh device's pool (the pool is guarded by a mutex).
  absl::StatusOr<VkCommandBuffer> AllocateCommandBuffer();
  void FreeCommandBuffer(VkCommandBuffer command_buffer);

 private:
  MeshDevice(int mesh_index, LogicalDevice& device, uint32_t queue_index);
  absl::Status Fail(absl::Status reason, bool work_may_run);

  const int mesh_index_;
  LogicalDevice& device_;
  const uint32_t queue_index_;
  const std::string label_;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkSemaphore timeline_ = VK_NULL_HANDLE;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  std::mutex submit_mutex_;
  uint64_t last_submitted_ = 0;
  std::mutex pool_mutex_;
};

}  // namespace vkspmd::runtime
