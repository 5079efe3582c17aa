// Issue 19's partially manual programs in JAX's dump style (tests/testdata/shard_map_auto_*.hlo,
// sharding_unspecified_dims.hlo, generate.py computes their outputs with NumPy): the user's
// all-gather, reduce-scatter and all-to-all inside shard_map(auto=), partition-id there, manual
// groups laid out by explicit device lists, and unspecified_dims. Each is partitioned over meshes
// of its device count, run on the CPU reference's devices and compared with the unpartitioned
// program and with NumPy; the collectives' device groups are pinned for several.
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/status_macros.h"
#include "src/ir/parser.h"
#include "tests/spmd/partial_manual_testdata.h"
#include "tests/spmd/spmd_test_util.h"

namespace vkspmd::spmd::testing {
namespace {

// The partition of `name` over `mesh`, once its result is found equal to the unpartitioned
// program's and to NumPy's.
absl::StatusOr<PartitionResult> PartitionChecked(const std::string& name, const Mesh& mesh) {
  VKSPMD_ASSIGN_OR_RETURN(PartialManualProgram program, ReadPartialManualProgram(name));
  VKSPMD_ASSIGN_OR_RETURN(EquivalenceOutcome outcome,
                          RunEquivalence(*program.module, mesh, 1, nullptr, &program.arguments));
  VKSPMD_ASSIGN_OR_RETURN(double from_numpy, RelativeDifference(outcome.actual, program.expected));
  if (outcome.difference >= 1e-5 || from_numpy >= 1e-5) {
    return absl::InternalError(
        fmt::format("{} on {}: differs by {} from the unpartitioned program and by {} from NumPy",
                    name, mesh.ToString(), outcome.difference, from_numpy));
  }
  return std::move(outcome.partition);
}

// The collectives of a partitioned module with their device groups, "all-gather {{0,1},{2,3}}".
std::vector<std::string> CollectiveGroups(const PartitionResult& result) {
  std::vector<std::string> collectives;
  for (const auto& instruction : result.module->entry()->instructions()) {
    if (!ir::IsCollective(instruction->opcode())) continue;
    std::vector<std::string> groups;
    if (instruction->opcode() == ir::Opcode::kCollectivePermute) {
      for (const auto& [source, target] : instruction->attributes().source_target_pairs) {
        groups.push_back(fmt::format("{{{},{}}}", source, target));
      }
    } else {
      for (const std::vector<int64_t>& group : instruction->attributes().replica_groups.Expand()) {
        groups.push_back(fmt::format("{{{}}}", absl::StrJoin(group, ",")));
      }
    }
    collectives.push_back(fmt::format("{} {} {{{}}}", ir::OpcodeName(instruction->opcode()),
                                      instruction->shape().ToString(), absl::StrJoin(groups, ",")));
  }
  return collectives;
}

Mesh MakeMesh(std::vector<int64_t> shape) { return *Mesh::Create(std::move(shape)); }

// Every program on every mesh of its device count: equal to the unpartitioned program on the
// CPU reference and to NumPy.
TEST(PartialManualTestdataTest, EveryProgramOnEveryMeshEqualsNumPy) {
  int runs = 0;
  for (const std::string& name : PartialManualProgramNames()) {
    absl::StatusOr<PartialManualProgram> program = ReadPartialManualProgram(name);
    ASSERT_TRUE(program.ok()) << name << ": " << program.status();
    for (const Mesh& mesh : MeshesFor(*program->module)) {
      absl::StatusOr<PartitionResult> result = PartitionChecked(name, mesh);
      EXPECT_TRUE(result.ok()) << name << " on " << mesh.ToString() << ": " << result.status();
      ++runs;
    }
  }
  EXPECT_EQ(runs, 8 * 2 + 3);
}

// lax.all_gather over y inside the region runs on each device's x-shard of the rows (4 of 8),
// within the pairs {0,1} and {2,3} that differ in y only. The exit's unspecified dims let the
// rows stay split over x out of the region (XLA ties the Sharding custom-call and
// SPMDShardToFullShape that list the same dims), so nothing gathers them.
TEST(PartialManualCollectivesTest, UserAllGatherRunsOnShardsAndTheRowsLeaveSplit) {
  const absl::StatusOr<PartitionResult> result =
      PartitionChecked("shard_map_auto_all_gather", MakeMesh({2, 2}));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(CollectiveGroups(*result),
              ::testing::ElementsAre("all-gather f32[4,6] {{0,1},{2,3}}"));
  EXPECT_EQ(result->result_shardings[0].ToString(result->mesh), "[{axis 0}, {}]");
}

// lax.psum_scatter over y scatters the rows whole (its dim stays unsplit) with the columns split
// over x: a reduce-scatter of 8x1 shards to 4x1 within {0,1} and {2,3}; nothing else moves.
TEST(PartialManualCollectivesTest, UserReduceScatterKeepsItsDimWhole) {
  const absl::StatusOr<PartitionResult> result =
      PartitionChecked("shard_map_auto_reduce_scatter", MakeMesh({2, 2}));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(CollectiveGroups(*result),
              ::testing::ElementsAre("reduce-scatter f32[4,1] {{0,1},{2,3}}"));
}

// lax.all_to_all over y exchanges row blocks of each device's x-shard of the columns.
TEST(PartialManualCollectivesTest, UserAllToAllExchangesColumnShards) {
  const absl::StatusOr<PartitionResult> result =
      PartitionChecked("shard_map_auto_all_to_all", MakeMesh({4}));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(CollectiveGroups(*result),
              ::testing::ElementsAre("all-to-all f32[4,3] {{0,1},{2,3}}"));
}

// Collectives over two operands (XLA's combiners, JAX's psum of a tuple) run as one per operand
// on each device's x-shard of the rows, within the y pairs {0,1} and {2,3}: all-reduce(t, s),
// all-gather(t, s) along the columns, and the tuple all-to-all (its operands stacked, exchanged
// along the stacked dim). The exit's unspecified dims let the rows leave split over x.
TEST(PartialManualCollectivesTest, TupleCollectivesRunOnePerOperandOnShards) {
  const absl::StatusOr<PartitionResult> result =
      PartitionChecked("shard_map_auto_tuple_collectives", MakeMesh({2, 2}));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(CollectiveGroups(*result),
              ::testing::ElementsAre(
                  "all-reduce f32[4,3] {{0,1},{2,3}}", "all-reduce f32[4,3] {{0,1},{2,3}}",
                  "all-gather f32[4,6] {{0,1},{2,3}}", "all-gather f32[4,6] {{0,1},{2,3}}",
                  "all-to-all f32[2,4,3] {{0,1},{2,3}}"));
  EXPECT_EQ(result->result_shardings[0].ToString(result->mesh), "[{axis 0}, {axis 1}]");
}

// A stencil along the region's automatic axis (rows split over x, manual over y): the slice and
// pad that shift the rows up by one keep the rows split and fetch the one row each device lacks
// from its x neighbour, as GSPMD's halo exchange does outside regions: one collective-permute of
// a 1x3 row within {0,2} and {1,3} (12 bytes per device), where gathering the rows for the slice
// moved 96 (two all-gathers).
TEST(PartialManualCollectivesTest, HaloExchangeAlongAnAutomaticAxis) {
  const absl::StatusOr<PartitionResult> result =
      PartitionChecked("shard_map_auto_halo", MakeMesh({2, 2}));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(CollectiveGroups(*result),
              ::testing::ElementsAre("collective-permute f32[1,3] {{2,0},{3,1}}"));
  EXPECT_EQ(result->BytesPerDevice(), 12);
}

// A roll of the rows by one (concatenate(t[1:], t[:1])) in a region laid out as 0,3,1,2 (manual
// groups {0,3} and {1,2}; rows split over the other axis: rows 0-3 of each group's block on 0 and
// 1, rows 4-7 on 3 and 2): the slices and the concatenate exchange halos between the devices of
// one manual group in the region's layout: the first row of the second half goes 3 -> 0 and
// 2 -> 1, the group's first row 0 -> 3 and 1 -> 2 (one 1x6 row each, 48 bytes per device in
// all, where gathering the rows moved 216).
TEST(PartialManualCollectivesTest, HaloExchangeInAPermutedRegion) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      ir::ParseAndVerifyModule(R"(HloModule m, num_partitions=4
ENTRY %main (a: f32[16,6]) -> f32[16,6] {
  %a = f32[16,6] parameter(0), sharding={devices=[2,1,2]0,3,1,2 last_tile_dim_replicate}
  %m = f32[8,6] custom-call(f32[16,6] %a), custom_call_target="SPMDFullToShardShape", sharding={devices=[1,1,2,2]0,3,1,2 last_tile_dims={manual, replicated}}
  %c = f32[8,6] custom-call(f32[8,6] %m), custom_call_target="Sharding", sharding={devices=[2,1,2]0,1,3,2 last_tile_dims={manual}}
  %t = f32[8,6] tanh(f32[8,6] %c)
  %tail = f32[7,6] slice(f32[8,6] %t), slice={[1:8], [0:6]}
  %head = f32[1,6] slice(f32[8,6] %t), slice={[0:1], [0:6]}
  %roll = f32[8,6] concatenate(f32[7,6] %tail, f32[1,6] %head), dimensions={0}
  %o = f32[8,6] custom-call(f32[8,6] %roll), custom_call_target="Sharding", sharding={devices=[2,1,2]0,1,3,2 last_tile_dims={manual}}
  ROOT %r = f32[16,6] custom-call(f32[8,6] %o), custom_call_target="SPMDShardToFullShape", sharding={devices=[4,1]0,3,1,2}
})");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<EquivalenceOutcome> outcome = RunEquivalence(**module, MakeMesh({2, 2}));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_LT(outcome->difference, 1e-6);
  EXPECT_THAT(CollectiveGroups(outcome->partition),
              ::testing::ElementsAre("collective-permute f32[1,6] {{3,0},{2,1}}",
                                     "collective-permute f32[1,6] {{0,3},{1,2}}"));
  EXPECT_EQ(outcome->partition.BytesPerDevice(), 2 * 24);
}

// Manual groups {0,3} and {1,2} from explicit device lists: the user's psum keeps its pairs
// {0,1} and {3,2} (devices holding the same rows), and leaving with out_specs P() gathers the
// rows within each manual group, {0,3} and {1,2}, never across groups.
TEST(PartialManualCollectivesTest, PermutedManualGroupsGatherWithinThemselves) {
  for (const Mesh& mesh : {MakeMesh({4}), MakeMesh({2, 2})}) {
    const absl::StatusOr<PartitionResult> result =
        PartitionChecked("shard_map_auto_permuted_groups", mesh);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_THAT(CollectiveGroups(*result),
                ::testing::ElementsAre("all-reduce f32[2,6] {{0,1},{3,2}}",
                                       "all-gather f32[4,6] {{0,3},{1,2}}"))
        << mesh.ToString();
  }
}

// Eight devices as a logical mesh (a, b, c) laid out by the list 0,3,5,6,1,2,4,7, manual over
// b: groups {0,3,1,2} and {5,6,4,7}. The user's psum and all-gather keep their pairs over b; every
// collective the partitioner adds runs over a ({0,1},{3,2},{5,4},{6,7}) or c ({0,3},{1,2},{5,6},
// {4,7}), pairs inside one manual group (hand-derived from the list). The all-gather's columns
// are gathered over c first (its dim must be whole).
TEST(PartialManualCollectivesTest, PermutedManualGroupsOnEightDevices) {
  const absl::StatusOr<PartitionResult> result =
      PartitionChecked("shard_map_auto_permuted_8", MakeMesh({8}));
  ASSERT_TRUE(result.ok()) << result.status();
  const std::string over_b = "{{0,5},{3,6},{1,4},{2,7}}";
  const std::string over_a = "{{0,1},{3,2},{5,4},{6,7}}";
  const std::string over_c = "{{0,3},{1,2},{5,6},{4,7}}";
  const std::vector<std::string> collectives = CollectiveGroups(*result);
  ASSERT_GE(collectives.size(), 3u);
  EXPECT_EQ(collectives[0], "all-reduce f32[2,3] " + over_b);
  EXPECT_EQ(collectives[1], "all-gather f32[2,6] " + over_c);
  EXPECT_EQ(collectives[2], "all-gather f32[2,12] " + over_b);
  for (size_t i = 3; i < collectives.size(); ++i) {
    const std::string groups = collectives[i].substr(collectives[i].rfind(' ') + 1);
    // The concatenate's halo exchange sends one row between the c pairs (3 -> 0, 2 -> 1, ...).
    const std::string halo_over_c = "{{3,0},{2,1},{6,5},{7,4}}";
    EXPECT_TRUE(groups == over_a || groups == over_c || groups == halo_over_c) << collectives[i];
  }
}

// with_sharding_constraint(x, P(UNCONSTRAINED, "y")): the rows keep the operand's x split, so
// the program needs no collective; without unspecified_dims the constraint replicates the rows
// (an all-gather over x).
TEST(PartialManualCollectivesTest, UnspecifiedDimsAreLeftToPropagation) {
  const absl::StatusOr<PartitionResult> result =
      PartitionChecked("sharding_unspecified_dims", MakeMesh({2, 2}));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(CollectiveGroups(*result), ::testing::IsEmpty());
  EXPECT_EQ(result->result_shardings[0].ToString(result->mesh), "[{axis 0}, {axis 1}]");
  // The same program with the attribute dropped: the rows are gathered.
  absl::StatusOr<PartialManualProgram> program =
      ReadPartialManualProgram("sharding_unspecified_dims");
  ASSERT_TRUE(program.ok()) << program.status();
  for (const auto& instruction : program->module->entry()->instructions()) {
    instruction->attributes().unspecified_dims.clear();
  }
  absl::StatusOr<EquivalenceOutcome> fixed =
      RunEquivalence(*program->module, MakeMesh({2, 2}), 1, nullptr, &program->arguments);
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_THAT(CollectiveGroups(fixed->partition),
              ::testing::ElementsAre("all-gather f32[8,3] {{0,2},{1,3}}"));
}

// partition-id in the region is each device's own (global) id, as XLA gives it: device 2x + y
// scales its rows by 2x + y + 1. Outside any manual region it stays refused.
TEST(PartialManualCollectivesTest, PartitionIdIsEachDevicesOwn) {
  const absl::StatusOr<PartitionResult> result =
      PartitionChecked("shard_map_auto_partition_id", MakeMesh({2, 2}));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(CollectiveGroups(*result), ::testing::IsEmpty());
  EXPECT_EQ(CountOps(*result->module, ir::Opcode::kPartitionId) >= 1, true);
  absl::StatusOr<std::unique_ptr<ir::Module>> outside =
      ir::ParseAndVerifyModule(R"(HloModule m, num_partitions=4
ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0), sharding={devices=[4]<=[4]}
  %id = u32[] partition-id()
  %f = f32[] convert(u32[] %id)
  %b = f32[4] broadcast(f32[] %f), dimensions={}
  ROOT %s = f32[4] add(f32[4] %p, f32[4] %b)
})");
  ASSERT_TRUE(outside.ok()) << outside.status();
  EXPECT_THAT(std::string(Partition(**outside, MakeMesh({4})).status().message()),
              ::testing::HasSubstr("%id: the partitioner does not support partition-id outside "
                                   "manual regions"));
}

// A partition-id that only feeds a region's input is still outside the region: the walk from
// the region's partially manual values stops at its SPMDFullToShardShape.
TEST(PartialManualCollectivesTest, PartitionIdFeedingARegionsInputIsRefused) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      ir::ParseAndVerifyModule(R"(HloModule m, num_partitions=4
ENTRY %main (a: f32[8,6]) -> f32[8,6] {
  %a = f32[8,6] parameter(0), sharding={devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  %pid = u32[] partition-id()
  %cv = f32[] convert(u32[] %pid)
  %b = f32[8,6] broadcast(f32[] %cv), dimensions={}
  %x = f32[8,6] add(f32[8,6] %a, f32[8,6] %b)
  %s = f32[8,6] custom-call(f32[8,6] %x), custom_call_target="Sharding", sharding={devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  %m = f32[4,6] custom-call(f32[8,6] %s), custom_call_target="SPMDFullToShardShape", sharding={devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={manual, replicated}}
  %t = f32[4,6] tanh(f32[4,6] %m)
  %c = f32[4,6] custom-call(f32[4,6] %t), custom_call_target="Sharding", sharding={devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={manual, replicated}}
  ROOT %r = f32[8,6] custom-call(f32[4,6] %c), custom_call_target="SPMDShardToFullShape", sharding={devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}
})");
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_THAT(std::string(Partition(**module, MakeMesh({2, 2})).status().message()),
              ::testing::HasSubstr("%pid: the partitioner does not support partition-id outside "
                                   "manual regions"));
}

// A value in the region laid out in another device order than the region's: an iota annotated
// {devices=[2,1,2]0,2,1,3 last_tile_dim_replicate} (rows split in the mesh's order: devices 0 and
// 2 hold rows 0-1) added to a region laid out as 0,3,1,2 (manual groups {0,3} and {1,2}, rows
// 0-1 on devices 0 and 1). Its shards move into the region's layout as GSPMD moves them between
// tile assignments: one collective-permute (devices 1 and 2 swap, 0 and 3 keep theirs), 48 bytes
// each; the sum, split over the region's automatic axis, is gathered within each manual group to
// leave the region whole. The result equals the unpartitioned program's, a + the row index
// within each group's block.
TEST(PartialManualCollectivesTest, AnotherDeviceOrderMovesIntoTheRegionsLayout) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      ir::ParseAndVerifyModule(R"(HloModule m, num_partitions=4
ENTRY %main (a: f32[8,6]) -> f32[8,6] {
  %a = f32[8,6] parameter(0), sharding={devices=[2,1,2]0,3,1,2 last_tile_dim_replicate}
  %s = f32[8,6] custom-call(f32[8,6] %a), custom_call_target="Sharding", sharding={devices=[2,1,2]0,3,1,2 last_tile_dim_replicate}
  %m = f32[4,6] custom-call(f32[8,6] %s), custom_call_target="SPMDFullToShardShape", sharding={devices=[1,1,2,2]0,3,1,2 last_tile_dims={manual, replicated}}
  %i = f32[4,6] iota(), iota_dimension=0, sharding={devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}
  %sum = f32[4,6] add(f32[4,6] %m, f32[4,6] %i)
  %c = f32[4,6] custom-call(f32[4,6] %sum), custom_call_target="Sharding", sharding={devices=[1,1,2,2]0,3,1,2 last_tile_dims={manual, replicated}}
  ROOT %r = f32[8,6] custom-call(f32[4,6] %c), custom_call_target="SPMDShardToFullShape", sharding={devices=[2,1,2]0,3,1,2 last_tile_dim_replicate}
})");
  ASSERT_TRUE(module.ok()) << module.status();
  std::vector<float> a(48), expected(48);
  for (int i = 0; i < 48; ++i) {
    a[i] = static_cast<float>(i % 7) - 3;
    expected[i] = a[i] + static_cast<float>((i / 6) % 4);
  }
  const std::vector<ir::Literal> arguments = {
      ir::Literal::Create<float>(ir::DType::kF32, {8, 6}, a)};
  absl::StatusOr<EquivalenceOutcome> outcome =
      RunEquivalence(**module, MakeMesh({2, 2}), 1, nullptr, &arguments);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->difference, 0);
  absl::StatusOr<double> from_hand = RelativeDifference(
      outcome->actual, ir::Literal::Create<float>(ir::DType::kF32, {8, 6}, expected));
  ASSERT_TRUE(from_hand.ok()) << from_hand.status();
  EXPECT_EQ(*from_hand, 0);
  EXPECT_THAT(CollectiveGroups(outcome->partition),
              ::testing::ElementsAre("collective-permute f32[2,6] {{0,0},{2,1},{1,2},{3,3}}",
                                     "all-gather f32[4,6] {{0,3},{1,2}}"));
  EXPECT_EQ(outcome->partition.BytesPerDevice(), 48 + 48);
}

}  // namespace
}  // namespace vkspmd::spmd::testing
