// Creating the mesh devices from the plan.
#include "src/runtime/device_set.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"

namespace vkspmd::runtime {

absl::StatusOr<std::unique_ptr<DeviceSet>> DeviceSet::Create(const RuntimeConfig& config) {
  std::unique_ptr<DeviceSet> set(new DeviceSet());
  absl::StatusOr<std::unique_ptr<Instance>> instance = Instance::Create(config);
  if (!instance.ok()) return instance.status();
  set->instance_ = std::move(*instance);
  absl::StatusOr<std::vector<PhysicalDeviceInfo>> physical = QueryPhysicalDevices(*set->instance_);
  if (!physical.ok()) return physical.status();
  set->physical_devices_ = std::move(*physical);
  absl::StatusOr<std::vector<const PhysicalDeviceInfo*>> selected =
      SelectPhysicalDevices(set->physical_devices_, config);
  if (!selected.ok()) return selected.status();
  absl::StatusOr<std::vector<MeshDeviceSlot>> slots =
      PlanMeshDevices(*selected, config.mesh_device_count);
  if (!slots.ok()) return slots.status();
  set->slots_ = std::move(*slots);

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
    absl::StatusOr<std::unique_ptr<MeshDevice>> mesh_device =
        MeshDevice::Create(slot.mesh_index, *logical_by_key[key], slot.queue_index);
    if (!mesh_device.ok()) return mesh_device.status();
    set->mesh_devices_.push_back(std::move(*mesh_device));
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
