// Every op the device compiler supports, over a matrix of shapes, against the CPU reference.
// CI runs a fixed sample; VKSPMD_FULL_SWEEP=1 (the `slow` ctest entry) runs the full matrix:
// 1, 7, 31, 64, 127, 1000 and 4097 elements per dimension, ranks 0 to 5, and dot with M, N, K in
// {1, 3, 17, 64, 129, 1000} in all four transpose combinations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/exec/executable.h"
#include "src/interp/evaluator.h"
#include "src/ir/parser.h"
#include "tests/exec/device_reference.h"
#include "tests/exec/random_module.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

bool FullSweep() {
  const char* full = std::getenv("VKSPMD_FULL_SWEEP");
  return full != nullptr && std::string(full) == "1";
}

std::string ShapeText(const std::string& type, const std::vector<int64_t>& dimensions) {
  return absl::StrCat(type, "[", absl::StrJoin(dimensions, ","), "]");
}

std::vector<std::vector<int64_t>> Shapes() {
  if (!FullSweep()) return {{}, {7}, {31, 3}, {2, 3, 4, 5, 1}};
  return {{},     {1},     {7},       {31},      {64},      {127},        {1000},
          {4097}, {7, 31}, {64, 127}, {1000, 7}, {3, 1, 4}, {2, 7, 3, 5}, {2, 3, 4, 5, 1}};
}

class OpSweepTest : public DeviceTest {
 protected:
  void SetUp() override { OpenDevices(1); }

  // Runs `text` on the device and the CPU with random arguments in [low, high]; "" when equal
  // (floats within 1e-4 of max(1, |reference|), everything else exactly).
  std::string Check(const std::string& text, double low, double high) {
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
    if (!module.ok()) return absl::StrCat("parse: ", module.status().message(), "\n", text);
    std::vector<ir::Literal> arguments = RandomArguments(**module, 7, low, high);
    absl::StatusOr<DeviceAndReference> results =
        RunOnDeviceAndReference(**module, arguments, device(0));
    if (!results.ok()) return absl::StrCat(results.status().message(), "\n", text);
    const std::string difference = CompareLiterals(results->device, results->reference, 1e-4);
    return difference.empty() ? "" : absl::StrCat(difference, "\n", text);
  }
};

struct ElementwiseOp {
  std::string name;
  std::string type;
  int arity;
  double low, high;
};

TEST_F(OpSweepTest, ElementwiseOps) {
  const std::vector<ElementwiseOp> ops = {{"negate", "f32", 1, -4, 4},
                                          {"abs", "f32", 1, -4, 4},
                                          {"sign", "f32", 1, -4, 4},
                                          {"exponential", "f32", 1, -4, 4},
                                          {"exponential-minus-one", "f32", 1, -1, 1},
                                          {"log", "f32", 1, 0.1, 8},
                                          {"log-plus-one", "f32", 1, -0.5, 4},
                                          {"sqrt", "f32", 1, 0, 8},
                                          {"rsqrt", "f32", 1, 0.1, 8},
                                          {"tanh", "f32", 1, -6, 6},
                                          {"logistic", "f32", 1, -6, 6},
                                          {"sine", "f32", 1, -4, 4},
                                          {"cosine", "f32", 1, -4, 4},
                                          {"floor", "f32", 1, -4, 4},
                                          {"ceil", "f32", 1, -4, 4},
                                          {"round-nearest-even", "f32", 1, -4, 4},
                                          {"erf", "f32", 1, -3, 3},
                                          {"negate", "s32", 1, 0, 0},
                                          {"abs", "s32", 1, 0, 0},
                                          {"sign", "s32", 1, 0, 0},
                                          {"not", "s32", 1, 0, 0},
                                          {"add", "f32", 2, -4, 4},
                                          {"subtract", "f32", 2, -4, 4},
                                          {"multiply", "f32", 2, -4, 4},
                                          {"divide", "f32", 2, 0.5, 4},
                                          {"remainder", "f32", 2, 0.5, 4},
                                          {"maximum", "f32", 2, -4, 4},
                                          {"minimum", "f32", 2, -4, 4},
                                          {"power", "f32", 2, 0.5, 2},
                                          {"atan2", "f32", 2, -4, 4},
                                          {"add", "s32", 2, 0, 0},
                                          {"subtract", "s32", 2, 0, 0},
                                          {"multiply", "s32", 2, 0, 0},
                                          {"divide", "s32", 2, 0, 0},
                                          {"remainder", "s32", 2, 0, 0},
                                          {"maximum", "s32", 2, 0, 0},
                                          {"minimum", "s32", 2, 0, 0},
                                          {"and", "s32", 2, 0, 0},
                                          {"or", "s32", 2, 0, 0},
                                          {"xor", "s32", 2, 0, 0},
                                          {"shift-left", "s32", 2, 0, 0},
                                          {"shift-right-logical", "s32", 2, 0, 0},
                                          {"shift-right-arithmetic", "s32", 2, 0, 0},
                                          {"power", "s32", 2, 0, 0},
                                          {"add", "u32", 2, 0, 0},
                                          {"divide", "u32", 2, 0, 0}};
  for (const ElementwiseOp& op : ops) {
    for (const std::vector<int64_t>& dims : Shapes()) {
      std::string shape = ShapeText(op.type, dims);
      std::string text = absl::StrCat("HloModule op\nENTRY %main (a: ", shape,
                                      op.arity == 2 ? absl::StrCat(", b: ", shape) : "", ") -> ",
                                      shape, " {\n  %a = ", shape, " parameter(0)\n");
      if (op.arity == 2) absl::StrAppend(&text, "  %b = ", shape, " parameter(1)\n");
      absl::StrAppend(&text, "  ROOT %r = ", shape, " ", op.name, "(%a",
                      op.arity == 2 ? ", %b" : "", ")\n}\n");
      EXPECT_EQ(Check(text, op.low, op.high), "") << op.name << " " << shape;
    }
  }
}

// vkspmd computes tanh with its own formula (one exponential, a series near 0); it must stay
// within 1e-6 (about 8 f32 ulps) relative to the reference everywhere, tiny arguments included
// (lavapipe's own tanh returns 0 for them).
TEST_F(OpSweepTest, TanhIsAccurateRelativeToItsValue) {
  constexpr int kCount = 4001;
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(R"(
HloModule tanh
ENTRY %main (x: f32[4001]) -> f32[4001] {
  %x = f32[4001] parameter(0)
  ROOT %t = f32[4001] tanh(%x)
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  ir::Literal x(ir::Shape(ir::DType::kF32, {kCount}));
  for (int i = 0; i < kCount; ++i) {
    double magnitude = std::pow(10.0, -8.0 + 9.0 * (i / 2) / (kCount / 2));  // 1e-8 .. 10
    x.SetFromDouble(i, i % 2 ? -magnitude : magnitude);
  }
  absl::StatusOr<ir::Literal> reference = interp::Evaluate(**module, {x});
  ASSERT_TRUE(reference.ok());
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto executable, exec::Executable::Compile(**module, device(0)));
  VKSPMD_ASSERT_OK_AND_ASSIGN(ir::Literal result, executable->Run({x}));
  for (int i = 0; i < kCount; ++i) {
    double want = reference->GetAsDouble(i), got = result.GetAsDouble(i);
    EXPECT_LE(std::fabs(got - want), 1e-6 * std::fabs(want)) << "tanh(" << x.GetAsDouble(i) << ")";
  }
}

TEST_F(OpSweepTest, CompareSelectClampConvert) {
  for (const std::vector<int64_t>& dims : Shapes()) {
    std::string f = ShapeText("f32", dims), s = ShapeText("s32", dims), p = ShapeText("pred", dims);
    for (const char* direction : {"EQ", "NE", "LT", "LE", "GT", "GE"}) {
      EXPECT_EQ(Check(absl::StrCat("HloModule c\nENTRY %main (a: ", f, ", b: ", f, ") -> ", f,
                                   " {\n  %a = ", f, " parameter(0)\n  %b = ", f,
                                   " parameter(1)\n  %p = ", p, " compare(%a, %b), direction=",
                                   direction, "\n  ROOT %r = ", f, " select(%p, %a, %b)\n}\n"),
                      -2, 2),
                "");
    }
    EXPECT_EQ(Check(absl::StrCat("HloModule c\nENTRY %main (lo: f32[], x: ", f, ", hi: f32[]) -> ",
                                 f, " {\n  %lo = f32[] parameter(0)\n  %x = ", f,
                                 " parameter(1)\n  %hi = f32[] parameter(2)\n  ROOT %r = ", f,
                                 " clamp(%lo, %x, %hi)\n}\n"),
                    -2, 2),
              "");
    EXPECT_EQ(Check(absl::StrCat("HloModule c\nENTRY %main (x: ", f, ") -> ", s, " {\n  %x = ", f,
                                 " parameter(0)\n  %big = ", f,
                                 " multiply(%x, %x)\n  ROOT %r = ", s, " convert(%big)\n}\n"),
                    -1e5, 1e5),
              "");
    EXPECT_EQ(Check(absl::StrCat("HloModule c\nENTRY %main (x: ", s, ") -> ", f, " {\n  %x = ", s,
                                 " parameter(0)\n  ROOT %r = ", f, " convert(%x)\n}\n"),
                    0, 0),
              "");
  }
}

TEST_F(OpSweepTest, DotAllTransposes) {
  std::vector<int64_t> sizes = FullSweep() ? std::vector<int64_t>{1, 3, 17, 64, 129, 1000}
                                           : std::vector<int64_t>{1, 17, 129};
  for (int64_t m : sizes) {
    for (int64_t n : sizes) {
      for (int64_t k : sizes) {
        if (!FullSweep() && !(m == k || n == k)) continue;
        for (int transposes = 0; transposes < 4; ++transposes) {
          bool lhs_t = transposes & 1, rhs_t = transposes & 2;
          std::string lhs = lhs_t ? ShapeText("f32", {k, m}) : ShapeText("f32", {m, k});
          std::string rhs = rhs_t ? ShapeText("f32", {n, k}) : ShapeText("f32", {k, n});
          std::string out = ShapeText("f32", {m, n});
          EXPECT_EQ(Check(absl::StrCat("HloModule d\nENTRY %main (a: ", lhs, ", b: ", rhs, ") -> ",
                                       out, " {\n  %a = ", lhs, " parameter(0)\n  %b = ", rhs,
                                       " parameter(1)\n  ROOT %r = ", out,
                                       " dot(%a, %b), lhs_contracting_dims={", lhs_t ? 0 : 1,
                                       "}, rhs_contracting_dims={", rhs_t ? 1 : 0, "}\n}\n"),
                          -1, 1),
                    "");
        }
      }
    }
  }
}

TEST_F(OpSweepTest, ShapeOpsAndReductions) {
  for (const std::vector<int64_t>& dims : Shapes()) {
    if (dims.empty()) continue;
    std::string f = ShapeText("f32", dims);
    std::vector<int64_t> reversed(dims.rbegin(), dims.rend());
    std::vector<std::string> permutation;
    for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
      permutation.push_back(std::to_string(d));
    }
    std::vector<std::string> all;
    for (size_t d = 0; d < dims.size(); ++d) all.push_back(std::to_string(d));
    const std::string header = absl::StrCat(
        "HloModule s\n%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
        "  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(%a, %b)\n}\n"
        "%max (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
        "  %b = f32[] parameter(1)\n  ROOT %s = f32[] maximum(%a, %b)\n}\n");
    auto program = [&](const std::string& out, const std::string& body) {
      return absl::StrCat(header, "ENTRY %main (x: ", f, ") -> ", out, " {\n  %x = ", f,
                          " parameter(0)\n", body, "}\n");
    };
    std::string t = ShapeText("f32", reversed);
    EXPECT_EQ(Check(program(t, absl::StrCat("  ROOT %r = ", t, " transpose(%x), dimensions={",
                                            absl::StrJoin(permutation, ","), "}\n")),
                    -2, 2),
              "");
    EXPECT_EQ(Check(program(f, absl::StrCat("  ROOT %r = ", f, " reverse(%x), dimensions={",
                                            absl::StrJoin(all, ","), "}\n")),
                    -2, 2),
              "");
    EXPECT_EQ(Check(program("f32[]", absl::StrCat("  %z = f32[] constant(0)\n  ROOT %r = f32[] ",
                                                  "reduce(%x, %z), dimensions={",
                                                  absl::StrJoin(all, ","), "}, to_apply=%add\n")),
                    -2, 2),
              "");
    std::vector<int64_t> rest(dims.begin() + 1, dims.end());
    std::string r = ShapeText("f32", rest);
    EXPECT_EQ(Check(program(r, absl::StrCat("  %z = f32[] constant(-inf)\n  ROOT %r = ", r,
                                            " reduce(%x, %z), dimensions={0}, to_apply=%max\n")),
                    -2, 2),
              "");
    std::vector<int64_t> padded = dims;
    padded[0] = dims[0] * 2 - 1 + 3;
    std::string p = ShapeText("f32", padded);
    std::string padding = "1_2_1";
    for (size_t d = 1; d < dims.size(); ++d) padding += "x0_0";
    EXPECT_EQ(Check(program(p, absl::StrCat("  %z = f32[] constant(0.5)\n  ROOT %r = ", p,
                                            " pad(%x, %z), padding=", padding, "\n")),
                    -2, 2),
              "");
  }
}

}  // namespace
}  // namespace vkspmd::testing
