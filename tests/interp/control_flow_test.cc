// while and conditional (tests/testdata/control_flow, written as JAX dumps them): parse, verify,
// print to text that reads back the same, and evaluate on the CPU reference against results
// computed here by plain loops (the lax.scan recurrence, Collatz step counts) and by hand.
#include "gtest/gtest.h"
#include "src/interp/evaluator.h"
#include "src/ir/parser.h"
#include "src/ir/printer.h"
#include "tests/support/control_flow_programs.h"

namespace vkspmd::interp {
namespace {

using ir::DType;
using ir::Literal;

std::string ReadProgram(const std::string& name) { return testing::ControlFlowProgramText(name); }

std::unique_ptr<ir::Module> Parse(const std::string& text) { return testing::ParseVerified(text); }

Literal Scalar(DType type, int64_t value) { return testing::IntegerScalar(type, value); }

TEST(ControlFlowTest, ProgramsPrintToTextThatReadsBackTheSame) {
  for (const char* name : {"scan", "cond", "switch", "while_loop"}) {
    std::unique_ptr<ir::Module> module = Parse(ReadProgram(name));
    ASSERT_NE(module, nullptr) << name;
    const std::string printed = ir::PrintModule(*module);
    std::unique_ptr<ir::Module> reread = Parse(printed);
    ASSERT_NE(reread, nullptr) << name;
    EXPECT_EQ(ir::PrintModule(*reread), printed) << name;
  }
  EXPECT_NE(ir::PrintModule(*Parse(ReadProgram("cond")))
                .find("true_computation=%region_1.10, "
                      "false_computation=%region_0.4"),
            std::string::npos);
}

TEST(ControlFlowTest, ScanLoopMatchesThePlainRecurrence) {
  std::unique_ptr<ir::Module> module = Parse(ReadProgram("scan"));
  ASSERT_NE(module, nullptr);
  std::vector<float> carry(8), xs(40);
  for (int i = 0; i < 8; ++i) carry[i] = 0.25f * i - 1.0f;
  for (int i = 0; i < 40; ++i) xs[i] = static_cast<float>((i * 7) % 11) - 5.0f;
  absl::StatusOr<Literal> result = Evaluate(*module, {Literal::Create(DType::kF32, {8}, carry),
                                                      Literal::Create(DType::kF32, {5, 8}, xs)});
  ASSERT_TRUE(result.ok()) << result.status();
  // The oracle: c = c * 0.5 + xs[t]; ys[t] = c for t = 0..4.
  std::vector<float> ys(40);
  for (int t = 0; t < 5; ++t) {
    for (int i = 0; i < 8; ++i) {
      carry[i] = carry[i] * 0.5f + xs[t * 8 + i];
      ys[t * 8 + i] = carry[i];
    }
  }
  EXPECT_EQ(result->tuple_elements()[0], Literal::Create(DType::kF32, {8}, carry));
  EXPECT_EQ(result->tuple_elements()[1], Literal::Create(DType::kF32, {5, 8}, ys));
}

TEST(ControlFlowTest, WhileRunsUntilTheConditionIsFalse) {
  std::unique_ptr<ir::Module> module = Parse(ReadProgram("while_loop"));
  ASSERT_NE(module, nullptr);
  // Collatz step counts (OEIS A006577): 1 -> 0 steps (the body never runs), 6 -> 8, 27 -> 111.
  for (const auto& [start, steps] : {std::pair{1, 0}, {6, 8}, {7, 16}, {27, 111}}) {
    absl::StatusOr<Literal> result = Evaluate(*module, {Scalar(DType::kS32, start)});
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->tuple_elements()[0].GetAsInt64(0), steps) << start;
    EXPECT_EQ(result->tuple_elements()[1].GetAsInt64(0), 1) << start;
  }
}

TEST(ControlFlowTest, PredConditionalRunsTrueOrFalseComputation) {
  std::unique_ptr<ir::Module> module = Parse(ReadProgram("cond"));
  ASSERT_NE(module, nullptr);
  const Literal x = Literal::Create(DType::kF32, {7}, std::vector<float>{1, 2, 3, 4, 5, 6, 7.5});
  const Literal n = Literal::Create(DType::kS32, {7}, std::vector<int32_t>{3, -1, 0, 2, 5, 1, 2});
  absl::StatusOr<Literal> taken = Evaluate(*module, {Scalar(DType::kPred, 1), x, n});
  ASSERT_TRUE(taken.ok()) << taken.status();
  EXPECT_EQ(*taken, Literal::Create(DType::kF32, {7}, std::vector<float>{3, -2, 0, 8, 25, 6, 15}));
  absl::StatusOr<Literal> not_taken = Evaluate(*module, {Scalar(DType::kPred, 0), x, n});
  ASSERT_TRUE(not_taken.ok()) << not_taken.status();
  EXPECT_EQ(*not_taken,
            Literal::Create(DType::kF32, {7}, std::vector<float>{-2, 3, 3, 2, 0, 5, 5.5}));
}

TEST(ControlFlowTest, IndexedConditionalClampsOutOfRangeIndicesToTheLastBranch) {
  std::unique_ptr<ir::Module> module = Parse(ReadProgram("switch"));
  ASSERT_NE(module, nullptr);
  const Literal x = Literal::Create(DType::kS32, {5}, std::vector<int32_t>{-3, 0, 2, 7, -11});
  const Literal negated = Literal::Create(DType::kS32, {5}, std::vector<int32_t>{3, 0, -2, -7, 11});
  const Literal squared = Literal::Create(DType::kS32, {5}, std::vector<int32_t>{9, 0, 4, 49, 121});
  const Literal plus_100 =
      Literal::Create(DType::kS32, {5}, std::vector<int32_t>{97, 100, 102, 107, 89});
  for (const auto& [index, expected] :
       std::vector<std::pair<int64_t, const Literal*>>{{0, &negated},
                                                       {1, &squared},
                                                       {2, &plus_100},
                                                       {3, &plus_100},
                                                       {-1, &plus_100},
                                                       {1 << 30, &plus_100}}) {
    absl::StatusOr<Literal> result = Evaluate(*module, {Scalar(DType::kS32, index), x});
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(*result, *expected) << "index " << index;
  }
}

// A module around one while/conditional line with the given callees.
std::string Module(const std::string& callees, const std::string& entry) {
  return "HloModule m\n" + callees +
         "\nENTRY %main (p: s32[]) -> s32[] {\n  %p = s32[] parameter(0)\n" + entry + "\n}\n";
}

constexpr char kCallees[] = R"(
%cond (a: s32[]) -> pred[] {
  %a = s32[] parameter(0)
  %ten = s32[] constant(10)
  ROOT %lt = pred[] compare(%a, %ten), direction=LT
}
%inc (b: s32[]) -> s32[] {
  %b = s32[] parameter(0)
  %one = s32[] constant(1)
  ROOT %sum = s32[] add(%b, %one)
}
%wide (c: s32[]) -> f32[] {
  %c = s32[] parameter(0)
  ROOT %f = f32[] convert(%c)
}
)";

void ExpectError(const std::string& entry, const std::string& message) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      ir::ParseAndVerifyModule(Module(kCallees, entry));
  ASSERT_FALSE(module.ok()) << entry;
  EXPECT_NE(module.status().message().find(message), std::string::npos) << module.status();
}

TEST(ControlFlowTest, MalformedWhileAndConditionalAreErrorsNamingTheCallee) {
  ExpectError("  ROOT %w = s32[] while(%p), condition=%inc, body=%inc",
              "condition=%inc must return pred[], not s32[]");
  ExpectError("  ROOT %w = s32[] while(%p), condition=%cond, body=%wide",
              "body=%wide must return the state s32[], not f32[]");
  ExpectError("  ROOT %w = s32[] while(%p), condition=%cond", "%w: needs body=");
  ExpectError("  ROOT %w = s32[] while(%p), condition=%cond, body=%nowhere",
              "unknown computation %nowhere");
  ExpectError("  ROOT %w = s32[] while(%p), condition=%cond, body=%inc, condition=%cond",
              "condition= given twice");
  ExpectError("  ROOT %w = s32[] while(%p), condition=%cond, body=%inc, true_computation=%inc",
              "attribute true_computation does not apply to while");
  ExpectError(
      "  %t = pred[] constant(true)\n  ROOT %c = s32[] conditional(%t, %p, %p, %p), "
      "branch_computations={%inc, %inc, %inc}",
      "a pred[] conditional has 2 branches, not 3");
  ExpectError("  ROOT %c = s32[] conditional(%p, %p, %p), branch_computations={%inc, %wide}",
              "branch_computations[1]=%wide returns f32[] but the first branch returns s32[]");
  ExpectError("  ROOT %c = s32[] conditional(%p, %p), branch_computations={%inc, %inc}",
              "conditional with 2 branches takes 3 operands, got 2");
  ExpectError(
      "  %f = f32[] convert(%p)\n  ROOT %c = s32[] conditional(%f, %p), "
      "branch_computations={%inc}",
      "selector must be pred[] or s32[], not f32[]");
}

TEST(ControlFlowTest, LoopCounterFromParameter) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(
      Module(kCallees, "  ROOT %w = s32[] while(%p), condition=%cond, body=%inc"));
  ASSERT_TRUE(module.ok()) << module.status();
  for (const auto& [start, end] : {std::pair{0, 10}, {-5, 10}, {10, 10}, {42, 42}}) {
    absl::StatusOr<Literal> result = Evaluate(**module, {Scalar(DType::kS32, start)});
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->GetAsInt64(0), end) << start;
  }
}

}  // namespace
}  // namespace vkspmd::interp
