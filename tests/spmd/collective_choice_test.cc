// Golden collective choices (issue 6): the partitioner emits exactly the collectives GSPMD does
// for the textbook patterns, and none where the shardings already line up.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "src/ir/parser.h"
#include "src/ir/printer.h"
#include "tests/spmd/spmd_test_util.h"

namespace vkspmd::spmd::testing {
namespace {

using ir::Opcode;

constexpr char kAdd[] = R"(
%add.f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
)";

// x @ w with the contracting dim 16 long.
constexpr char kDot[] = R"(HloModule dot
ENTRY %main (x: f32[8,16], w: f32[16,4]) -> f32[8,4] {
  %x = f32[8,16] parameter(0)
  %w = f32[16,4] parameter(1)
  ROOT %y = f32[8,4] dot(f32[8,16] %x, f32[16,4] %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";

Mesh MakeMesh(std::vector<int64_t> shape, std::vector<std::string> names) {
  absl::StatusOr<Mesh> mesh = Mesh::Create(std::move(shape), {}, std::move(names));
  EXPECT_TRUE(mesh.ok()) << mesh.status();
  return *mesh;
}

// Partitions and checks equivalence; returns the partition for collective counting.
PartitionResult PartitionChecked(const absl::StatusOr<std::unique_ptr<ir::Module>>& module,
                                 const Mesh& mesh) {
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return {};
  absl::StatusOr<EquivalenceOutcome> outcome = RunEquivalence(**module, mesh);
  EXPECT_TRUE(outcome.ok()) << outcome.status();
  if (!outcome.ok()) return {};
  EXPECT_LT(outcome->difference, 1e-5) << ir::PrintModule(*outcome->partition.module);
  return std::move(outcome->partition);
}

// The same with shardings from partition specs.
PartitionResult PartitionChecked(const std::string& text,
                                 const std::map<std::string, std::string>& specs,
                                 const Mesh& mesh) {
  return PartitionChecked(AnnotatedModule(text, specs, mesh), mesh);
}

// The same for a module annotated in its text (HLO shardings).
PartitionResult PartitionText(const std::string& text, const Mesh& mesh) {
  return PartitionChecked(ir::ParseAndVerifyModule(text), mesh);
}

// The same partition spec for every named value.
std::map<std::string, std::string> Alike(const std::vector<std::string>& names,
                                         const std::string& spec) {
  std::map<std::string, std::string> specs;
  for (const std::string& name : names) specs[name] = spec;
  return specs;
}

int64_t Count(const PartitionResult& result, Opcode kind) {
  int64_t count = 0;
  for (const CollectiveRecord& record : result.collectives) count += record.kind == kind;
  return count;
}

// The source_target_pairs of the only collective-permute of the partitioned entry.
std::vector<std::pair<int64_t, int64_t>> PermutePairsOf(const PartitionResult& result) {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (const auto& instruction : result.module->entry()->instructions()) {
    if (instruction->opcode() == Opcode::kCollectivePermute) {
      pairs = instruction->attributes().source_target_pairs;
    }
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

// Two tile assignments that differ only by a device permutation (GSPMD: one collective-permute
// whose pairs send each tile from its old holder to its new one). Hand-derived: under
// [[0,1],[2,3]] device 1 holds tile (0,1) and device 2 tile (1,0); under <=[2,2]T(1,0) =
// [[0,2],[1,3]] they swap, devices 0 and 3 keep theirs.
TEST(CollectiveChoiceTest, PermutedDeviceReshardIsOneCollectivePermute) {
  const std::string text = R"(HloModule permuted, num_partitions=4
ENTRY %main (x: f32[6,10]) -> f32[6,10] {
  %x = f32[6,10] parameter(0), sharding={devices=[2,2]0,1,2,3}
  ROOT %y = f32[6,10] custom-call(f32[6,10] %x), custom_call_target="Sharding", sharding={devices=[2,2]<=[2,2]T(1,0)}
})";
  const std::vector<std::pair<int64_t, int64_t>> swap = {{0, 0}, {1, 2}, {2, 1}, {3, 3}};
  for (const Mesh& mesh : {MakeMesh({4}, {}), MakeMesh({2, 2}, {"x", "y"})}) {
    const PartitionResult result = PartitionText(text, mesh);
    ASSERT_NE(result.module, nullptr);
    EXPECT_EQ(result.collectives.size(), 1u) << ir::PrintModule(*result.module);
    EXPECT_EQ(CountOps(*result.module, Opcode::kCollectivePermute), 1);
    EXPECT_EQ(PermutePairsOf(result), swap);
    EXPECT_EQ(result.collectives[0].bytes_per_device, 3 * 5 * 4);
  }
  // Explicit lists, one a reversal of the other on 2 devices: each sends its tile to the other.
  const PartitionResult reversed = PartitionText(R"(HloModule reversed, num_partitions=2
ENTRY %main (x: f32[5,3]) -> f32[5,3] {
  %x = f32[5,3] parameter(0), sharding={devices=[2,1]1,0}
  ROOT %y = f32[5,3] custom-call(f32[5,3] %x), custom_call_target="Sharding", sharding={devices=[2,1]0,1}
})",
                                                 MakeMesh({2}, {}));
  ASSERT_NE(reversed.module, nullptr);
  EXPECT_EQ(reversed.collectives.size(), 1u) << ir::PrintModule(*reversed.module);
  EXPECT_EQ(PermutePairsOf(reversed), (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 0}}));
  // Partially replicated: [2,1,2] over 0,1,2,3 to 3,2,1,0 moves tile 0 from {0,1} to {2,3}
  // and tile 1 from {2,3} to {0,1}; one permute of 4 pairs.
  const PartitionResult replicated = PartitionText(R"(HloModule replicated, num_partitions=4
ENTRY %main (x: f32[7,3]) -> f32[7,3] {
  %x = f32[7,3] parameter(0), sharding={devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}
  ROOT %y = f32[7,3] custom-call(f32[7,3] %x), custom_call_target="Sharding", sharding={devices=[2,1,2]3,2,1,0 last_tile_dim_replicate}
})",
                                                   MakeMesh({4}, {}));
  ASSERT_NE(replicated.module, nullptr);
  EXPECT_EQ(replicated.collectives.size(), 1u) << ir::PrintModule(*replicated.module);
  const std::vector<std::pair<int64_t, int64_t>> pairs = PermutePairsOf(replicated);
  ASSERT_EQ(pairs.size(), 4u);
  for (const auto& [source, target] : pairs) EXPECT_EQ(source / 2, 1 - target / 2);
}

// Ops on values laid out in a device order run in that layout, as GSPMD runs them in their
// operands' tile assignment: elementwise ops need nothing, and a dot over a split contracting dim
// all-reduces over the groups the tile assignments give. Hand-derived: x's device array
// [[3,1],[0,2]] holds row tile 0 on {3,1} and row tile 1 on {0,2}, contracting tile 0 on {3,0}
// and tile 1 on {1,2}; w is split alike on the contracting dim, so the partial sums of a row
// tile are added over {3,1} and over {0,2}.
TEST(CollectiveChoiceTest, OpsRunInTheDeviceOrderOfTheirOperands) {
  const PartitionResult elementwise = PartitionText(R"(HloModule elementwise, num_partitions=4
ENTRY %main (x: f32[7,6], y: f32[7,6]) -> f32[7,6] {
  %x = f32[7,6] parameter(0), sharding={devices=[2,2]3,1,0,2}
  %y = f32[7,6] parameter(1), sharding={devices=[2,2]3,1,0,2}
  %s = f32[7,6] add(f32[7,6] %x, f32[7,6] %y)
  ROOT %n = f32[7,6] negate(f32[7,6] %s), sharding={devices=[2,2]3,1,0,2}
})",
                                                    MakeMesh({4}, {}));
  ASSERT_NE(elementwise.module, nullptr);
  EXPECT_EQ(elementwise.collectives.size(), 0u) << ir::PrintModule(*elementwise.module);

  const PartitionResult dot = PartitionText(R"(HloModule dot, num_partitions=4
ENTRY %main (x: f32[8,16], w: f32[16,4]) -> f32[8,4] {
  %x = f32[8,16] parameter(0), sharding={devices=[2,2]3,1,0,2}
  %w = f32[16,4] parameter(1), sharding={devices=[2,1,2]3,0,1,2 last_tile_dim_replicate}
  ROOT %y = f32[8,4] dot(f32[8,16] %x, f32[16,4] %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[2,1,2]3,1,0,2 last_tile_dim_replicate}
})",
                                            MakeMesh({4}, {}));
  ASSERT_NE(dot.module, nullptr);
  ASSERT_EQ(dot.collectives.size(), 1u) << ir::PrintModule(*dot.module);
  EXPECT_EQ(dot.collectives[0].kind, Opcode::kAllReduce);
  std::vector<std::vector<int64_t>> groups;
  for (const auto& instruction : dot.module->entry()->instructions()) {
    if (instruction->opcode() != Opcode::kAllReduce) continue;
    groups = instruction->attributes().replica_groups.groups;
  }
  for (std::vector<int64_t>& group : groups) std::sort(group.begin(), group.end());
  std::sort(groups.begin(), groups.end());
  EXPECT_EQ(groups, (std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}}));

  // Operands in two device orders: the op runs in the layout that moves least, here x's and the
  // root's, so only y is permuted (once); the mesh's order would permute x and the result.
  const PartitionResult mixed = PartitionText(R"(HloModule mixed, num_partitions=2
ENTRY %main (x: f32[7,3], y: f32[7,3]) -> f32[7,3] {
  %x = f32[7,3] parameter(0), sharding={devices=[2,1]1,0}
  %y = f32[7,3] parameter(1), sharding={devices=[2,1]0,1}
  ROOT %s = f32[7,3] add(f32[7,3] %x, f32[7,3] %y), sharding={devices=[2,1]1,0}
})",
                                              MakeMesh({2}, {}));
  ASSERT_NE(mixed.module, nullptr);
  ASSERT_EQ(mixed.collectives.size(), 1u) << ir::PrintModule(*mixed.module);
  EXPECT_EQ(mixed.collectives[0].kind, Opcode::kCollectivePermute);
  EXPECT_EQ(PermutePairsOf(mixed), (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 0}}));
}

// A maximal value lives on its device: ops from maximal values to a maximal result run there
// (no collective), and a value read twice is resharded once. The device's value reaches the
// others in one all-reduce (its data, zeros elsewhere) when a split result needs it.
TEST(CollectiveChoiceTest, MaximalValuesStayOnTheirDevice) {
  const PartitionResult result = PartitionText(R"(HloModule maximal, num_partitions=4
ENTRY %main (a: f32[5,6]) -> f32[5,6] {
  %a = f32[5,6] parameter(0), sharding={maximal device=1}
  %n = f32[5,6] negate(f32[5,6] %a), sharding={maximal device=1}
  %e = f32[5,6] exponential(f32[5,6] %n), sharding={maximal device=1}
  ROOT %b = f32[5,6] add(f32[5,6] %e, f32[5,6] %e), sharding={devices=[2,2]<=[2,2]T(1,0)}
})",
                                               MakeMesh({4}, {}));
  ASSERT_NE(result.module, nullptr);
  ASSERT_EQ(result.collectives.size(), 1u) << ir::PrintModule(*result.module);
  EXPECT_EQ(result.collectives[0].kind, Opcode::kAllReduce);
  EXPECT_EQ(result.collectives[0].instruction, "b");
}

TEST(CollectiveChoiceTest, ContractingDimShardedGivesOneAllReduce) {
  const Mesh mesh = MakeMesh({4}, {"x"});
  const std::string text = kDot;
  const PartitionResult result =
      PartitionChecked(text, {{"x", "(None, x)"}, {"w", "(x, None)"}, {"y", "(None, None)"}}, mesh);
  ASSERT_NE(result.module, nullptr);
  EXPECT_EQ(result.collectives.size(), 1u);
  EXPECT_EQ(Count(result, Opcode::kAllReduce), 1);
  EXPECT_EQ(CountOps(*result.module, Opcode::kAllReduce), 1);
  ASSERT_EQ(result.local_ops.size(), 1u);
  EXPECT_EQ(result.local_ops[0].local_operand_shapes[0], ir::Shape(ir::DType::kF32, {8, 4}));
  EXPECT_EQ(result.local_ops[0].local_operand_shapes[1], ir::Shape(ir::DType::kF32, {4, 4}));
}

TEST(CollectiveChoiceTest, ContractingDimShardedIntoTiledOutputGivesReduceScatter) {
  const Mesh mesh = MakeMesh({4}, {"x"});
  const std::string text = kDot;
  const PartitionResult result =
      PartitionChecked(text, {{"x", "(None, x)"}, {"w", "(x, None)"}, {"y", "(x, None)"}}, mesh);
  ASSERT_NE(result.module, nullptr);
  EXPECT_EQ(result.collectives.size(), 1u);
  EXPECT_EQ(Count(result, Opcode::kReduceScatter), 1);
}

TEST(CollectiveChoiceTest, MegatronMlpForwardHasExactlyOneAllReduce) {
  const std::string text = R"(HloModule megatron
ENTRY %main (x: f32[8,16], w1: f32[16,32], w2: f32[32,16]) -> f32[8,16] {
  %x = f32[8,16] parameter(0)
  %w1 = f32[16,32] parameter(1)
  %w2 = f32[32,16] parameter(2)
  %h = f32[8,32] dot(f32[8,16] %x, f32[16,32] %w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %zero = f32[] constant(0)
  %zeros = f32[8,32] broadcast(f32[] %zero), dimensions={}
  %relu = f32[8,32] maximum(f32[8,32] %h, f32[8,32] %zeros)
  ROOT %y = f32[8,16] dot(f32[8,32] %relu, f32[32,16] %w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";
  const Mesh mesh = MakeMesh({2, 2}, {"dp", "tp"});
  const PartitionResult result = PartitionChecked(
      text, {{"x", "(dp, None)"}, {"w1", "(None, tp)"}, {"w2", "(tp, None)"}}, mesh);
  ASSERT_NE(result.module, nullptr);
  EXPECT_EQ(result.collectives.size(), 1u) << ir::PrintModule(*result.module);
  EXPECT_EQ(Count(result, Opcode::kAllReduce), 1);
  EXPECT_EQ(result.collectives[0].axes, std::vector<int64_t>{1});
}

TEST(CollectiveChoiceTest, DataParallelGradientsGetOneAllReducePerParameter) {
  const std::string text = R"(HloModule dp_grads
ENTRY %main (x: f32[16,8], dh: f32[16,12], h: f32[16,12], dy: f32[16,4]) -> (f32[8,12], f32[12,4]) {
  %x = f32[16,8] parameter(0)
  %dh = f32[16,12] parameter(1)
  %h = f32[16,12] parameter(2)
  %dy = f32[16,4] parameter(3)
  %dw1 = f32[8,12] dot(f32[16,8] %x, f32[16,12] %dh), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %dw2 = f32[12,4] dot(f32[16,12] %h, f32[16,4] %dy), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT %grads = (f32[8,12], f32[12,4]) tuple(f32[8,12] %dw1, f32[12,4] %dw2)
})";
  const Mesh mesh = MakeMesh({4}, {"dp"});
  const PartitionResult result =
      PartitionChecked(text, Alike({"x", "dh", "h", "dy"}, "(dp, None)"), mesh);
  ASSERT_NE(result.module, nullptr);
  EXPECT_EQ(Count(result, Opcode::kAllReduce), 2) << ir::PrintModule(*result.module);
  EXPECT_EQ(result.collectives.size(), 2u);
}

TEST(CollectiveChoiceTest, FsdpGathersParameterAndReduceScattersGradient) {
  const std::string text = R"(HloModule fsdp
ENTRY %main (x: f32[32,8], w: f32[8,8], dy: f32[32,8]) -> (f32[32,8], f32[8,8]) {
  %x = f32[32,8] parameter(0)
  %w = f32[8,8] parameter(1)
  %dy = f32[32,8] parameter(2)
  %y = f32[32,8] dot(f32[32,8] %x, f32[8,8] %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %dw = f32[8,8] dot(f32[32,8] %x, f32[32,8] %dy), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT %out = (f32[32,8], f32[8,8]) tuple(f32[32,8] %y, f32[8,8] %dw)
})";
  const Mesh mesh = MakeMesh({4}, {"dp"});
  const PartitionResult result =
      PartitionChecked(text, Alike({"x", "w", "dy", "dw"}, "(dp, None)"), mesh);
  ASSERT_NE(result.module, nullptr);
  EXPECT_EQ(result.collectives.size(), 2u) << ir::PrintModule(*result.module);
  EXPECT_EQ(Count(result, Opcode::kAllGather), 1);
  EXPECT_EQ(Count(result, Opcode::kReduceScatter), 1);
  for (const CollectiveRecord& record : result.collectives) {
    EXPECT_EQ(record.instruction, record.kind == Opcode::kAllGather ? "y" : "dw");
  }
}

TEST(CollectiveChoiceTest, ReplicatedToTiledCostsNoCommunication) {
  const std::string text = R"(HloModule slice_only
ENTRY %main (p: f32[8,6]) -> f32[8,6] {
  %p = f32[8,6] parameter(0)
  %tiled = f32[8,6] custom-call(f32[8,6] %p), custom_call_target="Sharding"
  ROOT %n = f32[8,6] negate(f32[8,6] %tiled)
})";
  const Mesh mesh = MakeMesh({2, 3}, {});
  const PartitionResult result =
      PartitionChecked(text, {{"p", "(None, None)"}, {"tiled", "(0, 1)"}}, mesh);
  ASSERT_NE(result.module, nullptr);
  EXPECT_TRUE(result.collectives.empty()) << ir::PrintModule(*result.module);
  EXPECT_EQ(result.BytesPerDevice(), 0);
  EXPECT_EQ(CountOps(*result.module, Opcode::kDynamicSlice), 3);  // one slice, two table lookups
}

TEST(CollectiveChoiceTest, WellShardedElementwiseChainHasNoCollective) {
  const std::string text = std::string("HloModule chain\n") + kAdd + R"(
ENTRY %main (x: f32[9,5], y: f32[9,5]) -> f32[9,5] {
  %x = f32[9,5] parameter(0)
  %y = f32[9,5] parameter(1)
  %e = f32[9,5] exponential(f32[9,5] %x)
  %m = f32[9,5] multiply(f32[9,5] %y, f32[9,5] %x)
  %t = f32[9,5] tanh(f32[9,5] %m)
  ROOT %s = f32[9,5] add(f32[9,5] %e, f32[9,5] %t)
})";
  const Mesh mesh = MakeMesh({4, 2}, {"a", "b"});
  const PartitionResult result = PartitionChecked(text, {{"x", "(a, b)"}, {"y", "(a, b)"}}, mesh);
  ASSERT_NE(result.module, nullptr);
  EXPECT_TRUE(result.collectives.empty()) << ir::PrintModule(*result.module);
  EXPECT_EQ(CountOps(*result.module, Opcode::kPartitionId), 0);
}

TEST(CollectiveChoiceTest, MaximalValueReachesTheOtherDevicesByOneAllReduce) {
  const std::string text = R"(HloModule maximal, num_partitions=4
ENTRY %main (p: f32[4,6]) -> f32[4,6] {
  %p = f32[4,6] parameter(0), sharding={maximal device=2}
  ROOT %n = f32[4,6] negate(f32[4,6] %p), sharding={devices=[2,2]<=[4]}
})";
  const PartitionResult result = PartitionChecked(text, {}, MakeMesh({2, 2}, {}));
  ASSERT_NE(result.module, nullptr);
  ASSERT_EQ(result.collectives.size(), 1u) << ir::PrintModule(*result.module);
  EXPECT_EQ(result.collectives[0].kind, Opcode::kAllReduce);
  EXPECT_EQ(result.collectives[0].axes, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(result.result_shardings[0].dims, (std::vector<std::vector<int64_t>>{{0}, {1}}));
}

// The all-reduce that spreads a maximal value sums it with -0 from the other devices: negative
// zeros arrive as negative zeros.
TEST(CollectiveChoiceTest, MaximalValueKeepsNegativeZeros) {
  const Mesh mesh = MakeMesh({4}, {});
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      ir::ParseAndVerifyModule(R"(HloModule maximal, num_partitions=4
ENTRY %main (p: f32[4,6]) -> f32[4,6] {
  %p = f32[4,6] parameter(0), sharding={maximal device=2}
  ROOT %c = f32[4,6] copy(f32[4,6] %p), sharding={replicated}
})");
  ASSERT_TRUE(module.ok()) << module.status();
  const std::vector<ir::Literal> arguments = {
      ir::Literal::Create<float>(ir::DType::kF32, {4, 6}, std::vector<float>(24, -0.0f))};
  absl::StatusOr<EquivalenceOutcome> outcome =
      RunEquivalence(**module, mesh, 1, nullptr, &arguments);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  ASSERT_EQ(Count(outcome->partition, Opcode::kAllReduce), 1);
  for (int64_t e = 0; e < outcome->actual.ElementCount(); ++e) {
    EXPECT_TRUE(std::signbit(outcome->actual.Get<float>(e))) << "element " << e;
  }
}

// All collective-permutes of the partitioned entry, each as its sorted source_target_pairs.
std::vector<std::vector<std::pair<int64_t, int64_t>>> AllPermutePairs(
    const PartitionResult& result) {
  std::vector<std::vector<std::pair<int64_t, int64_t>>> all;
  for (const auto& instruction : result.module->entry()->instructions()) {
    if (instruction->opcode() != Opcode::kCollectivePermute) continue;
    std::vector<std::pair<int64_t, int64_t>> pairs = instruction->attributes().source_target_pairs;
    std::sort(pairs.begin(), pairs.end());
    all.push_back(pairs);
  }
  return all;
}

struct HaloGolden {
  std::string name;
  int64_t devices;
  std::string text;
  // One entry per collective-permute, in emission order; nothing else may be emitted.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> permutes;
  int64_t bytes_per_device;
};

void PrintTo(const HaloGolden& c, std::ostream* out) { *out << c.name; }

class HaloGoldenTest : public ::testing::TestWithParam<HaloGolden> {};

// Ops along a split dim move only boundary rows (issue 19), no more than GSPMD's partition; the
// hand computations are beside each case. Row i of a [R,3] f32 array is 12 bytes.
TEST_P(HaloGoldenTest, SendsOnlyTheBoundaryRows) {
  const HaloGolden& c = GetParam();
  const PartitionResult result = PartitionText(c.text, MakeMesh({c.devices}, {}));
  ASSERT_NE(result.module, nullptr);
  EXPECT_EQ(result.collectives.size(), c.permutes.size()) << ir::PrintModule(*result.module);
  EXPECT_EQ(Count(result, Opcode::kCollectivePermute), static_cast<int64_t>(c.permutes.size()));
  EXPECT_EQ(AllPermutePairs(result), c.permutes) << ir::PrintModule(*result.module);
  EXPECT_EQ(result.BytesPerDevice(), c.bytes_per_device);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HaloGoldenTest,
    ::testing::Values(
        // [6,40] rows split 4 ways: shards of 2 rows = 80 elements (device 3 holds padding);
        // [240] split 4 ways wants 60 per device. Device k wants flat [60k, 60k+60) and holds
        // [80k, 80k+80): devices 1..3 take [60k, 80k) from device k-1, at most 60 elements
        // (device 3's window lies wholly in device 2's shard, so no partition sends less).
        // One permute of the 60-element suffix [20,80) of each shard = 240 bytes; the
        // all-gather fallback sent 3 x 80 x 4 = 960 (GSPMD's ReshapeWithHalo sends the same
        // left halo of max_k 20k = 60 elements).
        HaloGolden{"reshape_merge_uneven",
                   4,
                   R"(HloModule r, num_partitions=4
ENTRY %main (x: f32[6,40]) -> f32[240] {
  %x = f32[6,40] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT %y = f32[240] reshape(f32[6,40] %x), sharding={devices=[4]<=[4]}
})",
                   {{{0, 1}, {1, 2}, {2, 3}}},
                   240},
        // The issue's example: [7,40] split 4 (2 rows = flat [80k, 80k+80), device 3 only
        // 40 of them) merged into [280] split 4 (flat [70k, 70k+70)): device k lacks the 10k
        // elements [70k, 80k) at the end of shard k-1. One permute of the 30-element suffix
        // [50,80) = 120 bytes, XLA's left halo of max_k 10k = 30 elements; gathering sent
        // 3 x 80 x 4 = 960.
        HaloGolden{"reshape_merge_issue_example",
                   4,
                   R"(HloModule r, num_partitions=4
ENTRY %main (x: f32[7,40]) -> f32[280] {
  %x = f32[7,40] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT %y = f32[280] reshape(f32[7,40] %x), sharding={devices=[4]<=[4]}
})",
                   {{{0, 1}, {1, 2}, {2, 3}}},
                   120},
        // Its inverse: [280] split 4 (flat [70k, 70k+70)) split into [7,40] split 4 (flat
        // [80k, 80k+80)): device k lacks [70k+70, 80k+80) within [0,280), 10, 20 and 30 elements at
        // the start of shard k+1 (device 3 none). One permute of a 30-element prefix = 120.
        HaloGolden{"reshape_split_issue_example",
                   4,
                   R"(HloModule r, num_partitions=4
ENTRY %main (x: f32[280]) -> f32[7,40] {
  %x = f32[280] parameter(0), sharding={devices=[4]<=[4]}
  ROOT %y = f32[7,40] reshape(f32[280] %x), sharding={devices=[4,1]<=[4]}
})",
                   {{{1, 0}, {2, 1}, {3, 2}}},
                   120},
        // [6,10] split 2: 3 rows = flat [0,30) and [30,60); [4,15] split 2: 2 rows = flat
        // [0,30) and [30,60). The shards line up: nothing moves (the rule's factors 6 vs 4 do
        // not divide, so it gathered 30 x 4 = 120 bytes).
        HaloGolden{"reshape_lined_up",
                   2,
                   R"(HloModule r, num_partitions=2
ENTRY %main (x: f32[6,10]) -> f32[4,15] {
  %x = f32[6,10] parameter(0), sharding={devices=[2,1]<=[2]}
  ROOT %y = f32[4,15] reshape(f32[6,10] %x), sharding={devices=[2,1]<=[2]}
})",
                   {},
                   0},
        // The issue's lined-up reshape: [12,40] split 4 holds flat [120k, 120k+120) (3 rows of
        // 40), [8,60] split 4 wants flat [120k, 120k+120) (2 rows of 60): nothing moves, where
        // the rule (12 and 8 do not divide each other) gathered 3 x 120 x 4 = 1,440 bytes.
        HaloGolden{"reshape_lined_up_4",
                   4,
                   R"(HloModule r, num_partitions=4
ENTRY %main (x: f32[12,40]) -> f32[8,60] {
  %x = f32[12,40] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT %y = f32[8,60] reshape(f32[12,40] %x), sharding={devices=[4,1]<=[4]}
})",
                   {},
                   0},
        // [16,3] split 4 holds rows [4k, 4k+4); the slice [1:15] split 4 wants rows
        // [1+4k, 5+4k) (device 3: [13,15)). Devices 0..2 lack one row, the first of device
        // k+1: one permute of 1 row = 12 bytes (GSPMD: right halo of 1 row).
        HaloGolden{"slice_by_one",
                   4,
                   R"(HloModule s, num_partitions=4
ENTRY %main (x: f32[16,3]) -> f32[14,3] {
  %x = f32[16,3] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT %y = f32[14,3] slice(f32[16,3] %x), slice={[1:15], [0:3]}, sharding={devices=[4,1]<=[4]}
})",
                   {{{1, 0}, {2, 1}, {3, 2}}},
                   12},
        // pad 1_1 of [16,3] split 4 (rows [4k, 4k+4)) gives [18,3] split 4 wanting rows
        // [5k-1, 5k+4) of x (device 3: [14,17), of which [14,16) exist). Device 1 lacks row 8,
        // device 2 rows 12..13, both the start of the next shard; devices 0 and 3 have all
        // they need. One permute of a 2-row prefix = 24 bytes (GSPMD's right halo is
        // max_k k = 3 rows, clipped to what exists).
        HaloGolden{"pad_one_each_side",
                   4,
                   R"(HloModule p, num_partitions=4
ENTRY %main (x: f32[16,3]) -> f32[18,3] {
  %x = f32[16,3] parameter(0), sharding={devices=[4,1]<=[4]}
  %z = f32[] constant(0)
  ROOT %y = f32[18,3] pad(f32[16,3] %x, f32[] %z), padding=1_1x0_0, sharding={devices=[4,1]<=[4]}
})",
                   {{{2, 1}, {3, 2}}},
                   24},
        // reverse of [16,3] split 4: result shard k is x's shard 3-k reversed: one permute of
        // the 4-row shard (48 bytes), as GSPMD (all-gather fallback: 3 x 48 = 144).
        HaloGolden{"reverse_even",
                   4,
                   R"(HloModule v, num_partitions=4
ENTRY %main (x: f32[16,3]) -> f32[16,3] {
  %x = f32[16,3] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT %y = f32[16,3] reverse(f32[16,3] %x), dimensions={0}, sharding={devices=[4,1]<=[4]}
})",
                   {{{0, 3}, {1, 2}, {2, 1}, {3, 0}}},
                   48},
        // concatenate of a, b f32[8,3] split 4 (2 rows each) into [16,3] split 4 (4 rows):
        // device 0 wants a's shards 0,1, device 1 a's 2,3, device 2 b's 0,1, device 3 b's 2,3.
        // Per operand and neighbour distance one permute of a 2-row shard: a from distance 1
        // (1->0, 2->1) and 2 (3->1), b from distance -2 (0->2) and -1 (1->2, 2->3): 4 x 24 =
        // 96 bytes. The fallback gathered both (2 x 3 x 24 = 144); GSPMD's sharded-dim
        // concatenate all-reduces the padded result (2 x 3/4 x 192 = 288).
        HaloGolden{"concatenate_halves",
                   4,
                   R"(HloModule c, num_partitions=4
ENTRY %main (a: f32[8,3], b: f32[8,3]) -> f32[16,3] {
  %a = f32[8,3] parameter(0), sharding={devices=[4,1]<=[4]}
  %b = f32[8,3] parameter(1), sharding={devices=[4,1]<=[4]}
  ROOT %y = f32[16,3] concatenate(f32[8,3] %a, f32[8,3] %b), dimensions={0}, sharding={devices=[4,1]<=[4]}
})",
                   {{{1, 0}, {2, 1}}, {{3, 1}}, {{0, 2}}, {{1, 2}, {2, 3}}},
                   96},
        // Strided slice [1:15:2] of [16,3] split 4 (rows [4k, 4k+4)): [7,3] split 4 wants result
        // rows 2k, 2k+1 = operand rows 4k+1, 4k+3, all in the device's own shard: nothing moves
        // (GSPMD's windowed input [4k+1, 4k+4) has no halo). Gathering sent 3 x 48 = 144.
        HaloGolden{"strided_slice_in_place",
                   4,
                   R"(HloModule s, num_partitions=4
ENTRY %main (x: f32[16,3]) -> f32[7,3] {
  %x = f32[16,3] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT %y = f32[7,3] slice(f32[16,3] %x), slice={[1:15:2], [0:3]}, sharding={devices=[4,1]<=[4]}
})",
                   {},
                   0},
        // [1:16:3] of the same: [5,3] split 4 (2 rows each) wants operand rows 6k+1, 6k+4: the
        // windows [1,5), [7,11), [13,14) reach into the next shard by 1, 3 and 1 rows. One
        // permute of a 3-row prefix = 36 bytes, GSPMD's right halo (max_k 6k+5 - 4(k+1) = 3
        // rows; the rows between the strided ones travel too). Gathering sent 144.
        HaloGolden{"strided_slice_by_three",
                   4,
                   R"(HloModule s, num_partitions=4
ENTRY %main (x: f32[16,3]) -> f32[5,3] {
  %x = f32[16,3] parameter(0), sharding={devices=[4,1]<=[4]}
  ROOT %y = f32[5,3] slice(f32[16,3] %x), slice={[1:16:3], [0:3]}, sharding={devices=[4,1]<=[4]}
})",
                   {{{1, 0}, {2, 1}, {3, 2}}},
                   36},
        // Interior padding 0_0_1 of [8,3] split 4 (rows [2k, 2k+2)): [15,3] split 4 (4 rows)
        // shows operand rows 2k and 2k+1 at 4k and 4k+2: each device spreads its own rows,
        // nothing moves (as GSPMD). Gathering sent 3 x 24 = 72.
        HaloGolden{"interior_pad_in_place",
                   4,
                   R"(HloModule p, num_partitions=4
ENTRY %main (x: f32[8,3]) -> f32[15,3] {
  %x = f32[8,3] parameter(0), sharding={devices=[4,1]<=[4]}
  %z = f32[] constant(0)
  ROOT %y = f32[15,3] pad(f32[8,3] %x, f32[] %z), padding=0_0_1x0_0, sharding={devices=[4,1]<=[4]}
})",
                   {},
                   0},
        // [6,3] split 4 holds rows [0,2), [2,4), [4,6) and nothing on device 3; padding 0_0_1
        // gives [11,3] split 4 (3 rows), showing operand rows [0,2), [2,3), [3,5), [5,6).
        // Devices 2 and 3 lack the last row of the previous shard: one permute of 1 row = 12
        // bytes (GSPMD's left halo, max_k 2k - ceil(3k/2) = 1 row). Gathering sent 72.
        HaloGolden{"interior_pad_uneven",
                   4,
                   R"(HloModule p, num_partitions=4
ENTRY %main (x: f32[6,3]) -> f32[11,3] {
  %x = f32[6,3] parameter(0), sharding={devices=[4,1]<=[4]}
  %z = f32[] constant(0)
  ROOT %y = f32[11,3] pad(f32[6,3] %x, f32[] %z), padding=0_0_1x0_0, sharding={devices=[4,1]<=[4]}
})",
                   {{{1, 2}, {2, 3}}},
                   12},
        // dynamic-slice at the constant start 1, 14 rows: the slice [1:15] (slice_by_one), one
        // permute of 1 row = 12 bytes, where gathering sent 144.
        HaloGolden{"dynamic_slice_constant_start",
                   4,
                   R"(HloModule d, num_partitions=4
ENTRY %main (x: f32[16,3]) -> f32[14,3] {
  %x = f32[16,3] parameter(0), sharding={devices=[4,1]<=[4]}
  %i = s32[] constant(1)
  %z = s32[] constant(0)
  ROOT %y = f32[14,3] dynamic-slice(f32[16,3] %x, s32[] %i, s32[] %z), dynamic_slice_sizes={14,3}, sharding={devices=[4,1]<=[4]}
})",
                   {{{1, 0}, {2, 1}, {3, 2}}},
                   12}),
    [](const ::testing::TestParamInfo<HaloGolden>& param) { return param.param.name; });

// dynamic-slice of a split dim at a start known only at run time. XLA's HandleDynamicSlice
// replicates the dim: an all-gather of 3 x 48 = 144 bytes for [16,3] split 4. Each device can
// instead slice what it holds of the window, zero the rest, and all-reduce the window: for two
// rows (24 bytes) that is 2 x 3/4 x 24 = 36 bytes, and the partitioner takes it. For twelve rows
// the all-reduce (2 x 3/4 x 144 = 216) costs more than the gather, which it keeps.
TEST(CollectiveChoiceTest, DynamicSliceAtARunTimeStartMovesTheWindowOrTheOperand) {
  const auto text = [](int64_t rows) {
    return fmt::format(R"(HloModule d, num_partitions=4
ENTRY %main (x: f32[16,3], i: s32[]) -> f32[{0},3] {{
  %x = f32[16,3] parameter(0), sharding={{devices=[4,1]<=[4]}}
  %i = s32[] parameter(1), sharding={{replicated}}
  %z = s32[] constant(0)
  ROOT %y = f32[{0},3] dynamic-slice(f32[16,3] %x, s32[] %i, s32[] %z), dynamic_slice_sizes={{{0},3}}, sharding={{replicated}}
}})",
                       rows);
  };
  const PartitionResult window = PartitionText(text(2), MakeMesh({4}, {}));
  ASSERT_NE(window.module, nullptr);
  ASSERT_EQ(window.collectives.size(), 1u) << ir::PrintModule(*window.module);
  EXPECT_EQ(window.collectives[0].kind, Opcode::kAllReduce);
  EXPECT_EQ(window.BytesPerDevice(), 36);
  const PartitionResult operand = PartitionText(text(12), MakeMesh({4}, {}));
  ASSERT_NE(operand.module, nullptr);
  ASSERT_EQ(operand.collectives.size(), 1u) << ir::PrintModule(*operand.module);
  EXPECT_EQ(operand.collectives[0].kind, Opcode::kAllGather);
  EXPECT_EQ(operand.BytesPerDevice(), 144);
}

// dynamic-update-slice of a split dim, f32[16,3] on 4 devices (shards of 4 rows, 48 bytes).
// XLA's HandleDynamicUpdateSlice keeps the split only for a constant start whose update lies in
// one shard (and one-row updates); otherwise it gathers the operand, 3 x 48 = 144 bytes. Here
// each device writes the rows that land in its shard: nothing moves for six rows at the constant
// start 5 (rows 5..10 straddle three shards) or at a run-time start. An update that arrives split
// on that dim is gathered as GSPMD replicates it: f32[8,3] split 4 ways, 3 x 24 = 72 bytes.
TEST(CollectiveChoiceTest, DynamicUpdateSliceOfASplitDimMovesOnlyASplitUpdate) {
  const auto text = [](const std::string& start, int64_t rows, const std::string& update) {
    return fmt::format(R"(HloModule d, num_partitions=4
ENTRY %main (x: f32[16,3], u: f32[{1},3], i: s32[]) -> f32[16,3] {{
  %x = f32[16,3] parameter(0), sharding={{devices=[4,1]<=[4]}}
  %u = f32[{1},3] parameter(1), sharding={2}
  %i = s32[] parameter(2), sharding={{replicated}}
  %c = s32[] constant(5)
  %z = s32[] constant(0)
  ROOT %y = f32[16,3] dynamic-update-slice(f32[16,3] %x, f32[{1},3] %u, s32[] {0}, s32[] %z), sharding={{devices=[4,1]<=[4]}}
}})",
                       start, rows, update);
  };
  for (const std::string start : {"%c", "%i"}) {
    const PartitionResult result = PartitionText(text(start, 6, "{replicated}"), MakeMesh({4}, {}));
    ASSERT_NE(result.module, nullptr);
    EXPECT_TRUE(result.collectives.empty()) << ir::PrintModule(*result.module);
    EXPECT_EQ(result.BytesPerDevice(), 0);
    EXPECT_TRUE(result.fallbacks.empty());
  }
  const PartitionResult split =
      PartitionText(text("%i", 8, "{devices=[4,1]<=[4]}"), MakeMesh({4}, {}));
  ASSERT_NE(split.module, nullptr);
  ASSERT_EQ(split.collectives.size(), 1u) << ir::PrintModule(*split.module);
  EXPECT_EQ(split.collectives[0].kind, Opcode::kAllGather);
  EXPECT_EQ(split.BytesPerDevice(), 72);
}

// dynamic-slice of f32[16,12] split 2x2 (shards [8,6], 192 bytes) at a constant row and a
// run-time column: XLA's HandleDynamicSlice gathers every split dim the window cuts once any start
// is not constant (3 x 192 = 576 bytes per device); gathering only the constant dim sent 192 plus
// an all-reduce of the 2x3 window over the other axis (2 x 1/2 x 24 = 24). Masking both dims
// sums the window over all four devices: 2 x 3/4 x 24 = 36 bytes.
TEST(CollectiveChoiceTest, DynamicSliceAtConstantAndRunTimeStartsMovesTheWindow) {
  const PartitionResult result = PartitionText(R"(HloModule d, num_partitions=4
ENTRY %main (x: f32[16,12], j: s32[]) -> f32[2,3] {
  %x = f32[16,12] parameter(0), sharding={devices=[2,2]<=[4]}
  %j = s32[] parameter(1), sharding={replicated}
  %c = s32[] constant(5)
  ROOT %y = f32[2,3] dynamic-slice(f32[16,12] %x, s32[] %c, s32[] %j), dynamic_slice_sizes={2,3}, sharding={replicated}
})",
                                               MakeMesh({2, 2}, {}));
  ASSERT_NE(result.module, nullptr);
  ASSERT_EQ(result.collectives.size(), 1u) << ir::PrintModule(*result.module);
  EXPECT_EQ(result.collectives[0].kind, Opcode::kAllReduce);
  EXPECT_EQ(result.BytesPerDevice(), 36);
}

// A lax.scan (JAX's dump, unrolled by its known trip count) over xs f32[5,8] split along the
// scanned dim over T devices: every step reads one row (32 bytes) that one device holds. Hand
// computed: each device slices the row if it holds it, zeroes it otherwise, and one all-reduce
// sums it, 2 (T-1)/T x 32 bytes: 32 on 2 devices, 48 on 4, for each of the 5 steps. Before,
// the first step (whose index is the constant 0 once unrolled) kept the row split over T shards
// and gathered them ((T-1) x 32: 96 bytes on 4 devices); XLA's HandleDynamicSlice gathers the
// whole of xs in every step ((T-1) x 2 x 32 = 192 bytes on 4 devices).
TEST(CollectiveChoiceTest, ScanReadsEachRowOfItsSplitXsByOneAllReduce) {
  const auto text = [](int64_t devices) {
    return fmt::format(R"(HloModule jit_scan, num_partitions={0}

%region_0.body (arg_tuple.8: (s32[], f32[8], f32[5,8], f32[5,8])) -> (s32[], f32[8], f32[5,8], f32[5,8]) {{
  %arg_tuple.8 = (s32[], f32[8]{{0}}, f32[5,8]{{1,0}}, f32[5,8]{{1,0}}) parameter(0)
  %get-tuple-element.9 = s32[] get-tuple-element(%arg_tuple.8), index=0
  %constant.13 = s32[] constant(1)
  %add.14 = s32[] add(%get-tuple-element.9, %constant.13)
  %get-tuple-element.10 = f32[8]{{0}} get-tuple-element(%arg_tuple.8), index=1
  %get-tuple-element.11 = f32[5,8]{{1,0}} get-tuple-element(%arg_tuple.8), index=2
  %constant.15 = s32[] constant(0)
  %dynamic-slice.16 = f32[1,8]{{1,0}} dynamic-slice(%get-tuple-element.11, %get-tuple-element.9, %constant.15), dynamic_slice_sizes={{1,8}}
  %reshape.17 = f32[8]{{0}} reshape(%dynamic-slice.16)
  %constant.18 = f32[] constant(0.5)
  %broadcast.19 = f32[8]{{0}} broadcast(%constant.18), dimensions={{}}
  %multiply.20 = f32[8]{{0}} multiply(%get-tuple-element.10, %broadcast.19)
  %add.21 = f32[8]{{0}} add(%multiply.20, %reshape.17)
  %get-tuple-element.12 = f32[5,8]{{1,0}} get-tuple-element(%arg_tuple.8), index=3
  %reshape.22 = f32[1,8]{{1,0}} reshape(%add.21)
  %dynamic-update-slice.23 = f32[5,8]{{1,0}} dynamic-update-slice(%get-tuple-element.12, %reshape.22, %get-tuple-element.9, %constant.15)
  ROOT %tuple.24 = (s32[], f32[8]{{0}}, f32[5,8]{{1,0}}, f32[5,8]{{1,0}}) tuple(%add.14, %add.21, %get-tuple-element.11, %dynamic-update-slice.23)
}}

%region_1.cond (arg_tuple.26: (s32[], f32[8], f32[5,8], f32[5,8])) -> pred[] {{
  %arg_tuple.26 = (s32[], f32[8]{{0}}, f32[5,8]{{1,0}}, f32[5,8]{{1,0}}) parameter(0)
  %get-tuple-element.27 = s32[] get-tuple-element(%arg_tuple.26), index=0
  %constant.31 = s32[] constant(5)
  ROOT %compare.32 = pred[] compare(%get-tuple-element.27, %constant.31), direction=LT
}}

ENTRY %main.40 (Arg_0.1: f32[8], Arg_1.2: f32[5,8]) -> (f32[8], f32[5,8]) {{
  %constant.7 = s32[] constant(0)
  %Arg_0.1 = f32[8]{{0}} parameter(0), sharding={{replicated}}
  %Arg_1.2 = f32[5,8]{{1,0}} parameter(1), sharding={{devices=[{0},1]<=[{0}]}}
  %constant.33 = f32[] constant(0)
  %broadcast.34 = f32[5,8]{{1,0}} broadcast(%constant.33), dimensions={{}}
  %tuple.35 = (s32[], f32[8]{{0}}, f32[5,8]{{1,0}}, f32[5,8]{{1,0}}) tuple(%constant.7, %Arg_0.1, %Arg_1.2, %broadcast.34)
  %while.36 = (s32[], f32[8]{{0}}, f32[5,8]{{1,0}}, f32[5,8]{{1,0}}) while(%tuple.35), condition=%region_1.cond, body=%region_0.body, backend_config={{"known_trip_count":{{"n":"5"}}}}
  %get-tuple-element.37 = f32[8]{{0}} get-tuple-element(%while.36), index=1
  %get-tuple-element.38 = f32[5,8]{{1,0}} get-tuple-element(%while.36), index=3
  ROOT %tuple.39 = (f32[8]{{0}}, f32[5,8]{{1,0}}) tuple(%get-tuple-element.37, %get-tuple-element.38)
}})",
                       devices);
  };
  for (const auto& [devices, row_bytes] : {std::pair{2, 32}, std::pair{4, 48}}) {
    SCOPED_TRACE(devices);
    const PartitionResult result = PartitionText(text(devices), MakeMesh({devices}, {}));
    ASSERT_NE(result.module, nullptr);
    EXPECT_EQ(result.collectives.size(), 5u) << ir::PrintModule(*result.module);
    EXPECT_EQ(Count(result, Opcode::kAllReduce), 5) << ir::PrintModule(*result.module);
    for (const CollectiveRecord& record : result.collectives) {
      EXPECT_EQ(record.bytes_per_device, row_bytes) << record.instruction;
    }
    EXPECT_EQ(result.BytesPerDevice(), 5 * row_bytes);
    EXPECT_TRUE(result.fallbacks.empty());
  }
}

// A dynamic-slice at constant starts whose window is one element long on one dim but longer on
// the split one stays a static slice: f32[16,8] split by columns over 2 devices (cols 0..3 and
// 4..7), the window [3, 2:6] of sizes {1,4}. Hand computed: the result f32[1,4] split by columns
// takes cols 2,3 on device 0 and 4,5 on device 1, which each already holds: no collective, the
// result left split. Masking the whole window (as for a window one element long on every dim it
// cuts) would sum the [1,4] row by an all-reduce of 2 x 1/2 x 16 = 16 bytes per device.
TEST(CollectiveChoiceTest, ConstantWindowLongerThanOneOnItsSplitDimMovesNothing) {
  const PartitionResult result = PartitionText(R"(HloModule m, num_partitions=2
ENTRY %main (x: f32[16,8]) -> f32[1,4] {
  %x = f32[16,8] parameter(0), sharding={devices=[1,2]<=[2]}
  %row = s32[] constant(3)
  %column = s32[] constant(2)
  ROOT %y = f32[1,4] dynamic-slice(f32[16,8] %x, s32[] %row, s32[] %column), dynamic_slice_sizes={1,4}
})",
                                               MakeMesh({2}, {}));
  ASSERT_NE(result.module, nullptr);
  EXPECT_TRUE(result.collectives.empty()) << ir::PrintModule(*result.module);
  EXPECT_EQ(result.BytesPerDevice(), 0);
  EXPECT_TRUE(result.fallbacks.empty());
  ASSERT_EQ(result.result_shardings.size(), 1u);
  EXPECT_EQ(result.result_shardings[0].dims, (std::vector<std::vector<int64_t>>{{}, {0}}));
}

struct ReshardCase {
  std::string name;
  std::vector<int64_t> mesh;
  std::vector<int64_t> shape;
  std::string from, to;
  std::vector<Opcode> collectives;  // in emission order
};

void PrintTo(const ReshardCase& c, std::ostream* out) { *out << c.name; }

class ReshardTest : public ::testing::TestWithParam<ReshardCase> {};

// p (sharded `from`) -> Sharding custom-call (`to`) -> negate: the custom-call's reshard uses
// exactly the expected collectives, and the values survive.
TEST_P(ReshardTest, UsesTheCheapestCollectives) {
  const ReshardCase& c = GetParam();
  const std::string shape = fmt::format("f32[{}]", absl::StrJoin(c.shape, ","));
  const std::string text = fmt::format(
      "HloModule reshard\nENTRY %main (p: {0}) -> {0} {{\n  %p = {0} parameter(0)\n"
      "  %r = {0} custom-call({0} %p), custom_call_target=\"Sharding\"\n"
      "  ROOT %n = {0} negate({0} %r)\n}}\n",
      shape);
  const Mesh mesh = *Mesh::Create(c.mesh, {}, {});
  const PartitionResult result = PartitionChecked(text, {{"p", c.from}, {"r", c.to}}, mesh);
  ASSERT_NE(result.module, nullptr);
  std::vector<Opcode> kinds;
  for (const CollectiveRecord& record : result.collectives) kinds.push_back(record.kind);
  EXPECT_EQ(kinds, c.collectives) << ir::PrintModule(*result.module);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, ReshardTest,
    ::testing::Values(
        ReshardCase{"tiled_dim_moves", {4}, {8, 8}, "(0, None)", "(None, 0)", {Opcode::kAllToAll}},
        ReshardCase{
            "uneven_tiled_dim_moves", {2}, {5, 7}, "(0, None)", "(None, 0)", {Opcode::kAllToAll}},
        ReshardCase{"device_order_changes",
                    {2, 2},
                    {8, 8},
                    "(0, 1)",
                    "(1, 0)",
                    {Opcode::kCollectivePermute}},
        ReshardCase{
            "to_replicated", {4}, {6, 8}, "(0, None)", "(None, None)", {Opcode::kAllGather}},
        ReshardCase{
            "uneven_to_replicated", {4}, {7, 3}, "(0, None)", "(None, None)", {Opcode::kAllGather}},
        ReshardCase{"replicated_to_tiled", {2, 2}, {7, 5}, "(None, None)", "(0, 1)", {}},
        ReshardCase{"partial_to_finer", {2, 2}, {8, 8}, "(0, None)", "((0, 1), None)", {}},
        ReshardCase{"finer_to_partial",
                    {2, 2},
                    {8, 8},
                    "((0, 1), None)",
                    "(0, None)",
                    {Opcode::kAllGather}},
        // Device (a0,a1) holds rows a0 x columns a1 (4x4) and needs rows a1 whole: as GSPMD
        // coarsens (ReshardToPartialReplicateWithAllGather), one collective-permute of the 64 B
        // tiles to (1, 0) (devices 1 and 2 swap), then an all-gather of the columns over axis 0,
        // 64 B: 128 B per device, what device 1 lacks. Gathering both dims and slicing sent 192.
        ReshardCase{"permute_then_gather",
                    {2, 2},
                    {8, 8},
                    "(0, 1)",
                    "(1, None)",
                    {Opcode::kCollectivePermute, Opcode::kAllGather}},
        ReshardCase{"same_sharding", {2, 3}, {5, 5}, "(1, 0)", "(1, 0)", {}}),
    [](const ::testing::TestParamInfo<ReshardCase>& param) { return param.param.name; });

}  // namespace

}  // namespace vkspmd::spmd::testing
