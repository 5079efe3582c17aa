// Reading the physical-device snapshot and the quirks table.
#include "src/runtime/physical_device.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "src/base/status_macros.h"

namespace vkspmd::runtime {
namespace {

std::string HexUuid(const uint8_t (&uuid)[VK_UUID_SIZE]) {
  std::string text;
  for (uint8_t byte : uuid) absl::StrAppendFormat(&text, "%02x", byte);
  return text;
}

// The quirks table: behaviours keyed by driver, never by device name deep in op code.
DeviceQuirks QuirksFor(VkDriverId driver_id) {
  DeviceQuirks quirks;
  if (driver_id == VK_DRIVER_ID_MESA_LLVMPIPE) {
    quirks.loop_iteration_limit = 65535;  // LP_MAX_TGSI_LOOP_ITERATIONS in gallivm.
    quirks.never_reports_out_of_memory = true;
  }
  return quirks;
}

bool HasExtension(const InstanceFunctions& functions, VkPhysicalDevice handle, const char* name) {
  uint32_t count = 0;
  if (functions.vkEnumerateDeviceExtensionProperties(handle, nullptr, &count, nullptr) !=
      VK_SUCCESS) {
    return false;
  }
  std::vector<VkExtensionProperties> extensions(count);
  if (functions.vkEnumerateDeviceExtensionProperties(handle, nullptr, &count, extensions.data()) !=
      VK_SUCCESS) {
    return false;
  }
  for (uint32_t e = 0; e < count; ++e) {
    if (std::strcmp(extensions[e].extensionName, name) == 0) return true;
  }
  return false;
}

// VK_NV_cooperative_matrix: the feature, and the subgroup-scope shapes with f16 A and B and f32 C
// and D (what an f16 dot accumulating in f32 needs).
void ReadCooperativeMatrix(const InstanceFunctions& functions, VkPhysicalDevice handle,
                           PhysicalDeviceInfo& info) {
  if (!info.vulkan_memory_model ||
      functions.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV == nullptr ||
      !HasExtension(functions, handle, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME)) {
    return;
  }
  VkPhysicalDeviceCooperativeMatrixFeaturesNV cooperative{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &cooperative;
  functions.vkGetPhysicalDeviceFeatures2(handle, &features);
  if (!cooperative.cooperativeMatrix) return;
  uint32_t count = 0;
  if (functions.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(handle, &count, nullptr) !=
      VK_SUCCESS) {
    return;
  }
  std::vector<VkCooperativeMatrixPropertiesNV> shapes(
      count, VkCooperativeMatrixPropertiesNV{VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
  if (functions.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(handle, &count, shapes.data()) !=
      VK_SUCCESS) {
    return;
  }
  info.cooperative_matrix_nv = true;
  for (uint32_t s = 0; s < count; ++s) {
    const VkCooperativeMatrixPropertiesNV& shape = shapes[s];
    if (shape.scope == VK_SCOPE_SUBGROUP_NV && shape.AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
        shape.BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
        shape.CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
        shape.DType == VK_COMPONENT_TYPE_FLOAT32_NV) {
      info.cooperative_matrix_f16_f32.push_back({shape.MSize, shape.NSize, shape.KSize});
    }
  }
}

// Picks the compute-capable family with the most queues, preferring one without graphics.
void ChooseComputeQueueFamily(PhysicalDeviceInfo& info) {
  for (uint32_t family = 0; family < info.queue_families.size(); ++family) {
    const QueueFamilyInfo& candidate = info.queue_families[family];
    if ((candidate.flags & VK_QUEUE_COMPUTE_BIT) == 0 || candidate.queue_count == 0) continue;
    bool better = info.compute_queue_family == UINT32_MAX ||
                  candidate.queue_count > info.compute_queue_count ||
                  (candidate.queue_count == info.compute_queue_count &&
                   (candidate.flags & VK_QUEUE_GRAPHICS_BIT) == 0);
    if (better) {
      info.compute_queue_family = family;
      info.compute_queue_count = candidate.queue_count;
    }
  }
}

PhysicalDeviceInfo ReadSnapshot(const InstanceFunctions& functions, VkPhysicalDevice handle,
                                int index) {
  PhysicalDeviceInfo info;
  info.index = index;
  info.handle = handle;

  VkPhysicalDeviceSubgroupProperties subgroup{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  driver.pNext = &subgroup;
  VkPhysicalDeviceIDProperties ids{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  ids.pNext = &driver;
  VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  properties.pNext = &ids;
  functions.vkGetPhysicalDeviceProperties2(handle, &properties);
  const VkPhysicalDeviceLimits& limits = properties.properties.limits;

  info.name = properties.properties.deviceName;
  info.type = properties.properties.deviceType;
  info.vendor_id = properties.properties.vendorID;
  info.device_id = properties.properties.deviceID;
  info.api_version = properties.properties.apiVersion;
  info.driver_version = properties.properties.driverVersion;
  info.driver_name = driver.driverName;
  info.driver_info = driver.driverInfo;
  info.device_uuid = HexUuid(ids.deviceUUID);
  info.driver_uuid = HexUuid(ids.driverUUID);
  info.driver_id = driver.driverID;
  std::copy_n(properties.properties.pipelineCacheUUID, VK_UUID_SIZE,
              info.pipeline_cache_uuid.begin());
  info.subgroup_size = subgroup.subgroupSize;
  const VkSubgroupFeatureFlags needed =
      VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
  info.subgroup_shuffle = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                          (subgroup.supportedOperations & needed) == needed;
  info.max_shared_memory_bytes = limits.maxComputeSharedMemorySize;
  info.max_workgroup_invocations = limits.maxComputeWorkGroupInvocations;
  std::copy_n(limits.maxComputeWorkGroupCount, 3, info.max_workgroup_count.begin());
  std::copy_n(limits.maxComputeWorkGroupSize, 3, info.max_workgroup_size.begin());
  info.max_storage_buffer_range = limits.maxStorageBufferRange;
  info.max_push_constants_bytes = limits.maxPushConstantsSize;
  info.max_storage_buffers_per_stage = limits.maxPerStageDescriptorStorageBuffers;
  info.min_storage_buffer_offset_alignment = limits.minStorageBufferOffsetAlignment;
  info.max_texel_buffer_elements = limits.maxTexelBufferElements;
  info.min_texel_buffer_offset_alignment = limits.minTexelBufferOffsetAlignment;
  info.max_sampled_images_per_stage = limits.maxPerStageDescriptorSampledImages;
  info.uniform_texel_formats = true;
  for (VkFormat format : kTexelReadFormats) {
    VkFormatProperties format_properties{};
    functions.vkGetPhysicalDeviceFormatProperties(handle, format, &format_properties);
    info.uniform_texel_formats =
        info.uniform_texel_formats &&
        (format_properties.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT) != 0;
  }
  info.timestamp_period_ns = limits.timestampPeriod;
  info.quirks = QuirksFor(driver.driverID);

  VkPhysicalDeviceMaintenance3Properties maintenance3{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceVulkan12Properties properties12{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES};
  // The Vulkan 1.2 structure only where the device knows it.
  if (info.api_version >= VK_API_VERSION_1_2) maintenance3.pNext = &properties12;
  VkPhysicalDeviceProperties2 more{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  more.pNext = &maintenance3;
  functions.vkGetPhysicalDeviceProperties2(handle, &more);
  info.max_memory_allocation_size = maintenance3.maxMemoryAllocationSize;
  // A mode for 32-bit floats alone is valid unless the device ties the three widths together.
  info.denorm_preserve_float32 =
      properties12.shaderDenormPreserveFloat32 &&
      properties12.denormBehaviorIndependence != VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_NONE;

  VkPhysicalDeviceVulkan13Features features13{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceVulkan12Features features12{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  features12.pNext = &features13;
  VkPhysicalDeviceVulkan11Features features11{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  features11.pNext = &features12;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &features11;
  if (info.api_version >= VK_API_VERSION_1_3) {
    functions.vkGetPhysicalDeviceFeatures2(handle, &features);
    info.timeline_semaphore = features12.timelineSemaphore;
    info.synchronization2 = features13.synchronization2;
    info.shader_int8 = features12.shaderInt8;
    info.shader_float16 = features12.shaderFloat16;
    info.storage_buffer_8bit = features12.storageBuffer8BitAccess;
    info.storage_buffer_16bit = features11.storageBuffer16BitAccess;
    info.vulkan_memory_model = features12.vulkanMemoryModel;
    info.vulkan_memory_model_device_scope = features12.vulkanMemoryModelDeviceScope;
    info.shader_int64 = features.features.shaderInt64;
    info.shader_int16 = features.features.shaderInt16;
    info.shader_float64 = features.features.shaderFloat64;
    ReadCooperativeMatrix(functions, handle, info);
  }

  VkPhysicalDeviceMemoryProperties memory;
  functions.vkGetPhysicalDeviceMemoryProperties(handle, &memory);
  for (uint32_t heap = 0; heap < memory.memoryHeapCount; ++heap) {
    info.memory_heaps.push_back(
        {memory.memoryHeaps[heap].size,
         (memory.memoryHeaps[heap].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0});
  }
  for (uint32_t type = 0; type < memory.memoryTypeCount; ++type) {
    info.memory_types.push_back(
        {memory.memoryTypes[type].propertyFlags, memory.memoryTypes[type].heapIndex});
  }

  uint32_t family_count = 0;
  functions.vkGetPhysicalDeviceQueueFamilyProperties(handle, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  functions.vkGetPhysicalDeviceQueueFamilyProperties(handle, &family_count, families.data());
  for (const VkQueueFamilyProperties& family : families) {
    info.queue_families.push_back(
        {family.queueFlags, family.queueCount, family.timestampValidBits});
  }
  ChooseComputeQueueFamily(info);
  return info;
}

}  // namespace

std::string PhysicalDeviceInfo::UnusableReason() const {
  if (api_version < VK_API_VERSION_1_3) {
    return absl::StrCat("Vulkan ", VulkanVersionString(api_version), " < 1.3");
  }
  if (!has_compute_queue()) return "no compute queue";
  if (!timeline_semaphore) return "no timeline semaphores";
  if (!synchronization2) return "no synchronization2";
  return "";
}

uint64_t PhysicalDeviceInfo::LargestDeviceLocalHeap() const {
  uint64_t largest = 0;
  for (const MemoryHeapInfo& heap : memory_heaps) {
    if (heap.device_local) largest = std::max(largest, heap.size);
  }
  return largest;
}

absl::string_view PhysicalDeviceTypeName(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "cpu";
    default:
      return "other";
  }
}

std::string VulkanVersionString(uint32_t version) {
  return absl::StrCat(VK_API_VERSION_MAJOR(version), ".", VK_API_VERSION_MINOR(version), ".",
                      VK_API_VERSION_PATCH(version));
}

absl::StatusOr<std::vector<PhysicalDeviceInfo>> QueryPhysicalDevices(const Instance& instance) {
  VKSPMD_ASSIGN_OR_RETURN(std::vector<VkPhysicalDevice> handles,
                          instance.EnumeratePhysicalDevices());
  std::vector<PhysicalDeviceInfo> devices;
  for (size_t index = 0; index < handles.size(); ++index) {
    devices.push_back(ReadSnapshot(instance.functions(), handles[index], static_cast<int>(index)));
  }
  return devices;
}

}  // namespace vkspmd::runtime
