// The GPU dot kernels on the CPU (no device): which dots a target with cooperative matrices runs on
// them, that their GLSL compiles to valid SPIR-V for several shapes, dtypes, operand orders and
// fragment shapes, and the split of long contractions (split-K) of dots with few result tiles.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/codegen/dot_tiling.h"
#include "src/codegen/program_plan.h"
#include "src/codegen/shader_compiler.h"
#include "tests/codegen/codegen_test_support.h"

namespace vkspmd::codegen {
namespace {

// An NVIDIA-like target: subgroups of 32, 48 KiB of shared memory, f16 cooperative matrices of
// `shape` (m == 0: none).
TargetInfo GpuTarget(TargetInfo::MatrixShape shape) {
  TargetInfo target;
  target.subgroup_size = 32;
  target.subgroup_shuffle = true;
  target.byte_predicates = true;
  target.int8_buffers = target.int16_buffers = true;
  target.max_shared_memory_bytes = 49152;
  target.max_storage_buffer_range = uint64_t{1} << 32;
  target.max_storage_buffers_per_stage = 16;
  target.shared_memory_dot = true;
  target.cooperative_matrix_f16 = shape;
  return target;
}

std::string Dims(const std::vector<int64_t>& dims) { return absl::StrJoin(dims, ","); }

// One dot of parameters: lhs [m, k] (or [k, m] transposed), rhs [k, n] (or [n, k]), `batch` in
// front of both when nonzero.
std::string DotText(const std::string& in, const std::string& out, int64_t m, int64_t n, int64_t k,
                    bool lhs_t, bool rhs_t, int64_t batch = 0) {
  std::vector<int64_t> lhs = lhs_t ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k};
  std::vector<int64_t> rhs = rhs_t ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
  std::vector<int64_t> result = {m, n};
  int64_t offset = 0;
  std::string batch_dims;
  if (batch > 0) {
    lhs.insert(lhs.begin(), batch);
    rhs.insert(rhs.begin(), batch);
    result.insert(result.begin(), batch);
    offset = 1;
    batch_dims = "lhs_batch_dims={0}, rhs_batch_dims={0}, ";
  }
  return absl::StrCat("HloModule m\nENTRY e {\n  x = ", in, "[", Dims(lhs),
                      "] parameter(0)\n  y = ", in, "[", Dims(rhs),
                      "] parameter(1)\n  ROOT d = ", out, "[", Dims(result), "] dot(x, y), ",
                      batch_dims, "lhs_contracting_dims={", offset + (lhs_t ? 0 : 1),
                      "}, rhs_contracting_dims={", offset + (rhs_t ? 1 : 0), "}\n}\n");
}

// The plan's dot kernel (the first kernel of kind dot).
const KernelPlan* DotKernel(const ProgramPlan& plan) {
  for (const KernelPlan& kernel : plan.kernels) {
    if (kernel.kind == KernelKind::kDot) return &kernel;
  }
  return nullptr;
}

TEST(DotMatrixTest, F16DotsOfEveryShapeCompileToValidSpirv) {
  struct Case {
    int64_t m, n, k;
  };
  // Odd and prime sizes (padded), exact tiles, large tiles (64 workgroups of 128 x 128), split-K.
  const std::vector<Case> cases = {{16, 16, 16},  {17, 19, 23},     {63, 65, 127},
                                   {128, 64, 32}, {1024, 1031, 17}, {64, 64, 4096}};
  const std::vector<TargetInfo::MatrixShape> shapes = {{16, 16, 16}, {16, 8, 16}, {16, 8, 8}};
  for (const TargetInfo::MatrixShape& shape : shapes) {
    for (const Case& c : cases) {
      for (const std::string out : {"f16"}) {
        for (int transposes = 0; transposes < 4; ++transposes) {
          const std::string text =
              DotText("f16", out, c.m, c.n, c.k, transposes & 1, transposes & 2, c.m < 64 ? 3 : 0);
          SCOPED_TRACE(absl::StrCat(shape.m, "x", shape.n, "x", shape.k, "\n", text));
          absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
          ASSERT_TRUE(module.ok()) << module.status();
          absl::StatusOr<ProgramPlan> plan = PlanProgram(**module, GpuTarget(shape));
          ASSERT_TRUE(plan.ok()) << plan.status();
          const KernelPlan* dot = DotKernel(*plan);
          ASSERT_NE(dot, nullptr);
          EXPECT_TRUE(dot->dot.cooperative_matrix);
          EXPECT_NE(dot->glsl.find("coopMatMulAddNV"), std::string::npos);
          EXPECT_EQ(dot->local_size, dot->dot.warps_m * dot->dot.warps_n * 32);
          absl::StatusOr<std::vector<uint32_t>> spirv = CompileComputeShader(dot->glsl, dot->name);
          EXPECT_TRUE(spirv.ok()) << spirv.status();
        }
      }
    }
  }
}

TEST(DotMatrixTest, LargeTilesWhereTheResultHasEnoughOfThem) {
  const TargetInfo target = GpuTarget({16, 16, 16});
  std::unique_ptr<ir::Module> module;
  ProgramPlan plan =
      PlanText(DotText("f16", "f16", 2048, 2048, 1024, false, false), target, module);
  ASSERT_NE(DotKernel(plan), nullptr);
  const DotTiling large = DotKernel(plan)->dot;
  EXPECT_EQ(large.warps_m * large.frags_m * 16, 128);
  EXPECT_EQ(large.warps_n * large.frags_n * 16, 128);
  EXPECT_EQ(large.lanes, 256);
  EXPECT_EQ(large.tiles * large.blocks, 256);
  EXPECT_EQ(large.chunks, 1);
  EXPECT_LE(MatrixSharedBytes(large), 49152);
  // 1024^2: 64 large tiles would leave half of an H100's 132 multiprocessors idle; 256 small.
  plan = PlanText(DotText("f16", "f16", 1024, 1024, 1024, false, false), target, module);
  const DotTiling small = DotKernel(plan)->dot;
  EXPECT_EQ(small.warps_m * small.frags_m * 16, 64);
  EXPECT_EQ(small.lanes, 128);
  EXPECT_EQ(small.tiles * small.blocks, 256);
  EXPECT_EQ(small.chunks, 1);
}

// Cooperative matrices only for f16 dots with at least one fragment in
// each direction, on a target that has them; everything else keeps the shared-memory kernel.
TEST(DotMatrixTest, SelectionByDtypeSizeAndTarget) {
  const TargetInfo with = GpuTarget({16, 16, 16});
  const TargetInfo without = GpuTarget({});
  struct Case {
    std::string text;
    bool matrix;
  };
  const std::vector<Case> cases = {
      {DotText("f16", "f16", 64, 64, 64, false, false), true},
      {DotText("f16", "f16", 64, 64, 64, true, true), true},
      {DotText("bf16", "bf16", 64, 64, 64, false, false), false},
      {DotText("f32", "f32", 64, 64, 64, false, false), false},
      {DotText("f16", "f16", 15, 64, 64, false, false), false},
      {DotText("f16", "f16", 64, 15, 64, false, false), false},
      {DotText("f16", "f16", 64, 64, 15, false, false), false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    std::unique_ptr<ir::Module> module;
    ProgramPlan plan = PlanText(c.text, with, module);
    ASSERT_NE(DotKernel(plan), nullptr);
    EXPECT_EQ(DotKernel(plan)->dot.cooperative_matrix, c.matrix);
    EXPECT_EQ(DotKernel(plan)->dot.shared_memory, !c.matrix);
    plan = PlanText(c.text, without, module);
    EXPECT_FALSE(DotKernel(plan)->dot.cooperative_matrix);
    EXPECT_TRUE(DotKernel(plan)->dot.shared_memory);
  }
  // No cooperative matrices where even the small tiles' shared memory does not fit.
  TargetInfo tiny = with;
  tiny.max_shared_memory_bytes = 8192;
  std::unique_ptr<ir::Module> module;
  ProgramPlan plan = PlanText(cases[0].text, tiny, module);
  EXPECT_FALSE(DotKernel(plan)->dot.cooperative_matrix);
}

// Few result tiles over a long contraction: the GPU kernels split it (a weight gradient x^T.g of
// 64 x 64 over 4096 rows would otherwise run in one workgroup); many tiles keep it whole.
TEST(DotMatrixTest, SplitKForFewTilesOnGpus) {
  for (const TargetInfo& target : {GpuTarget({}), GpuTarget({16, 16, 16})}) {
    for (const std::string type : {"f32", "f16"}) {
      SCOPED_TRACE(absl::StrCat(type, target.cooperative_matrix_f16.m));
      std::unique_ptr<ir::Module> module;
      ProgramPlan plan = PlanText(DotText(type, type, 64, 64, 4096, true, false), target, module);
      const DotTiling& skinny = DotKernel(plan)->dot;
      EXPECT_EQ(skinny.tiles * skinny.blocks, 1);
      EXPECT_EQ(skinny.chunks, 64);  // 128 wanted, at least 64 steps each.
      EXPECT_EQ(skinny.chunk, 64);
      EXPECT_EQ(skinny.groups, 64);
      // 256 rows: 4 chunks of 64.
      plan = PlanText(DotText(type, type, 64, 64, 256, true, false), target, module);
      EXPECT_EQ(DotKernel(plan)->dot.chunks, 4);
      EXPECT_EQ(plan.kernels.size(), 2u);  // The partial products, then their sum.
      // 2048^2 results: 256 tiles or more, one chunk however long the contraction.
      plan = PlanText(DotText(type, type, 2048, 2048, 8192, false, false), target, module);
      EXPECT_EQ(DotKernel(plan)->dot.chunks, 1);
      EXPECT_EQ(plan.kernels.size(), 1u);
    }
  }
}

}  // namespace
}  // namespace vkspmd::codegen
