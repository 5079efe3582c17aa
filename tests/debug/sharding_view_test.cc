// Sharding pictures: the tile grid (replica groups per tile, index ranges, uneven and empty
// tiles), the box-drawing text with and without colour, and the SVG.
#include "src/debug/sharding_view.h"

#include "gtest/gtest.h"
#include "src/ir/parser.h"

namespace vkspmd::debug {
namespace {

ir::Sharding Parse(const char* text) { return *ir::ParseSharding(text); }

TEST(ShardingViewTest, PartialReplicationLabelsTilesWithTheirReplicaGroup) {
  // The mark_sharding RFC example: 8x32 on a 4x2 mesh with spec (1, None).
  const ir::Sharding sharding = Parse("{devices=[2,1,4]0,2,4,6,1,3,5,7 last_tile_dim_replicate}");
  absl::StatusOr<std::string> text = VisualizeSharding(sharding, {8, 32});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text,
            "┌────────────┐\n"
            "│  0,2,4,6   │\n"
            "│ [0:4,0:32] │\n"
            "├────────────┤\n"
            "│  1,3,5,7   │\n"
            "│ [4:8,0:32] │\n"
            "└────────────┘\n");
}

TEST(ShardingViewTest, GridFollowsTheTileAssignmentWithUnevenTiles) {
  absl::StatusOr<std::vector<std::vector<TileCell>>> grid =
      ShardingGrid(Parse("{devices=[2,2]<=[2,2]T(1,0)}"), {5, 3});
  ASSERT_TRUE(grid.ok()) << grid.status();
  ASSERT_EQ(grid->size(), 2u);
  EXPECT_EQ((*grid)[0][1].devices, std::vector<int64_t>{2});
  EXPECT_EQ((*grid)[1][0].devices, std::vector<int64_t>{1});
  EXPECT_EQ((*grid)[1][1].ranges, (std::vector<std::pair<int64_t, int64_t>>{{3, 5}, {2, 3}}));
  // 4 elements on 3 devices: the last tile is empty.
  absl::StatusOr<std::vector<std::vector<TileCell>>> vector =
      ShardingGrid(Parse("{devices=[3]0,1,2}"), {4});
  ASSERT_TRUE(vector.ok());
  EXPECT_EQ((*vector)[0][2].ranges, (std::vector<std::pair<int64_t, int64_t>>{{4, 4}}));
}

TEST(ShardingViewTest, ReplicatedAndMaximalAreOneCell) {
  ShardingViewOptions options;
  options.devices = {0, 1, 2, 3};
  EXPECT_EQ(*VisualizeSharding(ir::Sharding::Replicated(), {}, options),
            "┌─────────┐\n│ 0,1,2,3 │\n└─────────┘\n");
  EXPECT_EQ(*VisualizeSharding(ir::Sharding::Maximal(2), {}, options), "┌───┐\n│ 2 │\n└───┘\n");
}

TEST(ShardingViewTest, ColourDistinguishesTilesAndSvgDrawsEveryTile) {
  ShardingViewOptions options;
  options.color = true;
  const ir::Sharding sharding = Parse("{devices=[2,2]<=[4]}");
  const std::string text = *VisualizeSharding(sharding, {4, 4}, options);
  EXPECT_NE(text.find("\x1b[30;48;5;153m"), std::string::npos);
  EXPECT_NE(text.find("\x1b[30;48;5;186m"), std::string::npos);
  const std::string svg = *ShardingSvg(sharding, {4, 4});
  size_t rects = 0;
  for (size_t at = svg.find("<rect"); at != std::string::npos; at = svg.find("<rect", at + 1)) {
    ++rects;
  }
  EXPECT_EQ(rects, 4u);
  EXPECT_NE(svg.find(">3</text>"), std::string::npos);
}

TEST(ShardingViewTest, RejectsAShapeOfTheWrongRank) {
  EXPECT_EQ(std::string(ShardingGrid(Parse("{devices=[2,2]<=[4]}"), {4}).status().message()),
            "sharding {devices=[2,2]<=[4]} tiles 2 dims but the shape has 1");
}

// 1024x1024 tiles (2^20 devices): the grid is built in one walk over the tile assignment, and
// the pictures draw the first 64x64 tiles and say so (it used to take minutes, quadratic in the
// tile count, and would have printed 80 MB).
TEST(ShardingViewTest, LargeTilingsAreDrawnQuicklyAndCapped) {
  const ir::Sharding sharding = Parse("{devices=[1024,1024]<=[1048576]}");
  absl::StatusOr<std::vector<std::vector<TileCell>>> grid = ShardingGrid(sharding, {2048, 1024});
  ASSERT_TRUE(grid.ok()) << grid.status();
  ASSERT_EQ(grid->size(), 1024u);
  EXPECT_EQ((*grid)[1023][1023].devices, std::vector<int64_t>{1048575});
  EXPECT_EQ((*grid)[1023][1023].ranges,
            (std::vector<std::pair<int64_t, int64_t>>{{2046, 2048}, {1023, 1024}}));
  absl::StatusOr<std::string> text = VisualizeSharding(sharding, {2048, 1024});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(
      text->ends_with("┘\n(showing the first 64 of 1024 tile rows and 64 of 1024 tile columns)\n"));
  EXPECT_NE(text->find(" 64575 "), std::string::npos);  // row 63, column 63
  EXPECT_EQ(text->find(" 64576 "), std::string::npos);  // row 63, column 64
  EXPECT_EQ(text->find(" 65536 "), std::string::npos);  // row 64, column 0
  absl::StatusOr<std::string> svg = ShardingSvg(sharding, {1024, 1024});
  ASSERT_TRUE(svg.ok()) << svg.status();
  EXPECT_NE(svg->find("<!-- showing the first 64 of 1024"), std::string::npos);
}

// With mesh devices given, tiles on devices outside the mesh are left empty.
TEST(ShardingViewTest, OnlyTheGivenDevicesAreShown) {
  ShardingViewOptions options;
  options.devices = {0, 1};
  absl::StatusOr<std::vector<std::vector<TileCell>>> grid =
      ShardingGrid(Parse("{devices=[4]0,1,2,3}"), {8}, options);
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ((*grid)[0][1].devices, std::vector<int64_t>{1});
  EXPECT_TRUE((*grid)[0][2].devices.empty());
}

}  // namespace
}  // namespace vkspmd::debug
