// The process-wide persistent compile cache: generated kernels' SPIR-V keyed by their GLSL, and
// each physical device's VkPipelineCache data keyed by device and driver identity, in one private
// directory (docs/runtime.md has the settings).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/exec/cache_entry.h"
#include "src/runtime/physical_device.h"
#include "src/runtime/pipeline_cache_data.h"

namespace vkspmd::exec {

struct CompileCacheOptions {
  std::string directory;  // Empty: no persistent cache.
  bool readonly = false;  // Read entries, never write or evict.
  uint64_t max_bytes = uint64_t{1} << 30;

  // VKSPMD_CACHE_DIR (unset: $XDG_CACHE_HOME/vkspmd, else $HOME/.cache/vkspmd; set but empty:
  // off), VKSPMD_CACHE_READONLY=1, VKSPMD_CACHE_MAX_BYTES (suffixes K, M, G).
  static absl::StatusOr<CompileCacheOptions> FromEnvironment();
};

// Replaces the process's cache; without a call the first compile reads the environment. A
// directory that is refused (see CacheDirectory::Open) is a one-line warning, then no cache.
void ConfigureCompileCache(const CompileCacheOptions& options);
// The directory in use, or empty when the process runs uncached.
std::string CompileCacheDirectory();

// The key of a kernel's SPIR-V: `code` (its GLSL without comment lines) with the compiler's
// identity, vkspmd's version and the cache format. The SPIR-V depends on nothing else: what the
// device changes in a kernel is already in its GLSL.
CacheKey SpirvCacheKey(absl::string_view code);
// The key of a physical device's pipeline cache data: vendor, device, driver id/name/info/version,
// deviceUUID, driverUUID, pipelineCacheUUID, pointer size and vkspmd's version.
CacheKey PipelineCacheKey(const runtime::PhysicalDeviceInfo& device);

// The SPIR-V of the kernel whose comment-free GLSL is `code`: from the cache when it holds a
// sound entry, else made by `compile` and stored. `name` is for VKSPMD_DEBUG's miss lines.
absl::StatusOr<std::vector<uint32_t>> CachedSpirv(
    absl::string_view code, absl::string_view name,
    const std::function<absl::StatusOr<std::vector<uint32_t>>()>& compile);

// The store LogicalDevice::UsePipelineCacheStore takes; it follows ConfigureCompileCache and
// holds nothing while the process runs uncached. Never null; lives as long as the process.
runtime::PipelineCacheStore* DevicePipelineCacheStore();

}  // namespace vkspmd::exec
