// Collectives over emulated devices: the four group modes of XLA, non-trivial reducers,
// all-to-all and collective-permute ordering, and errors for inconsistent replica groups.
#include "gtest/gtest.h"
#include "src/interp/evaluator.h"
#include "src/ir/collective_groups.h"
#include "src/ir/parser.h"

namespace vkspmd::interp {
namespace {

using ir::DType;
using ir::Literal;

constexpr std::string_view kReducers = R"hlo(
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

%add_then_double (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %s = f32[] add(f32[] %a, f32[] %b)
  ROOT %d = f32[] add(f32[] %s, f32[] %s)
}
)hlo";

std::vector<Literal> RunOnDevices(std::string_view header, std::string_view entry,
                                  const std::vector<float>& per_device_values) {
  const std::string text =
      std::string(header) + "\n" + std::string(kReducers) + "\n" + std::string(entry);
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return {};
  std::vector<std::vector<Literal>> arguments;
  for (float value : per_device_values) {
    arguments.push_back({Literal::Create<float>(DType::kF32, {2}, {value, 10 * value})});
  }
  absl::StatusOr<std::vector<Literal>> results = EvaluateOnDevices(**module, arguments);
  EXPECT_TRUE(results.ok()) << results.status();
  return results.ok() ? *results : std::vector<Literal>{};
}

std::vector<float> First(const std::vector<Literal>& results) {
  std::vector<float> values;
  for (const Literal& result : results) values.push_back(result.Get<float>(0));
  return values;
}

TEST(CollectivesTest, CrossReplicaAndPartitionGroupsWholeReplicas) {
  // channel_id without use_global_device_ids: groups name replicas, each with all partitions.
  const auto results = RunOnDevices(
      "HloModule m, replica_count=2, num_partitions=2",
      "ENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2]{0} parameter(0)\n"
      "  ROOT %r = f32[2]{0} all-reduce(f32[2]{0} %p), channel_id=1, replica_groups={{0},{1}}, "
      "to_apply=%add\n}\n",
      {1, 2, 4, 8});
  EXPECT_EQ(First(results), (std::vector<float>{3, 3, 12, 12}));
}

TEST(CollectivesTest, CrossReplicaGroupsPerPartition) {
  const auto results = RunOnDevices(
      "HloModule m, replica_count=2, num_partitions=2",
      "ENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2]{0} parameter(0)\n"
      "  ROOT %r = f32[2]{0} all-reduce(f32[2]{0} %p), replica_groups={{0,1}}, to_apply=%add\n}\n",
      {1, 2, 4, 8});
  EXPECT_EQ(First(results), (std::vector<float>{5, 10, 5, 10}));
}

TEST(CollectivesTest, FlattenedIdsWithIotaGroups) {
  const auto results = RunOnDevices(
      "HloModule m, num_partitions=4",
      "ENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2]{0} parameter(0)\n"
      "  ROOT %r = f32[2]{0} all-reduce(f32[2]{0} %p), channel_id=1, "
      "replica_groups=[2,2]<=[2,2]T(1,0), use_global_device_ids=true, to_apply=%add\n}\n",
      {1, 2, 4, 8});
  EXPECT_EQ(First(results), (std::vector<float>{5, 10, 5, 10}));
}

TEST(CollectivesTest, GeneralReducerIsAppliedInGroupOrder) {
  // ((1 + 2) * 2 + 4) * 2 = 20 for the group {0,1,2} listed in that order.
  const auto results = RunOnDevices(
      "HloModule m, num_partitions=3",
      "ENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2]{0} parameter(0)\n"
      "  ROOT %r = f32[2]{0} all-reduce(f32[2]{0} %p), channel_id=1, replica_groups={{0,1,2}}, "
      "use_global_device_ids=true, to_apply=%add_then_double\n}\n",
      {1, 2, 4});
  EXPECT_EQ(First(results), (std::vector<float>{20, 20, 20}));
}

TEST(CollectivesTest, AllGatherFollowsTheListedOrder) {
  const auto results = RunOnDevices(
      "HloModule m, num_partitions=2",
      "ENTRY %e (p: f32[2]) -> f32[4] {\n  %p = f32[2]{0} parameter(0)\n"
      "  ROOT %g = f32[4]{0} all-gather(f32[2]{0} %p), channel_id=1, replica_groups={{1,0}}, "
      "dimensions={0}, use_global_device_ids=true\n}\n",
      {1, 2});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(std::vector<float>(results[0].data<float>(), results[0].data<float>() + 4),
            (std::vector<float>{2, 20, 1, 10}));
}

TEST(CollectivesTest, AllToAllAcrossPartitionsWithChannel) {
  const auto results = RunOnDevices(
      "HloModule m, num_partitions=2",
      "ENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2]{0} parameter(0)\n"
      "  ROOT %a = f32[2]{0} all-to-all(f32[2]{0} %p), channel_id=1, replica_groups={{0,1}}, "
      "dimensions={0}\n}\n",
      {1, 2});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(std::vector<float>(results[0].data<float>(), results[0].data<float>() + 2),
            (std::vector<float>{1, 2}));
  EXPECT_EQ(std::vector<float>(results[1].data<float>(), results[1].data<float>() + 2),
            (std::vector<float>{10, 20}));
}

TEST(CollectivesTest, CollectivePermuteLeavesUntargetedDevicesZero) {
  const auto results =
      RunOnDevices("HloModule m, num_partitions=3",
                   "ENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2]{0} parameter(0)\n"
                   "  ROOT %c = f32[2]{0} collective-permute(f32[2]{0} %p), channel_id=1, "
                   "source_target_pairs={{0,2},{2,0}}\n}\n",
                   {1, 2, 4});
  EXPECT_EQ(First(results), (std::vector<float>{4, 0, 1}));
}

TEST(CollectivesTest, EvaluateRunsASingleDeviceCollective) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(
      std::string("HloModule m\n") + std::string(kReducers) +
      "ENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2]{0} parameter(0)\n"
      "  ROOT %r = f32[2]{0} all-reduce(f32[2]{0} %p), replica_groups={}, to_apply=%add\n}\n");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<Literal> result =
      Evaluate(**module, {Literal::Create<float>(DType::kF32, {2}, {3, 4})});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->Get<float>(1), 4);
}

TEST(CollectivesTest, RejectsTheWrongNumberOfDevices) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(
      "HloModule m, num_partitions=2\nENTRY %e (p: f32[]) -> f32[] {\n"
      "  ROOT %p = f32[] parameter(0)\n}\n");
  ASSERT_TRUE(module.ok());
  absl::StatusOr<std::vector<Literal>> results = EvaluateOnDevices(**module, {{Literal()}});
  ASSERT_FALSE(results.ok());
  EXPECT_EQ(std::string(results.status().message()),
            "the module runs on 2 devices (1 replicas x 2 partitions) but 1 argument lists were "
            "given");
}

TEST(CollectivesTest, UnevenShardsArePaddedAndReassembled) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(R"hlo(
HloModule m, num_partitions=2
ENTRY %e (p: f32[5]) -> (f32[3], f32[5]) {
  %p = f32[5]{0} parameter(0), sharding={devices=[2]0,1}
  %shard = f32[3]{0} custom-call(f32[5]{0} %p), custom_call_target="SPMDFullToShardShape", sharding={manual}
  %full = f32[5]{0} custom-call(f32[3]{0} %shard), custom_call_target="SPMDShardToFullShape", sharding={devices=[2]0,1}
  ROOT %t = (f32[3]{0}, f32[5]{0}) tuple(f32[3]{0} %shard, f32[5]{0} %full)
})hlo");
  ASSERT_TRUE(module.ok()) << module.status();
  const Literal input = Literal::Create<float>(DType::kF32, {5}, {1, 2, 3, 4, 5});
  absl::StatusOr<std::vector<Literal>> results = EvaluateOnDevices(**module, {{input}, {input}});
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ((*results)[1].tuple_elements()[0], Literal::Create<float>(DType::kF32, {3}, {4, 5, 0}));
  EXPECT_EQ((*results)[0].tuple_elements()[1], input);
  EXPECT_EQ((*results)[1].tuple_elements()[1], input);
}

TEST(CollectiveGroupsTest, GroupsMustCoverEveryDeviceOnce) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseModule(
      std::string("HloModule m, num_partitions=4\n") + std::string(kReducers) +
      "ENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2]{0} parameter(0)\n"
      "  ROOT %r = f32[2]{0} all-reduce(f32[2]{0} %p), channel_id=1, replica_groups={{0,1},{1,2}},"
      " use_global_device_ids=true, to_apply=%add\n}\n");
  ASSERT_TRUE(module.ok()) << module.status();
  const ir::Instruction& all_reduce = *(*module)->entry()->root();
  EXPECT_EQ(std::string(ir::CollectiveDeviceGroups(all_reduce, 1, 4).status().message()),
            "device id 1 appears twice in replica_groups");
}

}  // namespace
}  // namespace vkspmd::interp
