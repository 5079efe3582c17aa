// The public device API (include/vkspmd/devices.h): the physical devices, and the mesh devices of
// the lazy runtime, the ones tensors run on. Statuses become vkspmd::Error here.
#include <utility>

#include "src/lazy/engine.h"
#include "src/runtime/device_set.h"
#include "src/runtime/instance.h"
#include "src/runtime/physical_device.h"
#include "vkspmd/devices.h"

namespace vkspmd {
namespace {

template <typename T>
T ValueOrThrow(absl::StatusOr<T> value) {
  if (!value.ok()) {
    throw Error(static_cast<ErrorCode>(value.status().code()),
                std::string(value.status().message()));
  }
  return std::move(*value);
}

runtime::RuntimeConfig ConfigOrThrow() {
  return ValueOrThrow(runtime::RuntimeConfig::FromEnvironment());
}

}  // namespace

std::vector<PhysicalDevice> ListPhysicalDevices() {
  std::unique_ptr<runtime::Instance> instance =
      ValueOrThrow(runtime::Instance::Create(ConfigOrThrow()));
  std::vector<PhysicalDevice> devices;
  for (const runtime::PhysicalDeviceInfo& info :
       ValueOrThrow(runtime::QueryPhysicalDevices(*instance))) {
    PhysicalDevice device;
    device.index = info.index;
    device.name = info.name;
    device.type = std::string(runtime::PhysicalDeviceTypeName(info.type));
    device.driver = info.driver_name;
    device.api_version = runtime::VulkanVersionString(info.api_version);
    device.subgroup_size = info.subgroup_size;
    device.max_shared_memory_bytes = info.max_shared_memory_bytes;
    device.device_local_bytes = info.LargestDeviceLocalHeap();
    device.compute_queues = info.compute_queue_count;
    device.unusable_reason = info.UnusableReason();
    devices.push_back(std::move(device));
  }
  return devices;
}

struct DeviceSet::State {
  std::vector<MeshDeviceInfo> infos;
};

DeviceSet DeviceSet::Open(int count) {
  auto state = std::make_unique<State>();
  absl::Status opened = lazy::Engine::Get().Call([&](lazy::DevicePool& pool) -> absl::Status {
    absl::StatusOr<runtime::DeviceSet*> devices = pool.OpenAtLeast(count);
    if (!devices.ok()) return devices.status();
    for (const runtime::MeshDeviceSlot& slot : (*devices)->slots()) {
      state->infos.push_back({slot.mesh_index, slot.physical_index,
                              (*devices)->physical_devices()[slot.physical_index].name,
                              slot.logical_device, slot.queue_family, slot.queue_index});
    }
    return absl::OkStatus();
  });
  if (!opened.ok())
    throw Error(static_cast<ErrorCode>(opened.code()), std::string(opened.message()));
  return DeviceSet(std::move(state));
}

DeviceSet::DeviceSet(std::unique_ptr<State> state) : state_(std::move(state)) {}
DeviceSet::~DeviceSet() = default;
DeviceSet::DeviceSet(DeviceSet&&) noexcept = default;
DeviceSet& DeviceSet::operator=(DeviceSet&&) noexcept = default;
int DeviceSet::size() const { return state_ ? static_cast<int>(state_->infos.size()) : 0; }
const std::vector<MeshDeviceInfo>& DeviceSet::devices() const {
  static const std::vector<MeshDeviceInfo> kNone;  // A moved-from set holds no devices.
  return state_ ? state_->infos : kNone;
}

}  // namespace vkspmd
