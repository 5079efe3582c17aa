// The dot kernel's variants against the CPU reference: llvmpipe's register tiles (with subgroup
// shuffles) and the GPUs' shared-memory tiles, forced on this device through VKSPMD_DOT_KERNEL,
// over odd and prime sizes, both operand orders, batch dims, several contracting dims, integer
// dtypes (exact), fused producers, contractions split into chunks (split-K) and vector loads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/exec/executable.h"
#include "src/interp/evaluator.h"
#include "src/ir/parser.h"
#include "tests/exec/random_module.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

std::string Shape(const std::string& type, const std::vector<int64_t>& dimensions) {
  return absl::StrCat(type, "[", absl::StrJoin(dimensions, ","), "]");
}

// A module computing one dot of parameters of the given shapes (`extra` adds instructions and
// `lhs`/`rhs` name the dot's operands).
std::string DotModule(const std::string& type, const std::vector<int64_t>& lhs_shape,
                      const std::vector<int64_t>& rhs_shape, const std::vector<int64_t>& out_shape,
                      const std::string& dims, const std::string& extra = "",
                      const std::string& lhs = "x", const std::string& rhs = "y") {
  return absl::StrCat("HloModule m\nENTRY e {\n  x = ", Shape(type, lhs_shape),
                      " parameter(0)\n  y = ", Shape(type, rhs_shape), " parameter(1)\n", extra,
                      "  ROOT d = ", Shape(type, out_shape), " dot(", lhs, ", ", rhs, "), ", dims,
                      "\n}\n");
}

class DotKernelTest : public DeviceTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    setenv("VKSPMD_DOT_KERNEL", GetParam().c_str(), 1);
    OpenDevices(1);
  }
  void TearDown() override { unsetenv("VKSPMD_DOT_KERNEL"); }

  // "" when the device equals the reference: integers exactly, floats within a relative 1e-5 of
  // the contraction's magnitude (sum of |x||y| <= K for operands in [-1, 1]).
  std::string Check(const std::string& text, int64_t contraction) {
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
    if (!module.ok()) return absl::StrCat("parse: ", module.status().message(), "\n", text);
    std::vector<ir::Literal> arguments = RandomArguments(**module, 11, -1, 1);
    if (!ir::IsFloat((*module)->entry()->root()->shape().dtype())) {
      arguments = RandomArguments(**module, 11, -9, 9);
    }
    absl::StatusOr<ir::Literal> reference = interp::Evaluate(**module, arguments);
    if (!reference.ok()) return std::string(reference.status().message());
    absl::StatusOr<std::unique_ptr<exec::Executable>> executable =
        exec::Executable::Compile(**module, device(0));
    if (!executable.ok()) return absl::StrCat(executable.status().message(), "\n", text);
    absl::StatusOr<ir::Literal> result = (*executable)->Run(arguments);
    if (!result.ok()) return std::string(result.status().message());
    const double tolerance =
        1e-5 * std::sqrt(static_cast<double>(std::max<int64_t>(contraction, 1)));
    for (int64_t i = 0; i < reference->ElementCount(); ++i) {
      if (ir::IsFloat(reference->dtype())) {
        const double a = result->GetAsDouble(i), b = reference->GetAsDouble(i);
        if (std::fabs(a - b) <= tolerance * std::max(1.0, std::fabs(b))) continue;
        return absl::StrCat("element ", i, ": device ", a, ", reference ", b, "\n", text);
      }
      if (result->GetAsInt64(i) != reference->GetAsInt64(i)) {
        return absl::StrCat("element ", i, ": device ", result->GetAsInt64(i), ", reference ",
                            reference->GetAsInt64(i), "\n", text);
      }
    }
    return "";
  }
};

// Odd, prime and power-of-two-adjacent sizes in all four operand orders.
TEST_P(DotKernelTest, MatricesInEveryOperandOrder) {
  struct Size {
    int64_t m, n, k;
  };
  // {1025, 1031, 9}: the shared-memory variant's large tiles (from 64 workgroups of them).
  const std::vector<Size> sizes = {{1, 1, 1},    {3, 7, 17},   {63, 65, 127}, {129, 3, 65},
                                   {17, 129, 7}, {1, 129, 63}, {127, 1, 129}, {1025, 1031, 9}};
  for (const Size& s : sizes) {
    for (bool lhs_transposed : {false, true}) {
      for (bool rhs_transposed : {false, true}) {
        const std::vector<int64_t> lhs =
            lhs_transposed ? std::vector<int64_t>{s.k, s.m} : std::vector<int64_t>{s.m, s.k};
        const std::vector<int64_t> rhs =
            rhs_transposed ? std::vector<int64_t>{s.n, s.k} : std::vector<int64_t>{s.k, s.n};
        const std::string dims =
            absl::StrCat("lhs_contracting_dims={", lhs_transposed ? 0 : 1,
                         "}, rhs_contracting_dims={", rhs_transposed ? 1 : 0, "}");
        EXPECT_EQ(Check(DotModule("f32", lhs, rhs, {s.m, s.n}, dims), s.k), "");
      }
    }
  }
}

TEST_P(DotKernelTest, BatchDimsAndSeveralContractingDims) {
  // Attention-like batched dots, a batch dim in the middle, and two contracting dims paired in
  // the opposite order.
  EXPECT_EQ(Check(DotModule("f32", {5, 33, 16}, {5, 16, 31}, {5, 33, 31},
                            "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
                            "rhs_contracting_dims={1}"),
                  16),
            "");
  EXPECT_EQ(Check(DotModule("f32", {7, 3, 17}, {17, 3, 9}, {3, 7, 9},
                            "lhs_batch_dims={1}, rhs_batch_dims={1}, lhs_contracting_dims={2}, "
                            "rhs_contracting_dims={0}"),
                  17),
            "");
  EXPECT_EQ(Check(DotModule("f32", {2, 5, 65, 3}, {2, 3, 5, 7}, {2, 65, 7},
                            "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={1,3}, "
                            "rhs_contracting_dims={2,1}"),
                  15),
            "");
}

TEST_P(DotKernelTest, IntegersExactly) {
  EXPECT_EQ(Check(DotModule("s32", {65, 63}, {63, 17}, {65, 17},
                            "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
                  63),
            "");
  EXPECT_EQ(Check(DotModule("u32", {3, 129}, {7, 129}, {3, 7},
                            "lhs_contracting_dims={1}, rhs_contracting_dims={1}"),
                  129),
            "");
}

// Contractions longer than a chunk are split (split-K) and their partial products summed.
TEST_P(DotKernelTest, SplitContraction) {
  EXPECT_EQ(Check(DotModule("f32", {3, 1031}, {1031, 5}, {3, 5},
                            "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
                  1031),
            "");
  EXPECT_EQ(Check(DotModule("f32", {1031, 9}, {1031, 65}, {9, 65},
                            "lhs_contracting_dims={0}, rhs_contracting_dims={0}"),
                  1031),
            "");
}

// Operands computed inside the kernel: a transpose's index remapping and an elementwise op.
TEST_P(DotKernelTest, FusedOperands) {
  EXPECT_EQ(Check(DotModule("f32", {17, 33}, {65, 17}, {33, 65},
                            "lhs_contracting_dims={0}, rhs_contracting_dims={1}",
                            "  t = f32[17,65] transpose(y), dimensions={1,0}\n"
                            "  s = f32[17,33] multiply(x, x)\n",
                            "s", "y"),
                  17),
            "");
  EXPECT_EQ(Check(DotModule("f32", {33, 17}, {65, 17}, {33, 65},
                            "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                            "  t = f32[17,65] transpose(y), dimensions={1,0}\n", "x", "t"),
                  17),
            "");
}

// Runs of 4 lane-side columns read as one vec4 (a lane side of a multiple of 4 elements in a
// buffer): x.W, exactly 4 columns, a transposed lhs as the lane side (fewer columns than rows),
// batched, split-K, integers, and a lane side computed in the kernel (read element by element).
TEST_P(DotKernelTest, VectorLoadsOfLaneRuns) {
  const std::string xw = "lhs_contracting_dims={1}, rhs_contracting_dims={0}";
  EXPECT_EQ(Check(DotModule("f32", {33, 19}, {19, 68}, {33, 68}, xw), 19), "");
  EXPECT_EQ(Check(DotModule("f32", {5, 9}, {9, 4}, {5, 4}, xw), 9), "");
  EXPECT_EQ(Check(DotModule("f32", {17, 132}, {17, 12}, {132, 12},
                            "lhs_contracting_dims={0}, rhs_contracting_dims={0}"),
                  17),
            "");
  EXPECT_EQ(Check(DotModule("f32", {3, 17, 12}, {3, 12, 20}, {3, 17, 20},
                            "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
                            "rhs_contracting_dims={1}"),
                  12),
            "");
  EXPECT_EQ(Check(DotModule("f32", {3, 1031}, {1031, 8}, {3, 8}, xw), 1031), "");
  EXPECT_EQ(Check(DotModule("s32", {9, 63}, {63, 16}, {9, 16}, xw), 63), "");
  EXPECT_EQ(Check(DotModule("u32", {9, 63}, {63, 16}, {9, 16}, xw), 63), "");
  EXPECT_EQ(Check(DotModule("f32", {33, 19}, {19, 68}, {33, 68}, xw,
                            "  s = f32[19,68] multiply(y, y)\n", "x", "s"),
                  19),
            "");
}

INSTANTIATE_TEST_SUITE_P(Variants, DotKernelTest, ::testing::Values("registers", "shared_memory"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

}  // namespace
}  // namespace vkspmd::testing
