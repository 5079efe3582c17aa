// Where a device's VkPipelineCache data comes from and goes to across processes, seen from the
// runtime: an interface the compile cache (src/exec) implements, and the header check that keeps
// another device's or driver's blob away from vkCreatePipelineCache.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "src/runtime/physical_device.h"

namespace vkspmd::runtime {

// Keeps pipeline cache data per physical device. Implementations must be thread-safe: several
// logical devices (one per mesh device on lavapipe) load and save at once.
class PipelineCacheStore {
 public:
  virtual ~PipelineCacheStore() = default;
  // The data saved earlier for this device and driver, or nullopt.
  virtual std::optional<std::vector<uint8_t>> Load(const PhysicalDeviceInfo& device) = 0;
  virtual void Save(const PhysicalDeviceInfo& device, std::span<const uint8_t> data) = 0;
};

// Empty when `data` starts with a VkPipelineCacheHeaderVersionOne for exactly this device
// (header size and version, vendorID, deviceID, pipelineCacheUUID); otherwise why not. Drivers
// are meant to ignore foreign data but some crash on it, so it never reaches them unchecked.
std::string PipelineCacheDataMismatch(std::span<const uint8_t> data,
                                      const PhysicalDeviceInfo& device);

}  // namespace vkspmd::runtime
