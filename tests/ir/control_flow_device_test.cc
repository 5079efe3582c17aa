// while and conditional on a device (lavapipe in CI): the lax.scan loop unrolled, the pred and
// indexed conditionals if-converted (every branch index, out-of-range ones too) and a loop whose
// body branches into another loop, each equal to the CPU reference running the real loops and
// branches; a per-device program whose loop body holds an all-reduce, equal to its unrolled text.
#include <gtest/gtest.h>

#include "src/exec/mesh_executable.h"
#include "tests/exec/device_reference.h"
#include "tests/support/control_flow_programs.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

using ir::DType;
using ir::Literal;

std::unique_ptr<ir::Module> ReadProgram(const std::string& name) {
  return ParseVerified(ControlFlowProgramText(name));
}

class ControlFlowDeviceTest : public DeviceTest {
 protected:
  void SetUp() override { OpenDevices(2); }
};

TEST_F(ControlFlowDeviceTest, ScanAndNestedLoopsMatchTheReference) {
  std::unique_ptr<ir::Module> scan = ReadProgram("scan");
  ASSERT_NE(scan, nullptr);
  std::vector<float> carry(8), xs(40);
  for (int i = 0; i < 8; ++i) carry[i] = 0.25f * i - 1.0f;
  for (int i = 0; i < 40; ++i) xs[i] = static_cast<float>((i * 7) % 11) - 5.0f;
  EXPECT_EQ(DeviceDiffersFromReference(*scan,
                                       {Literal::Create(DType::kF32, {8}, carry),
                                        Literal::Create(DType::kF32, {5, 8}, xs)},
                                       device(0)),
            "");
  std::unique_ptr<ir::Module> nested = ReadProgram("nested");
  ASSERT_NE(nested, nullptr);
  EXPECT_EQ(DeviceDiffersFromReference(
                *nested, {Literal::Create(DType::kF32, {3}, std::vector<float>{0.5f, -1, 1.25f})},
                device(0)),
            "");
}

TEST_F(ControlFlowDeviceTest, ConditionalsTakeTheBranchTheReferenceTakes) {
  std::unique_ptr<ir::Module> cond = ReadProgram("cond");
  ASSERT_NE(cond, nullptr);
  const Literal x = Literal::Create(DType::kF32, {7}, std::vector<float>{1, 2, 3, 4, 5, 6, 7.5});
  const Literal n = Literal::Create(DType::kS32, {7}, std::vector<int32_t>{3, -1, 0, 2, 5, 1, 2});
  for (int64_t predicate : {0, 1}) {
    EXPECT_EQ(DeviceDiffersFromReference(*cond, {IntegerScalar(DType::kPred, predicate), x, n},
                                         device(0)),
              "")
        << predicate;
  }
  std::unique_ptr<ir::Module> index_switch = ReadProgram("switch");
  ASSERT_NE(index_switch, nullptr);
  const Literal y = Literal::Create(DType::kS32, {5}, std::vector<int32_t>{-3, 0, 2, 7, -11});
  for (int64_t index : {0, 1, 2, 3, -1, 1 << 30}) {
    EXPECT_EQ(DeviceDiffersFromReference(*index_switch, {IntegerScalar(DType::kS32, index), y},
                                         device(0)),
              "")
        << index;
  }
}

// A per-device program whose loop body all-reduces (all_reduce_loop.hlo): the oracle is the loop
// unrolled by hand, and the CPU reference running the loop in lock step on both devices.

constexpr char kAllReduceUnrolled[] = R"(HloModule all_reduce_unrolled, num_partitions=2
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %half = f32[4] constant({0.5, -1, 2, 0.25})
  %r1 = f32[4] all-reduce(%x), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add
  %m1 = f32[4] multiply(%r1, %half)
  %r2 = f32[4] all-reduce(%m1), channel_id=2, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add
  %m2 = f32[4] multiply(%r2, %half)
  %r3 = f32[4] all-reduce(%m2), channel_id=3, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add
  ROOT %m3 = f32[4] multiply(%r3, %half)
}
)";

TEST_F(ControlFlowDeviceTest, LoopWithACollectiveInAPerDeviceProgramMatchesItsUnrolledText) {
  std::unique_ptr<ir::Module> loop = ReadProgram("all_reduce_loop");
  std::unique_ptr<ir::Module> unrolled = ParseVerified(kAllReduceUnrolled);
  ASSERT_NE(loop, nullptr);
  ASSERT_NE(unrolled, nullptr);
  const std::vector<std::vector<Literal>> arguments = {
      {Literal::Create(DType::kF32, {4}, std::vector<float>{1, -2, 0.5f, 3})},
      {Literal::Create(DType::kF32, {4}, std::vector<float>{0.25f, 4, -1, 2})}};
  absl::StatusOr<std::vector<Literal>> expected = interp::EvaluateOnDevices(*unrolled, arguments);
  ASSERT_TRUE(expected.ok()) << expected.status();
  absl::StatusOr<std::vector<Literal>> reference = interp::EvaluateOnDevices(*loop, arguments);
  ASSERT_TRUE(reference.ok()) << reference.status();
  absl::StatusOr<std::unique_ptr<exec::MeshExecutable>> mesh =
      exec::MeshExecutable::Compile(*loop, {&device(0), &device(1)});
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  absl::StatusOr<std::vector<Literal>> results = (*mesh)->Run(arguments);
  ASSERT_TRUE(results.ok()) << results.status();
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(CompareLiterals((*results)[d], (*expected)[d], 1e-6), "") << "device " << d;
    EXPECT_EQ(CompareLiterals((*results)[d], (*reference)[d], 1e-6), "") << "device " << d;
  }
}

}  // namespace
}  // namespace vkspmd::testing
