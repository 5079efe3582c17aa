// DeviceTest: validation-checked mesh devices for tests.
#include "tests/support/device_test.h"

#include "absl/strings/str_join.h"
#include "tests/shaders/embedded_shaders.h"

namespace vkspmd::testing {

void DeviceTest::OpenDevices(int count,
                             const std::function<void(runtime::RuntimeConfig&)>& adjust) {
  absl::StatusOr<runtime::RuntimeConfig> config = runtime::RuntimeConfig::FromEnvironment();
  ASSERT_TRUE(config.ok()) << config.status();
  config->mesh_device_count = count;
  if (adjust) adjust(*config);
  ASSERT_TRUE(config->validation) << "device tests run with VKSPMD_VALIDATION=1";
  absl::StatusOr<std::unique_ptr<runtime::DeviceSet>> devices = runtime::DeviceSet::Create(*config);
  ASSERT_TRUE(devices.ok()) << devices.status();
  devices_ = std::move(*devices);
  ASSERT_NE(devices_->validation_messages(), nullptr);
}

std::atomic<bool>& DeviceTest::WorkMayStillRun() {
  static std::atomic<bool> may_run{false};
  return may_run;
}

void DeviceTest::TearDown() {
  if (!devices_) return;
  for (const auto& logical : devices_->logical_devices()) {
    if (logical->must_not_free()) WorkMayStillRun() = true;
  }
  devices_->CloseDevices();
  runtime::ValidationMessages& messages = *devices_->validation_messages();
  EXPECT_EQ(messages.count(), 0) << "validation messages:\n"
                                 << absl::StrJoin(messages.Messages(), "\n");
  devices_.reset();
}

bool DeviceTest::is_lavapipe() const {
  return devices_->device(0).device().physical_device().quirks.loop_iteration_limit != 0;
}

std::unique_ptr<runtime::ComputePipeline> DeviceTest::EmbeddedPipeline(
    runtime::MeshDevice& device, const std::string& name,
    std::vector<runtime::BindingAccess> bindings, uint32_t push_constant_bytes,
    uint32_t local_size) {
  absl::StatusOr<std::span<const uint32_t>> spirv = shaders::EmbeddedShader(name);
  EXPECT_TRUE(spirv.ok()) << spirv.status();
  if (!spirv.ok()) return nullptr;
  runtime::PipelineSpec spec;
  spec.name = name;
  spec.spirv = *spirv;
  spec.bindings = std::move(bindings);
  spec.push_constant_bytes = push_constant_bytes;
  spec.specialization = {local_size};
  absl::StatusOr<std::unique_ptr<runtime::ComputePipeline>> pipeline =
      runtime::ComputePipeline::Create(device.device(), spec);
  EXPECT_TRUE(pipeline.ok()) << pipeline.status();
  return pipeline.ok() ? std::move(*pipeline) : nullptr;
}

}  // namespace vkspmd::testing
