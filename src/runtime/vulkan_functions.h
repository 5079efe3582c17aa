// Per-instance and per-device tables of Vulkan entry points. Every Vulkan call in vkspmd goes
// through one of these tables (never through the loader's globals), so tests can replace single
// entries with fakes that inject errors, and so two hosts in one process never clash.
#pragma once

#include <vulkan/vulkan.h>

#include "absl/status/status.h"

namespace vkspmd::runtime {

#define VKSPMD_INSTANCE_FUNCTIONS(X)          \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkGetPhysicalDeviceFormatProperties)      \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)

#define VKSPMD_DEBUG_UTILS_FUNCTIONS(X) \
  X(vkCreateDebugUtilsMessengerEXT)     \
  X(vkDestroyDebugUtilsMessengerEXT)

// Optional: VK_NV_cooperative_matrix's shape query (null where the loader lacks it).
#define VKSPMD_OPTIONAL_INSTANCE_FUNCTIONS(X) X(vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)

#define VKSPMD_DEVICE_FUNCTIONS(X)  \
  X(vkDestroyDevice)                \
  X(vkGetDeviceQueue)               \
  X(vkDeviceWaitIdle)               \
  X(vkAllocateMemory)               \
  X(vkFreeMemory)                   \
  X(vkMapMemory)                    \
  X(vkUnmapMemory)                  \
  X(vkFlushMappedMemoryRanges)      \
  X(vkInvalidateMappedMemoryRanges) \
  X(vkCreateBuffer)                 \
  X(vkDestroyBuffer)                \
  X(vkGetBufferMemoryRequirements)  \
  X(vkBindBufferMemory)             \
  X(vkCreateBufferView)             \
  X(vkDestroyBufferView)            \
  X(vkCreateShaderModule)           \
  X(vkDestroyShaderModule)          \
  X(vkCreateDescriptorSetLayout)    \
  X(vkDestroyDescriptorSetLayout)   \
  X(vkCreatePipelineLayout)         \
  X(vkDestroyPipelineLayout)        \
  X(vkCreatePipelineCache)          \
  X(vkDestroyPipelineCache)         \
  X(vkGetPipelineCacheData)         \
  X(vkMergePipelineCaches)          \
  X(vkCreateComputePipelines)       \
  X(vkDestroyPipeline)              \
  X(vkCreateDescriptorPool)         \
  X(vkDestroyDescriptorPool)        \
  X(vkAllocateDescriptorSets)       \
  X(vkUpdateDescriptorSets)         \
  X(vkCreateCommandPool)            \
  X(vkDestroyCommandPool)           \
  X(vkAllocateCommandBuffers)       \
  X(vkFreeCommandBuffers)           \
  X(vkBeginCommandBuffer)           \
  X(vkEndCommandBuffer)             \
  X(vkCmdBindPipeline)              \
  X(vkCmdBindDescriptorSets)        \
  X(vkCmdPushConstants)             \
  X(vkCmdDispatch)                  \
  X(vkCmdCopyBuffer)                \
  X(vkCmdFillBuffer)                \
  X(vkCmdPipelineBarrier2)          \
  X(vkCmdResetQueryPool)            \
  X(vkCmdWriteTimestamp)            \
  X(vkCreateQueryPool)              \
  X(vkDestroyQueryPool)             \
  X(vkGetQueryPoolResults)          \
  X(vkCreateSemaphore)              \
  X(vkDestroySemaphore)             \
  X(vkWaitSemaphores)               \
  X(vkGetSemaphoreCounterValue)     \
  X(vkQueueSubmit)

#define VKSPMD_DECLARE_FUNCTION(name) PFN_##name name = nullptr;

// Entry points of one VkInstance. Borrowed by everything created from that instance.
struct InstanceFunctions {
  VKSPMD_INSTANCE_FUNCTIONS(VKSPMD_DECLARE_FUNCTION)
  VKSPMD_DEBUG_UTILS_FUNCTIONS(VKSPMD_DECLARE_FUNCTION)
  VKSPMD_OPTIONAL_INSTANCE_FUNCTIONS(VKSPMD_DECLARE_FUNCTION)

  // Fills every entry from vkGetInstanceProcAddr; fails naming the first missing required entry.
  // The debug-utils and VKSPMD_OPTIONAL_INSTANCE_FUNCTIONS entries are optional (null when absent).
  absl::Status Load(VkInstance instance);
};

// Entry points of one VkDevice (Vulkan 1.3 core). Copied into each logical device; a test may
// overwrite single members before the device is used.
struct DeviceFunctions {
  VKSPMD_DEVICE_FUNCTIONS(VKSPMD_DECLARE_FUNCTION)

  absl::Status Load(const InstanceFunctions& instance_functions, VkDevice device);
};

#undef VKSPMD_DECLARE_FUNCTION

}  // namespace vkspmd::runtime
