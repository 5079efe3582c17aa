// Meshes and partition specs: conversion to HLO shardings exactly as PyTorch/XLA and JAX do it
// (GSPMD-NOTES 1.3 tables), the mark_sharding RFC example, the reverse conversion, replica groups
// along mesh axes, and one clear error per kind of bad input.
#include "src/spmd/mesh.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/ir/parser.h"
#include "src/spmd/axis_sharding.h"
#include "src/spmd/mesh_assignment.h"
#include "src/spmd/partition_spec.h"
#include "src/spmd/partitioner.h"

namespace vkspmd::spmd {
namespace {

Mesh MakeMesh(std::vector<int64_t> shape, std::vector<std::string> names = {},
              std::vector<int64_t> ids = {}) {
  absl::StatusOr<Mesh> mesh = Mesh::Create(std::move(shape), std::move(ids), std::move(names));
  EXPECT_TRUE(mesh.ok()) << mesh.status();
  return *mesh;
}

std::string ShardingText(const std::string& spec, const Mesh& mesh, int64_t rank) {
  absl::StatusOr<PartitionSpec> parsed = PartitionSpec::Parse(spec);
  if (!parsed.ok()) return std::string(parsed.status().message());
  absl::StatusOr<ir::Sharding> sharding = PartitionSpecToSharding(*parsed, mesh, rank);
  if (!sharding.ok()) return std::string(sharding.status().message());
  return sharding->ToString();
}

std::vector<int64_t> Ids(const std::string& spec, const Mesh& mesh, int64_t rank) {
  return ir::ParseSharding(ShardingText(spec, mesh, rank))->tile_assignment().Flatten();
}

TEST(PartitionSpecTest, MatchesTheWorkedExamplesOfGspmdNotes) {
  const Mesh mesh = MakeMesh({2, 4}, {"dp", "tp"});
  EXPECT_EQ(ShardingText("('dp', None)", mesh, 2),
            "{devices=[2,1,4]<=[8] last_tile_dim_replicate}");
  EXPECT_EQ(ShardingText("(None, 'tp')", mesh, 2),
            "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}");
  EXPECT_EQ(Ids("(None, 'tp')", mesh, 2), (std::vector<int64_t>{0, 4, 1, 5, 2, 6, 3, 7}));
  EXPECT_EQ(ShardingText("('dp','tp')", mesh, 2), "{devices=[2,4]<=[8]}");
  EXPECT_EQ(ShardingText("('tp','dp')", mesh, 2), "{devices=[4,2]<=[2,4]T(1,0)}");
  EXPECT_EQ(Ids("('tp','dp')", mesh, 2), (std::vector<int64_t>{0, 4, 1, 5, 2, 6, 3, 7}));
  EXPECT_EQ(ShardingText("(('dp','tp'), None)", mesh, 2), "{devices=[8,1]<=[8]}");
  EXPECT_EQ(Ids("(('tp','dp'), None)", mesh, 2), (std::vector<int64_t>{0, 4, 1, 5, 2, 6, 3, 7}));
  EXPECT_EQ(ShardingText("(None, None)", mesh, 2), "{replicated}");
  EXPECT_EQ(ShardingText("(0, None)", MakeMesh({1}), 2), "{maximal device=0}");
}

TEST(PartitionSpecTest, JaxExampleWithFourAxes) {
  // JAX: shape (8,4,2,2), mesh a=b=c=d=2, P(None, ('d','b'), 'c') -> dims [1,4,2,1,2],
  // reshape [2,2,2,2], perm [3,1,2,0].
  const Mesh mesh = MakeMesh({2, 2, 2, 2}, {"a", "b", "c", "d"});
  // Printed with b and c merged into one iota dim; the device array is the same.
  const std::string text = ShardingText("(None, ('d','b'), 'c', None)", mesh, 4);
  EXPECT_EQ(text, "{devices=[1,4,2,1,2]<=[2,4,2]T(2,1,0) last_tile_dim_replicate}");
  EXPECT_EQ(
      *ir::ParseSharding(text),
      *ir::ParseSharding("{devices=[1,4,2,1,2]<=[2,2,2,2]T(3,1,2,0) last_tile_dim_replicate}"));
}

TEST(PartitionSpecTest, MarkShardingRfcExample) {
  // An 8x32 tensor on a 4x2 mesh with spec (1, None): rows split in two along mesh axis 1 and
  // replicated over axis 0. PyTorch/XLA gives tile assignment [[0,2,4,6],[1,3,5,7]] per row
  // half, i.e. devices=[2,1,4]0,2,4,6,1,3,5,7 last_tile_dim_replicate.
  const Mesh mesh = MakeMesh({4, 2});
  const ir::Shape shape(ir::DType::kF32, {8, 32});
  absl::StatusOr<ir::Sharding> sharding =
      PartitionSpecToSharding(*PartitionSpec::Parse("(1, None)"), mesh, 2);
  ASSERT_TRUE(sharding.ok()) << sharding.status();
  EXPECT_EQ(sharding->tile_assignment().dimensions, (std::vector<int64_t>{2, 1, 4}));
  EXPECT_EQ(sharding->tile_assignment().Flatten(), (std::vector<int64_t>{0, 2, 4, 6, 1, 3, 5, 7}));
  EXPECT_TRUE(sharding->HasPartialReplication());
  EXPECT_EQ(sharding->TileShape(shape), ir::Shape(ir::DType::kF32, {4, 32}));
  for (int64_t device = 0; device < 8; ++device) {
    EXPECT_EQ(sharding->TileOffsetForDevice(shape, device),
              (std::vector<int64_t>{device % 2 == 0 ? 0 : 4, 0}));
    EXPECT_EQ(sharding->TileLimitForDevice(shape, device),
              (std::vector<int64_t>{device % 2 == 0 ? 4 : 8, 32}));
  }
  const std::vector<int64_t> all = mesh.device_ids();
  EXPECT_EQ(sharding->DevicesHoldingSameTile(0, all), (std::vector<int64_t>{0, 2, 4, 6}));
  EXPECT_EQ(sharding->DevicesHoldingSameTile(5, all), (std::vector<int64_t>{1, 3, 5, 7}));
  // The replication groups are the groups of a collective along mesh axis 0.
  EXPECT_EQ(mesh.GroupsAlong({0}), (std::vector<std::vector<int64_t>>{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  EXPECT_EQ(mesh.GroupsAlong({1}),
            (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
}

TEST(PartitionSpecTest, NonIotaMeshListsDeviceIds) {
  const Mesh mesh = MakeMesh({2, 2}, {"x", "y"}, {3, 1, 0, 2});
  EXPECT_EQ(ShardingText("(x, None)", mesh, 2), "{devices=[2,1,2]3,1,0,2 last_tile_dim_replicate}");
  EXPECT_EQ(ShardingText("(y, x)", mesh, 2), "{devices=[2,2]3,0,1,2}");
}

TEST(AxisShardingTest, HloShardingsConvertBackToMeshAxes) {
  const Mesh mesh = MakeMesh({2, 2, 2});
  for (const char* spec :
       {"(0, None)", "(None, (2, 0))", "((1, 2), 0)", "(None, None)", "(2, 1)"}) {
    const AxisSharding axes = *ResolvePartitionSpec(*PartitionSpec::Parse(spec), mesh, 2);
    absl::StatusOr<AxisSharding> back = FromHloSharding(ToHloSharding(axes, mesh), mesh, 2);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, axes) << spec;
  }
  // Listed device arrays are recognised too.
  absl::StatusOr<AxisSharding> listed = FromHloSharding(
      *ir::ParseSharding("{devices=[1,4,2]0,4,1,5,2,6,3,7 last_tile_dim_replicate}"), mesh, 2);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->dims, (std::vector<std::vector<int64_t>>{{}, {1, 2}}));
}

TEST(AxisShardingTest, UnevenShardsArePaddedAtTheEnd) {
  const Mesh mesh = MakeMesh({5});
  const AxisSharding rows = *ResolvePartitionSpec(*PartitionSpec::Parse("(0,)"), mesh, 1);
  const ir::Shape nine(ir::DType::kF32, {9});
  EXPECT_EQ(ShardShape(nine, rows, mesh), ir::Shape(ir::DType::kF32, {2}));
  std::vector<int64_t> offsets, sizes;
  for (int64_t device = 0; device < 5; ++device) {
    offsets.push_back(ShardOffset(nine, rows, 0, mesh, device));
    sizes.push_back(ShardValidSize(nine, rows, 0, mesh, device));
  }
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 2, 4, 6, 8}));
  EXPECT_EQ(sizes, (std::vector<int64_t>{2, 2, 2, 2, 1}));
  const ir::Shape four(ir::DType::kF32, {4});
  const Mesh three = MakeMesh({3});
  const AxisSharding split = *ResolvePartitionSpec(*PartitionSpec::Parse("(0,)"), three, 1);
  EXPECT_EQ(ShardValidSize(four, split, 0, three, 2), 0);  // an empty trailing shard
  EXPECT_EQ(ShardOffset(four, split, 0, three, 2), 4);
}

// The partitioner's shard geometry (from mesh axes) agrees with ir::Sharding's tile queries on
// the HLO sharding it converts to, for every device, including uneven and empty shards.
TEST(AxisShardingTest, GeometryAgreesWithTheHloTileQueries) {
  const std::vector<Mesh> meshes = {MakeMesh({3}), MakeMesh({2, 4}, {}, {7, 6, 5, 4, 3, 2, 1, 0}),
                                    MakeMesh({2, 2, 2})};
  const std::vector<std::string> specs = {"(0, None)", "(None, 0)",   "((0, 1), None)",
                                          "(1, 0)",    "(2, (1, 0))", "(None, None)"};
  const ir::Shape shape(ir::DType::kF32, {7, 5});
  int64_t compared = 0;
  for (const Mesh& mesh : meshes) {
    for (const std::string& text : specs) {
      absl::StatusOr<AxisSharding> axes =
          ResolvePartitionSpec(*PartitionSpec::Parse(text), mesh, 2);
      if (!axes.ok()) continue;  // an axis the mesh lacks
      const ir::Sharding hlo = ToHloSharding(*axes, mesh);
      EXPECT_EQ(ShardShape(shape, *axes, mesh), hlo.TileShape(shape)) << text;
      for (int64_t device : mesh.device_ids()) {
        const std::vector<int64_t> offset = hlo.TileOffsetForDevice(shape, device);
        const std::vector<int64_t> limit = hlo.TileLimitForDevice(shape, device);
        for (int64_t d = 0; d < 2; ++d) {
          EXPECT_EQ(ShardOffset(shape, *axes, d, mesh, device), offset[d]) << text << device;
          EXPECT_EQ(ShardValidSize(shape, *axes, d, mesh, device), limit[d] - offset[d])
              << text << " device " << device;
        }
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 60);
}

std::string MeshError(std::vector<int64_t> shape, std::vector<int64_t> ids,
                      std::vector<std::string> names, std::optional<int64_t> available = {}) {
  absl::StatusOr<Mesh> mesh =
      Mesh::Create(std::move(shape), std::move(ids), std::move(names), available);
  return mesh.ok() ? "ok" : std::string(mesh.status().message());
}

TEST(MeshTest, EachInvalidMeshHasItsOwnError) {
  EXPECT_EQ(MeshError({}, {}, {}), "a mesh needs at least one axis");
  EXPECT_EQ(MeshError({2, 0}, {}, {}),
            "mesh shape [2,0] has an axis of size 0; sizes must be positive");
  EXPECT_EQ(MeshError({2, 2}, {0, 1, 2}, {}),
            "mesh shape [2,2] holds 4 devices but 3 device ids were given");
  EXPECT_EQ(MeshError({2}, {1, 1}, {}), "mesh device id 1 appears twice");
  EXPECT_EQ(MeshError({2}, {0, 9}, {}, 8),
            "mesh device id 9 does not exist: there are 8 devices (0..7)");
  EXPECT_EQ(MeshError({2}, {-1, 0}, {}), "mesh device id -1 is negative");
  EXPECT_EQ(MeshError({2, 2}, {}, {"x", "x"}), "mesh axis name 'x' appears twice");
  EXPECT_EQ(MeshError({2, 2}, {}, {"x"}), "mesh has 2 axes but 1 axis names (x)");
  EXPECT_EQ(MeshError({2}, {5, 3}, {}, 8), "ok");  // any subset, any order
  EXPECT_EQ(std::string(Mesh::Parse("2xq").status().message()),
            "mesh '2xq': 'q' is not a number (write the shape as 2x4)");
  EXPECT_EQ(Mesh::Parse("2x4:dp,tp")->axis_names(), (std::vector<std::string>{"dp", "tp"}));
}

// Sizes whose product overflows int64 (or is merely huge) are refused before any allocation.
TEST(MeshTest, RefusesMeshesBeyondTheDeviceBound) {
  EXPECT_EQ(std::string(Mesh::Parse("4294967296x4294967296").status().message()),
            "mesh '4294967296x4294967296': mesh shape [4294967296,4294967296] holds more than "
            "65536 devices");
  EXPECT_EQ(std::string(Mesh::Parse("3037000500x3037000500").status().message()),
            "mesh '3037000500x3037000500': mesh shape [3037000500,3037000500] holds more than "
            "65536 devices");
  EXPECT_EQ(MeshError({256, 257}, {}, {}), "mesh shape [256,257] holds more than 65536 devices");
  EXPECT_EQ(MeshError({int64_t{1} << 62, 4}, {}, {}),
            "mesh shape [4611686018427387904,4] holds more than 65536 devices");
  EXPECT_EQ(MeshError(std::vector<int64_t>(17, 1), {}, {}),
            "mesh has 17 axes; at most 16 are allowed");
  EXPECT_EQ(MeshError({256, 256}, {}, {}), "ok");
}

TEST(PartitionSpecTest, EachInvalidSpecHasItsOwnError) {
  const Mesh mesh = MakeMesh({2, 2}, {"dp", "tp"});
  EXPECT_EQ(ShardingText("(dp,)", mesh, 2),
            "partition spec ('dp') has 1 entries but the tensor has rank 2");
  EXPECT_EQ(ShardingText("(dp, pp)", mesh, 2),
            "partition spec ('dp', 'pp'): unknown mesh axis 'pp' (the mesh's axes are dp, tp)");
  EXPECT_EQ(ShardingText("(0, 2)", mesh, 2),
            "partition spec (0, 2): mesh axis 2 does not exist (mesh [2,2] (dp, tp) devices 0..3 "
            "has 2 axes)");
  EXPECT_EQ(ShardingText("((dp, tp), dp)", mesh, 2),
            "partition spec (('dp', 'tp'), 'dp') uses mesh axis dp twice");
  EXPECT_EQ(ShardingText("(dp, (tp", mesh, 2),
            "partition spec '(dp, (tp': unclosed '(' at offset 8");
}

TEST(AxisShardingTest, ShardingsOutsideTheMeshAreRejectedNamingBoth) {
  const Mesh mesh = MakeMesh({4});
  absl::StatusOr<AxisSharding> transposed =
      FromHloSharding(*ir::ParseSharding("{devices=[2,2]0,2,1,3}"), mesh, 2);
  EXPECT_EQ(std::string(transposed.status().message()),
            "sharding {devices=[2,2]0,2,1,3} cannot be expressed over the axes of mesh [4] devices "
            "0..3: its tile counts are not products of the mesh's axis sizes; give a mesh whose "
            "axes produce it");
  EXPECT_EQ(
      std::string(
          FromHloSharding(*ir::ParseSharding("{devices=[2]0,1}"), mesh, 1).status().message()),
      "sharding {devices=[2]0,1} does not use every device of mesh [4] devices 0..3 exactly "
      "once; a tiled value lives on all of its mesh's devices");
  EXPECT_TRUE(FromHloSharding(ir::Sharding::Manual(), mesh, 2)->manual);
  // A manual subgroup over a [4] mesh needs its [2,2] refinement (Partition refines the mesh).
  EXPECT_THAT(
      std::string(FromHloSharding(
                      *ir::ParseSharding("{devices=[2,2]<=[4] last_tile_dims={manual}}"), mesh, 1)
                      .status()
                      .message()),
      ::testing::HasSubstr("(its manual subgroup read as a tile dim): sharding "
                           "{devices=[2,2]0,1,2,3} cannot be expressed"));
  EXPECT_FALSE(FromHloSharding(ir::Sharding::Maximal(7), mesh, 2).ok());
}

// Manual subgroups are manual axes: the devices of one subgroup dim index share a manual value,
// the tile dims split it over the other axes; the HLO form comes back in XLA's
// {manual, replicated} order.
TEST(AxisShardingTest, ManualSubgroupsAreManualAxes) {
  const Mesh named = MakeMesh({2, 2}, {"x", "y"});
  const auto convert = [&](const std::string& text, int64_t rank) {
    absl::StatusOr<AxisSharding> sharding = FromHloSharding(*ir::ParseSharding(text), named, rank);
    EXPECT_TRUE(sharding.ok()) << sharding.status();
    EXPECT_EQ(ToHloSharding(*sharding, named).ToString(), text);
    return sharding->ToString(named);
  };
  EXPECT_EQ(convert("{devices=[2,1,2]<=[4] last_tile_dims={manual}}", 2), "[{x}, {}] manual {y}");
  EXPECT_EQ(convert("{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dims={manual}}", 2),
            "[{}, {y}] manual {x}");
  EXPECT_EQ(convert("{devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={manual, replicated}}", 2),
            "[{}, {}] manual {y}");
  EXPECT_EQ(convert("{devices=[1,1,2,2]<=[4] last_tile_dims={manual, replicated}}", 2),
            "[{}, {}] manual {x}");
  // Listed ids and the other subgroup order read the same; printed in XLA's form.
  absl::StatusOr<AxisSharding> listed = FromHloSharding(
      *ir::ParseSharding("{devices=[1,2,2]0,2,1,3 last_tile_dims={replicated, manual}}"), named, 1);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->ToString(named), "[{}] manual {x}");  // 0 and 2 differ in their manual index
  // Manual over two axes of an 8-device [2,2,2] mesh, split over the third: tiles {0,4,1,5} and
  // {2,6,3,7} differ along b.
  const Mesh cube = MakeMesh({2, 2, 2}, {"a", "b", "c"});
  absl::StatusOr<AxisSharding> two = FromHloSharding(
      *ir::ParseSharding("{devices=[2,4]<=[2,4]T(1,0) last_tile_dims={manual}}"), cube, 1);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->ToString(cube), "[{b}] manual {a,c}");
  // Manual groups that only a permuted device order lays out ({0,1} and {3,2} share a manual
  // index, devices 2x + y) keep that order, which lays out the groups; the HLO form comes back.
  EXPECT_EQ(convert("{devices=[2,2]0,3,1,2 last_tile_dims={manual}}", 1),
            "[{x}] devices 0,3,1,2 manual {y}");
}

constexpr char kTwoMeshProgram[] = R"(HloModule two_meshes
ENTRY %main (a: f32[4], b: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0), sharding={devices=[2]0,1}
  %b = f32[4] parameter(1), sharding={devices=[2]2,3}
  %na = f32[4] negate(f32[4] %a)
  %nb = f32[4] negate(f32[4] %b)
  ROOT %s = f32[4] add(f32[4] %na, f32[4] %nb)
})";

TEST(MeshAssignmentTest, ValuesFollowTheMeshOfTheirAnnotations) {
  const std::vector<Mesh> meshes = {MakeMesh({2}, {"left"}, {0, 1}),
                                    MakeMesh({2}, {"right"}, {2, 3})};
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(R"(HloModule t
ENTRY %main (a: f32[4], b: f32[4]) -> (f32[4], f32[4]) {
  %a = f32[4] parameter(0), sharding={devices=[2]0,1}
  %b = f32[4] parameter(1), sharding={devices=[2]2,3}
  ROOT %t = (f32[4], f32[4]) tuple(f32[4] %a, f32[4] %b)
})");
  ASSERT_TRUE(module.ok()) << module.status();
  // A tuple of values on two meshes is still an op mixing them.
  EXPECT_FALSE(AssignMeshes(**module, meshes).ok());
  absl::StatusOr<std::unique_ptr<ir::Module>> single = ir::ParseAndVerifyModule(R"(HloModule one
ENTRY %main (a: f32[4], c: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0), sharding={devices=[2]2,3}
  %c = f32[4] parameter(1)
  ROOT %s = f32[4] add(f32[4] %a, f32[4] %c)
})");
  ASSERT_TRUE(single.ok()) << single.status();
  absl::StatusOr<absl::flat_hash_map<const ir::Instruction*, int64_t>> assigned =
      AssignMeshes(**single, meshes);
  ASSERT_TRUE(assigned.ok()) << assigned.status();
  EXPECT_EQ(assigned->at((*single)->entry()->root()), 1);
  EXPECT_EQ(assigned->at((*single)->entry()->parameter(1)), -1);
}

TEST(MeshAssignmentTest, AnOpMixingTwoMeshesNamesBoth) {
  const std::vector<Mesh> meshes = {MakeMesh({2}, {"left"}, {0, 1}),
                                    MakeMesh({2}, {"right"}, {2, 3})};
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(kTwoMeshProgram);
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(std::string(AssignMeshes(**module, meshes).status().message()),
            "7:8: %s (add): %na lives on mesh [2] (left) devices 0..1 but %nb on mesh [2] (right) "
            "devices 2,3");
  EXPECT_EQ(std::string(AssignMeshes(**module, {meshes[0]}).status().message()),
            "4:3: %b: sharding {devices=[2]2,3} uses devices {2,3}, which are not those of any "
            "mesh ([2] (left) devices 0..1)");
}

TEST(MeshAssignmentTest, PartitionPicksTheMeshTheProgramLivesOn) {
  const std::vector<Mesh> meshes = {MakeMesh({4}), MakeMesh({2, 2}, {"x", "y"}, {3, 2, 1, 0})};
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(R"(HloModule p
ENTRY %main (a: f32[4,4]) -> f32[4,4] {
  %a = f32[4,4] parameter(0), sharding={devices=[2,2]3,2,1,0}
  ROOT %n = f32[4,4] negate(f32[4,4] %a)
})");
  ASSERT_TRUE(module.ok()) << module.status();
  // Both meshes use devices 0..3; only the second expresses the sharding.
  absl::StatusOr<PartitionResult> result = Partition(**module, meshes);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->parameter_shardings[0][0].dims, (std::vector<std::vector<int64_t>>{{0}, {1}}));
  EXPECT_TRUE(result->parameter_shardings[0][0].device_order.empty());
  // Over the [4] mesh alone the partitioner splits its axis into [2,2] and lays the value out in
  // the annotation's device order.
  absl::StatusOr<PartitionResult> refined = Partition(**module, std::vector<Mesh>{meshes[0]});
  ASSERT_TRUE(refined.ok()) << refined.status();
  EXPECT_EQ(refined->mesh.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ToHloSharding(refined->parameter_shardings[0][0], refined->mesh),
            *ir::ParseSharding("{devices=[2,2]3,2,1,0}"));
}

TEST(MeshTest, RefinedMeshSplitsAxesIntoPrimeFactors) {
  const Mesh mesh = MakeMesh({4, 3, 12}, {"a", "b", "c"});
  EXPECT_FALSE(mesh.IsRefined());
  const Mesh refined = mesh.Refined();
  EXPECT_TRUE(refined.IsRefined());
  EXPECT_EQ(refined.shape(), (std::vector<int64_t>{2, 2, 3, 2, 2, 3}));
  EXPECT_EQ(refined.axis_names(),
            (std::vector<std::string>{"a.0", "a.1", "b", "c.0", "c.1", "c.2"}));
  EXPECT_EQ(refined.device_ids(), mesh.device_ids());
}

// Every tile-assignment form of the HLO syntax converts to mesh axes plus, where the tile
// assignment is no transpose of the mesh's device array, a device order; converting back gives
// the same tile assignment. Expected orders are hand-derived from the device arrays.
TEST(AxisShardingTest, AnyTileAssignmentOverAllDevicesConverts) {
  struct Case {
    std::vector<int64_t> mesh;
    std::string sharding;
    int64_t rank;
    std::vector<int64_t> order;  // expected device order (empty: the mesh's own)
  };
  const std::vector<Case> cases = {
      {{2}, "{devices=[2,1]1,0}", 2, {1, 0}},
      {{2}, "{devices=[2,1]<=[2]}", 2, {}},
      {{2}, "{devices=[1,1,2]1,0 last_tile_dim_replicate}", 2, {}},
      {{2}, "{devices=[1,2,1]1,0 last_tile_dims={replicated}}", 2, {1, 0}},
      {{2, 2}, "{devices=[2,2]<=[2,2]T(1,0)}", 2, {}},
      {{2, 2}, "{devices=[2,2]3,1,0,2}", 2, {3, 1, 0, 2}},
      {{2, 2}, "{devices=[4,1]2,0,3,1}", 2, {2, 0, 3, 1}},
      {{2, 2}, "{devices=[2,1,2]0,3,1,2 last_tile_dim_replicate}", 2, {0, 3, 1, 2}},
      {{2, 2}, "{devices=[1,1,2,2]<=[4] last_tile_dims={replicated, replicated}}", 2, {}},
      {{3, 2}, "{devices=[3,2]<=[2,3]T(1,0)}", 2, {0, 3, 1, 4, 2, 5}},
      {{3, 2}, "{devices=[2,3]5,4,3,2,1,0}", 2, {5, 2, 4, 1, 3, 0}},
      {{2, 2, 2}, "{devices=[2,2,2]<=[2,2,2]T(2,0,1)}", 3, {}},
      {{2, 2, 2}, "{devices=[2,4]7,6,5,4,3,2,1,0}", 2, {7, 6, 5, 4, 3, 2, 1, 0}},
      {{2, 2, 3}, "{devices=[2,3,2]<=[2,3,2]T(2,0,1)}", 3, {0, 4, 8, 2, 6, 10, 1, 5, 9, 3, 7, 11}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.sharding);
    const Mesh mesh = MakeMesh(c.mesh);
    const absl::StatusOr<ir::Sharding> sharding = ir::ParseSharding(c.sharding);
    ASSERT_TRUE(sharding.ok()) << sharding.status();
    absl::StatusOr<AxisSharding> axes = FromHloSharding(*sharding, mesh, c.rank);
    ASSERT_TRUE(axes.ok()) << axes.status();
    EXPECT_EQ(axes->device_order, c.order) << axes->ToString(mesh);
    // Back to HLO: the same devices hold the same tiles (replication dims merged into one).
    const ir::Sharding back = ToHloSharding(*axes, mesh);
    for (int64_t device = 0; device < mesh.device_count(); ++device) {
      const ir::Shape shape(ir::DType::kF32, std::vector<int64_t>(c.rank, 12));
      EXPECT_EQ(back.TileOffsetForDevice(shape, device),
                sharding->TileOffsetForDevice(shape, device))
          << "device " << device;
    }
  }
}

}  // namespace
}  // namespace vkspmd::spmd
