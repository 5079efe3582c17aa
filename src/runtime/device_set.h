// The mesh devices of a process: the instance, one snapshot per physical device, the logical
// devices, and one MeshDevice per mesh position, created by the policy in mesh_plan.h.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "src/runtime/instance.h"
#include "src/runtime/logical_device.h"
#include "src/runtime/mesh_device.h"
#include "src/runtime/mesh_plan.h"
#include "src/runtime/physical_device.h"
#include "src/runtime/runtime_config.h"

namespace vkspmd::runtime {

class DeviceSet {
 public:
  static absl::StatusOr<std::unique_ptr<DeviceSet>> Create(const RuntimeConfig& config);
  ~DeviceSet();
  DeviceSet(const DeviceSet&) = delete;
  DeviceSet& operator=(const DeviceSet&) = delete;

  int size() const { return static_cast<int>(mesh_devices_.size()); }
  // Destroys the mesh and logical devices but keeps the instance (and its validation counter),
  // so messages produced while tearing devices down can still be read.
  void CloseDevices();
  MeshDevice& device(int mesh_index) { return *mesh_devices_.at(mesh_index); }
  const std::vector<MeshDeviceSlot>& slots() const { return slots_; }
  const std::vector<PhysicalDeviceInfo>& physical_devices() const { return physical_devices_; }
  Instance& instance() { return *instance_; }
  // The logical devices, in creation order (tests use this to install fakes).
  const std::vector<std::unique_ptr<LogicalDevice>>& logical_devices() const {
    return logical_devices_;
  }
  // Null unless validation is on.
  ValidationMessages* validation_messages() { return instance_->validation_messages(); }

 private:
  DeviceSet() = default;

  std::unique_ptr<Instance> instance_;
  std::vector<PhysicalDeviceInfo> physical_devices_;
  std::vector<MeshDeviceSlot> slots_;
  std::vector<std::unique_ptr<LogicalDevice>> logical_devices_;
  std::vector<std::unique_ptr<MeshDevice>> mesh_devices_;
  bool leaked_devices_ = false;
};

}  // namespace vkspmd::runtime
