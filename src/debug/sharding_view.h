// Pictures of a sharding, as PyTorch/XLA's visualize_sharding draws them: the first two dims of
// the tensor as a grid of tiles, each labelled with the devices that hold it (the whole replica
// group under partial replication). Text with box-drawing characters (ANSI colours optional) and
// SVG.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/sharding.h"

namespace vkspmd::debug {

struct ShardingViewOptions {
  // Devices of the mesh (replicated shardings are held by all of them); default: the devices of
  // the tile assignment, or device 0.
  std::vector<int64_t> devices;
  bool color = false;
};

// One tile of the picture: the devices holding it and, when the shape is known, its index range
// in the first two dims.
struct TileCell {
  std::vector<int64_t> devices;
  std::vector<std::pair<int64_t, int64_t>> ranges;  // [start, limit) per shown dim
};

// Rows x columns of tiles over the first two dims (one row for rank 1, one cell for rank 0 and
// untiled shardings). Tiles split along later dims are shown at index 0 of those dims.
absl::StatusOr<std::vector<std::vector<TileCell>>> ShardingGrid(
    const ir::Sharding& sharding, const std::vector<int64_t>& shape,
    const ShardingViewOptions& options = {});

// The pictures draw at most this many tile rows and columns (the first ones), and say so.
inline constexpr size_t kMaxDrawnTiles = 64;

// The grid drawn with box-drawing characters, e.g. for {devices=[2,1,2]0,1,2,3
// last_tile_dim_replicate} over f32[4,8]:
//   ┌───────────┐
//   │    0,1    │
//   │ [0:2,0:8] │
//   ├───────────┤
//   ...
// Linear in the number of tiles drawn; a larger grid ends with "(showing the first 64 of ...)".
absl::StatusOr<std::string> VisualizeSharding(const ir::Sharding& sharding,
                                              const std::vector<int64_t>& shape,
                                              const ShardingViewOptions& options = {});

// The same layout as an SVG picture; tile widths and heights follow the shard sizes.
absl::StatusOr<std::string> ShardingSvg(const ir::Sharding& sharding,
                                        const std::vector<int64_t>& shape,
                                        const ShardingViewOptions& options = {});

}  // namespace vkspmd::debug
