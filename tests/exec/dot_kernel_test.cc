// The dot kernel's variants against the CPU reference: llvmpipe's register tiles (with subgroup
// shuffles) and the GPUs' shared-memory tiles, forced on this device through VKSPMD_DOT_KERNEL,
// over odd and prime sizes, both operand orders, batch dims, several contracting dims, integer
// dtypes (exact), fused producers, contractions split into chunks (split-K) and vector loads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/codegen/kernel_plan.h"
#include "src/exec/executable.h"
#include "src/interp/evaluator.h"
#include "src/ir/parser.h"
#include "tests/exec/device_reference.h"
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

// [m, k] . [k, n] dots with each operand stored as is or transposed.
std::vector<std::string> EveryOperandOrder(const std::string& type, int64_t m, int64_t n,
                                           int64_t k) {
  std::vector<std::string> texts;
  for (bool lhs_transposed : {false, true}) {
    for (bool rhs_transposed : {false, true}) {
      const std::vector<int64_t> lhs =
          lhs_transposed ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k};
      const std::vector<int64_t> rhs =
          rhs_transposed ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
      texts.push_back(
          DotModule(type, lhs, rhs, {m, n},
                    absl::StrCat("lhs_contracting_dims={", lhs_transposed ? 0 : 1,
                                 "}, rhs_contracting_dims={", rhs_transposed ? 1 : 0, "}")));
    }
  }
  return texts;
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
    absl::StatusOr<DeviceAndReference> results =
        RunOnDeviceAndReference(**module, arguments, device(0));
    if (!results.ok()) return absl::StrCat(results.status().message(), "\n", text);
    const double tolerance =
        1e-5 * std::sqrt(static_cast<double>(std::max<int64_t>(contraction, 1)));
    const std::string difference = CompareLiterals(results->device, results->reference, tolerance);
    return difference.empty() ? "" : absl::StrCat(difference, "\n", text);
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
    for (const std::string& text : EveryOperandOrder("f32", s.m, s.n, s.k)) {
      EXPECT_EQ(Check(text, s.k), "");
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

// Skinny weight gradients x^T.g (64 x 64 over many rows): the GPU kernels split the contraction
// (split-K) while the result has few tiles; 5 x 65 columns over 2053 rows, batched too.
TEST_P(DotKernelTest, SkinnyWeightGradients) {
  const std::string xtg = "lhs_contracting_dims={0}, rhs_contracting_dims={0}";
  EXPECT_EQ(Check(DotModule("f32", {256, 64}, {256, 64}, {64, 64}, xtg), 256), "");
  EXPECT_EQ(Check(DotModule("f32", {2053, 5}, {2053, 65}, {5, 65}, xtg), 2053), "");
  EXPECT_EQ(Check(DotModule("f32", {2, 1031, 17}, {2, 1031, 9}, {2, 17, 9},
                            "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={1}, "
                            "rhs_contracting_dims={1}"),
                  1031),
            "");
}

// Operands read through chains of transposes and reshapes of buffers (dot_tiling.h:
// ViewThrough): the attention heads' [b, h, s, d] -> [b * s, h * d] into x.W and into a weight
// gradient (contraction over two dims of the buffer on one side, one on the other), as the lane
// side (free dims not trailing), a [b * s, h * d] buffer split back into heads for a batched
// dot, a reshape splitting a dim after a transpose, a permuted batch dim and size-1 dims.
TEST_P(DotKernelTest, OperandsReadThroughTransposesAndReshapes) {
  const std::string heads =
      "  t = f32[2,5,3,7] transpose(x), dimensions={0,2,1,3}\n"
      "  m = f32[10,21] reshape(t)\n";
  EXPECT_EQ(Check(DotModule("f32", {2, 3, 5, 7}, {21, 9}, {10, 9},
                            "lhs_contracting_dims={1}, rhs_contracting_dims={0}", heads, "m", "y"),
                  21),
            "");
  EXPECT_EQ(Check(DotModule("f32", {2, 3, 5, 7}, {10, 9}, {21, 9},
                            "lhs_contracting_dims={0}, rhs_contracting_dims={0}", heads, "m", "y"),
                  10),
            "");
  EXPECT_EQ(Check(DotModule("f32", {2, 3, 5, 7}, {9, 10}, {9, 21},
                            "lhs_contracting_dims={1}, rhs_contracting_dims={0}", heads, "y", "m"),
                  10),
            "");
  const std::string split =
      "  r = f32[2,5,3,8] reshape(x)\n"
      "  t = f32[2,3,5,8] transpose(r), dimensions={0,2,1,3}\n";
  EXPECT_EQ(Check(DotModule("f32", {10, 24}, {2, 3, 8, 4}, {2, 3, 5, 4},
                            "lhs_batch_dims={0,1}, rhs_batch_dims={0,1}, lhs_contracting_dims={3}, "
                            "rhs_contracting_dims={2}",
                            split, "t", "y"),
                  8),
            "");
  EXPECT_EQ(Check(DotModule("f32", {10, 24}, {1}, {2, 3, 5, 5},
                            "lhs_batch_dims={0,1}, rhs_batch_dims={0,1}, lhs_contracting_dims={3}, "
                            "rhs_contracting_dims={3}",
                            split, "t", "t"),
                  8),
            "");
  EXPECT_EQ(Check(DotModule("f32", {4, 6}, {12, 5}, {2, 5},
                            "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                            "  t = f32[6,4] transpose(x), dimensions={1,0}\n"
                            "  v = f32[2,12] reshape(t)\n",
                            "v", "y"),
                  12),
            "");
  EXPECT_EQ(Check(DotModule("f32", {4, 3, 5}, {5, 3, 6}, {5, 4, 6},
                            "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
                            "rhs_contracting_dims={1}",
                            "  t = f32[5,4,3] transpose(x), dimensions={2,0,1}\n", "t", "y"),
                  3),
            "");
  EXPECT_EQ(Check(DotModule("f32", {6, 4}, {4, 1, 3}, {6, 1, 1, 3},
                            "lhs_contracting_dims={2}, rhs_contracting_dims={0}",
                            "  v = f32[6,1,4] reshape(x)\n", "v", "y"),
                  4),
            "");
}

// Vector runs of 4 on CPU drivers (dot_register_tiles.cc): lane-side columns whose contraction is
// their minor dim, read 4 steps at a time (x.W^T's W, the lhs of a swapped batched dot); the
// uniform side read 4 contraction steps (x.W's x) or 4 rows (x^T.g's x) per lane and handed out
// by shuffles. Odd and prime sizes, a contraction of whole rounds plus a tail, only a tail, rows
// past the last group (clamped groups), 12 rows (not split evenly: scalar reads), split-K, integers
// and a lane side computed in the kernel.
TEST_P(DotKernelTest, VectorRunsOfFour) {
  const std::string xwt = "lhs_contracting_dims={1}, rhs_contracting_dims={1}";
  const std::string xw = "lhs_contracting_dims={1}, rhs_contracting_dims={0}";
  const std::string xtg = "lhs_contracting_dims={0}, rhs_contracting_dims={0}";
  EXPECT_EQ(Check(DotModule("f32", {127, 68}, {129, 68}, {127, 129}, xwt), 68), "");
  EXPECT_EQ(Check(DotModule("f32", {7, 12}, {13, 12}, {7, 13}, xwt), 12), "");
  EXPECT_EQ(Check(DotModule("f32", {1, 4}, {5, 4}, {1, 5}, xwt), 4), "");
  EXPECT_EQ(Check(DotModule("f32", {1, 1}, {1, 1}, {1, 1}, xwt), 1), "");
  EXPECT_EQ(Check(DotModule("f32", {3, 17, 20}, {3, 9, 20}, {3, 17, 9},
                            "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
                            "rhs_contracting_dims={2}"),
                  20),
            "");
  EXPECT_EQ(Check(DotModule("f32", {3, 1032}, {5, 1032}, {3, 5}, xwt), 1032), "");
  EXPECT_EQ(Check(DotModule("s32", {9, 64}, {16, 64}, {9, 16}, xwt), 64), "");
  EXPECT_EQ(Check(DotModule("f32", {33, 20}, {29, 20}, {33, 29}, xwt,
                            "  s = f32[29,20] multiply(y, y)\n", "x", "s"),
                  20),
            "");
  EXPECT_EQ(Check(DotModule("f32", {127, 68}, {68, 129}, {127, 129}, xw), 68), "");
  EXPECT_EQ(Check(DotModule("f32", {33, 12}, {12, 132}, {33, 132}, xw), 12), "");
  EXPECT_EQ(Check(DotModule("f32", {131, 20}, {131, 37}, {20, 37}, xtg), 131), "");
  EXPECT_EQ(Check(DotModule("f32", {67, 8}, {67, 64}, {8, 64}, xtg), 67), "");
  EXPECT_EQ(Check(DotModule("f32", {67, 12}, {67, 64}, {12, 64}, xtg), 67), "");
  EXPECT_EQ(Check(DotModule("u32", {29, 16}, {29, 20}, {16, 20}, xtg), 29), "");
  EXPECT_EQ(Check(DotModule("f32", {2, 1031, 16}, {2, 1031, 24}, {2, 16, 24},
                            "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={1}, "
                            "rhs_contracting_dims={1}"),
                  1031),
            "");
}

INSTANTIATE_TEST_SUITE_P(Variants, DotKernelTest, ::testing::Values("registers", "shared_memory"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

// The cooperative-matrix (tensor core) kernel for f16 dots: on the device's cooperative matrices
// where it offers VK_NV_cooperative_matrix (NVIDIA GPUs; skipped, saying so, elsewhere), and with
// the fragments emulated by ordinary code (VKSPMD_DOT_KERNEL=cooperative_matrix_emulated[_MxNxK])
// on any device with f16 arithmetic and subgroups, lavapipe included: the tiling, staging, edges
// and the results' way out are the real kernel's.
class CooperativeMatrixDotTest : public DeviceTest,
                                 public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    setenv("VKSPMD_DOT_KERNEL", GetParam().c_str(), 1);
    OpenDevices(1);
  }
  void TearDown() override { unsetenv("VKSPMD_DOT_KERNEL"); }

  bool HasCooperativeMatrix() { return exec::TargetFor(device(0)).cooperative_matrix_f16.m > 0; }

  // "" when the device's f16 dot equals the reference (in double, rounded to f16) within one f16
  // ulp of the reference (2^-10 relative) plus 1e-5 sqrt(K) absolute for the f32 accumulation's
  // order; and when the plan ran its dot on cooperative matrices iff `matrix`.
  std::string Check(const std::string& text, int64_t contraction, bool matrix = true) {
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
    if (!module.ok()) return absl::StrCat("parse: ", module.status().message(), "\n", text);
    std::vector<ir::Literal> arguments = RandomArguments(**module, 5, -1, 1);
    absl::StatusOr<ir::Literal> reference = interp::Evaluate(**module, arguments);
    if (!reference.ok()) return std::string(reference.status().message());
    absl::StatusOr<std::unique_ptr<exec::Executable>> executable =
        exec::Executable::Compile(**module, device(0));
    if (!executable.ok()) return absl::StrCat(executable.status().message(), "\n", text);
    bool used = false;
    for (const codegen::KernelPlan& kernel : (*executable)->plan().kernels) {
      used |= kernel.kind == codegen::KernelKind::kDot && kernel.dot.cooperative_matrix;
    }
    if (used != matrix) return absl::StrCat("cooperative matrices used: ", used, "\n", text);
    absl::StatusOr<ir::Literal> result = (*executable)->Run(arguments);
    if (!result.ok()) return std::string(result.status().message());
    const double absolute =
        1e-5 * std::sqrt(static_cast<double>(std::max<int64_t>(contraction, 1)));
    for (int64_t i = 0; i < reference->ElementCount(); ++i) {
      const double a = result->GetAsDouble(i), b = reference->GetAsDouble(i);
      if (std::fabs(a - b) <= std::ldexp(std::fabs(b), -10) + absolute) continue;
      return absl::StrCat("element ", i, ": device ", a, ", reference ", b, "\n", text);
    }
    return "";
  }
};

// Without the extension (or, emulated, without f16 arithmetic and subgroups) the test is skipped
// with a message saying so.
#define SKIP_WITHOUT_COOPERATIVE_MATRIX()                                                     \
  if (!HasCooperativeMatrix()) {                                                              \
    GTEST_SKIP() << "VKSPMD_DOT_KERNEL=" << GetParam() << ": "                                \
                 << device(0).device().physical_device().name                                 \
                 << (GetParam() == "cooperative_matrix"                                       \
                         ? " has no VK_NV_cooperative_matrix with f16 x f16 -> f32 subgroup " \
                           "shapes, so no dot runs on cooperative matrices here"              \
                         : " lacks shaderFloat16, 16-bit storage or subgroups");              \
  }

TEST_P(CooperativeMatrixDotTest, F16MatricesOfOddSizesInEveryOperandOrder) {
  SKIP_WITHOUT_COOPERATIVE_MATRIX();
  const codegen::TargetInfo::MatrixShape shape = exec::TargetFor(device(0)).cooperative_matrix_f16;
  std::printf("%s: cooperative matrix shape %ux%ux%u (f16 x f16 -> f32, subgroup %u)\n",
              GetParam().c_str(), shape.m, shape.n, shape.k,
              exec::TargetFor(device(0)).subgroup_size);
  struct Size {
    int64_t m, n, k;
  };
  // Exact tiles, primes, one fragment, long contraction (large tiles: F16BatchedSplitAndFused).
  const std::vector<Size> sizes = {{16, 16, 16},   {17, 19, 23},   {63, 65, 127},
                                   {127, 131, 37}, {64, 64, 1031}, {33, 16, 16}};
  for (const Size& s : sizes) {
    for (const std::string& text : EveryOperandOrder("f16", s.m, s.n, s.k)) {
      EXPECT_EQ(Check(text, s.k), "");
    }
  }
}

TEST_P(CooperativeMatrixDotTest, F16BatchedSplitAndFused) {
  SKIP_WITHOUT_COOPERATIVE_MATRIX();
  // Large tiles (128 x 128: 32 batches of 2 x 2 such tiles, partly past the edges).
  EXPECT_EQ(Check(DotModule("f16", {32, 129, 24}, {32, 24, 131}, {32, 129, 131},
                            "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
                            "rhs_contracting_dims={1}"),
                  24),
            "");
  // Attention-like batches, a batch dim in the middle, two contracting dims.
  EXPECT_EQ(Check(DotModule("f16", {5, 33, 64}, {5, 64, 31}, {5, 33, 31},
                            "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
                            "rhs_contracting_dims={1}"),
                  64),
            "");
  EXPECT_EQ(Check(DotModule("f16", {37, 3, 17}, {17, 3, 41}, {3, 37, 41},
                            "lhs_batch_dims={1}, rhs_batch_dims={1}, lhs_contracting_dims={2}, "
                            "rhs_contracting_dims={0}"),
                  17),
            "");
  EXPECT_EQ(Check(DotModule("f16", {2, 5, 65, 7}, {2, 7, 5, 19}, {2, 65, 19},
                            "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={1,3}, "
                            "rhs_contracting_dims={2,1}"),
                  35),
            "");
  // Skinny weight gradient x^T.g: split-K partial sums in f32, then their sum.
  EXPECT_EQ(Check(DotModule("f16", {4099, 64}, {4099, 64}, {64, 64},
                            "lhs_contracting_dims={0}, rhs_contracting_dims={0}"),
                  4099),
            "");
  // An operand computed in the kernel (an elementwise producer, a transpose).
  EXPECT_EQ(Check(DotModule("f16", {33, 47}, {65, 47}, {33, 65},
                            "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                            "  t = f16[47,65] transpose(y), dimensions={1,0}\n"
                            "  s = f16[33,47] multiply(x, x)\n",
                            "s", "t"),
                  47),
            "");
  // Smaller than one fragment: the shared-memory kernel.
  EXPECT_EQ(Check(DotModule("f16", {3, 40}, {40, 40}, {3, 40},
                            "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
                  40, /*matrix=*/false),
            "");
}

// VK_NV_cooperative_matrix has no bf16 type: bf16 dots keep the shared-memory kernel, within one
// bf16 ulp of the reference (2^-7 relative) plus 1e-4.
TEST_P(CooperativeMatrixDotTest, Bf16KeepsTheSharedMemoryKernel) {
  SKIP_WITHOUT_COOPERATIVE_MATRIX();
  const std::string text = DotModule("bf16", {65, 63}, {63, 67}, {65, 67},
                                     "lhs_contracting_dims={1}, rhs_contracting_dims={0}");
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  ASSERT_TRUE(module.ok());
  std::vector<ir::Literal> arguments = RandomArguments(**module, 5, -1, 1);
  absl::StatusOr<ir::Literal> reference = interp::Evaluate(**module, arguments);
  ASSERT_TRUE(reference.ok());
  absl::StatusOr<std::unique_ptr<exec::Executable>> executable =
      exec::Executable::Compile(**module, device(0));
  ASSERT_TRUE(executable.ok()) << executable.status();
  for (const codegen::KernelPlan& kernel : (*executable)->plan().kernels) {
    EXPECT_FALSE(kernel.dot.cooperative_matrix) << kernel.name;
  }
  absl::StatusOr<ir::Literal> result = (*executable)->Run(arguments);
  ASSERT_TRUE(result.ok()) << result.status();
  for (int64_t i = 0; i < reference->ElementCount(); ++i) {
    const double a = result->GetAsDouble(i), b = reference->GetAsDouble(i);
    EXPECT_LE(std::fabs(a - b), std::ldexp(std::fabs(b), -7) + 1e-4) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, CooperativeMatrixDotTest,
                         ::testing::Values("cooperative_matrix", "cooperative_matrix_emulated",
                                           "cooperative_matrix_emulated_16x8x8"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

// Asking for cooperative matrices on a device without them is an error naming the device.
class CooperativeMatrixOverrideTest : public DeviceTest {
 protected:
  void SetUp() override { OpenDevices(1); }
  void TearDown() override { unsetenv("VKSPMD_DOT_KERNEL"); }
};

TEST_F(CooperativeMatrixOverrideTest, WithoutThemFailsClearly) {
  setenv("VKSPMD_DOT_KERNEL", "cooperative_matrix", 1);
  if (exec::TargetFor(device(0)).cooperative_matrix_f16.m > 0)
    GTEST_SKIP() << "the device has cooperative matrices";
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(DotModule(
      "f16", {16, 16}, {16, 16}, {16, 16}, "lhs_contracting_dims={1}, rhs_contracting_dims={0}"));
  ASSERT_TRUE(module.ok());
  absl::Status status = exec::Executable::Compile(**module, device(0)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("VKSPMD_DOT_KERNEL=cooperative_matrix"), std::string::npos)
      << status;
  EXPECT_NE(status.message().find("has no VK_NV_cooperative_matrix"), std::string::npos) << status;
  setenv("VKSPMD_DOT_KERNEL", "tensor_cores", 1);
  status = exec::Executable::Compile(**module, device(0)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find("expected shared_memory, registers, cooperative_matrix or "
                                  "cooperative_matrix_emulated"),
            std::string::npos)
      << status;
}

}  // namespace
}  // namespace vkspmd::testing
