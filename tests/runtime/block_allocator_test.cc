// BlockAllocator: placement, alignment, reuse, coalescing and fragmentation.
#include "src/runtime/block_allocator.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

namespace vkspmd::runtime {
namespace {

TEST(BlockAllocatorTest, AllocatesAlignedNonOverlappingRanges) {
  BlockAllocator allocator(1024);
  std::optional<uint64_t> a = allocator.Allocate(10, 1);
  std::optional<uint64_t> b = allocator.Allocate(100, 64);
  std::optional<uint64_t> c = allocator.Allocate(7, 16);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(*a, 0u);
  EXPECT_EQ(*b % 64, 0u);
  EXPECT_EQ(*c % 16, 0u);
  EXPECT_GE(*b, 10u);
  EXPECT_TRUE(*c + 7 <= *b || *c >= *b + 100);
  EXPECT_EQ(allocator.bytes_in_use(), 117u);
  EXPECT_EQ(allocator.allocation_count(), 3u);
}

TEST(BlockAllocatorTest, ReusesFreedSpace) {
  BlockAllocator allocator(256);
  std::optional<uint64_t> a = allocator.Allocate(128, 1);
  std::optional<uint64_t> b = allocator.Allocate(128, 1);
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(allocator.Allocate(1, 1)) << "the block is full";
  EXPECT_TRUE(allocator.Free(*a));
  std::optional<uint64_t> again = allocator.Allocate(128, 1);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *a);
}

TEST(BlockAllocatorTest, CoalescesNeighboursInAnyOrder) {
  BlockAllocator allocator(300);
  std::vector<uint64_t> offsets;
  for (int i = 0; i < 3; ++i) offsets.push_back(*allocator.Allocate(100, 1));
  EXPECT_EQ(allocator.free_range_count(), 0u);
  allocator.Free(offsets[0]);
  allocator.Free(offsets[2]);
  EXPECT_EQ(allocator.free_range_count(), 2u);
  EXPECT_EQ(allocator.largest_free_range(), 100u);
  EXPECT_FALSE(allocator.Allocate(200, 1)) << "two separate holes of 100 cannot hold 200";
  allocator.Free(offsets[1]);
  EXPECT_EQ(allocator.free_range_count(), 1u);
  EXPECT_EQ(allocator.largest_free_range(), 300u);
  EXPECT_TRUE(allocator.empty());
  EXPECT_TRUE(allocator.Allocate(300, 1));
}

TEST(BlockAllocatorTest, BestFitKeepsLargeHolesWhole) {
  BlockAllocator allocator(1000);
  uint64_t a = *allocator.Allocate(100, 1);
  uint64_t b = *allocator.Allocate(10, 1);
  uint64_t c = *allocator.Allocate(500, 1);
  (void)b;
  allocator.Free(a);  // A hole of 100 before b; 390 free at the end.
  allocator.Free(c);  // Merges into a hole of 890 at the end.
  uint64_t small = *allocator.Allocate(90, 1);
  EXPECT_EQ(small, a) << "the smallest hole that fits is chosen";
  EXPECT_EQ(allocator.largest_free_range(), 890u);
}

TEST(BlockAllocatorTest, RejectsUnknownAndDoubleFrees) {
  BlockAllocator allocator(64);
  uint64_t a = *allocator.Allocate(8, 8);
  EXPECT_FALSE(allocator.Free(a + 1));
  EXPECT_TRUE(allocator.Free(a));
  EXPECT_FALSE(allocator.Free(a));
  EXPECT_EQ(allocator.bytes_in_use(), 0u);
}

TEST(BlockAllocatorTest, ZeroSizedAllocationsAreDistinct) {
  BlockAllocator allocator(64);
  uint64_t a = *allocator.Allocate(0, 1);
  uint64_t b = *allocator.Allocate(0, 1);
  EXPECT_NE(a, b);
}

TEST(BlockAllocatorTest, RandomWorkloadNeverOverlapsAndFreesToOneRange) {
  constexpr uint64_t kSize = 1 << 20;
  BlockAllocator allocator(kSize);
  std::mt19937 random(1234);
  std::map<uint64_t, uint64_t> live;  // offset → size
  for (int step = 0; step < 4000; ++step) {
    if (live.empty() || random() % 3 != 0) {
      uint64_t size = 1 + random() % 5000;
      uint64_t alignment = uint64_t{1} << (random() % 9);
      std::optional<uint64_t> offset = allocator.Allocate(size, alignment);
      if (!offset) continue;
      ASSERT_EQ(*offset % alignment, 0u);
      ASSERT_LE(*offset + size, kSize);
      auto next = live.lower_bound(*offset);
      if (next != live.end()) {
        ASSERT_LE(*offset + size, next->first);
      }
      if (next != live.begin()) {
        auto previous = std::prev(next);
        ASSERT_LE(previous->first + previous->second, *offset);
      }
      live[*offset] = size;
    } else {
      auto victim = std::next(live.begin(), random() % live.size());
      ASSERT_TRUE(allocator.Free(victim->first));
      live.erase(victim);
    }
    uint64_t in_use = 0;
    for (const auto& [offset, size] : live) in_use += size;
    ASSERT_EQ(allocator.bytes_in_use(), in_use);
  }
  for (const auto& [offset, size] : live) allocator.Free(offset);
  EXPECT_EQ(allocator.free_range_count(), 1u);
  EXPECT_EQ(allocator.largest_free_range(), kSize);
}

}  // namespace
}  // namespace vkspmd::runtime
