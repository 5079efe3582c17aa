// RuntimeConfig: reading and validating the VKSPMD_* environment.
#include "src/runtime/runtime_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace vkspmd::runtime {
namespace {

class RuntimeConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kNames) unsetenv(name);
  }
  void TearDown() override { SetUp(); }
  static constexpr const char* kNames[] = {"VKSPMD_DEVICES",
                                           "VKSPMD_VISIBLE_DEVICES",
                                           "VKSPMD_ALLOW_CPU_DEVICES",
                                           "VKSPMD_VALIDATION",
                                           "VKSPMD_VALIDATION_SYNC",
                                           "VKSPMD_FORCE_STAGING",
                                           "VKSPMD_DEVICE_MEMORY_BUDGET",
                                           "VKSPMD_SUBMIT_TIMEOUT_MS"};
};

TEST_F(RuntimeConfigTest, DefaultsWhenNothingIsSet) {
  absl::StatusOr<RuntimeConfig> config = RuntimeConfig::FromEnvironment();
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->mesh_device_count, 0);
  EXPECT_FALSE(config->visible_devices.has_value());
  EXPECT_FALSE(config->validation);
  EXPECT_FALSE(config->device_memory_budget.has_value());
}

TEST_F(RuntimeConfigTest, ReadsEveryKnob) {
  setenv("VKSPMD_DEVICES", "8", 1);
  setenv("VKSPMD_VISIBLE_DEVICES", "1, abc", 1);
  setenv("VKSPMD_VALIDATION_SYNC", "1", 1);
  setenv("VKSPMD_FORCE_STAGING", "1", 1);
  setenv("VKSPMD_DEVICE_MEMORY_BUDGET", "512M", 1);
  setenv("VKSPMD_SUBMIT_TIMEOUT_MS", "250", 1);
  absl::StatusOr<RuntimeConfig> config = RuntimeConfig::FromEnvironment();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->mesh_device_count, 8);
  EXPECT_EQ(*config->visible_devices, (std::vector<std::string>{"1", "abc"}));
  EXPECT_TRUE(config->validation) << "sync validation implies validation";
  EXPECT_TRUE(config->force_staging);
  EXPECT_EQ(*config->device_memory_budget, 512ull << 20);
  EXPECT_EQ(config->submit_timeout_ms, 250u);
}

TEST_F(RuntimeConfigTest, EmptyVisibleDevicesMeansNone) {
  setenv("VKSPMD_VISIBLE_DEVICES", "", 1);
  absl::StatusOr<RuntimeConfig> config = RuntimeConfig::FromEnvironment();
  ASSERT_TRUE(config.ok());
  ASSERT_TRUE(config->visible_devices.has_value());
  EXPECT_TRUE(config->visible_devices->empty());
}

TEST_F(RuntimeConfigTest, BadValuesNameTheVariable) {
  setenv("VKSPMD_DEVICES", "zero", 1);
  absl::Status status = RuntimeConfig::FromEnvironment().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("VKSPMD_DEVICES=zero"), absl::string_view::npos) << status;
  unsetenv("VKSPMD_DEVICES");
  setenv("VKSPMD_VALIDATION", "yes", 1);
  EXPECT_EQ(RuntimeConfig::FromEnvironment().status().code(), absl::StatusCode::kInvalidArgument);
  unsetenv("VKSPMD_VALIDATION");
  setenv("VKSPMD_DEVICE_MEMORY_BUDGET", "lots", 1);
  status = RuntimeConfig::FromEnvironment().status();
  EXPECT_NE(status.message().find("VKSPMD_DEVICE_MEMORY_BUDGET"), absl::string_view::npos);
}

TEST(ParseByteSizeTest, AcceptsSuffixes) {
  EXPECT_EQ(*ParseByteSize("4096"), 4096u);
  EXPECT_EQ(*ParseByteSize("64K"), 65536u);
  EXPECT_EQ(*ParseByteSize("2g"), 2ull << 30);
  EXPECT_EQ(*ParseByteSize("3MB"), 3ull << 20);
  EXPECT_FALSE(ParseByteSize("").ok());
  EXPECT_FALSE(ParseByteSize("-1").ok());
  EXPECT_FALSE(ParseByteSize("99999999999999999999G").ok());
}

}  // namespace
}  // namespace vkspmd::runtime
