// Lowering while and conditional for the devices (ir/control_flow_lowering.h): trip counts from
// backend_config and from counters (against the CPU reference running the real loop), the
// lowered module against the original on the CPU reference (every branch index, nested loops and
// branches), the loop state's shardings on every iteration, and the errors.
#include "src/ir/control_flow_lowering.h"

#include "absl/strings/str_replace.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "src/interp/evaluator.h"
#include "src/ir/loop_split.h"
#include "src/ir/parser.h"
#include "src/ir/printer.h"
#include "src/ir/trip_count.h"
#include "src/ir/verifier.h"
#include "tests/support/control_flow_programs.h"

namespace vkspmd::ir {
namespace {

using testing::IntegerScalar;
using testing::ParseVerified;

std::string ReadProgram(const std::string& name) { return testing::ControlFlowProgramText(name); }

std::unique_ptr<Module> Parse(const std::string& text) { return ParseVerified(text); }

const Instruction* Find(const Module& module, Opcode opcode) {
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      if (instruction->opcode() == opcode) return instruction.get();
    }
  }
  return nullptr;
}

// Lowers `module`, checks the result verifies and has no control flow left, and that it
// evaluates to what the original does for `arguments`.
void ExpectLoweredEqualsOriginal(const Module& module, const std::vector<Literal>& arguments) {
  absl::StatusOr<std::unique_ptr<Module>> lowered = LowerControlFlow(module);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  ASSERT_TRUE(VerifyModule(**lowered).ok()) << PrintModule(**lowered);
  for (Opcode opcode : {Opcode::kWhile, Opcode::kConditional}) {
    EXPECT_EQ(Find(**lowered, opcode), nullptr) << PrintModule(**lowered);
  }
  for (const auto& instruction : (*lowered)->entry()->instructions()) {
    EXPECT_FALSE((instruction->opcode() == Opcode::kTuple &&
                  instruction.get() != (*lowered)->entry()->root()) ||
                 instruction->opcode() == Opcode::kGetTupleElement)
        << instruction->name() << ": the device compiler holds no tuple but the root's";
  }
  // Printed names are unique: the text reads back.
  EXPECT_NE(Parse(PrintModule(**lowered)), nullptr);
  absl::StatusOr<Literal> expected = interp::Evaluate(module, arguments);
  absl::StatusOr<Literal> actual = interp::Evaluate(**lowered, arguments);
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_TRUE(actual.ok()) << actual.status();
  EXPECT_EQ(*actual, *expected);
}

TEST(ControlFlowLoweringTest, ScanUnrollsFromBackendConfigOrFromItsCounter) {
  const std::string text = ReadProgram("scan");
  std::unique_ptr<Module> module = Parse(text);
  ASSERT_NE(module, nullptr);
  const Instruction* loop = Find(*module, Opcode::kWhile);
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->attributes().known_trip_count, 5);
  EXPECT_EQ(CountedLoopTripCount(*loop->attributes().called[0], *loop->attributes().called[1],
                                 *loop->operand(0)),
            5);
  EXPECT_NE(PrintModule(*module).find("backend_config={\"known_trip_count\":{\"n\":\"5\"}}"),
            std::string::npos);
  std::vector<float> carry(8), xs(40);
  for (int i = 0; i < 8; ++i) carry[i] = 0.25f * i - 1.0f;
  for (int i = 0; i < 40; ++i) xs[i] = static_cast<float>((i * 7) % 11) - 5.0f;
  const std::vector<Literal> arguments = {Literal::Create(DType::kF32, {8}, carry),
                                          Literal::Create(DType::kF32, {5, 8}, xs)};
  ExpectLoweredEqualsOriginal(*module, arguments);
  // Without backend_config the counter proves the same count.
  std::unique_ptr<Module> bare = Parse(
      absl::StrReplaceAll(text, {{", backend_config={\"known_trip_count\":{\"n\":\"5\"}}", ""}}));
  ASSERT_NE(bare, nullptr);
  EXPECT_FALSE(Find(*bare, Opcode::kWhile)->attributes().known_trip_count.has_value());
  ExpectLoweredEqualsOriginal(*bare, arguments);
  // What compiled dumps write: more keys, and the initial counter copied.
  std::unique_ptr<Module> compiled = Parse(absl::StrReplaceAll(
      text, {{"{\"known_trip_count\":{\"n\":\"5\"}}",
              "{\"known_trip_count\":{\"n\":\"5\"},\"known_init_step\":{\"init\":\"0\","
              "\"step\":\"1\"},\"known_induction_variable\":{\"tuple_index\":\"0\"}}"},
             {"%constant.7 = s32[] constant(0)",
              "%constant.7.0 = s32[] constant(0)\n  %constant.7 = s32[] copy(%constant.7.0)"}}));
  ASSERT_NE(compiled, nullptr);
  const Instruction* compiled_loop = Find(*compiled, Opcode::kWhile);
  EXPECT_EQ(compiled_loop->attributes().known_trip_count, 5);
  EXPECT_EQ(
      CountedLoopTripCount(*compiled_loop->attributes().called[0],
                           *compiled_loop->attributes().called[1], *compiled_loop->operand(0)),
      5);
  // The quoted form older dumps write.
  std::unique_ptr<Module> quoted = Parse(absl::StrReplaceAll(
      text, {{"backend_config={\"known_trip_count\":{\"n\":\"5\"}}",
              "backend_config=\"{\\\"known_trip_count\\\":{\\\"n\\\":\\\"5\\\"}}\""}}));
  ASSERT_NE(quoted, nullptr);
  EXPECT_EQ(Find(*quoted, Opcode::kWhile)->attributes().known_trip_count, 5);
}

// while(counter, iterations) with `condition` on the counter and counter += step; the second
// element counts the iterations the CPU reference runs.
std::string CountedLoop(const std::string& type, int64_t start, const std::string& condition,
                        int64_t step) {
  return fmt::format(R"(HloModule counted
%cond (s: ({0}[], s32[])) -> pred[] {{
  %s = ({0}[], s32[]) parameter(0)
  %i = {0}[] get-tuple-element(%s), index=0
  {1}
}}
%body (t: ({0}[], s32[])) -> ({0}[], s32[]) {{
  %t = ({0}[], s32[]) parameter(0)
  %j = {0}[] get-tuple-element(%t), index=0
  %step = {0}[] constant({2})
  %next = {0}[] add(%step, %j)
  %n = s32[] get-tuple-element(%t), index=1
  %one = s32[] constant(1)
  %more = s32[] add(%n, %one)
  ROOT %state = ({0}[], s32[]) tuple(%next, %more)
}}
ENTRY %main () -> ({0}[], s32[]) {{
  %start = {0}[] constant({3})
  %zero = s32[] constant(0)
  %init = ({0}[], s32[]) tuple(%start, %zero)
  ROOT %loop = ({0}[], s32[]) while(%init), condition=%cond, body=%body
}}
)",
                     type, condition, step, start);
}

TEST(ControlFlowLoweringTest, CounterTripCountsEqualTheIterationsTheReferenceRuns) {
  struct Case {
    std::string type;
    int64_t start;
    std::string condition;
    int64_t step;
  };
  const std::vector<Case> cases = {
      {"s32", 0, "%b = s32[] constant(5)\n  ROOT %c = pred[] compare(%i, %b), direction=LT", 1},
      {"s32", 3, "%b = s32[] constant(10)\n  ROOT %c = pred[] compare(%i, %b), direction=LT", 3},
      {"s32", 0, "%b = s32[] constant(5)\n  ROOT %c = pred[] compare(%i, %b), direction=LE", 1},
      {"s32", 2, "%b = s32[] constant(8)\n  ROOT %c = pred[] compare(%i, %b), direction=NE", 2},
      {"s32", -4, "%b = s32[] constant(3)\n  ROOT %c = pred[] compare(%b, %i), direction=GT", 2},
      {"s32", 9, "%b = s32[] constant(3)\n  ROOT %c = pred[] compare(%i, %b), direction=LT", 1},
      {"s64", 4000000000,
       "%b = s64[] constant(4000000007)\n  ROOT %c = pred[] compare(%i, %b), "
       "direction=LT",
       2},
      {"u32", 7, "%b = u32[] constant(12)\n  ROOT %c = pred[] compare(%i, %b), direction=LE", 5},
  };
  for (const Case& c : cases) {
    const std::string text = CountedLoop(c.type, c.start, c.condition, c.step);
    std::unique_ptr<Module> module = Parse(text);
    ASSERT_NE(module, nullptr);
    absl::StatusOr<Literal> run = interp::Evaluate(*module, {});
    ASSERT_TRUE(run.ok()) << run.status();
    const Instruction* loop = Find(*module, Opcode::kWhile);
    EXPECT_EQ(CountedLoopTripCount(*loop->attributes().called[0], *loop->attributes().called[1],
                                   *loop->operand(0)),
              run->tuple_elements()[1].GetAsInt64(0))
        << text;
    ExpectLoweredEqualsOriginal(*module, {});
  }
}

// A fori_loop whose bound is carried in the state: (i, n, acc), i < n, acc += 1; `next_bound`
// is what the body makes of n.
std::string CarriedBoundLoop(const std::string& next_bound) {
  return fmt::format(R"(HloModule carried_bound
%cond (s: (s32[], s32[], s32[])) -> pred[] {{
  %s = (s32[], s32[], s32[]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] get-tuple-element(%s), index=1
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}}
%body (t: (s32[], s32[], s32[])) -> (s32[], s32[], s32[]) {{
  %t = (s32[], s32[], s32[]) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %n = s32[] get-tuple-element(%t), index=1
  %acc = s32[] get-tuple-element(%t), index=2
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %acc1 = s32[] add(%acc, %one)
  {0}
  ROOT %state = (s32[], s32[], s32[]) tuple(%i1, %n1, %acc1)
}}
ENTRY %main () -> (s32[], s32[], s32[]) {{
  %zero = s32[] constant(0)
  %seven = s32[] constant(7)
  %init = (s32[], s32[], s32[]) tuple(%zero, %seven, %zero)
  ROOT %loop = (s32[], s32[], s32[]) while(%init), condition=%cond, body=%body
}}
)",
                     next_bound);
}

TEST(ControlFlowLoweringTest, ABoundCarriedUnchangedInTheStateIsCounted) {
  std::unique_ptr<Module> module = Parse(CarriedBoundLoop("%n1 = s32[] copy(%n)"));
  ASSERT_NE(module, nullptr);
  // The copy is not the state element itself: only a bound passed on as it is counts.
  const Instruction* loop = Find(*module, Opcode::kWhile);
  EXPECT_EQ(CountedLoopTripCount(*loop->attributes().called[0], *loop->attributes().called[1],
                                 *loop->operand(0)),
            std::nullopt);
  std::string passed = CarriedBoundLoop("");
  passed = absl::StrReplaceAll(passed, {{"tuple(%i1, %n1, %acc1)", "tuple(%i1, %n, %acc1)"}});
  module = Parse(passed);
  ASSERT_NE(module, nullptr);
  loop = Find(*module, Opcode::kWhile);
  EXPECT_EQ(CountedLoopTripCount(*loop->attributes().called[0], *loop->attributes().called[1],
                                 *loop->operand(0)),
            7);
  ExpectLoweredEqualsOriginal(*module, {});
  // A bound the body changes (n - 1 each step: 4 iterations, not 7) is not a known bound.
  module = Parse(CarriedBoundLoop("%n1 = s32[] subtract(%n, %one)"));
  ASSERT_NE(module, nullptr);
  loop = Find(*module, Opcode::kWhile);
  EXPECT_EQ(CountedLoopTripCount(*loop->attributes().called[0], *loop->attributes().called[1],
                                 *loop->operand(0)),
            std::nullopt);
}

TEST(ControlFlowLoweringTest, CountersThatWrapOrStepOverTheirBoundAreNotCounted) {
  for (const std::string& text : {
           // 2147483645 + 5 wraps to a negative value, still below the bound.
           CountedLoop("s32", 2147483640,
                       "%b = s32[] constant(2147483647)\n  ROOT %c = pred[] compare(%i, %b), "
                       "direction=LT",
                       5),
           // 3, 5, 7, 9, ... never equals 8.
           CountedLoop("s32", 3,
                       "%b = s32[] constant(8)\n  ROOT %c = pred[] compare(%i, %b), direction=NE",
                       2),
           // Counting towards the bound from above is not a counter this analysis knows.
           CountedLoop("s32", 9,
                       "%b = s32[] constant(3)\n  ROOT %c = pred[] compare(%i, %b), direction=GT",
                       1),
       }) {
    std::unique_ptr<Module> module = Parse(text);
    ASSERT_NE(module, nullptr);
    const Instruction* loop = Find(*module, Opcode::kWhile);
    EXPECT_EQ(CountedLoopTripCount(*loop->attributes().called[0], *loop->attributes().called[1],
                                   *loop->operand(0)),
              std::nullopt)
        << text;
    absl::StatusOr<std::unique_ptr<Module>> lowered = LowerControlFlow(*module);
    EXPECT_EQ(lowered.status().code(), absl::StatusCode::kUnimplemented) << lowered.status();
  }
}

TEST(ControlFlowLoweringTest, ConditionalsSelectTheBranchTheReferenceRuns) {
  std::unique_ptr<Module> cond = Parse(ReadProgram("cond"));
  ASSERT_NE(cond, nullptr);
  const Literal x = Literal::Create(DType::kF32, {7}, std::vector<float>{1, 2, 3, 4, 5, 6, 7.5});
  const Literal n = Literal::Create(DType::kS32, {7}, std::vector<int32_t>{3, -1, 0, 2, 5, 1, 2});
  for (int64_t predicate : {0, 1}) {
    ExpectLoweredEqualsOriginal(*cond, {IntegerScalar(DType::kPred, predicate), x, n});
  }
  std::unique_ptr<Module> index_switch = Parse(ReadProgram("switch"));
  ASSERT_NE(index_switch, nullptr);
  const Literal y = Literal::Create(DType::kS32, {5}, std::vector<int32_t>{-3, 0, 2, 7, -11});
  for (int64_t index : {0, 1, 2, 3, -1, 1 << 30, -(1 << 30)}) {
    SCOPED_TRACE(index);
    ExpectLoweredEqualsOriginal(*index_switch, {IntegerScalar(DType::kS32, index), y});
  }
}

TEST(ControlFlowLoweringTest, NestedLoopsAndBranchesLowerTogether) {
  // nested.hlo: a fori_loop whose body branches on the counter's parity, the branch taking a
  // tuple and one branch running a loop of its own.
  std::unique_ptr<Module> module = Parse(ReadProgram("nested"));
  ASSERT_NE(module, nullptr);
  ExpectLoweredEqualsOriginal(
      *module, {Literal::Create(DType::kF32, {3}, std::vector<float>{0.5f, -1.0f, 1.25f})});
}

TEST(ControlFlowLoweringTest, TheLoopStateShardingGoesOntoEveryIteration) {
  const std::string text = absl::StrReplaceAll(
      ReadProgram("scan"),
      {{"body=%region_0.body,",
        "body=%region_0.body, sharding={{replicated}, {devices=[2]0,1}, {devices=[1,2]0,1}, "
        "{devices=[1,2]0,1}},"}});
  std::unique_ptr<Module> module = Parse(text);
  ASSERT_NE(module, nullptr);
  absl::StatusOr<std::unique_ptr<Module>> lowered = LowerControlFlow(*module);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  int carries = 0, outputs = 0;
  for (const auto& instruction : (*lowered)->entry()->instructions()) {
    const std::string& name = instruction->name();
    if (name.starts_with("add.21")) {
      ++carries;
      EXPECT_EQ(instruction->sharding(), *ParseSharding("{devices=[2]0,1}")) << name;
    }
    if (name.starts_with("dynamic-update-slice.23")) {
      ++outputs;
      EXPECT_EQ(instruction->sharding(), *ParseSharding("{devices=[1,2]0,1}")) << name;
    }
  }
  EXPECT_EQ(carries, 5);
  EXPECT_EQ(outputs, 5);
}

TEST(ControlFlowLoweringTest, LoopsThatCannotBeUnrolledAreErrorsNamingThem) {
  std::unique_ptr<Module> collatz = Parse(ReadProgram("while_loop"));
  ASSERT_NE(collatz, nullptr);
  absl::StatusOr<std::unique_ptr<Module>> unknown = LowerControlFlow(*collatz);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(unknown.status().message().find("while 32:8: %while.26: its trip count is unknown"),
            std::string::npos)
      << unknown.status();

  std::unique_ptr<Module> scan = Parse(ReadProgram("scan"));
  ASSERT_NE(scan, nullptr);
  absl::StatusOr<std::unique_ptr<Module>> too_big =
      LowerControlFlow(*scan, {.max_instructions = 60});
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(too_big.status().message().find("%while.36: unrolling its 5 iterations of "
                                            "%region_0.body (17 instructions) would exceed 60"),
            std::string::npos)
      << too_big.status();

  std::unique_ptr<Module> wrong = Parse(absl::StrReplaceAll(
      ReadProgram("scan"),
      {{"{\"known_trip_count\":{\"n\":\"5\"}}", "{\"known_trip_count\":{\"n\":\"4\"}}"}}));
  ASSERT_NE(wrong, nullptr);
  absl::StatusOr<std::unique_ptr<Module>> disagreeing = LowerControlFlow(*wrong);
  EXPECT_NE(disagreeing.status().message().find(
                "backend_config says the loop runs 4 times, but its counter runs it 5 times"),
            std::string::npos)
      << disagreeing.status();
}

// Lowers `module` keeping for the host what is too long to unroll within `max_instructions`;
// checks it verifies and evaluates to what the original does for `arguments`.
std::unique_ptr<Module> LowerKeepingLoops(const Module& module, int64_t max_instructions,
                                          const std::vector<Literal>& arguments) {
  absl::StatusOr<std::unique_ptr<Module>> lowered =
      LowerControlFlow(module, {.max_instructions = max_instructions, .keep_unknown_loops = true});
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  if (!lowered.ok()) return nullptr;
  EXPECT_TRUE(VerifyModule(**lowered).ok()) << PrintModule(**lowered);
  EXPECT_NE(Parse(PrintModule(**lowered)), nullptr);
  absl::StatusOr<Literal> expected = interp::Evaluate(module, arguments);
  absl::StatusOr<Literal> actual = interp::Evaluate(**lowered, arguments);
  EXPECT_TRUE(expected.ok()) << expected.status();
  EXPECT_TRUE(actual.ok()) << actual.status();
  if (expected.ok() && actual.ok()) {
    EXPECT_EQ(*actual, *expected) << PrintModule(**lowered);
  }
  return std::move(*lowered);
}

int64_t CountInEntry(const Module& module, Opcode opcode) {
  int64_t count = 0;
  for (const auto& instruction : module.entry()->instructions()) {
    count += instruction->opcode() == opcode ? 1 : 0;
  }
  return count;
}

TEST(ControlFlowLoweringTest, LoopsTooLongToUnrollStayLoopsForTheHost) {
  // scan.hlo: 5 iterations of a 17-instruction body, 85 > 60. With keep_unknown_loops the loop
  // stays a while (backend_config and all) over its body, as one of unknown trip count does.
  std::unique_ptr<Module> scan = Parse(ReadProgram("scan"));
  ASSERT_NE(scan, nullptr);
  std::vector<float> carry(8), xs(40);
  for (int i = 0; i < 8; ++i) carry[i] = 0.25f * i - 1.0f;
  for (int i = 0; i < 40; ++i) xs[i] = static_cast<float>((i * 7) % 11) - 5.0f;
  const std::vector<Literal> scan_arguments = {Literal::Create(DType::kF32, {8}, carry),
                                               Literal::Create(DType::kF32, {5, 8}, xs)};
  std::unique_ptr<Module> kept = LowerKeepingLoops(*scan, 60, scan_arguments);
  ASSERT_NE(kept, nullptr);
  const Instruction* loop = FirstHostControlFlow(*kept);
  ASSERT_NE(loop, nullptr) << PrintModule(*kept);
  EXPECT_EQ(loop->opcode(), Opcode::kWhile);
  EXPECT_EQ(loop->attributes().known_trip_count, 5);
  EXPECT_EQ(CountInEntry(*kept, Opcode::kWhile), 1);
  // Where it fits, it is still unrolled.
  std::unique_ptr<Module> unrolled = LowerKeepingLoops(*scan, 100'000, scan_arguments);
  ASSERT_NE(unrolled, nullptr);
  EXPECT_EQ(Find(*unrolled, Opcode::kWhile), nullptr) << PrintModule(*unrolled);

  // nested.hlo (4 counted iterations of an 11-instruction body whose conditional runs a counted
  // loop of 3 in one branch) over every budget from 1 to 400: the outer loop kept before
  // unrolling (4 x 11 > budget), kept when the iterations it unrolled outgrow the budget, or a
  // conditional kept when the loop in its branch is too long (if-conversion cannot keep a loop);
  // always what the original computes, and all unrolled where it fits.
  std::unique_ptr<Module> nested = Parse(ReadProgram("nested"));
  ASSERT_NE(nested, nullptr);
  const std::vector<Literal> nested_arguments = {
      Literal::Create(DType::kF32, {3}, std::vector<float>{0.5f, -1.0f, 1.25f})};
  bool kept_before = false, kept_midway = false, kept_conditional = false;
  int64_t smallest_unrolled = 0;
  for (int64_t budget = 400; budget >= 1; --budget) {
    SCOPED_TRACE(budget);
    std::unique_ptr<Module> lowered = LowerKeepingLoops(*nested, budget, nested_arguments);
    ASSERT_NE(lowered, nullptr);
    const bool outer_kept = CountInEntry(*lowered, Opcode::kWhile) == 1;
    const bool has_control_flow = Find(*lowered, Opcode::kWhile) != nullptr ||
                                  Find(*lowered, Opcode::kConditional) != nullptr;
    if (!has_control_flow && smallest_unrolled == budget + 1) smallest_unrolled = budget;
    if (budget == 400) {
      EXPECT_FALSE(has_control_flow) << PrintModule(*lowered);
      smallest_unrolled = budget;
    }
    if (budget < 44) {
      EXPECT_TRUE(outer_kept) << PrintModule(*lowered);
      kept_before = true;
    } else if (outer_kept) {
      kept_midway = true;
    }
    if (!outer_kept && CountInEntry(*lowered, Opcode::kConditional) > 0) kept_conditional = true;
  }
  EXPECT_TRUE(kept_before);
  EXPECT_TRUE(kept_midway);
  EXPECT_TRUE(kept_conditional);
  EXPECT_GT(smallest_unrolled, 44);
  EXPECT_LT(smallest_unrolled, 400);

  // Without keep_unknown_loops (the device compiler and the partitioner alone) it is the error
  // naming the loop, pointing at the host loop.
  absl::StatusOr<std::unique_ptr<Module>> too_big =
      LowerControlFlow(*nested, {.max_instructions = 30});
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(too_big.status().message().find("%loop: unrolling its 4 iterations of %body (11 "
                                            "instructions) would exceed 30 instructions in all; "
                                            "exec::LoopProgram (`vkspmd run`) drives"),
            std::string::npos)
      << too_big.status();
}

TEST(ControlFlowLoweringTest, MalformedKnownTripCountsAreParseErrors) {
  const std::string text = ReadProgram("scan");
  for (const auto& [config, message] : std::vector<std::pair<std::string, std::string>>{
           {"{\"known_trip_count\":{\"n\":\"-1\"}}", "n must be an integer >= 0, not '-1'"},
           {"{\"known_trip_count\":{\"n\":\"five\"}}", "not 'five'"},
           {"{\"known_trip_count\":5}", "known_trip_count must be {\"n\":\"K\"}"},
           {"{\"known_trip_count\":{\"n\":\"5\"}", "expected '}'"},
       }) {
    absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(
        absl::StrReplaceAll(text, {{"{\"known_trip_count\":{\"n\":\"5\"}}", config}}));
    ASSERT_FALSE(module.ok()) << config;
    EXPECT_NE(module.status().message().find(message), std::string::npos) << module.status();
  }
}

}  // namespace
}  // namespace vkspmd::ir
