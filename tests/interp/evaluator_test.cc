// Per-op evaluator edge cases: rank 0 and rank 5, size-1 and zero-size dims, negative zero,
// NaN/Inf propagation, integer wrap-around, integer division by zero, shifts, conversions.
#include "src/interp/evaluator.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "src/ir/parser.h"

namespace vkspmd::interp {
namespace {

using ir::DType;
using ir::Literal;

// Evaluates "ENTRY %e (...) { BODY }" with the given parameter list and arguments.
Literal RunEntry(std::string_view signature, std::string_view body,
                 std::vector<Literal> arguments) {
  const std::string text = std::string("HloModule t\n\nENTRY %e ") + std::string(signature) +
                           " {\n" + std::string(body) + "\n}\n";
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  EXPECT_TRUE(module.ok()) << module.status() << "\n" << text;
  if (!module.ok()) return Literal();
  absl::StatusOr<Literal> result = Evaluate(**module, arguments);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : Literal();
}

Literal F32(std::vector<int64_t> dims, std::vector<float> values) {
  return Literal::Create<float>(DType::kF32, std::move(dims), values);
}
Literal S32(std::vector<int64_t> dims, std::vector<int32_t> values) {
  return Literal::Create<int32_t>(DType::kS32, std::move(dims), values);
}
Literal U32(std::vector<int64_t> dims, std::vector<uint32_t> values) {
  return Literal::Create<uint32_t>(DType::kU32, std::move(dims), values);
}

template <typename T>
std::vector<T> Values(const Literal& literal) {
  return std::vector<T>(literal.data<T>(), literal.data<T>() + literal.ElementCount());
}

constexpr int32_t kIntMin = std::numeric_limits<int32_t>::min();
constexpr int32_t kIntMax = std::numeric_limits<int32_t>::max();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(EvaluatorTest, RankZero) {
  Literal result = RunEntry("(a: f32[], b: f32[]) -> f32[]",
                            "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
                            "  ROOT %m = f32[] multiply(f32[] %a, f32[] %b)",
                            {F32({}, {3}), F32({}, {-2})});
  EXPECT_EQ(Values<float>(result), std::vector<float>{-6});
}

TEST(EvaluatorTest, RankFiveReduce) {
  std::vector<float> values(24);
  for (int i = 0; i < 24; ++i) values[i] = static_cast<float>(i);
  const std::string text = R"hlo(HloModule t
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %e (p: f32[1,2,1,3,4]) -> f32[3] {
  %p = f32[1,2,1,3,4]{4,3,2,1,0} parameter(0)
  %t = f32[4,3,1,2,1]{4,3,2,1,0} transpose(f32[1,2,1,3,4]{4,3,2,1,0} %p), dimensions={4,3,2,1,0}
  %z = f32[] constant(0)
  ROOT %r = f32[3]{0} reduce(f32[4,3,1,2,1]{4,3,2,1,0} %t, f32[] %z), dimensions={0,2,3,4}, to_apply=%add
})hlo";
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<Literal> result = Evaluate(**module, {F32({1, 2, 1, 3, 4}, values)});
  ASSERT_TRUE(result.ok()) << result.status();
  // Element (j, k) = 12 j + 4 * row + k; summing j in 0..1, k in 0..3 gives 8 * 4 row + 60.
  EXPECT_EQ(Values<float>(*result), (std::vector<float>{60, 92, 124}));
}

TEST(EvaluatorTest, ZeroSizeDims) {
  const std::string text = R"hlo(HloModule t
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %e (p: f32[3,0], q: f32[0,2]) -> (f32[3], f32[3,2], f32[3,2], f32[0,2]) {
  %p = f32[3,0]{1,0} parameter(0)
  %q = f32[0,2]{1,0} parameter(1)
  %init = f32[] constant(7)
  %r = f32[3]{0} reduce(f32[3,0]{1,0} %p, f32[] %init), dimensions={1}, to_apply=%add
  %d = f32[3,2]{1,0} dot(f32[3,0]{1,0} %p, f32[0,2]{1,0} %q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %c = f32[3,2]{1,0} concatenate(f32[3,0]{1,0} %p, f32[3,2]{1,0} %d), dimensions={1}
  %n = f32[0,2]{1,0} negate(f32[0,2]{1,0} %q)
  ROOT %t = (f32[3]{0}, f32[3,2]{1,0}, f32[3,2]{1,0}, f32[0,2]{1,0}) tuple(f32[3]{0} %r, f32[3,2]{1,0} %d, f32[3,2]{1,0} %c, f32[0,2]{1,0} %n)
})hlo";
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<Literal> result = Evaluate(
      **module, {Literal(ir::Shape(DType::kF32, {3, 0})), Literal(ir::Shape(DType::kF32, {0, 2}))});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(Values<float>(result->tuple_elements()[0]), (std::vector<float>{7, 7, 7}));
  EXPECT_EQ(Values<float>(result->tuple_elements()[1]), std::vector<float>(6, 0));
  EXPECT_EQ(Values<float>(result->tuple_elements()[2]), std::vector<float>(6, 0));
  EXPECT_EQ(result->tuple_elements()[3].ElementCount(), 0);
}

TEST(EvaluatorTest, SizeOneDimsBroadcastAndReshape) {
  Literal result = RunEntry("(p: f32[1,3]) -> f32[2,3,1]",
                            "  %p = f32[1,3]{1,0} parameter(0)\n"
                            "  %r = f32[3]{0} reshape(f32[1,3]{1,0} %p)\n"
                            "  ROOT %b = f32[2,3,1]{2,1,0} broadcast(f32[3]{0} %r), dimensions={1}",
                            {F32({1, 3}, {1, 2, 3})});
  EXPECT_EQ(Values<float>(result), (std::vector<float>{1, 2, 3, 1, 2, 3}));
}

TEST(EvaluatorTest, NegativeZero) {
  Literal result = RunEntry(
      "(a: f32[2], b: f32[2]) -> (f32[2], f32[2], f32[2], f32[2])",
      "  %a = f32[2]{0} parameter(0)\n  %b = f32[2]{0} parameter(1)\n"
      "  %n = f32[2]{0} negate(f32[2]{0} %a)\n"
      "  %max = f32[2]{0} maximum(f32[2]{0} %a, f32[2]{0} %b)\n"
      "  %min = f32[2]{0} minimum(f32[2]{0} %a, f32[2]{0} %b)\n"
      "  %sign = f32[2]{0} sign(f32[2]{0} %b)\n"
      "  ROOT %t = (f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}) tuple(f32[2]{0} %n, f32[2]{0} "
      "%max, f32[2]{0} %min, f32[2]{0} %sign)",
      {F32({2}, {0.0f, 0.0f}), F32({2}, {-0.0f, -0.0f})});
  EXPECT_TRUE(std::signbit(result.tuple_elements()[0].Get<float>(0)));
  EXPECT_FALSE(std::signbit(result.tuple_elements()[1].Get<float>(0)));  // max(+0, -0) = +0
  EXPECT_TRUE(std::signbit(result.tuple_elements()[2].Get<float>(0)));   // min(+0, -0) = -0
  EXPECT_TRUE(std::signbit(result.tuple_elements()[3].Get<float>(0)));   // sign(-0) = -0
}

TEST(EvaluatorTest, NanAndInfPropagate) {
  Literal result = RunEntry(
      "(a: f32[4], b: f32[4]) -> (f32[4], f32[4], pred[4], pred[4], f32[4])",
      "  %a = f32[4]{0} parameter(0)\n  %b = f32[4]{0} parameter(1)\n"
      "  %add = f32[4]{0} add(f32[4]{0} %a, f32[4]{0} %b)\n"
      "  %max = f32[4]{0} maximum(f32[4]{0} %a, f32[4]{0} %b)\n"
      "  %eq = pred[4]{0} compare(f32[4]{0} %a, f32[4]{0} %b), direction=EQ\n"
      "  %ne = pred[4]{0} compare(f32[4]{0} %a, f32[4]{0} %b), direction=NE\n"
      "  %div = f32[4]{0} divide(f32[4]{0} %a, f32[4]{0} %b)\n"
      "  ROOT %t = (f32[4]{0}, f32[4]{0}, pred[4]{0}, pred[4]{0}, f32[4]{0}) tuple(f32[4]{0} "
      "%add, f32[4]{0} %max, pred[4]{0} %eq, pred[4]{0} %ne, f32[4]{0} %div)",
      {F32({4}, {kInf, kNaN, 1, 0}), F32({4}, {-kInf, 1, kNaN, 0})});
  const auto& t = result.tuple_elements();
  EXPECT_TRUE(std::isnan(t[0].Get<float>(0)));  // inf + -inf
  EXPECT_TRUE(std::isnan(t[0].Get<float>(1)));
  EXPECT_TRUE(std::isnan(t[1].Get<float>(1)));  // max(nan, 1)
  EXPECT_TRUE(std::isnan(t[1].Get<float>(2)));  // max(1, nan)
  EXPECT_EQ(Values<uint8_t>(t[2]), (std::vector<uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(Values<uint8_t>(t[3]), (std::vector<uint8_t>{1, 1, 1, 0}));
  EXPECT_TRUE(std::isnan(t[4].Get<float>(3)));  // 0 / 0
  EXPECT_EQ(t[4].Get<float>(2) != t[4].Get<float>(2), true);
}

TEST(EvaluatorTest, SignedIntegerWrapAndDivisionByZero) {
  Literal result = RunEntry(
      "(a: s32[5], b: s32[5]) -> (s32[5], s32[5], s32[5], s32[5], s32[5], s32[5])",
      "  %a = s32[5]{0} parameter(0)\n  %b = s32[5]{0} parameter(1)\n"
      "  %add = s32[5]{0} add(s32[5]{0} %a, s32[5]{0} %b)\n"
      "  %mul = s32[5]{0} multiply(s32[5]{0} %a, s32[5]{0} %b)\n"
      "  %div = s32[5]{0} divide(s32[5]{0} %a, s32[5]{0} %b)\n"
      "  %rem = s32[5]{0} remainder(s32[5]{0} %a, s32[5]{0} %b)\n"
      "  %neg = s32[5]{0} negate(s32[5]{0} %a)\n"
      "  %abs = s32[5]{0} abs(s32[5]{0} %a)\n"
      "  ROOT %t = (s32[5]{0}, s32[5]{0}, s32[5]{0}, s32[5]{0}, s32[5]{0}, s32[5]{0}) "
      "tuple(s32[5]{0} %add, s32[5]{0} %mul, s32[5]{0} %div, s32[5]{0} %rem, s32[5]{0} %neg, "
      "s32[5]{0} %abs)",
      {S32({5}, {kIntMax, kIntMin, 7, -7, kIntMin}), S32({5}, {1, -1, 0, 0, 2})});
  const auto& t = result.tuple_elements();
  EXPECT_EQ(Values<int32_t>(t[0]), (std::vector<int32_t>{kIntMin, kIntMax, 7, -7, kIntMin + 2}));
  EXPECT_EQ(Values<int32_t>(t[1]), (std::vector<int32_t>{kIntMax, kIntMin, 0, 0, 0}));
  // x / 0 = -1; INT_MIN / -1 = INT_MIN.
  EXPECT_EQ(Values<int32_t>(t[2]), (std::vector<int32_t>{kIntMax, kIntMin, -1, -1, kIntMin / 2}));
  // x % 0 = x; INT_MIN % -1 = 0.
  EXPECT_EQ(Values<int32_t>(t[3]), (std::vector<int32_t>{0, 0, 7, -7, 0}));
  EXPECT_EQ(Values<int32_t>(t[4]), (std::vector<int32_t>{-kIntMax, kIntMin, -7, 7, kIntMin}));
  EXPECT_EQ(Values<int32_t>(t[5]), (std::vector<int32_t>{kIntMax, kIntMin, 7, 7, kIntMin}));
}

TEST(EvaluatorTest, UnsignedWrapAndDivisionByZero) {
  Literal result = RunEntry("(a: u32[3], b: u32[3]) -> (u32[3], u32[3], u32[3])",
                            "  %a = u32[3]{0} parameter(0)\n  %b = u32[3]{0} parameter(1)\n"
                            "  %sub = u32[3]{0} subtract(u32[3]{0} %a, u32[3]{0} %b)\n"
                            "  %div = u32[3]{0} divide(u32[3]{0} %a, u32[3]{0} %b)\n"
                            "  %rem = u32[3]{0} remainder(u32[3]{0} %a, u32[3]{0} %b)\n"
                            "  ROOT %t = (u32[3]{0}, u32[3]{0}, u32[3]{0}) tuple(u32[3]{0} %sub, "
                            "u32[3]{0} %div, u32[3]{0} %rem)",
                            {U32({3}, {0, 9, 9}), U32({3}, {1, 0, 4})});
  const auto& t = result.tuple_elements();
  EXPECT_EQ(Values<uint32_t>(t[0]), (std::vector<uint32_t>{0xffffffffu, 9, 5}));
  EXPECT_EQ(Values<uint32_t>(t[1]), (std::vector<uint32_t>{0, 0xffffffffu, 2}));
  EXPECT_EQ(Values<uint32_t>(t[2]), (std::vector<uint32_t>{0, 9, 1}));
}

TEST(EvaluatorTest, ShiftsOutOfRange) {
  Literal result = RunEntry(
      "(a: s32[4], b: s32[4]) -> (s32[4], s32[4], s32[4])",
      "  %a = s32[4]{0} parameter(0)\n  %b = s32[4]{0} parameter(1)\n"
      "  %shl = s32[4]{0} shift-left(s32[4]{0} %a, s32[4]{0} %b)\n"
      "  %sra = s32[4]{0} shift-right-arithmetic(s32[4]{0} %a, s32[4]{0} %b)\n"
      "  %srl = s32[4]{0} shift-right-logical(s32[4]{0} %a, s32[4]{0} %b)\n"
      "  ROOT %t = (s32[4]{0}, s32[4]{0}, s32[4]{0}) tuple(s32[4]{0} %shl, s32[4]{0} %sra, "
      "s32[4]{0} %srl)",
      {S32({4}, {-8, -8, 1, -1}), S32({4}, {1, 40, 32, -1})});
  const auto& t = result.tuple_elements();
  EXPECT_EQ(Values<int32_t>(t[0]), (std::vector<int32_t>{-16, 0, 0, 0}));
  EXPECT_EQ(Values<int32_t>(t[1]), (std::vector<int32_t>{-4, -1, 0, -1}));
  EXPECT_EQ(Values<int32_t>(t[2]), (std::vector<int32_t>{0x7ffffffc, 0, 0, 0}));
}

TEST(EvaluatorTest, IntegerPower) {
  Literal result = RunEntry("(a: s32[5], b: s32[5]) -> s32[5]",
                            "  %a = s32[5]{0} parameter(0)\n  %b = s32[5]{0} parameter(1)\n"
                            "  ROOT %p = s32[5]{0} power(s32[5]{0} %a, s32[5]{0} %b)",
                            {S32({5}, {2, 2, -1, 1, 3}), S32({5}, {10, -1, -3, -5, 0})});
  EXPECT_EQ(Values<int32_t>(result), (std::vector<int32_t>{1024, 0, -1, 1, 1}));
}

TEST(EvaluatorTest, ConvertSaturatesAndMapsNanToZero) {
  Literal result = RunEntry("(a: f32[6]) -> (s32[6], u32[6], pred[6])",
                            "  %a = f32[6]{0} parameter(0)\n"
                            "  %s = s32[6]{0} convert(f32[6]{0} %a)\n"
                            "  %u = u32[6]{0} convert(f32[6]{0} %a)\n"
                            "  %p = pred[6]{0} convert(f32[6]{0} %a)\n"
                            "  ROOT %t = (s32[6]{0}, u32[6]{0}, pred[6]{0}) tuple(s32[6]{0} %s, "
                            "u32[6]{0} %u, pred[6]{0} %p)",
                            {F32({6}, {kNaN, 1e10f, -1e10f, 3.9f, -3.9f, -0.0f})});
  const auto& t = result.tuple_elements();
  EXPECT_EQ(Values<int32_t>(t[0]), (std::vector<int32_t>{0, kIntMax, kIntMin, 3, -3, 0}));
  EXPECT_EQ(Values<uint32_t>(t[1]), (std::vector<uint32_t>{0, 0xffffffffu, 0, 3, 0, 0}));
  EXPECT_EQ(Values<uint8_t>(t[2]), (std::vector<uint8_t>{1, 1, 1, 1, 1, 0}));
}

// A reduce of f16/bf16 with a single-op reducer accumulates in f32 and rounds once, as device
// kernels do: 4096 ones sum to 4096, where steps rounded to f16 stop at 2048 (2048 + 1 is a tie
// that rounds back to 2048). A reducer computation of more than one op keeps the element type's
// rounding after every step.
TEST(EvaluatorTest, HalfPrecisionReduceAccumulatesInF32) {
  for (const std::string type : {"f16", "bf16"}) {
    const std::string text =
        "HloModule r\n%add (a: " + type + "[], b: " + type + "[]) -> " + type +
        "[] {\n  %a = " + type + "[] parameter(0)\n  %b = " + type +
        "[] parameter(1)\n  ROOT %s = " + type + "[] add(%a, %b)\n}\n" + "%add_copy (a: " + type +
        "[], b: " + type + "[]) -> " + type + "[] {\n  %a = " + type +
        "[] parameter(0)\n  %b = " + type + "[] parameter(1)\n  %s = " + type +
        "[] add(%a, %b)\n  ROOT %c = " + type + "[] copy(%s)\n}\n" + "ENTRY %e () -> (" + type +
        "[], " + type + "[]) {\n  %one = " + type + "[] constant(1)\n  %ones = " + type +
        "[4096] broadcast(%one), dimensions={}\n  %zero = " + type +
        "[] constant(0)\n  %f32 = " + type +
        "[] reduce(%ones, %zero), dimensions={0}, to_apply=%add\n  %steps = " + type +
        "[] reduce(%ones, %zero), dimensions={0}, to_apply=%add_copy\n"
        "  ROOT %t = (" +
        type + "[], " + type + "[]) tuple(%f32, %steps)\n}\n";
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
    ASSERT_TRUE(module.ok()) << module.status() << "\n" << text;
    absl::StatusOr<Literal> result = Evaluate(**module, {});
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->tuple_elements()[0].GetAsDouble(0), 4096) << type;
    // bf16 (8 significant bits) stops at 256 the same way.
    EXPECT_EQ(result->tuple_elements()[1].GetAsDouble(0), type == "f16" ? 2048 : 256) << type;
  }
}

TEST(EvaluatorTest, ConvertIntegersWrapAndHalfRounds) {
  Literal result = RunEntry("(a: s32[2]) -> (u32[2], f16[2], f32[2])",
                            "  %a = s32[2]{0} parameter(0)\n"
                            "  %u = u32[2]{0} convert(s32[2]{0} %a)\n"
                            "  %h = f16[2]{0} convert(s32[2]{0} %a)\n"
                            "  %f = f32[2]{0} convert(f16[2]{0} %h)\n"
                            "  ROOT %t = (u32[2]{0}, f16[2]{0}, f32[2]{0}) tuple(u32[2]{0} %u, "
                            "f16[2]{0} %h, f32[2]{0} %f)",
                            {S32({2}, {-1, 2049})});
  EXPECT_EQ(Values<uint32_t>(result.tuple_elements()[0]),
            (std::vector<uint32_t>{0xffffffffu, 2049}));
  // 2049 is between the halves 2048 and 2050: ties to even gives 2048.
  EXPECT_EQ(Values<float>(result.tuple_elements()[2]), (std::vector<float>{-1, 2048}));
}

TEST(EvaluatorTest, DynamicSliceClampsNegativeAndLargeStarts) {
  Literal result = RunEntry("(a: s32[5], i: s32[], j: u32[]) -> (s32[2], s32[2])",
                            "  %a = s32[5]{0} parameter(0)\n  %i = s32[] parameter(1)\n"
                            "  %j = u32[] parameter(2)\n"
                            "  %x = s32[2]{0} dynamic-slice(s32[5]{0} %a, s32[] %i), "
                            "dynamic_slice_sizes={2}\n"
                            "  %y = s32[2]{0} dynamic-slice(s32[5]{0} %a, u32[] %j), "
                            "dynamic_slice_sizes={2}\n"
                            "  ROOT %t = (s32[2]{0}, s32[2]{0}) tuple(s32[2]{0} %x, s32[2]{0} %y)",
                            {S32({5}, {0, 1, 2, 3, 4}), S32({}, {-3}), U32({}, {0xffffffffu})});
  EXPECT_EQ(Values<int32_t>(result.tuple_elements()[0]), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(Values<int32_t>(result.tuple_elements()[1]), (std::vector<int32_t>{3, 4}));
}

TEST(EvaluatorTest, SelectWithScalarPredicateAndClampWithArrays) {
  Literal result = RunEntry(
      "(p: pred[], a: f32[3], b: f32[3]) -> (f32[3], f32[3])",
      "  %p = pred[] parameter(0)\n  %a = f32[3]{0} parameter(1)\n  %b = f32[3]{0} parameter(2)\n"
      "  %s = f32[3]{0} select(pred[] %p, f32[3]{0} %a, f32[3]{0} %b)\n"
      "  %c = f32[3]{0} clamp(f32[3]{0} %a, f32[3]{0} %b, f32[3]{0} %a)\n"
      "  ROOT %t = (f32[3]{0}, f32[3]{0}) tuple(f32[3]{0} %s, f32[3]{0} %c)",
      {Literal::Create<uint8_t>(DType::kPred, {}, {0}), F32({3}, {1, 2, 3}), F32({3}, {4, 5, 6})});
  EXPECT_EQ(Values<float>(result.tuple_elements()[0]), (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(Values<float>(result.tuple_elements()[1]), (std::vector<float>{1, 2, 3}));
}

TEST(EvaluatorTest, RngBitGeneratorIsDeterministicAndAdvancesState) {
  const std::string body =
      "  %s = u64[2]{0} parameter(0)\n"
      "  ROOT %r = (u64[2]{0}, u32[6]{0}) rng-bit-generator(u64[2]{0} %s), "
      "algorithm=rng_philox";
  Literal state = Literal::Create<uint64_t>(DType::kU64, {2}, {42, 0});
  Literal first = RunEntry("(s: u64[2]) -> (u64[2], u32[6])", body, {state});
  Literal again = RunEntry("(s: u64[2]) -> (u64[2], u32[6])", body, {state});
  EXPECT_EQ(first, again);
  EXPECT_EQ(first.tuple_elements()[0].Get<uint64_t>(1), 2u);  // two 4-word blocks used
  Literal next = RunEntry("(s: u64[2]) -> (u64[2], u32[6])", body, {first.tuple_elements()[0]});
  EXPECT_NE(next.tuple_elements()[1], first.tuple_elements()[1]);
  // Philox4x32-10 known-answer test (Random123): key 0, counter 0.
  Literal zero = RunEntry("(s: u64[2]) -> (u64[2], u32[6])", body,
                          {Literal::Create<uint64_t>(DType::kU64, {2}, {0, 0})});
  EXPECT_EQ(zero.tuple_elements()[1].Get<uint32_t>(0), 0x6627e8d5u);
}

TEST(EvaluatorTest, RejectsArgumentsOfTheWrongShape) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(
      "HloModule t\nENTRY %e (p: f32[2]) -> f32[2] {\n  ROOT %p = f32[2]{0} parameter(0)\n}\n");
  ASSERT_TRUE(module.ok());
  absl::StatusOr<Literal> result = Evaluate(**module, {F32({3}, {1, 2, 3})});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(std::string(result.status().message()), "argument 0 (%p) must be f32[2], got f32[3]");
  EXPECT_FALSE(Evaluate(**module, {}).ok());
}

TEST(EvaluatorTest, RefusesValuesTooLargeForHostMemory) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(
      "HloModule t\nENTRY %e () -> f32[65536,65536] {\n  %z = f32[] constant(0)\n"
      "  ROOT %b = f32[65536,65536]{1,0} broadcast(f32[] %z), dimensions={}\n}\n");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<Literal> result = Evaluate(**module, {});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(std::string(result.status().message()),
            "4:8: %b: f32[65536,65536] needs 17179869184 bytes, more than the reference "
            "evaluator's limit of 4294967296");
}

}  // namespace
}  // namespace vkspmd::interp
