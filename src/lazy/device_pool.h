// The mesh devices the lazy runtime runs on, opened on first use. How many: VKSPMD_DEVICES when
// set (a mesh needing more is an error), else the most any mesh created so far needs (the
// largest device id + 1). When a later mesh needs more and nothing lives on the devices, they are
// reopened; the generation counter tells caches that executables of older devices are gone.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "src/lazy/placement.h"
#include "src/runtime/device_set.h"

namespace vkspmd::lazy {

class DevicePool {
 public:
  // Records that a mesh uses device ids below `count`; checks VKSPMD_DEVICES.
  static absl::Status NoteMeshDevices(int64_t count);
  // VKSPMD_DEVICES if set, else the number of usable physical devices.
  static absl::StatusOr<int64_t> AvailableDeviceCount();
  // The most mesh devices any mesh created so far needs (what an open or a grow opens).
  static int64_t WantedDevices();

  // The mesh devices of a placement, by local id. Not thread-safe: the engine's worker calls it.
  absl::StatusOr<std::vector<runtime::MeshDevice*>> DevicesFor(const Placement& placement);
  // Opens the devices if they are not open, with at least `count` mesh devices (0: what
  // VKSPMD_DEVICES or the usable physical devices give). The public DeviceSet::Open.
  absl::StatusOr<runtime::DeviceSet*> OpenAtLeast(int64_t count);
  int64_t generation() const { return generation_; }
  // How many mesh devices are open (0: none). Unlike the rest, any thread may ask (the engine
  // checks on the calling thread whether queued work would open devices).
  int64_t open_count() const { return open_count_.load(); }
  // The open mesh devices (none before first use).
  std::vector<runtime::MeshDevice*> OpenDevices();
  // Validation messages so far, of closed devices too (0 unless VKSPMD_VALIDATION=1); closing
  // the devices first makes teardown messages count.
  int64_t ValidationMessageCount();
  // Whether a device failed while work submitted to it may still run (see
  // runtime::LogicalDevice::must_not_free).
  bool WorkMayStillRun();
  // Runs `before_close` (the owner's clean-up of objects made on these devices: the graph
  // cache's executables), then closes the devices.
  void Close();
  void SetBeforeClose(std::function<void()> before_close) {
    before_close_ = std::move(before_close);
  }

 private:
  absl::Status Open(int64_t needed);

  std::function<void()> before_close_;
  std::unique_ptr<runtime::DeviceSet> devices_;
  int64_t generation_ = 0;
  int64_t closed_messages_ = 0;         // Validation messages of devices closed before.
  std::atomic<int64_t> open_count_{0};  // devices_->size(), or 0.
};

}  // namespace vkspmd::lazy
