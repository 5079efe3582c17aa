// Resharding between every pair of shardings of a rank-2 tensor on small meshes (1-D, 2-D and
// 3-D, even and uneven dims): values survive (padding poisoned), the plan never sends more than
// gathering everything would, and it sends nothing when only slicing is needed.
#include "src/spmd/reshard.h"

#include <functional>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/interp/evaluator.h"
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

}  // namespace
}  // namespace vkspmd::spmd::testing
