// The devices vkspmd runs on: the physical devices Vulkan reports, and a set of mesh devices
// (one per GPU, then further queues, then further logical devices on the same GPU).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vkspmd/error.h"

namespace vkspmd {

struct PhysicalDevice {
  int index = 0;
  std::string name;
  std::string type;  // "discrete-gpu", "integrated-gpu", "virtual-gpu", "cpu" or "other".
  std::string driver;
  std::string api_version;
  uint32_t subgroup_size = 0;
  uint32_t max_shared_memory_bytes = 0;
  uint64_t device_local_bytes = 0;
  uint32_t compute_queues = 0;
  std::string unusable_reason;  // Empty when vkspmd can use the device.
};

struct MeshDeviceInfo {
  int mesh_index = 0;
  int physical_index = 0;
  std::string physical_name;
  int logical_device = 0;
  uint32_t queue_family = 0;
  uint32_t queue_index = 0;
};

// Every physical device the Vulkan loader reports. Throws vkspmd::Error.
std::vector<PhysicalDevice> ListPhysicalDevices();

// The mesh devices tensors run on. They belong to the runtime (one owner for the process): Open
// opens them if they are not open yet, and they stay open until vkspmd::shutdown() or exit,
// whatever happens to this object, which only describes them.
class DeviceSet {
 public:
  // At least `count` mesh devices; 0 takes VKSPMD_DEVICES, or one per usable physical device.
  // The rest of the configuration comes from the VKSPMD_* environment. Throws vkspmd::Error
  // (also when tensors already live on fewer devices than `count`).
  static DeviceSet Open(int count = 0);
  ~DeviceSet();
  DeviceSet(DeviceSet&&) noexcept;
  DeviceSet& operator=(DeviceSet&&) noexcept;

  int size() const;
  const std::vector<MeshDeviceInfo>& devices() const;

 private:
  struct State;
  explicit DeviceSet(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace vkspmd
