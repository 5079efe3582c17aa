// bitcast-convert and reduce-precision: parsing and printing, shape errors, and the CPU
// reference against values from NumPy (float16 round trips, bit patterns) and by hand.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/interp/evaluator.h"
#include "src/ir/parser.h"
#include "src/ir/printer.h"

namespace vkspmd::ir {
namespace {

absl::StatusOr<Literal> EvaluateText(const std::string& text, const Literal& argument) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(text);
  if (!module.ok()) return module.status();
  return interp::Evaluate(**module, {argument});
}

std::string ReducePrecisionModule(int64_t size, int exponent_bits, int mantissa_bits) {
  return "HloModule m\nENTRY e {\n  p = f32[" + std::to_string(size) +
         "]{0} parameter(0)\n  ROOT r = f32[" + std::to_string(size) +
         "]{0} reduce-precision(p), exponent_bits=" + std::to_string(exponent_bits) +
         ", mantissa_bits=" + std::to_string(mantissa_bits) + "\n}\n";
}

std::vector<float> ReducePrecision(const std::vector<float>& values, int exponent_bits,
                                   int mantissa_bits) {
  const int64_t size = static_cast<int64_t>(values.size());
  absl::StatusOr<Literal> result =
      EvaluateText(ReducePrecisionModule(size, exponent_bits, mantissa_bits),
                   Literal::Create<float>(DType::kF32, {size}, values));
  EXPECT_TRUE(result.ok()) << result.status();
  std::vector<float> out;
  for (int64_t i = 0; result.ok() && i < size; ++i) out.push_back(result->Get<float>(i));
  return out;
}

// Equal as values, with NaN equal to NaN and the sign of zero compared.
void ExpectSameFloats(const std::vector<float>& actual, const std::vector<float>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << i;
    } else {
      EXPECT_EQ(actual[i], expected[i]) << i;
      EXPECT_EQ(std::signbit(actual[i]), std::signbit(expected[i])) << i;
    }
  }
}

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(BitOpsTest, ReducePrecisionToHalfMatchesNumpyFloat16RoundTrips) {
  // NumPy: x.astype(np.float16).astype(np.float32), for values in float16's normal range.
  ExpectSameFloats(ReducePrecision({1.0f, 1.0f + 0x1p-10f, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f,
                                    3.14159265f, -2.71828f, 65504.0f, 65519.0f, 65520.0f, 1e5f,
                                    -1e5f, 0x1p-14f, 0.0f, -0.0f, 1234.5678f},
                                   5, 10),
                   {1.0f, 1.0009765625f, 1.0f, 1.001953125f, 3.140625f, -2.71875f, 65504.0f,
                    65504.0f, kInf, kInf, -kInf, 6.103515625e-05f, 0.0f, -0.0f, 1235.0f});
}

TEST(BitOpsTest, ReducePrecisionFlushesDenormalsAndKeepsNaN) {
  // Below float16's smallest normal (2^-14) XLA gives signed zero (NumPy would keep a denormal).
  ExpectSameFloats(ReducePrecision({3e-5f, -3e-5f, kNaN, kInf, -kInf}, 5, 10),
                   {0.0f, -0.0f, kNaN, kInf, -kInf});
  // With no mantissa bit a NaN cannot be represented: +inf; 3 = 1.5 * 2 is a tie between 2 and 4,
  // and the even exponent (2) wins.
  ExpectSameFloats(ReducePrecision({kNaN, 3.0f}, 5, 0), {kInf, 2.0f});
}

TEST(BitOpsTest, ReducePrecisionToBfloat16AndATinyFormat) {
  // bfloat16 (8, 7), by hand: ties to even at 2^-8, pi and e as bfloat16 prints them, and
  // 1e38 = 1.1755 * 2^126 to 1.171875 * 2^126.
  ExpectSameFloats(ReducePrecision({1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-20f,
                                    3.14159265f, -2.71828f, 1e38f},
                                   8, 7),
                   {1.0f, 1.015625f, 1.0078125f, 3.140625f, -2.71875f, 0x1.2cp+126f});
  // (3, 2): mantissas 1, 1.25, 1.5, 1.75; exponents -2..3, so [0.25, 16) survives.
  ExpectSameFloats(ReducePrecision({1.1f, 1.4f, 1.375f, 10.0f, 15.9f, 0.2f, 0.26f, -3.3f}, 3, 2),
                   {1.0f, 1.5f, 1.5f, 10.0f, kInf, 0.0f, 0.25f, -3.5f});
}

TEST(BitOpsTest, BitcastConvertReinterpretsTheBits) {
  const std::string text = R"(HloModule m
ENTRY e {
  p = f32[3]{0} parameter(0)
  i = s32[3]{0} bitcast-convert(p)
  u = u32[3]{0} bitcast-convert(p)
  back = f32[3]{0} bitcast-convert(i)
  ROOT t = (s32[3]{0}, u32[3]{0}, f32[3]{0}) tuple(i, u, back)
}
)";
  absl::StatusOr<Literal> result =
      EvaluateText(text, Literal::Create<float>(DType::kF32, {3}, {1.0f, -2.0f, kNaN}));
  ASSERT_TRUE(result.ok()) << result.status();
  // NumPy: np.float32([1, -2]).view(np.int32 / np.uint32); the quiet NaN is 0x7fc00000.
  EXPECT_EQ(result->tuple_elements()[0].Get<int32_t>(0), 0x3f800000);
  EXPECT_EQ(result->tuple_elements()[0].Get<int32_t>(1), -1073741824);
  EXPECT_EQ(result->tuple_elements()[1].Get<uint32_t>(1), 0xc0000000u);
  EXPECT_EQ(result->tuple_elements()[1].Get<uint32_t>(2), 0x7fc00000u);
  EXPECT_EQ(result->tuple_elements()[2].Get<float>(1), -2.0f);
  EXPECT_TRUE(std::isnan(result->tuple_elements()[2].Get<float>(2)));
}

TEST(BitOpsTest, BitcastConvertOfSixteenAndSixtyFourBitTypes) {
  absl::StatusOr<Literal> half =
      EvaluateText(R"(HloModule m
ENTRY e {
  p = f16[2]{0} parameter(0)
  ROOT i = s16[2]{0} bitcast-convert(p)
}
)",
                   Literal::Create<uint16_t>(DType::kF16, {2}, {0x3c00, 0xbe00}));
  ASSERT_TRUE(half.ok()) << half.status();
  // NumPy: np.float16([1, -1.5]).view(np.int16) == [15360, -16896].
  EXPECT_EQ(half->Get<int16_t>(0), 15360);
  EXPECT_EQ(half->Get<int16_t>(1), -16896);
  absl::StatusOr<Literal> wide = EvaluateText(R"(HloModule m
ENTRY e {
  p = f64[1]{0} parameter(0)
  ROOT i = u64[1]{0} bitcast-convert(p)
}
)",
                                              Literal::Create<double>(DType::kF64, {1}, {1.0}));
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_EQ(wide->Get<uint64_t>(0), 0x3ff0000000000000u);
}

// XLA's width-changing forms: to a narrower type a last dim of the width ratio is added, element
// k holding the k-th narrow element in memory (little-endian: the lowest bits first); to a wider
// one that dim is dropped.
TEST(BitOpsTest, BitcastConvertChangingTheWidthAddsOrDropsTheLastDim) {
  absl::StatusOr<Literal> bytes =
      EvaluateText(R"(HloModule m
ENTRY e {
  p = f32[2]{0} parameter(0)
  ROOT b = u8[2,4]{1,0} bitcast-convert(p)
}
)",
                   Literal::Create<float>(DType::kF32, {2}, {1.0f, -2.0f}));
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  // NumPy: np.float32([1, -2]).view(np.uint8) == [0, 0, 128, 63, 0, 0, 0, 192].
  EXPECT_EQ(bytes->shape(), Shape(DType::kU8, {2, 4}));
  const std::vector<uint8_t> want_bytes = {0, 0, 128, 63, 0, 0, 0, 192};
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(bytes->Get<uint8_t>(i), want_bytes[i]) << i;

  absl::StatusOr<Literal> words = EvaluateText(
      R"(HloModule m
ENTRY e {
  p = u16[2,4]{1,0} parameter(0)
  ROOT d = f64[2]{0} bitcast-convert(p)
}
)",
      Literal::Create<uint16_t>(DType::kU16, {2, 4}, {0, 0, 0, 0x3ff0, 0, 0, 0, 0xc008}));
  ASSERT_TRUE(words.ok()) << words.status();
  // NumPy: np.uint16([0, 0, 0, 0x3ff0, 0, 0, 0, 0xc008]).view(np.float64) == [1, -3].
  EXPECT_EQ(words->shape(), Shape(DType::kF64, {2}));
  EXPECT_EQ(words->Get<double>(0), 1.0);
  EXPECT_EQ(words->Get<double>(1), -3.0);

  absl::StatusOr<Literal> signed_bytes =
      EvaluateText(R"(HloModule m
ENTRY e {
  p = s32[] parameter(0)
  ROOT b = s8[4]{0} bitcast-convert(p)
}
)",
                   Literal::Create<int32_t>(DType::kS32, {}, {-2}));
  ASSERT_TRUE(signed_bytes.ok()) << signed_bytes.status();
  // NumPy: np.int32(-2).view(np.int8) is not allowed on a scalar; np.int32([-2]).view(np.int8)
  // == [-2, -1, -1, -1].
  const std::vector<int8_t> want_signed = {-2, -1, -1, -1};
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(signed_bytes->Get<int8_t>(i), want_signed[i]) << i;
}

TEST(BitOpsTest, BitcastConvertToAWiderTypeNeedsTheRatioAsTheLastDim) {
  auto error = [](const std::string& text) {
    absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(text);
    return module.ok() ? std::string("ok") : std::string(module.status().message());
  };
  EXPECT_EQ(error("HloModule m\nENTRY e {\n  p = u8[2,3]{1,0} parameter(0)\n"
                  "  ROOT b = f32[2]{0} bitcast-convert(p)\n}\n"),
            "4:8: %b: bitcast-convert from u8 to f32 needs a last dim of 4 (the width ratio), got "
            "u8[2,3]");
  EXPECT_EQ(error("HloModule m\nENTRY e {\n  p = u8[] parameter(0)\n"
                  "  ROOT b = u16[] bitcast-convert(p)\n}\n"),
            "4:8: %b: bitcast-convert from u8 to u16 needs a last dim of 2 (the width ratio), got "
            "u8[]");
}

TEST(BitOpsTest, PrintsAndReadsBack) {
  const std::string text = ReducePrecisionModule(4, 5, 10);
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string printed = PrintModule(**module);
  EXPECT_NE(printed.find("reduce-precision(f32[4]{0} %p), exponent_bits=5, mantissa_bits=10"),
            std::string::npos)
      << printed;
  absl::StatusOr<std::unique_ptr<Module>> reparsed = ParseAndVerifyModule(printed);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  EXPECT_EQ(PrintModule(**reparsed), printed);
}

TEST(BitOpsTest, ErrorsNameTheOpAndThePosition) {
  auto error = [](const std::string& text) {
    absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(text);
    return module.ok() ? std::string("ok") : std::string(module.status().message());
  };
  EXPECT_EQ(error("HloModule m\nENTRY e {\n  p = f32[2]{0} parameter(0)\n"
                  "  ROOT b = s16[2]{0} bitcast-convert(p)\n}\n"),
            "4:8: %b: shape s16[2] does not match the inferred shape s16[2,2]");
  EXPECT_EQ(
      error("HloModule m\nENTRY e {\n  p = s32[2]{0} parameter(0)\n"
            "  ROOT r = s32[2]{0} reduce-precision(p), exponent_bits=5, mantissa_bits=2\n}\n"),
      "4:8: %r: reduce-precision needs a float operand, got s32[2]");
  EXPECT_EQ(
      error("HloModule m\nENTRY e {\n  p = f32[2]{0} parameter(0)\n"
            "  ROOT r = f32[2]{0} reduce-precision(p), exponent_bits=0, mantissa_bits=2\n}\n"),
      "4:57: exponent_bits must be in 1..64");
  EXPECT_EQ(error("HloModule m\nENTRY e {\n  p = f32[2]{0} parameter(0)\n"
                  "  ROOT r = f32[2]{0} negate(p), mantissa_bits=2\n}\n"),
            "4:33: attribute mantissa_bits does not apply to negate");
}

}  // namespace
}  // namespace vkspmd::ir
