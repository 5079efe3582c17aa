// The rule table: the einsum-like factor rules of representative ops, printed as
// (operand dims)->(result dims) with factor ids, and the ops it refuses.
#include "src/spmd/op_rules.h"

#include "gtest/gtest.h"
#include "src/ir/parser.h"

namespace vkspmd::spmd {
namespace {

// The rule(s) of the root of a one-op module over parameter p (and q).
std::string RuleText(const std::string& signature, const std::string& root,
                     const std::string& computations = "") {
  const std::string text =
      "HloModule m\n" + computations + "ENTRY %main " + signature + " {\n" + root + "\n}\n";
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  if (!module.ok()) return std::string(module.status().message());
  absl::StatusOr<std::vector<OpRule>> rules = RulesFor(*(*module)->entry()->root());
  if (!rules.ok()) return std::string(rules.status().message());
  std::string joined;
  for (const OpRule& rule : *rules) {
    std::string kinds;
    for (const Factor& factor : rule.factors) {
      kinds += factor.kind == FactorKind::kPassThrough ? 'p'
               : factor.kind == FactorKind::kReduction ? 'r'
               : factor.kind == FactorKind::kWindow    ? 'w'
                                                       : 'n';
    }
    joined += rule.ToString() + " " + kinds + ";";
  }
  return joined;
}

TEST(OpRulesTest, DotContractsAReductionFactor) {
  EXPECT_EQ(
      RuleText("(p: f32[2,8,4], q: f32[2,4,6]) -> f32[2,8,6]",
               "  %p = f32[2,8,4] parameter(0)\n  %q = f32[2,4,6] parameter(1)\n"
               "  ROOT %d = f32[2,8,6] dot(f32[2,8,4] %p, f32[2,4,6] %q), lhs_batch_dims={0}, "
               "lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}"),
      "([f0,f2,f1],[f0,f1,f3])->([f0,f2,f3]) prpp;");
}

TEST(OpRulesTest, ReshapeUsesCompoundFactors) {
  EXPECT_EQ(RuleText("(p: f32[2,4,32]) -> f32[8,32]",
                     "  %p = f32[2,4,32] parameter(0)\n"
                     "  ROOT %r = f32[8,32] reshape(f32[2,4,32] %p)"),
            "([f0,f1,f2])->([f0*f1,f2]) ppp;");
  // [6] -> [4, ...] does not factor: both sides keep their dims whole.
  EXPECT_EQ(RuleText("(p: f32[2,3]) -> f32[3,2]",
                     "  %p = f32[2,3] parameter(0)\n  ROOT %r = f32[3,2] reshape(f32[2,3] %p)"),
            "([f0,f1])->([f2,f3]) nnnn;");
}

TEST(OpRulesTest, ReduceAndWindowOps) {
  const std::string add =
      "%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
      "  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(f32[] %a, f32[] %b)\n}\n";
  EXPECT_EQ(RuleText("(p: f32[4,6]) -> f32[4]",
                     "  %p = f32[4,6] parameter(0)\n  %z = f32[] constant(0)\n"
                     "  ROOT %r = f32[4] reduce(f32[4,6] %p, f32[] %z), dimensions={1}, "
                     "to_apply=%add",
                     add),
            "([f0,f1],[])->([f0]) pr;");
  // A sliced dim shares a window factor (split alike on both sides, kept split by halo
  // exchange), with any stride, as GSPMD passes a split through a strided slice; the untouched
  // dim passes through.
  EXPECT_EQ(RuleText("(p: f32[4,6]) -> f32[2,6]",
                     "  %p = f32[4,6] parameter(0)\n"
                     "  ROOT %s = f32[2,6] slice(f32[4,6] %p), slice={[1:3], [0:6]}"),
            "([f0,f1])->([f0,f1]) wp;");
  EXPECT_EQ(RuleText("(p: f32[4,6]) -> f32[2,6]",
                     "  %p = f32[4,6] parameter(0)\n"
                     "  ROOT %s = f32[2,6] slice(f32[4,6] %p), slice={[0:4:2], [0:6]}"),
            "([f0,f1])->([f0,f1]) wp;");
  // Interior padding is a window too.
  EXPECT_EQ(RuleText("(p: f32[4,6]) -> f32[7,6]",
                     "  %p = f32[4,6] parameter(0)\n  %z = f32[] constant(0)\n"
                     "  ROOT %s = f32[7,6] pad(f32[4,6] %p, f32[] %z), padding=0_0_1x0_0"),
            "([f0,f1],[])->([f0,f1]) wp;");
  // dynamic-slice: a constant start is a static slice's window; a start known at run time makes
  // the operand dim a reduction factor (each device slices what it holds, an all-reduce sums)
  // and the result's dim whole.
  EXPECT_EQ(RuleText("(p: f32[8,6]) -> f32[2,6]",
                     "  %p = f32[8,6] parameter(0)\n  %i = s32[] constant(3)\n"
                     "  %z = s32[] constant(0)\n"
                     "  ROOT %s = f32[2,6] dynamic-slice(f32[8,6] %p, s32[] %i, s32[] %z), "
                     "dynamic_slice_sizes={2,6}"),
            "([f0,f1],[],[])->([f0,f1]) wp;");
  EXPECT_EQ(RuleText("(p: f32[8,6], i: s32[]) -> f32[2,6]",
                     "  %p = f32[8,6] parameter(0)\n  %i = s32[] parameter(1)\n"
                     "  %z = s32[] constant(0)\n"
                     "  ROOT %s = f32[2,6] dynamic-slice(f32[8,6] %p, s32[] %i, s32[] %z), "
                     "dynamic_slice_sizes={2,6}"),
            "([f0,f2],[],[])->([f1,f2]) rnp;");
}

TEST(OpRulesTest, CollectivesOutsideManualRegionsAreRefused) {
  EXPECT_EQ(RuleText("(p: s32[]) -> u32[]",
                     "  %p = s32[] parameter(0)\n  ROOT %i = u32[] partition-id()"),
            "4:8: %i: the partitioner does not support partition-id in its input (the program is "
            "not yet partitioned)");
}

}  // namespace
}  // namespace vkspmd::spmd
