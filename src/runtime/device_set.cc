// Creating the mesh devices from the plan.
#include "src/runtime/device_set.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"

namespace vkspmd::runtime {

absl::StatusOr<std::unique_ptr<DeviceSet>> DeviceSet::Create(const RuntimeConfig& config) {
  std::unique_ptr<DeviceSet> set(new DeviceSet());
  VKSPMD_ASSIGN_OR_RETURN(set->instance_, Instance::Create(config));
  VKSPMD_ASSIGN_OR_RETURN(set->physical_devices_, QueryPhysicalDevices(*set->instance_));
  VKSPMD_ASSIGN_OR_RETURN(std::vector<const PhysicalDeviceInfo*> selected,
                          SelectPhysicalDevices(set->physical_devices_, config));
  VKSPMD_ASSIGN_OR_RETURN(set->slots_,
                          PlanMeshDevices(selected, config.mesh_device_count,
                                          config.separate_logical_devices, config.shared_queues));

  // Queues needed per (physical device, logical device).
  std::map<std::pair<int, int>, uint32_t> queue_counts;
  for (const MeshDeviceSlot& slot : set->slots_) {
    uint32_t& count = queue_counts[{slot.physical_index, slot.logical_device}];
    count = std::max(count, slot.queue_index + 1);
  }
  std::map<std::pair<int, int>, LogicalDevice*> logical_by_key;
  for (const MeshDeviceSlot& slot : set->slots_) {
    std::pair<int, int> key{slot.physical_index, slot.logical_device};
    if (logical_by_key.count(key) == 0) {
      const PhysicalDeviceInfo& physical_device = set->physical_devices_[slot.physical_index];
      std::string label = absl::StrCat(physical_device.name, " #", slot.physical_index,
                                       " logical device ", slot.logical_device);
      absl::StatusOr<std::unique_ptr<LogicalDevice>> logical = LogicalDevice::Create(
          *set->instance_, physical_device, queue_counts[key], config, std::move(label));
      if (!logical.ok()) {
        return absl::Status(logical.status().code(),
                            absl::StrCat("creating mesh device ", slot.mesh_index, " of ",
                                         set->slots_.size(), ": ", logical.status().message()));
      }
      logical_by_key[key] = logical->get();
      set->logical_devices_.push_back(std::move(*logical));
    }
    VKSPMD_ASSIGN_OR_RETURN(
        std::unique_ptr<MeshDevice> mesh_device,
        MeshDevice::Create(slot.mesh_index, *logical_by_key[key], slot.queue_index));
    set->mesh_devices_.push_back(std::move(mesh_device));
  }
  return set;
}

void DeviceSet::CloseDevices() {
  mesh_devices_.clear();
  for (const std::unique_ptr<LogicalDevice>& device : logical_devices_) {
    leaked_devices_ |= device->must_not_free();
  }
  logical_devices_.clear();
}

DeviceSet::~DeviceSet() {
  CloseDevices();
  // An instance with live devices cannot be destroyed; it goes with the process.
  if (leaked_devices_) (void)instance_.release();
}

}  // namespace vkspmd::runtime
