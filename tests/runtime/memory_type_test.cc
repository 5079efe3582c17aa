// Which device memory the allocator maps for zero-copy host access: cached memory (CPU drivers,
// integrated GPUs) and a resizable BAR as large as the device's memory (host reads of it go
// through staging, runtime::HostReadable), never a small BAR window; and none with force_staging.
#include <gtest/gtest.h>

#include "src/runtime/memory_allocator.h"
#include "src/runtime/vulkan_functions.h"

namespace vkspmd::runtime {
namespace {

constexpr VkMemoryPropertyFlags kLocal = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
constexpr VkMemoryPropertyFlags kHost =
    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
constexpr VkMemoryPropertyFlags kCached = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
constexpr uint64_t kGiB = 1ull << 30;

PhysicalDeviceInfo WithMemory(std::vector<MemoryHeapInfo> heaps,
                              std::vector<MemoryTypeInfo> types) {
  PhysicalDeviceInfo info;
  info.name = "test device";
  info.memory_heaps = std::move(heaps);
  info.memory_types = std::move(types);
  return info;
}

bool DeviceMemoryMapped(const PhysicalDeviceInfo& info, bool force_staging = false) {
  DeviceFunctions functions{};
  MemoryAllocator allocator(functions, VK_NULL_HANDLE, info, kGiB, force_staging, "test");
  return allocator.device_memory_is_mapped();
}

TEST(MemoryTypeTest, CachedDeviceMemoryIsMapped) {  // lavapipe, integrated GPUs.
  EXPECT_TRUE(DeviceMemoryMapped(WithMemory({{8 * kGiB, true}}, {{kLocal | kHost | kCached, 0}})));
}

TEST(MemoryTypeTest, AResizableBarIsMappedButASmallWindowIsNot) {
  // An H100: its BAR type spans the whole device heap.
  EXPECT_TRUE(
      DeviceMemoryMapped(WithMemory({{80 * kGiB, true}, {96 * kGiB, false}},
                                    {{kLocal, 0}, {kLocal | kHost, 0}, {kHost | kCached, 1}})));
  // A classic 256 MiB BAR window: device buffers there would run out long before the device.
  EXPECT_FALSE(
      DeviceMemoryMapped(WithMemory({{16 * kGiB, true}, {32 * kGiB, false}, {kGiB / 4, true}},
                                    {{kLocal, 0}, {kHost | kCached, 1}, {kLocal | kHost, 2}})));
}

TEST(MemoryTypeTest, ForceStagingMapsNoDeviceMemory) {
  EXPECT_FALSE(
      DeviceMemoryMapped(WithMemory({{8 * kGiB, true}}, {{kLocal | kHost | kCached, 0}}), true));
}

}  // namespace
}  // namespace vkspmd::runtime
