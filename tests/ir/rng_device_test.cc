// rng-bit-generator on a device (lavapipe in CI): the Philox and Threefry expansions
// (ir/rng_expansion.h) against the CPU reference, bit for bit: Philox for 32-, 64- and 8-bit
// outputs, chained generators and a counter that carries into its high word; rng_three_fry for
// u32, u64, s16, u8 and scalar outputs with odd, prime and even paired dims, a counter that wraps
// at 2^64, the new states, jax.random.uniform's float chain over its bits, and that chain
// partitioned over 2 and 4 devices; and the expansions themselves on the reference. rng (uniform
// floats and integers, normal): in range, with the distribution's mean and spread, a seed per op,
// refused in a loop, and equal to the reference on the device.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "src/base/status_macros.h"
#include "src/exec/mesh_executable.h"
#include "src/interp/evaluator.h"
#include "src/ir/parser.h"
#include "src/ir/rng_expansion.h"
#include "tests/exec/device_reference.h"
#include "tests/exec/literal_compare.h"
#include "tests/spmd/spmd_test_util.h"
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

// "" when `text` with its generators expanded evaluates on the reference to what `text` does
// (kept in `want`), else what differs or failed.
std::string ExpansionDiffers(const char* text, const std::vector<ir::Literal>& arguments,
                             ir::Literal& want) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  if (!module.ok() || !ir::HasRngBitGenerator(**module)) return "no generator to expand";
  absl::StatusOr<std::unique_ptr<ir::Module>> expanded = ir::ExpandRngBitGenerators(**module);
  if (!expanded.ok()) return std::string(expanded.status().message());
  if (ir::HasRngBitGenerator(**expanded)) return "a generator is left";
  absl::StatusOr<ir::Literal> reference = interp::Evaluate(**module, arguments);
  absl::StatusOr<ir::Literal> got = interp::Evaluate(**expanded, arguments);
  if (!reference.ok() || !got.ok()) return "evaluation failed";
  want = *std::move(reference);
  return CompareLiterals(*got, want, 0);
}

TEST(RngExpansionTest, TheExpandedModuleEqualsTheGeneratorOnTheReference) {
  ir::Literal want;
  ASSERT_EQ(ExpansionDiffers(kGenerators, Arguments(), want), "");
  // The wide state's counter wrapped: 13 one-word outputs take 4 blocks, from 2^64 - 2.
  EXPECT_EQ(want.tuple_elements()[4].Get<uint64_t>(1), 2u);
  EXPECT_EQ(want.tuple_elements()[4].Get<uint64_t>(2), 8u);
}

// rng_three_fry (interp/rng.cc, itself checked against NumPy and Random123): chained generators
// of u32 with both dims odd (paired along the first largest), u64, a scalar, s16 paired along its
// first even dim, u32 with a prime paired dim; u8 from a counter 3 below 2^64 (its 7 blocks wrap);
// and every new state.
constexpr char kThreeFry[] = R"(HloModule threefry_bits
ENTRY main {
  state = u64[2]{0} parameter(0)
  near_wrap = u64[2]{0} parameter(1)
  a = (u64[2]{0}, u32[7,5]{1,0}) rng-bit-generator(state), algorithm=rng_three_fry
  a_state = u64[2]{0} get-tuple-element(a), index=0
  odd = u32[7,5]{1,0} get-tuple-element(a), index=1
  b = (u64[2]{0}, u64[3,3]{1,0}) rng-bit-generator(a_state), algorithm=rng_three_fry
  b_state = u64[2]{0} get-tuple-element(b), index=0
  wide = u64[3,3]{1,0} get-tuple-element(b), index=1
  c = (u64[2]{0}, u32[]) rng-bit-generator(b_state), algorithm=rng_three_fry
  c_state = u64[2]{0} get-tuple-element(c), index=0
  scalar = u32[] get-tuple-element(c), index=1
  d = (u64[2]{0}, s16[3,4,6]{2,1,0}) rng-bit-generator(c_state), algorithm=rng_three_fry
  d_state = u64[2]{0} get-tuple-element(d), index=0
  shorts = s16[3,4,6]{2,1,0} get-tuple-element(d), index=1
  e = (u64[2]{0}, u32[3,17]{1,0}) rng-bit-generator(d_state), algorithm=rng_three_fry
  e_state = u64[2]{0} get-tuple-element(e), index=0
  prime = u32[3,17]{1,0} get-tuple-element(e), index=1
  f = (u64[2]{0}, u8[13]{0}) rng-bit-generator(near_wrap), algorithm=rng_three_fry
  f_state = u64[2]{0} get-tuple-element(f), index=0
  bytes = u8[13]{0} get-tuple-element(f), index=1
  ROOT out = (u32[7,5]{1,0}, u64[3,3]{1,0}, u32[], s16[3,4,6]{2,1,0}, u32[3,17]{1,0}, u8[13]{0}, u64[2]{0}, u64[2]{0}, u64[2]{0}, u64[2]{0}) tuple(odd, wide, scalar, shorts, prime, bytes, a_state, c_state, e_state, f_state)
}
)";

std::vector<ir::Literal> ThreeFryArguments() {
  return {ir::Literal::Create<uint64_t>(ir::DType::kU64, {2}, {0x0123456789ABCDEFull, 40}),
          ir::Literal::Create<uint64_t>(ir::DType::kU64, {2}, {42, ~uint64_t{0} - 2})};
}

TEST(RngExpansionTest, TheThreeFryExpansionEqualsTheGeneratorOnTheReference) {
  ir::Literal want;
  ASSERT_EQ(ExpansionDiffers(kThreeFry, ThreeFryArguments(), want), "");
  // Blocks drawn (ThreeFryPairing, by hand): u32[7,5] pairs along the 7, 4 x 5 = 20; u64[3,3] 9;
  // the scalar 1; s16[3,4,6] along the 4, 3 x 2 x 6 = 36; u32[3,17] along the 17, 3 x 9 = 27; the
  // u8[13] 7, from 2^64 - 3 to 4.
  const std::vector<ir::Literal>& out = want.tuple_elements();
  EXPECT_EQ(out[6].Get<uint64_t>(1), 40u + 20);
  EXPECT_EQ(out[7].Get<uint64_t>(1), 40u + 20 + 9 + 1);
  EXPECT_EQ(out[8].Get<uint64_t>(1), 40u + 20 + 9 + 1 + 36 + 27);
  EXPECT_EQ(out[9].Get<uint64_t>(1), 4u);
  EXPECT_EQ(out[9].Get<uint64_t>(0), 42u);
}

TEST(RngExpansionTest, ThreeFryWithAnotherStateIsRefusedNamingTheOp) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(R"(HloModule m
ENTRY main {
  state = u64[3]{0} parameter(0)
  ROOT g = (u64[3]{0}, u32[4]{0}) rng-bit-generator(state), algorithm=rng_three_fry
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<std::unique_ptr<ir::Module>> expanded = ir::ExpandRngBitGenerators(**module);
  ASSERT_FALSE(expanded.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(expanded.status()));
  EXPECT_NE(expanded.status().message().find("%g: rng_three_fry takes a u64[2] state"),
            std::string::npos)
      << expanded.status();
}

// jax.random.uniform(key, (6, 10), minval=-2, maxval=3) over rng_three_fry bits, as JAX writes it:
// the top 23 bits as the mantissa of a float in [1, 2), minus 1, scaled, and kept above minval.
constexpr char kUniform[] =
    R"(HloModule jit_uniform, entry_computation_layout={(u64[2]{0})->(f32[6,10]{1,0}, u64[2]{0})}
ENTRY main.20 {
  Arg_0.1 = u64[2]{0} parameter(0)
  rng-bit-generator.2 = (u64[2]{0}, u32[6,10]{1,0}) rng-bit-generator(Arg_0.1), algorithm=rng_three_fry
  get-tuple-element.3 = u32[6,10]{1,0} get-tuple-element(rng-bit-generator.2), index=1
  constant.4 = u32[] constant(9)
  broadcast.5 = u32[6,10]{1,0} broadcast(constant.4), dimensions={}
  shift-right-logical.6 = u32[6,10]{1,0} shift-right-logical(get-tuple-element.3, broadcast.5)
  constant.7 = u32[] constant(1065353216)
  broadcast.8 = u32[6,10]{1,0} broadcast(constant.7), dimensions={}
  or.9 = u32[6,10]{1,0} or(shift-right-logical.6, broadcast.8)
  bitcast-convert.10 = f32[6,10]{1,0} bitcast-convert(or.9)
  constant.11 = f32[] constant(1)
  broadcast.12 = f32[6,10]{1,0} broadcast(constant.11), dimensions={}
  subtract.13 = f32[6,10]{1,0} subtract(bitcast-convert.10, broadcast.12)
  constant.14 = f32[] constant(5)
  broadcast.15 = f32[6,10]{1,0} broadcast(constant.14), dimensions={}
  multiply.16 = f32[6,10]{1,0} multiply(subtract.13, broadcast.15)
  constant.17 = f32[] constant(-2)
  broadcast.18 = f32[6,10]{1,0} broadcast(constant.17), dimensions={}
  add.19 = f32[6,10]{1,0} add(multiply.16, broadcast.18)
  uniform = f32[6,10]{1,0} maximum(broadcast.18, add.19)
  new_key = u64[2]{0} get-tuple-element(rng-bit-generator.2), index=0
  ROOT tuple.20 = (f32[6,10]{1,0}, u64[2]{0}) tuple(uniform, new_key)
}
)";

std::vector<ir::Literal> UniformArguments() {
  return {ir::Literal::Create<uint64_t>(ir::DType::kU64, {2}, {0x9E3779B97F4A7C15ull, 7})};
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

TEST_F(RngDeviceTest, ThreeFryMatchesTheReferenceBitForBit) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(kThreeFry);
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(DeviceDiffersFromReference(**module, ThreeFryArguments(), device(0), 0), "");
}

TEST_F(RngDeviceTest, JaxUniformOverThreeFryMatchesTheReferenceBitForBit) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(kUniform);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<DeviceAndReference> results =
      RunOnDeviceAndReference(**module, UniformArguments(), device(0));
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ(CompareLiterals(results->device, results->reference, 0), "");
  const ir::Literal& uniform = results->reference.tuple_elements()[0];
  for (int64_t k = 0; k < uniform.ElementCount(); ++k) {
    ASSERT_GE(uniform.GetAsDouble(k), -2.0);
    ASSERT_LT(uniform.GetAsDouble(k), 3.0);
  }
  EXPECT_EQ(results->reference.tuple_elements()[1].Get<uint64_t>(1), 7u + 30);
}

// The uniform draws with their result split over 2 and 4 devices (the generator is computed
// whole on each and sliced: op_rules.cc), re-assembled: the same bits as one device's reference.
class RngMeshDeviceTest : public DeviceTest {
 protected:
  void SetUp() override { OpenDevices(4); }
};

TEST_F(RngMeshDeviceTest, PartitionedThreeFryMatchesTheUnpartitionedReference) {
  for (const auto& [devices, spec] : std::vector<std::pair<int64_t, std::string>>{
           {2, "(0, None)"}, {4, "(None, 0)"}, {4, "(0, 1)"}}) {
    const std::vector<int64_t> shape =
        spec == "(0, 1)" ? std::vector<int64_t>{2, 2} : std::vector<int64_t>{devices};
    absl::StatusOr<spmd::Mesh> mesh = spmd::Mesh::Create(shape, {}, {});
    ASSERT_TRUE(mesh.ok()) << mesh.status();
    absl::StatusOr<std::unique_ptr<ir::Module>> module =
        spmd::testing::AnnotatedModule(kUniform, {{"uniform", spec}}, *mesh);
    ASSERT_TRUE(module.ok()) << module.status();
    spmd::testing::DeviceRunner run = [&](const ir::Module& partitioned,
                                          const std::vector<std::vector<ir::Literal>>& per_device)
        -> absl::StatusOr<std::vector<ir::Literal>> {
      std::vector<runtime::MeshDevice*> mesh_devices;
      for (size_t d = 0; d < per_device.size(); ++d) {
        mesh_devices.push_back(&device(static_cast<int>(d)));
      }
      VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<exec::MeshExecutable> executable,
                              exec::MeshExecutable::Compile(partitioned, mesh_devices));
      return executable->Run(per_device);
    };
    const std::vector<ir::Literal> arguments = UniformArguments();
    absl::StatusOr<spmd::testing::EquivalenceOutcome> outcome =
        spmd::testing::RunEquivalence(**module, *mesh, 1, run, &arguments);
    ASSERT_TRUE(outcome.ok()) << spec << ": " << outcome.status();
    EXPECT_EQ(CompareLiterals(outcome->actual, outcome->expected, 0), "") << spec;
  }
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
