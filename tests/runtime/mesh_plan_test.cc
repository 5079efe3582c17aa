// The mesh-device policy: GPUs first, then queues, then logical devices; visibility filtering.
#include "src/runtime/mesh_plan.h"

#include <gtest/gtest.h>

namespace vkspmd::runtime {
namespace {

PhysicalDeviceInfo Device(int index, VkPhysicalDeviceType type, uint32_t queues, std::string uuid) {
  PhysicalDeviceInfo info;
  info.index = index;
  info.name = "device" + std::to_string(index);
  info.type = type;
  info.api_version = VK_API_VERSION_1_3;
  info.compute_queue_family = 0;
  info.compute_queue_count = queues;
  info.queue_families = {{VK_QUEUE_COMPUTE_BIT, queues, 64}};
  info.timeline_semaphore = true;
  info.synchronization2 = true;
  info.device_uuid = std::move(uuid);
  return info;
}

std::vector<std::tuple<int, int, uint32_t>> Placement(const std::vector<MeshDeviceSlot>& slots) {
  std::vector<std::tuple<int, int, uint32_t>> placement;
  for (const MeshDeviceSlot& slot : slots) {
    placement.emplace_back(slot.physical_index, slot.logical_device, slot.queue_index);
  }
  return placement;
}

TEST(MeshPlanTest, OneQueueDeviceGetsOneLogicalDevicePerMeshDevice) {
  PhysicalDeviceInfo lavapipe = Device(0, VK_PHYSICAL_DEVICE_TYPE_CPU, 1, "aa");
  absl::StatusOr<std::vector<MeshDeviceSlot>> slots = PlanMeshDevices({&lavapipe}, 8);
  ASSERT_TRUE(slots.ok()) << slots.status();
  ASSERT_EQ(slots->size(), 8u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ((*slots)[i].mesh_index, i);
    EXPECT_EQ(Placement(*slots)[i], std::make_tuple(0, i, 0u));
  }
}

TEST(MeshPlanTest, GpusFirstThenQueuesThenLogicalDevices) {
  PhysicalDeviceInfo gpu0 = Device(0, VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, 2, "aa");
  PhysicalDeviceInfo gpu1 = Device(1, VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, 3, "bb");
  absl::StatusOr<std::vector<MeshDeviceSlot>> slots = PlanMeshDevices({&gpu0, &gpu1}, 8);
  ASSERT_TRUE(slots.ok()) << slots.status();
  std::vector<std::tuple<int, int, uint32_t>> expected = {
      {0, 0, 0}, {1, 0, 0},             // one per GPU
      {0, 0, 1}, {1, 0, 1}, {1, 0, 2},  // further queues
      {0, 1, 0}, {1, 1, 0}, {0, 2, 0},  // further logical devices
  };
  EXPECT_EQ(Placement(*slots), expected);
}

TEST(MeshPlanTest, SeparateLogicalDevicesSkipFurtherQueues) {
  PhysicalDeviceInfo gpu0 = Device(0, VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, 16, "aa");
  PhysicalDeviceInfo gpu1 = Device(1, VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, 8, "bb");
  absl::StatusOr<std::vector<MeshDeviceSlot>> slots =
      PlanMeshDevices({&gpu0, &gpu1}, 5, /*separate_logical_devices=*/true);
  ASSERT_TRUE(slots.ok()) << slots.status();
  std::vector<std::tuple<int, int, uint32_t>> expected = {
      {0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0}, {0, 2, 0}};
  EXPECT_EQ(Placement(*slots), expected);
}

TEST(MeshPlanTest, SharedQueuesKeepEveryMeshDeviceOnTheFirstLogicalDevice) {
  // Lavapipe-like (one queue) and a GPU of 2 queues: the queues first, then round-robin over
  // them, all on logical device 0; separate_logical_devices overrides.
  PhysicalDeviceInfo cpu = Device(0, VK_PHYSICAL_DEVICE_TYPE_CPU, 1, "aa");
  absl::StatusOr<std::vector<MeshDeviceSlot>> slots =
      PlanMeshDevices({&cpu}, 3, /*separate_logical_devices=*/false, /*shared_queues=*/true);
  ASSERT_TRUE(slots.ok()) << slots.status();
  std::vector<std::tuple<int, int, uint32_t>> expected = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
  EXPECT_EQ(Placement(*slots), expected);
  PhysicalDeviceInfo gpu = Device(0, VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, 2, "bb");
  slots = PlanMeshDevices({&gpu}, 5, false, true);
  ASSERT_TRUE(slots.ok()) << slots.status();
  expected = {{0, 0, 0}, {0, 0, 1}, {0, 0, 0}, {0, 0, 1}, {0, 0, 0}};
  EXPECT_EQ(Placement(*slots), expected);
  slots = PlanMeshDevices({&gpu}, 3, /*separate_logical_devices=*/true, true);
  ASSERT_TRUE(slots.ok()) << slots.status();
  expected = {{0, 0, 0}, {0, 1, 0}, {0, 2, 0}};
  EXPECT_EQ(Placement(*slots), expected);
}

TEST(MeshPlanTest, ZeroMeansOnePerPhysicalDevice) {
  PhysicalDeviceInfo gpu0 = Device(0, VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, 4, "aa");
  PhysicalDeviceInfo gpu1 = Device(1, VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU, 1, "bb");
  absl::StatusOr<std::vector<MeshDeviceSlot>> slots = PlanMeshDevices({&gpu0, &gpu1}, 0);
  ASSERT_TRUE(slots.ok());
  EXPECT_EQ(slots->size(), 2u);
}

TEST(MeshPlanTest, ImpossibleCountsAreErrors) {
  PhysicalDeviceInfo gpu = Device(0, VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, 1, "aa");
  absl::StatusOr<std::vector<MeshDeviceSlot>> slots = PlanMeshDevices({&gpu}, kMaxMeshDevices + 1);
  EXPECT_EQ(slots.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(slots.status().message().find("257"), absl::string_view::npos) << slots.status();
  EXPECT_EQ(PlanMeshDevices({}, 2).status().code(), absl::StatusCode::kNotFound);
}

TEST(MeshPlanTest, CpuDevicesOnlyWithoutGpusOrWhenAllowed) {
  std::vector<PhysicalDeviceInfo> devices = {
      Device(0, VK_PHYSICAL_DEVICE_TYPE_CPU, 1, "aa"),
      Device(1, VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, 1, "bb")};
  RuntimeConfig config;
  absl::StatusOr<std::vector<const PhysicalDeviceInfo*>> selected =
      SelectPhysicalDevices(devices, config);
  ASSERT_TRUE(selected.ok());
  ASSERT_EQ(selected->size(), 1u);
  EXPECT_EQ((*selected)[0]->index, 1);

  config.allow_cpu_devices = true;
  selected = SelectPhysicalDevices(devices, config);
  ASSERT_TRUE(selected.ok());
  ASSERT_EQ(selected->size(), 2u);
  EXPECT_EQ((*selected)[1]->index, 0) << "GPUs come first";

  std::vector<PhysicalDeviceInfo> cpu_only = {Device(0, VK_PHYSICAL_DEVICE_TYPE_CPU, 1, "aa")};
  selected = SelectPhysicalDevices(cpu_only, RuntimeConfig{});
  ASSERT_TRUE(selected.ok());
  EXPECT_EQ(selected->size(), 1u);
}

TEST(MeshPlanTest, VisibleDevicesByIndexOrUuidPrefixInListedOrder) {
  std::vector<PhysicalDeviceInfo> devices = {
      Device(0, VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, 1, "aa11"),
      Device(1, VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, 1, "bb22"),
      Device(2, VK_PHYSICAL_DEVICE_TYPE_CPU, 1, "cc33")};
  RuntimeConfig config;
  config.visible_devices = std::vector<std::string>{"2", "AA"};
  absl::StatusOr<std::vector<const PhysicalDeviceInfo*>> selected =
      SelectPhysicalDevices(devices, config);
  ASSERT_TRUE(selected.ok()) << selected.status();
  ASSERT_EQ(selected->size(), 2u);
  EXPECT_EQ((*selected)[0]->index, 2) << "listed CPU devices are used";
  EXPECT_EQ((*selected)[1]->index, 0);
}

TEST(MeshPlanTest, BadVisibleDevicesAreClearErrors) {
  std::vector<PhysicalDeviceInfo> devices = {
      Device(0, VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, 1, "aa11"),
      Device(1, VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, 1, "aa22")};
  auto select = [&](std::vector<std::string> visible) {
    RuntimeConfig config;
    config.visible_devices = std::move(visible);
    return SelectPhysicalDevices(devices, config).status();
  };
  absl::Status unknown = select({"5"});
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("'5'"), absl::string_view::npos) << unknown;
  EXPECT_NE(unknown.message().find("device0"), absl::string_view::npos) << "lists what exists";
  EXPECT_EQ(select({"aa"}).code(), absl::StatusCode::kInvalidArgument) << "ambiguous prefix";
  EXPECT_EQ(select({"0", "0"}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(select({}).code(), absl::StatusCode::kNotFound);

  devices[1].api_version = VK_API_VERSION_1_1;
  absl::Status unusable = select({"1"});
  EXPECT_EQ(unusable.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(unusable.message().find("1.1.0 < 1.3"), absl::string_view::npos) << unusable;
}

TEST(MeshPlanTest, NoUsableDeviceNamesTheDriverHint) {
  absl::Status status = SelectPhysicalDevices({}, RuntimeConfig{}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(status.message().find("VK_DRIVER_FILES"), absl::string_view::npos) << status;
}

}  // namespace
}  // namespace vkspmd::runtime
