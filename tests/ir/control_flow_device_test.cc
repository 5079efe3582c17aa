// while and conditional on a device (lavapipe in CI): the lax.scan loop unrolled, the pred and
// indexed conditionals if-converted (every branch index, out-of-range ones too) and a loop whose
// body branches into another loop, each equal to the CPU reference running the real loops and
// branches.
#include <gtest/gtest.h>

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
  void SetUp() override { OpenDevices(1); }
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

}  // namespace
}  // namespace vkspmd::testing
