// Partitioned gather and scatter (issue 19) on the CPU reference: each sharding runs on 2, 4 and
// 2x2 emulated devices and must equal the unpartitioned evaluation, with the collectives GSPMD
// uses (a vocabulary-sharded embedding: a masked local gather and one all-reduce; an operand
// split on a dim the op leaves whole, or indices split on their batch dim: none).
#include <cmath>
#include <fstream>
#include <iterator>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "src/ir/printer.h"
#include "tests/spmd/spmd_test_util.h"

namespace vkspmd::spmd::testing {
namespace {

using ir::Opcode;

// ids spread over -5..13 (random arguments are in -3..3): out of range on both sides, and on
// every device's rows of an 11-row table.
constexpr char kEmbedding[] = R"(HloModule embedding
ENTRY %main (table: f32[11,6], ids: s32[7]) -> f32[7,6] {
  %table = f32[11,6] parameter(0)
  %ids = s32[7] parameter(1)
  %three = s32[] constant(3)
  %four = s32[] constant(4)
  %threes = s32[7] broadcast(%three), dimensions={}
  %fours = s32[7] broadcast(%four), dimensions={}
  %scaled = s32[7] multiply(%ids, %threes)
  %spread = s32[7] add(%scaled, %fours)
  %rows = s32[7,1] reshape(%spread)
  ROOT %embedded = f32[7,6] gather(%table, %rows), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,6}
})";

// x.at[i].add(v) with i spread as above: duplicates add, -5, -2 and 13 are dropped.
constexpr char kScatterAdd[] = R"(HloModule scatter_add
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}
ENTRY %main (x: f32[11,6], ids: s32[8], v: f32[8,6]) -> f32[11,6] {
  %x = f32[11,6] parameter(0)
  %ids = s32[8] parameter(1)
  %v = f32[8,6] parameter(2)
  %three = s32[] constant(3)
  %four = s32[] constant(4)
  %threes = s32[8] broadcast(%three), dimensions={}
  %fours = s32[8] broadcast(%four), dimensions={}
  %scaled = s32[8] multiply(%ids, %threes)
  %spread = s32[8] add(%scaled, %fours)
  %rows = s32[8,1] reshape(%spread)
  ROOT %updated = f32[11,6] scatter(%x, %rows, %v), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
})";

// Per-example row lookups with batching dims (operand_batching_dims), and 2-D windows.
constexpr char kBatchedGather[] = R"(HloModule batched
ENTRY %main (operand: f32[4,7,5], ids: s32[4,3,1]) -> f32[4,3,5] {
  %operand = f32[4,7,5] parameter(0)
  %ids = s32[4,3,1] parameter(1)
  %two = s32[] constant(2)
  %twos = s32[4,3,1] broadcast(%two), dimensions={}
  %spread = s32[4,3,1] multiply(%ids, %twos)
  ROOT %rows = f32[4,3,5] gather(%operand, %spread), offset_dims={2}, collapsed_slice_dims={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, start_index_map={1}, index_vector_dim=2, slice_sizes={1,1,5}
})";

constexpr char kWindows[] = R"(HloModule windows
%assign (old: s32[], new: s32[]) -> s32[] {
  %old = s32[] parameter(0)
  ROOT %new = s32[] parameter(1)
}
ENTRY %main (target: s32[9,6], corners: s32[3,2], patches: s32[3,2,3]) -> s32[9,6] {
  %target = s32[9,6] parameter(0)
  %corners = s32[3,2] parameter(1)
  %patches = s32[3,2,3] parameter(2)
  %two = s32[] constant(2)
  %twos = s32[3,2] broadcast(%two), dimensions={}
  %spread = s32[3,2] multiply(%corners, %twos)
  ROOT %scattered = s32[9,6] scatter(%target, %spread, %patches), update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=%assign
})";

// JAX's argsort per row (tests/testdata/sort_argsort.hlo): keys and an iota sorted by the keys.
std::string ArgsortText() {
  std::ifstream file(std::string(VKSPMD_TESTDATA_DIR) + "/sort_argsort.hlo");
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

Mesh MakeMesh(std::vector<int64_t> shape) {
  absl::StatusOr<Mesh> mesh = Mesh::Create(std::move(shape), {}, {});
  EXPECT_TRUE(mesh.ok()) << mesh.status();
  return *mesh;
}

int64_t Count(const PartitionResult& result, Opcode kind) {
  int64_t count = 0;
  for (const CollectiveRecord& record : result.collectives) count += record.kind == kind;
  return count;
}

// Partitions, runs on the mesh's emulated devices and compares with the unpartitioned program.
PartitionResult Checked(const std::string& text, const std::map<std::string, std::string>& specs,
                        const Mesh& mesh, uint64_t seed = 1) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = AnnotatedModule(text, specs, mesh);
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return {};
  absl::StatusOr<EquivalenceOutcome> outcome = RunEquivalence(**module, mesh, seed);
  EXPECT_TRUE(outcome.ok()) << outcome.status();
  if (!outcome.ok()) return {};
  EXPECT_LT(outcome->difference, 1e-6) << ir::PrintModule(*outcome->partition.module);
  return std::move(outcome->partition);
}

TEST(GatherScatterPartitionTest, VocabularyShardedEmbeddingIsAMaskedGatherAndOneAllReduce) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2}, {4}}) {
    SCOPED_TRACE(fmt::format("mesh of {}", shape[0]));
    for (uint64_t seed : {1, 2, 3}) {
      PartitionResult result = Checked(kEmbedding, {{"table", "(0, None)"}}, MakeMesh(shape), seed);
      EXPECT_EQ(Count(result, Opcode::kAllReduce), 1);
      EXPECT_EQ(Count(result, Opcode::kAllGather), 0) << "the table is never gathered";
    }
  }
}

// Rows another device holds add -0 to the all-reduce: a table of negative zeros gives negative
// zeros (x + -0 is x bit for bit; +0 would turn them positive).
TEST(GatherScatterPartitionTest, VocabularyShardedEmbeddingKeepsNegativeZeros) {
  const Mesh mesh = MakeMesh({4});
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      AnnotatedModule(kEmbedding, {{"table", "(0, None)"}}, mesh);
  ASSERT_TRUE(module.ok()) << module.status();
  std::vector<ir::Literal> arguments = RandomArguments(*(*module)->entry(), 1);
  arguments[0] =
      ir::Literal::Create<float>(ir::DType::kF32, {11, 6}, std::vector<float>(66, -0.0f));
  absl::StatusOr<EquivalenceOutcome> outcome =
      RunEquivalence(**module, mesh, 1, nullptr, &arguments);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  ASSERT_EQ(Count(outcome->partition, Opcode::kAllReduce), 1);
  for (int64_t e = 0; e < outcome->actual.ElementCount(); ++e) {
    EXPECT_TRUE(std::signbit(outcome->actual.Get<float>(e))) << "element " << e;
  }
}

TEST(GatherScatterPartitionTest, EmbeddingShardedOnItsRowsOrIdsNeedsNoCollective) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2}, {4}}) {
    SCOPED_TRACE(fmt::format("mesh of {}", shape[0]));
    PartitionResult by_columns = Checked(kEmbedding, {{"table", "(None, 0)"}}, MakeMesh(shape));
    EXPECT_TRUE(by_columns.collectives.empty());
    PartitionResult by_ids = Checked(kEmbedding, {{"ids", "(0,)"}}, MakeMesh(shape));
    EXPECT_TRUE(by_ids.collectives.empty());
  }
}

TEST(GatherScatterPartitionTest, EmbeddingOnATwoByTwoMesh) {
  const Mesh mesh = MakeMesh({2, 2});
  PartitionResult both = Checked(kEmbedding, {{"table", "(0, 1)"}}, mesh);
  EXPECT_EQ(Count(both, Opcode::kAllGather), 0);
  PartitionResult vocabulary_and_ids =
      Checked(kEmbedding, {{"table", "(0, None)"}, {"ids", "(1,)"}}, mesh);
  EXPECT_EQ(Count(vocabulary_and_ids, Opcode::kAllGather), 0);
}

TEST(GatherScatterPartitionTest, ScatterAddIntoARowShardedOperandNeedsNoCollective) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2}, {4}, {2, 2}}) {
    SCOPED_TRACE(fmt::format("mesh rank {} size {}", shape.size(), shape[0]));
    for (uint64_t seed : {1, 2}) {
      PartitionResult rows = Checked(kScatterAdd, {{"x", "(0, None)"}}, MakeMesh(shape), seed);
      EXPECT_TRUE(rows.collectives.empty());
    }
    PartitionResult columns = Checked(kScatterAdd, {{"x", "(None, 0)"}}, MakeMesh(shape));
    EXPECT_TRUE(columns.collectives.empty());
  }
}

TEST(GatherScatterPartitionTest, ScatterWithSplitUpdatesGathersThem) {
  // Scatter positions cannot stay split (each device would add only its own updates): the
  // updates are gathered, and the result still equals the unpartitioned one.
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2}, {4}}) {
    PartitionResult result =
        Checked(kScatterAdd, {{"v", "(0, None)"}, {"ids", "(0,)"}}, MakeMesh(shape));
    EXPECT_GE(Count(result, Opcode::kAllGather), 1);
  }
}

TEST(GatherScatterPartitionTest, BatchingDimsStaySplit) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2}, {4}}) {
    PartitionResult result =
        Checked(kBatchedGather, {{"operand", "(0, None, None)"}, {"ids", "(0, None, None)"}},
                MakeMesh(shape));
    EXPECT_TRUE(result.collectives.empty());
  }
}

TEST(GatherScatterPartitionTest, WindowsAcrossASplitDimFallBackToAWholeOperand) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2}, {4}, {2, 2}}) {
    for (uint64_t seed : {1, 2}) {
      Checked(kWindows, {{"target", "(0, None)"}}, MakeMesh(shape), seed);
    }
  }
}

TEST(GatherScatterPartitionTest, SortsRowsWhereTheyAreAndGathersASplitSortDim) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2}, {4}, {2, 2}}) {
    PartitionResult rows = Checked(ArgsortText(), {{"Arg_0.1", "(0, None)"}}, MakeMesh(shape));
    EXPECT_TRUE(rows.collectives.empty());
    PartitionResult columns = Checked(ArgsortText(), {{"Arg_0.1", "(None, 0)"}}, MakeMesh(shape));
    EXPECT_GE(Count(columns, Opcode::kAllGather), 1);
  }
}

}  // namespace
}  // namespace vkspmd::spmd::testing
