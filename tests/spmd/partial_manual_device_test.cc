// Issue 19's partially manual programs (partial_manual_testdata.h) partitioned and run on
// lavapipe devices with host-staged collectives, one mesh each ([2,2] for the 4-device programs,
// [8] for the 8-device one), against the unpartitioned program on the CPU reference and NumPy.
#include <gtest/gtest.h>

#include "src/base/status_macros.h"
#include "src/exec/mesh_executable.h"
#include "tests/spmd/partial_manual_testdata.h"
#include "tests/spmd/spmd_test_util.h"
#include "tests/support/device_test.h"

namespace vkspmd::spmd::testing {
namespace {

class PartialManualDeviceTest : public vkspmd::testing::DeviceTest {};

TEST_F(PartialManualDeviceTest, ProgramsOnDevicesEqualTheReferenceAndNumPy) {
  OpenDevices(8);
  DeviceRunner run = [&](const ir::Module& partitioned,
                         const std::vector<std::vector<ir::Literal>>& per_device)
      -> absl::StatusOr<std::vector<ir::Literal>> {
    std::vector<runtime::MeshDevice*> devices;
    for (size_t d = 0; d < per_device.size(); ++d) devices.push_back(&device(static_cast<int>(d)));
    VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<exec::MeshExecutable> executable,
                            exec::MeshExecutable::Compile(partitioned, devices));
    return executable->Run(per_device);
  };
  for (const std::string& name : PartialManualProgramNames()) {
    absl::StatusOr<PartialManualProgram> program = ReadPartialManualProgram(name);
    ASSERT_TRUE(program.ok()) << name << ": " << program.status();
    const Mesh mesh = MeshesFor(*program->module).back();
    absl::StatusOr<EquivalenceOutcome> outcome =
        RunEquivalence(*program->module, mesh, 1, run, &program->arguments);
    ASSERT_TRUE(outcome.ok()) << name << ": " << outcome.status();
    // f32 kernels on the device (sine and tanh within a few ulp) against the reference.
    EXPECT_LT(outcome->difference, 2e-4) << name;
    absl::StatusOr<double> from_numpy = RelativeDifference(outcome->actual, program->expected);
    ASSERT_TRUE(from_numpy.ok()) << from_numpy.status();
    EXPECT_LT(*from_numpy, 2e-4) << name;
  }
}

}  // namespace
}  // namespace vkspmd::spmd::testing
