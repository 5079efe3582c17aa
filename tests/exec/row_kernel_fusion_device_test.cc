// Multi-output fusion on a device: row kernels absorbing the kernels they read (softmax's masked
// scores, row max, exponentials, sum and quotient as one dispatch storing each), and map kernels
// absorbing producers they read through reshapes; row kernels keeping values several of their
// loops read in registers (row_cache.h), and recomputing them where rows are too long; checked
// against the CPU reference with the recorded vkCmdDispatch calls pinned.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "src/codegen/program_plan.h"
#include "src/exec/executable.h"
#include "src/ir/parser.h"
#include "tests/exec/dispatch_counter.h"
#include "tests/exec/random_module.h"
#include "tests/exec/testdata_programs.h"
#include "tests/support/compiled_program_test.h"
#include "tests/support/occurrences.h"

namespace vkspmd::testing {
namespace {

std::string TestdataText(const std::string& name) {
  return ReadTestdataText(VKSPMD_TESTDATA_DIR, name);
}

// testdata/fusion/softmax_forward_kept with rows of `length` instead of 19.
std::string SoftmaxOfRows(int64_t length) {
  return absl::StrReplaceAll(TestdataText("fusion/softmax_forward_kept"),
                             {{",19]", absl::StrCat(",", length, "]")}});
}

// A training step's layer norm forward with the residual add before it (x = a + b, kept for the
// backward, as are the centred values and the per-row reciprocal deviation), rows of `length`.
std::string LayerNormOfRows(int64_t length) {
  return absl::StrReplaceAll(R"(HloModule layer_norm_forward
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  a = f32[6,7,LEN] parameter(0)
  b = f32[6,7,LEN] parameter(1)
  gamma = f32[LEN] parameter(2)
  beta = f32[LEN] parameter(3)
  x = f32[6,7,LEN] add(a, b)
  zero = f32[] constant(0)
  sum = f32[6,7] reduce(x, zero), dimensions={2}, to_apply=add
  n = f32[] constant(LEN)
  nb = f32[6,7] broadcast(n), dimensions={}
  mean = f32[6,7] divide(sum, nb)
  meanb = f32[6,7,LEN] broadcast(mean), dimensions={0,1}
  c = f32[6,7,LEN] subtract(x, meanb)
  cc = f32[6,7,LEN] multiply(c, c)
  ss = f32[6,7] reduce(cc, zero), dimensions={2}, to_apply=add
  var = f32[6,7] divide(ss, nb)
  eps = f32[] constant(1e-5)
  epsb = f32[6,7] broadcast(eps), dimensions={}
  ve = f32[6,7] add(var, epsb)
  rs = f32[6,7] rsqrt(ve)
  rsb = f32[6,7,LEN] broadcast(rs), dimensions={0,1}
  xh = f32[6,7,LEN] multiply(c, rsb)
  gb = f32[6,7,LEN] broadcast(gamma), dimensions={2}
  bb = f32[6,7,LEN] broadcast(beta), dimensions={2}
  g = f32[6,7,LEN] multiply(xh, gb)
  y = f32[6,7,LEN] add(g, bb)
  ROOT t = (f32[6,7,LEN], f32[6,7,LEN], f32[6,7], f32[6,7,LEN]) tuple(x, xh, rs, y)
}
)",
                             {{"LEN", absl::StrCat(length)}});
}

// The per-invocation arrays a row kernel keeps values in (KernelWriter::DeclareRowCache).
int KeptArrays(const codegen::KernelPlan& kernel) {
  return Occurrences(kernel.glsl, "of this invocation's elements");
}

// Sets an environment variable for one scope.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnvironment() { unsetenv(name_); }

 private:
  const char* name_;
};

class RowKernelFusionDeviceTest : public CompiledProgramTest {
 protected:
  void SetUp() override { OpenDevices(1); }
};

TEST_F(RowKernelFusionDeviceTest, AForwardSoftmaxKeepingEveryValueIsOneDispatch) {
  // A training step's attention softmax (testdata/fusion/softmax_forward_kept.hlo): causally
  // masked scores, their row max, the exponentials, the broadcast sum and the quotient are all
  // read later (here: returned). Four kernels before row kernels absorbed map kernels and
  // single-pass row reductions; now one row kernel storing the max once per row. Rows of 19 (not
  // a multiple of the lanes).
  const std::string text = TestdataText("fusion/softmax_forward_kept");
  const codegen::ProgramPlan* compiled = CompileAndCompare(text);
  ASSERT_NE(compiled, nullptr);
  const codegen::ProgramPlan& plan = *compiled;
  ASSERT_EQ(plan.kernels.size(), 1u);
  const codegen::KernelPlan& kernel = plan.kernels[0];
  EXPECT_EQ(kernel.kind, codegen::KernelKind::kRows);
  EXPECT_EQ(kernel.root->name(), "sm");
  EXPECT_EQ(kernel.row.rows, 30);
  ASSERT_EQ(kernel.row.reductions.size(), 2u);
  EXPECT_EQ(kernel.row.reductions[0]->name(), "m");  // The max first: the sum reads it.
  EXPECT_EQ(kernel.row.reductions[1]->name(), "sum");
  EXPECT_EQ(kernel.also_stores.size(), 4u);  // masked, m, ex and sumb besides sm.
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 1);
}

TEST_F(RowKernelFusionDeviceTest, AMaxReadInOtherRowsKeepsItsKernel) {
  // The exponentials subtract the max of the reversed row order: a row kernel computing the max
  // of its own row only cannot supply it, so the max keeps its kernel (the rest is one row
  // kernel) and the results still equal the reference.
  const std::string text =
      absl::StrReplaceAll(TestdataText("fusion/softmax_forward_kept"),
                          {{"  mb = f32[2,3,5,19] broadcast(m), dimensions={0,1,2}\n",
                            "  mr = f32[2,3,5] reverse(m), dimensions={2}\n"
                            "  mb = f32[2,3,5,19] broadcast(mr), dimensions={0,1,2}\n"}});
  const codegen::ProgramPlan* compiled = CompileAndCompare(text);
  ASSERT_NE(compiled, nullptr);
  const codegen::ProgramPlan& plan = *compiled;
  ASSERT_EQ(plan.kernels.size(), 3u);  // masked, m, then the rest.
  EXPECT_EQ(plan.kernels[1].root->name(), "m");
  EXPECT_EQ(plan.kernels[1].kind, codegen::KernelKind::kReduction);
  EXPECT_EQ(plan.kernels[2].kind, codegen::KernelKind::kRows);
  ASSERT_EQ(plan.kernels[2].row.reductions.size(), 1u);
  EXPECT_EQ(plan.kernels[2].row.reductions[0]->name(), "sum");
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 3);
}

TEST_F(RowKernelFusionDeviceTest, AProducerReadThroughAReshapeIsStoredByItsReader) {
  // A GELU-like activation g of a [2,4,8] value, kept for the backward pass (returned), and its
  // product with h reshaped to [8,8] for the next dot: kernels index values linearly, so the
  // reshape's kernel computes and stores g too. Two dispatches before.
  const std::string text = R"(HloModule reshape_reader
ENTRY e {
  x = f32[2,4,8] parameter(0)
  b = f32[8] parameter(1)
  bb = f32[2,4,8] broadcast(b), dimensions={2}
  h = f32[2,4,8] add(x, bb)
  half = f32[] constant(0.5)
  halfb = f32[2,4,8] broadcast(half), dimensions={}
  hh = f32[2,4,8] multiply(h, halfb)
  t = f32[2,4,8] tanh(hh)
  g = f32[2,4,8] multiply(t, h)
  p = f32[2,4,8] multiply(g, h)
  r = f32[8,8] reshape(p)
  ROOT out = (f32[2,4,8], f32[8,8]) tuple(g, r)
}
)";
  const codegen::ProgramPlan* compiled = CompileAndCompare(text);
  ASSERT_NE(compiled, nullptr);
  ASSERT_EQ(compiled->kernels.size(), 1u);
  EXPECT_EQ(compiled->kernels[0].root->name(), "r");
  ASSERT_EQ(compiled->kernels[0].also_stores.size(), 1u);
  EXPECT_EQ(compiled->kernels[0].also_stores[0]->name(), "g");
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 1);
}

TEST_F(RowKernelFusionDeviceTest, SoftmaxKeepsItsValuesInRegistersBetweenItsLoops) {
  // The masked scores are read by the max's loop, by the sum's (through the exponentials) and
  // stored; the exponentials by the sum's loop and stored. Each is computed once, in the first
  // loop reading it, and kept in an array of ceil(row / lanes) values per invocation, while both
  // fit the 32 the target allows: rows shorter than the lanes (3), a multiple of them (8 * 8),
  // odd and prime (19, 31). Longer rows keep only the exponentials (ceil(row / lanes) in (16,
  // 32]), or nothing (over 32 per invocation): then every loop computes them again.
  for (int64_t length : {3, 8, 19, 31, 64, 67, 129, 257, 509}) {
    SCOPED_TRACE(absl::StrCat("rows of ", length));
    const std::string text = SoftmaxOfRows(length);
    const codegen::ProgramPlan* compiled = CompileAndCompare(text);
    ASSERT_NE(compiled, nullptr);
    ASSERT_EQ(compiled->kernels.size(), 1u);
    const codegen::KernelPlan& kernel = compiled->kernels[0];
    ASSERT_EQ(kernel.kind, codegen::KernelKind::kRows);
    const int64_t slots = (length + kernel.row.lanes - 1) / kernel.row.lanes;
    const int expected = 2 * slots <= 32 ? 2 : slots <= 32 ? 1 : 0;
    EXPECT_EQ(KeptArrays(kernel), expected) << kernel.glsl;
    // The loops reading kept values are written out, each iteration setting row_slot: all three
    // with both kept, the sum's and the stores' with the exponentials alone.
    EXPECT_EQ(Occurrences(kernel.glsl, "row_slot = "), (expected == 2 ? 3 : 2 * expected) * slots);
    EXPECT_EQ(DispatchesOfCompiling(device(0), text), 1);
  }
}

TEST_F(RowKernelFusionDeviceTest, LayerNormKeepsItsValuesInRegistersBetweenItsLoops) {
  // The residual sum x is read by the mean's loop, the variance's (through the centred values)
  // and the stores; the centred values by the variance's loop and the stores. Rows shorter than
  // the lanes, odd, prime, the default model's 64, and too long to keep anything.
  for (int64_t length : {5, 37, 64, 300}) {
    SCOPED_TRACE(absl::StrCat("rows of ", length));
    const codegen::ProgramPlan* compiled = CompileAndCompare(LayerNormOfRows(length));
    ASSERT_NE(compiled, nullptr);
    int kept = 0;
    int64_t lanes = 0;
    std::string kernels;
    for (const codegen::KernelPlan& kernel : compiled->kernels) {
      kept += KeptArrays(kernel);
      if (kernel.kind == codegen::KernelKind::kRows) lanes = kernel.row.lanes;
      absl::StrAppend(&kernels, kernel.name, " (", codegen::KernelKindName(kernel.kind), ", kept ",
                      KeptArrays(kernel), ") ");
    }
    ASSERT_GT(lanes, 0) << kernels;
    EXPECT_EQ(kept > 0, (length + lanes - 1) / lanes <= 32) << kernels;
  }
}

TEST_F(RowKernelFusionDeviceTest, ATrainingStepsLayerNormIsOneDispatch) {
  // What a training step keeps of a layer norm: the residual sum, the centred values, the per-row
  // reciprocal deviation and the output, here reshaped to [42, LEN] for the next dot. The mean's
  // row kernel (storing x and c), the variance's (one value per row) and the scaling were three
  // dispatches; now the scaling's kernel absorbs both row kernels, runs the mean's loop before the
  // variance's, and stores rs once per row. Rows shorter than the lanes, odd, prime, the default
  // model's 64 and long ones.
  for (int64_t length : {5, 37, 64, 67, 300}) {
    SCOPED_TRACE(absl::StrCat("rows of ", length));
    const std::string text = absl::StrReplaceAll(
        absl::StrReplaceAll(
            LayerNormOfRows(length),
            {{absl::StrCat("  ROOT t = (f32[6,7,", length, "], f32[6,7,", length,
                           "], f32[6,7], f32[6,7,", length, "]) tuple(x, xh, rs, y)"),
              "  yr = f32[42,LEN] reshape(y)\n"
              "  ROOT t = (f32[6,7,LEN], f32[6,7,LEN], f32[6,7], f32[42,LEN]) tuple(x, c, rs, "
              "yr)"}}),
        {{"LEN", absl::StrCat(length)}});
    ASSERT_NE(text.find("reshape(y)"), std::string::npos);
    const codegen::ProgramPlan* compiled = CompileAndCompare(text);
    ASSERT_NE(compiled, nullptr);
    ASSERT_EQ(compiled->kernels.size(), 1u);
    const codegen::KernelPlan& kernel = compiled->kernels[0];
    EXPECT_EQ(kernel.kind, codegen::KernelKind::kRows);
    EXPECT_EQ(kernel.root->name(), "yr");
    EXPECT_EQ(kernel.row.rows, 42);
    ASSERT_EQ(kernel.row.reductions.size(), 2u);
    EXPECT_EQ(kernel.row.reductions[0]->name(), "sum");  // The mean first: the variance reads it.
    EXPECT_EQ(kernel.row.reductions[1]->name(), "ss");
    EXPECT_EQ(Occurrences(kernel.glsl, "== 0u) store"), 1) << kernel.glsl;  // rs, once per row.
    EXPECT_EQ(DispatchesOfCompiling(device(0), text), 1);
  }
}

TEST_F(RowKernelFusionDeviceTest, ARowKernelAbsorbsARowKernelOfAnotherShapeReadThroughAReshape) {
  // A loss's softmax: the row max, the shifted logits and their exponentials kept for the
  // backward pass ([4,3,11]: a row kernel with the max inside), and the probabilities in the
  // [12,11] rows the next dot reads (a row kernel with the sum inside). The rows are the same
  // runs of 11 elements, so the probabilities' kernel computes the other's too, its max first:
  // one dispatch, two before.
  const std::string text = R"(HloModule loss_rows
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] maximum(a, b)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  x = f32[4,3,11] parameter(0)
  low = f32[] constant(-inf)
  m = f32[4,3] reduce(x, low), dimensions={2}, to_apply=max
  mb = f32[4,3,11] broadcast(m), dimensions={0,1}
  s = f32[4,3,11] subtract(x, mb)
  ex = f32[4,3,11] exponential(s)
  zero = f32[] constant(0)
  er = f32[12,11] reshape(ex)
  sum = f32[12] reduce(er, zero), dimensions={1}, to_apply=add
  sb = f32[12,11] broadcast(sum), dimensions={0}
  p = f32[12,11] divide(er, sb)
  ROOT t = (f32[4,3,11], f32[4,3,11], f32[12,11]) tuple(s, ex, p)
}
)";
  const codegen::ProgramPlan* compiled = CompileAndCompare(text);
  ASSERT_NE(compiled, nullptr);
  std::string kernels;
  for (const codegen::KernelPlan& kernel : compiled->kernels) {
    absl::StrAppend(&kernels, kernel.name, " (", codegen::KernelKindName(kernel.kind), ") ");
  }
  ASSERT_EQ(compiled->kernels.size(), 1u) << kernels;
  const codegen::KernelPlan& kernel = compiled->kernels[0];
  EXPECT_EQ(kernel.kind, codegen::KernelKind::kRows);
  EXPECT_EQ(kernel.root->name(), "p");
  ASSERT_EQ(kernel.row.reductions.size(), 2u);
  EXPECT_EQ(kernel.row.reductions[0]->name(), "m");
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 1);
}

// Merges the row kernels may not make, found by review: each must still compile into kernels
// that equal the reference.
TEST_F(RowKernelFusionDeviceTest, StoresOfOtherSizesKeepTheirKernel) {
  // A layer norm's statistics with nothing scaling them: the variance's row kernel (its root the
  // per-row rsqrt) cannot also store the mean kernel's per-element x and c.
  const std::string statistics = absl::StrReplaceAll(
      LayerNormOfRows(64),
      {{"  ROOT t = (f32[6,7,64], f32[6,7,64], f32[6,7], f32[6,7,64]) tuple(x, xh, rs, y)",
        "  ROOT t = (f32[6,7,64], f32[6,7,64], f32[6,7]) tuple(x, c, rs)"}});
  ASSERT_NE(statistics.find("tuple(x, c, rs)"), std::string::npos);
  EXPECT_NE(CompileAndCompare(statistics), nullptr);
  // Rows of 40 stored by a kernel whose rows are 24 long (the same 6 rows).
  const std::string lengths = R"(HloModule rows_len
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  x = f32[6,40] parameter(0)
  z = f32[6,24] parameter(1)
  zero = f32[] constant(0)
  sum = f32[6] reduce(x, zero), dimensions={1}, to_apply=add
  n = f32[] constant(40)
  nb = f32[6] broadcast(n), dimensions={}
  mean = f32[6] divide(sum, nb)
  meanb = f32[6,40] broadcast(mean), dimensions={0}
  p = f32[6,40] subtract(x, meanb)
  pp = f32[6,40] multiply(p, p)
  s1 = f32[6] reduce(pp, zero), dimensions={1}, to_apply=add
  s1b = f32[6,24] broadcast(s1), dimensions={0}
  y = f32[6,24] multiply(z, s1b)
  ROOT t = (f32[6,40], f32[6,24]) tuple(p, y)
})";
  EXPECT_NE(CompileAndCompare(lengths), nullptr);
}

TEST_F(RowKernelFusionDeviceTest, AValueStoredOncePerRowReadsNoKeptArray) {
  // r, one value per row stored from lane 0 outside the element loop, reads x at another element
  // of the row (a slice): x must not be kept in a per-invocation array there, whose slot would be
  // the last loop's (42 of 2730 elements were wrong).
  const std::string text = R"(HloModule perrow_cache
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  a = f32[6,7,64] parameter(0)
  b = f32[6,7,64] parameter(1)
  q = f32[6,7] parameter(2)
  z = f32[6,7,64] parameter(3)
  x = f32[6,7,64] add(a, b)
  zero = f32[] constant(0)
  sum = f32[6,7] reduce(x, zero), dimensions={2}, to_apply=add
  n = f32[] constant(64)
  nb = f32[6,7] broadcast(n), dimensions={}
  mean = f32[6,7] divide(sum, nb)
  meanb = f32[6,7,64] broadcast(mean), dimensions={0,1}
  c = f32[6,7,64] subtract(x, meanb)
  cc = f32[6,7,64] multiply(c, c)
  ss = f32[6,7] reduce(cc, zero), dimensions={2}, to_apply=add
  var = f32[6,7] divide(ss, nb)
  eps = f32[] constant(1e-5)
  epsb = f32[6,7] broadcast(eps), dimensions={}
  ve = f32[6,7] add(var, epsb)
  rs = f32[6,7] rsqrt(ve)
  x0 = f32[6,7,1] slice(x), slice={[0:6], [0:7], [5:6]}
  x0r = f32[6,7] reshape(x0)
  t1 = f32[6,7] add(rs, x0r)
  w = f32[6,7] exponential(q)
  r = f32[6,7] add(t1, w)
  wb = f32[6,7,64] broadcast(w), dimensions={0,1}
  y = f32[6,7,64] multiply(z, wb)
  ROOT t = (f32[6,7], f32[6,7,64]) tuple(r, y)
})";
  EXPECT_NE(CompileAndCompare(text), nullptr);
}

TEST_F(RowKernelFusionDeviceTest, KeptAndRecomputedValuesAreTheSameBits) {
  // VKSPMD_ROW_CACHE_SLOTS=0 recomputes every value in each loop, as before row caches: the same
  // operations in the same order, so the same bits.
  for (const std::string& text : {SoftmaxOfRows(19), LayerNormOfRows(37)}) {
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
    ASSERT_TRUE(module.ok()) << module.status();
    const std::vector<ir::Literal> arguments = RandomArguments(**module, 3);
    std::vector<ir::Literal> results;
    for (const char* slots : {"32", "0"}) {
      ScopedEnvironment environment("VKSPMD_ROW_CACHE_SLOTS", slots);
      absl::StatusOr<std::unique_ptr<exec::Executable>> executable =
          exec::Executable::Compile(**module, device(0));
      ASSERT_TRUE(executable.ok()) << executable.status();
      int kept = 0;
      for (const codegen::KernelPlan& kernel : (*executable)->plan().kernels) {
        kept += KeptArrays(kernel);
      }
      EXPECT_EQ(kept > 0, std::string(slots) != "0");
      absl::StatusOr<ir::Literal> result = (*executable)->Run(arguments);
      ASSERT_TRUE(result.ok()) << result.status();
      results.push_back(std::move(*result));
    }
    EXPECT_EQ(CompareLiterals(results[0], results[1], /*relative=*/0), "");
  }
}

}  // namespace
}  // namespace vkspmd::testing
