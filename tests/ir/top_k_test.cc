// XLA's top-k as newer XLA prints it (`topk`, k=, largest=) and as older XLA's custom-call "TopK"
// (k from the result, the order from its to_apply or greatest first), read as a sort of (values,
// iota) and slices: hand-computed values and indices on the CPU reference, and the errors.
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "src/interp/evaluator.h"
#include "src/ir/parser.h"
#include "src/ir/printer.h"

namespace vkspmd::ir {
namespace {

// Two rows with ties (3 twice, 0 and -0) and a NaN, which the total order puts above +inf.
Literal Rows() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  return Literal::Create<float>(DType::kF32, {2, 5}, {1, 3, 3, -1, 2, 0, -0.0f, nan, -4, 5});
}

// (values, indices) of `text`'s entry at Rows().
std::pair<std::vector<float>, std::vector<int32_t>> TopKOf(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return {};
  absl::StatusOr<Literal> result = interp::Evaluate(**module, {Rows()});
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok() || result->tuple_elements().size() != 2) return {};
  std::pair<std::vector<float>, std::vector<int32_t>> out;
  const Literal& values = result->tuple_elements()[0];
  const Literal& indices = result->tuple_elements()[1];
  for (int64_t i = 0; i < values.ElementCount(); ++i) out.first.push_back(values.Get<float>(i));
  for (int64_t i = 0; i < indices.ElementCount(); ++i) {
    out.second.push_back(indices.Get<int32_t>(i));
  }
  return out;
}

std::string TopK(const std::string& attributes, int64_t k = 3) {
  return "HloModule m\nENTRY e {\n  x = f32[2,5]{1,0} parameter(0)\n  ROOT t = (f32[2," +
         std::to_string(k) + "]{1,0}, s32[2," + std::to_string(k) + "]{1,0}) topk(x), " +
         attributes + "\n}\n";
}

bool IsNan(float value) { return value != value; }

TEST(TopKTest, GreatestFirstWithTiesToTheLowerIndex) {
  const auto [values, indices] = TopKOf(TopK("k=3, largest=true"));
  ASSERT_EQ(values.size(), 6u);
  EXPECT_EQ(std::vector<float>(values.begin(), values.begin() + 3), (std::vector<float>{3, 3, 2}));
  EXPECT_TRUE(IsNan(values[3]));
  EXPECT_EQ(values[4], 5);
  EXPECT_EQ(values[5], 0);
  EXPECT_FALSE(std::signbit(values[5])) << "+0 is above -0 in the total order";
  EXPECT_EQ(indices, (std::vector<int32_t>{1, 2, 4, 2, 4, 0}));
}

TEST(TopKTest, LargestFalseSelectsTheSmallestInAscendingOrder) {
  const auto [values, indices] = TopKOf(TopK("k=2, largest=false", 2));
  EXPECT_EQ(values, (std::vector<float>{-1, 1, -4, -0.0f}));
  EXPECT_EQ(indices, (std::vector<int32_t>{3, 0, 3, 1}));
}

TEST(TopKTest, LargestDefaultsToTrue) {
  EXPECT_EQ(TopKOf(TopK("k=1", 1)).second, (std::vector<int32_t>{1, 2}));
}

constexpr char kCustomCall[] = R"(HloModule m
%less (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %lt = pred[] compare(f32[] %a, f32[] %b), direction=LT, type=TOTALORDER
}
%plus (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %e (x: f32[2,5]) -> (f32[2,2], s32[2,2]) {
  %x = f32[2,5]{1,0} parameter(0)
  ROOT %custom-call = (f32[2,2]{1,0}, s32[2,2]{1,0}) custom-call(f32[2,5]{1,0} %x), custom_call_target="TopK"COMPARATOR
}
)";

std::string CustomCall(const std::string& comparator) {
  std::string text = kCustomCall;
  text.replace(text.find("COMPARATOR"), 10, comparator);
  return text;
}

TEST(TopKTest, CustomCallTakesKFromItsResultAndIsGreatestFirstWithoutAComparator) {
  EXPECT_EQ(TopKOf(CustomCall("")).second, (std::vector<int32_t>{1, 2, 2, 4}));
}

TEST(TopKTest, CustomCallSortsByItsComparatorOfTheValuesAlone) {
  const auto [values, indices] = TopKOf(CustomCall(", to_apply=%less"));
  EXPECT_EQ(indices, (std::vector<int32_t>{3, 0, 3, 1}));
  EXPECT_EQ(values, (std::vector<float>{-1, 1, -4, -0.0f}));
  EXPECT_TRUE(std::signbit(values[3]));
}

TEST(TopKTest, PrintedModuleReadsBackWithItsComparator) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(TopK("k=3, largest=true"));
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string printed = PrintModule(**module);
  EXPECT_NE(printed.find("%compare-greater-than ("), std::string::npos) << printed;
  EXPECT_NE(printed.find("direction=GT, type=TOTALORDER"), std::string::npos) << printed;
  EXPECT_EQ(printed.find("topk("), std::string::npos) << printed;
  EXPECT_EQ(TopKOf(printed).second, (std::vector<int32_t>{1, 2, 4, 2, 4, 0}));
}

// The text may define a computation with the name the comparator got: the comparator yields it.
TEST(TopKTest, TextComputationNamedLikeTheComparatorKeepsItsName) {
  const auto [values, indices] = TopKOf(R"(HloModule m
%top (x: f32[2,5]) -> (f32[2,1], s32[2,1]) {
  %x = f32[2,5]{1,0} parameter(0)
  ROOT %t = (f32[2,1]{1,0}, s32[2,1]{1,0}) topk(f32[2,5]{1,0} %x), k=1, largest=true
}
%compare-greater-than (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %e (x: f32[2,5]) -> (f32[2,1], s32[2]) {
  %x = f32[2,5]{1,0} parameter(0)
  %t = (f32[2,1]{1,0}, s32[2,1]{1,0}) call(f32[2,5]{1,0} %x), to_apply=%top
  %v = f32[2,1]{1,0} get-tuple-element(%t), index=0
  %zero = f32[] constant(0)
  %sums = f32[2]{0} reduce(f32[2,5]{1,0} %x, f32[] %zero), dimensions={1}, to_apply=%compare-greater-than
  %sum = f32[2,1]{1,0} reshape(f32[2]{0} %sums)
  %both = f32[2,1]{1,0} add(%v, %sum)
  %i = s32[2,1]{1,0} get-tuple-element(%t), index=1
  %flat = s32[2]{0} reshape(%i)
  ROOT %r = (f32[2,1]{1,0}, s32[2]{0}) tuple(%both, %flat)
}
)");
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[0], 3 + 8);
  EXPECT_TRUE(IsNan(values[1]));
  EXPECT_EQ(indices, (std::vector<int32_t>{1, 2}));
}

struct Malformed {
  std::string text;
  std::string message;
};

TEST(TopKTest, MalformedTopKsAreErrorsNamingTheOpAndWhy) {
  const std::vector<Malformed> cases = {
      {TopK("k=0", 0), "k=0 must be in 1..5, the last dimension of f32[2,5]"},
      {TopK("k=6", 6), "k=6 must be in 1..5"},
      {TopK("largest=true"), "topk %t needs k="},
      {TopK("k=2"), "topk %t is declared (f32[2,3], s32[2,3]) but computes (f32[2,2], s32[2,2])"},
      {TopK("k=3, largest=maybe"), "expected true or false, got 'maybe'"},
      {TopK("k=3, to_apply=x"), "attribute to_apply does not apply to topk"},
      {"HloModule m\nENTRY e {\n  x = f32[] parameter(0)\n  ROOT t = (f32[1], s32[1]) topk(x), "
       "k=1\n}\n",
       "top-k takes a numeric array of rank >= 1 (it selects along the last dimension), not f32[]"},
      {"HloModule m\nENTRY e {\n  x = pred[4] parameter(0)\n  ROOT t = (pred[1], s32[1]) topk(x), "
       "k=1\n}\n",
       "not pred[4]"},
      {CustomCall(", to_apply=%plus"),
       "the TopK comparator %plus must be (f32[], f32[], s32[], s32[]) or "
       "(f32[], f32[]) -> pred[]"},
      {"HloModule m\nENTRY e {\n  x = f32[2,5] parameter(0)\n  ROOT t = f32[2,2] "
       "custom-call(x), custom_call_target=\"TopK\"\n}\n",
       "custom-call %t \"TopK\" takes one operand and returns (values, indices), not f32[2,2]"},
      {"HloModule m\nENTRY e {\n  x = f32[2,5] parameter(0)\n  ROOT t = (f32[2,2], f32[2,2]) "
       "custom-call(x), custom_call_target=\"TopK\"\n}\n",
       "custom-call %t \"TopK\" is declared (f32[2,2], f32[2,2]) but computes (f32[2,2], "
       "s32[2,2])"},
  };
  for (const Malformed& c : cases) {
    absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(c.text);
    ASSERT_FALSE(module.ok()) << c.text;
    EXPECT_NE(module.status().message().find(c.message), std::string::npos)
        << module.status() << "\nexpected: " << c.message;
  }
}

}  // namespace
}  // namespace vkspmd::ir
