// Positive controls: deliberate API misuse must reach the validation counter, so a validation
// layer that silently failed to load fails CI instead of passing everything.
#include <gtest/gtest.h>

#include <cstdlib>

#include "src/runtime/buffer.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

class ValidationTest : public DeviceTest {};

TEST_F(ValidationTest, CoreValidationReportsAnInvalidBuffer) {
  OpenDevices(1);
  runtime::MeshDevice& mesh_device = device(0);
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = 256;
  info.usage = 0;  // Invalid: VUID-VkBufferCreateInfo-usage-requiredbitmask.
  VkBuffer buffer = VK_NULL_HANDLE;
  mesh_device.functions().vkCreateBuffer(mesh_device.handle(), &info, nullptr, &buffer);
  if (buffer != VK_NULL_HANDLE) {
    mesh_device.functions().vkDestroyBuffer(mesh_device.handle(), buffer, nullptr);
  }
  ASSERT_GE(validation().count(), 1) << "the validation layer did not report a deliberate misuse";
  bool named = false;
  for (const std::string& message : validation().Messages()) {
    named |= message.find("VUID-VkBufferCreateInfo-usage") != std::string::npos;
  }
  EXPECT_TRUE(named);
  validation().Clear();
}

// Runs only with VKSPMD_VALIDATION_SYNC=1 (the `syncval` ctest label sets it).
TEST_F(ValidationTest, SynchronizationValidationReportsAMissingBarrier) {
  const char* sync = std::getenv("VKSPMD_VALIDATION_SYNC");
  if (sync == nullptr || std::string(sync) != "1") {
    GTEST_SKIP() << "needs VKSPMD_VALIDATION_SYNC=1 (ctest label syncval)";
  }
  OpenDevices(1);
  runtime::MeshDevice& mesh_device = device(0);
  const runtime::DeviceFunctions& vk = mesh_device.functions();
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto first, runtime::Buffer::Create(mesh_device, 256));
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto second, runtime::Buffer::Create(mesh_device, 256));
  VKSPMD_ASSERT_OK_AND_ASSIGN(VkCommandBuffer commands, mesh_device.AllocateCommandBuffer());
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  vk.vkBeginCommandBuffer(commands, &begin);
  vk.vkCmdFillBuffer(commands, first->handle(), 0, 256, 7);
  VkBufferCopy region{0, 0, 256};
  // Read-after-write with no barrier in between: a synchronization hazard.
  vk.vkCmdCopyBuffer(commands, first->handle(), second->handle(), 1, &region);
  vk.vkEndCommandBuffer(commands);
  VKSPMD_ASSERT_OK(mesh_device.SubmitAndWait(commands));
  mesh_device.FreeCommandBuffer(commands);
  ASSERT_GE(validation().count(), 1) << "synchronization validation did not see the hazard";
  bool hazard = false;
  for (const std::string& message : validation().Messages()) {
    hazard |= message.find("SYNC-HAZARD-READ") != std::string::npos;
  }
  EXPECT_TRUE(hazard);
  validation().Clear();
}

}  // namespace
}  // namespace vkspmd::testing
