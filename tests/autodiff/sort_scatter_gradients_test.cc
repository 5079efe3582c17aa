// Gradients of sort (one operand, key/value, lexicographic, top_k as a slice of a sort with and
// without an iota sorted along, XLA's topk and custom-call TopK) and of an assigning scatter
// (x.at[i].set(v)): central differences in f64 on the CPU reference over several shapes, then hand
// values where keys tie (the stable order decides) and where duplicate or out-of-range updates are
// overwritten or skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "src/autodiff/gradients.h"
#include "src/ir/parser.h"
#include "tests/autodiff/gradient_check.h"

namespace vkspmd::autodiff {
namespace {

using testing::RuleCase;

constexpr char kComparators[] = R"(%less (a: f64[], b: f64[]) -> pred[] {
  %a = f64[] parameter(0)
  %b = f64[] parameter(1)
  ROOT %lt = pred[] compare(%a, %b), direction=LT
}

%greater (a: f64[], b: f64[]) -> pred[] {
  %a = f64[] parameter(0)
  %b = f64[] parameter(1)
  ROOT %gt = pred[] compare(%a, %b), direction=GT
}

%named_like_positions (position_lhs: f64[], position_rhs: f64[]) -> pred[] {
  %position_lhs = f64[] parameter(0)
  %position_rhs = f64[] parameter(1)
  ROOT %lt = pred[] compare(%position_lhs, %position_rhs), direction=LT
}

%greater_with_index (a: f64[], b: f64[], i: s32[], j: s32[]) -> pred[] {
  %a = f64[] parameter(0)
  %b = f64[] parameter(1)
  %i = s32[] parameter(2)
  %j = s32[] parameter(3)
  ROOT %gt = pred[] compare(%a, %b), direction=GT, type=TOTALORDER
}

%key_value (k0: f64[], k1: f64[], v0: f64[], v1: f64[]) -> pred[] {
  %k0 = f64[] parameter(0)
  %k1 = f64[] parameter(1)
  %v0 = f64[] parameter(2)
  %v1 = f64[] parameter(3)
  ROOT %lt = pred[] compare(%k0, %k1), direction=LT
}

%major_then_minor_descending (a0: s32[], a1: s32[], b0: f64[], b1: f64[], c0: f64[], c1: f64[]) -> pred[] {
  %a0 = s32[] parameter(0)
  %a1 = s32[] parameter(1)
  %b0 = f64[] parameter(2)
  %b1 = f64[] parameter(3)
  %c0 = f64[] parameter(4)
  %c1 = f64[] parameter(5)
  %less = pred[] compare(%a0, %a1), direction=LT
  %same = pred[] compare(%a0, %a1), direction=EQ
  %greater = pred[] compare(%b0, %b1), direction=GT
  %then = pred[] and(%same, %greater)
  ROOT %before = pred[] or(%less, %then)
}

%assign (old: f64[], new: f64[]) -> f64[] {
  %old = f64[] parameter(0)
  ROOT %new = f64[] parameter(1)
}

%multiply (old: f64[], new: f64[]) -> f64[] {
  %old = f64[] parameter(0)
  %new = f64[] parameter(1)
  ROOT %product = f64[] multiply(%old, %new)
}

)";

std::vector<RuleCase> Cases() {
  return {
      {"sort_rows_of_odd_length",
       {{"x", "f64[3,7]"}},
       "  %y = f64[3,7] sort(%x), dimensions={1}, is_stable=true, to_apply=%less\n",
       "f64[3,7]"},
      {"sort_columns_descending",
       {{"x", "f64[5,4]"}},
       "  %y = f64[5,4] sort(%x), dimensions={0}, to_apply=%greater\n",
       "f64[5,4]"},
      {"sort_middle_dim_of_three",
       {{"x", "f64[2,5,3]"}},
       "  %y = f64[2,5,3] sort(%x), dimensions={1}, is_stable=true, to_apply=%less\n",
       "f64[2,5,3]"},
      // The recomputed sort's extra parameters get other names than the comparator's own.
      {"sort_comparator_with_parameters_named_position",
       {{"x", "f64[9]"}},
       "  %y = f64[9] sort(%x), dimensions={0}, to_apply=%named_like_positions\n",
       "f64[9]"},
      {"sort_one_element",
       {{"x", "f64[4,1]"}},
       "  %y = f64[4,1] sort(%x), dimensions={1}, to_apply=%less\n",
       "f64[4,1]"},
      // Both outputs read: the keys' and the values' adjoints go back in one sort.
      {"sort_key_value",
       {{"k", "f64[2,5]"}, {"v", "f64[2,5]"}},
       "  %s = (f64[2,5], f64[2,5]) sort(%k, %v), dimensions={1}, to_apply=%key_value\n"
       "  %ks = f64[2,5] get-tuple-element(%s), index=0\n"
       "  %vs = f64[2,5] get-tuple-element(%s), index=1\n"
       "  %y = f64[2,5] multiply(%ks, %vs)\n",
       "f64[2,5]"},
      // Only the values read: the keys get their gradient only through %v's dependence on them.
      {"sort_values_by_keys",
       {{"k", "f64[6]"}},
       "  %v = f64[6] exponential(%k)\n"
       "  %s = (f64[6], f64[6]) sort(%k, %v), dimensions={0}, to_apply=%key_value\n"
       "  %y = f64[6] get-tuple-element(%s), index=1\n",
       "f64[6]"},
      // Integer major keys with ties; the float minor key breaks them, a third operand follows.
      {"sort_lexicographic",
       {{"b", "f64[11]"}, {"c", "f64[11]"}},
       "  %a = s32[11] constant({2, 0, 1, 2, 0, 1, 1, 2, 0, 0, 1})\n"
       "  %s = (s32[11], f64[11], f64[11]) sort(%a, %b, %c), dimensions={0}, is_stable=true, "
       "to_apply=%major_then_minor_descending\n"
       "  %bs = f64[11] get-tuple-element(%s), index=1\n"
       "  %cs = f64[11] get-tuple-element(%s), index=2\n"
       "  %cc = f64[11] multiply(%cs, %cs)\n"
       "  %y = f64[11] add(%bs, %cc)\n",
       "f64[11]"},
      // top_k as PyTorch/XLA and lax.top_k trace it: sort an iota along, descending, slice.
      {"top_k_through_sort_with_iota",
       {{"x", "f64[3,9]"}},
       "  %iota = s32[3,9] iota(), iota_dimension=1\n"
       "  %s = (f64[3,9], s32[3,9]) sort(%x, %iota), dimensions={1}, is_stable=true, "
       "to_apply=%greater_with_index\n"
       "  %values = f64[3,9] get-tuple-element(%s), index=0\n"
       "  %y = f64[3,4] slice(%values), slice={[0:3], [0:4]}\n",
       "f64[3,4]"},
      // XLA's topk instruction (greatest and smallest) and the custom-call "TopK" of older XLA
      // with a comparator of the values alone: read as a sort of (x, iota) and slices.
      {"top_k_instruction",
       {{"x", "f64[3,9]"}},
       "  %t = (f64[3,4], s32[3,4]) topk(%x), k=4, largest=true\n"
       "  %y = f64[3,4] get-tuple-element(%t), index=0\n",
       "f64[3,4]"},
      {"top_k_instruction_smallest",
       {{"x", "f64[2,7]"}},
       "  %t = (f64[2,3], s32[2,3]) topk(%x), k=3, largest=false\n"
       "  %y = f64[2,3] get-tuple-element(%t), index=0\n",
       "f64[2,3]"},
      {"top_k_custom_call",
       {{"x", "f64[4,6]"}},
       "  %t = (f64[4,2], s32[4,2]) custom-call(%x), custom_call_target=\"TopK\", "
       "to_apply=%greater\n"
       "  %y = f64[4,2] get-tuple-element(%t), index=0\n",
       "f64[4,2]"},
      {"top_k_through_a_one_operand_sort",
       {{"x", "f64[13]"}},
       "  %s = f64[13] sort(%x), dimensions={0}, to_apply=%greater\n"
       "  %y = f64[5] slice(%s), slice={[0:5]}\n",
       "f64[5]"},
      // x.at[i].set(v): id 1 twice (the last wins), 9 and -3 out of range (skipped).
      {"scatter_assign_rows",
       {{"x", "f64[5,3]"}, {"v", "f64[6,3]"}},
       "  %ids = s32[6] constant({1, 4, 1, 9, -3, 0})\n"
       "  %y = f64[5,3] scatter(%x, %ids, %v), update_window_dims={1}, inserted_window_dims={0}, "
       "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%assign\n",
       "f64[5,3]"},
      // Windows overlapping in part; the window at (4, 5) does not fit and is skipped.
      {"scatter_assign_overlapping_windows",
       {{"x", "f64[5,7]"}, {"patches", "f64[4,2,3]"}},
       "  %corners = s32[4,2] constant({ {0, 0}, {1, 2}, {4, 5}, {0, 1} })\n"
       "  %y = f64[5,7] scatter(%x, %corners, %patches), update_window_dims={1,2}, "
       "inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, "
       "to_apply=%assign\n",
       "f64[5,7]"},
      // Scalar updates at 2-D points; (0, 3) twice, (3, 0) out of range.
      {"scatter_assign_points",
       {{"x", "f64[3,4]"}, {"v", "f64[5]"}},
       "  %points = s32[5,2] constant({ {0, 3}, {2, 1}, {0, 3}, {3, 0}, {1, 1} })\n"
       "  %y = f64[3,4] scatter(%x, %points, %v), update_window_dims={}, "
       "inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, "
       "to_apply=%assign\n",
       "f64[3,4]"},
      // Whole columns, the index vector dim implicit (the indices' rank); 0 thrice, 5 skipped.
      {"scatter_assign_columns_implicit_index_vector",
       {{"x", "f64[3,4]"}, {"v", "f64[2,3,3]"}},
       "  %cols = s32[2,3] constant({ {0, 3, 0}, {2, 0, 5} })\n"
       "  %y = f64[3,4] scatter(%x, %cols, %v), update_window_dims={2}, "
       "inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, index_vector_dim=2, "
       "to_apply=%assign\n",
       "f64[3,4]"},
  };
}

class SortScatterGradientTest : public ::testing::TestWithParam<RuleCase> {};

TEST_P(SortScatterGradientTest, MatchesCentralDifferences) {
  EXPECT_EQ(testing::RuleCaseDiffers(GetParam(), kComparators), "");
}

INSTANTIATE_TEST_SUITE_P(Rules, SortScatterGradientTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<RuleCase>& param) {
                           return param.param.name;
                         });

std::unique_ptr<ir::Module> Parse(const RuleCase& c) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      ir::ParseAndVerifyModule(testing::RuleModuleText(c, kComparators));
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? std::move(*module) : nullptr;
}

// The gradients (elements 1..) of `c`'s loss at `arguments`.
std::vector<ir::Literal> GradientsAt(const RuleCase& c, const std::vector<ir::Literal>& arguments,
                                     const std::vector<int64_t>& wrt) {
  std::unique_ptr<ir::Module> module = Parse(c);
  if (module == nullptr) return {};
  absl::StatusOr<std::unique_ptr<ir::Module>> gradients = Gradients(*module, std::nullopt, wrt);
  EXPECT_TRUE(gradients.ok()) << gradients.status();
  if (!gradients.ok()) return {};
  absl::StatusOr<std::vector<ir::Literal>> results =
      testing::EvaluateGradients(**gradients, arguments);
  EXPECT_TRUE(results.ok()) << results.status();
  if (!results.ok()) return {};
  return std::vector<ir::Literal>(results->begin() + 1, results->end());
}

ir::Literal Vector(const std::vector<double>& values) {
  ir::Literal literal(ir::Shape(ir::DType::kF64, {static_cast<int64_t>(values.size())}));
  for (size_t i = 0; i < values.size(); ++i) literal.SetFromDouble(i, values[i]);
  return literal;
}

std::vector<double> Values(const ir::Literal& literal) {
  std::vector<double> values;
  for (int64_t i = 0; i < literal.ElementCount(); ++i) values.push_back(literal.GetAsDouble(i));
  return values;
}

// Tied keys have no derivative (moving one past the other changes the loss by a different
// amount each way); the stable order gives each tied key the adjoint of the place it sorted to.
// Loss sum(sorted * w), w = 1..5: x = {1, 0, 1, 0.5, 0} sorts as x1, x4, x3, x0, x2.
TEST(SortGradientTest, TiedKeysTakeTheAdjointOfTheirStablePlace) {
  const std::string loss_weights =
      "  %w = f64[5] constant({1, 2, 3, 4, 5})\n  %sorted_w = f64[5] multiply(%s, %w)\n";
  for (const std::string& sort :
       {std::string("  %s = f64[5] sort(%x), dimensions={0}, is_stable=true, to_apply=%less\n"),
        std::string("  %iota = s32[5] iota(), iota_dimension=0\n"
                    "  %pair = (f64[5], s32[5]) sort(%x, %iota), dimensions={0}, "
                    "is_stable=true, to_apply=%less_first\n"
                    "  %s = f64[5] get-tuple-element(%pair), index=0\n")}) {
    SCOPED_TRACE(sort);
    // %y = sorted * w / 2 so that y * sin(y) is replaced by hand: the harness's loss is used,
    // and its adjoint at y is sin(y) + y cos(y); the hand value applies the same chain.
    RuleCase c{"ties",
               {{"x", "f64[5]"}},
               sort + loss_weights + "  %y = f64[5] copy(%sorted_w)\n",
               "f64[5]"};
    const std::string less_first =
        "%less_first (a: f64[], b: f64[], i: s32[], j: s32[]) -> pred[] {\n"
        "  %a = f64[] parameter(0)\n  %b = f64[] parameter(1)\n  %i = s32[] parameter(2)\n"
        "  %j = s32[] parameter(3)\n  ROOT %lt = pred[] compare(%a, %b), direction=LT\n}\n\n";
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(
        testing::RuleModuleText(c, std::string(kComparators) + less_first));
    ASSERT_TRUE(module.ok()) << module.status();
    absl::StatusOr<std::unique_ptr<ir::Module>> gradients = Gradients(**module, std::nullopt, {0});
    ASSERT_TRUE(gradients.ok()) << gradients.status();
    const std::vector<double> x = {1, 0, 1, 0.5, 0};
    absl::StatusOr<std::vector<ir::Literal>> results =
        testing::EvaluateGradients(**gradients, {Vector(x)});
    ASSERT_TRUE(results.ok()) << results.status();
    // Sorted: x1 (0), x4 (0), x3 (0.5), x0 (1), x2 (1), at places 0..4 with weights 1..5.
    const std::vector<int> place = {3, 0, 4, 2, 1};
    const std::vector<double> sorted = {0, 0, 0.5, 1, 1};
    std::vector<double> expected(5);
    for (int i = 0; i < 5; ++i) {
      const double w = place[i] + 1, y = sorted[place[i]] * w;
      expected[i] = w * (std::sin(y) + y * std::cos(y));
    }
    const std::vector<double> got = Values((*results)[1]);
    for (int i = 0; i < 5; ++i) EXPECT_NEAR(got[i], expected[i], 1e-12) << "x" << i;
  }
}

// With tied keys the values follow the stable order, and their gradient is exact there too
// (central differences of the values are smooth: the keys do not move).
TEST(SortGradientTest, ValuesBehindTiedKeysFollowTheStableOrder) {
  RuleCase c{"tied_keys_values",
             {{"v", "f64[8]"}},
             "  %k = f64[8] constant({3, 1, 3, 1, 2, 3, 1, 2})\n"
             "  %s = (f64[8], f64[8]) sort(%k, %v), dimensions={0}, is_stable=true, "
             "to_apply=%key_value\n"
             "  %vs = f64[8] get-tuple-element(%s), index=1\n"
             "  %w = f64[8] iota(), iota_dimension=0\n"
             "  %y = f64[8] multiply(%vs, %w)\n",
             "f64[8]"};
  std::unique_ptr<ir::Module> module = Parse(c);
  ASSERT_NE(module, nullptr);
  for (uint32_t seed : {3u, 4u}) {
    EXPECT_EQ(testing::GradientsDifferFromDifferences(
                  *module, {0}, testing::RandomArguments(*module, -2, 2, seed)),
              "");
  }
}

// x.at[ids].set(v) with ids {2, 0, 2, 7}: loss sum(y * sin(y)) has adjoint g(y) at every element;
// x's rows 0 and 2 are overwritten (zero gradient), v0 loses row 2 to v2, v3 is skipped.
TEST(ScatterGradientTest, OverwrittenAndSkippedUpdatesGetZero) {
  RuleCase c{"assign_duplicates",
             {{"x", "f64[4]"}, {"v", "f64[4]"}},
             "  %ids = s32[4,1] constant({ {2}, {0}, {2}, {7} })\n"
             "  %y = f64[4] scatter(%x, %ids, %v), update_window_dims={}, "
             "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
             "to_apply=%assign\n",
             "f64[4]"};
  const std::vector<double> x = {0.1, 0.2, 0.3, 0.4}, v = {0.5, 0.6, 0.7, 0.8};
  const std::vector<ir::Literal> grads = GradientsAt(c, {Vector(x), Vector(v)}, {0, 1});
  ASSERT_EQ(grads.size(), 2u);
  const auto g = [](double y) { return std::sin(y) + y * std::cos(y); };
  const std::vector<double> dx = {0, g(0.2), 0, g(0.4)}, dv = {0, g(0.6), g(0.7), 0};
  const std::vector<double> got_x = Values(grads[0]), got_v = Values(grads[1]);
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(got_x[i], dx[i], 1e-12) << "x" << i;
    EXPECT_NEAR(got_v[i], dv[i], 1e-12) << "v" << i;
  }
}

TEST(ScatterGradientTest, OtherCombinersAreErrorsNamingThem) {
  RuleCase c{"scatter_multiply",
             {{"x", "f64[4]"}, {"v", "f64[2]"}},
             "  %ids = s32[2,1] constant({ {1}, {3} })\n"
             "  %y = f64[4] scatter(%x, %ids, %v), update_window_dims={}, "
             "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
             "to_apply=%multiply\n",
             "f64[4]"};
  std::unique_ptr<ir::Module> module = Parse(c);
  ASSERT_NE(module, nullptr);
  absl::Status status = Gradients(*module, std::nullopt, {0, 1}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("%y"), std::string::npos) << status;
  EXPECT_NE(status.message().find("combining with %multiply"), std::string::npos) << status;
}

// A sort with an iota operand reuses it as the permutation: the backward pass adds one sort
// (the adjoints put back); without one it sorts an iota along the keys again (two sorts).
TEST(SortGradientTest, AnIotaSortedAlongIsReusedAsThePermutation) {
  for (const auto& [name, sorts] : std::vector<std::pair<std::string, int>>{
           {"top_k_through_sort_with_iota", 2}, {"top_k_through_a_one_operand_sort", 3}}) {
    SCOPED_TRACE(name);
    const std::vector<RuleCase> cases = Cases();
    const RuleCase& c = *std::find_if(cases.begin(), cases.end(),
                                      [&](const RuleCase& r) { return r.name == name; });
    std::unique_ptr<ir::Module> module = Parse(c);
    ASSERT_NE(module, nullptr);
    absl::StatusOr<std::unique_ptr<ir::Module>> gradients = Gradients(*module, std::nullopt, {0});
    ASSERT_TRUE(gradients.ok()) << gradients.status();
    int count = 0;
    for (const auto& instruction : (*gradients)->entry()->instructions()) {
      count += instruction->opcode() == ir::Opcode::kSort;
    }
    EXPECT_EQ(count, sorts);
  }
}

}  // namespace
}  // namespace vkspmd::autodiff
