// rng-bit-generator on a device (lavapipe in CI): the Philox expansion (ir/rng_expansion.h)
// against the CPU reference, bit for bit, for 32-, 64- and 8-bit outputs, chained generators and
// a counter that carries into its high word; and the expansion itself on the reference.
#include <gtest/gtest.h>

#include "src/interp/evaluator.h"
#include "src/ir/parser.h"
#include "src/ir/rng_expansion.h"
#include "tests/exec/device_reference.h"
#include "tests/exec/literal_compare.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

// Two generators chained through their state (u64[2]: key and counter) and a third from a
// u64[3] state whose counter's low word is about to wrap.
constexpr char kGenerators[] = R"(HloModule rng_bits
ENTRY main {
  state = u64[2]{0} parameter(0)
  wide_state = u64[3]{0} parameter(1)
  first = (u64[2]{0}, u32[7,5]{1,0}) rng-bit-generator(state), algorithm=rng_philox
  bits32 = u32[7,5]{1,0} get-tuple-element(first), index=1
  next = u64[2]{0} get-tuple-element(first), index=0
  second = (u64[2]{0}, u64[3,3]{1,0}) rng-bit-generator(next), algorithm=rng_default
  bits64 = u64[3,3]{1,0} get-tuple-element(second), index=1
  after = u64[2]{0} get-tuple-element(second), index=0
  third = (u64[3]{0}, u8[13]{0}) rng-bit-generator(wide_state), algorithm=rng_philox
  bits8 = u8[13]{0} get-tuple-element(third), index=1
  carried = u64[3]{0} get-tuple-element(third), index=0
  fourth = (u64[3]{0}, s32[9]{0}) rng-bit-generator(carried), algorithm=rng_philox
  signed = s32[9]{0} get-tuple-element(fourth), index=1
  ROOT out = (u32[7,5]{1,0}, u64[3,3]{1,0}, u64[2]{0}, u8[13]{0}, u64[3]{0}, s32[9]{0}) tuple(bits32, bits64, after, bits8, carried, signed)
}
)";

std::vector<ir::Literal> Arguments() {
  return {ir::Literal::Create<uint64_t>(ir::DType::kU64, {2}, {0x0123456789ABCDEFull, 40}),
          ir::Literal::Create<uint64_t>(ir::DType::kU64, {3},
                                        {0xFEDCBA9876543210ull, ~uint64_t{0} - 1, 7})};
}

TEST(RngExpansionTest, TheExpandedModuleEqualsTheGeneratorOnTheReference) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(kGenerators);
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_TRUE(ir::HasRngBitGenerator(**module));
  absl::StatusOr<std::unique_ptr<ir::Module>> expanded = ir::ExpandRngBitGenerators(**module);
  ASSERT_TRUE(expanded.ok()) << expanded.status();
  EXPECT_FALSE(ir::HasRngBitGenerator(**expanded));
  absl::StatusOr<ir::Literal> want = interp::Evaluate(**module, Arguments());
  ASSERT_TRUE(want.ok()) << want.status();
  absl::StatusOr<ir::Literal> got = interp::Evaluate(**expanded, Arguments());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(CompareLiterals(*got, *want, 0), "");
  // The wide state's counter wrapped: 13 one-word outputs take 4 blocks, from 2^64 - 2.
  EXPECT_EQ(want->tuple_elements()[4].Get<uint64_t>(1), 2u);
  EXPECT_EQ(want->tuple_elements()[4].Get<uint64_t>(2), 8u);
}

TEST(RngExpansionTest, ThreeFryIsRefusedNamingTheOp) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(R"(HloModule m
ENTRY main {
  state = u64[2]{0} parameter(0)
  ROOT g = (u64[2]{0}, u32[4]{0}) rng-bit-generator(state), algorithm=rng_three_fry
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<std::unique_ptr<ir::Module>> expanded = ir::ExpandRngBitGenerators(**module);
  ASSERT_FALSE(expanded.ok());
  EXPECT_TRUE(absl::IsUnimplemented(expanded.status()));
  EXPECT_NE(expanded.status().message().find("%g: rng_three_fry is not implemented"),
            std::string::npos)
      << expanded.status();
}

class RngDeviceTest : public DeviceTest {
 protected:
  void SetUp() override { OpenDevices(1); }
};

TEST_F(RngDeviceTest, GeneratorsMatchTheReferenceBitForBit) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(kGenerators);
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(DeviceDiffersFromReference(**module, Arguments(), device(0), 0), "");
}

}  // namespace
}  // namespace vkspmd::testing
