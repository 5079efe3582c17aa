// Timeline-semaphore submission with timeouts, and the failure policy on errors.
#include "src/runtime/mesh_device.h"

#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/runtime/vulkan_status.h"

namespace vkspmd::runtime {
namespace {

// vkQueueSubmit needs the queue externally synchronised; mesh devices may share a queue
// (VKSPMD_SHARED_QUEUES), so the lock is the queue's, not the mesh device's. Never freed: a
// handle reused after its device is gone gets the same, unlocked, mutex.
std::mutex& QueueMutex(VkQueue queue) {
  static std::mutex registry_mutex;
  static auto* registry = new std::map<VkQueue, std::unique_ptr<std::mutex>>();
  std::lock_guard<std::mutex> lock(registry_mutex);
  std::unique_ptr<std::mutex>& mutex = (*registry)[queue];
  if (mutex == nullptr) mutex = std::make_unique<std::mutex>();
  return *mutex;
}

}  // namespace

MeshDevice::MeshDevice(int mesh_index, LogicalDevice& device, uint32_t queue_index)
    : mesh_index_(mesh_index),
      device_(device),
      queue_index_(queue_index),
      label_(absl::StrCat("mesh device ", mesh_index, " (", device.label(), ", queue ", queue_index,
                          ")")) {}

absl::StatusOr<std::unique_ptr<MeshDevice>> MeshDevice::Create(int mesh_index,
                                                               LogicalDevice& device,
                                                               uint32_t queue_index) {
  std::unique_ptr<MeshDevice> mesh_device(new MeshDevice(mesh_index, device, queue_index));
  mesh_device->queue_ = device.queue(queue_index);
  const DeviceFunctions& vk = device.functions();

  VkSemaphoreTypeCreateInfo type_info{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  type_info.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  type_info.initialValue = 0;
  VkSemaphoreCreateInfo semaphore_info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  semaphore_info.pNext = &type_info;
  VKSPMD_VK_RETURN_IF_ERROR_ON(
      device, mesh_device->label_,
      vk.vkCreateSemaphore(device.handle(), &semaphore_info, nullptr, &mesh_device->timeline_));
  VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool_info.queueFamilyIndex = device.physical_device().compute_queue_family;
  VKSPMD_VK_RETURN_IF_ERROR_ON(
      device, mesh_device->label_,
      vk.vkCreateCommandPool(device.handle(), &pool_info, nullptr, &mesh_device->command_pool_));
  return mesh_device;
}

MeshDevice::~MeshDevice() {
  const DeviceFunctions& vk = device_.functions();
  if (device_.must_not_free()) return;
  if (command_pool_ != VK_NULL_HANDLE)
    vk.vkDestroyCommandPool(device_.handle(), command_pool_, nullptr);
  if (timeline_ != VK_NULL_HANDLE) vk.vkDestroySemaphore(device_.handle(), timeline_, nullptr);
}

absl::Status MeshDevice::Fail(absl::Status reason, bool work_may_run) {
  device_.MarkFailed(reason, work_may_run);
  return reason;
}

absl::StatusOr<uint64_t> MeshDevice::Submit(VkCommandBuffer command_buffer,
                                            std::span<const SemaphoreWait> waits) {
  if (absl::Status usable = device_.CheckUsable(); !usable.ok()) return usable;
  std::lock_guard<std::mutex> lock(submit_mutex_);
  uint64_t signal_value = last_submitted_ + 1;
  std::vector<VkSemaphore> wait_semaphores;
  std::vector<uint64_t> wait_values;
  for (const SemaphoreWait& wait : waits) {
    wait_semaphores.push_back(wait.semaphore);
    wait_values.push_back(wait.value);
  }
  const std::vector<VkPipelineStageFlags> wait_stages(waits.size(),
                                                      VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
  VkTimelineSemaphoreSubmitInfo timeline_info{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  timeline_info.waitSemaphoreValueCount = static_cast<uint32_t>(wait_values.size());
  timeline_info.pWaitSemaphoreValues = wait_values.data();
  timeline_info.signalSemaphoreValueCount = 1;
  timeline_info.pSignalSemaphoreValues = &signal_value;
  VkSubmitInfo submit_info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit_info.pNext = &timeline_info;
  submit_info.commandBufferCount = 1;
  submit_info.pCommandBuffers = &command_buffer;
  submit_info.signalSemaphoreCount = 1;
  submit_info.pSignalSemaphores = &timeline_;
  submit_info.waitSemaphoreCount = static_cast<uint32_t>(wait_semaphores.size());
  submit_info.pWaitSemaphores = wait_semaphores.data();
  submit_info.pWaitDstStageMask = wait_stages.data();
  VkResult result;
  {
    std::lock_guard<std::mutex> queue_lock(QueueMutex(queue_));
    result = device_.functions().vkQueueSubmit(queue_, 1, &submit_info, VK_NULL_HANDLE);
  }
  if (result != VK_SUCCESS) {
    absl::Status status = VulkanStatus(result, "vkQueueSubmit", label_);
    // Whatever was submitted before may still run; a lost device keeps its objects.
    return Fail(status, result == VK_ERROR_DEVICE_LOST || last_submitted_ > 0);
  }
  last_submitted_ = signal_value;
  return signal_value;
}

absl::Status MeshDevice::Wait(uint64_t value, std::chrono::milliseconds timeout) {
  VkSemaphoreWaitInfo wait_info{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
  wait_info.semaphoreCount = 1;
  wait_info.pSemaphores = &timeline_;
  wait_info.pValues = &value;
  auto nanoseconds = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
  VkResult result = device_.functions().vkWaitSemaphores(device_.handle(), &wait_info, nanoseconds);
  if (result == VK_SUCCESS) return absl::OkStatus();
  if (result == VK_TIMEOUT) {
    return Fail(
        absl::DeadlineExceededError(absl::StrCat(
            "work submitted to ", label_, " did not finish within ", timeout.count(),
            " ms; the device is marked failed (set VKSPMD_SUBMIT_TIMEOUT_MS to allow more)")),
        /*work_may_run=*/true);
  }
  return Fail(VulkanStatus(result, "vkWaitSemaphores", label_), /*work_may_run=*/true);
}

absl::Status MeshDevice::Wait(uint64_t value) {
  return Wait(value, std::chrono::milliseconds(device_.config().submit_timeout_ms));
}

absl::Status MeshDevice::SubmitAndWait(VkCommandBuffer command_buffer) {
  VKSPMD_ASSIGN_OR_RETURN(uint64_t value, Submit(command_buffer));
  return Wait(value);
}

absl::StatusOr<VkCommandBuffer> MeshDevice::AllocateCommandBuffer() {
  if (absl::Status usable = device_.CheckUsable(); !usable.ok()) return usable;
  std::lock_guard<std::mutex> lock(pool_mutex_);
  VkCommandBufferAllocateInfo allocate_info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  allocate_info.commandPool = command_pool_;
  allocate_info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  allocate_info.commandBufferCount = 1;
  VkCommandBuffer command_buffer = VK_NULL_HANDLE;
  VKSPMD_VK_RETURN_IF_ERROR_ON(device_, label_,
                               device_.functions().vkAllocateCommandBuffers(
                                   device_.handle(), &allocate_info, &command_buffer));
  return command_buffer;
}

void MeshDevice::FreeCommandBuffer(VkCommandBuffer command_buffer) {
  if (command_buffer == VK_NULL_HANDLE || device_.must_not_free()) return;
  std::lock_guard<std::mutex> lock(pool_mutex_);
  device_.functions().vkFreeCommandBuffers(device_.handle(), command_pool_, 1, &command_buffer);
}

}  // namespace vkspmd::runtime
