// A device's VkPipelineCache and the store behind it: new pipelines are saved with this device's
// header, saved data comes back through vkCreatePipelineCache, and data whose header names another
// device or driver never reaches the driver.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <vector>

#include "src/runtime/logical_device.h"
#include "src/runtime/pipeline_cache_data.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class RecordingStore : public runtime::PipelineCacheStore {
 public:
  std::optional<std::vector<uint8_t>> Load(const runtime::PhysicalDeviceInfo&) override {
    return data;
  }
  void Save(const runtime::PhysicalDeviceInfo&, std::span<const uint8_t> saved) override {
    saves.emplace_back(saved.begin(), saved.end());
  }
  std::optional<std::vector<uint8_t>> data;
  std::vector<std::vector<uint8_t>> saves;
};

// What each vkCreatePipelineCache call was handed (the initial data's size).
PFN_vkCreatePipelineCache real_create = nullptr;
std::vector<size_t>* initial_sizes = new std::vector<size_t>();
VkResult RecordingCreate(VkDevice device, const VkPipelineCacheCreateInfo* info,
                         const VkAllocationCallbacks* allocator, VkPipelineCache* cache) {
  initial_sizes->push_back(info->initialDataSize);
  return real_create(device, info, allocator, cache);
}

class PipelineCacheStoreTest : public DeviceTest {
 protected:
  runtime::LogicalDevice& logical() { return device(0).device(); }
  void RecordCreates() {
    real_create = logical().functions().vkCreatePipelineCache;
    logical().mutable_functions().vkCreatePipelineCache = &RecordingCreate;
    initial_sizes->clear();
  }
  // Makes one pipeline through the shared-pipeline path that compiles go through.
  void MakePipeline() {
    auto made = logical().SharedPipeline(
        "vector_add_f32", [&]() -> absl::StatusOr<std::unique_ptr<runtime::ComputePipeline>> {
          return EmbeddedPipeline(device(0), "vector_add_f32",
                                  {runtime::BindingAccess::kRead, runtime::BindingAccess::kRead,
                                   runtime::BindingAccess::kWrite},
                                  sizeof(uint32_t));
        });
    ASSERT_TRUE(made.ok()) << made.status();
  }

  // Members, so they outlive the devices (which save to them when TearDown closes them).
  RecordingStore first_;
  RecordingStore second_;
};

TEST_F(PipelineCacheStoreTest, SavesNewPipelinesAndSeedsTheNextDeviceWithThem) {
  OpenDevices(1);
  RecordingStore& first = first_;
  logical().UsePipelineCacheStore(&first);
  logical().SavePipelineCache();
  EXPECT_THAT(first.saves, IsEmpty());  // Nothing new yet.
  MakePipeline();
  logical().SavePipelineCache();
  ASSERT_EQ(first.saves.size(), 1u);
  EXPECT_THAT(runtime::PipelineCacheDataMismatch(first.saves[0], logical().physical_device()),
              IsEmpty());
  logical().SavePipelineCache();
  EXPECT_EQ(first.saves.size(), 1u);  // Unchanged since.

  devices_.reset();
  OpenDevices(1);
  RecordCreates();
  RecordingStore& second = second_;
  second.data = first.saves[0];
  logical().UsePipelineCacheStore(&second);
  EXPECT_THAT(*initial_sizes, ElementsAre(first.saves[0].size()));
  logical().UsePipelineCacheStore(&first);  // The first store stays.
  EXPECT_EQ(initial_sizes->size(), 1u);
}

TEST_F(PipelineCacheStoreTest, ForeignDataNeverReachesTheDriver) {
  OpenDevices(1);
  const runtime::PhysicalDeviceInfo& info = logical().physical_device();
  std::vector<uint8_t> foreign(64, 0);
  auto put = [&](size_t offset, uint32_t value) { std::memcpy(&foreign[offset], &value, 4); };
  put(0, 32);
  put(4, VK_PIPELINE_CACHE_HEADER_VERSION_ONE);
  put(8, info.vendor_id);
  put(12, info.device_id);
  std::memcpy(&foreign[16], info.pipeline_cache_uuid.data(), VK_UUID_SIZE);
  foreign[16] ^= 0xff;  // Another driver build.
  RecordCreates();
  RecordingStore& store = first_;
  store.data = foreign;
  ::testing::internal::CaptureStderr();
  logical().UsePipelineCacheStore(&store);
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(warning, HasSubstr("ignoring the saved pipeline cache"));
  EXPECT_THAT(warning, HasSubstr("pipelineCacheUUID"));
  EXPECT_THAT(*initial_sizes, IsEmpty());
  MakePipeline();  // The device still works, from an empty cache, and saves to the store.
  logical().SavePipelineCache();
  ASSERT_EQ(store.saves.size(), 1u);
  EXPECT_THAT(runtime::PipelineCacheDataMismatch(store.saves[0], info), IsEmpty());
}

}  // namespace
}  // namespace vkspmd::testing
