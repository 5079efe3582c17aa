// Opening (and growing) the lazy runtime's mesh devices.
#include "src/lazy/device_pool.h"

#include <algorithm>
#include <atomic>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/lazy/device_value.h"
#include "src/lazy/distributed.h"
#include "src/runtime/instance.h"
#include "src/runtime/mesh_plan.h"
#include "src/runtime/physical_device.h"

namespace vkspmd::lazy {
namespace {

std::atomic<int64_t> wanted_devices{1};

}  // namespace

absl::Status DevicePool::NoteMeshDevices(int64_t count) {
  if (const DistributedState* job = Distributed()) {
    // The mesh names the job's global devices; this process opens only its own.
    if (count > job->global_devices) {
      return absl::InvalidArgumentError(
          absl::StrCat("the mesh needs ", count, " mesh devices but the job of ",
                       job->process_count, " processes has ", job->global_devices));
    }
    return absl::OkStatus();
  }
  VKSPMD_ASSIGN_OR_RETURN(runtime::RuntimeConfig config, runtime::RuntimeConfig::FromEnvironment());
  if (config.mesh_device_count > 0 && count > config.mesh_device_count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the mesh needs ", count, " mesh devices but VKSPMD_DEVICES=", config.mesh_device_count,
        " allows only ", config.mesh_device_count));
  }
  if (count > runtime::kMaxMeshDevices) {
    return absl::InvalidArgumentError(absl::StrCat("the mesh needs ", count,
                                                   " mesh devices; at most ",
                                                   runtime::kMaxMeshDevices, " can be created"));
  }
  int64_t current = wanted_devices.load();
  while (count > current && !wanted_devices.compare_exchange_weak(current, count)) {
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> DevicePool::AvailableDeviceCount() {
  VKSPMD_ASSIGN_OR_RETURN(runtime::RuntimeConfig config, runtime::RuntimeConfig::FromEnvironment());
  if (config.mesh_device_count > 0) return config.mesh_device_count;
  VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Instance> instance,
                          runtime::Instance::Create(config));
  VKSPMD_ASSIGN_OR_RETURN(std::vector<runtime::PhysicalDeviceInfo> physical,
                          runtime::QueryPhysicalDevices(*instance));
  VKSPMD_ASSIGN_OR_RETURN(std::vector<const runtime::PhysicalDeviceInfo*> selected,
                          runtime::SelectPhysicalDevices(physical, config));
  return static_cast<int64_t>(selected.size());
}

int64_t DevicePool::WantedDevices() { return wanted_devices.load(); }

absl::Status DevicePool::Open(int64_t needed) {
  VKSPMD_ASSIGN_OR_RETURN(runtime::RuntimeConfig config, runtime::RuntimeConfig::FromEnvironment());
  if (config.mesh_device_count > 0 && needed > config.mesh_device_count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mesh device ", needed - 1, " is needed but VKSPMD_DEVICES=", config.mesh_device_count));
  }
  if (devices_ != nullptr) {
    SharedScalars::Clear();
    if (DeviceValue::LiveBufferCount() > 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "a mesh needs ", needed, " mesh devices but ", devices_->size(),
          " are open and hold tensors; create the largest mesh before the first tensor runs, or "
          "set VKSPMD_DEVICES"));
    }
    Close();
  }
  config.mesh_device_count = static_cast<int>(
      std::max({needed, wanted_devices.load(), static_cast<int64_t>(config.mesh_device_count)}));
  if (const DistributedState* job = Distributed()) {
    config.mesh_device_count = static_cast<int>(job->local_devices);
  }
  VKSPMD_ASSIGN_OR_RETURN(devices_, runtime::DeviceSet::Create(config));
  ++generation_;
  open_count_ = devices_->size();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<runtime::MeshDevice*>> DevicePool::DevicesFor(
    const Placement& placement) {
  if (const DistributedState* job = Distributed()) {
    if (devices_ == nullptr || devices_->size() != job->local_devices) {
      VKSPMD_RETURN_IF_ERROR(Open(job->local_devices));
    }
    // Other processes' devices are null. A value of no mesh lives on this process's first
    // device: every process computes it alike, as it traced it alike.
    std::vector<runtime::MeshDevice*> devices;
    for (int64_t id : placement.devices) {
      const int64_t local = placement.is_mesh ? id - job->first_device : 0;
      devices.push_back(placement.is_mesh && !job->IsLocal(id)
                            ? nullptr
                            : &devices_->device(static_cast<int>(local)));
    }
    return devices;
  }
  const int64_t needed = *std::max_element(placement.devices.begin(), placement.devices.end()) + 1;
  // Grow to what every mesh so far needs while nothing lives on the devices, so that a mesh
  // created earlier can still be used after values exist.
  const bool may_grow = devices_ != nullptr && devices_->size() < wanted_devices.load();
  if (may_grow) SharedScalars::Clear();
  const bool can_grow = may_grow && DeviceValue::LiveBufferCount() == 0;
  if (devices_ == nullptr || devices_->size() < needed || can_grow) {
    VKSPMD_RETURN_IF_ERROR(Open(needed));
  }
  std::vector<runtime::MeshDevice*> devices;
  for (int64_t id : placement.devices) devices.push_back(&devices_->device(static_cast<int>(id)));
  return devices;
}

int64_t DevicePool::ValidationMessageCount() {
  if (devices_ == nullptr || devices_->validation_messages() == nullptr) return closed_messages_;
  return closed_messages_ + devices_->validation_messages()->count();
}

absl::StatusOr<runtime::DeviceSet*> DevicePool::OpenAtLeast(int64_t count) {
  if (count == 0) {
    VKSPMD_ASSIGN_OR_RETURN(count, AvailableDeviceCount());
  }
  if (count < 1) return absl::InvalidArgumentError(absl::StrCat("cannot open ", count, " devices"));
  VKSPMD_RETURN_IF_ERROR(NoteMeshDevices(count));
  if (devices_ == nullptr || devices_->size() < count) VKSPMD_RETURN_IF_ERROR(Open(count));
  return devices_.get();
}

bool DevicePool::WorkMayStillRun() {
  for (runtime::MeshDevice* device : OpenDevices()) {
    if (device->device().must_not_free()) return true;
  }
  return false;
}

void DevicePool::Close() {
  if (devices_ == nullptr) return;
  SharedScalars::Clear();
  // Executables still holding descriptor pools and pipelines of these devices must go first
  // (reopening to grow the mesh used to leave them behind, to be destroyed after their device).
  if (before_close_) before_close_();
  devices_->CloseDevices();
  closed_messages_ = ValidationMessageCount();
  devices_.reset();
  open_count_ = 0;
}

std::vector<runtime::MeshDevice*> DevicePool::OpenDevices() {
  std::vector<runtime::MeshDevice*> devices;
  if (devices_ == nullptr) return devices;
  for (int d = 0; d < devices_->size(); ++d) devices.push_back(&devices_->device(d));
  return devices;
}

}  // namespace vkspmd::lazy
