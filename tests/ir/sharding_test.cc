// Sharding values: every HLO text form parses and prints back identically, iota device arrays
// expand like XLA's IotaTileAssignment, and equality compares meaning rather than spelling.
#include "src/ir/sharding.h"

#include "gtest/gtest.h"
#include "src/ir/parser.h"

namespace vkspmd::ir {
namespace {

class ShardingTextTest : public testing::TestWithParam<const char*> {};

TEST_P(ShardingTextTest, PrintsBackAsParsed) {
  absl::StatusOr<Sharding> sharding = ParseSharding(GetParam());
  ASSERT_TRUE(sharding.ok()) << sharding.status();
  EXPECT_EQ(sharding->ToString(), GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    AllForms, ShardingTextTest,
    testing::Values("{replicated}", "{manual}", "{maximal device=3}", "{devices=[2,1]0,1}",
                    "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}", "{devices=[2,2]<=[4]}",
                    "{devices=[2,2]<=[2,2]T(1,0)}", "{devices=[4,2]<=[2,2,2]T(2,0,1)}",
                    "{devices=[1,2,2]<=[4] last_tile_dims={manual}}",
                    "{devices=[2,1,2,2]<=[8] last_tile_dims={manual, replicated}}",
                    "{{replicated}, {devices=[2]0,1}, {maximal device=0}}", "{}",
                    "{{{manual}}, {replicated}}"));

TEST(ShardingTest, IotaTransposeExpandsLikeXla) {
  absl::StatusOr<Sharding> sharding = ParseSharding("{devices=[2,2]<=[2,2]T(1,0)}");
  ASSERT_TRUE(sharding.ok());
  EXPECT_EQ(sharding->tile_assignment().Flatten(), (std::vector<int64_t>{0, 2, 1, 3}));
  absl::StatusOr<Sharding> mesh = ParseSharding("{devices=[1,4,2]<=[2,4]T(1,0)}");
  ASSERT_TRUE(mesh.ok());
  // GSPMD-NOTES: (None, 'tp') over a 2x4 mesh is devices=[1,4,2]0,4,1,5,2,6,3,7.
  EXPECT_EQ(mesh->tile_assignment().Flatten(), (std::vector<int64_t>{0, 4, 1, 5, 2, 6, 3, 7}));
}

TEST(ShardingTest, EqualityIgnoresTheSpellingOfTheDeviceArray) {
  EXPECT_EQ(*ParseSharding("{devices=[2,2]<=[4]}"), *ParseSharding("{devices=[2,2]0,1,2,3}"));
  EXPECT_EQ(*ParseSharding("{devices=[2,2]<=[2,2]T(1,0)}"),
            *ParseSharding("{devices=[2,2]0,2,1,3}"));
  EXPECT_NE(*ParseSharding("{devices=[2,2]<=[4]}"), *ParseSharding("{devices=[4,1]<=[4]}"));
  EXPECT_NE(*ParseSharding("{devices=[2,2]<=[4]}"),
            *ParseSharding("{devices=[2,2]<=[4] last_tile_dim_replicate}"));
  EXPECT_NE(*ParseSharding("{maximal device=1}"), *ParseSharding("{maximal device=2}"));
  EXPECT_NE(Sharding::Replicated(), Sharding::Manual());
}

TEST(ShardingTest, TiledDataRankExcludesReplicationDims) {
  EXPECT_EQ(ParseSharding("{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}")->TiledDataRank(), 2);
  EXPECT_EQ(ParseSharding("{devices=[2,1,2,2]<=[8] last_tile_dims={manual, replicated}}")
                ->TiledDataRank(),
            2);
}

TEST(ShardingTest, ValidatesAgainstShapes) {
  const Shape matrix(DType::kF32, {4, 8});
  EXPECT_TRUE(ParseSharding("{devices=[2,2]<=[4]}")->ValidateForShape(matrix).ok());
  EXPECT_FALSE(ParseSharding("{devices=[4]<=[4]}")->ValidateForShape(matrix).ok());
  EXPECT_TRUE(ParseSharding("{replicated}")->ValidateForShape(matrix).ok());
  const Shape pair = Shape::Tuple({matrix, Shape::Scalar(DType::kS32)});
  EXPECT_TRUE(ParseSharding("{{devices=[2,1]0,1}, {replicated}}")->ValidateForShape(pair).ok());
  EXPECT_FALSE(ParseSharding("{{replicated}}")->ValidateForShape(pair).ok());
}

TEST(ShardingTest, TileQueriesFollowTheTileAssignment) {
  const Sharding sharding =
      *ParseSharding("{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}");
  const Shape shape(DType::kF32, {5, 3});
  EXPECT_EQ(sharding.NumTiles(), 2);
  EXPECT_EQ(sharding.TileShape(shape), Shape(DType::kF32, {3, 3}));
  // Devices in array order: 0, 2, 1, 3; device 1 is at (1, 0, 0).
  EXPECT_EQ(sharding.TileIndexForDevice(1), (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(sharding.TileOffsetForDevice(shape, 1), (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(sharding.TileLimitForDevice(shape, 1), (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(sharding.TileOffsetForDevice(shape, 2), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(sharding.TileIndexForDevice(7), std::nullopt);
  EXPECT_EQ(Sharding::Replicated().TileShape(shape), shape);
}

TEST(ShardingTest, DeviceQueriesCoverReplicationAndMaximal) {
  const Sharding partial = *ParseSharding("{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}");
  EXPECT_EQ(partial.TotalNumTiles(), 4);
  EXPECT_EQ(partial.DeviceForTileIndex({1, 0, 0}), 1);
  EXPECT_TRUE(partial.UsesDevice(3));
  EXPECT_FALSE(partial.UsesDevice(4));
  EXPECT_EQ(partial.DevicesHoldingSameTile(1, {0, 1, 2, 3}), (std::vector<int64_t>{1, 3}));
  const Sharding maximal = Sharding::Maximal(2);
  EXPECT_TRUE(maximal.IsTileMaximal());
  EXPECT_FALSE(maximal.UsesDevice(0));
  EXPECT_EQ(maximal.DevicesHoldingSameTile(2, {0, 1, 2, 3}), (std::vector<int64_t>{2}));
  EXPECT_EQ(Sharding::Replicated().DevicesHoldingSameTile(0, {0, 1}), (std::vector<int64_t>{0, 1}));
  const Sharding tiled = *ParseSharding("{devices=[2,2]<=[4]}");
  EXPECT_FALSE(tiled.HasPartialReplication());
  EXPECT_EQ(tiled.DevicesHoldingSameTile(3, {0, 1, 2, 3}), (std::vector<int64_t>{3}));
}

TEST(ShardingTest, MetadataInsideAShardingIsIgnored) {
  absl::StatusOr<Sharding> sharding =
      ParseSharding("{devices=[2]0,1 metadata={op_name=\"x\" source_line=3}}");
  ASSERT_TRUE(sharding.ok()) << sharding.status();
  EXPECT_EQ(sharding->ToString(), "{devices=[2]0,1}");
}

TEST(ShardingTest, RejectsMalformedText) {
  EXPECT_EQ(std::string(ParseSharding("{devices=[2]0,1,2}").status().message()),
            "1:16: expected '}', got ','");
  EXPECT_EQ(std::string(ParseSharding("{devices=[0]}").status().message()),
            "1:10: device array dimensions must be in 1..2^20 in all");
  EXPECT_EQ(std::string(ParseSharding("{last_tile_dim_replicate}").status().message()),
            "1:2: unsupported sharding 'last_tile_dim_replicate'");
}

}  // namespace
}  // namespace vkspmd::ir
