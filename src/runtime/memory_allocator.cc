// Block allocation, memory-type choice and budget accounting.
#include "src/runtime/memory_allocator.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/runtime/vulkan_status.h"

namespace vkspmd::runtime {
namespace {

constexpr VkMemoryPropertyFlags kHostMappable =
    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
// Device memory the host maps: CPU drivers and integrated GPUs (cached), and a discrete GPU's
// resizable BAR (uncached: host writes stream fast, host reads crawl over PCIe, 7-80 MB/s on an
// H100; MemoryAllocation::host_cached tells readers to copy through staging memory instead).
// Only a BAR heap as large as the largest device-local heap qualifies: a classic 256 MiB BAR
// window would run out long before the device memory does.
constexpr VkMemoryPropertyFlags kZeroCopyDevice =
    VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | kHostMappable;

bool Has(VkMemoryPropertyFlags flags, VkMemoryPropertyFlags wanted) {
  return (flags & wanted) == wanted;
}

}  // namespace

MemoryAllocator::MemoryAllocator(const DeviceFunctions& functions, VkDevice device,
                                 const PhysicalDeviceInfo& physical_device, uint64_t budget,
                                 bool force_staging, std::string label, uint64_t block_size)
    : functions_(functions),
      device_(device),
      physical_device_(physical_device),
      force_staging_(force_staging),
      label_(std::move(label)),
      block_size_(block_size) {
  statistics_.budget = budget;
  absl::StatusOr<uint32_t> device_type = ChooseMemoryType(UINT32_MAX, MemoryUsage::kDevice);
  device_memory_mapped_ = device_type.ok() && !force_staging_ &&
                          Has(physical_device_.memory_types[*device_type].flags, kZeroCopyDevice);
}

MemoryAllocator::~MemoryAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (abandoned_) return;
  for (auto& [type, pool] : pools_) {
    for (Block& block : pool.blocks) ReleaseBlock(block);
  }
}

void MemoryAllocator::Abandon() {
  std::lock_guard<std::mutex> lock(mutex_);
  abandoned_ = true;
}

absl::StatusOr<uint32_t> MemoryAllocator::ChooseMemoryType(uint32_t allowed_types,
                                                           MemoryUsage usage) const {
  // Preferences, best first; the first memory type matching one of them wins.
  std::vector<VkMemoryPropertyFlags> preferences;
  if (usage == MemoryUsage::kDevice) {
    if (!force_staging_) preferences.push_back(kZeroCopyDevice);
    preferences.push_back(VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    preferences.push_back(0);
  } else {
    preferences.push_back(kHostMappable | VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    preferences.push_back(kHostMappable);
  }
  uint64_t largest_device_heap = 0;
  for (const MemoryHeapInfo& heap : physical_device_.memory_heaps) {
    if (heap.device_local) largest_device_heap = std::max(largest_device_heap, heap.size);
  }
  for (VkMemoryPropertyFlags wanted : preferences) {
    for (uint32_t type = 0; type < physical_device_.memory_types.size(); ++type) {
      const MemoryTypeInfo& info = physical_device_.memory_types[type];
      const bool small_window =
          wanted == kZeroCopyDevice && info.heap_index < physical_device_.memory_heaps.size() &&
          physical_device_.memory_heaps[info.heap_index].size < largest_device_heap;
      if ((allowed_types & (1u << type)) != 0 && Has(info.flags, wanted) && !small_window) {
        return type;
      }
    }
  }
  return absl::FailedPreconditionError(
      absl::StrCat(label_, " has no memory type for ",
                   usage == MemoryUsage::kDevice ? "device" : "host-visible staging",
                   " buffers among the allowed types 0x", absl::Hex(allowed_types)));
}

std::string MemoryAllocator::ExhaustedMessage(uint64_t size) const {
  return absl::StrCat("out of device memory on ", label_, ": allocating ", size,
                      " bytes would exceed the budget of ", statistics_.budget, " bytes (",
                      statistics_.bytes_in_use, " bytes in use, ", statistics_.bytes_reserved,
                      " reserved in ", statistics_.block_count,
                      " blocks; set VKSPMD_DEVICE_MEMORY_BUDGET to change the budget)");
}

absl::StatusOr<MemoryAllocator::Block*> MemoryAllocator::AddBlock(Pool& pool,
                                                                  uint64_t minimum_size) {
  uint64_t room = statistics_.budget - std::min(statistics_.budget, statistics_.bytes_reserved);
  if (minimum_size > room) return absl::ResourceExhaustedError(ExhaustedMessage(minimum_size));
  uint64_t size = std::max(minimum_size, std::min(block_size_, room));
  if (physical_device_.max_memory_allocation_size != 0) {
    size = std::min(size, physical_device_.max_memory_allocation_size);
  }

  VkMemoryAllocateInfo allocate_info{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  allocate_info.allocationSize = size;
  allocate_info.memoryTypeIndex = pool.memory_type;
  Block block;
  if (VkResult result =
          functions_.vkAllocateMemory(device_, &allocate_info, nullptr, &block.memory);
      result != VK_SUCCESS) {
    absl::Status status = VulkanStatus(result, "vkAllocateMemory", label_);
    return absl::Status(status.code(),
                        absl::StrCat(status.message(), " allocating a block of ", size,
                                     " bytes for a request of ", minimum_size, " bytes (",
                                     statistics_.bytes_reserved, " bytes already reserved)"));
  }
  if (pool.mapped) {
    void* address = nullptr;
    if (VkResult result =
            functions_.vkMapMemory(device_, block.memory, 0, VK_WHOLE_SIZE, 0, &address);
        result != VK_SUCCESS) {
      functions_.vkFreeMemory(device_, block.memory, nullptr);
      return VulkanStatus(result, "vkMapMemory", label_);
    }
    block.mapped = static_cast<std::byte*>(address);
  }
  block.allocator = std::make_unique<BlockAllocator>(size);
  statistics_.bytes_reserved += size;
  statistics_.block_count += 1;
  pool.blocks.push_back(std::move(block));
  return &pool.blocks.back();
}

void MemoryAllocator::ReleaseBlock(Block& block) {
  if (block.mapped != nullptr) functions_.vkUnmapMemory(device_, block.memory);
  functions_.vkFreeMemory(device_, block.memory, nullptr);
  statistics_.bytes_reserved -= block.allocator->size();
  statistics_.block_count -= 1;
}

absl::StatusOr<MemoryAllocation> MemoryAllocator::Allocate(const VkMemoryRequirements& requirements,
                                                           MemoryUsage usage) {
  uint64_t size = std::max<uint64_t>(requirements.size, 1);
  if (physical_device_.max_memory_allocation_size != 0 &&
      size > physical_device_.max_memory_allocation_size) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot allocate ", size, " bytes on ", label_, ": the device's largest allocation is ",
        physical_device_.max_memory_allocation_size, " bytes"));
  }
  VKSPMD_ASSIGN_OR_RETURN(const uint32_t type,
                          ChooseMemoryType(requirements.memoryTypeBits, usage));

  std::lock_guard<std::mutex> lock(mutex_);
  Pool& pool = pools_[{type, usage}];
  if (pool.blocks.empty()) {
    VkMemoryPropertyFlags flags = physical_device_.memory_types[type].flags;
    pool.memory_type = type;
    pool.mapped = Has(flags, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) &&
                  (usage == MemoryUsage::kStaging || device_memory_mapped_);
    pool.coherent = Has(flags, VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    pool.cached = Has(flags, VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  }
  Block* chosen = nullptr;
  std::optional<uint64_t> offset;
  for (Block& block : pool.blocks) {
    if ((offset = block.allocator->Allocate(size, requirements.alignment))) {
      chosen = &block;
      break;
    }
  }
  if (chosen == nullptr) {
    VKSPMD_ASSIGN_OR_RETURN(Block * added, AddBlock(pool, size));
    chosen = added;
    offset = chosen->allocator->Allocate(size, requirements.alignment);
  }

  statistics_.bytes_in_use += size;
  statistics_.allocation_count += 1;
  statistics_.peak_bytes_in_use = std::max(statistics_.peak_bytes_in_use, statistics_.bytes_in_use);
  MemoryAllocation allocation;
  allocation.tag =
      usage == MemoryUsage::kStaging ? MemoryTag::kTemporary : ScopedMemoryTag::Current();
  CountTagged(allocation.tag, static_cast<int64_t>(size));
  allocation.memory = chosen->memory;
  allocation.offset = *offset;
  allocation.size = size;
  allocation.mapped = chosen->mapped != nullptr ? chosen->mapped + *offset : nullptr;
  allocation.coherent = pool.coherent;
  allocation.host_cached = pool.cached;
  allocation.memory_type = type;
  allocation.usage = usage;
  return allocation;
}

void MemoryAllocator::CountTagged(MemoryTag tag, int64_t bytes) {
  const size_t index = static_cast<size_t>(tag);
  statistics_.bytes_by_tag[index] += static_cast<uint64_t>(bytes);  // Wraps back for frees.
  statistics_.peak_bytes_by_tag[index] =
      std::max(statistics_.peak_bytes_by_tag[index], statistics_.bytes_by_tag[index]);
}

void MemoryAllocator::Retag(MemoryAllocation& allocation, MemoryTag tag) {
  if (allocation.memory == VK_NULL_HANDLE || allocation.tag == tag) return;
  std::lock_guard<std::mutex> lock(mutex_);
  CountTagged(allocation.tag, -static_cast<int64_t>(allocation.size));
  allocation.tag = tag;
  CountTagged(tag, static_cast<int64_t>(allocation.size));
}

void MemoryAllocator::ResetPeaks() {
  std::lock_guard<std::mutex> lock(mutex_);
  statistics_.peak_bytes_in_use = statistics_.bytes_in_use;
  statistics_.peak_bytes_by_tag = statistics_.bytes_by_tag;
}

namespace {
thread_local MemoryTag current_memory_tag = MemoryTag::kOther;
}  // namespace

const char* MemoryTagName(MemoryTag tag) {
  switch (tag) {
    case MemoryTag::kParameter:
      return "parameter";
    case MemoryTag::kOptimizerState:
      return "optimizer state";
    case MemoryTag::kActivation:
      return "activation";
    case MemoryTag::kTemporary:
      return "temporary";
    default:
      return "other";
  }
}

ScopedMemoryTag::ScopedMemoryTag(MemoryTag tag) : previous_(current_memory_tag) {
  current_memory_tag = tag;
}
ScopedMemoryTag::~ScopedMemoryTag() { current_memory_tag = previous_; }
MemoryTag ScopedMemoryTag::Current() { return current_memory_tag; }

void MemoryAllocator::Free(const MemoryAllocation& allocation) {
  if (allocation.memory == VK_NULL_HANDLE) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (abandoned_) return;
  Pool& pool = pools_[{allocation.memory_type, allocation.usage}];
  for (auto block = pool.blocks.begin(); block != pool.blocks.end(); ++block) {
    if (block->memory != allocation.memory) continue;
    if (!block->allocator->Free(allocation.offset)) return;
    statistics_.bytes_in_use -= allocation.size;
    statistics_.allocation_count -= 1;
    CountTagged(allocation.tag, -static_cast<int64_t>(allocation.size));
    // Keep one empty block per pool for reuse; give the others back to the driver.
    bool another_empty =
        std::any_of(pool.blocks.begin(), pool.blocks.end(), [&](const Block& other) {
          return other.memory != block->memory && other.allocator->empty();
        });
    if (block->allocator->empty() && (another_empty || block->allocator->size() > block_size_)) {
      ReleaseBlock(*block);
      pool.blocks.erase(block);
    }
    return;
  }
}

MemoryStatistics MemoryAllocator::statistics() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return statistics_;
}

}  // namespace vkspmd::runtime
