// The fixture of device tests of what the compiler makes of a program (which kernels, how many
// dispatches): compiles HLO text for one device and checks every output against the CPU reference.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "src/codegen/program_plan.h"
#include "src/exec/executable.h"
#include "src/ir/parser.h"
#include "tests/exec/device_reference.h"
#include "tests/exec/random_module.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {

class CompiledProgramTest : public DeviceTest {
 protected:
  void TearDown() override {
    executable_.reset();  // Its buffers and pipelines before the device.
    DeviceTest::TearDown();
  }

  // Compiles `text` for device(0), compares every output with the CPU reference for two random
  // inputs (RandomArguments of seeds 1 and 2; floats within `relative`, integers exactly), and
  // returns the kernel plan (its instructions live in module_), or null after a failure.
  const codegen::ProgramPlan* CompileAndCompare(const std::string& text, double relative = 1e-4) {
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
    EXPECT_TRUE(module.ok()) << module.status();
    if (!module.ok()) return nullptr;
    module_ = std::move(*module);
    for (uint32_t seed : {1u, 2u}) {
      EXPECT_EQ(DeviceDiffersFromReference(*module_, RandomArguments(*module_, seed), device(0),
                                           relative),
                "")
          << "seed " << seed;
    }
    absl::StatusOr<std::unique_ptr<exec::Executable>> executable =
        exec::Executable::Compile(*module_, device(0));
    EXPECT_TRUE(executable.ok()) << executable.status();
    if (!executable.ok()) return nullptr;
    executable_ = std::move(*executable);
    return &executable_->plan();
  }

  std::unique_ptr<ir::Module> module_;
  std::unique_ptr<exec::Executable> executable_;
};

}  // namespace vkspmd::testing
