// Donation through partitioning: an input_output_alias survives when the parameter and the
// output it aliases are split alike (each device then updates its own shard in place), and is
// dropped when they are not (the shards differ, so sharing a buffer would be wrong).
#include "gtest/gtest.h"
#include "tests/spmd/spmd_test_util.h"

namespace vkspmd::spmd::testing {
namespace {

// w' = w - x^T x w, with w' aliased to w.
constexpr char kUpdate[] = R"(HloModule update, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY %main (w: f32[8,6], x: f32[10,8]) -> f32[8,6] {
  %w = f32[8,6] parameter(0)
  %x = f32[10,8] parameter(1)
  %y = f32[10,6] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %g = f32[8,6] dot(%x, %y), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT %new_w = f32[8,6] subtract(%w, %g)
})";

PartitionResult PartitionUpdate(const std::string& w_spec, const std::string& new_w_spec) {
  const Mesh mesh = *Mesh::Create({2, 2});
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      AnnotatedModule(kUpdate, {{"w", w_spec}, {"x", "(0, None)"}, {"new_w", new_w_spec}}, mesh);
  EXPECT_TRUE(module.ok()) << module.status();
  absl::StatusOr<PartitionResult> partition = Partition(**module, mesh);
  EXPECT_TRUE(partition.ok()) << partition.status();
  return std::move(*partition);
}

TEST(AliasingTest, AnAliasSurvivesWhenParameterAndOutputAreSplitAlike) {
  PartitionResult partition = PartitionUpdate("(None, 1)", "(None, 1)");
  ASSERT_EQ(partition.module->input_output_aliases().size(), 1u);
  EXPECT_EQ(partition.module->input_output_aliases()[0].parameter_number, 0);
  EXPECT_EQ(partition.parameter_shardings[0][0], partition.result_shardings[0]);
}

TEST(AliasingTest, AnAliasIsDroppedWhenTheShardsDiffer) {
  PartitionResult partition = PartitionUpdate("(None, 1)", "(0, None)");
  EXPECT_NE(partition.parameter_shardings[0][0], partition.result_shardings[0]);
  EXPECT_TRUE(partition.module->input_output_aliases().empty());
}

}  // namespace
}  // namespace vkspmd::spmd::testing
