// The shape of gradient modules and the errors of Gradients: lean backward graphs, exact zeros
// where the gradient stops, JAX's tie convention, loss selection, and clear errors.
#include "src/autodiff/gradients.h"

#include <gtest/gtest.h>

#include <set>

#include "src/ir/parser.h"
#include "src/ir/printer.h"
#include "src/ir/verifier.h"
#include "tests/autodiff/gradient_check.h"

namespace vkspmd::autodiff {
namespace {

std::unique_ptr<ir::Module> Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? std::move(*module) : nullptr;
}

int Count(const ir::Module& module, ir::Opcode opcode) {
  int count = 0;
  for (const auto& instruction : module.entry()->instructions())
    count += instruction->opcode() == opcode;
  return count;
}

constexpr char kAdd[] = R"(
%add (lhs: f64[], rhs: f64[]) -> f64[] {
  %lhs = f64[] parameter(0)
  %rhs = f64[] parameter(1)
  ROOT %sum = f64[] add(%lhs, %rhs)
}
)";

std::string WithAdd(const std::string& name, const std::string& entry) {
  return "HloModule " + name + "\n" + kAdd + entry;
}

const std::string kExpTimesWeights = WithAdd("exp_weights", R"(
ENTRY %main (x: f64[4], w: f64[4]) -> f64[] {
  %x = f64[4] parameter(0)
  %w = f64[4] parameter(1)
  %e = f64[4] exponential(%x)
  %m = f64[4] multiply(%e, %w)
  %zero = f64[] constant(0)
  ROOT %loss = f64[] reduce(%m, %zero), dimensions={0}, to_apply=%add
}
)");

TEST(GradientsTest, ReusesForwardValuesInsteadOfRecomputing) {
  std::unique_ptr<ir::Module> module = Parse(kExpTimesWeights);
  absl::StatusOr<std::unique_ptr<ir::Module>> gradients = Gradients(*module, std::nullopt, {0, 1});
  ASSERT_TRUE(gradients.ok()) << gradients.status();
  EXPECT_EQ(Count(**gradients, ir::Opcode::kExp), 1) << ir::PrintModule(**gradients);
}

TEST(GradientsTest, ComputesOnlyTheGradientsAskedFor) {
  std::unique_ptr<ir::Module> module = Parse(kExpTimesWeights);
  absl::StatusOr<std::unique_ptr<ir::Module>> both = Gradients(*module, std::nullopt, {0, 1});
  absl::StatusOr<std::unique_ptr<ir::Module>> only_w = Gradients(*module, std::nullopt, {1});
  ASSERT_TRUE(both.ok() && only_w.ok());
  // d/dw = exp(x) * g: one multiply beyond the forward one; d/dx would need another.
  EXPECT_EQ(Count(**only_w, ir::Opcode::kMultiply), 2) << ir::PrintModule(**only_w);
  EXPECT_GT(Count(**both, ir::Opcode::kMultiply), Count(**only_w, ir::Opcode::kMultiply));
  EXPECT_LT((*only_w)->entry()->instructions().size(), (*both)->entry()->instructions().size());
}

TEST(GradientsTest, KeepsNothingTheResultDoesNotUse) {
  // The forward pass has an output besides the loss (%unused), and the maximum's tie rule emits a
  // share for each operand: only what the loss and the requested gradient need survives.
  std::unique_ptr<ir::Module> module = Parse(WithAdd("dead", R"(
ENTRY %main (x: f64[4], y: f64[4]) -> (f64[], f64[4]) {
  %x = f64[4] parameter(0)
  %y = f64[4] parameter(1)
  %unused = f64[4] sine(%y)
  %m = f64[4] maximum(%x, %y)
  %zero = f64[] constant(0)
  %loss = f64[] reduce(%m, %zero), dimensions={0}, to_apply=%add
  ROOT %t = (f64[], f64[4]) tuple(%loss, %unused)
}
)"));
  absl::StatusOr<std::unique_ptr<ir::Module>> gradients = Gradients(*module, 0, {0});
  ASSERT_TRUE(gradients.ok()) << gradients.status();
  const ir::Computation& entry = *(*gradients)->entry();
  EXPECT_EQ(Count(**gradients, ir::Opcode::kSine), 0) << ir::PrintModule(**gradients);
  std::set<const ir::Instruction*> live = {entry.root()};
  for (auto it = entry.instructions().rbegin(); it != entry.instructions().rend(); ++it) {
    if (!live.count(it->get())) {
      EXPECT_EQ((*it)->opcode(), ir::Opcode::kParameter) << (*it)->name() << " is unused";
      continue;
    }
    for (const ir::Instruction* operand : (*it)->operands()) live.insert(operand);
  }
  EXPECT_TRUE(ir::VerifyModule(**gradients).ok());
}

TEST(GradientsTest, DotGradientsNeedNoTransposeForPlainMatrixProducts) {
  std::unique_ptr<ir::Module> module = Parse(WithAdd("matmul", R"(
ENTRY %main (x: f64[8,16], w: f64[16,4]) -> f64[] {
  %x = f64[8,16] parameter(0)
  %w = f64[16,4] parameter(1)
  %y = f64[8,4] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %zero = f64[] constant(0)
  ROOT %loss = f64[] reduce(%y, %zero), dimensions={0,1}, to_apply=%add
}
)"));
  absl::StatusOr<std::unique_ptr<ir::Module>> gradients = Gradients(*module, std::nullopt, {0, 1});
  ASSERT_TRUE(gradients.ok()) << gradients.status();
  EXPECT_EQ(Count(**gradients, ir::Opcode::kTranspose), 0) << ir::PrintModule(**gradients);
  EXPECT_EQ(Count(**gradients, ir::Opcode::kDot), 3);
}

TEST(GradientsTest, AWeightReadTransposedGetsItsGradientFromADotWithoutATranspose) {
  // y = x @ w^T, as a linear layer stores its weight: w's adjoint is the transpose of the
  // adjoint of w^T = x^T @ g, which is g^T @ x. The backward pass emits that dot (an optimizer
  // then reads the gradient at its own index, in the dot's kernel on devices) and no transpose of
  // a dot; the only transpose is the forward one.
  std::unique_ptr<ir::Module> module = Parse(WithAdd("linear", R"(
ENTRY %main (x: f64[8,16], w: f64[4,16]) -> f64[] {
  %x = f64[8,16] parameter(0)
  %w = f64[4,16] parameter(1)
  %wt = f64[16,4] transpose(%w), dimensions={1,0}
  %y = f64[8,4] dot(%x, %wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %s = f64[8,4] sine(%y)
  %zero = f64[] constant(0)
  ROOT %loss = f64[] reduce(%s, %zero), dimensions={0,1}, to_apply=%add
}
)"));
  absl::StatusOr<std::unique_ptr<ir::Module>> gradients = Gradients(*module, std::nullopt, {0, 1});
  ASSERT_TRUE(gradients.ok()) << gradients.status();
  int transposed_dots = 0;
  for (const auto& instruction : (*gradients)->entry()->instructions()) {
    transposed_dots += instruction->opcode() == ir::Opcode::kTranspose &&
                       instruction->operand(0)->opcode() == ir::Opcode::kDot;
  }
  EXPECT_EQ(transposed_dots, 0) << ir::PrintModule(**gradients);
  EXPECT_EQ(Count(**gradients, ir::Opcode::kTranspose), 1) << ir::PrintModule(**gradients);
  EXPECT_EQ(Count(**gradients, ir::Opcode::kDot), 3);
}

TEST(GradientsTest, StoppedPathsGiveExactZeros) {
  std::unique_ptr<ir::Module> module = Parse(WithAdd("stops", R"(
ENTRY %main (x: f64[5], y: f64[5]) -> f64[] {
  %x = f64[5] parameter(0)
  %y = f64[5] parameter(1)
  %i = s32[5] convert(%x)
  %f = f64[5] convert(%i)
  %less = pred[5] compare(%x, %y), direction=LT
  %one = f64[] constant(1)
  %ones = f64[5] broadcast(%one), dimensions={}
  %nothing = f64[] constant(0)
  %zeros = f64[5] broadcast(%nothing), dimensions={}
  %picked = f64[5] select(%less, %ones, %zeros)
  %floor = f64[5] floor(%y)
  %sum1 = f64[5] add(%f, %picked)
  %sum2 = f64[5] add(%sum1, %floor)
  %zero = f64[] constant(0)
  ROOT %loss = f64[] reduce(%sum2, %zero), dimensions={0}, to_apply=%add
}
)"));
  absl::StatusOr<std::unique_ptr<ir::Module>> gradients = Gradients(*module, std::nullopt, {0, 1});
  ASSERT_TRUE(gradients.ok()) << gradients.status();
  std::vector<ir::Literal> arguments = testing::RandomArguments(*module, -3, 3, 7);
  absl::StatusOr<std::vector<ir::Literal>> results =
      testing::EvaluateGradients(**gradients, arguments);
  ASSERT_TRUE(results.ok()) << results.status();
  for (int k = 1; k <= 2; ++k) {
    for (int64_t i = 0; i < 5; ++i) EXPECT_EQ((*results)[k].GetAsDouble(i), 0.0) << k << "," << i;
  }
  EXPECT_EQ(Count(**gradients, ir::Opcode::kMultiply), 0) << "nothing is emitted for stopped paths";
}

TEST(GradientsTest, TiedMaximumSplitsTheGradientEvenlyLikeJax) {
  std::unique_ptr<ir::Module> module = Parse(R"(
HloModule tie
ENTRY %main (a: f64[], b: f64[]) -> f64[] {
  %a = f64[] parameter(0)
  %b = f64[] parameter(1)
  ROOT %m = f64[] maximum(%a, %b)
}
)");
  absl::StatusOr<std::unique_ptr<ir::Module>> gradients = Gradients(*module, std::nullopt, {0, 1});
  ASSERT_TRUE(gradients.ok()) << gradients.status();
  ir::Literal one(ir::Shape::Scalar(ir::DType::kF64));
  one.SetFromDouble(0, 1.5);
  absl::StatusOr<std::vector<ir::Literal>> results =
      testing::EvaluateGradients(**gradients, {one, one});
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ((*results)[1].GetAsDouble(0), 0.5);
  EXPECT_EQ((*results)[2].GetAsDouble(0), 0.5);
}

TEST(GradientsTest, TiedReduceMaximumSplitsTheGradientAmongDistinctParameters) {
  std::unique_ptr<ir::Module> module = Parse(R"(
HloModule reduce_tie
%max (lhs: f64[], rhs: f64[]) -> f64[] {
  %lhs = f64[] parameter(0)
  %rhs = f64[] parameter(1)
  ROOT %m = f64[] maximum(%lhs, %rhs)
}
ENTRY %main (a: f64[1], b: f64[1], c: f64[1]) -> f64[] {
  %a = f64[1] parameter(0)
  %b = f64[1] parameter(1)
  %c = f64[1] parameter(2)
  %all = f64[3] concatenate(%a, %b, %c), dimensions={0}
  %ninf = f64[] constant(-inf)
  ROOT %m = f64[] reduce(%all, %ninf), dimensions={0}, to_apply=%max
}
)");
  absl::StatusOr<std::unique_ptr<ir::Module>> gradients =
      Gradients(*module, std::nullopt, {0, 1, 2});
  ASSERT_TRUE(gradients.ok()) << gradients.status();
  auto value = [](double x) {
    ir::Literal literal(ir::Shape(ir::DType::kF64, {1}));
    literal.SetFromDouble(0, x);
    return literal;
  };
  absl::StatusOr<std::vector<ir::Literal>> results =
      testing::EvaluateGradients(**gradients, {value(2.5), value(2.5), value(1.0)});
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ((*results)[1].GetAsDouble(0), 0.5) << "a ties with b";
  EXPECT_EQ((*results)[2].GetAsDouble(0), 0.5);
  EXPECT_EQ((*results)[3].GetAsDouble(0), 0.0);

  // A non-identity init that wins gives zero gradients, not 0/0.
  std::unique_ptr<ir::Module> init_wins = Parse(R"(
HloModule init_wins
%max (lhs: f64[], rhs: f64[]) -> f64[] {
  %lhs = f64[] parameter(0)
  %rhs = f64[] parameter(1)
  ROOT %m = f64[] maximum(%lhs, %rhs)
}
ENTRY %main (a: f64[1]) -> f64[] {
  %a = f64[1] parameter(0)
  %ten = f64[] constant(10)
  ROOT %m = f64[] reduce(%a, %ten), dimensions={0}, to_apply=%max
}
)");
  gradients = Gradients(*init_wins, std::nullopt, {0});
  ASSERT_TRUE(gradients.ok()) << gradients.status();
  results = testing::EvaluateGradients(**gradients, {value(1.0)});
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ((*results)[1].GetAsDouble(0), 0.0);
}

TEST(GradientsTest, LossFromATupleRootAndUnusedParametersGetZeros) {
  std::unique_ptr<ir::Module> module = Parse(WithAdd("tuple_root", R"(
ENTRY %main (x: f64[3], unused: f64[2]) -> (f64[3], f64[]) {
  %x = f64[3] parameter(0)
  %unused = f64[2] parameter(1)
  %square = f64[3] multiply(%x, %x)
  %zero = f64[] constant(0)
  %loss = f64[] reduce(%square, %zero), dimensions={0}, to_apply=%add
  ROOT %out = (f64[3], f64[]) tuple(%square, %loss)
}
)"));
  absl::StatusOr<std::unique_ptr<ir::Module>> gradients = Gradients(*module, 1, {0, 1});
  ASSERT_TRUE(gradients.ok()) << gradients.status();
  std::vector<ir::Literal> arguments = testing::RandomArguments(*module, -1, 1, 3);
  absl::StatusOr<std::vector<ir::Literal>> results =
      testing::EvaluateGradients(**gradients, arguments);
  ASSERT_TRUE(results.ok()) << results.status();
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ((*results)[1].GetAsDouble(i), 2 * arguments[0].GetAsDouble(i));
  }
  EXPECT_EQ((*results)[2].shape().dimensions(), std::vector<int64_t>{2});
  EXPECT_EQ((*results)[2].GetAsDouble(0), 0.0);
  EXPECT_EQ((*results)[2].GetAsDouble(1), 0.0);
}

TEST(GradientsTest, ErrorsNameWhatIsWrong) {
  std::unique_ptr<ir::Module> module = Parse(kExpTimesWeights);
  absl::Status status = Gradients(*module, std::nullopt, {2}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("no parameter 2"), std::string::npos) << status;
  status = Gradients(*module, 0, {0}).status();
  EXPECT_NE(status.message().find("needs a tuple root"), std::string::npos) << status;
  status = Gradients(*module, std::nullopt, {0, 0}).status();
  EXPECT_NE(status.message().find("listed twice"), std::string::npos) << status;

  std::unique_ptr<ir::Module> vector_loss = Parse(R"(
HloModule vector_loss
ENTRY %main (x: f64[3]) -> f64[3] {
  %x = f64[3] parameter(0)
  ROOT %e = f64[3] exponential(%x)
}
)");
  status = Gradients(*vector_loss, std::nullopt, {0}).status();
  EXPECT_NE(status.message().find("the loss must be a floating-point scalar"), std::string::npos)
      << status;

  std::unique_ptr<ir::Module> integer_parameter = Parse(R"(
HloModule integer_parameter
ENTRY %main (i: s32[], x: f64[]) -> f64[] {
  %i = s32[] parameter(0)
  %x = f64[] parameter(1)
  %f = f64[] convert(%i)
  ROOT %m = f64[] multiply(%f, %x)
}
)");
  status = Gradients(*integer_parameter, std::nullopt, {0}).status();
  EXPECT_NE(status.message().find("only floating-point array parameters"), std::string::npos)
      << status;
}

// reduce-precision passes its adjoint through the same rounding, as JAX's rule does (it treats
// the op as linear): for sum(r * x) with r = x rounded to bf16 (8 exponent, 7 mantissa bits),
// d/dx = round(x) + round(x) by hand, where the rounding's derivative (zero almost everywhere)
// would give round(x) alone. Spacing 2^-7 in [1, 2): 1 + 2^-8 is a tie to the even 1.0, and
// 1 + 3 * 2^-8 one to the even 1.015625; 1.005 rounds to 1.0078125.
TEST(GradientsTest, ReducePrecisionRoundsTheAdjointLikeJax) {
  std::unique_ptr<ir::Module> module = Parse(R"(
HloModule rounded
%add (lhs: f32[], rhs: f32[]) -> f32[] {
  %lhs = f32[] parameter(0)
  %rhs = f32[] parameter(1)
  ROOT %sum = f32[] add(%lhs, %rhs)
}
ENTRY %main (x: f32[5]) -> f32[] {
  %x = f32[5] parameter(0)
  %r = f32[5] reduce-precision(%x), exponent_bits=8, mantissa_bits=7
  %m = f32[5] multiply(%r, %x)
  %zero = f32[] constant(0)
  ROOT %loss = f32[] reduce(%m, %zero), dimensions={0}, to_apply=%add
}
)");
  ASSERT_NE(module, nullptr);
  absl::StatusOr<std::unique_ptr<ir::Module>> gradients = Gradients(*module, std::nullopt, {0});
  ASSERT_TRUE(gradients.ok()) << gradients.status();
  EXPECT_EQ(Count(**gradients, ir::Opcode::kReducePrecision), 2) << ir::PrintModule(**gradients);
  const std::vector<double> x = {1.00390625, 1.01171875, 3.0, -1.5, 1.005};
  const std::vector<double> expected = {2.0, 2.03125, 6.0, -3.0, 2.015625};
  ir::Literal argument(ir::Shape(ir::DType::kF32, {5}));
  for (int64_t i = 0; i < 5; ++i) argument.SetFromDouble(i, x[i]);
  absl::StatusOr<std::vector<ir::Literal>> results =
      testing::EvaluateGradients(**gradients, {argument});
  ASSERT_TRUE(results.ok()) << results.status();
  for (int64_t i = 0; i < 5; ++i) {
    EXPECT_EQ((*results)[1].GetAsDouble(i), expected[i]) << "element " << i;
  }
}

TEST(GradientsTest, AnOpWithoutARuleIsAnErrorNamingIt) {
  // An all-reduce that multiplies: its sum, max and min forms have rules
  // (gradient_rules_collectives).
  std::unique_ptr<ir::Module> module = Parse(WithAdd("collective", R"(
%mul (a: f64[], b: f64[]) -> f64[] {
  %a = f64[] parameter(0)
  %b = f64[] parameter(1)
  ROOT %m = f64[] multiply(%a, %b)
}

ENTRY %main (x: f64[4]) -> f64[] {
  %x = f64[4] parameter(0)
  %summed = f64[4] all-reduce(%x), replica_groups={}, to_apply=%mul
  %zero = f64[] constant(0)
  ROOT %loss = f64[] reduce(%summed, %zero), dimensions={0}, to_apply=%add
}
)"));
  ASSERT_NE(module, nullptr);
  absl::Status status = Gradients(*module, std::nullopt, {0}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("all-reduce with multiply has no gradient rule"),
            std::string::npos)
      << status;
  EXPECT_NE(status.message().find("%summed"), std::string::npos) << status;

  std::unique_ptr<ir::Module> product = Parse(R"(
HloModule product
%mul (lhs: f64[], rhs: f64[]) -> f64[] {
  %lhs = f64[] parameter(0)
  %rhs = f64[] parameter(1)
  ROOT %p = f64[] multiply(%lhs, %rhs)
}
ENTRY %main (x: f64[4]) -> f64[] {
  %x = f64[4] parameter(0)
  %one = f64[] constant(1)
  ROOT %loss = f64[] reduce(%x, %one), dimensions={0}, to_apply=%mul
}
)");
  status = Gradients(*product, std::nullopt, {0}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("reduce with multiply"), std::string::npos) << status;
}

}  // namespace
}  // namespace vkspmd::autodiff
