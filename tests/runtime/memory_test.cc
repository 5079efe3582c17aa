// Device memory: block sub-allocation and reuse, statistics, the per-device budget, impossible
// requests, and driver out-of-memory, each an error with sizes in the message.
#include <gtest/gtest.h>

#include "src/runtime/buffer.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

class MemoryTest : public DeviceTest {};

TEST_F(MemoryTest, BuffersShareBlocksAndFreedSpaceIsReused) {
  OpenDevices(1);
  runtime::MemoryAllocator& memory = device(0).device().memory();
  std::vector<std::unique_ptr<runtime::Buffer>> buffers;
  for (int i = 0; i < 100; ++i) {
    VKSPMD_ASSERT_OK_AND_ASSIGN(auto buffer, runtime::Buffer::Create(device(0), 1000 + i));
    buffers.push_back(std::move(buffer));
  }
  runtime::MemoryStatistics stats = memory.statistics();
  EXPECT_EQ(stats.block_count, 1u) << "100 small buffers fit in one block";
  EXPECT_EQ(stats.allocation_count, 100u);
  EXPECT_GE(stats.bytes_in_use, 100u * 1000);
  const uint64_t peak = stats.peak_bytes_in_use;
  VkDeviceMemory memory_of_10 = buffers[10]->allocation().memory;
  uint64_t offset_of_10 = buffers[10]->allocation().offset;
  buffers[10].reset();
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto again, runtime::Buffer::Create(device(0), 1000));
  EXPECT_EQ(again->allocation().memory, memory_of_10);
  EXPECT_EQ(again->allocation().offset, offset_of_10) << "the freed range is reused";
  buffers.clear();
  again.reset();
  stats = memory.statistics();
  EXPECT_EQ(stats.bytes_in_use, 0u);
  EXPECT_EQ(stats.allocation_count, 0u);
  EXPECT_EQ(stats.peak_bytes_in_use, peak);
  EXPECT_LE(stats.block_count, 1u) << "at most one empty block is kept";
}

TEST_F(MemoryTest, AllocationsAreCountedByTagWithTheirOwnPeaks) {
  OpenDevices(1);
  runtime::MemoryAllocator& memory = device(0).device().memory();
  auto tagged = [&](runtime::MemoryTag tag) {
    return memory.statistics().bytes_by_tag[static_cast<size_t>(tag)];
  };
  std::unique_ptr<runtime::Buffer> parameter, state, untagged;
  {
    runtime::ScopedMemoryTag scope(runtime::MemoryTag::kParameter);
    VKSPMD_ASSERT_OK_AND_ASSIGN(parameter, runtime::Buffer::Create(device(0), 4096));
    {
      runtime::ScopedMemoryTag inner(runtime::MemoryTag::kOptimizerState);
      VKSPMD_ASSERT_OK_AND_ASSIGN(state, runtime::Buffer::Create(device(0), 8192));
    }
  }
  VKSPMD_ASSERT_OK_AND_ASSIGN(untagged, runtime::Buffer::Create(device(0), 100));
  EXPECT_EQ(parameter->tag(), runtime::MemoryTag::kParameter);
  EXPECT_EQ(state->tag(), runtime::MemoryTag::kOptimizerState);
  EXPECT_EQ(untagged->tag(), runtime::MemoryTag::kOther) << "the scopes ended";
  const uint64_t parameter_bytes = tagged(runtime::MemoryTag::kParameter);
  EXPECT_GE(parameter_bytes, 4096u);
  EXPECT_GE(tagged(runtime::MemoryTag::kOptimizerState), 8192u);
  // Re-tagging moves the bytes; freeing removes them; the tag's peak remains.
  untagged->set_tag(runtime::MemoryTag::kParameter);
  EXPECT_EQ(tagged(runtime::MemoryTag::kParameter), parameter_bytes + untagged->allocation().size);
  EXPECT_EQ(tagged(runtime::MemoryTag::kOther), 0u);
  parameter.reset();
  untagged.reset();
  runtime::MemoryStatistics stats = memory.statistics();
  EXPECT_EQ(stats.bytes_by_tag[static_cast<size_t>(runtime::MemoryTag::kParameter)], 0u);
  EXPECT_GE(stats.peak_bytes_by_tag[static_cast<size_t>(runtime::MemoryTag::kParameter)],
            parameter_bytes);
  memory.ResetPeaks();
  EXPECT_EQ(
      memory.statistics().peak_bytes_by_tag[static_cast<size_t>(runtime::MemoryTag::kParameter)],
      0u);
  EXPECT_STREQ(runtime::MemoryTagName(runtime::MemoryTag::kOptimizerState), "optimizer state");
}

TEST_F(MemoryTest, FragmentedSpaceCoalescesForALargeBuffer) {
  OpenDevices(1, [](runtime::RuntimeConfig& config) { config.device_memory_budget = 1 << 20; });
  std::vector<std::unique_ptr<runtime::Buffer>> buffers;
  for (int i = 0; i < 16; ++i) {
    VKSPMD_ASSERT_OK_AND_ASSIGN(auto buffer, runtime::Buffer::Create(device(0), 64 << 10));
    buffers.push_back(std::move(buffer));
  }
  EXPECT_EQ(runtime::Buffer::Create(device(0), 64 << 10).status().code(),
            absl::StatusCode::kResourceExhausted)
      << "the 1 MiB budget is full";
  for (int i = 0; i < 16; i += 2) buffers[i].reset();  // Eight 64 KiB holes.
  EXPECT_EQ(runtime::Buffer::Create(device(0), 128 << 10).status().code(),
            absl::StatusCode::kResourceExhausted)
      << "no hole holds 128 KiB";
  for (int i = 1; i < 8; i += 2) buffers[i].reset();  // The first half is now one free range.
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto large, runtime::Buffer::Create(device(0), 512 << 10));
  EXPECT_EQ(device(0).device().memory().statistics().block_count, 1u);
}

TEST_F(MemoryTest, BudgetExhaustionIsResourceExhaustedWithSizes) {
  // Budgets are per VkDevice: each mesh device gets its own even on a GPU with many queues.
  OpenDevices(2, [](runtime::RuntimeConfig& config) {
    config.device_memory_budget = 8 << 20;
    config.separate_logical_devices = true;
  });
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto first, runtime::Buffer::Create(device(1), 6 << 20));
  absl::Status status = runtime::Buffer::Create(device(1), 4 << 20).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(status.message().find("4194304 bytes"), absl::string_view::npos) << status;
  EXPECT_NE(status.message().find("budget of 8388608 bytes"), absl::string_view::npos) << status;
  EXPECT_NE(status.message().find("logical device 1"), absl::string_view::npos) << status;
  // The budget is per device: device 0 is unaffected.
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto other, runtime::Buffer::Create(device(0), 6 << 20));
  // Nothing was lost: freeing makes room again.
  first.reset();
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto again, runtime::Buffer::Create(device(1), 4 << 20));
}

TEST_F(MemoryTest, ImpossibleRequestIsAnError) {
  OpenDevices(1);
  uint64_t largest = device(0).device().physical_device().max_memory_allocation_size;
  ASSERT_GT(largest, 0u);
  absl::Status status = runtime::Buffer::Create(device(0), largest + 4096).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_NE(status.message().find(std::to_string(largest)), absl::string_view::npos) << status;
}

// A driver that reports VK_ERROR_OUT_OF_DEVICE_MEMORY (lavapipe never does, so a fake does).
VKAPI_ATTR VkResult VKAPI_CALL FailingAllocateMemory(VkDevice, const VkMemoryAllocateInfo*,
                                                     const VkAllocationCallbacks*,
                                                     VkDeviceMemory*) {
  return VK_ERROR_OUT_OF_DEVICE_MEMORY;
}

TEST_F(MemoryTest, DriverOutOfMemoryIsResourceExhausted) {
  OpenDevices(1);
  device(0).device().mutable_functions().vkAllocateMemory = &FailingAllocateMemory;
  absl::Status status = runtime::Buffer::Create(device(0), 1024).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(status.message().find("VK_ERROR_OUT_OF_DEVICE_MEMORY"), absl::string_view::npos);
  EXPECT_NE(status.message().find("vkAllocateMemory"), absl::string_view::npos) << status;
  EXPECT_NE(status.message().find("for a request of 1024 bytes"), absl::string_view::npos)
      << status;
  EXPECT_FALSE(device(0).device().failed()) << "out of memory does not fail the device";
}

}  // namespace
}  // namespace vkspmd::testing
