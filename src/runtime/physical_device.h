// One capability snapshot per physical device, read once: identity, limits, memory, queues,
// features and the quirks vkspmd must design around. Nothing else in vkspmd queries a physical
// device's properties ad hoc.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/runtime/instance.h"

namespace vkspmd::runtime {

struct MemoryHeapInfo {
  uint64_t size = 0;
  bool device_local = false;
};

struct MemoryTypeInfo {
  VkMemoryPropertyFlags flags = 0;
  uint32_t heap_index = 0;
};

struct QueueFamilyInfo {
  VkQueueFlags flags = 0;
  uint32_t queue_count = 0;
  uint32_t timestamp_valid_bits = 0;
};

// Known driver behaviours that no Vulkan property reports.
struct DeviceQuirks {
  // llvmpipe silently ends every loop of an invocation after this many iterations in total
  // (0: no such limit known).
  uint32_t loop_iteration_limit = 0;
  // The driver never reports VK_ERROR_OUT_OF_DEVICE_MEMORY (lavapipe commits memory lazily), so
  // vkspmd's own budget is the only guard.
  bool never_reports_out_of_memory = false;
};

// The formats of the uniform texel buffers kernels read their inputs through (see
// PipelineSpec::texel_formats): 4 elements of 32, 16 or 8 bits a texel.
inline constexpr VkFormat kTexelReadFormats[] = {
    VK_FORMAT_R32G32B32A32_SFLOAT, VK_FORMAT_R32G32B32A32_SINT, VK_FORMAT_R32G32B32A32_UINT,
    VK_FORMAT_R16G16B16A16_SINT,   VK_FORMAT_R16G16B16A16_UINT, VK_FORMAT_R8G8B8A8_SINT,
    VK_FORMAT_R8G8B8A8_UINT};

struct PhysicalDeviceInfo {
  int index = 0;                             // Position in the loader's enumeration.
  VkPhysicalDevice handle = VK_NULL_HANDLE;  // Borrowed from the instance.
  std::string name;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  std::string driver_name;
  std::string driver_info;
  uint32_t api_version = 0;
  uint32_t driver_version = 0;
  std::string device_uuid;  // 32 lowercase hex digits.
  std::string driver_uuid;  // 32 lowercase hex digits.
  uint32_t driver_id = 0;   // VkDriverId.
  // Which VkPipelineCache data the driver accepts (the header of the data it returns).
  std::array<uint8_t, VK_UUID_SIZE> pipeline_cache_uuid{};

  std::vector<MemoryHeapInfo> memory_heaps;
  std::vector<MemoryTypeInfo> memory_types;
  std::vector<QueueFamilyInfo> queue_families;
  // The queue family mesh devices use, and how many queues it has.
  uint32_t compute_queue_family = UINT32_MAX;
  uint32_t compute_queue_count = 0;

  uint32_t subgroup_size = 0;
  // Compute shaders may use basic and shuffle subgroup operations.
  bool subgroup_shuffle = false;
  uint32_t max_shared_memory_bytes = 0;
  uint32_t max_workgroup_invocations = 0;
  std::array<uint32_t, 3> max_workgroup_count{};
  std::array<uint32_t, 3> max_workgroup_size{};
  uint64_t max_storage_buffer_range = 0;
  uint32_t max_push_constants_bytes = 0;
  uint32_t max_storage_buffers_per_stage = 0;
  uint64_t min_storage_buffer_offset_alignment = 0;
  // Uniform texel buffers: texels per view, the views' offset alignment, and whether the formats
  // that codegen's texel reads use (RGBA of 32-bit float, int and uint, of 16- and 8-bit int and
  // uint) all support uniform texel buffers (they are required to; checked all the same).
  uint64_t max_texel_buffer_elements = 0;
  uint64_t min_texel_buffer_offset_alignment = 0;
  uint32_t max_sampled_images_per_stage = 0;
  bool uniform_texel_formats = false;
  uint64_t max_memory_allocation_size = 0;
  float timestamp_period_ns = 0;

  bool timeline_semaphore = false;
  bool synchronization2 = false;
  bool shader_int64 = false;
  bool shader_float16 = false;
  bool shader_int8 = false;
  bool shader_int16 = false;
  bool shader_float64 = false;
  // VkPhysicalDeviceVulkan12Properties::shaderDenormPreserveFloat32, with a
  // denormBehaviorIndependence other than NONE: shaders may declare the DenormPreserve execution
  // mode for 32-bit floats alone.
  bool denorm_preserve_float32 = false;
  bool storage_buffer_8bit = false;
  bool storage_buffer_16bit = false;
  // The Vulkan memory model (Vulkan 1.2 features): the cooperative-matrix kernels need it, since
  // GL_NV_cooperative_matrix requires GL_KHR_memory_scope_semantics, which declares the
  // VulkanMemoryModel capability.
  bool vulkan_memory_model = false;
  bool vulkan_memory_model_device_scope = false;
  // VK_NV_cooperative_matrix (extension and cooperativeMatrix feature; enabled at device creation
  // when present), and the subgroup-scope shapes M x N x K it offers for f16 A and B with f32 C
  // and D (the tensor-core products a dot of f16 operands uses). The NV extension has no bf16.
  bool cooperative_matrix_nv = false;
  struct MatrixShape {
    uint32_t m = 0, n = 0, k = 0;
  };
  std::vector<MatrixShape> cooperative_matrix_f16_f32;
  DeviceQuirks quirks;

  bool is_cpu() const { return type == VK_PHYSICAL_DEVICE_TYPE_CPU; }
  bool has_compute_queue() const { return compute_queue_count > 0; }
  // Why vkspmd cannot use this device, or empty when it can.
  std::string UnusableReason() const;
  // The largest device-local heap, the default per-device memory budget.
  uint64_t LargestDeviceLocalHeap() const;
};

absl::string_view PhysicalDeviceTypeName(VkPhysicalDeviceType type);
std::string VulkanVersionString(uint32_t version);

// Reads the snapshot of every physical device the instance sees.
absl::StatusOr<std::vector<PhysicalDeviceInfo>> QueryPhysicalDevices(const Instance& instance);

}  // namespace vkspmd::runtime
