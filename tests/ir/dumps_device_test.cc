// tests/testdata/dumps on a device (lavapipe in CI): every single-device dump, with its fusions
// and calls inlined by the parser, compiles and matches the CPU reference on the stored inputs.
// Floats within 1e-4 relative, as the other device tests (accumulation order and the drivers'
// transcendental functions differ from the reference's).
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "src/io/npy.h"
#include "src/ir/parser.h"
#include "tests/exec/device_reference.h"
#include "tests/exec/testdata_programs.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

// Whether an entry instruction carries a tiled sharding: a module to partition, not one device's.
bool IsGspmd(const ir::Module& module) {
  for (const std::unique_ptr<ir::Instruction>& instruction : module.entry()->instructions()) {
    if (instruction->sharding().has_value() && !instruction->sharding()->IsTileMaximal()) {
      return true;
    }
  }
  return false;
}

class DumpsDeviceTest : public DeviceTest {
 protected:
  void SetUp() override { OpenDevices(1); }
};

TEST_F(DumpsDeviceTest, SingleDeviceDumpsMatchTheReference) {
  int compiled = 0;
  for (const TestdataProgram& program :
       ReadTestdataPrograms(std::string(VKSPMD_TESTDATA_DIR) + "/dumps")) {
    SCOPED_TRACE(program.path.string());
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(program.text);
    ASSERT_TRUE(module.ok()) << module.status();
    if ((*module)->replica_count() * (*module)->partition_count() != 1) continue;
    // GSPMD modules (PyTorch/XLA's SPMD dump) are partitioned by the cli_run_dump_* tests.
    if (IsGspmd(**module)) continue;
    std::vector<ir::Literal> arguments;
    for (int64_t k = 0; k < (*module)->entry()->parameter_count(); ++k) {
      absl::StatusOr<ir::Literal> stored =
          io::ReadNpyFile(absl::StrCat(program.base, ".arg", k, ".npy"));
      ASSERT_TRUE(stored.ok()) << stored.status();
      arguments.push_back(std::move(*stored));
    }
    EXPECT_EQ(DeviceDiffersFromReference(**module, arguments, device(0)), "");
    ++compiled;
  }
  EXPECT_GE(compiled, 4) << "the MLP and transformer dumps run on the device";
}

}  // namespace
}  // namespace vkspmd::testing
