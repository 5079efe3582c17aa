// Sub-allocation of one memory block: best-fit placement with alignment, free-range coalescing,
// and usage figures. Pure bookkeeping over offsets; it knows nothing of Vulkan.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace vkspmd::runtime {

class BlockAllocator {
 public:
  explicit BlockAllocator(uint64_t size);

  // The offset of a new range of `size` bytes aligned to `alignment` (a power of two), or nullopt
  // when no free range can hold it. A size of 0 is treated as 1 so every allocation is distinct.
  std::optional<uint64_t> Allocate(uint64_t size, uint64_t alignment);
  // Returns a range to the free list, merging it with free neighbours. `offset` must come from
  // Allocate and not have been freed since; anything else is ignored and returns false.
  bool Free(uint64_t offset);

  uint64_t size() const { return size_; }
  uint64_t bytes_in_use() const { return bytes_in_use_; }
  bool empty() const { return allocations_.empty(); }
  size_t allocation_count() const { return allocations_.size(); }
  size_t free_range_count() const { return free_ranges_.size(); }
  uint64_t largest_free_range() const;

 private:
  void InsertFreeRange(uint64_t offset, uint64_t size);

  uint64_t size_;
  uint64_t bytes_in_use_ = 0;
  std::map<uint64_t, uint64_t> free_ranges_;  // offset → size, never adjacent to each other.
  std::map<uint64_t, uint64_t> allocations_;  // offset → size.
};

}  // namespace vkspmd::runtime
