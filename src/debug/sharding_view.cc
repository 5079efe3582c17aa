// Sharding pictures: the tile grid from the tile assignment, then text or SVG rendering.
#include "src/debug/sharding_view.h"

#include <algorithm>
#include <numeric>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_join.h"
#include "fmt/format.h"

namespace vkspmd::debug {
namespace {

// Colours of distinct tiles: xterm-256 backgrounds with dark text, and matching SVG fills.
constexpr int kTerminalColors[] = {153, 186, 217, 151, 223, 189, 158, 230, 181, 195};
constexpr const char* kSvgColors[] = {"#afd7ff", "#d7d787", "#ffafaf", "#afd7af", "#ffd7af",
                                      "#d7d7ff", "#afffd7", "#ffffd7", "#d7afaf", "#d7ffff"};
constexpr int kColorCount = 10;

std::vector<int64_t> AllDevices(const ir::Sharding& sharding, const ShardingViewOptions& options) {
  if (!options.devices.empty()) return options.devices;
  if (sharding.kind() == ir::Sharding::Kind::kTiled) {
    std::vector<int64_t> ids = sharding.tile_assignment().Flatten();
    std::sort(ids.begin(), ids.end());
    return ids;
  }
  if (sharding.kind() == ir::Sharding::Kind::kMaximal) return {sharding.maximal_device()};
  return {0};
}

std::string Label(const TileCell& cell) { return absl::StrJoin(cell.devices, ","); }

std::string RangeLabel(const TileCell& cell) {
  std::vector<std::string> parts;
  for (const auto& [start, limit] : cell.ranges)
    parts.push_back(fmt::format("{}:{}", start, limit));
  return parts.empty() ? "" : fmt::format("[{}]", absl::StrJoin(parts, ","));
}

std::string Centered(const std::string& text, size_t width) {
  const size_t left = (width - text.size()) / 2;
  return std::string(left, ' ') + text + std::string(width - text.size() - left, ' ');
}

std::string Repeat(const std::string& piece, size_t count) {
  std::string text;
  for (size_t i = 0; i < count; ++i) text += piece;
  return text;
}

// A border line: left, fill, junction, right pieces over `columns` cells of `width`.
std::string Border(const char* left, const char* junction, const char* right, size_t columns,
                   size_t width) {
  std::string line = left;
  for (size_t c = 0; c < columns; ++c) {
    line += Repeat("─", width);
    line += c + 1 == columns ? right : junction;
  }
  return line + "\n";
}

// A stable colour index per distinct device list, in order of first appearance: one pass, so
// that drawing stays linear in the number of tiles.
std::vector<std::vector<int>> ColorIndices(const std::vector<std::vector<TileCell>>& grid) {
  absl::flat_hash_map<std::string, int> first_seen;
  std::vector<std::vector<int>> colors;
  for (const auto& row : grid) {
    std::vector<int>& row_colors = colors.emplace_back();
    for (const TileCell& cell : row) {
      const auto [entry, added] =
          first_seen.try_emplace(Label(cell), static_cast<int>(first_seen.size()));
      row_colors.push_back(entry->second % kColorCount);
    }
  }
  return colors;
}

// Fills in the cell of one tile: the tile's index has one coordinate per tile-assignment dim.
void AddToCell(const ir::Sharding& sharding, const ir::Shape& full,
               const std::vector<int64_t>& index, int64_t device,
               std::vector<std::vector<TileCell>>& grid) {
  const int64_t rank = full.rank();
  for (int64_t d = 2; d < rank; ++d) {
    if (index[d] != 0) return;  // only tiles at index 0 of dims beyond the first two
  }
  const int64_t row = rank >= 2 ? index[0] : 0;
  const int64_t column = rank >= 2 ? index[1] : (rank == 1 ? index[0] : 0);
  TileCell& cell = grid[row][column];
  cell.devices.push_back(device);
  if (!cell.ranges.empty()) return;
  const std::vector<int64_t> start = sharding.TileOffsetForIndex(full, index);
  const std::vector<int64_t> limit = sharding.TileLimitForIndex(full, index);
  for (int64_t d = 0; d < std::min<int64_t>(rank, 2); ++d) {
    cell.ranges.emplace_back(start[d], limit[d]);
  }
}

}  // namespace

absl::StatusOr<std::vector<std::vector<TileCell>>> ShardingGrid(
    const ir::Sharding& sharding, const std::vector<int64_t>& shape,
    const ShardingViewOptions& options) {
  if (sharding.kind() == ir::Sharding::Kind::kTuple) {
    return absl::InvalidArgumentError("draw one element of a tuple sharding at a time");
  }
  const int64_t rank = static_cast<int64_t>(shape.size());
  const std::vector<int64_t> devices = AllDevices(sharding, options);
  const bool tiled = sharding.kind() == ir::Sharding::Kind::kTiled;
  if (tiled && sharding.TiledDataRank() != rank) {
    return absl::InvalidArgumentError(fmt::format("sharding {} tiles {} dims but the shape has {}",
                                                  sharding.ToString(), sharding.TiledDataRank(),
                                                  rank));
  }
  const auto tiles_on = [&](int64_t d) {
    return tiled && d < rank ? sharding.tile_assignment().dimensions[d] : 1;
  };
  const int64_t rows = rank >= 2 ? tiles_on(0) : 1;
  const int64_t columns = rank >= 2 ? tiles_on(1) : tiles_on(0);
  std::vector<std::vector<TileCell>> grid(rows, std::vector<TileCell>(columns));
  const ir::Shape full(ir::DType::kF32, shape);
  if (tiled) {
    // One walk over the tile assignment (not a search per device), limited to the mesh's devices
    // when they are given.
    const absl::flat_hash_set<int64_t> shown(options.devices.begin(), options.devices.end());
    const std::vector<int64_t>& dims = sharding.tile_assignment().dimensions;
    std::vector<int64_t> index(dims.size(), 0);
    for (int64_t device : sharding.tile_assignment().Flatten()) {
      if (shown.empty() || shown.contains(device)) AddToCell(sharding, full, index, device, grid);
      ir::NextIndex(dims, index);
    }
  } else {
    for (int64_t device : devices) {
      if (sharding.UsesDevice(device)) {
        AddToCell(sharding, full, std::vector<int64_t>(std::max<int64_t>(rank, 1), 0), device,
                  grid);
      }
    }
  }
  for (auto& row : grid) {
    for (TileCell& cell : row) std::sort(cell.devices.begin(), cell.devices.end());
  }
  return grid;
}

namespace {

// The part of the grid that is drawn (at most kMaxDrawnTiles rows and columns, from the first),
// its colours, and a line saying what was left out when anything was.
struct DrawnGrid {
  std::vector<std::vector<TileCell>> cells;
  std::vector<std::vector<int>> colors;
  std::string note;
};

absl::StatusOr<DrawnGrid> Drawn(const ir::Sharding& sharding, const std::vector<int64_t>& shape,
                                const ShardingViewOptions& options) {
  absl::StatusOr<std::vector<std::vector<TileCell>>> grid = ShardingGrid(sharding, shape, options);
  if (!grid.ok()) return grid.status();
  const size_t rows = grid->size(), columns = grid->front().size();
  DrawnGrid drawn;
  if (rows > kMaxDrawnTiles || columns > kMaxDrawnTiles) {
    grid->resize(std::min(rows, kMaxDrawnTiles));
    for (auto& row : *grid) row.resize(std::min(columns, kMaxDrawnTiles));
    drawn.note = fmt::format("showing the first {} of {} tile rows and {} of {} tile columns",
                             grid->size(), rows, grid->front().size(), columns);
  }
  drawn.cells = *std::move(grid);
  drawn.colors = ColorIndices(drawn.cells);
  return drawn;
}

}  // namespace

absl::StatusOr<std::string> VisualizeSharding(const ir::Sharding& sharding,
                                              const std::vector<int64_t>& shape,
                                              const ShardingViewOptions& options) {
  absl::StatusOr<DrawnGrid> drawn = Drawn(sharding, shape, options);
  if (!drawn.ok()) return drawn.status();
  const std::vector<std::vector<TileCell>>* grid = &drawn->cells;
  const std::vector<std::vector<int>>& colors = drawn->colors;
  size_t width = 0;
  for (const auto& row : *grid) {
    for (const TileCell& cell : row) {
      width = std::max({width, Label(cell).size(), RangeLabel(cell).size()});
    }
  }
  width += 2;
  const size_t columns = grid->front().size();
  std::string text = Border("┌", "┬", "┐", columns, width);
  for (size_t r = 0; r < grid->size(); ++r) {
    for (const bool range_line : {false, true}) {
      if (range_line && shape.empty()) continue;
      std::string line = "│";
      for (size_t c = 0; c < columns; ++c) {
        const TileCell& cell = (*grid)[r][c];
        const std::string body = Centered(range_line ? RangeLabel(cell) : Label(cell), width);
        if (options.color) {
          line += fmt::format("\x1b[30;48;5;{}m{}\x1b[0m", kTerminalColors[colors[r][c]], body);
        } else {
          line += body;
        }
        line += "│";
      }
      text += line + "\n";
    }
    text += r + 1 == grid->size() ? Border("└", "┴", "┘", columns, width)
                                  : Border("├", "┼", "┤", columns, width);
  }
  if (!drawn->note.empty()) text += "(" + drawn->note + ")\n";
  return text;
}

absl::StatusOr<std::string> ShardingSvg(const ir::Sharding& sharding,
                                        const std::vector<int64_t>& shape,
                                        const ShardingViewOptions& options) {
  absl::StatusOr<DrawnGrid> drawn = Drawn(sharding, shape, options);
  if (!drawn.ok()) return drawn.status();
  const std::vector<std::vector<TileCell>>* grid = &drawn->cells;
  const std::vector<std::vector<int>>& colors = drawn->colors;
  constexpr double kWidth = 480, kHeight = 320;
  const size_t rows = grid->size(), columns = grid->front().size();
  // Tile sizes from the shard extents when known, equal otherwise.
  const auto extent = [&](const TileCell& cell, size_t dim, size_t count) -> double {
    const size_t range = shape.size() >= 2 ? dim : 0;
    const bool truncated = !drawn->note.empty();
    if (truncated || cell.ranges.size() <= range || (shape.size() < 2 && dim == 0)) {
      return 1.0 / count;
    }
    const double total = static_cast<double>(shape[range]);
    return total == 0 ? 1.0 / count
                      : (cell.ranges[range].second - cell.ranges[range].first) / total;
  };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"monospace\" font-size=\"14\">\n",
      kWidth + 2, kHeight + 2);
  double y = 1;
  for (size_t r = 0; r < rows; ++r) {
    const double height = kHeight * extent((*grid)[r][0], 0, rows);
    double x = 1;
    for (size_t c = 0; c < columns; ++c) {
      const TileCell& cell = (*grid)[r][c];
      const double width = kWidth * extent(cell, 1, columns);
      svg += fmt::format(
          "  <rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\" "
          "stroke=\"black\"/>\n",
          x, y, width, height, kSvgColors[colors[r][c]]);
      svg += fmt::format("  <text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                         x + width / 2, y + height / 2, Label(cell));
      if (!shape.empty()) {
        svg += fmt::format(
            "  <text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"11\">{}</text>\n",
            x + width / 2, y + height / 2 + 16, RangeLabel(cell));
      }
      x += width;
    }
    y += height;
  }
  if (!drawn->note.empty()) svg += fmt::format("  <!-- {} -->\n", drawn->note);
  return svg + "</svg>\n";
}

}  // namespace vkspmd::debug
