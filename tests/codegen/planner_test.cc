// The planner on the CPU (no device): which instructions get buffers, how instructions fuse into
// kernels, the buffer plan, kernel counts of testdata programs, and donations. Every expectation
// is worked out by hand from the rules in src/codegen/planner.h and kernel_plan.h.
#include "src/codegen/planner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "src/ir/parser.h"
#include "tests/codegen/codegen_test_support.h"

namespace vkspmd::codegen {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class PlannerTest : public ::testing::Test {
 protected:
  ProgramPlan Plan(const std::string& text, const TargetInfo& target = LavapipeTarget()) {
    return PlanText(text, target, module_);
  }
  ProgramPlan PlanFile(const std::string& name) { return Plan(TestdataProgram(name)); }
  absl::Status PlanError(const std::string& text, const TargetInfo& target) {
    absl::StatusOr<std::unique_ptr<ir::Module>> parsed = ir::ParseAndVerifyModule(text);
    if (!parsed.ok()) return parsed.status();
    module_ = std::move(*parsed);
    return PlanKernels(*module_, target).status();
  }
  // The buffer names, in buffer id order.
  static std::vector<std::string> BufferNames(const ProgramPlan& plan) {
    std::vector<std::string> names;
    for (const BufferPlan& buffer : plan.buffers) names.push_back(buffer.name);
    return names;
  }
  static std::vector<std::string> KernelNames(const ProgramPlan& plan) {
    std::vector<std::string> names;
    for (const KernelPlan& kernel : plan.kernels) names.push_back(kernel.name);
    return names;
  }

  std::unique_ptr<ir::Module> module_;
};

TEST_F(PlannerTest, ElementwiseChainIsOneKernel) {
  ProgramPlan plan = Plan(R"(HloModule chain
ENTRY e {
  p0 = f32[8] parameter(0)
  p1 = f32[8] parameter(1)
  a = f32[8] add(p0, p1)
  b = f32[8] multiply(a, p1)
  c = f32[8] exponential(b)
  ROOT d = f32[8] negate(c)
})");
  EXPECT_THAT(BufferNames(plan), ElementsAre("p0", "p1", "d"));
  ASSERT_EQ(plan.kernels.size(), 1u);
  const KernelPlan& kernel = plan.kernels[0];
  EXPECT_EQ(kernel.kind, KernelKind::kMap);
  EXPECT_EQ(kernel.root->name(), "d");
  EXPECT_THAT(kernel.inputs, ElementsAre(0, 1));
  EXPECT_EQ(kernel.output, 2);
  EXPECT_EQ(kernel.invocations, 8u);
  EXPECT_EQ(kernel.local_size, 64u);
  EXPECT_TRUE(kernel.glsl.empty());  // Planning writes no GLSL.
  EXPECT_THAT(plan.outputs, ElementsAre(2));
}

TEST_F(PlannerTest, ValueUsedTwiceGetsABuffer) {
  // d reads a at other indices (reversed) than it computes: a is computed once, in a kernel.
  ProgramPlan plan = Plan(R"(HloModule twice
ENTRY e {
  p0 = f32[8] parameter(0)
  a = f32[8] exponential(p0)
  b = f32[8] negate(a)
  c = f32[8] reverse(a), dimensions={0}
  ROOT d = f32[8] add(b, c)
})");
  EXPECT_THAT(BufferNames(plan), ElementsAre("p0", "a", "d"));
  EXPECT_THAT(KernelNames(plan), ElementsAre("a", "d"));
  EXPECT_THAT(plan.kernels[1].inputs, ElementsAre(1));  // d reads a's buffer, never p0.
}

TEST_F(PlannerTest, AValueItsOnlyReaderReadsInPlaceIsComputedInsideThatReader) {
  // Both of d's reads of a are at d's own index: multi-output fusion folds a's kernel into d's,
  // and as nothing else reads a, its buffer goes (the compiler computes exp(p0) once per index).
  ProgramPlan plan = Plan(R"(HloModule twice
ENTRY e {
  p0 = f32[8] parameter(0)
  a = f32[8] exponential(p0)
  b = f32[8] negate(a)
  c = f32[8] sqrt(a)
  ROOT d = f32[8] add(b, c)
})");
  EXPECT_THAT(KernelNames(plan), ElementsAre("d"));
  EXPECT_THAT(plan.kernels[0].inputs, ElementsAre(0));
  EXPECT_TRUE(plan.kernels[0].also_stores.empty());
  EXPECT_EQ(plan.materialized.count(plan.kernels[0].root->operand(0)->operand(0)), 0u);
}

TEST_F(PlannerTest, MultiOutputFusionUpdatesAParameterAndBothMomentsInOneKernel) {
  // An Adam-like update: the transposed gradient is read twice, both moments are results and
  // read by the parameter's update; all three results are donated into their parameters.
  ProgramPlan plan = PlanFile("fusion/adam_update");
  ASSERT_THAT(KernelNames(plan), ElementsAre("new_w"));
  const KernelPlan& kernel = plan.kernels[0];
  std::vector<std::string> stored;
  for (const ir::Instruction* value : kernel.also_stores) stored.push_back(value->name());
  EXPECT_THAT(stored, ElementsAre("new_v", "new_m"));
  EXPECT_EQ(kernel.also_outputs.size(), 2u);
  EXPECT_THAT(kernel.inputs, ::testing::UnorderedElementsAre(0, 1, 2, 3));  // No g buffer.
  EXPECT_EQ(plan.donations.size(), 3u);  // Each result reads its parameter only in place.
}

TEST_F(PlannerTest, AProducerReadBeforeItsConsumerKeepsItsKernel) {
  // The dot s reads a before d does: moving a into d's kernel would make s read a buffer not
  // written yet. (d itself is s's epilogue: it reads s and a at its own index.)
  ProgramPlan plan = Plan(R"(HloModule early_reader
ENTRY e {
  p0 = f32[4,4] parameter(0)
  p1 = f32[4,4] parameter(1)
  a = f32[4,4] exponential(p0)
  s = f32[4,4] dot(a, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT d = f32[4,4] add(a, s)
})");
  EXPECT_THAT(KernelNames(plan), ElementsAre("a", "s"));
  ASSERT_NE(plan.kernels[1].epilogue, nullptr);
  EXPECT_EQ(plan.kernels[1].epilogue->name(), "d");
}

// A bias update with its gradient, a sum over the batch, read twice at the update's own index.
constexpr char kBiasUpdate[] = R"(HloModule bias
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT z = f32[] add(x, y)
}
ENTRY e {
  g = f32[9,5] parameter(0)
  b = f32[5] parameter(1)
  zero = f32[] constant(0)
  s = f32[5] reduce(g, zero), dimensions={0}, to_apply=add
  ss = f32[5] multiply(s, s)
  lr = f32[] constant(0.1)
  lrb = f32[5] broadcast(lr), dimensions={}
  step = f32[5] multiply(ss, lrb)
  ROOT nb = f32[5] subtract(b, step)
})";

TEST_F(PlannerTest, AShortReduceIsFoldedIntoItsOnlyReader) {
  ProgramPlan plan = Plan(kBiasUpdate);
  ASSERT_THAT(KernelNames(plan), ElementsAre("nb"));
  ASSERT_EQ(plan.kernels[0].held_reductions.size(), 1u);
  EXPECT_EQ(plan.kernels[0].held_reductions[0]->name(), "s");
  EXPECT_THAT(plan.kernels[0].inputs, ::testing::UnorderedElementsAre(0, 1));  // g and b.
}

TEST_F(PlannerTest, AReduceReadAtOtherIndicesKeepsItsKernel) {
  // The reversed read needs other elements of s than the one an invocation would reduce.
  ProgramPlan plan = Plan(absl::StrReplaceAll(
      kBiasUpdate, {{"ss = f32[5] multiply(s, s)",
                     "sr = f32[5] reverse(s), dimensions={0}\n  ss = f32[5] multiply(s, sr)"}}));
  EXPECT_THAT(KernelNames(plan), ElementsAre("s", "nb"));
}

// Two independent values, each all-reduced, then combined; an all-gather in the middle is a
// barrier no kernel moves across.
constexpr char kAllReduceWaves[] = R"(HloModule waves, num_partitions=2
sum {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT z = f32[] add(x, y)
}
ENTRY e {
  p0 = f32[8] parameter(0)
  a = f32[8] exponential(p0)
  ra = f32[8] all-reduce(a), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sum
  b = f32[8] negate(p0)
  rb = f32[8] all-reduce(b), channel_id=2, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sum
  c = f32[8] add(ra, rb)
  g = f32[16] all-gather(c), channel_id=3, replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true
  d = f32[16] sqrt(g)
  rd = f32[16] all-reduce(d), channel_id=4, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sum
  e = f32[8] exponential(p0)
  re = f32[8] all-reduce(e), channel_id=5, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sum
  ROOT t = (f32[16], f32[8]) tuple(rd, re)
})";

TEST_F(PlannerTest, AllReducesRunInWavesAfterTheKernelsThatNeedNone) {
  ProgramPlan plan = Plan(kAllReduceWaves);
  // b runs before ra, so ra and rb meet the other devices back to back; e stays after the
  // all-gather g (no kernel crosses it), and rd and re run as one wave at the end. The
  // independent a and b, and d and e, are one dispatch each (horizontal fusion: "a+1").
  EXPECT_THAT(KernelNames(plan), ElementsAre("a+1", "ra", "rb", "c", "g", "d+1", "rd", "re"));
  ASSERT_EQ(plan.kernels[0].parts.size(), 1u);
  EXPECT_EQ(plan.kernels[0].parts[0].root->name(), "b");
  ASSERT_EQ(plan.kernels[5].parts.size(), 1u);
  EXPECT_EQ(plan.kernels[5].parts[0].root->name(), "e");
}

TEST_F(PlannerTest, DotsReadThroughATransposeOfABuffer) {
  // x . W^T forward and g . W backward share W^T; both dots read W itself with mapped dims, so
  // the transpose has no kernel. The batched dot's head transpose and bad's transpose (which
  // swaps its free dims) are read through too.
  ProgramPlan plan = Plan(R"(HloModule through
ENTRY e {
  x = f32[6,4] parameter(0)
  w = f32[5,4] parameter(1)
  g = f32[6,5] parameter(2)
  q = f32[2,3,7,4] parameter(3)
  r = f32[3,5,2] parameter(4)
  wt = f32[4,5] transpose(w), dimensions={1,0}
  y = f32[6,5] dot(x, wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  dx = f32[6,4] dot(g, wt), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  qt = f32[2,7,3,4] transpose(q), dimensions={0,2,1,3}
  s = f32[2,7,4,4] dot(qt, qt), lhs_batch_dims={0,1}, lhs_contracting_dims={2}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  rt = f32[3,2,5] transpose(r), dimensions={0,2,1}
  bad = f32[2,5,2,5] dot(rt, rt), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT t = (f32[6,5], f32[6,4], f32[2,7,4,4], f32[2,5,2,5]) tuple(y, dx, s, bad)
})");
  EXPECT_THAT(KernelNames(plan), ElementsAre("y", "dx", "s", "bad"));
  EXPECT_EQ(plan.kernels[0].dot_operands.rhs.value->name(), "w");
  EXPECT_EQ(plan.kernels[1].dot_operands.rhs.value->name(), "w");
  EXPECT_THAT(plan.kernels[1].dot_operands.rhs.contracting, ElementsAre(0));
  EXPECT_THAT(plan.kernels[1].dot_operands.rhs.free, ElementsAre(1));
  EXPECT_EQ(plan.kernels[2].dot_operands.lhs.value->name(), "q");
  EXPECT_THAT(plan.kernels[2].dot_operands.lhs.batch, ElementsAre(0, 2));
  EXPECT_THAT(plan.kernels[2].dot_operands.lhs.contracting, ElementsAre(1));
  EXPECT_EQ(plan.kernels[3].dot_operands.lhs.value->name(), "r");
  EXPECT_THAT(plan.kernels[3].dot_operands.lhs.free, ElementsAre(2, 1));
}

TEST_F(PlannerTest, DotsReadThroughReshapesOfTransposes) {
  // The attention heads' output o [batch, heads, seq, head] goes to [batch * seq, heads * head]
  // for the output projection: a transpose and a reshape that merges dims from both sides of
  // it. The dot reads o with rows (batch, seq) and contraction (heads, head); both weight
  // gradients read it too. A reshape splitting a buffer ([batch * seq, heads * head] back to
  // heads) is read as that buffer in the finer shape. A reshape that would split a dim into
  // sizes that do not divide it (pt's 3 into 2 x ...) is computed inline instead.
  ProgramPlan plan = Plan(R"(HloModule through
ENTRY e {
  o = f32[2,3,4,5] parameter(0)
  w = f32[15,6] parameter(1)
  a = f32[8,15] parameter(2)
  p = f32[2,3] parameter(3)
  v = f32[3,4] parameter(4)
  ot = f32[2,4,3,5] transpose(o), dimensions={0,2,1,3}
  m = f32[8,15] reshape(ot)
  y = f32[8,6] dot(m, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  gw = f32[15,15] dot(m, a), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ar = f32[2,4,3,5] reshape(a)
  at = f32[2,3,4,5] transpose(ar), dimensions={0,2,1,3}
  z = f32[2,3,4,4] dot(at, at), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}
  pt = f32[3,2] transpose(p), dimensions={1,0}
  pr = f32[2,3] reshape(pt)
  bad = f32[2,4] dot(pr, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[8,6], f32[15,15], f32[2,3,4,4], f32[2,4]) tuple(y, gw, z, bad)
})");
  EXPECT_THAT(KernelNames(plan), ElementsAre("y", "gw", "z", "bad"));
  const DotOperandView& m = plan.kernels[0].dot_operands.lhs;
  EXPECT_EQ(m.value->name(), "o");
  EXPECT_THAT(m.shape.dimensions(), ElementsAre(2, 3, 4, 5));
  EXPECT_THAT(m.free, ElementsAre(0, 2));
  EXPECT_THAT(m.contracting, ElementsAre(1, 3));
  const DotOperandView& mt = plan.kernels[1].dot_operands.lhs;
  EXPECT_EQ(mt.value->name(), "o");
  EXPECT_THAT(mt.free, ElementsAre(1, 3));
  EXPECT_THAT(mt.contracting, ElementsAre(0, 2));
  const DotOperandView& at = plan.kernels[2].dot_operands.rhs;
  EXPECT_EQ(at.value->name(), "a");
  EXPECT_THAT(at.shape.dimensions(), ElementsAre(2, 4, 3, 5));
  EXPECT_THAT(at.batch, ElementsAre(0, 2));
  EXPECT_THAT(at.contracting, ElementsAre(3));
  EXPECT_THAT(at.free, ElementsAre(1));
  EXPECT_EQ(plan.kernels[3].dot_operands.lhs.value->name(), "pr");  // Computed inline.
}

TEST_F(PlannerTest, AFusionReadingMoreBuffersThanTheDeviceBindsIsSplit) {
  // A sum of 40 parameters: one kernel would bind 41 storage buffers; the target allows 16.
  ProgramPlan plan = Plan(
      "HloModule wide\nENTRY e {\n  p0 = f32[4] parameter(0)\n  p1 = f32[4] parameter(1)\n  p2 = "
      "f32[4] parameter(2)\n  p3 = f32[4] parameter(3)\n  p4 = f32[4] parameter(4)\n  p5 = f32[4] "
      "parameter(5)\n  p6 = f32[4] parameter(6)\n  p7 = f32[4] parameter(7)\n  p8 = f32[4] "
      "parameter(8)\n  p9 = f32[4] parameter(9)\n  p10 = f32[4] parameter(10)\n  p11 = f32[4] "
      "parameter(11)\n  p12 = f32[4] parameter(12)\n  p13 = f32[4] parameter(13)\n  p14 = f32[4] "
      "parameter(14)\n  p15 = f32[4] parameter(15)\n  p16 = f32[4] parameter(16)\n  p17 = f32[4] "
      "parameter(17)\n  p18 = f32[4] parameter(18)\n  p19 = f32[4] parameter(19)\n  p20 = f32[4] "
      "parameter(20)\n  p21 = f32[4] parameter(21)\n  p22 = f32[4] parameter(22)\n  p23 = f32[4] "
      "parameter(23)\n  p24 = f32[4] parameter(24)\n  p25 = f32[4] parameter(25)\n  p26 = f32[4] "
      "parameter(26)\n  p27 = f32[4] parameter(27)\n  p28 = f32[4] parameter(28)\n  p29 = f32[4] "
      "parameter(29)\n  p30 = f32[4] parameter(30)\n  p31 = f32[4] parameter(31)\n  p32 = f32[4] "
      "parameter(32)\n  p33 = f32[4] parameter(33)\n  p34 = f32[4] parameter(34)\n  p35 = f32[4] "
      "parameter(35)\n  p36 = f32[4] parameter(36)\n  p37 = f32[4] parameter(37)\n  p38 = f32[4] "
      "parameter(38)\n  p39 = f32[4] parameter(39)\n  acc1 = f32[4] add(p0, p1)\n  acc2 = f32[4] "
      "add(acc1, p2)\n  acc3 = f32[4] add(acc2, p3)\n  acc4 = f32[4] add(acc3, p4)\n  acc5 = "
      "f32[4] add(acc4, "
      "p5)\n  acc6 = f32[4] add(acc5, p6)\n  acc7 = f32[4] add(acc6, p7)\n  acc8 = f32[4] "
      "add(acc7, p8)\n  acc9 "
      "= f32[4] add(acc8, p9)\n  acc10 = f32[4] add(acc9, p10)\n  acc11 = f32[4] add(acc10, p11)\n "
      " acc12 = "
      "f32[4] add(acc11, p12)\n  acc13 = f32[4] add(acc12, p13)\n  acc14 = f32[4] add(acc13, "
      "p14)\n  acc15 = "
      "f32[4] add(acc14, p15)\n  acc16 = f32[4] add(acc15, p16)\n  acc17 = f32[4] add(acc16, "
      "p17)\n  acc18 = "
      "f32[4] add(acc17, p18)\n  acc19 = f32[4] add(acc18, p19)\n  acc20 = f32[4] add(acc19, "
      "p20)\n  acc21 = "
      "f32[4] add(acc20, p21)\n  acc22 = f32[4] add(acc21, p22)\n  acc23 = f32[4] add(acc22, "
      "p23)\n  acc24 = "
      "f32[4] add(acc23, p24)\n  acc25 = f32[4] add(acc24, p25)\n  acc26 = f32[4] add(acc25, "
      "p26)\n  acc27 = "
      "f32[4] add(acc26, p27)\n  acc28 = f32[4] add(acc27, p28)\n  acc29 = f32[4] add(acc28, "
      "p29)\n  acc30 = "
      "f32[4] add(acc29, p30)\n  acc31 = f32[4] add(acc30, p31)\n  acc32 = f32[4] add(acc31, "
      "p32)\n  acc33 = "
      "f32[4] add(acc32, p33)\n  acc34 = f32[4] add(acc33, p34)\n  acc35 = f32[4] add(acc34, "
      "p35)\n  acc36 = "
      "f32[4] add(acc35, p36)\n  acc37 = f32[4] add(acc36, p37)\n  acc38 = f32[4] add(acc37, "
      "p38)\n  acc39 = "
      "f32[4] add(acc38, p39)\n  ROOT r = f32[4] negate(acc39)\n}");
  EXPECT_GE(plan.kernels.size(), 2u);
  for (const KernelPlan& kernel : plan.kernels) {
    EXPECT_LE(kernel.inputs.size() + kernel.outputs().size(), 16u) << kernel.name;
  }
}

TEST_F(PlannerTest, CheapValuesUsedTwiceAreRecomputed) {
  // A broadcast of a parameter and a scalar constant, each read twice: no buffers of their own.
  ProgramPlan plan = Plan(R"(HloModule cheap
ENTRY e {
  p0 = f32[8] parameter(0)
  q = f32[4,8] parameter(1)
  bc = f32[4,8] broadcast(p0), dimensions={1}
  two = f32[] constant(2)
  two_b = f32[4,8] broadcast(two), dimensions={}
  x = f32[4,8] add(bc, q)
  y = f32[4,8] multiply(bc, two_b)
  z = f32[4,8] subtract(x, two_b)
  ROOT r = f32[4,8] add(y, z)
})");
  EXPECT_THAT(BufferNames(plan), ElementsAre("p0", "q", "r"));
  ASSERT_EQ(plan.kernels.size(), 1u);
  EXPECT_THAT(plan.kernels[0].inputs, ElementsAre(0, 1));
}

TEST_F(PlannerTest, SlicesOfAParameterUsedTwiceAreRecomputed) {
  // AdamW's step scalars: slices of one parameter, each read by several kernels (a dot between
  // keeps x and y apart). Each reader reads s itself: no buffer and no kernel for r0.
  ProgramPlan plan = Plan(R"(HloModule step_scalars
ENTRY e {
  s = f32[7] parameter(0)
  a = f32[4,4] parameter(1)
  s3 = f32[1] slice(s), slice={[3:4]}
  r0 = f32[] reshape(s3)
  b0 = f32[4,4] broadcast(r0), dimensions={}
  x = f32[4,4] multiply(a, b0)
  d = f32[4,4] dot(x, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  y = f32[4,4] multiply(d, b0)
  ROOT t = (f32[4,4], f32[4,4]) tuple(x, y)
})");
  EXPECT_THAT(BufferNames(plan), ElementsAre("s", "a", "x", "d", "y"));
  // y is d's epilogue (dot_epilogue_fusion.h): the dot kernel reads s itself too.
  ASSERT_THAT(KernelNames(plan), ElementsAre("x", "d"));
  ASSERT_NE(plan.kernels[1].epilogue, nullptr);
  EXPECT_EQ(plan.kernels[1].epilogue->name(), "y");
  EXPECT_THAT(plan.kernels[1].inputs, ::testing::UnorderedElementsAre(2, 1, 0));  // x, a and s.
}

TEST_F(PlannerTest, AReshapeOfABufferReadsThatBufferWithoutAKernel) {
  // flat, read by two kernels, would need a buffer; as a reshape of e's buffer it reads that one
  // (no kernel, no buffer of its own). The output reshape keeps its own buffer and kernel.
  ProgramPlan plan = Plan(R"(HloModule alias
ENTRY e {
  p0 = f32[2,3,4] parameter(0)
  w = f32[4,5] parameter(1)
  e = f32[2,3,4] exponential(p0)
  flat = f32[6,4] reshape(e)
  d = f32[6,5] dot(flat, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  g = f32[6,4] negate(flat)
  x = f32[2,3,4] negate(e)
  out = f32[24] reshape(x)
  ROOT t = (f32[6,5], f32[6,4], f32[24]) tuple(d, g, out)
})");
  EXPECT_THAT(BufferNames(plan), ElementsAre("p0", "w", "e", "d", "g", "out"));
  // g and out are independent: one dispatch ("g+1", horizontal fusion).
  EXPECT_THAT(KernelNames(plan), ElementsAre("e", "d", "g+1"));
  EXPECT_THAT(plan.kernels[1].inputs, ElementsAre(2, 1));  // The dot reads e's buffer,
  EXPECT_THAT(plan.kernels[2].inputs, ElementsAre(2));     // and so do g and out.
  EXPECT_THAT(plan.kernels[2].outputs(), ElementsAre(4, 5));
}

TEST_F(PlannerTest, SoftmaxIsOneRowFusedKernel) {
  ProgramPlan plan = PlanFile("softmax");
  EXPECT_THAT(BufferNames(plan), ElementsAre("p0", "softmax"));
  ASSERT_EQ(plan.kernels.size(), 1u);
  const KernelPlan& kernel = plan.kernels[0];
  EXPECT_EQ(kernel.kind, KernelKind::kRows);
  EXPECT_EQ(kernel.row.rows, 4);
  EXPECT_EQ(kernel.row.lanes, 8u);  // A subgroup shares each row.
  ASSERT_EQ(kernel.row.reductions.size(), 2u);
  EXPECT_EQ(kernel.row.reductions[0]->name(), "row_max");
  EXPECT_EQ(kernel.row.reductions[1]->name(), "row_sum");
  EXPECT_EQ(kernel.invocations, 4u * 8u);
  EXPECT_EQ(kernel.local_size, 8u);
}

TEST_F(PlannerTest, LayerNormIsOneRowFusedKernel) {
  ProgramPlan plan = PlanFile("layer_norm");
  EXPECT_THAT(BufferNames(plan), ElementsAre("x", "gamma", "beta", "out"));
  ASSERT_EQ(plan.kernels.size(), 1u);
  EXPECT_EQ(plan.kernels[0].kind, KernelKind::kRows);
  EXPECT_EQ(plan.kernels[0].row.reductions.size(), 2u);  // sum, square_sum.
  EXPECT_THAT(plan.kernels[0].inputs, ElementsAre(0, 1, 2));
}

TEST_F(PlannerTest, AMapKernelReadingARowKernelAtItsOwnIndexComputesItRowByRow) {
  // Layer norm's variance ve (a row kernel: its reduction inside), kept for later, and its rsqrt
  // r, one value per row, read by y through a broadcast along y's rows: y's kernel computes ve
  // and r row by row and stores both once per row (r's kernel had ve's folded in before; y read
  // r from its buffer).
  ProgramPlan plan = PlanFile("fusion/variance_rsqrt");
  ASSERT_THAT(KernelNames(plan), ElementsAre("y"));  // ve's and r's kernels are gone.
  const KernelPlan& kernel = plan.kernels[0];
  EXPECT_EQ(kernel.kind, KernelKind::kRows);
  EXPECT_EQ(kernel.row.rows, 6);
  ASSERT_EQ(kernel.row.reductions.size(), 1u);
  EXPECT_EQ(kernel.row.reductions[0]->name(), "s");
  std::vector<std::string> stored;
  for (const ir::Instruction* value : kernel.also_stores) stored.push_back(value->name());
  EXPECT_THAT(stored,
              ::testing::UnorderedElementsAre("ve", "r"));  // Both returned, so still stored.
  EXPECT_THAT(kernel.inputs, ElementsAre(0));               // x only.
  EXPECT_EQ(kernel.invocations, 6u * kernel.row.lanes);     // The row kernel's invocations.
}

TEST_F(PlannerTest, ARowKernelReadElsewhereBeforeItsReaderKeepsItsKernel) {
  // w reads ve reversed (other indices) before r's kernel would compute ve: ve keeps its kernel.
  const std::string text =
      absl::StrReplaceAll(TestdataProgram("fusion/variance_rsqrt"),
                          {{"  r = f32[6] rsqrt(ve)\n",
                            "  rv = f32[6] reverse(ve), dimensions={0}\n"
                            "  w = f32[6] multiply(rv, rv)\n  r = f32[6] rsqrt(ve)\n"},
                           {"(f32[6], f32[6], f32[6,40]) tuple(ve, r, y)",
                            "(f32[6], f32[6], f32[6,40], f32[6]) tuple(ve, r, y, w)"}});
  ProgramPlan plan = Plan(text);
  ASSERT_GE(plan.kernels.size(), 3u);
  EXPECT_EQ(plan.kernels[0].name, "ve");
  EXPECT_EQ(plan.kernels[0].kind, KernelKind::kRows);
  for (const KernelPlan& kernel : plan.kernels) EXPECT_TRUE(kernel.also_stores.empty());
}

TEST_F(PlannerTest, WithoutShufflesRowsAreOneInvocationEach) {
  TargetInfo target = LavapipeTarget();
  target.subgroup_shuffle = false;
  ProgramPlan plan = Plan(TestdataProgram("softmax"), target);
  ASSERT_EQ(plan.kernels.size(), 1u);
  EXPECT_EQ(plan.kernels[0].row.lanes, 1u);
  EXPECT_EQ(plan.kernels[0].invocations, 4u);
  EXPECT_EQ(plan.kernels[0].local_size, 64u);
}

TEST_F(PlannerTest, FusionCapSplitsA300OpChainIntoThreeKernels) {
  std::string text = "HloModule long\nENTRY e {\n  n0 = f32[16] parameter(0)\n";
  for (int k = 1; k <= 300; ++k) {
    absl::StrAppend(&text, k == 300 ? "  ROOT " : "  ", "n", k, " = f32[16] negate(n", k - 1,
                    ")\n");
  }
  ProgramPlan plan = Plan(text + "}\n");
  // n1..n127 count 1..127 inline; n128 would be the 128th, so it gets a buffer; again at n256.
  EXPECT_THAT(BufferNames(plan), ElementsAre("n0", "n128", "n256", "n300"));
  EXPECT_THAT(KernelNames(plan), ElementsAre("n128", "n256", "n300"));
  EXPECT_THAT(plan.kernels[1].inputs, ElementsAre(1));
  EXPECT_THAT(plan.kernels[2].inputs, ElementsAre(2));
}

TEST_F(PlannerTest, BuffersOverTheStorageRangeAreSplitIntoPowerOfTwoParts) {
  TargetInfo target = LavapipeTarget();
  target.max_storage_buffer_range = 1 << 20;  // 262,144 floats per binding.
  ProgramPlan plan = Plan(R"(HloModule big
ENTRY e {
  a = f32[1000000] parameter(0)
  small = f32[1000] parameter(1)
  ROOT b = f32[1000000] negate(a)
})",
                          target);
  ASSERT_EQ(plan.buffers.size(), 3u);
  EXPECT_EQ(plan.buffers[0].part_elements, 262144u);
  EXPECT_EQ(plan.buffers[0].parts(), 4u);  // 1,000,000 / 262,144 = 3.8.
  EXPECT_EQ(plan.buffers[0].byte_size(), 4000000u);
  EXPECT_EQ(plan.buffers[1].parts(), 1u);
  EXPECT_EQ(plan.buffers[0].origin, BufferOrigin::kParameter);
  EXPECT_EQ(plan.buffers[1].parameter_number, 1);
  EXPECT_EQ(plan.buffers[2].origin, BufferOrigin::kIntermediate);
}

TEST_F(PlannerTest, PredicatesTakeOneByteOnlyWhereTheTargetSaysSo) {
  const std::string text = R"(HloModule pred
ENTRY e {
  a = f32[8] parameter(0)
  ROOT p = pred[8] compare(a, a), direction=EQ
})";
  EXPECT_EQ(Plan(text).buffers[1].element_bytes, 1u);
  TargetInfo target = LavapipeTarget();
  target.byte_predicates = false;
  EXPECT_EQ(Plan(text, target).buffers[1].element_bytes, 4u);
  EXPECT_EQ(Plan(text).buffers[0].element_bytes, 4u);
}

TEST_F(PlannerTest, KernelsBindingMoreRangesThanTheDeviceAllowsAreErrors) {
  TargetInfo target = LavapipeTarget();
  target.max_storage_buffer_range = 1 << 20;
  const std::string text = R"(HloModule bindings
ENTRY e {
  a = f32[1000000] parameter(0)
  b = f32[1000000] parameter(1)
  ROOT c = f32[1000000] add(a, b)
})";
  target.max_storage_buffers_per_stage = 12;  // 4 + 4 inputs, 4 output.
  EXPECT_TRUE(PlanError(text, target).ok());
  target.max_storage_buffers_per_stage = 11;
  absl::Status error = PlanError(text, target);
  EXPECT_EQ(error.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(error.message(), HasSubstr("binds 12 storage buffer ranges"));
}

TEST_F(PlannerTest, LongReductionRunsInTwoPasses) {
  ProgramPlan plan = Plan(R"(HloModule long_reduce
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b) }
ENTRY e {
  p = f32[4,100000] parameter(0)
  z = f32[] parameter(1)
  ROOT r = f32[4] reduce(p, z), dimensions={1}, to_apply=add
})");
  // 8 lanes share chunks of 8 x 4096 = 32,768 elements: 4 chunks per row, then one pass over 4.
  EXPECT_THAT(BufferNames(plan), ElementsAre("p", "z", "r", "r.partial"));
  EXPECT_EQ(plan.buffers[3].shape.dimensions(), (std::vector<int64_t>{4, 4}));
  ASSERT_THAT(KernelNames(plan), ElementsAre("r.partial", "r"));
  const KernelPlan& first = plan.kernels[0];
  EXPECT_THAT(first.inputs, ElementsAre(0));  // The init is applied only by the last pass.
  EXPECT_EQ(first.output, 3);
  EXPECT_EQ(first.reduction.chunks, 4);
  EXPECT_EQ(first.invocations, 4u * 4u * 8u);
  EXPECT_EQ(first.local_size, 8u);
  const KernelPlan& second = plan.kernels[1];
  EXPECT_THAT(second.inputs, ElementsAre(3, 1));
  EXPECT_EQ(second.reduction.partials, 3);
  EXPECT_EQ(second.reduction.lanes, 1u);  // 4 partials are too few to share.
  EXPECT_EQ(second.invocations, 4u);
}

TEST_F(PlannerTest, LongContractionSplitsTheDotAndSumsTheChunks) {
  ProgramPlan plan = Plan(R"(HloModule split_k
ENTRY e {
  a = f32[16,20000] parameter(0)
  b = f32[20000,16] parameter(1)
  ROOT d = f32[16,16] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  // 20,000 steps in chunks of 512: 40 chunks of partial products, then their sum.
  EXPECT_THAT(BufferNames(plan), ElementsAre("a", "b", "d", "d.split_k"));
  EXPECT_EQ(plan.buffers[3].shape.dimensions(), (std::vector<int64_t>{40, 16, 16}));
  ASSERT_THAT(KernelNames(plan), ElementsAre("d.split_k", "d"));
  EXPECT_EQ(plan.kernels[0].kind, KernelKind::kDot);
  EXPECT_EQ(plan.kernels[0].dot.chunks, 40);
  // 1 tile of 16 rows x 1 column block x 40 chunks, 8 lanes each (4 columns per lane).
  EXPECT_EQ(plan.kernels[0].invocations, 1u * 40u * 8u);
  EXPECT_EQ(plan.kernels[1].kind, KernelKind::kReduction);
  EXPECT_THAT(plan.kernels[1].inputs, ElementsAre(3));
  EXPECT_EQ(plan.kernels[1].invocations, 256u);
}

TEST_F(PlannerTest, KernelCountsOfTestdataPrograms) {
  // Dots read their fused operands: the bias add and relu run inside the second dot.
  ProgramPlan mlp = PlanFile("mlp_forward");
  EXPECT_THAT(KernelNames(mlp), ElementsAre("dot.5", "dot.11"));
  EXPECT_THAT(mlp.kernels[1].inputs, ElementsAre(2, 3, 4));  // dot.5, Arg_2.3, Arg_3.4.
  ProgramPlan reduce = PlanFile("reduce_sum");
  ASSERT_THAT(KernelNames(reduce), ElementsAre("reduce"));
  EXPECT_EQ(reduce.kernels[0].reduction.lanes, 1u);  // 8 elements per row: too few to share.
  EXPECT_EQ(reduce.kernels[0].invocations, 4u);
  ProgramPlan all_reduce = PlanFile("all_reduce_groups");
  ASSERT_EQ(all_reduce.kernels.size(), 1u);
  EXPECT_EQ(all_reduce.kernels[0].kind, KernelKind::kCollective);
  EXPECT_NE(all_reduce.kernels[0].collective, nullptr);
  EXPECT_THAT(all_reduce.kernels[0].inputs, ElementsAre(0));
  EXPECT_EQ(PlanFile("elementwise_chain").kernels.size(), 1u);
  // The bias add and the relu's backward select are epilogues of the dots before them (7 kernels
  // without epilogues).
  ProgramPlan backward = PlanFile("mlp_backward");
  EXPECT_THAT(KernelNames(backward), ElementsAre("dot.1", "dot.7", "dot.8", "reduce.11", "dot.12"));
  ASSERT_NE(backward.kernels[0].epilogue, nullptr);
  EXPECT_EQ(backward.kernels[0].epilogue->name(), "add.3");
  ASSERT_NE(backward.kernels[2].epilogue, nullptr);
  EXPECT_EQ(backward.kernels[2].epilogue->name(), "select.10");
}

TEST_F(PlannerTest, DonationIsKeptWhenTheOutputReadsTheParameterInPlace) {
  ProgramPlan plan = Plan(R"(HloModule sgd, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY e {
  w = f32[8] parameter(0)
  g = f32[8] parameter(1)
  lr = f32[] constant(0.1)
  lr_b = f32[8] broadcast(lr), dimensions={}
  step = f32[8] multiply(g, lr_b)
  new_w = f32[8] subtract(w, step)
  ROOT t = (f32[8]) tuple(new_w)
})");
  EXPECT_TRUE(plan.tuple_result);
  EXPECT_THAT(plan.donations, ElementsAre(std::make_pair(2, 0)));
}

TEST_F(PlannerTest, DonationIsDroppedWhenTheOutputReadsOtherElements) {
  ProgramPlan plan = Plan(R"(HloModule transpose, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY e {
  p = f32[4,4] parameter(0)
  ROOT t = f32[4,4] transpose(p), dimensions={1,0}
})");
  EXPECT_THAT(plan.donations, IsEmpty());
}

TEST_F(PlannerTest, DonationIsDroppedWhenALaterKernelReadsTheParameter) {
  ProgramPlan plan = Plan(R"(HloModule later, input_output_alias={ {0}: (0, {}, may-alias) }
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b) }
ENTRY e {
  w = f32[8] parameter(0)
  new_w = f32[8] negate(w)
  zero = f32[] constant(0)
  total = f32[] reduce(w, zero), dimensions={0}, to_apply=add
  ROOT t = (f32[8], f32[]) tuple(new_w, total)
})");
  ASSERT_THAT(KernelNames(plan), ElementsAre("new_w", "total"));
  EXPECT_THAT(plan.donations, IsEmpty());
}

}  // namespace
}  // namespace vkspmd::codegen
