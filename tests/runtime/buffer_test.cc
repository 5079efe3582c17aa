// Buffers on 8 mesh devices: host round trips of random data from 1 byte to 64 MiB, on the
// zero-copy path and on the forced staging path, and copies within a device.
#include "src/runtime/buffer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "src/runtime/transfers.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

std::vector<std::byte> RandomBytes(size_t size, uint32_t seed) {
  std::vector<std::byte> bytes(size);
  std::mt19937 random(seed);
  for (size_t i = 0; i < size; i += 4) {
    uint32_t word = random();
    std::memcpy(bytes.data() + i, &word, std::min<size_t>(4, size - i));
  }
  return bytes;
}

class BufferTest : public DeviceTest, public ::testing::WithParamInterface<bool> {
 protected:
  bool staging() const { return GetParam(); }
};

TEST_P(BufferTest, RoundTripsOnEightDevices) {
  OpenDevices(8, [&](runtime::RuntimeConfig& config) { config.force_staging = staging(); });
  const std::vector<uint64_t> sizes = {1,      3,         4,          255,        4097,
                                       65'537, 1'048'583, 16'777'219, 64ull << 20};
  for (int index = 0; index < devices_->size(); ++index) {
    runtime::MeshDevice& mesh_device = device(index);
    EXPECT_EQ(mesh_device.device().memory().device_memory_is_mapped(), !staging());
    for (uint64_t size : sizes) {
      // The largest sizes once per device on the staging path keep the test fast.
      if (staging() && size > (1u << 20) && index % 4 != 0) continue;
      std::vector<std::byte> data = RandomBytes(size, static_cast<uint32_t>(size * 31 + index));
      VKSPMD_ASSERT_OK_AND_ASSIGN(auto buffer, runtime::Buffer::Create(mesh_device, size));
      EXPECT_EQ(buffer->mapped() != nullptr, !staging());
      VKSPMD_ASSERT_OK(runtime::Upload(data, *buffer));
      // Through the device: a copy on the queue, then read back from the copy.
      VKSPMD_ASSERT_OK_AND_ASSIGN(auto copy, runtime::Buffer::Create(mesh_device, size));
      VKSPMD_ASSERT_OK(runtime::CopyWithinDevice(*buffer, 0, *copy, 0, size));
      std::vector<std::byte> back(size);
      VKSPMD_ASSERT_OK(runtime::Download(*copy, 0, back));
      ASSERT_EQ(std::memcmp(data.data(), back.data(), size), 0)
          << "size " << size << " on " << mesh_device.label();
    }
  }
}

TEST_P(BufferTest, PartialTransfersAndCopiesWithinADevice) {
  OpenDevices(2, [&](runtime::RuntimeConfig& config) { config.force_staging = staging(); });
  runtime::MeshDevice& mesh_device = device(1);
  constexpr uint64_t kSize = 1'000'003;
  std::vector<std::byte> data = RandomBytes(kSize, 7);
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto source, runtime::Buffer::Create(mesh_device, kSize));
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto destination, runtime::Buffer::Create(mesh_device, kSize + 5));
  VKSPMD_ASSERT_OK(runtime::Upload(data, *source));
  VKSPMD_ASSERT_OK(runtime::Upload(std::span(data).first(5), *destination, 0));
  VKSPMD_ASSERT_OK(runtime::CopyWithinDevice(*source, 0, *destination, 5, kSize));
  std::vector<std::byte> back(kSize + 5);
  VKSPMD_ASSERT_OK(runtime::Download(*destination, 0, back));
  EXPECT_EQ(std::memcmp(back.data(), data.data(), 5), 0);
  EXPECT_EQ(std::memcmp(back.data() + 5, data.data(), kSize), 0);

  std::vector<std::byte> middle(1000);
  VKSPMD_ASSERT_OK(runtime::Download(*source, 12'345, middle));
  EXPECT_EQ(std::memcmp(middle.data(), data.data() + 12'345, 1000), 0);
}

TEST_P(BufferTest, OutOfRangeTransfersAreErrors) {
  OpenDevices(1, [&](runtime::RuntimeConfig& config) { config.force_staging = staging(); });
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto buffer, runtime::Buffer::Create(device(0), 100));
  std::vector<std::byte> data(64);
  absl::Status status = runtime::Upload(data, *buffer, 40);
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(status.message().find("64 bytes at offset 40"), absl::string_view::npos) << status;
  EXPECT_EQ(runtime::Download(*buffer, 101, std::span(data).first(0)).code(),
            absl::StatusCode::kOutOfRange);
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto other, runtime::Buffer::Create(device(0), 10));
  EXPECT_EQ(runtime::CopyWithinDevice(*buffer, 0, *other, 0, 11).code(),
            absl::StatusCode::kOutOfRange);
}

INSTANTIATE_TEST_SUITE_P(Paths, BufferTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "Staging" : "ZeroCopy";
                         });

}  // namespace
}  // namespace vkspmd::testing
