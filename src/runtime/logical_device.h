// One VkDevice with its entry-point table, memory allocator and pipeline cache, shared by the mesh
// devices that are queues of it. Also the device's failure state: after a timeout or a lost
// device nothing more is submitted, and nothing is freed while work may still run.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "src/runtime/instance.h"
#include "src/runtime/memory_allocator.h"
#include "src/runtime/physical_device.h"
#include "src/runtime/pipeline_cache_data.h"
#include "src/runtime/runtime_config.h"
#include "src/runtime/vulkan_functions.h"

namespace vkspmd::runtime {

class ComputePipeline;

class LogicalDevice {
 public:
  // Creates a VkDevice on `physical_device` with `queue_count` queues of its compute family.
  // `physical_device` is borrowed and must outlive the device.
  static absl::StatusOr<std::unique_ptr<LogicalDevice>> Create(
      const Instance& instance, const PhysicalDeviceInfo& physical_device, uint32_t queue_count,
      const RuntimeConfig& config, std::string label);
  ~LogicalDevice();
  LogicalDevice(const LogicalDevice&) = delete;
  LogicalDevice& operator=(const LogicalDevice&) = delete;

  VkDevice handle() const { return device_; }
  const DeviceFunctions& functions() const { return functions_; }
  // For tests only: replace entry points with fakes before the device is used.
  DeviceFunctions& mutable_functions() { return functions_; }
  const PhysicalDeviceInfo& physical_device() const { return physical_device_; }
  const std::string& label() const { return label_; }
  MemoryAllocator& memory() { return *memory_; }
  VkPipelineCache pipeline_cache() const { return pipeline_cache_; }
  VkQueue queue(uint32_t index) const;
  const RuntimeConfig& config() const { return config_; }

  // Marks the device failed with `reason` (the first reason wins). When `work_may_run` is set,
  // no Vulkan object of this device is destroyed any more; the process must exit to recover.
  void MarkFailed(const absl::Status& reason, bool work_may_run);
  bool failed() const { return failed_.load(); }
  bool must_not_free() const { return must_not_free_.load(); }
  // OK, or UNAVAILABLE saying the device failed earlier and why.
  absl::Status CheckUsable() const;

  // A pipeline shared by every user of the device under `key` (the caller's identity for it,
  // e.g. a generated kernel's source and binding layout), made by `create` the first time. Kept
  // until the device is destroyed, so later programs with the same kernels compile nothing.
  absl::StatusOr<std::shared_ptr<const ComputePipeline>> SharedPipeline(
      const std::string& key,
      const std::function<absl::StatusOr<std::unique_ptr<ComputePipeline>>()>& create);
  size_t shared_pipeline_count() const;

  // Seeds the device's pipeline cache with what `store` kept for this device (only data whose
  // header matches it; the first call wins, later ones do nothing) and lets SavePipelineCache
  // write back to it. `store` must outlive the device.
  void UsePipelineCacheStore(PipelineCacheStore* store);
  // Hands the pipeline cache's data to the store when pipelines were created since the last save.
  void SavePipelineCache();

 private:
  LogicalDevice(const PhysicalDeviceInfo& physical_device, const RuntimeConfig& config,
                std::string label)
      : physical_device_(physical_device), config_(config), label_(std::move(label)) {}

  const PhysicalDeviceInfo& physical_device_;
  const RuntimeConfig config_;
  const std::string label_;
  VkDevice device_ = VK_NULL_HANDLE;
  DeviceFunctions functions_;
  std::unique_ptr<MemoryAllocator> memory_;
  VkPipelineCache pipeline_cache_ = VK_NULL_HANDLE;
  std::vector<VkQueue> queues_;
  mutable std::mutex pipelines_mutex_;
  std::map<std::string, std::shared_ptr<const ComputePipeline>> shared_pipelines_;
  PipelineCacheStore* pipeline_cache_store_ = nullptr;  // Guarded by pipelines_mutex_.
  bool pipeline_cache_changed_ = false;                 // Guarded by pipelines_mutex_.

  std::atomic<bool> failed_{false};
  std::atomic<bool> must_not_free_{false};
  mutable std::mutex failure_mutex_;
  absl::Status failure_;
};

}  // namespace vkspmd::runtime
