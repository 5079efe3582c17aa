// Partially manual regions (manual subgroups, JAX's shard_map with auto= axes): the equivalence
// matrix of manual-subgroup sharding forms on 4 and 8 devices, the collectives' device groups
// pinned (each within one manual group), and the errors for what is not supported.
#include <algorithm>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/status_macros.h"
#include "src/ir/parser.h"
#include "src/ir/printer.h"
#include "tests/spmd/spmd_test_util.h"

namespace vkspmd::spmd::testing {
namespace {

using ir::Opcode;

// shard_map(body, in_specs=(P(m), P()), out_specs=(P(None, m), P(m)), auto=other axes) in
// JAX's lowering: x enters split by rows over the manual axes {m} ({enter}), w replicated; the
// region's values are manual over {m} ({region}, {region1} for rank 1) and the body's
// shardings {s0}..{s3} partition the rest. {rm} = rows per manual group, {r} = all rows.
constexpr char kRegion[] = R"(HloModule partial_manual, num_partitions={n}
%add.f32 (a: f32[], b: f32[]) -> f32[] {{
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}}
ENTRY %main (x: f32[{r},{c}], w: f32[{c},{k}]) -> (f32[{k},{r}], f32[{r}]) {{
  %x = f32[{r},{c}] parameter(0), sharding={px}
  %w = f32[{c},{k}] parameter(1), sharding={{replicated}}
  %xe = f32[{r},{c}] custom-call(f32[{r},{c}] %x), custom_call_target="Sharding", sharding={enter}, backend_config="unspecified_dims=[0,1]"
  %xm = f32[{rm},{c}] custom-call(f32[{r},{c}] %xe), custom_call_target="SPMDFullToShardShape", sharding={region}, backend_config="unspecified_dims=[0,1]"
  %we = f32[{c},{k}] custom-call(f32[{c},{k}] %w), custom_call_target="Sharding", sharding={{replicated}}
  %wm = f32[{c},{k}] custom-call(f32[{c},{k}] %we), custom_call_target="SPMDFullToShardShape", sharding={region}
  %xs = f32[{rm},{c}] custom-call(f32[{rm},{c}] %xm), custom_call_target="Sharding", sharding={s0}
  %e = f32[{rm},{c}] tanh(f32[{rm},{c}] %xs), sharding={s1}
  %y = f32[{rm},{k}] dot(f32[{rm},{c}] %e, f32[{c},{k}] %wm), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, sharding={s2}
  %t = f32[{k},{rm}] transpose(f32[{rm},{k}] %y), dimensions={{1,0}}, sharding={s3}
  %half = f32[] constant(0.5)
  %halves = f32[{k},{rm}] broadcast(f32[] %half), dimensions={{}}
  %z = f32[{k},{rm}] multiply(f32[{k},{rm}] %t, f32[{k},{rm}] %halves)
  %zero = f32[] constant(0)
  %sum = f32[{rm}] reduce(f32[{k},{rm}] %z, f32[] %zero), dimensions={{0}}, to_apply=%add.f32
  %zr = f32[{k},{rm}] custom-call(f32[{k},{rm}] %z), custom_call_target="Sharding", sharding={region}
  %out = f32[{k},{r}] custom-call(f32[{k},{rm}] %zr), custom_call_target="SPMDShardToFullShape", sharding={exit}
  %sr = f32[{rm}] custom-call(f32[{rm}] %sum), custom_call_target="Sharding", sharding={region1}
  %sout = f32[{r}] custom-call(f32[{rm}] %sr), custom_call_target="SPMDShardToFullShape", sharding={exit1}
  ROOT %root = (f32[{k},{r}], f32[{r}]) tuple(f32[{k},{r}] %out, f32[{r}] %sout)
}})";

// The boundary shardings of kRegion for one choice of manual axes, and the body's forms: every
// spelling of a manual-subgroup sharding over those axes (iota, transposed iota, listed ids,
// {manual, replicated} in either order) splitting the other axes every way.
struct RegionCase {
  std::vector<Mesh> meshes;
  std::string px, enter, region, region1, exit, exit1;
  std::vector<std::string> forms;
};

std::vector<RegionCase> RegionCases() {
  const auto mesh = [](std::vector<int64_t> shape) { return *Mesh::Create(std::move(shape)); };
  return {
      // 4 devices as [x, y], manual over y (devices 0 and 1 differ in their manual index).
      {{mesh({4}), mesh({2, 2})},
       "{devices=[2,2]<=[4]}",
       "{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}",
       "{devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={manual, replicated}}",
       "{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dims={manual, replicated}}",
       "{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}",
       "{devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate}",
       {"{devices=[2,1,2]<=[4] last_tile_dims={manual}}",
        "{devices=[1,2,2]<=[4] last_tile_dims={manual}}",
        "{devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={manual, replicated}}",
        "{devices=[2,1,2]0,1,2,3 last_tile_dims={manual}}",
        "{devices=[1,1,2,2]0,1,2,3 last_tile_dims={replicated, manual}}",
        "{devices=[1,2,2]0,1,2,3 last_tile_dims={manual}}"}},
      // 8 devices as [a, b, c], manual over b; the body splits a and c.
      {{mesh({8}), mesh({2, 4}), mesh({2, 2, 2})},
       "{devices=[4,2]<=[8]}",
       "{devices=[2,1,4]<=[2,2,2]T(1,0,2) last_tile_dim_replicate}",
       "{devices=[1,1,2,4]<=[2,2,2]T(1,0,2) last_tile_dims={manual, replicated}}",
       "{devices=[1,2,4]<=[2,2,2]T(1,0,2) last_tile_dims={manual, replicated}}",
       "{devices=[1,2,4]<=[2,2,2]T(1,0,2) last_tile_dim_replicate}",
       "{devices=[2,4]<=[2,2,2]T(1,0,2) last_tile_dim_replicate}",
       {"{devices=[2,2,2]<=[2,2,2]T(0,2,1) last_tile_dims={manual}}",
        "{devices=[4,1,2]<=[2,2,2]T(0,2,1) last_tile_dims={manual}}",
        "{devices=[2,1,2,2]<=[8] last_tile_dims={manual, replicated}}",
        "{devices=[1,2,2,2]<=[2,2,2]T(2,1,0) last_tile_dims={manual, replicated}}",
        "{devices=[1,1,2,4]<=[2,2,2]T(1,0,2) last_tile_dims={manual, replicated}}"}},
  };
}

struct RegionSizes {
  int64_t rm = 0, c = 0, k = 0;
  std::string name;
};

std::string Instantiate(const RegionCase& region, const Mesh& mesh, const RegionSizes& sizes,
                        const std::vector<std::string>& s) {
  return fmt::format(fmt::runtime(kRegion), fmt::arg("n", mesh.device_count()),
                     fmt::arg("rm", sizes.rm), fmt::arg("r", 2 * sizes.rm), fmt::arg("c", sizes.c),
                     fmt::arg("k", sizes.k), fmt::arg("px", region.px),
                     fmt::arg("enter", region.enter), fmt::arg("region", region.region),
                     fmt::arg("region1", region.region1), fmt::arg("exit", region.exit),
                     fmt::arg("exit1", region.exit1), fmt::arg("s0", s[0]), fmt::arg("s1", s[1]),
                     fmt::arg("s2", s[2]), fmt::arg("s3", s[3]));
}

// The partial-manual rows of the equivalence matrix: each body annotated with the forms in
// rotation, then with one form throughout, on every mesh of its device count (one-axis meshes
// are refined by the partitioner), even and uneven inside the region (7 rows per group over 2
// or 4 devices leaves padding the reduction and the dot must mask). The per-device programs run
// on the CPU reference against the unpartitioned program run per device.
TEST(EquivalenceMatrixTest, PartiallyManualForms) {
  const std::vector<RegionSizes> sizes = {{12, 12, 8, "even"}, {7, 5, 9, "uneven"}};
  int64_t cases = 0;
  for (const RegionCase& region : RegionCases()) {
    const size_t n = region.forms.size();
    for (const Mesh& mesh : region.meshes) {
      for (const RegionSizes& size : sizes) {
        for (size_t i = 0; i < 2 * n; ++i) {
          std::vector<std::string> s;
          for (size_t j = 0; j < 4; ++j) s.push_back(region.forms[i < n ? (i + j) % n : i - n]);
          const std::string name =
              fmt::format("mesh {} {} [{}]", mesh.ToString(), size.name, absl::StrJoin(s, " "));
          absl::StatusOr<std::unique_ptr<ir::Module>> module =
              ir::ParseAndVerifyModule(Instantiate(region, mesh, size, s));
          ASSERT_TRUE(module.ok()) << name << ": " << module.status();
          absl::StatusOr<EquivalenceOutcome> outcome = RunEquivalence(**module, mesh);
          ASSERT_TRUE(outcome.ok()) << name << ": " << outcome.status();
          EXPECT_LT(outcome->difference, 1e-5) << name;
          ++cases;
        }
      }
    }
  }
  RecordProperty("cases", static_cast<int>(cases));
  EXPECT_EQ(cases, 2 * 2 * 6 * 2 + 3 * 2 * 5 * 2);
}

// The collectives of a partitioned module with their device groups, "all-reduce {{0,2},{1,3}}".
std::vector<std::string> CollectiveGroups(const PartitionResult& result) {
  std::vector<std::string> collectives;
  for (const auto& instruction : result.module->entry()->instructions()) {
    if (!ir::IsCollective(instruction->opcode())) continue;
    std::vector<std::string> groups;
    for (const std::vector<int64_t>& group : instruction->attributes().replica_groups.Expand()) {
      groups.push_back(fmt::format("{{{}}}", absl::StrJoin(group, ",")));
    }
    collectives.push_back(fmt::format("{} {{{}}}", ir::OpcodeName(instruction->opcode()),
                                      absl::StrJoin(groups, ",")));
  }
  return collectives;
}

// The partition of `text`, once its per-device programs are found to equal the unpartitioned
// program on the CPU reference.
absl::StatusOr<PartitionResult> PartitionEquivalent(const std::string& text, const Mesh& mesh) {
  VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<ir::Module> module, ir::ParseAndVerifyModule(text));
  VKSPMD_ASSIGN_OR_RETURN(EquivalenceOutcome outcome, RunEquivalence(*module, mesh));
  if (outcome.difference >= 1e-5) {
    return absl::InternalError(fmt::format("differs by {} from the unpartitioned program:\n{}",
                                           outcome.difference,
                                           ir::PrintModule(*outcome.partition.module)));
  }
  return std::move(outcome.partition);
}

// Manual over y on 2x2 (devices 2x + y): the body's dot is split by rows over x and its row sum
// needs an all-reduce; both run over x only, within each manual group ({0,2} holds y = 0, {1,3}
// y = 1), never across the groups. Hand-derived: GSPMD's groups for a reduction along x.
TEST(PartialManualCollectivesTest, GroupsStayWithinEachManualGroup) {
  const Mesh mesh = *Mesh::Create({2, 2});
  const std::string text = fmt::format(
      fmt::runtime(kRegion), fmt::arg("n", 4), fmt::arg("rm", 8), fmt::arg("r", 16),
      fmt::arg("c", 6), fmt::arg("k", 4), fmt::arg("px", "{replicated}"),
      fmt::arg("enter", RegionCases()[0].enter), fmt::arg("region", RegionCases()[0].region),
      fmt::arg("region1", RegionCases()[0].region1), fmt::arg("exit", RegionCases()[0].exit),
      fmt::arg("exit1", "{devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate}"),
      fmt::arg("s0", "{devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={manual, replicated}}"),
      fmt::arg("s1", "{devices=[2,1,2]<=[4] last_tile_dims={manual}}"),
      fmt::arg("s2", "{devices=[2,1,2]<=[4] last_tile_dims={manual}}"),
      fmt::arg("s3", "{devices=[1,2,2]<=[4] last_tile_dims={manual}}"));
  const absl::StatusOr<PartitionResult> partitioned = PartitionEquivalent(text, mesh);
  ASSERT_TRUE(partitioned.ok()) << partitioned.status();
  const PartitionResult& result = *partitioned;
  // The row sum of z ([k, rm] split over x on rm) needs no collective; leaving the region gathers
  // z's and the sum's rows over x (the exit shardings are replicated over x).
  EXPECT_THAT(CollectiveGroups(result),
              ::testing::ElementsAre("all-gather {{0,2},{1,3}}", "all-gather {{0,2},{1,3}}"));
  for (const CollectiveRecord& record : result.collectives) {
    EXPECT_EQ(record.axes, std::vector<int64_t>{0}) << record.instruction;
  }
}

// A contraction split over the automatic axis inside the region: one all-reduce over x per
// manual group, as GSPMD's partial sum. The values enter already split over x as the region's
// shardings want (SPMDFullToShardShape's own sharding splits x), so no collective enters.
TEST(PartialManualCollectivesTest, ContractionOverTheAutomaticAxisAllReducesWithinGroups) {
  const Mesh mesh = *Mesh::Create({2, 2}, {}, {"x", "y"});
  const absl::StatusOr<PartitionResult> result =
      PartitionEquivalent(R"(HloModule m, num_partitions=4
ENTRY %main (a: f32[4,8], b: f32[8,6]) -> f32[4,6] {
  %a = f32[4,8] parameter(0), sharding={devices=[2,2]<=[2,2]T(1,0)}
  %b = f32[8,6] parameter(1), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  %am = f32[2,8] custom-call(f32[4,8] %a), custom_call_target="SPMDFullToShardShape", sharding={devices=[1,2,2]<=[4] last_tile_dims={manual}}
  %bm = f32[8,6] custom-call(f32[8,6] %b), custom_call_target="SPMDFullToShardShape", sharding={devices=[2,1,2]<=[4] last_tile_dims={manual}}
  %d = f32[2,6] dot(f32[2,8] %am, f32[8,6] %bm), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={manual, replicated}}
  ROOT %full = f32[4,6] custom-call(f32[2,6] %d), custom_call_target="SPMDShardToFullShape", sharding={devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}
})",
                          mesh);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(CollectiveGroups(*result), ::testing::ElementsAre("all-reduce {{0,2},{1,3}}"));
}

// JAX's psum over the manual axis inside shard_map(auto=): the user's all-reduce keeps its groups
// ({0,1} and {2,3} differ in y only) and runs on each device's x-shard of the rows; leaving with
// out_specs P() gathers the rows over x. tanh(a @ w) on every device.
TEST(PartialManualCollectivesTest, UserAllReduceOverTheManualAxisRunsOnShards) {
  const Mesh mesh = *Mesh::Create({2, 2}, {}, {"x", "y"});
  const absl::StatusOr<PartitionResult> result =
      PartitionEquivalent(R"(HloModule m, num_partitions=4
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %main (a: f32[8,8], w: f32[8,6]) -> f32[8,6] {
  %a = f32[8,8] parameter(0), sharding={devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  %w = f32[8,6] parameter(1), sharding={devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  %am = f32[8,4] custom-call(f32[8,8] %a), custom_call_target="SPMDFullToShardShape", sharding={devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={manual, replicated}}
  %wm = f32[4,6] custom-call(f32[8,6] %w), custom_call_target="SPMDFullToShardShape", sharding={devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={manual, replicated}}
  %as = f32[8,4] custom-call(f32[8,4] %am), custom_call_target="Sharding", sharding={devices=[2,1,2]<=[4] last_tile_dims={manual}}
  %p = f32[8,6] dot(f32[8,4] %as, f32[4,6] %wm), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %s = f32[8,6] all-reduce(f32[8,6] %p), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%add
  %t = f32[8,6] tanh(f32[8,6] %s)
  %r = f32[8,6] custom-call(f32[8,6] %t), custom_call_target="Sharding", sharding={devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={manual, replicated}}
  ROOT %full = f32[8,6] custom-call(f32[8,6] %r), custom_call_target="SPMDShardToFullShape", sharding={replicated}
})",
                          mesh);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(CollectiveGroups(*result),
              ::testing::ElementsAre("all-reduce {{0,1},{2,3}}", "all-gather {{0,2},{1,3}}"));
  for (const auto& instruction : result->module->entry()->instructions()) {
    if (instruction->opcode() == Opcode::kAllReduce) {
      EXPECT_EQ(instruction->shape().ToString(), "f32[4,6]");  // the x-shard of the rows
    }
  }
}

// unspecified_dims at both ends of a region (JAX's boundaries): the entry's Sharding custom-call
// could take x on its columns from the operand, split [{}, {y,x}], but the region's 3 columns
// cannot split evenly over x, so neither side takes it (a shard would hold other elements than
// the full value's); the rows then take x inside on both sides together. Equal to the
// unpartitioned program (fails when one side of the pair is left extended alone).
TEST(PartialManualCollectivesTest, BoundaryTiesGrowBothSidesOrNeither) {
  const Mesh mesh = *Mesh::Create({2, 2}, {}, {"x", "y"});
  const absl::StatusOr<PartitionResult> result =
      PartitionEquivalent(R"(HloModule m, num_partitions=4
ENTRY %main (p: f32[8,6]) -> f32[8,6] {
  %p = f32[8,6] parameter(0), sharding={devices=[1,4]<=[2,2]T(1,0)}
  %c = f32[8,6] custom-call(f32[8,6] %p), custom_call_target="Sharding", sharding={devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}, backend_config="unspecified_dims=[0,1]"
  %m = f32[8,3] custom-call(f32[8,6] %c), custom_call_target="SPMDFullToShardShape", sharding={devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={manual, replicated}}, backend_config="unspecified_dims=[0,1]"
  %s = f32[8,3] custom-call(f32[8,3] %m), custom_call_target="Sharding", sharding={devices=[2,1,2]<=[4] last_tile_dims={manual}}
  %n = f32[8,3] negate(f32[8,3] %s)
  %e = f32[8,3] custom-call(f32[8,3] %n), custom_call_target="Sharding", sharding={devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={manual, replicated}}, backend_config="unspecified_dims=[0,1]"
  ROOT %f = f32[8,6] custom-call(f32[8,3] %e), custom_call_target="SPMDShardToFullShape", sharding={devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}, backend_config="unspecified_dims=[0,1]"
})",
                          mesh);
  ASSERT_TRUE(result.ok()) << result.status();
  // The rows leave the region split over x (the exit's tie), the columns over y.
  EXPECT_EQ(result->result_shardings[0].ToString(mesh), "[{x}, {y}]");
  // A value entering whole (in_specs P()) from rows split over y: the entry's Sharding could take
  // y from its operand, but the region is manual over y, so neither side takes it and the rows
  // are gathered before the region (fails when the Sharding keeps y alone: the shard shapes
  // then differ at the boundary).
  const absl::StatusOr<PartitionResult> whole = PartitionEquivalent(R"(HloModule m, num_partitions=4
ENTRY %main (p: f32[8,6]) -> f32[8,6] {
  %p = f32[8,6] parameter(0), sharding={devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  %c = f32[8,6] custom-call(f32[8,6] %p), custom_call_target="Sharding", sharding={replicated}, backend_config="unspecified_dims=[0,1]"
  %m = f32[8,6] custom-call(f32[8,6] %c), custom_call_target="SPMDFullToShardShape", sharding={devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={manual, replicated}}, backend_config="unspecified_dims=[0,1]"
  %n = f32[8,6] negate(f32[8,6] %m)
  %e = f32[8,6] custom-call(f32[8,6] %n), custom_call_target="Sharding", sharding={devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={manual, replicated}}, backend_config="unspecified_dims=[0,1]"
  ROOT %f = f32[8,6] custom-call(f32[8,6] %e), custom_call_target="SPMDShardToFullShape", sharding={replicated}, backend_config="unspecified_dims=[0,1]"
})",
                                                                    mesh);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_THAT(CollectiveGroups(*whole), ::testing::ElementsAre("all-gather {{0,1},{2,3}}"));
}

std::string PartitionError(const std::string& text, const Mesh& mesh) {
  return std::string(PartitionEquivalent(text, mesh).status().message());
}

// What is not supported names the op and its sharding.
TEST(PartialManualErrorsTest, UnsupportedCasesNameTheOpAndSharding) {
  const Mesh mesh = *Mesh::Create({2, 2}, {}, {"x", "y"});
  // The user's collectives inside are partitioned over the manual axes only; an all-gather
  // along the split dim gathers it over x first (the dim must be whole).
  const auto with_collective = [&](const std::string& collective) {
    const int64_t size = collective.find("all-gather") == 0 ? 8 : 4;
    return PartitionError(fmt::format(fmt::runtime(R"(HloModule m, num_partitions=4
%add (a: f32[], b: f32[]) -> f32[] {{
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}}
ENTRY %main (p: f32[4]) -> f32[{}] {{
  %p = f32[4] parameter(0)
  %m = f32[4] custom-call(f32[4] %p), custom_call_target="SPMDFullToShardShape", sharding={{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dims={{manual, replicated}}}}
  %ms = f32[4] custom-call(f32[4] %m), custom_call_target="Sharding", sharding={{devices=[2,2]<=[4] last_tile_dims={{manual}}}}
  %r = f32[{}] {}
  ROOT %f = f32[{}] custom-call(%r), custom_call_target="SPMDShardToFullShape", sharding={{replicated}}
}})"),
                                      size, size, collective, size),
                          mesh);
  };
  EXPECT_EQ(with_collective("all-gather(f32[4] %ms), channel_id=1, replica_groups={{0,1},{2,3}}, "
                            "use_global_device_ids=true, dimensions={0}"),
            "");
  EXPECT_THAT(
      with_collective("all-gather(f32[4] %ms), channel_id=1, replica_groups={{0,2},{1,3}}, "
                      "use_global_device_ids=true, dimensions={0}"),
      ::testing::HasSubstr("%r: cannot partition all-gather with sharding [{}] manual {y} "
                           "(operands: %ms [{x}] manual {y}): its devices {0,2} hold different "
                           "shards"));
  EXPECT_THAT(with_collective("all-reduce(f32[4] %ms), channel_id=1, replica_groups={{0,2},{1,3}}, "
                              "use_global_device_ids=true, to_apply=%add"),
              ::testing::HasSubstr("%r: cannot partition all-reduce with sharding [{x}] manual "
                                   "{y} (operands: %ms [{x}] manual {y}): its devices {0,2} hold "
                                   "different shards (they differ along mesh axes x that split "
                                   "its operand or result)"));
  EXPECT_EQ(with_collective("all-reduce(f32[4] %ms), channel_id=1, replica_groups={{0,1},{2,3}}, "
                            "use_global_device_ids=true, to_apply=%add"),
            "");
  // Two regions manual over different axes meeting in one op.
  EXPECT_THAT(PartitionError(R"(HloModule m, num_partitions=4
ENTRY %main (p: f32[4,4]) -> f32[4,4] {
  %p = f32[4,4] parameter(0)
  %mx = f32[4,4] custom-call(f32[4,4] %p), custom_call_target="SPMDFullToShardShape", sharding={devices=[1,1,2,2]<=[4] last_tile_dims={manual, replicated}}
  %my = f32[4,4] custom-call(f32[4,4] %p), custom_call_target="SPMDFullToShardShape", sharding={devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={manual, replicated}}
  %s = f32[4,4] add(f32[4,4] %mx, f32[4,4] %my)
  ROOT %f = f32[4,4] custom-call(f32[4,4] %s), custom_call_target="SPMDShardToFullShape", sharding={replicated}
})",
                             mesh),
              ::testing::HasSubstr("%s: cannot partition add with sharding [{}, {}] manual {x} "
                                   "(operands: %mx [{}, {}] manual {x}, %my [{}, {}] manual {y}): "
                                   "its values are manual over mesh axes x and y"));
  // Entering with a shape that is not the manual groups' block.
  EXPECT_THAT(PartitionError(R"(HloModule m, num_partitions=4
ENTRY %main (p: f32[4,4]) -> f32[4,4] {
  %p = f32[4,4] parameter(0), sharding={devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  %m = f32[4,4] custom-call(f32[4,4] %p), custom_call_target="SPMDFullToShardShape", sharding={devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={manual, replicated}}
  ROOT %f = f32[4,4] custom-call(f32[4,4] %m), custom_call_target="SPMDShardToFullShape", sharding={replicated}
})",
                             mesh),
              ::testing::HasSubstr("%m: cannot partition custom-call with sharding [{}, {}] manual "
                                   "{y} (operands: %p [{y}, {}]): each device's shard of f32[4,4] "
                                   "under [{y}, {}] is f32[2,4], not its shard of the manual "
                                   "value f32[4,4] under [{}, {}] manual {y} (f32[4,4])"));
}

}  // namespace
}  // namespace vkspmd::spmd::testing
