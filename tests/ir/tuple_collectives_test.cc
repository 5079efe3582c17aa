// Collectives over several operands, as XLA's combiners print them (all-reduce(a, b) returning a
// tuple, and all-gather, reduce-scatter, collective-permute, all-to-all likewise, synchronous
// and async), read as one collective per operand: evaluated over four emulated devices against
// values written out by hand, and the errors for what XLA does not allow.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/interp/evaluator.h"
#include "src/ir/parser.h"
#include "src/ir/printer.h"

namespace vkspmd::ir {
namespace {

constexpr std::string_view kAdd = R"(HloModule m, num_partitions=4

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}
)";

std::vector<float> Values(const Literal& literal) {
  std::vector<float> values;
  for (int64_t i = 0; i < literal.ElementCount(); ++i) values.push_back(literal.Get<float>(i));
  return values;
}

// Device d's a = [d+1, 10(d+1)] and b = [100d, 100d+1, 100d+2].
std::vector<std::vector<Literal>> Arguments() {
  std::vector<std::vector<Literal>> arguments;
  for (int d = 0; d < 4; ++d) {
    const float a = static_cast<float>(d + 1);
    const float b = static_cast<float>(100 * d);
    arguments.push_back({Literal::Create<float>(DType::kF32, {2}, {a, 10 * a}),
                         Literal::Create<float>(DType::kF32, {3}, {b, b + 1, b + 2})});
  }
  return arguments;
}

TEST(TupleCollectivesTest, EachOperandIsCombinedOnItsOwn) {
  const std::string text = std::string(kAdd) + R"(
ENTRY %e (a: f32[2], b: f32[3]) -> (f32[2], f32[3], f32[4], f32[6], f32[1], f32[2], f32[2], f32[3], f32[2], f32[2], f32[2], f32[3]) {
  %a = f32[2]{0} parameter(0)
  %b = f32[3]{0} parameter(1)
  %ar = (f32[2]{0}, f32[3]{0}) all-reduce(f32[2]{0} %a, f32[3]{0} %b), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%add
  %ar.a = f32[2]{0} get-tuple-element((f32[2]{0}, f32[3]{0}) %ar), index=0
  %ar.b = f32[3]{0} get-tuple-element((f32[2]{0}, f32[3]{0}) %ar), index=1
  %ag = (f32[4]{0}, f32[6]{0}) all-gather(f32[2]{0} %a, f32[3]{0} %b), channel_id=2, replica_groups={{0,2},{1,3}}, dimensions={0}, use_global_device_ids=true
  %ag.a = f32[4]{0} get-tuple-element(%ag), index=0
  %ag.b = f32[6]{0} get-tuple-element(%ag), index=1
  %aa = f32[4]{0} concatenate(f32[2]{0} %a, f32[2]{0} %a), dimensions={0}
  %rs = (f32[1]{0}, f32[2]{0}) reduce-scatter(f32[2]{0} %a, f32[4]{0} %aa), channel_id=3, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, dimensions={0}, to_apply=%add
  %rs.a = f32[1]{0} get-tuple-element(%rs), index=0
  %rs.aa = f32[2]{0} get-tuple-element(%rs), index=1
  %cp = (f32[2]{0}, f32[3]{0}) collective-permute(f32[2]{0} %a, f32[3]{0} %b), channel_id=4, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  %cp.a = f32[2]{0} get-tuple-element(%cp), index=0
  %cp.b = f32[3]{0} get-tuple-element(%cp), index=1
  %n = f32[2]{0} negate(f32[2]{0} %a)
  %a2a = (f32[2]{0}, f32[2]{0}) all-to-all(f32[2]{0} %a, f32[2]{0} %n), channel_id=5, replica_groups={{0,1},{2,3}}
  %a2a.0 = f32[2]{0} get-tuple-element(%a2a), index=0
  %a2a.1 = f32[2]{0} get-tuple-element(%a2a), index=1
  %ars = (f32[2]{0}, f32[3]{0}) all-reduce-start(f32[2]{0} %a, f32[3]{0} %b), channel_id=6, replica_groups={{0,3},{1,2}}, use_global_device_ids=true, to_apply=%add
  %ard = (f32[2]{0}, f32[3]{0}) all-reduce-done((f32[2]{0}, f32[3]{0}) %ars)
  %ard.a = f32[2]{0} get-tuple-element(%ard), index=0
  %ard.b = f32[3]{0} get-tuple-element(%ard), index=1
  ROOT %r = (f32[2]{0}, f32[3]{0}, f32[4]{0}, f32[6]{0}, f32[1]{0}, f32[2]{0}, f32[2]{0}, f32[3]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[3]{0}) tuple(%ar.a, %ar.b, %ag.a, %ag.b, %rs.a, %rs.aa, %cp.a, %cp.b, %a2a.0, %a2a.1, %ard.a, %ard.b)
}
)";
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  // Every collective left has one operand and an array result.
  int collectives = 0;
  for (const auto& instruction : (*module)->entry()->instructions()) {
    if (!IsCollective(instruction->opcode())) continue;
    ++collectives;
    EXPECT_EQ(instruction->operand_count(), 1) << instruction->name();
    EXPECT_FALSE(instruction->shape().IsTuple()) << instruction->name();
  }
  EXPECT_EQ(collectives, 2 + 2 + 2 + 2 + 1 + 2);
  absl::StatusOr<std::unique_ptr<Module>> reread = ParseAndVerifyModule(PrintModule(**module));
  ASSERT_TRUE(reread.ok()) << reread.status();
  absl::StatusOr<std::vector<Literal>> results = interp::EvaluateOnDevices(**reread, Arguments());
  ASSERT_TRUE(results.ok()) << results.status();
  // Device 1 (a = [2, 20], b = [100, 101, 102]): groups {0,1} (all-reduce, reduce-scatter,
  // all-to-all, position 1), {1,3} (all-gather), {1,2} (async all-reduce); device 0 sends it
  // its a = [1, 10], b = [0, 1, 2].
  const std::vector<Literal>& device1 = (*results)[1].tuple_elements();
  const std::vector<std::vector<float>> expected1 = {{3, 30},                         // a0 + a1
                                                     {100, 102, 104},                 // b0 + b1
                                                     {2, 20, 4, 40},                  // a1, a3
                                                     {100, 101, 102, 300, 301, 302},  // b1, b3
                                                     {30},       // element 1 of a0 + a1
                                                     {3, 30},    // block 1 of [a0 + a1, a0 + a1]
                                                     {1, 10},    // a0
                                                     {0, 1, 2},  // b0
                                                     {-1, -10},  // operand 1 (-a) of member 0
                                                     {-2, -20},  // operand 1 (-a) of member 1
                                                     {5, 50},    // a1 + a2
                                                     {300, 302, 304}};  // b1 + b2
  ASSERT_EQ(device1.size(), expected1.size());
  for (size_t i = 0; i < expected1.size(); ++i) {
    EXPECT_EQ(Values(device1[i]), expected1[i]) << "result " << i << " of device 1";
  }
  // Device 0 (position 0 of {0,1}) receives operand 0 (a) of each member, and element 0 of the
  // reduce-scatters.
  const std::vector<Literal>& device0 = (*results)[0].tuple_elements();
  EXPECT_EQ(Values(device0[4]), (std::vector<float>{3}));
  EXPECT_EQ(Values(device0[8]), (std::vector<float>{1, 10}));
  EXPECT_EQ(Values(device0[9]), (std::vector<float>{2, 20}));
}

// A tuple sharding gives each operand's collective its element.
TEST(TupleCollectivesTest, ElementShardingsGoToEachOperandsCollective) {
  const std::string text = std::string(kAdd) + R"(
ENTRY %e (a: f32[2], b: f32[3]) -> (f32[2], f32[3]) {
  %a = f32[2]{0} parameter(0)
  %b = f32[3]{0} parameter(1)
  ROOT %ar = (f32[2]{0}, f32[3]{0}) all-reduce(f32[2]{0} %a, f32[3]{0} %b), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%add, sharding={{manual}, {replicated}}
}
)";
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  std::vector<std::string> shardings;
  for (const auto& instruction : (*module)->entry()->instructions()) {
    if (instruction->opcode() != Opcode::kAllReduce) continue;
    shardings.push_back(instruction->sharding()->ToString());
  }
  EXPECT_THAT(shardings, ::testing::ElementsAre("{manual}", "{replicated}"));
  EXPECT_EQ((*module)->entry()->root()->sharding()->ToString(), "{{manual}, {replicated}}");
}

// replica_groups={} is one group of every partition (channel_id=) as for a collective of one
// operand, so four operands go to the module's four devices: device j receives operand j of each.
TEST(TupleCollectivesTest, AllToAllWithoutGroupsIsOneGroupOfEveryPartition) {
  const std::string text = std::string(kAdd) + R"(
ENTRY %e (a: f32[2], b: f32[3]) -> (f32[2], f32[2], f32[2], f32[2]) {
  %a = f32[2]{0} parameter(0)
  %b = f32[3]{0} parameter(1)
  %n = f32[2]{0} negate(f32[2]{0} %a)
  %twice = f32[2]{0} add(f32[2]{0} %a, f32[2]{0} %a)
  %square = f32[2]{0} multiply(f32[2]{0} %a, f32[2]{0} %a)
  ROOT %t = (f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}) all-to-all(%a, %n, %twice, %square), channel_id=1, replica_groups={}
}
)";
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<std::vector<Literal>> results = interp::EvaluateOnDevices(**module, Arguments());
  ASSERT_TRUE(results.ok()) << results.status();
  // Member i has a = [i+1, 10(i+1)]; result element i of device j is member i's operand j.
  const std::vector<std::vector<std::vector<float>>> expected = {
      {{1, 10}, {2, 20}, {3, 30}, {4, 40}},          // a
      {{-1, -10}, {-2, -20}, {-3, -30}, {-4, -40}},  // -a
      {{2, 20}, {4, 40}, {6, 60}, {8, 80}},          // a + a
      {{1, 100}, {4, 400}, {9, 900}, {16, 1600}}};   // a * a
  for (int j = 0; j < 4; ++j) {
    const std::vector<Literal>& device = (*results)[j].tuple_elements();
    ASSERT_EQ(device.size(), 4u);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(Values(device[i]), expected[j][i]) << "element " << i << " of device " << j;
    }
  }
}

TEST(TupleCollectivesTest, ErrorsNameTheCollective) {
  const auto message = [](const std::string& entry) {
    return std::string(ParseAndVerifyModule(std::string(kAdd) + entry).status().message());
  };
  // Groups of 2, and without channel_id replica_groups={} is every replica: one here.
  for (const auto& [groups, size] : {std::pair{"{{0,1},{2,3}}", 2}, std::pair{"{}", 1}}) {
    EXPECT_THAT(message(std::string(R"(
ENTRY %e (a: f32[2]) -> (f32[2], f32[2], f32[2]) {
  %a = f32[2]{0} parameter(0)
  ROOT %t = (f32[2]{0}, f32[2]{0}, f32[2]{0}) all-to-all(%a, %a, %a), replica_groups=)") +
                        groups + "\n}"),
                ::testing::HasSubstr(
                    "all-to-all %t of 3 operands without dimensions= sends operand i to the i-th "
                    "device of each group, but a group has " +
                    std::to_string(size) + " devices"));
  }
  EXPECT_THAT(message(R"(
ENTRY %e (a: f32[2], b: f32[3]) -> (f32[2], f32[3]) {
  %a = f32[2]{0} parameter(0)
  %b = f32[3]{0} parameter(1)
  ROOT %t = (f32[2]{0}, f32[3]{0}) all-to-all(%a, %b), replica_groups={{0,1},{2,3}}
})"),
              ::testing::HasSubstr("needs operands of one shape: %a is f32[2], %b is f32[3]"));
  EXPECT_THAT(message(R"(
ENTRY %e (a: f32[2], b: f32[2]) -> f32[2] {
  %a = f32[2]{0} parameter(0)
  %b = f32[2]{0} parameter(1)
  ROOT %t = f32[2]{0} all-reduce(%a, %b), to_apply=%add
})"),
              ::testing::HasSubstr("all-reduce %t of 2 operands must return a tuple of 2 arrays, "
                                   "not f32[2]"));
  EXPECT_THAT(message(R"(
ENTRY %e (a: f32[2], b: f32[3]) -> (f32[2], f32[3]) {
  %a = f32[2]{0} parameter(0)
  %b = f32[3]{0} parameter(1)
  ROOT %t = (f32[2]{0}, f32[3]{0}) all-reduce(%a, %b), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%add, sharding={{manual}}
})"),
              ::testing::HasSubstr("all-reduce %t of 2 operands has a tuple sharding of 1 "
                                   "elements ({{manual}}): it needs one per operand"));
}

}  // namespace
}  // namespace vkspmd::ir
