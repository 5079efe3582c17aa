// The comparison behind `vkspmd run --compare`: NaN and Inf mismatches are failures, never
// skipped; tolerances as numpy's allclose; integers exact; shapes must agree.
#include "src/interp/result_comparison.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace vkspmd::interp {
namespace {

ir::Literal Floats(std::vector<float> values) {
  ir::Literal literal(ir::Shape(ir::DType::kF32, {static_cast<int64_t>(values.size())}));
  for (size_t i = 0; i < values.size(); ++i) literal.SetFromDouble(i, values[i]);
  return literal;
}

Comparison Of(const ir::Literal& got, const ir::Literal& reference, double rtol = 1e-4,
              double atol = 1e-5) {
  Comparison comparison;
  Compare(got, reference, rtol, atol, "output", comparison);
  return comparison;
}

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(ResultComparisonTest, EqualAndCloseValuesPass) {
  Comparison same = Of(Floats({1, 2, kNan, kInf, -kInf}), Floats({1, 2, kNan, kInf, -kInf}));
  EXPECT_EQ(same.beyond, 0);
  EXPECT_EQ(same.elements, 5);
  EXPECT_EQ(same.max_absolute, 0);
  Comparison close = Of(Floats({1.00005f, 0}), Floats({1, 5e-6f}));
  EXPECT_EQ(close.beyond, 0);
  EXPECT_GT(close.max_absolute, 0);
}

TEST(ResultComparisonTest, NanOrInfinityAgainstAnotherValueIsAnInfiniteError) {
  for (auto [got, reference] : std::vector<std::pair<float, float>>{
           {kNan, 1}, {1, kNan}, {kInf, 1}, {1, kInf}, {kInf, -kInf}, {kNan, kInf}}) {
    Comparison comparison = Of(Floats({0, got}), Floats({0, reference}));
    EXPECT_EQ(comparison.beyond, 1) << got << " against " << reference;
    EXPECT_TRUE(std::isinf(comparison.max_absolute)) << got << " against " << reference;
    EXPECT_NE(comparison.first_beyond.find("output index 1"), std::string::npos)
        << comparison.first_beyond;
  }
}

TEST(ResultComparisonTest, TolerancesAreAbsolutePlusRelative) {
  EXPECT_EQ(Of(Floats({101}), Floats({100}), 0.01, 0).beyond, 0);
  EXPECT_EQ(Of(Floats({101.5f}), Floats({100}), 0.01, 0).beyond, 1);
  EXPECT_EQ(Of(Floats({101.5f}), Floats({100}), 0.01, 0.5).beyond, 0);
  EXPECT_EQ(Of(Floats({1.0f}), Floats({1.0000001f}), 0, 0).beyond, 1);
}

TEST(ResultComparisonTest, IntegersMustBeEqualAndShapesMustAgree) {
  ir::Literal a(ir::Shape(ir::DType::kS32, {2}));
  ir::Literal b(ir::Shape(ir::DType::kS32, {2}));
  a.SetFromDouble(0, 7);
  b.SetFromDouble(0, 7);
  a.SetFromDouble(1, 1000000);
  b.SetFromDouble(1, 1000001);
  EXPECT_EQ(Of(a, b, 0.1, 10).beyond, 1);  // Tolerances do not apply to integers.
  Comparison shapes = Of(Floats({1, 2, 3}), Floats({1, 2}));
  EXPECT_EQ(shapes.beyond, 2);
  EXPECT_NE(shapes.first_beyond.find("shape f32[3]"), std::string::npos) << shapes.first_beyond;
}

// `largest` names the element of the largest error (the first beyond may be another one).
TEST(ResultComparisonTest, LargestNamesTheElementOfTheLargestError) {
  Comparison comparison = Of(Floats({1.5f, 0, 4, 9}), Floats({1, 0, 1, 8}));
  EXPECT_EQ(comparison.beyond, 3);
  EXPECT_EQ(comparison.max_absolute, 3);
  EXPECT_EQ(comparison.largest, "output index 2: got 4, reference 1");
  EXPECT_EQ(Of(Floats({1, kNan}), Floats({1, 2})).largest, "output index 1: got nan, reference 2");
  EXPECT_EQ(Of(Floats({1}), Floats({1})).largest, "");
}

TEST(ResultComparisonTest, TuplesAreComparedElementByElement) {
  ir::Literal got = ir::Literal::Tuple({Floats({1}), Floats({kNan})});
  ir::Literal reference = ir::Literal::Tuple({Floats({1}), Floats({2})});
  Comparison comparison = Of(got, reference);
  EXPECT_EQ(comparison.beyond, 1);
  EXPECT_NE(comparison.first_beyond.find("output element 1 index 0"), std::string::npos)
      << comparison.first_beyond;
}

}  // namespace
}  // namespace vkspmd::interp
