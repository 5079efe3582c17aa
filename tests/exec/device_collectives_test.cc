// Device-side collectives (VKSPMD_DEVICE_COLLECTIVES=1) among mesh devices sharing one VkDevice
// (VKSPMD_SHARED_QUEUES puts lavapipe's 4 devices on one): bit for bit the host path's results
// and the CPU reference's, with one host wait per run instead of one per collective; devices on
// different VkDevices keep the host path.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "src/exec/mesh_executable.h"
#include "src/interp/evaluator.h"
#include "src/ir/parser.h"
#include "tests/exec/random_module.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

// Sums of fractional values of mixed magnitudes: the combination order shows in the bits. Two
// all-reduces (the full group, then pairs) and a gather, each after a kernel (so the host path
// waits for each) and the last followed by one.
constexpr char kProgram[] = R"(
HloModule chain, num_partitions=4
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}
ENTRY %main (x: f32[300]) -> (f32[300], f32[300], f32[1200]) {
  %x = f32[300] parameter(0)
  %n = f32[300] negate(%x)
  %ar1 = f32[300] all-reduce(%n), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%sum
  %m = f32[300] multiply(%ar1, %x)
  %ar2 = f32[300] all-reduce(%m), channel_id=2, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%sum
  %e = f32[300] exponential(%ar2)
  %ag = f32[1200] all-gather(%e), channel_id=3, replica_groups={{0,1,2,3}}, use_global_device_ids=true, dimensions={0}
  %s = f32[1200] sqrt(%ag)
  ROOT %t = (f32[300], f32[300], f32[1200]) tuple(%ar1, %ar2, %s)
}
)";

class DeviceCollectivesTest : public DeviceTest {
 protected:
  void TearDown() override {
    unsetenv("VKSPMD_DEVICE_COLLECTIVES");
    DeviceTest::TearDown();
  }

  struct Outcome {
    std::vector<ir::Literal> results;
    size_t on_device = 0;
    int host_waits = 0;
  };
  // Compiles and runs the program twice (the second run replays the recording) with the device
  // path `enabled` (nullopt: the variable unset, the default).
  Outcome RunWith(std::optional<bool> enabled) {
    if (enabled.has_value()) {
      setenv("VKSPMD_DEVICE_COLLECTIVES", *enabled ? "1" : "0", 1);
    } else {
      unsetenv("VKSPMD_DEVICE_COLLECTIVES");
    }
    Outcome outcome;
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(kProgram);
    EXPECT_TRUE(module.ok()) << module.status();
    if (!module.ok()) return outcome;
    std::vector<runtime::MeshDevice*> devices;
    for (int d = 0; d < 4; ++d) devices.push_back(&device(d));
    absl::StatusOr<std::unique_ptr<exec::MeshExecutable>> executable =
        exec::MeshExecutable::Compile(**module, devices);
    EXPECT_TRUE(executable.ok()) << executable.status();
    if (!executable.ok()) return outcome;
    for (int run = 0; run < 2; ++run) {
      absl::StatusOr<std::vector<ir::Literal>> results = (*executable)->Run(Arguments(**module));
      EXPECT_TRUE(results.ok()) << results.status();
      if (!results.ok()) return outcome;
      outcome.results = std::move(*results);
    }
    outcome.on_device = (*executable)->executable(0).device_collective_count();
    outcome.host_waits = (*executable)->executable(0).last_host_waits();
    return outcome;
  }

  static std::vector<std::vector<ir::Literal>> Arguments(const ir::Module& module) {
    std::vector<std::vector<ir::Literal>> arguments;
    for (int d = 0; d < 4; ++d) {
      std::vector<ir::Literal> values = RandomArguments(module, 77 + d, -1, 1);
      // Mixed magnitudes, so that a different order of the sum rounds differently.
      for (int64_t i = 0; i < values[0].ElementCount(); ++i) {
        values[0].SetFromDouble(i, values[0].GetAsDouble(i) * (d % 2 == 0 ? 1e4 : 1e-3));
      }
      arguments.push_back(std::move(values));
    }
    return arguments;
  }
};

TEST_F(DeviceCollectivesTest, EqualTheHostPathBitForBitWithOneHostWaitPerRun) {
  OpenDevices(4, [](runtime::RuntimeConfig& config) { config.shared_queues = true; });
  for (int d = 1; d < 4; ++d) ASSERT_EQ(device(d).handle(), device(0).handle());
  const Outcome host = RunWith(false);
  const Outcome on_device = RunWith(true);
  ASSERT_EQ(host.results.size(), 4u);
  ASSERT_EQ(on_device.results.size(), 4u);
  EXPECT_EQ(host.on_device, 0u);
  EXPECT_EQ(on_device.on_device, 3u);
  // The host waits after each segment that ends at a collective, and at the end; the device
  // path only at the end.
  EXPECT_EQ(host.host_waits, 4);
  EXPECT_EQ(on_device.host_waits, 1);

  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(kProgram);
  ASSERT_TRUE(module.ok());
  absl::StatusOr<std::vector<ir::Literal>> reference =
      interp::EvaluateOnDevices(**module, Arguments(**module));
  ASSERT_TRUE(reference.ok()) << reference.status();
  for (int d = 0; d < 4; ++d) {
    const auto& want = (*reference)[d].tuple_elements();
    const auto& from_host = host.results[d].tuple_elements();
    const auto& from_device = on_device.results[d].tuple_elements();
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_TRUE(from_host[k].bytes() == want[k].bytes())
          << "host path, device " << d << " output " << k;
      EXPECT_TRUE(from_device[k].bytes() == want[k].bytes())
          << "device path, device " << d << " output " << k;
    }
  }
  // The order matters for these values: reversed, the first sum differs somewhere.
  bool order_matters = false;
  for (int64_t i = 0; i < 300 && !order_matters; ++i) {
    std::vector<std::vector<ir::Literal>> arguments = Arguments(**module);
    float forward = 0, backward = 0;
    for (int d = 0; d < 4; ++d) forward += static_cast<float>(arguments[d][0].GetAsDouble(i));
    for (int d = 3; d >= 0; --d) backward += static_cast<float>(arguments[d][0].GetAsDouble(i));
    order_matters = forward != backward;
  }
  EXPECT_TRUE(order_matters);
}

TEST_F(DeviceCollectivesTest, DevicesOnDifferentVkDevicesKeepTheHostPath) {
  OpenDevices(4, [](runtime::RuntimeConfig& config) {
    config.shared_queues = false;
    config.separate_logical_devices = true;
  });
  const Outcome outcome = RunWith(true);
  ASSERT_EQ(outcome.results.size(), 4u);
  EXPECT_EQ(outcome.on_device, 0u);
  EXPECT_EQ(outcome.host_waits, 4);
}

// The device path is the default: unset, the variable means on where devices share a VkDevice.
TEST_F(DeviceCollectivesTest, AreTheDefaultWhereDevicesShareAVkDevice) {
  OpenDevices(4, [](runtime::RuntimeConfig& config) { config.shared_queues = true; });
  const Outcome by_default = RunWith(std::nullopt);
  ASSERT_EQ(by_default.results.size(), 4u);
  EXPECT_EQ(by_default.on_device, 3u);
  EXPECT_EQ(by_default.host_waits, 1);
}

}  // namespace
}  // namespace vkspmd::testing
