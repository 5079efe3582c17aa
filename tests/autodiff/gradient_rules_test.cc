// Every gradient rule checked against central differences in f64 on the CPU reference. Each case
// is a small HLO program computing %y from its parameters; the harness appends the loss
// sum(y * sin(y)), so the adjoint reaching %y differs from element to element.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/autodiff/gradient_check.h"

namespace vkspmd::autodiff {
namespace {

using testing::RuleCase;

RuleCase Unary(const std::string& op, double low = -2, double high = 2) {
  return {absl::StrCat("unary_", op),
          {{"x", "f64[3,5]"}},
          absl::StrCat("  %y = f64[3,5] ", op, "(%x)\n"),
          "f64[3,5]",
          low,
          high};
}

RuleCase Binary(const std::string& op, double low = 0.5, double high = 2) {
  return {absl::StrCat("binary_", op),
          {{"a", "f64[4,3]"}, {"b", "f64[4,3]"}},
          absl::StrCat("  %y = f64[4,3] ", op, "(%a, %b)\n"),
          "f64[4,3]",
          low,
          high};
}

std::vector<RuleCase> AllCases() {
  std::vector<RuleCase> cases = {
      Unary("negate"),
      Unary("abs"),
      Unary("exponential"),
      Unary("exponential-minus-one"),
      Unary("log", 0.3, 2),
      Unary("log-plus-one", -0.5, 2),
      Unary("sqrt", 0.3, 2),
      Unary("rsqrt", 0.3, 2),
      Unary("tanh"),
      Unary("logistic"),
      Unary("sine"),
      Unary("cosine"),
      Unary("erf"),
      Unary("copy"),
      Binary("add", -2, 2),
      Binary("subtract", -2, 2),
      Binary("multiply", -2, 2),
      Binary("divide"),
      Binary("remainder"),
      Binary("maximum", -2, 2),
      Binary("minimum", -2, 2),
      Binary("power"),
      Binary("atan2", -2, 2),
      {"select",
       {{"x", "f64[6]"}, {"z", "f64[6]"}},
       "  %p = pred[6] compare(%x, %z), direction=LT\n  %y = f64[6] select(%p, %x, %z)\n",
       "f64[6]"},
      {"clamp",
       {{"l", "f64[]"}, {"x", "f64[7]"}, {"h", "f64[]"}},
       "  %al = f64[] abs(%l)\n  %lo = f64[] negate(%al)\n  %hi = f64[] abs(%h)\n"
       "  %y = f64[7] clamp(%lo, %x, %hi)\n",
       "f64[7]"},
      {"convert_through_f32",
       {{"x", "f64[5]"}},
       "  %f = f32[5] convert(%x)\n  %t = f32[5] tanh(%f)\n  %y = f64[5] convert(%t)\n",
       "f64[5]",
       -2,
       2,
       1e-3,
       1e-4},
      {"broadcast",
       {{"x", "f64[3]"}},
       "  %y = f64[2,3,4] broadcast(%x), dimensions={1}\n",
       "f64[2,3,4]"},
      {"broadcast_two_dimensions",
       {{"x", "f64[4,3]"}},
       "  %y = f64[4,2,3] broadcast(%x), dimensions={0,2}\n",
       "f64[4,2,3]"},
      {"broadcast_scalar",
       {{"x", "f64[]"}},
       "  %y = f64[2,3] broadcast(%x), dimensions={}\n",
       "f64[2,3]"},
      {"reshape", {{"x", "f64[3,4]"}}, "  %y = f64[2,6] reshape(%x)\n", "f64[2,6]"},
      {"transpose",
       {{"x", "f64[2,3,4]"}},
       "  %y = f64[4,2,3] transpose(%x), dimensions={2,0,1}\n",
       "f64[4,2,3]"},
      {"slice_strided",
       {{"x", "f64[7,9]"}},
       "  %y = f64[3,3] slice(%x), slice={[1:6:2], [0:9:3]}\n",
       "f64[3,3]"},
      {"pad_interior_and_negative",
       {{"x", "f64[3,4]"}, {"v", "f64[]"}},
       "  %y = f64[8,4] pad(%x, %v), padding=1_2_1x-1_1\n",
       "f64[8,4]"},
      {"concatenate",
       {{"a", "f64[2,3]"}, {"b", "f64[4,3]"}},
       "  %y = f64[6,3] concatenate(%a, %b), dimensions={0}\n",
       "f64[6,3]"},
      {"reverse",
       {{"x", "f64[3,4]"}},
       "  %y = f64[3,4] reverse(%x), dimensions={0,1}\n",
       "f64[3,4]"},
      {"dynamic_slice_clamped",
       {{"x", "f64[6,5]"}},
       "  %i = s32[] constant(5)\n  %j = s32[] constant(1)\n"
       "  %y = f64[3,2] dynamic-slice(%x, %i, %j), dynamic_slice_sizes={3,2}\n",
       "f64[3,2]"},
      {"dynamic_update_slice",
       {{"x", "f64[6,5]"}, {"u", "f64[2,3]"}},
       "  %i = s32[] constant(1)\n  %j = s32[] constant(4)\n"
       "  %y = f64[6,5] dynamic-update-slice(%x, %u, %i, %j)\n",
       "f64[6,5]"},
      {"dot_batched",
       {{"a", "f64[2,3,4]"}, {"b", "f64[2,4,5]"}},
       "  %y = f64[2,3,5] dot(%a, %b), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
       "rhs_batch_dims={0}, rhs_contracting_dims={1}\n",
       "f64[2,3,5]"},
      {"dot_two_contracting_transposed",
       {{"a", "f64[4,2,3]"}, {"b", "f64[3,5,4]"}},
       "  %y = f64[2,5] dot(%a, %b), lhs_contracting_dims={0,2}, rhs_contracting_dims={2,0}\n",
       "f64[2,5]"},
      {"dot_batch_in_the_middle",
       {{"a", "f64[3,2,4]"}, {"b", "f64[4,2,5]"}},
       "  %y = f64[2,3,5] dot(%a, %b), lhs_batch_dims={1}, lhs_contracting_dims={2}, "
       "rhs_batch_dims={1}, rhs_contracting_dims={0}\n",
       "f64[2,3,5]"},
      // x @ w^T and q @ k^T per head: the weight's and k's gradients are dots of the operands in
      // the other order instead of transposed dots (TransposeAdjoint).
      {"dot_of_a_transposed_weight",
       {{"x", "f64[5,3]"}, {"w", "f64[4,3]"}},
       "  %wt = f64[3,4] transpose(%w), dimensions={1,0}\n"
       "  %y = f64[5,4] dot(%x, %wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n",
       "f64[5,4]"},
      {"dot_batched_of_a_transposed_operand",
       {{"q", "f64[2,3,4]"}, {"k", "f64[2,5,4]"}},
       "  %kt = f64[2,4,5] transpose(%k), dimensions={0,2,1}\n"
       "  %y = f64[2,3,5] dot(%q, %kt), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
       "rhs_batch_dims={0}, rhs_contracting_dims={1}\n",
       "f64[2,3,5]"},
      {"dot_matrix_vector",
       {{"a", "f64[3,4]"}, {"b", "f64[4]"}},
       "  %y = f64[3] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n",
       "f64[3]"},
      {"reduce_add_with_init",
       {{"x", "f64[3,4,5]"}, {"init", "f64[]"}},
       "  %y = f64[3,5] reduce(%x, %init), dimensions={1}, to_apply=%add\n",
       "f64[3,5]"},
      {"reduce_max",
       {{"x", "f64[3,4,5]"}},
       "  %ninf = f64[] constant(-inf)\n"
       "  %y = f64[4] reduce(%x, %ninf), dimensions={0,2}, to_apply=%max\n",
       "f64[4]"},
      {"reduce_min",
       {{"x", "f64[3,4]"}},
       "  %inf = f64[] constant(inf)\n  %y = f64[3] reduce(%x, %inf), dimensions={1}, "
       "to_apply=%min\n",
       "f64[3]"},
      {"reduce_max_ties_split_evenly",
       {{"x", "f64[2,3]"}},
       "  %twice = f64[4,3] concatenate(%x, %x), dimensions={0}\n  %ninf = f64[] constant(-inf)\n"
       "  %y = f64[3] reduce(%twice, %ninf), dimensions={0}, to_apply=%max\n",
       "f64[3]"},
      {"tuple_and_get_tuple_element",
       {{"a", "f64[4]"}, {"b", "f64[4]"}},
       "  %t = (f64[4], f64[4]) tuple(%a, %b)\n  %t0 = f64[4] get-tuple-element(%t), index=0\n"
       "  %t1 = f64[4] get-tuple-element(%t), index=1\n  %t0b = f64[4] get-tuple-element(%t), "
       "index=0\n"
       "  %p = f64[4] multiply(%t0, %t1)\n  %y = f64[4] add(%p, %t0b)\n",
       "f64[4]"},
      {"shared_subexpression",
       {{"x", "f64[5]"}},
       "  %e = f64[5] exponential(%x)\n  %s = f64[5] multiply(%e, %e)\n  %y = f64[5] add(%s, %e)\n",
       "f64[5]"},
      {"integer_path_stops",
       {{"x", "f64[6]"}},
       "  %i = s32[6] convert(%x)\n  %f = f64[6] convert(%i)\n  %y = f64[6] multiply(%x, %f)\n",
       "f64[6]",
       0.1,
       4},
      {"softmax",
       {{"x", "f64[3,5]"}},
       "  %ninf = f64[] constant(-inf)\n"
       "  %mx = f64[3] reduce(%x, %ninf), dimensions={1}, to_apply=%max\n"
       "  %mb = f64[3,5] broadcast(%mx), dimensions={0}\n  %sh = f64[3,5] subtract(%x, %mb)\n"
       "  %ex = f64[3,5] exponential(%sh)\n  %z = f64[] constant(0)\n"
       "  %sm = f64[3] reduce(%ex, %z), dimensions={1}, to_apply=%add\n"
       "  %sb = f64[3,5] broadcast(%sm), dimensions={0}\n  %y = f64[3,5] divide(%ex, %sb)\n",
       "f64[3,5]"},
      // Indices with repeats and out-of-range values, which the gather clamps.
      {"gather_embedding",
       {{"table", "f64[5,3]"}},
       "  %ids = s32[6,1] constant({ {1}, {4}, {1}, {9}, {-3}, {0} })\n"
       "  %y = f64[6,3] gather(%table, %ids), offset_dims={1}, collapsed_slice_dims={0}, "
       "start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}\n",
       "f64[6,3]"},
      {"gather_windows_clamped",
       {{"x", "f64[5,6]"}},
       "  %starts = s32[2,3] constant({ {0, 4, -1}, {5, 2, 1} })\n"
       "  %y = f64[3,2,3] gather(%x, %starts), offset_dims={1,2}, collapsed_slice_dims={}, "
       "start_index_map={0,1}, index_vector_dim=0, slice_sizes={2,3}\n",
       "f64[3,2,3]"},
      // x.at[i].add(v): repeats add up, 9 and -3 are dropped.
      {"scatter_add",
       {{"x", "f64[5,3]"}, {"v", "f64[6,3]"}},
       "  %ids = s32[6] constant({1, 4, 1, 9, -3, 0})\n"
       "  %y = f64[5,3] scatter(%x, %ids, %v), update_window_dims={1}, inserted_window_dims={0}, "
       "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add\n",
       "f64[5,3]"},
      {"scatter_add_windows",
       {{"x", "f64[5,6]"}, {"patches", "f64[3,2,2]"}},
       "  %corners = s32[3,2] constant({ {0, 0}, {3, 4}, {4, 1} })\n"
       "  %y = f64[5,6] scatter(%x, %corners, %patches), update_window_dims={1,2}, "
       "inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, "
       "to_apply=%add\n",
       "f64[5,6]"},
  };
  return cases;
}

class GradientRuleTest : public ::testing::TestWithParam<RuleCase> {};

TEST_P(GradientRuleTest, MatchesCentralDifferences) {
  EXPECT_EQ(testing::RuleCaseDiffers(GetParam()), "");
}

INSTANTIATE_TEST_SUITE_P(Rules, GradientRuleTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<RuleCase>& param) {
                           std::string name = param.param.name;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace vkspmd::autodiff
