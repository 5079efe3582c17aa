// Horizontal fusion in the planner (no device): which independent map kernels share a dispatch,
// where it runs, and what keeps kernels apart (data, a kernel in between, a donated parameter,
// the binding limit). Expectations worked out by hand from horizontal_fusion.h.
#include "src/codegen/horizontal_fusion.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/codegen/codegen_test_support.h"

namespace vkspmd::codegen {
namespace {

using ::testing::ElementsAre;

class HorizontalFusionTest : public ::testing::Test {
 protected:
  ProgramPlan Plan(const std::string& text, const TargetInfo& target = LavapipeTarget()) {
    return PlanText(text, target, module_);
  }
  // Each kernel as its root's name followed by its parts' roots: "u1 u2 u3".
  static std::vector<std::string> Dispatches(const ProgramPlan& plan) {
    std::vector<std::string> names;
    for (const KernelPlan& kernel : plan.kernels) {
      std::string name = kernel.root->name();
      for (const KernelPlan& part : kernel.parts) name += " " + part.root->name();
      names.push_back(name);
    }
    return names;
  }

  std::unique_ptr<ir::Module> module_;
};

// Three SGD updates, each after the dot computing its gradient: every update moves down past the
// later dots (which neither read nor write what it touches) into one dispatch at the last one's
// place. Each update is donated its parameter.
constexpr char kUpdates[] =
    R"(HloModule sgd3, input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}, may-alias), {2}: (2, {}, may-alias) }
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  w1 = f32[6,4] parameter(0)
  w2 = f32[4,3] parameter(1)
  w3 = f32[3] parameter(2)
  x = f32[5,6] parameter(3)
  h = f32[5,4] parameter(4)
  gy = f32[5,3] parameter(5)
  rate = f32[] parameter(6)
  g1 = f32[6,4] dot(x, h), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  r1 = f32[6,4] broadcast(rate), dimensions={}
  s1 = f32[6,4] multiply(g1, r1)
  u1 = f32[6,4] subtract(w1, s1)
  g2 = f32[4,3] dot(h, gy), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  r2 = f32[4,3] broadcast(rate), dimensions={}
  s2 = f32[4,3] multiply(g2, r2)
  u2 = f32[4,3] subtract(w2, s2)
  c = f32[3,3] dot(gy, gy), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  zero = f32[] constant(0)
  g3 = f32[3] reduce(c, zero), dimensions={0}, to_apply=add
  r3 = f32[3] broadcast(rate), dimensions={}
  s3 = f32[3] multiply(g3, r3)
  u3 = f32[3] subtract(w3, s3)
  ROOT t = (f32[6,4], f32[4,3], f32[3]) tuple(u1, u2, u3)
})";

TEST_F(HorizontalFusionTest, IndependentUpdatesShareOneDispatchAfterTheLastGradient) {
  // Without dot epilogues, which fold u1 and u2 into their dots (next test).
  TargetInfo target = LavapipeTarget();
  target.dot_epilogues = false;
  ProgramPlan plan = Plan(kUpdates, target);
  // The reduce g3 is folded into u3 (reduction folding), so u3 reads c.
  EXPECT_THAT(Dispatches(plan), ElementsAre("g1", "g2", "c", "u1 u2 u3"));
  const KernelPlan& fused = plan.kernels.back();
  EXPECT_EQ(fused.name, "u1+2");
  // Each part starts at a workgroup boundary: 24 elements, then 12, then 3.
  EXPECT_THAT(fused.PartStarts(), ElementsAre(0u, 64u, 128u));
  EXPECT_EQ(fused.invocations, 131u);
  // w1, g1, rate, w2, g2, w3, c: the rate's buffer is bound once.
  EXPECT_EQ(fused.inputs.size(), 7u);
  EXPECT_EQ(fused.outputs().size(), 3u);
  EXPECT_EQ(plan.donations.size(), 3u);
}

TEST_F(HorizontalFusionTest, DotEpiloguesTakeTheUpdatesOfTheirGradients) {
  // u1 and u2 read their gradients' dots at their own index: each dot kernel computes its update
  // (dot_epilogue_fusion.h), in place. u3 reads c through its folded reduce and keeps its kernel.
  ProgramPlan plan = Plan(kUpdates);
  EXPECT_THAT(Dispatches(plan), ElementsAre("g1", "g2", "c", "u3"));
  ASSERT_NE(plan.kernels[0].epilogue, nullptr);
  EXPECT_EQ(plan.kernels[0].epilogue->name(), "u1");
  ASSERT_NE(plan.kernels[1].epilogue, nullptr);
  EXPECT_EQ(plan.kernels[1].epilogue->name(), "u2");
  EXPECT_EQ(plan.donations.size(), 3u);
}

TEST_F(HorizontalFusionTest, AKernelReadingTheValueBetweenKeepsItApart) {
  // v reads a's result before b: a cannot move down to b past it (and b reads nothing of a).
  ProgramPlan plan = Plan(R"(HloModule between
ENTRY e {
  p = f32[16] parameter(0)
  q = f32[16] parameter(1)
  a = f32[16] exponential(p)
  w = f32[16,16] parameter(2)
  v = f32[16] dot(w, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b = f32[16] negate(q)
  ROOT t = (f32[16], f32[16], f32[16]) tuple(a, v, b)
})");
  EXPECT_THAT(Dispatches(plan), ElementsAre("a", "v", "b"));
}

TEST_F(HorizontalFusionTest, AKernelReadingAnotherKernelsResultIsNotItsPart) {
  // b reads a at other elements (reverse), so a has a kernel and b cannot run beside it.
  ProgramPlan plan = Plan(R"(HloModule chain
ENTRY e {
  p = f32[16] parameter(0)
  a = f32[16] exponential(p)
  r = f32[16] reverse(a), dimensions={0}
  b = f32[16] negate(r)
  ROOT t = (f32[16], f32[16]) tuple(a, b)
})");
  EXPECT_THAT(Dispatches(plan), ElementsAre("a", "b"));
}

TEST_F(HorizontalFusionTest, AReaderOfADonatedParameterStaysBeforeItsInPlaceUpdate) {
  // k reads p reversed; u then overwrites p in place (donated). k is independent of u's logical
  // output but not of p's buffer: it must neither share u's dispatch nor move past it to e.
  ProgramPlan plan = Plan(R"(HloModule hazard, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY e {
  p = f32[64] parameter(0)
  g = f32[64] parameter(1)
  q = f32[64] parameter(2)
  r = f32[64] reverse(p), dimensions={0}
  k = f32[64] multiply(r, q)
  u = f32[64] subtract(p, g)
  e = f32[64] exponential(q)
  ROOT t = (f32[64], f32[64], f32[64]) tuple(u, k, e)
})");
  ASSERT_EQ(plan.donations.size(), 1u);
  EXPECT_THAT(Dispatches(plan), ElementsAre("k", "u e"));
}

// `count` SGD updates of f32[elements] sharing one rate, each its own map kernel.
std::string Updates(int count, int elements) {
  const std::string shape = "f32[" + std::to_string(elements) + "]";
  std::string text = "HloModule wide\nENTRY e {\n  rate = f32[] parameter(0)\n";
  std::string tuple;
  std::string shapes;
  for (int k = 1; k <= count; ++k) {
    const std::string n = std::to_string(k);
    text += "  w" + n + " = " + shape + " parameter(" + std::to_string(2 * k - 1) + ")\n";
    text += "  g" + n + " = " + shape + " parameter(" + std::to_string(2 * k) + ")\n";
    text += "  r" + n + " = " + shape + " broadcast(rate), dimensions={}\n";
    text += "  s" + n + " = " + shape + " multiply(g" + n + ", r" + n + ")\n";
    text += "  u" + n + " = " + shape + " subtract(w" + n + ", s" + n + ")\n";
    tuple += (k > 1 ? ", u" : "u") + n;
    shapes += (k > 1 ? ", " : "") + shape;
  }
  return text + "  ROOT t = (" + shapes + ") tuple(" + tuple + ")\n}\n";
}

TEST_F(HorizontalFusionTest, PartsStayWithinTheBindingLimit) {
  // Each update binds w, g and its output, and all share the rate: k updates in one dispatch bind
  // 3k + 1 buffers, so 16 bindings hold five.
  TargetInfo target = LavapipeTarget();
  target.max_storage_buffers_per_stage = 16;
  const std::string text = Updates(6, 8);
  ProgramPlan plan = Plan(text, target);
  // u2 absorbs u1, u3 both, ..., u5 all four (16 bindings); u6 would make 19.
  EXPECT_THAT(Dispatches(plan), ElementsAre("u1 u2 u3 u4 u5", "u6"));
  for (const KernelPlan& kernel : plan.kernels) {
    EXPECT_LE(kernel.inputs.size() + kernel.outputs().size(), 16u) << kernel.name;
  }
}

TEST_F(HorizontalFusionTest, MaskedWorkStaysWithinTheTargetsLimit) {
  // Where every part runs in each workgroup (llvmpipe), each part also runs masked over the
  // others' invocations: two updates of 1024 elements run 2 x 1024 masked, within 2048; a third
  // would make 3 x 2048. Without a limit (GPUs) the binding limit alone decides: all six fit 32.
  TargetInfo target = LavapipeTarget();
  target.max_storage_buffers_per_stage = 32;
  EXPECT_THAT(Dispatches(Plan(Updates(6, 1024), target)), ElementsAre("u1 u2 u3 u4 u5 u6"));
  target.max_masked_part_invocations = 2048;
  EXPECT_THAT(Dispatches(Plan(Updates(6, 1024), target)), ElementsAre("u1 u2", "u3 u4", "u5 u6"));
  // Small updates still share one dispatch: six of 8 elements run 6 x 40 masked.
  EXPECT_THAT(Dispatches(Plan(Updates(6, 8), target)), ElementsAre("u1 u2 u3 u4 u5 u6"));
  // One of 4096 elements runs more than the limit masked beside any other: nothing merges.
  target.max_masked_part_invocations = 4000;
  EXPECT_THAT(Dispatches(Plan(Updates(2, 4096), target)), ElementsAre("u1", "u2"));
}

}  // namespace
}  // namespace vkspmd::codegen
