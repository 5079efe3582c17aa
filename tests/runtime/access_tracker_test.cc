// AccessTracker: exactly the barriers a step needs, per buffer.
#include "src/runtime/access_tracker.h"

#include <gtest/gtest.h>

namespace vkspmd::runtime {
namespace {

VkBuffer Handle(uintptr_t value) { return reinterpret_cast<VkBuffer>(value); }

constexpr VkPipelineStageFlags2 kCompute = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT;
constexpr VkPipelineStageFlags2 kTransfer = VK_PIPELINE_STAGE_2_TRANSFER_BIT;

TEST(AccessTrackerTest, ReadAfterWriteGetsAVisibilityBarrier) {
  AccessTracker tracker;
  EXPECT_TRUE(tracker.Step({{Handle(1), kTransfer, false, true}}).empty());
  std::vector<VkBufferMemoryBarrier2> barriers = tracker.Step({{Handle(1), kCompute, true, false}});
  ASSERT_EQ(barriers.size(), 1u);
  EXPECT_EQ(barriers[0].buffer, Handle(1));
  EXPECT_EQ(barriers[0].srcStageMask, kTransfer);
  EXPECT_EQ(barriers[0].srcAccessMask, VK_ACCESS_2_TRANSFER_WRITE_BIT);
  EXPECT_EQ(barriers[0].dstStageMask, kCompute);
  EXPECT_EQ(barriers[0].dstAccessMask, VK_ACCESS_2_SHADER_READ_BIT);
  EXPECT_TRUE(tracker.Step({{Handle(1), kCompute, true, false}}).empty())
      << "a second read needs no new barrier";
}

TEST(AccessTrackerTest, ReadAtAnotherStageAfterAVisibleWriteGetsItsOwnBarrier) {
  AccessTracker tracker;
  tracker.Step({{Handle(7), kCompute, false, true}});
  EXPECT_EQ(tracker.Step({{Handle(7), kCompute, true, false}}).size(), 1u);
  std::vector<VkBufferMemoryBarrier2> barriers =
      tracker.Step({{Handle(7), kTransfer, true, false}});
  ASSERT_EQ(barriers.size(), 1u) << "the copy must see the dispatch's write too";
  EXPECT_EQ(barriers[0].srcAccessMask, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
  EXPECT_EQ(barriers[0].dstStageMask, kTransfer);
  EXPECT_TRUE(tracker.Step({{Handle(7), kTransfer, true, false}}).empty());
}

TEST(AccessTrackerTest, WriteAfterReadNeedsOnlyAnExecutionDependency) {
  AccessTracker tracker;
  tracker.Step({{Handle(2), kCompute, true, false}});
  tracker.Step({{Handle(2), kTransfer, true, false}});
  std::vector<VkBufferMemoryBarrier2> barriers = tracker.Step({{Handle(2), kCompute, false, true}});
  ASSERT_EQ(barriers.size(), 1u);
  EXPECT_EQ(barriers[0].srcStageMask, kCompute | kTransfer) << "waits for every earlier reader";
  EXPECT_EQ(barriers[0].srcAccessMask, 0u);
}

TEST(AccessTrackerTest, WriteAfterWriteIsOrdered) {
  AccessTracker tracker;
  tracker.Step({{Handle(3), kCompute, false, true}});
  std::vector<VkBufferMemoryBarrier2> barriers = tracker.Step({{Handle(3), kCompute, true, true}});
  ASSERT_EQ(barriers.size(), 1u);
  EXPECT_EQ(barriers[0].dstAccessMask,
            VK_ACCESS_2_SHADER_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
}

TEST(AccessTrackerTest, IndependentBuffersNeedNoBarriers) {
  AccessTracker tracker;
  EXPECT_TRUE(tracker.Step({{Handle(4), kCompute, true, false}, {Handle(5), kCompute, false, true}})
                  .empty());
  EXPECT_TRUE(tracker.Step({{Handle(4), kCompute, true, false}, {Handle(6), kCompute, false, true}})
                  .empty());
  EXPECT_EQ(tracker.Step({{Handle(5), kCompute, true, false}}).size(), 1u);
}

}  // namespace
}  // namespace vkspmd::runtime
