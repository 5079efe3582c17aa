// Device visibility and mesh-device placement.
#include "src/runtime/mesh_plan.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"

namespace vkspmd::runtime {
namespace {

std::string ListDevices(const std::vector<PhysicalDeviceInfo>& devices) {
  if (devices.empty()) return "the Vulkan loader reports no physical device";
  std::string text = "available:";
  for (const PhysicalDeviceInfo& device : devices) {
    absl::StrAppend(&text, " [", device.index, "] ", device.name, " (",
                    PhysicalDeviceTypeName(device.type), ", uuid ", device.device_uuid);
    if (std::string reason = device.UnusableReason(); !reason.empty()) {
      absl::StrAppend(&text, ", unusable: ", reason);
    }
    absl::StrAppend(&text, ")");
  }
  return text;
}

absl::StatusOr<const PhysicalDeviceInfo*> FindVisibleEntry(
    const std::vector<PhysicalDeviceInfo>& devices, const std::string& entry) {
  int index = -1;
  if (absl::SimpleAtoi(entry, &index)) {
    if (index >= 0 && index < static_cast<int>(devices.size())) return &devices[index];
  } else {
    std::vector<const PhysicalDeviceInfo*> matches;
    for (const PhysicalDeviceInfo& device : devices) {
      if (!entry.empty() && absl::StartsWithIgnoreCase(device.device_uuid, entry)) {
        matches.push_back(&device);
      }
    }
    if (matches.size() == 1) return matches.front();
    if (matches.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat("VKSPMD_VISIBLE_DEVICES entry '", entry,
                                                     "' matches several device UUIDs; ",
                                                     ListDevices(devices)));
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("VKSPMD_VISIBLE_DEVICES entry '", entry,
                                                 "' is neither a device index nor a UUID prefix; ",
                                                 ListDevices(devices)));
}

}  // namespace

absl::StatusOr<std::vector<const PhysicalDeviceInfo*>> SelectPhysicalDevices(
    const std::vector<PhysicalDeviceInfo>& devices, const RuntimeConfig& config) {
  std::vector<const PhysicalDeviceInfo*> selected;
  if (config.visible_devices) {
    for (const std::string& entry : *config.visible_devices) {
      VKSPMD_ASSIGN_OR_RETURN(const PhysicalDeviceInfo* device, FindVisibleEntry(devices, entry));
      if (std::find(selected.begin(), selected.end(), device) != selected.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("VKSPMD_VISIBLE_DEVICES lists device ", device->index, " twice"));
      }
      if (std::string reason = device->UnusableReason(); !reason.empty()) {
        return absl::FailedPreconditionError(absl::StrCat("VKSPMD_VISIBLE_DEVICES lists device ",
                                                          device->index, " (", device->name,
                                                          ") which vkspmd cannot use: ", reason));
      }
      selected.push_back(device);
    }
    if (selected.empty()) {
      return absl::NotFoundError("VKSPMD_VISIBLE_DEVICES is empty: no device is visible");
    }
    return selected;
  }
  for (const PhysicalDeviceInfo& device : devices) {
    if (!device.is_cpu() && device.UnusableReason().empty()) selected.push_back(&device);
  }
  if (selected.empty() || config.allow_cpu_devices) {
    for (const PhysicalDeviceInfo& device : devices) {
      if (device.is_cpu() && device.UnusableReason().empty()) selected.push_back(&device);
    }
  }
  if (selected.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no usable Vulkan device; ", ListDevices(devices),
                     ". For the CPU driver install mesa-vulkan-drivers and set "
                     "VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"));
  }
  return selected;
}

absl::StatusOr<std::vector<MeshDeviceSlot>> PlanMeshDevices(
    const std::vector<const PhysicalDeviceInfo*>& physical_devices, int count,
    bool separate_logical_devices, bool shared_queues) {
  if (physical_devices.empty())
    return absl::NotFoundError("no physical device to place mesh devices on");
  if (count == 0) count = static_cast<int>(physical_devices.size());
  if (count < 0 || count > kMaxMeshDevices) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot create ", count, " mesh devices: the count must be between 1 and ",
                     kMaxMeshDevices));
  }
  std::vector<MeshDeviceSlot> slots;
  auto add = [&](const PhysicalDeviceInfo& device, int logical_device, uint32_t queue_index) {
    slots.push_back({static_cast<int>(slots.size()), device.index, logical_device,
                     device.compute_queue_family, queue_index});
  };
  // Round 1: one mesh device per physical device.
  for (const PhysicalDeviceInfo* device : physical_devices) {
    if (static_cast<int>(slots.size()) < count) add(*device, 0, 0);
  }
  // Round 2: further compute queues of each device's first logical device (none when every mesh
  // device must have a VkDevice of its own).
  uint32_t most_queues = 0;
  for (const PhysicalDeviceInfo* device : physical_devices) {
    if (!separate_logical_devices) most_queues = std::max(most_queues, device->compute_queue_count);
  }
  for (uint32_t queue = 1; queue < most_queues; ++queue) {
    for (const PhysicalDeviceInfo* device : physical_devices) {
      if (static_cast<int>(slots.size()) < count && queue < device->compute_queue_count) {
        add(*device, 0, queue);
      }
    }
  }
  // Round 3 when queues are shared: further mesh devices on the first VkDevice's queues.
  if (shared_queues && !separate_logical_devices) {
    for (uint32_t round = 0; static_cast<int>(slots.size()) < count; ++round) {
      for (const PhysicalDeviceInfo* device : physical_devices) {
        if (static_cast<int>(slots.size()) < count) {
          add(*device, 0, round % std::max<uint32_t>(device->compute_queue_count, 1));
        }
      }
    }
  }
  // Round 3: further logical devices, one queue each, round-robin over physical devices.
  for (int logical = 1; static_cast<int>(slots.size()) < count; ++logical) {
    for (const PhysicalDeviceInfo* device : physical_devices) {
      if (static_cast<int>(slots.size()) < count) add(*device, logical, 0);
    }
  }
  return slots;
}

}  // namespace vkspmd::runtime
