// Halo exchange along split dims and the local forms of the window-like ops built on it.
#include "src/spmd/halo_exchange.h"

#include <algorithm>
#include <limits>

#include "fmt/format.h"
#include "src/base/status_macros.h"

namespace vkspmd::spmd {
namespace {

using ir::Instruction;
using ir::Opcode;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

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
  const int64_t size = CeilDiv(result_size, tiles);
  std::vector<HaloWindow> windows;
  for (int64_t k = 0; k < tiles; ++k) {
    windows.push_back({k * size - shift, std::clamp(result_size - k * size, int64_t{0}, size)});
  }
  return windows;
}

int64_t Product(const std::vector<int64_t>& dims, size_t from, size_t to) {
  int64_t product = 1;
  for (size_t d = from; d < to; ++d) product *= dims[d];
  return product;
}

struct Operands {
  const Instruction& instruction;
  const std::vector<PartitionedValue>& values;
  const AxisSharding& target;
};

// slice with stride 1 along split dims: each device takes its result window from its own and
// its neighbours' shards.
absl::StatusOr<std::optional<Instruction*>> HaloSlice(SpmdBuilder& builder, const Operands& in) {
  const PartitionedValue& x = in.values[0];
  if (x.sharding.dims != in.target.dims) return std::nullopt;
  ir::InstructionAttributes attributes = in.instruction.attributes();
  Instruction* local = x.local;
  bool exchanged = false;
  for (int64_t d = 0; d < x.global.rank(); ++d) {
    const int64_t tiles = x.sharding.TilesOn(d, builder.mesh());
    if (tiles == 1) continue;
    const ir::SliceDimension slice = attributes.slice[d];
    const int64_t size = x.global.dimension(d);
    if (slice.start == 0 && slice.limit == size && slice.stride == 1) {
      attributes.slice[d] = {0, local->shape().dimension(d), 1};
      continue;
    }
    if (slice.stride != 1) return std::nullopt;
    const int64_t result_size = slice.limit - slice.start;
    if (result_size <= 0 || size == 0) return std::nullopt;
    const int64_t shard = CeilDiv(result_size, tiles);
    VKSPMD_ASSIGN_OR_RETURN(local,
                            ExchangeHalo(builder, local, d, x.sharding.dims[d], size,
                                         ShiftedWindows(result_size, tiles, -slice.start), shard));
    attributes.slice[d] = {0, shard, 1};
    exchanged = true;
  }
  if (!exchanged) return std::nullopt;
  return builder.Add(Opcode::kSlice, {local}, std::move(attributes));
}

// pad without interior padding along split dims: windows shifted by the low padding, positions
// outside the operand set to the padding value.
absl::StatusOr<std::optional<Instruction*>> HaloPad(SpmdBuilder& builder, const Operands& in) {
  const PartitionedValue& x = in.values[0];
  if (x.sharding.dims != in.target.dims) return std::nullopt;
  ir::InstructionAttributes attributes = in.instruction.attributes();
  Instruction* local = x.local;
  Instruction* value = in.values[1].local;
  bool exchanged = false;
  for (int64_t d = 0; d < x.global.rank(); ++d) {
    const int64_t tiles = x.sharding.TilesOn(d, builder.mesh());
    const ir::PaddingDimension padding = attributes.padding[d];
    if (tiles == 1 || (padding.low == 0 && padding.high == 0 && padding.interior == 0)) continue;
    if (padding.interior != 0) return std::nullopt;
    const int64_t size = x.global.dimension(d);
    const int64_t result_size = in.instruction.shape().dimension(d);
    if (result_size <= 0 || size == 0) return std::nullopt;
    const std::vector<HaloWindow> windows = ShiftedWindows(result_size, tiles, padding.low);
    const int64_t shard = CeilDiv(result_size, tiles);
    VKSPMD_ASSIGN_OR_RETURN(
        local, ExchangeHalo(builder, local, d, x.sharding.dims[d], size, windows, shard));
    VKSPMD_ASSIGN_OR_RETURN(Instruction * fill, builder.Broadcast(value, local->shape()));
    VKSPMD_ASSIGN_OR_RETURN(local,
                            KeepInside(builder, local, d, x.sharding.dims[d], windows, size, fill));
    attributes.padding[d] = {0, 0, 0};
    exchanged = true;
  }
  if (!exchanged) return std::nullopt;
  const bool padded = std::any_of(
      attributes.padding.begin(), attributes.padding.end(),
      [](const ir::PaddingDimension& p) { return p.low != 0 || p.high != 0 || p.interior != 0; });
  if (!padded) return local;
  return builder.Add(Opcode::kPad, {local, value}, std::move(attributes));
}

// reverse along split dims: one collective-permute sends shard k to the device holding shard
// n-1-k (all reversed split dims at once), a local reverse, and for uneven splits a halo shift by
// the padding, which the reversal moved to the front.
absl::StatusOr<std::optional<Instruction*>> HaloReverse(SpmdBuilder& builder, const Operands& in) {
  const PartitionedValue& x = in.values[0];
  if (x.sharding.dims != in.target.dims) return std::nullopt;
  const Mesh& mesh = builder.mesh();
  std::vector<int64_t> split;
  for (int64_t d : in.instruction.attributes().dimensions) {
    if (x.sharding.TilesOn(d, mesh) > 1) split.push_back(d);
  }
  if (split.empty()) return std::nullopt;
  std::vector<std::pair<int64_t, int64_t>> pairs;
  std::vector<int64_t> axes;
  for (int64_t d : split)
    axes.insert(axes.end(), x.sharding.dims[d].begin(), x.sharding.dims[d].end());
  for (int64_t device : mesh.device_ids()) {
    int64_t mirror = device;
    for (int64_t d : split) {
      const std::vector<int64_t>& dim_axes = x.sharding.dims[d];
      mirror = DeviceWithIndex(mesh, mirror, dim_axes,
                               mesh.SizeOf(dim_axes) - 1 - mesh.IndexAlong(device, dim_axes));
    }
    pairs.push_back({device, mirror});
  }
  VKSPMD_ASSIGN_OR_RETURN(Instruction * local, builder.CollectivePermute(x.local, pairs, axes));
  VKSPMD_ASSIGN_OR_RETURN(local,
                          builder.Add(Opcode::kReverse, {local}, in.instruction.attributes()));
  for (int64_t d : split) {
    const int64_t tiles = x.sharding.TilesOn(d, mesh);
    const int64_t size = x.global.dimension(d);
    const int64_t shard = local->shape().dimension(d);
    if (size % tiles == 0 || size == 0) continue;
    // Reversed, the padded dim holds the padding in its first tiles*shard - size positions.
    VKSPMD_ASSIGN_OR_RETURN(local,
                            ExchangeHalo(builder, local, d, x.sharding.dims[d], tiles * shard,
                                         ShiftedWindows(size, tiles, size - tiles * shard), shard));
  }
  return local;
}

// concatenate along a split dim: each operand's part of every device's result window arrives by
// halo exchange; the parts are merged by position.
absl::StatusOr<std::optional<Instruction*>> HaloConcatenate(SpmdBuilder& builder,
                                                            const Operands& in) {
  const int64_t dim = in.instruction.attributes().dimensions[0];
  for (const PartitionedValue& operand : in.values) {
    if (operand.sharding.dims != in.target.dims) return std::nullopt;
  }
  const std::vector<int64_t>& axes = in.target.dims[dim];
  const int64_t tiles = builder.mesh().SizeOf(axes);
  if (tiles == 1) return std::nullopt;
  const int64_t result_size = in.instruction.shape().dimension(dim);
  if (result_size == 0) return std::nullopt;
  const int64_t shard = CeilDiv(result_size, tiles);
  Instruction* result = nullptr;
  int64_t offset = 0;
  for (const PartitionedValue& operand : in.values) {
    const int64_t size = operand.global.dimension(dim);
    if (size == 0) continue;
    const std::vector<HaloWindow> windows = ShiftedWindows(result_size, tiles, offset);
    offset += size;
    VKSPMD_ASSIGN_OR_RETURN(Instruction * part,
                            ExchangeHalo(builder, operand.local, dim, axes, size, windows, shard));
    if (result == nullptr) {
      result = part;
      continue;
    }
    VKSPMD_ASSIGN_OR_RETURN(result, KeepInside(builder, part, dim, axes, windows, size, result));
  }
  if (result == nullptr) return std::nullopt;
  return result;
}

// reshape merging a split dim with the unsplit dims after it, or splitting it into dims the
// first of which is split: the major dims before the split dim are the same on both sides (in
// total, or dim by dim and split alike where some of them are split), so each block below them
// is one flat run of elements that the operand's and the result's tiles cut at different
// places; the result's cuts are a halo window over the operand's. Where the cuts coincide
// nothing moves.
absl::StatusOr<std::optional<Instruction*>> HaloReshape(SpmdBuilder& builder, const Operands& in) {
  const PartitionedValue& x = in.values[0];
  // The last split dim, and whether a dim before it is split too.
  const auto last_split_dim = [](const AxisSharding& sharding) {
    std::pair<std::optional<int64_t>, bool> found = {std::nullopt, false};
    for (int64_t d = 0; d < sharding.rank(); ++d) {
      if (sharding.dims[d].empty()) continue;
      found.second = found.first.has_value();
      found.first = d;
    }
    return found;
  };
  const auto [from_dim, from_major_split] = last_split_dim(x.sharding);
  const auto [to_dim, to_major_split] = last_split_dim(in.target);
  if (!from_dim.has_value() || !to_dim.has_value() ||
      x.sharding.dims[*from_dim] != in.target.dims[*to_dim]) {
    return std::nullopt;
  }
  const std::vector<int64_t>& from = x.global.dimensions();
  const std::vector<int64_t>& to = in.instruction.shape().dimensions();
  if (from_major_split || to_major_split) {
    const auto prefix = [](const auto& all, int64_t end) {
      return std::vector(all.begin(), all.begin() + end);
    };
    if (*from_dim != *to_dim || prefix(from, *from_dim) != prefix(to, *to_dim) ||
        prefix(x.sharding.dims, *from_dim) != prefix(in.target.dims, *to_dim)) {
      return std::nullopt;
    }
  }
  const int64_t block = Product(from, *from_dim, from.size());
  const int64_t to_inner = Product(to, *to_dim + 1, to.size());
  if (Product(from, 0, *from_dim) != Product(to, 0, *to_dim) ||
      block != Product(to, *to_dim, to.size()) || block == 0) {
    return std::nullopt;
  }
  const std::vector<int64_t>& axes = x.sharding.dims[*from_dim];
  const int64_t tiles = builder.mesh().SizeOf(axes);
  const std::vector<int64_t>& local = x.local->shape().dimensions();
  const int64_t local_block = local[*from_dim] * (block / from[*from_dim]);
  VKSPMD_ASSIGN_OR_RETURN(Instruction * flat,
                          builder.Reshape(x.local, {Product(local, 0, *from_dim), local_block}));
  std::vector<HaloWindow> windows = ShiftedWindows(to[*to_dim], tiles, 0);
  for (HaloWindow& window : windows) {
    window.start *= to_inner;
    window.valid *= to_inner;
  }
  const int64_t result_shard = CeilDiv(to[*to_dim], tiles);
  VKSPMD_ASSIGN_OR_RETURN(
      flat, ExchangeHalo(builder, flat, 1, axes, block, windows, result_shard * to_inner));
  return builder.Reshape(
      flat, ShardShape(in.instruction.shape(), in.target, builder.mesh()).dimensions());
}

absl::StatusOr<std::optional<Instruction*>> HaloOp(SpmdBuilder& builder, const Operands& in) {
  switch (in.instruction.opcode()) {
    case Opcode::kSlice:
      return HaloSlice(builder, in);
    case Opcode::kPad:
      return HaloPad(builder, in);
    case Opcode::kReverse:
      return HaloReverse(builder, in);
    case Opcode::kConcatenate:
      return HaloConcatenate(builder, in);
    case Opcode::kReshape:
      return HaloReshape(builder, in);
    default:
      return std::nullopt;
  }
}

}  // namespace

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

absl::StatusOr<std::optional<PartitionedValue>> PartitionWithHalo(
    SpmdBuilder& builder, const Instruction& instruction,
    const std::vector<PartitionedValue>& operands, const AxisSharding& target) {
  const Opcode opcode = instruction.opcode();
  if (opcode != Opcode::kSlice && opcode != Opcode::kPad && opcode != Opcode::kReverse &&
      opcode != Opcode::kConcatenate && opcode != Opcode::kReshape) {
    return std::nullopt;
  }
  if (target.IsSpecial() || instruction.shape().IsTuple()) return std::nullopt;
  const size_t arrays = opcode == Opcode::kConcatenate ? operands.size() : 1;
  std::vector<PartitionedValue> plain = operands;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (operands[i].sharding.IsSpecial()) return std::nullopt;
    // Slice, pad, reverse and concatenate keep the result's tiling: an operand split otherwise
    // is resharded to it first (its bytes count in HaloBytes); a reshape's operand must already
    // be split on the matching dim.
    if (i < arrays && opcode == Opcode::kReshape) {
      if (operands[i].sharding.device_order != target.device_order) return std::nullopt;
    } else if (i < arrays && operands[i].sharding != target) {
      VKSPMD_ASSIGN_OR_RETURN(plain[i], Reshard(builder, operands[i], target));
    }
    plain[i].sharding = plain[i].sharding.InMeshOrder();
  }
  // In the value's device layout, shard indices are read over the mesh permuted to it.
  const Mesh layout = LayoutMesh(target, builder.mesh());
  const ScopedMesh scope(builder, layout);
  const AxisSharding plain_target = target.InMeshOrder();
  VKSPMD_ASSIGN_OR_RETURN(std::optional<Instruction*> local,
                          HaloOp(builder, Operands{instruction, plain, plain_target}));
  if (!local.has_value()) return std::nullopt;
  const ir::Shape expected = ShardShape(instruction.shape(), plain_target, layout);
  if ((*local)->shape() != expected) {
    return absl::InternalError(fmt::format(
        "{}: the halo-exchanged local {} has shape {}, expected {}", instruction.Describe(),
        ir::OpcodeName(opcode), (*local)->shape().ToString(), expected.ToString()));
  }
  return PartitionedValue{*local, instruction.shape(), target};
}

absl::StatusOr<std::optional<int64_t>> HaloBytes(const SpmdBuilder& builder,
                                                 const Instruction& instruction,
                                                 const std::vector<PartitionedValue>& operands,
                                                 const AxisSharding& target) {
  const Mesh& mesh = builder.mesh();
  ir::ComputationBuilder scratch("halo_cost", {1, mesh.device_count()});
  ir::Module module("halo_cost");
  SpmdBuilder trial(scratch, module, mesh);
  VKSPMD_ASSIGN_OR_RETURN(std::optional<PartitionedValue> value,
                          PartitionWithHalo(trial, instruction, operands, target));
  if (!value.has_value()) return std::nullopt;
  int64_t bytes = 0;
  for (const CollectiveRecord& record : trial.records()) bytes += record.bytes_per_device;
  return bytes;
}

}  // namespace vkspmd::spmd
