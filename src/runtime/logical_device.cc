// VkDevice creation with the features vkspmd relies on, and the failure policy.
#include "src/runtime/logical_device.h"

#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/runtime/pipeline.h"
#include "src/runtime/vulkan_status.h"

namespace vkspmd::runtime {

absl::StatusOr<std::unique_ptr<LogicalDevice>> LogicalDevice::Create(
    const Instance& instance, const PhysicalDeviceInfo& physical_device, uint32_t queue_count,
    const RuntimeConfig& config, std::string label) {
  if (std::string reason = physical_device.UnusableReason(); !reason.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot use ", physical_device.name, " for ", label, ": ", reason));
  }
  if (queue_count == 0 || queue_count > physical_device.compute_queue_count) {
    return absl::InvalidArgumentError(
        absl::StrCat(physical_device.name, " has ", physical_device.compute_queue_count,
                     " compute queues; ", queue_count, " were asked for on ", label));
  }
  std::unique_ptr<LogicalDevice> device(
      new LogicalDevice(physical_device, config, std::move(label)));

  std::vector<float> priorities(queue_count, 1.0f);
  VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue_info.queueFamilyIndex = physical_device.compute_queue_family;
  queue_info.queueCount = queue_count;
  queue_info.pQueuePriorities = priorities.data();

  VkPhysicalDeviceVulkan13Features features13{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  features13.synchronization2 = VK_TRUE;
  VkPhysicalDeviceVulkan12Features features12{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  features12.pNext = &features13;
  features12.timelineSemaphore = VK_TRUE;
  features12.shaderInt8 = physical_device.shader_int8;
  features12.shaderFloat16 = physical_device.shader_float16;
  features12.storageBuffer8BitAccess = physical_device.storage_buffer_8bit;
  features12.vulkanMemoryModel = physical_device.vulkan_memory_model;
  features12.vulkanMemoryModelDeviceScope = physical_device.vulkan_memory_model_device_scope;
  VkPhysicalDeviceVulkan11Features features11{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  features11.pNext = &features12;
  features11.storageBuffer16BitAccess = physical_device.storage_buffer_16bit;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &features11;
  features.features.shaderInt64 = physical_device.shader_int64;
  features.features.shaderInt16 = physical_device.shader_int16;
  features.features.shaderFloat64 = physical_device.shader_float64;

  // Tensor-core products for f16 dots (codegen's cooperative-matrix dot kernel).
  VkPhysicalDeviceCooperativeMatrixFeaturesNV cooperative{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  std::vector<const char*> extensions;
  if (physical_device.cooperative_matrix_nv) {
    cooperative.cooperativeMatrix = VK_TRUE;
    features13.pNext = &cooperative;
    extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  }

  VkDeviceCreateInfo create_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  create_info.pNext = &features;
  create_info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  create_info.ppEnabledExtensionNames = extensions.data();
  create_info.queueCreateInfoCount = 1;
  create_info.pQueueCreateInfos = &queue_info;
  VKSPMD_VK_RETURN_IF_ERROR(
      device->label_, instance.functions().vkCreateDevice(physical_device.handle, &create_info,
                                                          nullptr, &device->device_));
  if (absl::Status loaded = device->functions_.Load(instance.functions(), device->device_);
      !loaded.ok()) {
    return loaded;
  }
  for (uint32_t index = 0; index < queue_count; ++index) {
    VkQueue queue = VK_NULL_HANDLE;
    device->functions_.vkGetDeviceQueue(device->device_, physical_device.compute_queue_family,
                                        index, &queue);
    device->queues_.push_back(queue);
  }
  uint64_t budget = config.device_memory_budget.value_or(physical_device.LargestDeviceLocalHeap());
  device->memory_ =
      std::make_unique<MemoryAllocator>(device->functions_, device->device_, physical_device,
                                        budget, config.force_staging, device->label_);
  VkPipelineCacheCreateInfo cache_info{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  VKSPMD_VK_RETURN_IF_ERROR(
      device->label_, device->functions_.vkCreatePipelineCache(device->device_, &cache_info,
                                                               nullptr, &device->pipeline_cache_));
  return device;
}

LogicalDevice::~LogicalDevice() {
  if (device_ == VK_NULL_HANDLE) return;
  if (must_not_free_) {
    // Freeing objects the driver may still be using crashes lavapipe; the OS reclaims them.
    memory_->Abandon();
    std::fprintf(stderr, "vkspmd: %s failed (%s); its Vulkan objects are left for process exit\n",
                 label_.c_str(), std::string(failure_.message()).c_str());
    return;
  }
  SavePipelineCache();
  shared_pipelines_.clear();  // Before the device; a pipeline still held elsewhere is a bug.
  if (pipeline_cache_ != VK_NULL_HANDLE && functions_.vkDestroyPipelineCache != nullptr) {
    functions_.vkDestroyPipelineCache(device_, pipeline_cache_, nullptr);
  }
  memory_.reset();
  // Null when loading the table failed part-way; the device is then left to process exit.
  if (functions_.vkDestroyDevice != nullptr) functions_.vkDestroyDevice(device_, nullptr);
}

VkQueue LogicalDevice::queue(uint32_t index) const { return queues_.at(index); }

void LogicalDevice::MarkFailed(const absl::Status& reason, bool work_may_run) {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  if (!failed_) failure_ = reason;
  failed_ = true;
  if (work_may_run) must_not_free_ = true;
}

absl::Status LogicalDevice::CheckUsable() const {
  if (!failed_) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(failure_mutex_);
  // UNAVAILABLE, like the device loss itself: callers tell a lost device from their own mistakes.
  return absl::UnavailableError(absl::StrCat(label_, " failed earlier and accepts no more work (",
                                             failure_.message(),
                                             "); restart the process to recover"));
}

absl::StatusOr<std::shared_ptr<const ComputePipeline>> LogicalDevice::SharedPipeline(
    const std::string& key,
    const std::function<absl::StatusOr<std::unique_ptr<ComputePipeline>>()>& create) {
  std::lock_guard<std::mutex> lock(pipelines_mutex_);
  if (auto found = shared_pipelines_.find(key); found != shared_pipelines_.end()) {
    return found->second;
  }
  VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<ComputePipeline> created, create());
  std::shared_ptr<const ComputePipeline> pipeline = std::move(created);
  shared_pipelines_[key] = pipeline;
  pipeline_cache_changed_ = true;
  return pipeline;
}

size_t LogicalDevice::shared_pipeline_count() const {
  std::lock_guard<std::mutex> lock(pipelines_mutex_);
  return shared_pipelines_.size();
}

void LogicalDevice::UsePipelineCacheStore(PipelineCacheStore* store) {
  std::lock_guard<std::mutex> lock(pipelines_mutex_);
  if (pipeline_cache_store_ != nullptr || store == nullptr) return;
  pipeline_cache_store_ = store;
  std::optional<std::vector<uint8_t>> data = store->Load(physical_device_);
  if (!data) return;
  if (std::string mismatch = PipelineCacheDataMismatch(*data, physical_device_);
      !mismatch.empty()) {
    std::fprintf(stderr, "vkspmd: ignoring the saved pipeline cache of %s: %s\n", label_.c_str(),
                 mismatch.c_str());
    return;
  }
  // Merged rather than passed at creation: the device's cache exists from the start, and
  // pipelines made before a store was attached stay in it.
  VkPipelineCacheCreateInfo info{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  info.initialDataSize = data->size();
  info.pInitialData = data->data();
  VkPipelineCache saved = VK_NULL_HANDLE;
  if (functions_.vkCreatePipelineCache(device_, &info, nullptr, &saved) != VK_SUCCESS) return;
  functions_.vkMergePipelineCaches(device_, pipeline_cache_, 1, &saved);
  functions_.vkDestroyPipelineCache(device_, saved, nullptr);
}

void LogicalDevice::SavePipelineCache() {
  std::lock_guard<std::mutex> lock(pipelines_mutex_);
  if (pipeline_cache_store_ == nullptr || !pipeline_cache_changed_ || failed_) return;
  size_t size = 0;
  if (functions_.vkGetPipelineCacheData(device_, pipeline_cache_, &size, nullptr) != VK_SUCCESS) {
    return;
  }
  std::vector<uint8_t> data(size);
  // VK_INCOMPLETE (the cache grew in between) leaves a partial blob: skip it, save next time.
  if (functions_.vkGetPipelineCacheData(device_, pipeline_cache_, &size, data.data()) !=
      VK_SUCCESS) {
    return;
  }
  data.resize(size);
  pipeline_cache_store_->Save(physical_device_, data);
  pipeline_cache_changed_ = false;
}

}  // namespace vkspmd::runtime
