// Collectives inside while and conditional on the CPU reference: a per-device program's loop
// whose body all-reduces, and a branch that all-reduces, run on every device in lock step and
// give the values worked out by hand; devices that would take different paths are an error
// naming the instruction (on devices such a collective would never complete).
#include "gtest/gtest.h"
#include "src/interp/evaluator.h"
#include "tests/support/control_flow_programs.h"

namespace vkspmd::interp {
namespace {

using ir::DType;
using ir::Literal;

Literal Vector(std::vector<float> values) {
  const auto size = static_cast<int64_t>(values.size());
  return Literal::Create(DType::kF32, {size}, std::move(values));
}

TEST(ControlFlowCollectivesTest, ALoopWhoseBodyAllReducesRunsInLockStep) {
  std::unique_ptr<ir::Module> loop =
      testing::ParseVerified(testing::ControlFlowProgramText("all_reduce_loop"));
  ASSERT_NE(loop, nullptr);
  // Three times v = all-reduce(v) * {0.5, -1, 2, 0.25}: x0 + x1 = {1.25, 2, -0.5, 5} becomes
  // {0.625, -2, -1, 1.25}, then {0.625, 4, -4, 0.625}, then {0.625, -8, -16, 0.3125}.
  absl::StatusOr<std::vector<Literal>> results =
      EvaluateOnDevices(*loop, {{Vector({1, -2, 0.5f, 3})}, {Vector({0.25f, 4, -1, 2})}});
  ASSERT_TRUE(results.ok()) << results.status();
  for (const Literal& result : *results) EXPECT_EQ(result, Vector({0.625f, -8, -16, 0.3125f}));
  // One device alone cannot run it.
  absl::StatusOr<Literal> alone = EvaluateComputation(*loop->entry(), {Vector({1, -2, 0.5f, 3})});
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.status().message().find("needs every device"), std::string::npos)
      << alone.status();
}

constexpr char kBranchAllReduce[] = R"(HloModule branch_all_reduce, num_partitions=2
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%reduced (r: f32[2]) -> f32[2] {
  %r = f32[2] parameter(0)
  ROOT %sum = f32[2] all-reduce(%r), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add
}
%kept (k: f32[2]) -> f32[2] {
  %k = f32[2] parameter(0)
  ROOT %same = f32[2] copy(%k)
}
ENTRY %main (p: pred[], x: f32[2]) -> f32[2] {
  %p = pred[] parameter(0)
  %x = f32[2] parameter(1)
  ROOT %c = f32[2] conditional(%p, %x, %x), true_computation=%reduced, false_computation=%kept
}
)";

// Device d runs d + 1 iterations of a body that all-reduces: they disagree on the second test.
constexpr char kDivergingLoop[] = R"(HloModule diverging_loop, num_partitions=2
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%cond (s: (s32[], f32[2])) -> pred[] {
  %s = (s32[], f32[2]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %id = u32[] partition-id()
  %signed = s32[] convert(%id)
  %one = s32[] constant(1)
  %limit = s32[] add(%signed, %one)
  ROOT %lt = pred[] compare(%i, %limit), direction=LT
}
%body (t: (s32[], f32[2])) -> (s32[], f32[2]) {
  %t = (s32[], f32[2]) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %v = f32[2] get-tuple-element(%t), index=1
  %r = f32[2] all-reduce(%v), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add
  ROOT %o = (s32[], f32[2]) tuple(%i1, %r)
}
ENTRY %main (x: f32[2]) -> f32[2] {
  %x = f32[2] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[2]) tuple(%zero, %x)
  %loop = (s32[], f32[2]) while(%init), condition=%cond, body=%body
  ROOT %y = f32[2] get-tuple-element(%loop), index=1
}
)";

TEST(ControlFlowCollectivesTest, ABranchThatAllReducesRunsWhereEveryDeviceTakesIt) {
  std::unique_ptr<ir::Module> module = testing::ParseVerified(kBranchAllReduce);
  ASSERT_NE(module, nullptr);
  const Literal yes = testing::IntegerScalar(DType::kPred, 1);
  const Literal no = testing::IntegerScalar(DType::kPred, 0);
  absl::StatusOr<std::vector<Literal>> taken =
      EvaluateOnDevices(*module, {{yes, Vector({1, 2})}, {yes, Vector({10, -4})}});
  ASSERT_TRUE(taken.ok()) << taken.status();
  for (const Literal& result : *taken) EXPECT_EQ(result, Vector({11, -2}));
  absl::StatusOr<std::vector<Literal>> skipped =
      EvaluateOnDevices(*module, {{no, Vector({1, 2})}, {no, Vector({10, -4})}});
  ASSERT_TRUE(skipped.ok()) << skipped.status();
  EXPECT_EQ((*skipped)[0], Vector({1, 2}));
  EXPECT_EQ((*skipped)[1], Vector({10, -4}));
  absl::StatusOr<std::vector<Literal>> split =
      EvaluateOnDevices(*module, {{yes, Vector({1, 2})}, {no, Vector({10, -4})}});
  ASSERT_FALSE(split.ok());
  EXPECT_NE(split.status().message().find("%c: devices 0 and 1 disagree on its branch"),
            std::string::npos)
      << split.status();
}

TEST(ControlFlowCollectivesTest, DevicesThatWouldLeaveALoopAtDifferentTimesAreAnError) {
  std::unique_ptr<ir::Module> module = testing::ParseVerified(kDivergingLoop);
  ASSERT_NE(module, nullptr);
  absl::StatusOr<std::vector<Literal>> results =
      EvaluateOnDevices(*module, {{Vector({1, 2})}, {Vector({3, 4})}});
  ASSERT_FALSE(results.ok());
  EXPECT_NE(results.status().message().find("%loop: devices 0 and 1 disagree on its condition"),
            std::string::npos)
      << results.status();
}

}  // namespace
}  // namespace vkspmd::interp
