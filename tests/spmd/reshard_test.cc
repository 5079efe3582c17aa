// Resharding between every pair of shardings of a rank-2 tensor on small meshes (1-D, 2-D and
// 3-D, even and uneven dims): values survive (padding poisoned), the plan never sends more than
// gathering everything would, and it sends nothing when only slicing is needed.
#include "src/spmd/reshard.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <ostream>
#include <random>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/interp/evaluator.h"
#include "src/ir/parser.h"
#include "src/spmd/factor_sharding.h"
#include "src/spmd/partition_spec.h"
#include "src/spmd/spmd_builder.h"
#include "tests/spmd/spmd_test_util.h"

namespace vkspmd::spmd::testing {
namespace {

// Every axis sharding of a rank-2 tensor: each axis unused or on a dim, in every order.
std::vector<AxisSharding> AllShardings(const Mesh& mesh) {
  std::vector<AxisSharding> all;
  std::vector<int64_t> axes(mesh.axis_count());
  for (int64_t a = 0; a < mesh.axis_count(); ++a) axes[a] = a;
  std::vector<int64_t> choice(axes.size());
  do {
    std::function<void(size_t)> assign = [&](size_t next) {
      if (next == axes.size()) {
        AxisSharding sharding = AxisSharding::Replicated(2);
        for (size_t i = 0; i < axes.size(); ++i) {
          if (choice[i] < 2) sharding.dims[choice[i]].push_back(axes[i]);
        }
        if (std::find(all.begin(), all.end(), sharding) == all.end()) all.push_back(sharding);
        return;
      }
      for (int64_t d = 0; d <= 2; ++d) {
        choice[next] = d;
        assign(next + 1);
      }
    };
    assign(0);
  } while (std::next_permutation(axes.begin(), axes.end()));
  return all;
}

std::string SpecText(const AxisSharding& sharding) {
  std::vector<std::string> dims;
  for (const std::vector<int64_t>& axes : sharding.dims) {
    dims.push_back(axes.empty() ? "None" : fmt::format("({},)", absl::StrJoin(axes, ",")));
  }
  return fmt::format("({})", absl::StrJoin(dims, ", "));
}

class ReshardPairsTest : public ::testing::TestWithParam<std::vector<int64_t>> {};

TEST_P(ReshardPairsTest, EveryPairKeepsTheValues) {
  const Mesh mesh = *Mesh::Create(GetParam());
  const std::vector<AxisSharding> shardings = AllShardings(mesh);
  int64_t cases = 0;
  for (const auto& [rows, columns] : std::vector<std::pair<int64_t, int64_t>>{{8, 12}, {5, 7}}) {
    const ir::Shape shape(ir::DType::kF32, {rows, columns});
    const std::string text = fmt::format(
        "HloModule r\nENTRY %main (p: {0}) -> {0} {{\n  %p = {0} parameter(0)\n"
        "  %r = {0} custom-call({0} %p), custom_call_target=\"Sharding\"\n"
        "  ROOT %n = {0} negate({0} %r)\n}}\n",
        shape.ToString());
    for (const AxisSharding& from : shardings) {
      for (const AxisSharding& to : shardings) {
        const std::string name =
            fmt::format("{} {} -> {}", shape.ToString(), SpecText(from), SpecText(to));
        absl::StatusOr<std::unique_ptr<ir::Module>> module =
            AnnotatedModule(text, {{"p", SpecText(from)}, {"r", SpecText(to)}}, mesh);
        ASSERT_TRUE(module.ok()) << name << ": " << module.status();
        absl::StatusOr<EquivalenceOutcome> outcome = RunEquivalence(**module, mesh);
        ASSERT_TRUE(outcome.ok()) << name << ": " << outcome.status();
        EXPECT_EQ(outcome->difference, 0) << name;
        const int64_t bytes = ReshardBytes(shape, from, to, mesh);
        EXPECT_EQ(outcome->partition.BytesPerDevice(), bytes) << name;
        // Never worse than gathering everything and slicing.
        EXPECT_LE(bytes, ReshardBytes(shape, from, AxisSharding::Replicated(2), mesh)) << name;
        // Only slicing, with shard boundaries that line up (uneven ones need the dim whole).
        bool only_slicing = true;
        for (int64_t d = 0; d < 2; ++d) {
          only_slicing = only_slicing && IsPrefix(from.dims[d], to.dims[d]) &&
                         shape.dimension(d) % to.TilesOn(d, mesh) == 0;
        }
        if (only_slicing) {
          EXPECT_EQ(bytes, 0) << name;
        }
        ++cases;
      }
    }
  }
  RecordProperty("cases", static_cast<int>(cases));
}

INSTANTIATE_TEST_SUITE_P(Meshes, ReshardPairsTest,
                         ::testing::Values(std::vector<int64_t>{4}, std::vector<int64_t>{2, 2},
                                           std::vector<int64_t>{2, 3},
                                           std::vector<int64_t>{2, 2, 2}));

// A value split in the mesh's device order enters a partially manual region laid out in another
// order: on 2x2, the region's order 0,3,1,2 puts device 1 at coordinates (1,0), so rows split
// over axis 1 (device 1 holds the second half in the mesh's order) must move. As GSPMD reshards
// between tile assignments, one collective-permute hands devices 1 and 2 the halves the region
// gives them (1 <- 2, 2 <- 1; 0 and 3 keep theirs), and each device then holds its shard in the
// region's layout; a replicated value has nothing to move.
TEST(ReshardIntoPartiallyManualTest, MovesShardsIntoTheRegionsLayout) {
  const Mesh mesh = *Mesh::Create({2, 2});
  AxisSharding to = AxisSharding::Replicated(2);
  to.dims[0] = {1};
  to.manual_axes = {0};
  to.device_order = {0, 3, 1, 2};
  AxisSharding in_region_layout = to;
  in_region_layout.manual_axes.clear();
  const ir::Shape global(ir::DType::kF32, {8, 6});
  std::vector<float> values(48);
  for (int i = 0; i < 48; ++i) values[i] = static_cast<float>(i);
  const ir::Literal full = ir::Literal::Create<float>(ir::DType::kF32, {8, 6}, values);
  for (const bool split : {false, true}) {
    ir::Module module("m");
    module.set_partition_count(4);
    ir::ComputationBuilder computation("main", {1, 4});
    SpmdBuilder builder(computation, module, mesh);
    AxisSharding from = AxisSharding::Replicated(2);
    if (split) from.dims[0] = {1};
    ir::Instruction* local = computation.Parameter(0, ShardShape(global, from, mesh));
    const absl::StatusOr<PartitionedValue> entered =
        Reshard(builder, PartitionedValue{local, global, from}, to);
    ASSERT_TRUE(entered.ok()) << entered.status();
    EXPECT_EQ(entered->sharding, to);
    std::vector<std::string> collectives;
    for (const CollectiveRecord& record : builder.records()) {
      collectives.push_back(
          fmt::format("{} {}", ir::OpcodeName(record.kind), record.bytes_per_device));
    }
    if (!split) {
      EXPECT_THAT(collectives, ::testing::IsEmpty());
      continue;
    }
    EXPECT_THAT(collectives, ::testing::ElementsAre("collective-permute 96"));
    const ir::Instruction* permute = entered->local;
    ASSERT_EQ(permute->opcode(), ir::Opcode::kCollectivePermute);
    EXPECT_THAT(permute->attributes().source_target_pairs,
                ::testing::UnorderedElementsAre(
                    std::pair<int64_t, int64_t>{0, 0}, std::pair<int64_t, int64_t>{2, 1},
                    std::pair<int64_t, int64_t>{1, 2}, std::pair<int64_t, int64_t>{3, 3}));
    module.set_entry(module.AddComputation(computation.Build(entered->local)));
    std::vector<std::vector<ir::Literal>> arguments;
    for (int64_t device = 0; device < 4; ++device) {
      arguments.push_back({ShardOf(full, from, mesh, device)});
    }
    const absl::StatusOr<std::vector<ir::Literal>> shards =
        interp::EvaluateOnDevices(module, arguments);
    ASSERT_TRUE(shards.ok()) << shards.status();
    for (int64_t device = 0; device < 4; ++device) {
      const absl::StatusOr<double> difference =
          RelativeDifference((*shards)[device], ShardOf(full, in_region_layout, mesh, device));
      ASSERT_TRUE(difference.ok()) << difference.status();
      EXPECT_EQ(*difference, 0) << "device " << device;
    }
  }
}

// Issue 19: reshards across device orders (tile assignments that are not the mesh's order, as
// GSPMD users write them) that refine or coarsen the tiles, against hand-computed GSPMD
// partitions. GSPMD refines by slicing locally, then one collective-permute of the small pieces
// (spmd_partitioner.cc, ReshardFromPartialReplicateWithDynamicSlice), and coarsens by one
// collective-permute of the small tiles, then all-gathers (ReshardToPartialReplicateWithAllGather).
// Bytes are per device; "needs" is what the target gives a device and it does not hold.
struct GoldenCase {
  int64_t devices;
  std::string shape, from, to;
  std::vector<std::string> collectives;  // "kind bytes", in order
};

void PrintTo(const GoldenCase& c, std::ostream* os) {
  *os << c.devices << " devices " << c.shape << " " << c.from << " -> " << c.to;
}

class ReshardGoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(ReshardGoldenTest, SendsWhatGspmdSends) {
  const GoldenCase& c = GetParam();
  const std::string text = fmt::format(
      "HloModule g, num_partitions={0}\nENTRY %main (x: {1}) -> {1} {{\n"
      "  %x = {1} parameter(0), sharding={2}\n"
      "  %y = {1} custom-call({1} %x), custom_call_target=\"Sharding\", sharding={3}\n"
      "  ROOT %n = {1} negate({1} %y), sharding={3}\n}}\n",
      c.devices, c.shape, c.from, c.to);
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  const Mesh mesh = *Mesh::Create({c.devices});
  absl::StatusOr<EquivalenceOutcome> outcome = RunEquivalence(**module, mesh);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->difference, 0);
  std::vector<std::string> collectives;
  for (const CollectiveRecord& record : outcome->partition.collectives) {
    collectives.push_back(
        fmt::format("{} {}", ir::OpcodeName(record.kind), record.bytes_per_device));
  }
  EXPECT_EQ(collectives, c.collectives) << c.from << " -> " << c.to;
}

INSTANTIATE_TEST_SUITE_P(
    Issue19, ReshardGoldenTest,
    ::testing::Values(
        // Devices 1,3 hold rows 0..3 and 0,2 rows 4..7 (all columns); the target gives device 0
        // rows 0..3 x columns 0..1, 2 rows 0..3 x 2..3, 1 rows 4..7 x 0..1, 3 rows 4..7 x 2..3: no
        // device holds any of its rows, so each receives its 4x2 floats = 32 B, the least possible.
        // Slicing first sends those 32 B (device 1 slices columns 0..1 for device 0); permuting the
        // 4x4 tiles first would send 64 B (the mesh-order plan: permute, all-gather: 128 B).
        GoldenCase{4,
                   "f32[8,4]",
                   "{devices=[2,1,2]1,3,0,2 last_tile_dim_replicate}",
                   "{devices=[2,2]0,2,1,3}",
                   {"collective-permute 32"}},
        // Back: each device holds 4x2 floats and needs the 4x4 rows it lacks (64 B): permute its
        // 32 B into the target's layout, then all-gather the other column half, (2-1) x 32 B.
        GoldenCase{4,
                   "f32[8,4]",
                   "{devices=[2,2]0,2,1,3}",
                   "{devices=[2,1,2]1,3,0,2 last_tile_dim_replicate}",
                   {"collective-permute 32", "all-gather 32"}},
        // Uneven: rows split 2 ways are 4 long (the second shard 3 rows and one of padding),
        // columns 5 split 2 ways are 3 long: the pieces are 4x3 floats = 48 B.
        GoldenCase{4,
                   "f32[7,5]",
                   "{devices=[2,1,2]1,3,0,2 last_tile_dim_replicate}",
                   "{devices=[2,2]0,2,1,3}",
                   {"collective-permute 48"}},
        GoldenCase{4,
                   "f32[7,5]",
                   "{devices=[2,2]0,2,1,3}",
                   "{devices=[2,1,2]1,3,0,2 last_tile_dim_replicate}",
                   {"collective-permute 48", "all-gather 48"}},
        // 8 devices: 7,6,5,4 hold rows 0..3, 3,2,1,0 rows 4..7; device d needs rows 4(d/4)..,
        // columns 2(d%4)..: devices 0..3 hold none of their rows, 4..7 none either: 4x2 = 32 B.
        GoldenCase{8,
                   "f32[8,8]",
                   "{devices=[2,1,4]7,6,5,4,3,2,1,0 last_tile_dim_replicate}",
                   "{devices=[2,4]0,1,2,3,4,5,6,7}",
                   {"collective-permute 32"}},
        // Every device's target tile lies in the rows it holds (6,4,2,0 hold rows 0..3 and get
        // them): local slices, nothing sent.
        GoldenCase{8,
                   "f32[8,8]",
                   "{devices=[2,1,4]0,2,4,6,1,3,5,7 last_tile_dim_replicate}",
                   "{devices=[2,4]6,4,2,0,7,5,3,1}",
                   {}},
        // 2-D source tiles: 3,7 hold rows 0..3 x columns 0..3, 1,5 rows 0..3 x 4..7, 2,6 rows
        // 4..7 x 0..3, 0,4 rows 4..7 x 4..7; device 0 needs rows 0..3 x 0..1 (held by 3 and 7),
        // and so on: no device holds its piece, 4x2 = 32 B each.
        GoldenCase{8,
                   "f32[8,8]",
                   "{devices=[2,2,2]3,7,1,5,2,6,0,4 last_tile_dim_replicate}",
                   "{devices=[2,4]0,1,2,3,4,5,6,7}",
                   {"collective-permute 32"}},
        // Tiled to partially replicated: device 0 holds rows 0..3 x 0..1 and needs rows 4..7
        // whole (4x8 = 128 B, none held): permute the 32 B tiles into the target's layout, then
        // all-gather 4 ways, (4-1) x 32 = 96 B: 128 B, the least possible.
        GoldenCase{8,
                   "f32[8,8]",
                   "{devices=[2,4]0,1,2,3,4,5,6,7}",
                   "{devices=[2,1,4]7,6,5,4,3,2,1,0 last_tile_dim_replicate}",
                   {"collective-permute 32", "all-gather 96"}},
        // To 2-D partially replicated: device 0 needs rows 4..7 x 4..7 (64 B, none held): permute
        // 32 B, then all-gather 2 ways, 32 B.
        GoldenCase{8,
                   "f32[8,8]",
                   "{devices=[2,4]0,1,2,3,4,5,6,7}",
                   "{devices=[2,2,2]3,7,1,5,2,6,0,4 last_tile_dim_replicate}",
                   {"collective-permute 32", "all-gather 32"}}));

// Every pair of shardings of a rank-2 tensor in a few device orders on 2x2 and 2x2x2 (even and
// uneven dims), emitted by Reshard and run on the CPU reference: each device ends with exactly
// its shard, the plan's bytes are what it emits, and where the target only refines the tiles
// (slice, then permute: at most the target's tile) or only coarsens them (permute the source's
// tile, then all-gather g ways: at most g source tiles) on even dims it sends no more than GSPMD.
class ReshardDeviceOrderTest : public ::testing::TestWithParam<std::vector<int64_t>> {};

TEST_P(ReshardDeviceOrderTest, EveryPairKeepsTheValuesAndGspmdsBytes) {
  const Mesh mesh = *Mesh::Create(GetParam());
  const int64_t n = mesh.device_count();
  std::vector<std::vector<int64_t>> orders = {{}};
  std::vector<int64_t> reversed(n), odd_first;
  for (int64_t i = 0; i < n; ++i) reversed[i] = n - 1 - i;
  for (int64_t i = 1; i < n; i += 2) odd_first.push_back(i);
  for (int64_t i = 0; i < n; i += 2) odd_first.push_back(i);
  orders.push_back(reversed);
  orders.push_back(odd_first);
  std::vector<AxisSharding> shardings;
  for (const std::vector<int64_t>& order : orders) {
    for (AxisSharding sharding : AllShardings(mesh)) {
      if (sharding.NumTiles(mesh) == 1 && !order.empty()) continue;
      sharding.device_order = order;
      shardings.push_back(sharding);
    }
  }
  int64_t cases = 0;
  for (const auto& [rows, columns] : std::vector<std::pair<int64_t, int64_t>>{{8, 4}, {7, 5}}) {
    const ir::Shape global(ir::DType::kF32, {rows, columns});
    std::vector<float> values(rows * columns);
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) + 0.5f;
    const ir::Literal full = ir::Literal::Create<float>(ir::DType::kF32, {rows, columns}, values);
    for (const AxisSharding& from : shardings) {
      for (const AxisSharding& to : shardings) {
        const std::string name =
            fmt::format("{} {} -> {}", global.ToString(), from.ToString(mesh), to.ToString(mesh));
        ir::Module module("m");
        module.set_partition_count(n);
        ir::ComputationBuilder computation("main", {1, n});
        SpmdBuilder builder(computation, module, mesh);
        ir::Instruction* local = computation.Parameter(0, ShardShape(global, from, mesh));
        const absl::StatusOr<PartitionedValue> resharded =
            Reshard(builder, PartitionedValue{local, global, from}, to);
        ASSERT_TRUE(resharded.ok()) << name << ": " << resharded.status();
        int64_t emitted = 0;
        for (const CollectiveRecord& record : builder.records()) emitted += record.bytes_per_device;
        const int64_t bytes = ReshardBytes(global, from, to, mesh);
        EXPECT_EQ(emitted, bytes) << name;
        module.set_entry(module.AddComputation(computation.Build(resharded->local)));
        std::vector<std::vector<ir::Literal>> arguments;
        for (int64_t device = 0; device < n; ++device) {
          arguments.push_back({ShardOf(full, from, mesh, device)});
        }
        const absl::StatusOr<std::vector<ir::Literal>> shards =
            interp::EvaluateOnDevices(module, arguments);
        ASSERT_TRUE(shards.ok()) << name << ": " << shards.status();
        // Every device's valid region (padding is unspecified); replicas must agree.
        const absl::StatusOr<ir::Literal> back = Reassemble(*shards, global, to, mesh);
        ASSERT_TRUE(back.ok()) << name << ": " << back.status();
        const absl::StatusOr<double> difference = RelativeDifference(*back, full);
        ASSERT_TRUE(difference.ok()) << difference.status();
        EXPECT_EQ(*difference, 0) << name;
        // GSPMD's figures on even dims, from the tile counts alone.
        bool refines = true, coarsens = true, even = true;
        int64_t from_tile = 4, to_tile = 4;
        for (int64_t d = 0; d < 2; ++d) {
          const int64_t f = from.TilesOn(d, mesh), t = to.TilesOn(d, mesh);
          refines = refines && t % f == 0;
          coarsens = coarsens && f % t == 0;
          even = even && global.dimension(d) % std::max(f, t) == 0;
          from_tile *= global.dimension(d) / f;
          to_tile *= global.dimension(d) / t;
        }
        if (even && refines) {
          EXPECT_LE(bytes, to_tile) << name;
        }
        if (even && coarsens) {
          EXPECT_LE(bytes, from_tile * (from.NumTiles(mesh) / to.NumTiles(mesh))) << name;
        }
        ++cases;
      }
    }
  }
  RecordProperty("cases", static_cast<int>(cases));
}

INSTANTIATE_TEST_SUITE_P(Meshes, ReshardDeviceOrderTest,
                         ::testing::Values(std::vector<int64_t>{2, 2},
                                           std::vector<int64_t>{2, 2, 2}));

// Planning stays polynomial in the mesh axes: a [2]^8 view of 256 devices has 8! = 40320
// orderings of one dim's axes, which scoring each against every device took seconds per reshard
// (6.2 s for one replicated -> shuffled [256] reshard in `vkspmd partition --mesh 256`); a few
// canonical orderings take milliseconds. The bound is generous (a loaded 2-core machine).
TEST(ReshardPlanningTest, ShuffledOrderOf256DevicesPlansQuickly) {
  const Mesh mesh = *Mesh::Create(std::vector<int64_t>(8, 2));
  std::vector<int64_t> order(256);
  for (int64_t i = 0; i < 256; ++i) order[i] = i;
  std::mt19937 random(19);
  std::shuffle(order.begin(), order.end(), random);
  const ir::Shape global(ir::DType::kF32, {512});
  AxisSharding shuffled = AxisSharding::Replicated(1);
  shuffled.dims[0] = {0, 1, 2, 3, 4, 5, 6, 7};
  shuffled.device_order = order;
  AxisSharding half = AxisSharding::Replicated(1);
  half.dims[0] = {0};
  const AxisSharding replicated = AxisSharding::Replicated(1);
  const auto start = std::chrono::steady_clock::now();
  // Every device holds the whole value: each slices its 2 elements, nothing is sent.
  EXPECT_EQ(ReshardBytes(global, replicated, shuffled, mesh), 0);
  // Each device lacks 255 tiles of 2 floats: at least a ring all-gather's 255 * 8 bytes, at most
  // that and one permute of its 8-byte tile into another order.
  const int64_t gathered = ReshardBytes(global, shuffled, replicated, mesh);
  EXPECT_GE(gathered, 255 * 8);
  EXPECT_LE(gathered, 256 * 8);
  // Refining (one axis to all eight, into another order) and coarsening back: an extension of
  // the 2-way split to 256 tiles is looked for both ways.
  EXPECT_FALSE(PlanReshard(global, half, shuffled, mesh).empty());
  EXPECT_FALSE(PlanReshard(global, shuffled, half, mesh).empty());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0);
  RecordProperty("seconds", std::to_string(seconds));
}

}  // namespace
}  // namespace vkspmd::spmd::testing
