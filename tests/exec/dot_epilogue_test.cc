// Dot epilogue fusion on a device (src/codegen/dot_epilogue_fusion.h): a dot kernel computing
// its elementwise consumer (bias add, scaling, activation, residual add, an SGD update in place)
// from each result element before storing it, in each dot kernel variant forced on this device
// (llvmpipe's register tiles, the GPUs' shared-memory tiles, and for f16 the cooperative-matrix
// kernel emulated by ordinary code). Every result is checked against the CPU reference, and the
// recorded vkCmdDispatch calls are pinned (one per dot where the epilogue is fused).
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_replace.h"
#include "src/codegen/kernel_plan.h"
#include "src/exec/executable.h"
#include "tests/exec/dispatch_counter.h"
#include "tests/support/compiled_program_test.h"
#include "tests/support/occurrences.h"

namespace vkspmd::testing {
namespace {

using codegen::KernelKind;
using codegen::KernelPlan;
using codegen::ProgramPlan;

class DotEpilogueTest : public CompiledProgramTest,
                        public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    setenv("VKSPMD_DOT_KERNEL", GetParam().c_str(), 1);
    OpenDevices(1);
  }
  void TearDown() override {
    unsetenv("VKSPMD_DOT_KERNEL");
    CompiledProgramTest::TearDown();
  }

  static int Count(const ProgramPlan& plan, KernelKind kind) {
    int count = 0;
    for (const KernelPlan& kernel : plan.kernels) count += kernel.kind == kind;
    return count;
  }
  static std::string EpilogueOf(const KernelPlan& kernel) {
    return kernel.epilogue == nullptr ? "(none)" : kernel.epilogue->name();
  }
};

TEST_P(DotEpilogueTest, ABiasAddIsStoredByTheDot) {
  // x.W + b over prime sizes: one dispatch (two before), and the dot's own result has no buffer.
  const std::string text = R"(HloModule bias
ENTRY e {
  x = f32[37,19] parameter(0)
  w = f32[19,29] parameter(1)
  b = f32[29] parameter(2)
  d = f32[37,29] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[37,29] broadcast(b), dimensions={1}
  ROOT y = f32[37,29] add(d, bb)
}
)";
  const ProgramPlan* plan = CompileAndCompare(text);
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(plan->kernels.size(), 1u);
  EXPECT_EQ(plan->kernels[0].kind, KernelKind::kDot);
  EXPECT_EQ(EpilogueOf(plan->kernels[0]), "y");
  EXPECT_TRUE(plan->kernels[0].also_stores.empty());
  EXPECT_EQ(plan->materialized.count(plan->kernels[0].root), 0u);
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 1);
}

TEST_P(DotEpilogueTest, AnActivationKeepingItsInputIsOneDispatch) {
  // An MLP's first layer, x.W^T + b then a tanh GELU, both returned (the backward pass reads the
  // pre-activation): the dot stores the pre-activation and the activation (three dispatches
  // before multi-output fusion, two before epilogues).
  const std::string text = R"(HloModule gelu
ENTRY e {
  x = f32[41,23] parameter(0)
  w = f32[31,23] parameter(1)
  b = f32[31] parameter(2)
  d = f32[41,31] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  bb = f32[41,31] broadcast(b), dimensions={1}
  h = f32[41,31] add(d, bb)
  c = f32[] constant(0.044715)
  cb = f32[41,31] broadcast(c), dimensions={}
  h2 = f32[41,31] multiply(h, h)
  h3 = f32[41,31] multiply(h2, h)
  ch3 = f32[41,31] multiply(cb, h3)
  inner = f32[41,31] add(h, ch3)
  s = f32[] constant(0.7978846)
  sb = f32[41,31] broadcast(s), dimensions={}
  u = f32[41,31] multiply(sb, inner)
  t = f32[41,31] tanh(u)
  one = f32[] constant(1)
  oneb = f32[41,31] broadcast(one), dimensions={}
  t1 = f32[41,31] add(oneb, t)
  half = f32[] constant(0.5)
  halfb = f32[41,31] broadcast(half), dimensions={}
  hh = f32[41,31] multiply(halfb, h)
  g = f32[41,31] multiply(hh, t1)
  ROOT out = (f32[41,31], f32[41,31]) tuple(h, g)
}
)";
  const ProgramPlan* plan = CompileAndCompare(text);
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(plan->kernels.size(), 1u);
  const KernelPlan& kernel = plan->kernels[0];
  EXPECT_EQ(kernel.kind, KernelKind::kDot);
  EXPECT_EQ(EpilogueOf(kernel), "g");
  ASSERT_EQ(kernel.also_stores.size(), 1u);
  EXPECT_EQ(kernel.also_stores[0]->name(), "h");
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 1);
}

TEST_P(DotEpilogueTest, AScaledBatchedDotPlusAResidual) {
  // Batched [3,13,7].[3,7,11] (attention-like), scaled by a constant, plus another buffer.
  const std::string text = R"(HloModule residual
ENTRY e {
  x = f32[3,13,7] parameter(0)
  y = f32[3,7,11] parameter(1)
  r = f32[3,13,11] parameter(2)
  d = f32[3,13,11] dot(x, y), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  s = f32[] constant(0.125)
  sb = f32[3,13,11] broadcast(s), dimensions={}
  ds = f32[3,13,11] multiply(d, sb)
  ROOT out = f32[3,13,11] add(r, ds)
}
)";
  const ProgramPlan* plan = CompileAndCompare(text);
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(plan->kernels.size(), 1u);
  EXPECT_EQ(EpilogueOf(plan->kernels[0]), "out");
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 1);
}

TEST_P(DotEpilogueTest, IntegersExactlyWithAReluOfABiasAdd) {
  const std::string text = R"(HloModule relu
ENTRY e {
  x = s32[5,17] parameter(0)
  w = s32[17,23] parameter(1)
  b = s32[23] parameter(2)
  d = s32[5,23] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = s32[5,23] broadcast(b), dimensions={1}
  h = s32[5,23] add(d, bb)
  zero = s32[] constant(0)
  zb = s32[5,23] broadcast(zero), dimensions={}
  ROOT out = s32[5,23] maximum(h, zb)
}
)";
  const ProgramPlan* plan = CompileAndCompare(text, /*relative=*/0);
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(plan->kernels.size(), 1u);
  EXPECT_EQ(EpilogueOf(plan->kernels[0]), "out");
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 1);
}

TEST_P(DotEpilogueTest, ADotReadElsewhereIsStoredToo) {
  // The dot is returned as well: the kernel stores both, the dot through its own store.
  const std::string text = R"(HloModule both
ENTRY e {
  x = f32[9,65] parameter(0)
  w = f32[65,3] parameter(1)
  b = f32[3] parameter(2)
  d = f32[9,3] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[9,3] broadcast(b), dimensions={1}
  y = f32[9,3] subtract(d, bb)
  ROOT out = (f32[9,3], f32[9,3]) tuple(d, y)
}
)";
  const ProgramPlan* plan = CompileAndCompare(text);
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(plan->kernels.size(), 1u);
  const KernelPlan& kernel = plan->kernels[0];
  EXPECT_EQ(EpilogueOf(kernel), "y");
  ASSERT_EQ(kernel.also_stores.size(), 1u);
  EXPECT_EQ(kernel.also_stores[0], kernel.root);
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 1);
}

TEST_P(DotEpilogueTest, HeadsAfterTheBiasAreReadThroughByTheNextDots) {
  // Attention's Q projection: x.W + b reshaped into heads and transposed to [batch, heads, seq,
  // head], read by two dots (scores against K, and a product over the sequence): the projection's
  // kernel stores q and both dots read it through the reshape and transpose, so no kernel copies
  // the heads (four kernels before: the projection, the bias add with the transpose, the dots).
  const std::string text = R"(HloModule heads
ENTRY e {
  x = f32[2,5,12] parameter(0)
  w = f32[12,12] parameter(1)
  b = f32[12] parameter(2)
  k = f32[2,3,5,4] parameter(3)
  x2 = f32[10,12] reshape(x)
  d = f32[10,12] dot(x2, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[10,12] broadcast(b), dimensions={1}
  q = f32[10,12] add(d, bb)
  q4 = f32[2,5,3,4] reshape(q)
  qt = f32[2,3,5,4] transpose(q4), dimensions={0,2,1,3}
  s = f32[2,3,5,5] dot(qt, k), lhs_batch_dims={0,1}, rhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_contracting_dims={3}
  v = f32[2,3,4,4] dot(qt, k), lhs_batch_dims={0,1}, rhs_batch_dims={0,1}, lhs_contracting_dims={2}, rhs_contracting_dims={2}
  ROOT out = (f32[2,3,5,5], f32[2,3,4,4]) tuple(s, v)
}
)";
  const ProgramPlan* plan = CompileAndCompare(text);
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(plan->kernels.size(), 3u);
  EXPECT_EQ(Count(*plan, KernelKind::kDot), 3);
  EXPECT_EQ(EpilogueOf(plan->kernels[0]), "q");
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 3);
}

TEST_P(DotEpilogueTest, AConsumerReadingOtherElementsKeepsItsKernel) {
  // The reverse reads the dot at other elements than it computes: no epilogue, the same results.
  const std::string text = R"(HloModule reversed
ENTRY e {
  x = f32[11,7] parameter(0)
  w = f32[7,13] parameter(1)
  b = f32[13] parameter(2)
  d = f32[11,13] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  dr = f32[11,13] reverse(d), dimensions={1}
  bb = f32[11,13] broadcast(b), dimensions={1}
  ROOT y = f32[11,13] add(dr, bb)
}
)";
  const ProgramPlan* plan = CompileAndCompare(text);
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(plan->kernels.size(), 2u);
  EXPECT_EQ(EpilogueOf(plan->kernels[0]), "(none)");
  EXPECT_EQ(plan->kernels[1].kind, KernelKind::kMap);
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 2);
}

TEST_P(DotEpilogueTest, AnSgdUpdateOfTheGradientsDotUpdatesInPlace) {
  // w - 0.1 * x^T.g with the result donated to w: the epilogue reads w only at the element it
  // writes, so the dot kernel updates w's buffer in place.
  const std::string text = R"(HloModule sgd, input_output_alias={ {}: (2, {}, may-alias) }
ENTRY e {
  x = f32[31,17] parameter(0)
  g = f32[31,23] parameter(1)
  w = f32[17,23] parameter(2)
  d = f32[17,23] dot(x, g), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  lr = f32[] constant(0.1)
  lrb = f32[17,23] broadcast(lr), dimensions={}
  step = f32[17,23] multiply(lrb, d)
  ROOT out = f32[17,23] subtract(w, step)
}
)";
  const ProgramPlan* plan = CompileAndCompare(text);
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(plan->kernels.size(), 1u);
  EXPECT_EQ(EpilogueOf(plan->kernels[0]), "out");
  EXPECT_EQ(plan->donations.size(), 1u);
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 1);
  if (GetParam() == "registers") {
    // The register tile's elements go to the epilogue in a loop: one call site, so llvmpipe
    // compiles one copy of the update, not one per element of the tile (AdamW's took seconds).
    const std::string& glsl = plan->kernels[0].glsl;
    int calls = 0;
    for (size_t at = glsl.find("epilogue("); at != std::string::npos;
         at = glsl.find("epilogue(", at + 1)) {
      ++calls;
    }
    EXPECT_EQ(calls, 2) << glsl;  // Its definition and the call in the loop.
  }
}

TEST_P(DotEpilogueTest, AnAdamUpdateInPlaceTakesEachLanesFourResultsAtOnce) {
  // An Adam-like update of w, m and v (all donated) from the weight gradient x^T.g: 36 columns
  // (runs of 4 from 9 lanes; the tile's other lanes are past the end), 29 rows (the last tile
  // partly past the end; fewer rows than columns, so lanes run along the columns). The register
  // tiles give the update each lane's 4 results of a row at once: w, m and v are read as vec4, the
  // three results stored as vec4.
  const std::string text =
      R"(HloModule adam, input_output_alias={ {0}: (2, {}, may-alias), {1}: (3, {}, may-alias), {2}: (4, {}, may-alias) }
ENTRY e {
  x = f32[31,29] parameter(0)
  g = f32[31,36] parameter(1)
  w = f32[29,36] parameter(2)
  m = f32[29,36] parameter(3)
  v = f32[29,36] parameter(4)
  d = f32[29,36] dot(x, g), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  b1 = f32[] constant(0.9)
  b1b = f32[29,36] broadcast(b1), dimensions={}
  c1 = f32[] constant(0.1)
  c1b = f32[29,36] broadcast(c1), dimensions={}
  m1 = f32[29,36] multiply(b1b, m)
  dm = f32[29,36] multiply(c1b, d)
  m2 = f32[29,36] add(m1, dm)
  b2 = f32[] constant(0.99)
  b2b = f32[29,36] broadcast(b2), dimensions={}
  c2 = f32[] constant(0.01)
  c2b = f32[29,36] broadcast(c2), dimensions={}
  va = f32[29,36] abs(v)
  v1 = f32[29,36] multiply(b2b, va)
  dd = f32[29,36] multiply(d, d)
  dv = f32[29,36] multiply(c2b, dd)
  v2 = f32[29,36] add(v1, dv)
  sq = f32[29,36] sqrt(v2)
  e = f32[] constant(1e-8)
  eb = f32[29,36] broadcast(e), dimensions={}
  den = f32[29,36] add(sq, eb)
  q = f32[29,36] divide(m2, den)
  lr = f32[] constant(0.01)
  lrb = f32[29,36] broadcast(lr), dimensions={}
  step = f32[29,36] multiply(lrb, q)
  w2 = f32[29,36] subtract(w, step)
  ROOT out = (f32[29,36], f32[29,36], f32[29,36]) tuple(w2, m2, v2)
}
)";
  const ProgramPlan* plan = CompileAndCompare(text);
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(plan->kernels.size(), 1u);
  const KernelPlan& kernel = plan->kernels[0];
  EXPECT_EQ(EpilogueOf(kernel), "w2");
  EXPECT_EQ(kernel.also_stores.size(), 2u);
  EXPECT_EQ(plan->donations.size(), 3u);
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 1);
  const std::string& glsl = kernel.glsl;
  if (GetParam() == "registers") {
    EXPECT_EQ(Occurrences(glsl, "v(i / 4u);"), 3) << glsl;  // w, m and v.
    for (const char* store : {"  storev(i / 4u", "  store1v(i / 4u", "  store2v(i / 4u"}) {
      EXPECT_EQ(Occurrences(glsl, store), 1) << store << "\n" << glsl;
    }
    EXPECT_EQ(Occurrences(glsl, "epilogue4("), 2) << glsl;  // Its definition and one call.
  } else {
    EXPECT_EQ(Occurrences(glsl, "epilogue4("), 0) << glsl;
  }
}

TEST_P(DotEpilogueTest, RunsOfFourReadTheDotsOperandsAndOtherIndicesOneByOne) {
  // x.W + x + reverse(r): x is the dot's operand (read by the contraction at other elements) and
  // r is read reversed, so the runs' epilogue reads both element by element; still exact against
  // the reference in both outputs.
  const std::string text = R"(HloModule residual_of_operand
ENTRY e {
  x = f32[29,36] parameter(0)
  w = f32[36,36] parameter(1)
  r = f32[29,36] parameter(2)
  d = f32[29,36] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  dx = f32[29,36] add(d, x)
  rr = f32[29,36] reverse(r), dimensions={0,1}
  ROOT out = f32[29,36] add(dx, rr)
}
)";
  const ProgramPlan* plan = CompileAndCompare(text);
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(plan->kernels.size(), 1u);
  EXPECT_EQ(EpilogueOf(plan->kernels[0]), "out");
  const std::string& glsl = plan->kernels[0].glsl;
  if (GetParam() == "registers") {
    EXPECT_EQ(Occurrences(glsl, "epilogue4("), 2) << glsl;
    EXPECT_EQ(Occurrences(glsl, "v(i / 4u);"), 0) << glsl;
  }
}

TEST_P(DotEpilogueTest, BiasesAlongTheTrailingDimsAreReadInRunsOfFour) {
  // The dot's result seen as [3,7,36] (a reshape, as a transformer's [batch, seq, features]) plus
  // a bias over the features (period 36) and one over [7,36] (period 252): element i of each
  // broadcast is the bias's element i % period, so 4 results of a run read 4 consecutive bias
  // elements with one vector load. A broadcast along the rows (dims={0}) is read one by one.
  const std::string text = R"(HloModule biases
ENTRY e {
  x = f32[21,13] parameter(0)
  w = f32[13,36] parameter(1)
  b = f32[36] parameter(2)
  p = f32[7,36] parameter(3)
  s = f32[3] parameter(4)
  d = f32[21,36] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d3 = f32[3,7,36] reshape(d)
  bb = f32[3,7,36] broadcast(b), dimensions={2}
  pb = f32[3,7,36] broadcast(p), dimensions={1,2}
  sb = f32[3,7,36] broadcast(s), dimensions={0}
  h = f32[3,7,36] add(d3, bb)
  hp = f32[3,7,36] multiply(h, pb)
  ROOT out = f32[3,7,36] subtract(hp, sb)
}
)";
  const ProgramPlan* plan = CompileAndCompare(text);
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(plan->kernels.size(), 1u);
  EXPECT_EQ(EpilogueOf(plan->kernels[0]), "out");
  const std::string& glsl = plan->kernels[0].glsl;
  if (GetParam() == "registers") {
    EXPECT_EQ(Occurrences(glsl, "v((i % 36u) / 4u);"), 1) << glsl;
    EXPECT_EQ(Occurrences(glsl, "v((i % 252u) / 4u);"), 1) << glsl;
    EXPECT_EQ(Occurrences(glsl, "  vec4 q"), 2) << glsl;  // s is read one by one.
  }
}

TEST_P(DotEpilogueTest, RunsOfFourInBatchesLaterBlocksHalvesAndBesideTheDot) {
  // The runs' other paths, each against the reference: a batch (a result offset per batch), a
  // second block of lanes (260 columns: 64 lanes of 4, then 4 more columns), f16 (read as
  // halves in 64-bit words, stored one by one), and the dot itself stored beside an epilogue
  // seen through a reshape.
  const std::vector<std::pair<std::string, double>> programs = {
      {R"(HloModule batched
ENTRY e {
  x = f32[2,5,3] parameter(0)
  y = f32[2,3,8] parameter(1)
  r = f32[2,5,8] parameter(2)
  d = f32[2,5,8] dot(x, y), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  ROOT out = f32[2,5,8] add(d, r)
}
)",
       1e-4},
      {R"(HloModule blocks
ENTRY e {
  x = f32[3,5] parameter(0)
  w = f32[5,260] parameter(1)
  r = f32[3,260] parameter(2)
  d = f32[3,260] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT out = f32[3,260] subtract(r, d)
}
)",
       1e-4},
      {R"(HloModule halves
ENTRY e {
  x = f16[8,5] parameter(0)
  w = f16[5,12] parameter(1)
  r = f16[8,12] parameter(2)
  d = f16[8,12] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT out = f16[8,12] add(d, r)
}
)",
       4e-3},
      {R"(HloModule beside
ENTRY e {
  x = f32[6,5] parameter(0)
  w = f32[5,8] parameter(1)
  r = f32[48] parameter(2)
  d = f32[6,8] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  dr = f32[48] reshape(d)
  s = f32[48] add(dr, r)
  ROOT out = (f32[48], f32[6,8]) tuple(s, d)
}
)",
       1e-4},
  };
  for (const auto& [text, relative] : programs) {
    SCOPED_TRACE(text);
    const ProgramPlan* plan = CompileAndCompare(text, relative);
    ASSERT_NE(plan, nullptr);
    ASSERT_EQ(plan->kernels.size(), 1u);
    EXPECT_NE(plan->kernels[0].epilogue, nullptr);
    if (GetParam() == "registers") {
      EXPECT_EQ(Occurrences(plan->kernels[0].glsl, "epilogue4("), 2) << plan->kernels[0].glsl;
    }
  }
}

TEST_P(DotEpilogueTest, AViewOfTheDotReadTwiceIsComputedFromTheDot) {
  // The GELU backward's pattern: the [6,20] dot seen as [2,3,20] and read by two products. The
  // planner makes the view a reshape reading the dot's buffer in place; the epilogue computes it
  // from the dot's value instead, and neither keeps a buffer (one dispatch, two before). Where the
  // dot itself is returned too, its buffer stays and so does the map kernel.
  const std::string fused = R"(HloModule view_read_twice
ENTRY e {
  g = f32[6,7] parameter(0)
  w = f32[20,7] parameter(1)
  a = f32[2,3,20] parameter(2)
  b = f32[2,3,20] parameter(3)
  d = f32[6,20] dot(g, w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  r = f32[2,3,20] reshape(d)
  m1 = f32[2,3,20] multiply(r, a)
  m2 = f32[2,3,20] multiply(r, b)
  ROOT s = f32[2,3,20] add(m1, m2)
}
)";
  const ProgramPlan* plan = CompileAndCompare(fused);
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(plan->kernels.size(), 1u);
  EXPECT_EQ(EpilogueOf(plan->kernels[0]), "s");
  for (const auto& [value, buffer] : plan->materialized) {
    EXPECT_NE(value->opcode(), ir::Opcode::kReshape) << value->name();
    EXPECT_NE(value->opcode(), ir::Opcode::kDot) << value->name();
  }
  EXPECT_EQ(DispatchesOfCompiling(device(0), fused), 1);

  const std::string returned = absl::StrReplaceAll(
      fused, {{"ROOT s = f32[2,3,20] add(m1, m2)",
               "s = f32[2,3,20] add(m1, m2)\n  ROOT out = (f32[2,3,20], f32[6,20]) tuple(s, d)"}});
  plan = CompileAndCompare(returned);
  ASSERT_NE(plan, nullptr);
  EXPECT_EQ(plan->kernels.size(), 2u);
}

TEST_P(DotEpilogueTest, IntegerRunsOfFourExactly) {
  // s32 with 20 columns (5 lanes' runs): a residual read at the dot's own index and a ReLU,
  // both stored; integers must equal the reference exactly.
  const std::string text = R"(HloModule integer_runs
ENTRY e {
  x = s32[13,11] parameter(0)
  w = s32[11,20] parameter(1)
  r = s32[13,20] parameter(2)
  d = s32[13,20] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  h = s32[13,20] add(d, r)
  zero = s32[] constant(0)
  zb = s32[13,20] broadcast(zero), dimensions={}
  relu = s32[13,20] maximum(h, zb)
  ROOT out = (s32[13,20], s32[13,20]) tuple(relu, h)
}
)";
  const ProgramPlan* plan = CompileAndCompare(text, /*relative=*/0);
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(plan->kernels.size(), 1u);
  EXPECT_EQ(EpilogueOf(plan->kernels[0]), "relu");
  if (GetParam() == "registers") {
    EXPECT_EQ(Occurrences(plan->kernels[0].glsl, "ivec4 q0 = "), 1) << plan->kernels[0].glsl;
  }
}

TEST_P(DotEpilogueTest, AnEpilogueReadingItsDonorElsewhereIsNotInPlace) {
  // The epilogue reads w reversed: an invocation would read an element another one overwrote, so
  // nothing is donated (the dot kernel still computes the epilogue).
  const std::string text =
      R"(HloModule reversed_donor, input_output_alias={ {}: (2, {}, may-alias) }
ENTRY e {
  x = f32[31,17] parameter(0)
  g = f32[31,23] parameter(1)
  w = f32[17,23] parameter(2)
  d = f32[17,23] dot(x, g), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  wr = f32[17,23] reverse(w), dimensions={0,1}
  ROOT out = f32[17,23] subtract(wr, d)
}
)";
  const ProgramPlan* plan = CompileAndCompare(text);
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(plan->kernels.size(), 1u);
  EXPECT_EQ(EpilogueOf(plan->kernels[0]), "out");
  EXPECT_TRUE(plan->donations.empty());
}

TEST_P(DotEpilogueTest, ASplitContractionKeepsItsMapKernel) {
  // 600 contraction steps are split into chunks (split-K) in both variants: the sum of the
  // partial products writes the dot, so the bias add stays a kernel of its own.
  const std::string text = R"(HloModule split
ENTRY e {
  x = f32[5,600] parameter(0)
  w = f32[600,7] parameter(1)
  b = f32[7] parameter(2)
  d = f32[5,7] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[5,7] broadcast(b), dimensions={1}
  ROOT y = f32[5,7] add(d, bb)
}
)";
  const ProgramPlan* plan = CompileAndCompare(text, 1e-3);
  ASSERT_NE(plan, nullptr);
  EXPECT_EQ(Count(*plan, KernelKind::kMap), 1);
  for (const KernelPlan& kernel : plan->kernels) EXPECT_EQ(kernel.epilogue, nullptr);
}

INSTANTIATE_TEST_SUITE_P(Variants, DotEpilogueTest, ::testing::Values("registers", "shared_memory"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

// f16 dots: the epilogue reads the dot's element rounded to f16, as it would from its buffer.
// With cooperative_matrix_emulated the dot runs the tensor-core kernel's code (where the device
// has f16 arithmetic, 16-bit storage and subgroups; skipped otherwise).
class F16DotEpilogueTest : public DotEpilogueTest {};

TEST_P(F16DotEpilogueTest, ABiasAddAndScalingOfAnF16Dot) {
  const bool matrix = GetParam() == "cooperative_matrix_emulated";
  if (matrix && exec::TargetFor(device(0)).cooperative_matrix_f16.m == 0) {
    GTEST_SKIP() << device(0).device().physical_device().name
                 << " lacks shaderFloat16, 16-bit storage or subgroups";
  }
  const std::string text = R"(HloModule half
ENTRY e {
  x = f16[33,40] parameter(0)
  w = f16[40,24] parameter(1)
  b = f16[24] parameter(2)
  d = f16[33,24] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f16[33,24] broadcast(b), dimensions={1}
  h = f16[33,24] add(d, bb)
  s = f16[] constant(0.5)
  sb = f16[33,24] broadcast(s), dimensions={}
  ROOT y = f16[33,24] multiply(h, sb)
}
)";
  // One f16 ulp of the dot (2^-10 relative) for the f32 accumulation's order, then the add.
  const ProgramPlan* plan = CompileAndCompare(text, 4e-3);
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(plan->kernels.size(), 1u);
  EXPECT_EQ(EpilogueOf(plan->kernels[0]), "y");
  EXPECT_EQ(plan->kernels[0].dot.cooperative_matrix, matrix);
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 1);
}

INSTANTIATE_TEST_SUITE_P(Variants, F16DotEpilogueTest,
                         ::testing::Values("registers", "shared_memory",
                                           "cooperative_matrix_emulated"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

}  // namespace
}  // namespace vkspmd::testing
