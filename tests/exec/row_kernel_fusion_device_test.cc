// Multi-output fusion on a device: row kernels absorbing the kernels they read (softmax's masked
// scores, row max, exponentials, sum and quotient as one dispatch storing each), and map kernels
// absorbing producers they read through reshapes; checked against the CPU reference with the
// recorded vkCmdDispatch calls pinned.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "absl/strings/str_replace.h"
#include "src/exec/executable.h"
#include "src/ir/parser.h"
#include "tests/exec/device_reference.h"
#include "tests/exec/dispatch_counter.h"
#include "tests/exec/random_module.h"
#include "tests/exec/testdata_programs.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

std::string TestdataText(const std::string& name) {
  return ReadTestdataText(VKSPMD_TESTDATA_DIR, name);
}

class RowKernelFusionDeviceTest : public DeviceTest {
 protected:
  void SetUp() override { OpenDevices(1); }
  void TearDown() override {
    executable_.reset();  // Its buffers and pipelines before the device.
    DeviceTest::TearDown();
  }

  // Compiles `text`, compares every output with the CPU reference for two random inputs, and
  // returns the kernel plan (its instructions live in module_).
  const codegen::ProgramPlan* CompileAndCompare(const std::string& text) {
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
    EXPECT_TRUE(module.ok()) << module.status();
    if (!module.ok()) return nullptr;
    module_ = std::move(*module);
    for (uint32_t seed : {1u, 2u}) {
      EXPECT_EQ(DeviceDiffersFromReference(*module_, RandomArguments(*module_, seed), device(0)),
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

TEST_F(RowKernelFusionDeviceTest, AForwardSoftmaxKeepingEveryValueIsOneDispatch) {
  // A training step's attention softmax (testdata/fusion/softmax_forward_kept.hlo): causally
  // masked scores, their row max, the exponentials, the broadcast sum and the quotient are all
  // read later (here: returned). Four kernels before row kernels absorbed map kernels and
  // single-pass row reductions; now one row kernel storing the max once per row. Rows of 19 (not
  // a multiple of the lanes).
  const std::string text = TestdataText("fusion/softmax_forward_kept");
  const codegen::ProgramPlan* compiled = CompileAndCompare(text);
  ASSERT_NE(compiled, nullptr);
  const codegen::ProgramPlan& plan = *compiled;
  ASSERT_EQ(plan.kernels.size(), 1u);
  const codegen::KernelPlan& kernel = plan.kernels[0];
  EXPECT_EQ(kernel.kind, codegen::KernelKind::kRows);
  EXPECT_EQ(kernel.root->name(), "sm");
  EXPECT_EQ(kernel.row.rows, 30);
  ASSERT_EQ(kernel.row.reductions.size(), 2u);
  EXPECT_EQ(kernel.row.reductions[0]->name(), "m");  // The max first: the sum reads it.
  EXPECT_EQ(kernel.row.reductions[1]->name(), "sum");
  EXPECT_EQ(kernel.also_stores.size(), 4u);  // masked, m, ex and sumb besides sm.
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 1);
}

TEST_F(RowKernelFusionDeviceTest, AMaxReadInOtherRowsKeepsItsKernel) {
  // The exponentials subtract the max of the reversed row order: a row kernel computing the max
  // of its own row only cannot supply it, so the max keeps its kernel (the rest is one row
  // kernel) and the results still equal the reference.
  const std::string text =
      absl::StrReplaceAll(TestdataText("fusion/softmax_forward_kept"),
                          {{"  mb = f32[2,3,5,19] broadcast(m), dimensions={0,1,2}\n",
                            "  mr = f32[2,3,5] reverse(m), dimensions={2}\n"
                            "  mb = f32[2,3,5,19] broadcast(mr), dimensions={0,1,2}\n"}});
  const codegen::ProgramPlan* compiled = CompileAndCompare(text);
  ASSERT_NE(compiled, nullptr);
  const codegen::ProgramPlan& plan = *compiled;
  ASSERT_EQ(plan.kernels.size(), 3u);  // masked, m, then the rest.
  EXPECT_EQ(plan.kernels[1].root->name(), "m");
  EXPECT_EQ(plan.kernels[1].kind, codegen::KernelKind::kReduction);
  EXPECT_EQ(plan.kernels[2].kind, codegen::KernelKind::kRows);
  ASSERT_EQ(plan.kernels[2].row.reductions.size(), 1u);
  EXPECT_EQ(plan.kernels[2].row.reductions[0]->name(), "sum");
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 3);
}

TEST_F(RowKernelFusionDeviceTest, AProducerReadThroughAReshapeIsStoredByItsReader) {
  // A GELU-like activation g of a [2,4,8] value, kept for the backward pass (returned), and its
  // product with h reshaped to [8,8] for the next dot: kernels index values linearly, so the
  // reshape's kernel computes and stores g too. Two dispatches before.
  const std::string text = R"(HloModule reshape_reader
ENTRY e {
  x = f32[2,4,8] parameter(0)
  b = f32[8] parameter(1)
  bb = f32[2,4,8] broadcast(b), dimensions={2}
  h = f32[2,4,8] add(x, bb)
  half = f32[] constant(0.5)
  halfb = f32[2,4,8] broadcast(half), dimensions={}
  hh = f32[2,4,8] multiply(h, halfb)
  t = f32[2,4,8] tanh(hh)
  g = f32[2,4,8] multiply(t, h)
  p = f32[2,4,8] multiply(g, h)
  r = f32[8,8] reshape(p)
  ROOT out = (f32[2,4,8], f32[8,8]) tuple(g, r)
}
)";
  const codegen::ProgramPlan* compiled = CompileAndCompare(text);
  ASSERT_NE(compiled, nullptr);
  ASSERT_EQ(compiled->kernels.size(), 1u);
  EXPECT_EQ(compiled->kernels[0].root->name(), "r");
  ASSERT_EQ(compiled->kernels[0].also_stores.size(), 1u);
  EXPECT_EQ(compiled->kernels[0].also_stores[0]->name(), "g");
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 1);
}

}  // namespace
}  // namespace vkspmd::testing
