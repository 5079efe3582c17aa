// Best-fit sub-allocation with coalescing.
#include "src/runtime/block_allocator.h"

#include <algorithm>
#include <iterator>

namespace vkspmd::runtime {
namespace {

uint64_t AlignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) & ~(alignment - 1);
}

}  // namespace

BlockAllocator::BlockAllocator(uint64_t size) : size_(size) {
  if (size > 0) free_ranges_.emplace(0, size);
}

std::optional<uint64_t> BlockAllocator::Allocate(uint64_t size, uint64_t alignment) {
  size = std::max<uint64_t>(size, 1);
  alignment = std::max<uint64_t>(alignment, 1);
  auto best = free_ranges_.end();
  uint64_t best_waste = UINT64_MAX;
  for (auto range = free_ranges_.begin(); range != free_ranges_.end(); ++range) {
    uint64_t aligned = AlignUp(range->first, alignment);
    uint64_t end = range->first + range->second;
    if (aligned > end || end - aligned < size) continue;
    uint64_t waste = range->second - size;
    if (waste < best_waste) {
      best = range;
      best_waste = waste;
      if (waste == 0) break;
    }
  }
  if (best == free_ranges_.end()) return std::nullopt;

  uint64_t range_offset = best->first;
  uint64_t range_end = best->first + best->second;
  uint64_t offset = AlignUp(range_offset, alignment);
  free_ranges_.erase(best);
  if (offset > range_offset) free_ranges_.emplace(range_offset, offset - range_offset);
  if (offset + size < range_end) free_ranges_.emplace(offset + size, range_end - offset - size);
  allocations_.emplace(offset, size);
  bytes_in_use_ += size;
  return offset;
}

bool BlockAllocator::Free(uint64_t offset) {
  auto allocation = allocations_.find(offset);
  if (allocation == allocations_.end()) return false;
  uint64_t size = allocation->second;
  allocations_.erase(allocation);
  bytes_in_use_ -= size;
  InsertFreeRange(offset, size);
  return true;
}

void BlockAllocator::InsertFreeRange(uint64_t offset, uint64_t size) {
  auto next = free_ranges_.lower_bound(offset);
  if (next != free_ranges_.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == offset) {
      offset = previous->first;
      size += previous->second;
      free_ranges_.erase(previous);
    }
  }
  if (next != free_ranges_.end() && offset + size == next->first) {
    size += next->second;
    free_ranges_.erase(next);
  }
  free_ranges_.emplace(offset, size);
}

uint64_t BlockAllocator::largest_free_range() const {
  uint64_t largest = 0;
  for (const auto& [offset, size] : free_ranges_) largest = std::max(largest, size);
  return largest;
}

}  // namespace vkspmd::runtime
