// f16 and bf16 on the device against the CPU reference: every elementwise op, converts to and from
// every device type, compare/select/clamp, the shape ops, reductions (10^6 elements included) and
// dots, over several shapes with odd and prime sizes.
//
// Tolerances, in units in the last place of the 16-bit result type (a NaN or an infinity must
// always match exactly):
// - 0 ulp (bit-exact) for + - * / sqrt, negate, abs, sign, floor, ceil, round, max, min, clamp,
//   select, converts and every shape op: kernels compute in f32 and round to nearest even once per
//   op, exactly as the reference (double, then f32, then the 16-bit type; the two roundings of
//   these ops are innocuous since f32 has more than twice the 16-bit types' precision).
// - 1 ulp for exp, log, tanh, pow, trigonometry, ...: the device's f32 functions differ from the
//   reference's double ones in the last f32 bits, which may flip a rounding to 16 bits.
//   Vulkan does not require correctly rounded f32 divide and sqrt (2.5 ulp; sqrt as 1 /
//   inversesqrt), so on drivers other than lavapipe (whose are) those, and chains using them,
//   get 1 ulp.
// - 1 ulp for dot and reductions: both accumulate in f32 (the reference's dot in double), in
//   different orders, and round once at the end.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/codegen/planner.h"
#include "src/exec/executable.h"
#include "src/interp/evaluator.h"
#include "src/ir/parser.h"
#include "tests/exec/device_reference.h"
#include "tests/exec/literal_compare.h"
#include "tests/exec/random_module.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

constexpr const char* kHalfTypes[] = {"f16", "bf16"};

bool IsHalf(ir::DType type) { return type == ir::DType::kF16 || type == ir::DType::kBF16; }

// Sign-magnitude bits mapped to a line where adjacent values differ by one.
int64_t Ordered(uint16_t bits) {
  return (bits & 0x8000u) ? -static_cast<int64_t>(bits & 0x7fffu) : static_cast<int64_t>(bits);
}

// "" when `got` is within `ulps` of `want` (16-bit floats), within 1e-6 relative (wider floats),
// or equal (everything else); else the first difference.
std::string CompareHalf(const ir::Literal& got, const ir::Literal& want, int64_t ulps) {
  if (got.shape() != want.shape()) {
    return absl::StrCat("shape ", got.shape().ToString(), " != ", want.shape().ToString());
  }
  if (!IsHalf(want.dtype())) return CompareLiterals(got, want, 1e-6);
  for (int64_t i = 0; i < want.ElementCount(); ++i) {
    const double a = got.GetAsDouble(i), b = want.GetAsDouble(i);
    const bool same_special = (std::isnan(a) && std::isnan(b)) || (std::isinf(b) && a == b);
    if (same_special) continue;
    const int64_t distance =
        std::abs(Ordered(got.Get<uint16_t>(i)) - Ordered(want.Get<uint16_t>(i)));
    if (std::isfinite(a) && std::isfinite(b) && distance <= ulps) continue;
    return absl::StrCat("element ", i, ": device ", a, ", reference ", b, " (", distance,
                        " ulps apart, ", ulps, " allowed)");
  }
  return "";
}

std::string Shape(const std::string& type, const std::vector<int64_t>& dimensions) {
  return absl::StrCat(type, "[", absl::StrJoin(dimensions, ","), "]");
}

class HalfPrecisionTest : public DeviceTest {
 protected:
  void SetUp() override { OpenDevices(1); }

  // Runs `text` on the device and the reference with `arguments` (random in [low, high] when
  // empty); "" when the results agree within `ulps`.
  std::string Check(const std::string& text, double low, double high, int64_t ulps,
                    std::vector<ir::Literal> arguments = {}) {
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
    if (!module.ok()) return absl::StrCat("parse: ", module.status().message(), "\n", text);
    if (arguments.empty()) arguments = RandomArguments(**module, 11, low, high);
    absl::StatusOr<DeviceAndReference> results =
        RunOnDeviceAndReference(**module, arguments, device(0));
    if (!results.ok()) return absl::StrCat(results.status().message(), "\n", text);
    const ir::Literal& result = results->device;
    const ir::Literal& reference = results->reference;
    std::string difference = CompareHalf(result, reference, ulps);
    return difference.empty() ? "" : absl::StrCat(difference, "\n", text);
  }
};

struct Op {
  std::string name;
  int arity;
  double low, high;
  int64_t ulps;
};

const std::vector<std::vector<int64_t>> kShapes = {{}, {7}, {31, 3}, {2, 3, 4, 5, 1}, {1009}};

TEST_F(HalfPrecisionTest, EveryElementwiseOp) {
  const std::vector<Op> ops = {{"negate", 1, -4, 4, 0},      {"abs", 1, -4, 4, 0},
                               {"sign", 1, -4, 4, 0},        {"floor", 1, -4, 4, 0},
                               {"ceil", 1, -4, 4, 0},        {"round-nearest-even", 1, -4, 4, 0},
                               {"sqrt", 1, 0, 8, 0},         {"add", 2, -4, 4, 0},
                               {"subtract", 2, -4, 4, 0},    {"multiply", 2, -4, 4, 0},
                               {"divide", 2, 0.5, 4, 0},     {"maximum", 2, -4, 4, 0},
                               {"minimum", 2, -4, 4, 0},     {"copy", 1, -4, 4, 0},
                               {"exponential", 1, -4, 4, 1}, {"exponential-minus-one", 1, -1, 1, 1},
                               {"log", 1, 0.1, 8, 1},        {"log-plus-one", 1, -0.5, 4, 1},
                               {"rsqrt", 1, 0.1, 8, 1},      {"tanh", 1, -6, 6, 1},
                               {"logistic", 1, -6, 6, 1},    {"sine", 1, -4, 4, 1},
                               {"cosine", 1, -4, 4, 1},      {"erf", 1, -3, 3, 1},
                               {"remainder", 2, 0.5, 4, 1},  {"power", 2, 0.5, 2, 1},
                               {"atan2", 2, -4, 4, 1}};
  for (const char* type : kHalfTypes) {
    for (const Op& op : ops) {
      for (const std::vector<int64_t>& dims : kShapes) {
        const std::string shape = Shape(type, dims);
        std::string text = absl::StrCat("HloModule op\nENTRY %main (a: ", shape,
                                        op.arity == 2 ? absl::StrCat(", b: ", shape) : "", ") -> ",
                                        shape, " {\n  %a = ", shape, " parameter(0)\n");
        if (op.arity == 2) absl::StrAppend(&text, "  %b = ", shape, " parameter(1)\n");
        absl::StrAppend(&text, "  ROOT %r = ", shape, " ", op.name, "(%a",
                        op.arity == 2 ? ", %b" : "", ")\n}\n");
        const bool inexact_on_driver = !is_lavapipe() && (op.name == "divide" || op.name == "sqrt");
        EXPECT_EQ(Check(text, op.low, op.high, inexact_on_driver ? 1 : op.ulps), "")
            << op.name << " " << shape;
      }
    }
  }
}

// A fused chain rounds after every op, as the reference does: (a * b + a) / b - a differs from its
// f32 value rounded once.
TEST_F(HalfPrecisionTest, FusedChainsRoundAfterEveryOp) {
  for (const char* type : kHalfTypes) {
    const std::string shape = Shape(type, {257});
    const std::string text = absl::StrCat(
        "HloModule chain\nENTRY %main (a: ", shape, ", b: ", shape, ") -> ", shape, " {\n",
        "  %a = ", shape, " parameter(0)\n  %b = ", shape, " parameter(1)\n", "  %m = ", shape,
        " multiply(%a, %b)\n  %s = ", shape, " add(%m, %a)\n", "  %d = ", shape,
        " divide(%s, %b)\n  ROOT %r = ", shape, " subtract(%d, %a)\n}\n");
    EXPECT_EQ(Check(text, 0.5, 3, is_lavapipe() ? 0 : 1), "") << type;
  }
}

// NaN (either sign), infinities, signed zeros, the largest finite value, subnormals and values
// that overflow or round to a tie, through arithmetic, max/min and converts.
TEST_F(HalfPrecisionTest, SpecialValuesMatchBitForBit) {
  const std::vector<float> values = {NAN,     -NAN,     INFINITY,       -INFINITY, 0.0f, -0.0f,
                                     65504.f, -65504.f, 5.9604645e-8f,  3e-5f,     1.0f, -1.5f,
                                     1e30f,   -3e38f,   1.00048828125f, 255.5f};
  for (const char* type : kHalfTypes) {
    const std::string shape = Shape(type, {static_cast<int64_t>(values.size())});
    ir::Literal x(ir::Shape(type == std::string("f16") ? ir::DType::kF16 : ir::DType::kBF16,
                            {static_cast<int64_t>(values.size())}));
    for (size_t i = 0; i < values.size(); ++i) x.SetFromDouble(i, values[i]);
    for (const char* op : {"add", "multiply", "maximum", "minimum", "subtract", "divide"}) {
      const std::string text = absl::StrCat(
          "HloModule special\nENTRY %main (a: ", shape, ") -> ", shape, " {\n  %a = ", shape,
          " parameter(0)\n  %r = ", shape, " reverse(%a), dimensions={0}\n  ROOT %o = ", shape, " ",
          op, "(%a, %r)\n}\n");
      std::vector<ir::Literal> arguments;
      arguments.push_back(x);
      const int64_t ulps = !is_lavapipe() && std::string(op) == "divide" ? 1 : 0;
      EXPECT_EQ(Check(text, 0, 0, ulps, std::move(arguments)), "") << type << " " << op;
    }
  }
}

// f32 -> f16/bf16 rounding on the device is the reference's, bit for bit: over a range with
// overflow to infinity, and a range of half subnormals.
TEST_F(HalfPrecisionTest, RoundingFromF32MatchesTheReference) {
  for (const char* type : kHalfTypes) {
    for (auto [low, high] :
         {std::pair{-70000.0, 70000.0}, std::pair{-1e-4, 1e-4}, std::pair{-1.0, 1.0}}) {
      const std::string text = absl::StrCat(
          "HloModule round\nENTRY %main (a: f32[4099]) -> ", type, "[4099] {\n",
          "  %a = f32[4099] parameter(0)\n  ROOT %r = ", type, "[4099] convert(%a)\n}\n");
      EXPECT_EQ(Check(text, low, high, 0), "") << type << " " << low;
    }
  }
}

TEST_F(HalfPrecisionTest, ConvertsToAndFromEveryDeviceType) {
  const std::vector<std::string> others = {"pred", "s8",  "s16", "s32", "s64", "u8",  "u16",
                                           "u32",  "u64", "f32", "f64", "f16", "bf16"};
  for (const char* type : kHalfTypes) {
    for (const std::string& other : others) {
      for (bool from_half : {true, false}) {
        const std::string from = from_half ? type : other, to = from_half ? other : type;
        const std::string text = absl::StrCat(
            "HloModule convert\nENTRY %main (a: ", from, "[3,37]) -> ", to, "[3,37] {\n",
            "  %a = ", from, "[3,37] parameter(0)\n  ROOT %r = ", to, "[3,37] convert(%a)\n}\n");
        // Integers saturate at their range: values past 127 and below 0 for the narrow ones.
        EXPECT_EQ(Check(text, -300, 300, 0), "") << from << " -> " << to;
      }
    }
  }
}

TEST_F(HalfPrecisionTest, CompareSelectAndClamp) {
  for (const char* type : kHalfTypes) {
    for (const std::vector<int64_t>& dims : kShapes) {
      const std::string shape = Shape(type, dims), pred = Shape("pred", dims);
      const std::string text = absl::StrCat(
          "HloModule select\nENTRY %main (a: ", shape, ", b: ", shape, ") -> ", shape, " {\n",
          "  %a = ", shape, " parameter(0)\n  %b = ", shape, " parameter(1)\n", "  %lt = ", pred,
          " compare(%a, %b), direction=LT\n", "  %s = ", shape, " select(%lt, %a, %b)\n",
          "  %lo = ", type, "[] constant(-0.5)\n  %hi = ", type, "[] constant(0.75)\n",
          "  %c = ", shape, " clamp(%lo, %s, %hi)\n", "  %ge = ", pred,
          " compare(%c, %a), direction=GE\n", "  %n = ", shape, " negate(%c)\n  ROOT %r = ", shape,
          " select(%ge, %c, %n)\n}\n");
      EXPECT_EQ(Check(text, -1, 1, 0), "") << shape;
    }
  }
}

TEST_F(HalfPrecisionTest, ShapeOps) {
  for (const char* type : kHalfTypes) {
    const std::string t = type;
    const std::vector<std::string> bodies = {
        // broadcast, transpose, add (fused)
        absl::StrCat("  %a = ", t, "[7,13] parameter(0)\n  %b = ", t, "[13] parameter(1)\n",
                     "  %x = ", t, "[13,7] broadcast(%b), dimensions={0}\n", "  %y = ", t,
                     "[7,13] transpose(%x), dimensions={1,0}\n", "  ROOT %r = ", t,
                     "[7,13] add(%a, %y)\n"),
        // slice, reverse, concatenate, reshape
        absl::StrCat("  %a = ", t, "[7,13] parameter(0)\n  %b = ", t, "[13] parameter(1)\n",
                     "  %s = ", t, "[3,13] slice(%a), slice={[1:7:2], [0:13]}\n", "  %v = ", t,
                     "[3,13] reverse(%s), dimensions={0,1}\n", "  %rb = ", t,
                     "[1,13] reshape(%b)\n", "  %c = ", t,
                     "[4,13] concatenate(%v, %rb), dimensions={0}\n", "  ROOT %r = ", t,
                     "[52] reshape(%c)\n"),
        // pad with interior padding and a non-zero value
        absl::StrCat("  %a = ", t, "[7,13] parameter(0)\n  %b = ", t, "[13] parameter(1)\n",
                     "  %p = ", t, "[] constant(1.5)\n", "  ROOT %r = ", t,
                     "[10,28] pad(%a, %p), padding=1_2_0x0_3_1\n"),
        // dynamic-slice and dynamic-update-slice
        absl::StrCat("  %a = ", t, "[7,13] parameter(0)\n  %b = ", t, "[13] parameter(1)\n",
                     "  %i = s32[] constant(2)\n  %j = s32[] constant(5)\n", "  %d = ", t,
                     "[3,5] dynamic-slice(%a, %i, %j), dynamic_slice_sizes={3,5}\n", "  %e = ", t,
                     "[3,5] exponential(%d)\n", "  ROOT %r = ", t,
                     "[7,13] dynamic-update-slice(%a, %e, %j, %i)\n"),
        // iota past the range where every integer is exact (2048 in f16, 256 in bf16)
        absl::StrCat("  %a = ", t, "[7,13] parameter(0)\n  %b = ", t, "[13] parameter(1)\n",
                     "  %i = ", t, "[3001] iota(), iota_dimension=0\n", "  %h = ", t,
                     "[] constant(0.5)\n  %hb = ", t, "[3001] broadcast(%h), dimensions={}\n",
                     "  ROOT %r = ", t, "[3001] multiply(%i, %hb)\n"),
    };
    for (const std::string& body : bodies) {
      const std::string root_shape =
          body.substr(body.find("ROOT %r = ") + 10,
                      body.find(' ', body.find("ROOT %r = ") + 10) - body.find("ROOT %r = ") - 10);
      const std::string text =
          absl::StrCat("HloModule shapes\nENTRY %main (a: ", t, "[7,13], b: ", t, "[13]) -> ",
                       root_shape, " {\n", body, "}\n");
      EXPECT_EQ(Check(text, -2, 2, body.find("exponential") != std::string::npos ? 1 : 0), "");
    }
  }
}

std::string ReduceModule(const std::string& type, const std::vector<int64_t>& dims,
                         const std::vector<int64_t>& reduced, const std::string& op,
                         const std::string& init, const std::string& accumulate = "") {
  const std::string acc = accumulate.empty() ? type : accumulate;
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
    if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) kept.push_back(dims[d]);
  }
  const std::string in = Shape(type, dims), out = Shape(acc, kept);
  std::string text = absl::StrCat(
      "HloModule reduce\n%combine (x: ", acc, "[], y: ", acc, "[]) -> ", acc, "[] {\n  %x = ", acc,
      "[] parameter(0)\n  %y = ", acc, "[] parameter(1)\n  ROOT %z = ", acc, "[] ", op,
      "(%x, %y)\n}\n", "ENTRY %main (a: ", in, ") -> ", out, " {\n  %a = ", in, " parameter(0)\n");
  std::string operand = "%a";
  if (acc != type) {
    absl::StrAppend(&text, "  %w = ", Shape(acc, dims), " convert(%a)\n");
    operand = "%w";
  }
  absl::StrAppend(&text, "  %init = ", acc, "[] constant(", init, ")\n  ROOT %r = ", out,
                  " reduce(", operand, ", %init), dimensions={", absl::StrJoin(reduced, ","),
                  "}, to_apply=%combine\n}\n");
  return text;
}

TEST_F(HalfPrecisionTest, ReductionsOverOddShapes) {
  for (const char* type : kHalfTypes) {
    for (auto [op, init] : {std::pair{"add", "0"}, std::pair{"maximum", "-inf"},
                            std::pair{"minimum", "inf"}, std::pair{"multiply", "1"}}) {
      for (auto [dims, reduced] :
           {std::pair{std::vector<int64_t>{7, 31}, std::vector<int64_t>{1}},
            std::pair{std::vector<int64_t>{7, 31}, std::vector<int64_t>{0}},
            std::pair{std::vector<int64_t>{3, 1009}, std::vector<int64_t>{1}},
            std::pair{std::vector<int64_t>{5, 3, 11}, std::vector<int64_t>{0, 2}}}) {
        // Products stay in range near 1.
        const double low = std::string(op) == "multiply" ? 0.9 : -2;
        const double high = std::string(op) == "multiply" ? 1.1 : 2;
        EXPECT_EQ(Check(ReduceModule(type, dims, reduced, op, init), low, high, 1), "")
            << type << " " << op;
      }
    }
  }
}

// Softmax: the row reductions (max, sum) fused into the kernel that divides, in f16/bf16.
TEST_F(HalfPrecisionTest, RowFusedSoftmax) {
  for (const char* type : kHalfTypes) {
    const std::string t = type;
    const std::string text = absl::StrCat(
        "HloModule softmax\n%max (x: ", t, "[], y: ", t, "[]) -> ", t, "[] {\n  %x = ", t,
        "[] parameter(0)\n  %y = ", t, "[] parameter(1)\n  ROOT %z = ", t,
        "[] maximum(%x, %y)\n}\n%add (x: ", t, "[], y: ", t, "[]) -> ", t, "[] {\n  %x = ", t,
        "[] parameter(0)\n  %y = ", t, "[] parameter(1)\n  ROOT %z = ", t,
        "[] add(%x, %y)\n}\nENTRY %main (a: ", t, "[13,67]) -> ", t, "[13,67] {\n  %a = ", t,
        "[13,67] parameter(0)\n  %ninf = ", t, "[] constant(-inf)\n  %m = ", t,
        "[13] reduce(%a, %ninf), dimensions={1}, to_apply=%max\n  %mb = ", t,
        "[13,67] broadcast(%m), dimensions={0}\n  %s = ", t,
        "[13,67] subtract(%a, %mb)\n  %e = ", t, "[13,67] exponential(%s)\n  %zero = ", t,
        "[] constant(0)\n  %sum = ", t,
        "[13] reduce(%e, %zero), dimensions={1}, to_apply=%add\n  %sb = ", t,
        "[13,67] broadcast(%sum), dimensions={0}\n  ROOT %r = ", t, "[13,67] divide(%e, %sb)\n}\n");
    EXPECT_EQ(Check(text, -4, 4, 1), "") << type;
  }
}

// 10^6 elements: a reduce in the 16-bit type accumulates in f32 (on the device through f32
// partial buffers between passes; in the reference by its definition, see interp) and rounds
// once; the same sum written with converts reduces in f32 throughout. Both stay within 1 ulp of
// the 16-bit type (or, in f32, 1e-7 of sum |x|) of the exact sum, which a sum rounded to 16 bits
// at every step would miss by hundreds of ulps.
TEST_F(HalfPrecisionTest, MillionElementReductionsAccumulateInF32) {
  constexpr int64_t kCount = 1000000;
  for (const char* type : kHalfTypes) {
    for (bool via_f32 : {false, true}) {
      SCOPED_TRACE(absl::StrCat(type, via_f32 ? " converted to f32" : " reduced directly"));
      const std::string text = ReduceModule(type, {kCount}, {0}, "add", "0", via_f32 ? "f32" : "");
      absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
      ASSERT_TRUE(module.ok()) << module.status();
      std::vector<ir::Literal> arguments = RandomArguments(**module, 5, -1, 1);
      double exact = 0, magnitude = 0;
      for (int64_t i = 0; i < kCount; ++i) {
        exact += arguments[0].GetAsDouble(i);
        magnitude += std::fabs(arguments[0].GetAsDouble(i));
      }
      VKSPMD_ASSERT_OK_AND_ASSIGN(ir::Literal reference, interp::Evaluate(**module, arguments));
      VKSPMD_ASSERT_OK_AND_ASSIGN(auto executable, exec::Executable::Compile(**module, device(0)));
      VKSPMD_ASSERT_OK_AND_ASSIGN(ir::Literal result, executable->Run(arguments));
      ir::Literal exact_literal(result.shape());
      exact_literal.SetFromDouble(0, exact);
      if (via_f32) {
        EXPECT_NEAR(result.GetAsDouble(0), reference.GetAsDouble(0), 1e-7 * magnitude);
        EXPECT_NEAR(result.GetAsDouble(0), exact, 1e-7 * magnitude);
      } else {
        EXPECT_EQ(CompareHalf(result, reference, 1), "");
        EXPECT_EQ(CompareHalf(result, exact_literal, 1), "");
      }
    }
  }
  // Rows of 1000 too (one pass, lanes sharing each row).
  for (const char* type : kHalfTypes) {
    EXPECT_EQ(Check(ReduceModule(type, {1000, 1000}, {1}, "add", "0"), -1, 1, 1), "") << type;
  }
}

std::string DotModule(const std::string& type, int64_t m, int64_t k, int64_t n) {
  const std::string lhs = Shape(type, {m, k}), rhs = Shape(type, {k, n}), out = Shape(type, {m, n});
  return absl::StrCat("HloModule dot\nENTRY %main (a: ", lhs, ", b: ", rhs, ") -> ", out,
                      " {\n  %a = ", lhs, " parameter(0)\n  %b = ", rhs,
                      " parameter(1)\n  ROOT %d = ", out,
                      " dot(%a, %b), lhs_contracting_dims={1}, ", "rhs_contracting_dims={0}\n}\n");
}

TEST_F(HalfPrecisionTest, DotsAccumulateInF32) {
  for (const char* type : kHalfTypes) {
    EXPECT_EQ(Check(DotModule(type, 64, 96, 33), -1, 1, 1), "") << type;
    EXPECT_EQ(Check(DotModule(type, 1, 7, 1), -1, 1, 1), "") << type;
    // A contraction long enough for split-K partial products (kept in f32) and their sum.
    EXPECT_EQ(Check(DotModule(type, 3, 5003, 5), -1, 1, 1), "") << type;
  }
}

// CPU drivers read runs of 4 16-bit operand values as one 64-bit load, unpacked into 4 values
// (KernelWriter::VectorRead): on each side of the dot, in every operand order, with odd sizes
// (tails, rows past the last group), batched and swapped (fewer columns than rows). Integer
// operands in [-3, 3] make every partial sum exact in f32, so the device must equal the
// reference bit for bit: a half read from the wrong place or converted differently shows.
TEST_F(HalfPrecisionTest, DotsReadRunsOfFourHalvesExactly) {
  const std::string xw = "lhs_contracting_dims={1}, rhs_contracting_dims={0}";
  const std::string xwt = "lhs_contracting_dims={1}, rhs_contracting_dims={1}";
  const std::string xtg = "lhs_contracting_dims={0}, rhs_contracting_dims={0}";
  const std::string batched =
      "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}";
  struct Case {
    std::vector<int64_t> lhs, rhs, out;
    std::string dims;
  };
  const std::vector<Case> cases = {
      {{127, 68}, {68, 129}, {127, 129}, xw},
      {{33, 12}, {12, 132}, {33, 132}, xw},
      {{33, 19}, {19, 68}, {33, 68}, xw},
      {{127, 68}, {129, 68}, {127, 129}, xwt},
      {{7, 12}, {13, 12}, {7, 13}, xwt},
      {{131, 20}, {131, 37}, {20, 37}, xtg},
      {{67, 8}, {67, 64}, {8, 64}, xtg},
      {{17, 132}, {17, 12}, {132, 12}, xtg},
      {{3, 17, 20}, {3, 9, 20}, {3, 17, 9}, batched},
      {{256, 64}, {64, 256}, {256, 256}, xw},
  };
  for (const char* type : kHalfTypes) {
    for (const Case& c : cases) {
      const std::string text = absl::StrCat("HloModule dot\nENTRY e {\n  x = ", Shape(type, c.lhs),
                                            " parameter(0)\n  y = ", Shape(type, c.rhs),
                                            " parameter(1)\n  ROOT d = ", Shape(type, c.out),
                                            " dot(x, y), ", c.dims, "\n}\n");
      absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
      ASSERT_TRUE(module.ok()) << module.status() << "\n" << text;
      std::vector<ir::Literal> arguments = RandomArguments(**module, 7, -3.49, 3.49);
      for (ir::Literal& argument : arguments) {
        for (int64_t i = 0; i < argument.ElementCount(); ++i) {
          argument.SetFromDouble(i, std::round(argument.GetAsDouble(i)));
        }
      }
      EXPECT_EQ(Check(text, 0, 0, 0, std::move(arguments)), "") << type;
    }
  }
}

// Devices without 16-bit storage refuse f16/bf16 naming the instruction.
TEST(HalfPrecisionPlanTest, DeviceWithout16BitStorageIsRefusedByName) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(
      "HloModule h\nENTRY %main (x: bf16[4]) -> bf16[4] {\n  %x = bf16[4] parameter(0)\n"
      "  ROOT %n = bf16[4] negate(%x)\n}\n");
  ASSERT_TRUE(module.ok()) << module.status();
  codegen::TargetInfo target;
  target.int16_buffers = false;
  absl::StatusOr<codegen::ProgramPlan> plan = codegen::PlanKernels(**module, target);
  ASSERT_EQ(plan.status().code(), absl::StatusCode::kUnimplemented) << plan.status();
  EXPECT_NE(plan.status().message().find("%x"), std::string::npos) << plan.status();
  EXPECT_NE(plan.status().message().find("16-bit storage"), std::string::npos) << plan.status();
  target.int16_buffers = true;
  EXPECT_TRUE(codegen::PlanKernels(**module, target).ok());
}

}  // namespace
}  // namespace vkspmd::testing
