// rng-bit-generator with algorithm=rng_three_fry on the CPU reference against the NumPy oracle
// tests/testdata/rng/threefry.py: Threefry-2x32 (20 rounds) checked there against Random123's
// known answers and laid out as XLA's ThreeFryBitGenerator, whose output for state (0, 0) it
// also matches. Every bit and the new state must be equal: 32-, 64-, 16- and 8-bit, signed,
// odd and even dims, a scalar, counters that carry into their high word and wrap at 2^64.
#include <gtest/gtest.h>

#include <string>

#include "fmt/format.h"
#include "src/interp/evaluator.h"
#include "src/io/npy.h"
#include "src/ir/parser.h"

namespace vkspmd::interp {
namespace {

ir::Literal Oracle(const std::string& name, const std::string& part) {
  absl::StatusOr<ir::Literal> literal =
      io::ReadNpyFile(fmt::format("{}/rng/threefry.{}.{}.npy", VKSPMD_TESTDATA_DIR, name, part));
  EXPECT_TRUE(literal.ok()) << literal.status();
  return literal.ok() ? std::move(*literal) : ir::Literal();
}

// One rng_three_fry generator of `bits`, its state the parameter.
std::string GeneratorText(const ir::Shape& bits, const std::string& state = "u64[2]") {
  return fmt::format(
      "HloModule three_fry\nENTRY main {{\n  state = {0}{{0}} parameter(0)\n"
      "  ROOT g = ({0}{{0}}, {1}) rng-bit-generator(state), algorithm=rng_three_fry\n}}\n",
      state, bits.ToString());
}

class ThreeFryTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ThreeFryTest, ReferenceEqualsTheOracle) {
  const ir::Literal state = Oracle(GetParam(), "state");
  const ir::Literal bits = Oracle(GetParam(), "bits");
  const ir::Literal new_state = Oracle(GetParam(), "new_state");
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      ir::ParseAndVerifyModule(GeneratorText(bits.shape()));
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<ir::Literal> result = Evaluate(**module, {state});
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->tuple_elements().size(), 2u);
  const ir::Literal& got_state = result->tuple_elements()[0];
  ASSERT_EQ(got_state.shape(), new_state.shape());
  EXPECT_EQ(got_state.Get<uint64_t>(0), new_state.Get<uint64_t>(0)) << "key";
  EXPECT_EQ(got_state.Get<uint64_t>(1), new_state.Get<uint64_t>(1)) << "counter";
  const ir::Literal& got = result->tuple_elements()[1];
  ASSERT_EQ(got.shape(), bits.shape());
  int64_t wrong = 0;
  for (int64_t i = 0; i < bits.ElementCount(); ++i) {
    if (got.GetAsUint64(i) != bits.GetAsUint64(i)) {
      if (++wrong <= 3) {
        ADD_FAILURE() << "element " << i << ": " << got.GetAsUint64(i) << ", want "
                      << bits.GetAsUint64(i);
      }
    }
  }
  EXPECT_EQ(wrong, 0) << "of " << bits.ElementCount();
}

INSTANTIATE_TEST_SUITE_P(Cases, ThreeFryTest,
                         ::testing::Values("xla_zero", "u32_odd_dims", "u64", "u64_odd", "s32_even",
                                           "u8_odd", "u16_last_dim_even", "u32_scalar"),
                         [](const ::testing::TestParamInfo<std::string>& case_info) {
                           return case_info.param;
                         });

// XLA's expander builds its new state as {key, counter + n}: any other state shape is refused,
// naming the op and the shape. The device expansion refuses rng_three_fry altogether.
TEST(ThreeFryStateTest, AStateOtherThanU64x2IsRefused) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      ir::ParseAndVerifyModule(GeneratorText(ir::Shape(ir::DType::kU32, {4}), "u64[3]"));
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string message = "rng_three_fry takes a u64[2] state (key, counter), not u64[3]";
  absl::StatusOr<ir::Literal> evaluated =
      Evaluate(**module, {ir::Literal::Create<uint64_t>(ir::DType::kU64, {3}, {1, 2, 3})});
  ASSERT_FALSE(evaluated.ok());
  EXPECT_NE(evaluated.status().message().find(message), std::string::npos) << evaluated.status();
}

}  // namespace
}  // namespace vkspmd::interp
