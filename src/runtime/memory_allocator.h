// Device memory of one logical device: large VkDeviceMemory blocks per memory type, sub-allocated
// by BlockAllocator, under a byte budget that vkspmd keeps itself (lavapipe never reports
// out-of-memory). Thread-safe.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/runtime/block_allocator.h"
#include "src/runtime/physical_device.h"
#include "src/runtime/vulkan_functions.h"

namespace vkspmd::runtime {

enum class MemoryUsage {
  kDevice,   // Tensors: device-local; mappable only where the device has device-local host memory.
  kStaging,  // Host-visible coherent memory for uploads and downloads.
};

// What an allocation holds, for memory accounting (FSDP's promise is about parameter and
// optimizer-state bytes per device). Allocations take the tag of the innermost ScopedMemoryTag
// on their thread; a buffer may be re-tagged once its role is known.
enum class MemoryTag : uint8_t {
  kOther,
  kParameter,
  kOptimizerState,
  kActivation,  // A program's buffers: parameters' copies, intermediates, results.
  kTemporary,   // Staging and scratch.
};
inline constexpr size_t kMemoryTagCount = 5;
const char* MemoryTagName(MemoryTag tag);

class ScopedMemoryTag {
 public:
  explicit ScopedMemoryTag(MemoryTag tag);
  ~ScopedMemoryTag();
  ScopedMemoryTag(const ScopedMemoryTag&) = delete;
  ScopedMemoryTag& operator=(const ScopedMemoryTag&) = delete;
  static MemoryTag Current();

 private:
  MemoryTag previous_;
};

struct MemoryAllocation {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint64_t offset = 0;
  uint64_t size = 0;
  std::byte* mapped = nullptr;  // Host address of `offset`, or null when not mappable.
  bool coherent = true;         // False: writes need flushing and reads invalidating.
  // Whether host reads of `mapped` are cached. Uncached (a GPU's BAR) is fine to write but slow
  // to read: read large ranges through a copy to staging memory (runtime::HostReadable).
  bool host_cached = true;
  uint32_t memory_type = 0;
  MemoryUsage usage = MemoryUsage::kDevice;
  MemoryTag tag = MemoryTag::kOther;
};

struct MemoryStatistics {
  uint64_t bytes_in_use = 0;  // Sum of live allocation sizes.
  uint64_t peak_bytes_in_use = 0;
  uint64_t bytes_reserved = 0;  // Sum of VkDeviceMemory block sizes; what the budget limits.
  uint64_t budget = 0;
  size_t block_count = 0;
  size_t allocation_count = 0;
  std::array<uint64_t, kMemoryTagCount> bytes_by_tag{};       // Live bytes per MemoryTag.
  std::array<uint64_t, kMemoryTagCount> peak_bytes_by_tag{};  // Each tag's own peak.
};

class MemoryAllocator {
 public:
  static constexpr uint64_t kDefaultBlockSize = 64ull << 20;

  // `functions` and `device` are borrowed. `label` names the device in error messages.
  MemoryAllocator(const DeviceFunctions& functions, VkDevice device,
                  const PhysicalDeviceInfo& physical_device, uint64_t budget, bool force_staging,
                  std::string label, uint64_t block_size = kDefaultBlockSize);
  ~MemoryAllocator();
  MemoryAllocator(const MemoryAllocator&) = delete;
  MemoryAllocator& operator=(const MemoryAllocator&) = delete;

  // RESOURCE_EXHAUSTED, with the sizes, when the budget, the device or its limits cannot hold it.
  absl::StatusOr<MemoryAllocation> Allocate(const VkMemoryRequirements& requirements,
                                            MemoryUsage usage);
  void Free(const MemoryAllocation& allocation);
  // Moves a live allocation's bytes to another tag.
  void Retag(MemoryAllocation& allocation, MemoryTag tag);
  // Restarts the peaks at the bytes now in use (to measure one phase, e.g. a training step).
  void ResetPeaks();

  MemoryStatistics statistics() const;
  // Whether kDevice allocations are host-mapped (zero-copy uploads and downloads).
  bool device_memory_is_mapped() const { return device_memory_mapped_; }
  // Called when the device failed: from now on nothing is freed (work may still use it).
  void Abandon();

 private:
  struct Block {
    VkDeviceMemory memory = VK_NULL_HANDLE;
    std::byte* mapped = nullptr;
    std::unique_ptr<BlockAllocator> allocator;
  };
  struct Pool {
    uint32_t memory_type = 0;
    bool mapped = false;
    bool coherent = true;
    bool cached = true;
    std::vector<Block> blocks;
  };

  absl::StatusOr<uint32_t> ChooseMemoryType(uint32_t allowed_types, MemoryUsage usage) const;
  absl::StatusOr<Block*> AddBlock(Pool& pool, uint64_t minimum_size);
  void ReleaseBlock(Block& block);
  std::string ExhaustedMessage(uint64_t size) const;
  void CountTagged(MemoryTag tag, int64_t bytes);  // With mutex_ held.

  const DeviceFunctions& functions_;
  VkDevice device_;
  const PhysicalDeviceInfo& physical_device_;
  const bool force_staging_;
  const std::string label_;
  const uint64_t block_size_;
  bool device_memory_mapped_ = false;

  mutable std::mutex mutex_;
  bool abandoned_ = false;
  // By memory type and usage: staging and device pools stay apart even when they share a memory
  // type (lavapipe has one), since only staging blocks are always mapped.
  std::map<std::pair<uint32_t, MemoryUsage>, Pool> pools_;
  MemoryStatistics statistics_;
};

}  // namespace vkspmd::runtime
