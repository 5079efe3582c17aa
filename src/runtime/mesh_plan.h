// The mesh-device policy of DESIGN.md as a pure function: which physical devices are visible and
// usable, and which (physical device, logical device, queue) each mesh device maps to. One per
// physical GPU first, then further compute queues, then further logical devices.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/runtime/physical_device.h"
#include "src/runtime/runtime_config.h"

namespace vkspmd::runtime {

inline constexpr int kMaxMeshDevices = 256;

struct MeshDeviceSlot {
  int mesh_index = 0;
  int physical_index = 0;  // PhysicalDeviceInfo::index.
  int logical_device = 0;  // Which VkDevice on that physical device, counted from 0.
  uint32_t queue_family = 0;
  uint32_t queue_index = 0;
};

// The physical devices vkspmd will use, in mesh order: VKSPMD_VISIBLE_DEVICES' order when given,
// else GPUs in loader order, with CPU devices only when no GPU is usable or allow_cpu_devices is
// set. Errors name unknown or unusable entries and list what exists.
absl::StatusOr<std::vector<const PhysicalDeviceInfo*>> SelectPhysicalDevices(
    const std::vector<PhysicalDeviceInfo>& devices, const RuntimeConfig& config);

// Assigns `count` mesh devices (0: one per physical device) to the selected physical devices.
// With `separate_logical_devices` the second round (further queues) is skipped: every mesh device
// gets a VkDevice of its own. With `shared_queues` (and not separate) the third round shares the
// first VkDevice's queues round-robin instead of creating further VkDevices.
absl::StatusOr<std::vector<MeshDeviceSlot>> PlanMeshDevices(
    const std::vector<const PhysicalDeviceInfo*>& physical_devices, int count,
    bool separate_logical_devices = false, bool shared_queues = false);

}  // namespace vkspmd::runtime
