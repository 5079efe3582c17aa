// DType names and sizes, Shape printing (with XLA's default layouts), element counts and the
// row-major index helpers.
#include "src/ir/shape.h"

#include "gtest/gtest.h"
#include "src/ir/literal.h"

namespace vkspmd::ir {
namespace {

TEST(DTypeTest, NamesRoundTrip) {
  for (DType type :
       {DType::kPred, DType::kS8, DType::kS16, DType::kS32, DType::kS64, DType::kU8, DType::kU16,
        DType::kU32, DType::kU64, DType::kF16, DType::kBF16, DType::kF32, DType::kF64}) {
    EXPECT_EQ(DTypeFromName(DTypeName(type)), type);
  }
  EXPECT_EQ(DTypeFromName("token"), std::nullopt);
  EXPECT_EQ(DTypeByteSize(DType::kPred), 1);
  EXPECT_EQ(DTypeByteSize(DType::kBF16), 2);
  EXPECT_EQ(DTypeByteSize(DType::kF64), 8);
}

TEST(ShapeTest, PrintsLikeXla) {
  EXPECT_EQ(Shape(DType::kF32, {8, 16}).ToStringWithLayout(), "f32[8,16]{1,0}");
  EXPECT_EQ(Shape(DType::kF32, {8, 16}).ToString(), "f32[8,16]");
  EXPECT_EQ(Shape::Scalar(DType::kS32).ToStringWithLayout(), "s32[]");
  EXPECT_EQ(Shape(DType::kPred, {2, 3, 4}).ToStringWithLayout(), "pred[2,3,4]{2,1,0}");
  const Shape tuple = Shape::Tuple({Shape(DType::kF32, {2}), Shape::Tuple({})});
  EXPECT_EQ(tuple.ToStringWithLayout(), "(f32[2]{0}, ())");
}

TEST(ShapeTest, LongTuplesCarryXlasIndexComments) {
  std::vector<Shape> elements(7, Shape::Scalar(DType::kS32));
  EXPECT_EQ(Shape::Tuple(elements).ToString(),
            "(s32[], s32[], s32[], s32[], s32[], /*index=5*/s32[], s32[])");
}

TEST(ShapeTest, ElementCountsIncludeRankZeroAndZeroSizedDims) {
  EXPECT_EQ(Shape::Scalar(DType::kF32).ElementCount(), 1);
  EXPECT_EQ(Shape(DType::kF32, {3, 0, 2}).ElementCount(), 0);
  EXPECT_EQ(Shape(DType::kF32, {1, 1, 1, 1, 5}).ElementCount(), 5);
}

TEST(ShapeTest, EqualityComparesTypeDimsAndTupleStructure) {
  EXPECT_EQ(Shape(DType::kF32, {2}), Shape(DType::kF32, {2}));
  EXPECT_NE(Shape(DType::kF32, {2}), Shape(DType::kS32, {2}));
  EXPECT_NE(Shape(DType::kF32, {2}), Shape::Tuple({Shape(DType::kF32, {2})}));
}

TEST(ShapeTest, RowMajorStridesAndIndexWalk) {
  EXPECT_EQ(RowMajorStrides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  std::vector<int64_t> index = {0, 0};
  int count = 1;
  while (NextIndex({2, 3}, index)) ++count;
  EXPECT_EQ(count, 6);
}

TEST(LiteralTest, HalfAndBFloat16RoundToNearestEven) {
  EXPECT_EQ(FloatToHalfBits(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalfBits(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalfBits(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalfBits(1e6f), 0x7c00);
  EXPECT_EQ(HalfBitsToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(FloatToBFloat16Bits(1.0f), 0x3f80);
  EXPECT_EQ(BFloat16BitsToFloat(0x3f80), 1.0f);
  // 1 + 2^-8 is exactly between two bfloat16 values; ties go to the even one (1.0).
  EXPECT_EQ(FloatToBFloat16Bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
}

TEST(LiteralTest, PrintsConstantsLikeXla) {
  Literal matrix = Literal::Create<float>(DType::kF32, {2, 2}, {1, -0.5f, INFINITY, NAN});
  EXPECT_EQ(matrix.ValuesToString(), "{ {1, -0.5}, {inf, nan} }");
  EXPECT_EQ(Literal::Create<uint8_t>(DType::kPred, {}, {1}).ValuesToString(), "true");
  EXPECT_EQ(Literal(Shape(DType::kS32, {0})).ValuesToString(), "{}");
  EXPECT_EQ(Literal::Create<float>(DType::kF32, {}, {-0.0f}).ValuesToString(), "-0");
  // f16/bf16 print the fewest digits that read back to the same bits.
  Literal half(Shape(DType::kF16, {2}));
  half.SetFromDouble(0, -1.0 / 3.0);
  half.SetFromDouble(1, 65504);
  EXPECT_EQ(half.ValuesToString(), "{-0.3333, 6.55e+04}");  // %g, as XLA formats it
  Literal brain(Shape(DType::kBF16, {}));
  brain.SetFromDouble(0, 0.1);
  EXPECT_EQ(brain.ValuesToString(), "0.1");
}

}  // namespace
}  // namespace vkspmd::ir
