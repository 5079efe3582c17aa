// Halo exchange along split dims (see halo_exchange.h), and the window helpers built on the
// device tables of the per-device program.
#include "src/spmd/halo_exchange.h"

#include <algorithm>
#include <limits>

#include "fmt/format.h"
#include "src/base/status_macros.h"

namespace vkspmd::spmd {
namespace {

using ir::Instruction;
using ir::Opcode;

// Static slice [low, high) of one dim.
absl::StatusOr<Instruction*> SliceRange(SpmdBuilder& builder, Instruction* value, int64_t dim,
                                        int64_t low, int64_t high) {
  if (low == 0 && high == value->shape().dimension(dim)) return value;
  ir::InstructionAttributes attributes;
  for (int64_t d = 0; d < value->shape().rank(); ++d) {
    attributes.slice.push_back(d == dim ? ir::SliceDimension{low, high, 1}
                                        : ir::SliceDimension{0, value->shape().dimension(d), 1});
  }
  return builder.Add(Opcode::kSlice, {value}, std::move(attributes));
}

// pred of `shape`: low <= index along `dim` + offset < high, offset per partition.
absl::StatusOr<Instruction*> PositionMask(SpmdBuilder& builder, const ir::Shape& shape, int64_t dim,
                                          const std::vector<int64_t>& offsets, int64_t low,
                                          int64_t high) {
  const ir::Shape index_shape(ir::DType::kS32, shape.dimensions());
  ir::InstructionAttributes iota;
  iota.iota_dimension = dim;
  VKSPMD_ASSIGN_OR_RETURN(Instruction * index, builder.Add(Opcode::kIota, {}, iota, index_shape));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * offset, builder.DeviceValue(offsets));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * offset_all, builder.Broadcast(offset, index_shape));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * position,
                          builder.builder().Binary(Opcode::kAdd, index, offset_all));
  const auto bound = [&](int64_t value) -> absl::StatusOr<Instruction*> {
    VKSPMD_ASSIGN_OR_RETURN(Instruction * scalar,
                            builder.Scalar(ir::DType::kS32, static_cast<double>(value)));
    return builder.Broadcast(scalar, index_shape);
  };
  VKSPMD_ASSIGN_OR_RETURN(Instruction * lows, bound(low));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * highs, bound(high));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * above,
                          builder.builder().Compare(position, lows, ir::ComparisonDirection::kGe));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * below,
                          builder.builder().Compare(position, highs, ir::ComparisonDirection::kLt));
  return builder.builder().Binary(Opcode::kAnd, above, below);
}

}  // namespace

// The device holding shard `index` along `axes` with the same coordinates as `device` on the
// other axes.
int64_t DeviceWithIndex(const Mesh& mesh, int64_t device, const std::vector<int64_t>& axes,
                        int64_t index) {
  std::vector<int64_t> coordinates = *mesh.CoordinatesOf(device);
  for (auto axis = axes.rbegin(); axis != axes.rend(); ++axis) {
    coordinates[*axis] = index % mesh.axis_size(*axis);
    index /= mesh.axis_size(*axis);
  }
  return mesh.DeviceAt(coordinates);
}

// Per partition id: the value `by_shard` gives the device's shard index along `axes`.
std::vector<int64_t> ByPartition(const Mesh& mesh, const std::vector<int64_t>& axes,
                                 const std::vector<int64_t>& by_shard) {
  std::vector<int64_t> values(mesh.device_count());
  for (int64_t device : mesh.device_ids()) values[device] = by_shard[mesh.IndexAlong(device, axes)];
  return values;
}

// Keeps `value` where positions start[k] + index along `dim` lie in [0, limit), else `fill`.
absl::StatusOr<Instruction*> KeepInside(SpmdBuilder& builder, Instruction* value, int64_t dim,
                                        const std::vector<int64_t>& axes,
                                        const std::vector<HaloWindow>& windows, int64_t limit,
                                        Instruction* fill) {
  std::vector<int64_t> starts;
  for (const HaloWindow& window : windows) starts.push_back(window.start);
  VKSPMD_ASSIGN_OR_RETURN(Instruction * mask,
                          PositionMask(builder, value->shape(), dim,
                                       ByPartition(builder.mesh(), axes, starts), 0, limit));
  return builder.Add(Opcode::kSelect, {mask, value, fill});
}

// Windows of a result dim `result_size` long, split `tiles` ways, whose position q is the
// source's position q - `shift`.
std::vector<HaloWindow> ShiftedWindows(int64_t result_size, int64_t tiles, int64_t shift) {
  const int64_t size = CeilDivSigned(result_size, tiles);
  std::vector<HaloWindow> windows;
  for (int64_t k = 0; k < tiles; ++k) {
    windows.push_back({k * size - shift, std::clamp(result_size - k * size, int64_t{0}, size)});
  }
  return windows;
}

absl::StatusOr<Instruction*> ExchangeHalo(SpmdBuilder& builder, Instruction* local, int64_t dim,
                                          const std::vector<int64_t>& axes, int64_t valid_size,
                                          const std::vector<HaloWindow>& windows, int64_t size) {
  const Mesh& mesh = builder.mesh();
  const int64_t tiles = mesh.SizeOf(axes);
  const int64_t shard = local->shape().dimension(dim);
  if (static_cast<int64_t>(windows.size()) != tiles || shard == 0) {
    return absl::InternalError(
        fmt::format("halo exchange of a dim of {} elements per shard with "
                    "{} windows over {} tiles",
                    shard, windows.size(), tiles));
  }
  // Per shard: the positions it needs, and the neighbour distances they span.
  std::vector<std::pair<int64_t, int64_t>> needed(tiles);
  int64_t nearest = std::numeric_limits<int64_t>::max(), farthest = 0;
  bool any = false;
  for (int64_t k = 0; k < tiles; ++k) {
    const HaloWindow& window = windows[k];
    needed[k] = {std::max<int64_t>(window.start, 0),
                 std::min(window.start + std::min(window.valid, size), valid_size)};
    if (needed[k].first >= needed[k].second) continue;
    nearest = std::min(nearest, FloorDiv(needed[k].first, shard) - k);
    farthest = any ? std::max(farthest, FloorDiv(needed[k].second - 1, shard) - k)
                   : FloorDiv(needed[k].second - 1, shard) - k;
    any = true;
  }
  std::vector<int64_t> result_dims = local->shape().dimensions();
  result_dims[dim] = size;
  const ir::Shape result_shape(local->shape().dtype(), result_dims);
  if (!any) {
    VKSPMD_ASSIGN_OR_RETURN(Instruction * zero, builder.Scalar(local->shape().dtype(), 0));
    return builder.Broadcast(zero, result_shape);
  }
  // The nearest shard sends a suffix from `first`, the farthest a prefix up to `last`, those in
  // between everything.
  int64_t first = shard, last = 0;
  for (int64_t k = 0; k < tiles; ++k) {
    if (needed[k].first >= needed[k].second) continue;
    first = std::min(first, needed[k].first - (k + nearest) * shard);
    last = std::max(last, needed[k].second - (k + farthest) * shard);
  }
  std::vector<Instruction*> pieces;
  for (int64_t distance = nearest; distance <= farthest; ++distance) {
    VKSPMD_ASSIGN_OR_RETURN(Instruction * piece,
                            SliceRange(builder, local, dim, distance == nearest ? first : 0,
                                       distance == farthest ? last : shard));
    if (distance != 0) {
      std::vector<std::pair<int64_t, int64_t>> pairs;
      for (int64_t device : mesh.device_ids()) {
        const int64_t k = mesh.IndexAlong(device, axes);
        const int64_t source = k + distance;
        if (source < 0 || source >= tiles) continue;
        const auto& [low, high] = needed[k];
        if (low >= high || high <= source * shard || low >= (source + 1) * shard) continue;
        pairs.push_back({DeviceWithIndex(mesh, device, axes, source), device});
      }
      if (pairs.empty()) {
        // Nobody needs this distance (windows of other devices lie on both sides of it): the
        // piece only keeps the buffer contiguous.
        VKSPMD_ASSIGN_OR_RETURN(Instruction * zero, builder.Scalar(local->shape().dtype(), 0));
        VKSPMD_ASSIGN_OR_RETURN(piece, builder.Broadcast(zero, piece->shape()));
      } else {
        VKSPMD_ASSIGN_OR_RETURN(piece, builder.CollectivePermute(piece, pairs, axes));
      }
    }
    pieces.push_back(piece);
  }
  Instruction* buffer = pieces[0];
  if (pieces.size() > 1) {
    ir::InstructionAttributes attributes;
    attributes.dimensions = {dim};
    VKSPMD_ASSIGN_OR_RETURN(buffer, builder.Add(Opcode::kConcatenate, pieces, attributes));
  }
  // Where each window starts in the buffer; the buffer is padded so that no window is clamped.
  const int64_t length = buffer->shape().dimension(dim);
  std::vector<int64_t> offsets(tiles, 0);
  int64_t before = 0, after = 0;
  for (int64_t k = 0; k < tiles; ++k) {
    if (needed[k].first >= needed[k].second) continue;
    offsets[k] = windows[k].start - ((k + nearest) * shard + first);
    before = std::max(before, -offsets[k]);
    after = std::max(after, offsets[k] + size - length);
  }
  if (before == 0 && after == 0 && length == size &&
      std::all_of(offsets.begin(), offsets.end(), [](int64_t offset) { return offset == 0; })) {
    return buffer;
  }
  if (before > 0 || after > 0) {
    VKSPMD_ASSIGN_OR_RETURN(Instruction * zero, builder.Scalar(local->shape().dtype(), 0));
    ir::InstructionAttributes attributes;
    for (int64_t d = 0; d < buffer->shape().rank(); ++d) {
      attributes.padding.push_back(d == dim ? ir::PaddingDimension{before, after, 0}
                                            : ir::PaddingDimension{0, 0, 0});
    }
    VKSPMD_ASSIGN_OR_RETURN(buffer, builder.Add(Opcode::kPad, {buffer, zero}, attributes));
  }
  for (int64_t k = 0; k < tiles; ++k) {
    offsets[k] = needed[k].first < needed[k].second ? offsets[k] + before : 0;
  }
  VKSPMD_ASSIGN_OR_RETURN(Instruction * start,
                          builder.DeviceValue(ByPartition(mesh, axes, offsets)));
  std::vector<Instruction*> starts(buffer->shape().rank(), nullptr);
  starts[dim] = start;
  return builder.DynamicSlice(buffer, starts, result_shape.dimensions());
}

}  // namespace vkspmd::spmd
