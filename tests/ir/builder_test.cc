// Builder API: instructions get inferred shapes and unique names, errors come back as statuses,
// and a built module verifies and prints.
#include "src/ir/builder.h"

#include "gtest/gtest.h"
#include "src/ir/printer.h"
#include "src/ir/verifier.h"

namespace vkspmd::ir {
namespace {

TEST(BuilderTest, BuildsAVerifiedMatmulWithReduction) {
  Module module("built");
  Computation* add = module.AddComputation(MakeScalarReducer("add", Opcode::kAdd, DType::kF32));
  ComputationBuilder builder("main");
  Instruction* x = builder.Parameter(0, Shape(DType::kF32, {4, 8}), "x");
  Instruction* w = builder.Parameter(1, Shape(DType::kF32, {8, 2}), "w");
  DotDimensions dims;
  dims.lhs_contracting = {1};
  dims.rhs_contracting = {0};
  absl::StatusOr<Instruction*> dot = builder.Dot(x, w, dims);
  ASSERT_TRUE(dot.ok()) << dot.status();
  EXPECT_EQ((*dot)->shape(), Shape(DType::kF32, {4, 2}));
  Instruction* zero = builder.Constant(Literal(Shape::Scalar(DType::kF32)));
  absl::StatusOr<Instruction*> sum = builder.Reduce(*dot, zero, {0, 1}, add);
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ((*sum)->shape(), Shape::Scalar(DType::kF32));
  module.set_entry(module.AddComputation(builder.Build()));
  EXPECT_TRUE(VerifyModule(module).ok());
  const std::string text = PrintModule(module);
  EXPECT_NE(text.find("%dot.0 = f32[4,2]{1,0} dot(f32[4,8]{1,0} %x, f32[8,2]{1,0} %w)"),
            std::string::npos)
      << text;
}

TEST(BuilderTest, ReportsShapeErrors) {
  ComputationBuilder builder("main");
  Instruction* a = builder.Parameter(0, Shape(DType::kF32, {4}));
  Instruction* b = builder.Parameter(1, Shape(DType::kF32, {5}));
  absl::StatusOr<Instruction*> sum = builder.Binary(Opcode::kAdd, a, b);
  ASSERT_FALSE(sum.ok());
  EXPECT_EQ(std::string(sum.status().message()), "add: operand shapes f32[4] and f32[5] differ");
  absl::StatusOr<Instruction*> reshaped = builder.Reshape(a, {3});
  EXPECT_FALSE(reshaped.ok());
  absl::StatusOr<Instruction*> converted = builder.Convert(a, DType::kS32);
  ASSERT_TRUE(converted.ok());
  EXPECT_EQ((*converted)->shape(), Shape(DType::kS32, {4}));
}

}  // namespace
}  // namespace vkspmd::ir
