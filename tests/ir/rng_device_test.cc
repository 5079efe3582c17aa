// rng-bit-generator on a device (lavapipe in CI): the Philox expansion (ir/rng_expansion.h)
// against the CPU reference, bit for bit, for 32-, 64- and 8-bit outputs, chained generators and
// a counter that carries into its high word; and the expansion itself on the reference. rng
// (uniform floats and integers, normal): in range, with the distribution's mean and spread, a
// seed per op, refused in a loop, and equal to the reference on the device.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

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
  EXPECT_NE(expanded.status().message().find("%g: rng_three_fry runs on the CPU reference only"),
            std::string::npos)
      << expanded.status();
}

// XLA's older rng op as TensorFlow dumps it: two uniform draws of the same shape, a normal one,
// integers in [-3, 7) and doubles.
constexpr char kRng[] = R"(HloModule rng_draws
ENTRY main {
  a = f32[] constant(2)
  b = f32[] constant(5)
  u = f32[40,50]{1,0} rng(a, b), distribution=rng_uniform
  u2 = f32[40,50]{1,0} rng(a, b), distribution=rng_uniform
  mu = f32[] constant(1)
  sigma = f32[] constant(3)
  n = f32[4000]{0} rng(mu, sigma), distribution=rng_normal
  lo = s32[] constant(-3)
  hi = s32[] constant(7)
  i = s32[2000]{0} rng(lo, hi), distribution=rng_uniform
  zero = f64[] constant(0)
  one = f64[] constant(1)
  d = f64[3,5]{1,0} rng(zero, one), distribution=rng_uniform
  ROOT t = (f32[40,50]{1,0}, f32[40,50]{1,0}, f32[4000]{0}, s32[2000]{0}, f64[3,5]{1,0}) tuple(u, u2, n, i, d)
}
)";

// Mean and standard deviation of `values`.
std::pair<double, double> Moments(const ir::Literal& values) {
  double sum = 0, squares = 0;
  const auto count = static_cast<double>(values.ElementCount());
  for (int64_t k = 0; k < values.ElementCount(); ++k) sum += values.GetAsDouble(k);
  const double mean = sum / count;
  for (int64_t k = 0; k < values.ElementCount(); ++k) {
    squares += (values.GetAsDouble(k) - mean) * (values.GetAsDouble(k) - mean);
  }
  return {mean, std::sqrt(squares / count)};
}

TEST(RngTest, DrawsHaveTheirDistributions) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(kRng);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<ir::Literal> result = interp::Evaluate(**module, {});
  ASSERT_TRUE(result.ok()) << result.status();
  const std::vector<ir::Literal>& draws = result->tuple_elements();
  // Uniform on [2, 5): mean 3.5, deviation 3 / sqrt(12) = 0.866; 2000 draws.
  int same = 0;
  for (int64_t k = 0; k < draws[0].ElementCount(); ++k) {
    ASSERT_GE(draws[0].GetAsDouble(k), 2.0);
    ASSERT_LT(draws[0].GetAsDouble(k), 5.0);
    same += draws[0].GetAsDouble(k) == draws[1].GetAsDouble(k);
  }
  EXPECT_LT(same, 5) << "each rng op draws from its own seed";
  auto [mean, deviation] = Moments(draws[0]);
  EXPECT_NEAR(mean, 3.5, 0.06);
  EXPECT_NEAR(deviation, 0.866, 0.04);
  // Normal(1, 3): 4000 draws.
  std::tie(mean, deviation) = Moments(draws[2]);
  EXPECT_NEAR(mean, 1.0, 0.15);
  EXPECT_NEAR(deviation, 3.0, 0.12);
  // Integers in [-3, 7): each of the 10 values, mean 1.5.
  std::set<int64_t> seen;
  for (int64_t k = 0; k < draws[3].ElementCount(); ++k) {
    const int64_t value = draws[3].GetAsInt64(k);
    ASSERT_GE(value, -3);
    ASSERT_LT(value, 7);
    seen.insert(value);
  }
  EXPECT_EQ(seen.size(), 10u);
  EXPECT_NEAR(Moments(draws[3]).first, 1.5, 0.2);
  for (int64_t k = 0; k < draws[4].ElementCount(); ++k) {
    ASSERT_GE(draws[4].GetAsDouble(k), 0.0);
    ASSERT_LT(draws[4].GetAsDouble(k), 1.0);
  }
  // The same module draws the same values again.
  absl::StatusOr<ir::Literal> again = interp::Evaluate(**module, {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(CompareLiterals(*again, *result, 0), "");
}

// In a loop the constant state would repeat the values every iteration (XLA draws new ones).
TEST(RngTest, AWhileWhoseBodyDrawsWithRngIsRefusedNamingIt) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseModule(R"(HloModule m
noise {
  x = f32[4] parameter(0)
  zero = f32[] constant(0)
  one = f32[] constant(1)
  r = f32[4] rng(zero, one), distribution=rng_uniform
  ROOT s = f32[4] add(x, r)
}
body {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  x = f32[4] get-tuple-element(s), index=1
  y = f32[4] fusion(x), kind=kLoop, calls=noise
  ROOT t = (s32[], f32[4]) tuple(i1, y)
}
cond {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(i, three), direction=LT
}
ENTRY main {
  x = f32[4] parameter(0)
  zero = s32[] constant(0)
  start = (s32[], f32[4]) tuple(zero, x)
  ROOT loop = (s32[], f32[4]) while(start), condition=cond, body=body
}
)");
  ASSERT_FALSE(module.ok());
  EXPECT_NE(module.status().message().find("while %loop: %body draws with rng"), std::string::npos)
      << module.status();
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

// rng on the device: the same draws as the reference (floats within 1e-5: the device may fuse
// a + (b - a) u, and its log and cosine differ in the last bits).
TEST_F(RngDeviceTest, RngDrawsMatchTheReference) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(kRng);
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(DeviceDiffersFromReference(**module, {}, device(0), 1e-5), "");
}

}  // namespace
}  // namespace vkspmd::testing
