// Every VKSPMD_* environment knob of the runtime, read in one place. The rest of the runtime takes
// a RuntimeConfig, never the environment, so tests can build configurations directly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace vkspmd::runtime {

struct RuntimeConfig {
  // VKSPMD_DEVICES: how many mesh devices to create; 0 means one per usable physical device.
  int mesh_device_count = 0;
  // VKSPMD_VISIBLE_DEVICES: physical-device indices (as `vkspmd devices` lists them) or UUID
  // prefixes, in the order they become visible. Unset: every device. Set but empty: none.
  std::optional<std::vector<std::string>> visible_devices;
  // VKSPMD_ALLOW_CPU_DEVICES=1: use CPU devices (lavapipe) even when a GPU exists. CPU devices are
  // always used when no GPU is visible.
  bool allow_cpu_devices = false;
  // VKSPMD_VALIDATION=1: enable the Khronos validation layer and count its messages.
  bool validation = false;
  // VKSPMD_VALIDATION_SYNC=1: also enable synchronization validation (implies validation).
  bool synchronization_validation = false;
  // VKSPMD_FORCE_STAGING=1: never use device-local memory that is host-visible, so uploads and
  // downloads take the discrete-GPU staging path even on lavapipe.
  bool force_staging = false;
  // VKSPMD_SEPARATE_LOGICAL_DEVICES=1: give every mesh device its own VkDevice instead of further
  // queues of a shared one, so that a device loss, a submit timeout or the memory budget of one
  // mesh device never touches another (what lavapipe always gives: it has one queue).
  bool separate_logical_devices = false;
  // VKSPMD_SHARED_QUEUES=1: once the compute queues are used up, further mesh devices share the
  // queues of the first VkDevice (round-robin) instead of getting VkDevices of their own, so that
  // every mesh device of a physical device is on one VkDevice (device-side collectives) even on
  // lavapipe's single queue. Ignored with separate_logical_devices.
  bool shared_queues = false;
  // VKSPMD_DEVICE_MEMORY_BUDGET: bytes each logical device may allocate (suffixes K, M, G allowed).
  // Unset: the size of the device's largest device-local heap.
  std::optional<uint64_t> device_memory_budget;
  // VKSPMD_SUBMIT_TIMEOUT_MS: how long a submission may run before DEADLINE_EXCEEDED.
  uint64_t submit_timeout_ms = 60'000;

  static absl::StatusOr<RuntimeConfig> FromEnvironment();

  // One line describing the effective configuration, for logs.
  std::string Describe() const;
};

// Parses "123", "64K", "512M", "2G" (powers of 1024) into bytes.
absl::StatusOr<uint64_t> ParseByteSize(const std::string& text);

}  // namespace vkspmd::runtime
