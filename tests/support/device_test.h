// The fixture of every device test: opens mesh devices with the validation layer on and fails the
// test on any validation message, including those raised while the devices are torn down.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "src/runtime/device_set.h"
#include "src/runtime/pipeline.h"

namespace vkspmd::testing {

class DeviceTest : public ::testing::Test {
 public:
  // Set once a test left a failed device whose work may still run (lavapipe keeps running a
  // timed-out or lost submission): main then leaves without destroying the statics that work
  // may still use.
  static std::atomic<bool>& WorkMayStillRun();

 protected:
  // Opens `count` mesh devices; `adjust` may change the configuration read from the environment.
  void OpenDevices(int count, const std::function<void(runtime::RuntimeConfig&)>& adjust = nullptr);
  void TearDown() override;

  runtime::MeshDevice& device(int index) { return devices_->device(index); }
  runtime::ValidationMessages& validation() { return *devices_->validation_messages(); }
  bool is_lavapipe() const;

  // A pipeline for an embedded kernel of tests/shaders/ with local size `local_size` (constant_id
  // 0).
  std::unique_ptr<runtime::ComputePipeline> EmbeddedPipeline(
      runtime::MeshDevice& device, const std::string& name,
      std::vector<runtime::BindingAccess> bindings, uint32_t push_constant_bytes,
      uint32_t local_size = 64);

  std::unique_ptr<runtime::DeviceSet> devices_;
};

// Fails the calling test with the status message unless it is OK; returns the value.
#define VKSPMD_ASSERT_OK_AND_ASSIGN(lhs, expression)       \
  auto VKSPMD_CONCAT(status_or_, __LINE__) = (expression); \
  ASSERT_TRUE(VKSPMD_CONCAT(status_or_, __LINE__).ok())    \
      << VKSPMD_CONCAT(status_or_, __LINE__).status();     \
  lhs = std::move(*VKSPMD_CONCAT(status_or_, __LINE__))
#define VKSPMD_CONCAT_INNER(a, b) a##b
#define VKSPMD_CONCAT(a, b) VKSPMD_CONCAT_INNER(a, b)
#define VKSPMD_ASSERT_OK(expression)      \
  do {                                    \
    absl::Status status_ = (expression);  \
    ASSERT_TRUE(status_.ok()) << status_; \
  } while (false)

}  // namespace vkspmd::testing
