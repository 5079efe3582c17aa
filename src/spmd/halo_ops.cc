// The local forms of the window-like ops built on halo exchange (see halo_ops.h).
#include "src/spmd/halo_ops.h"

#include <algorithm>

#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/spmd/halo_exchange.h"

namespace vkspmd::spmd {
namespace {

using ir::Instruction;
using ir::Opcode;

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

// A slice `slices` of `x` along its split dims: each device takes the operand rows from its result
// window's first to its last element out of its own and its neighbours' shards, then slices
// locally (with the stride: the rows in between travel too, as in GSPMD's windowed input).
absl::StatusOr<std::optional<Instruction*>> SliceWithHalo(SpmdBuilder& builder,
                                                          const PartitionedValue& x,
                                                          const AxisSharding& target,
                                                          std::vector<ir::SliceDimension> slices) {
  if (x.sharding.dims != target.dims) return std::nullopt;
  Instruction* local = x.local;
  bool exchanged = false;
  for (int64_t d = 0; d < x.global.rank(); ++d) {
    const int64_t tiles = x.sharding.TilesOn(d, builder.mesh());
    if (tiles == 1) continue;
    const ir::SliceDimension slice = slices[d];
    const int64_t size = x.global.dimension(d);
    if (slice.start == 0 && slice.limit == size && slice.stride == 1) {
      slices[d] = {0, local->shape().dimension(d), 1};
      continue;
    }
    const int64_t result_size = CeilDivSigned(slice.limit - slice.start, slice.stride);
    if (result_size <= 0 || size == 0) return std::nullopt;
    const int64_t shard = CeilDivSigned(result_size, tiles);
    // Result row r is operand row start + r * stride: shard k spans operand rows
    // [start + k * shard * stride, ...) over `span` positions, of which those up to its last
    // valid row are wanted.
    const int64_t span = (shard - 1) * slice.stride + 1;
    std::vector<HaloWindow> windows;
    for (int64_t k = 0; k < tiles; ++k) {
      const int64_t rows = std::clamp(result_size - k * shard, int64_t{0}, shard);
      windows.push_back(
          {slice.start + k * shard * slice.stride, rows == 0 ? 0 : (rows - 1) * slice.stride + 1});
    }
    VKSPMD_ASSIGN_OR_RETURN(
        local, ExchangeHalo(builder, local, d, x.sharding.dims[d], size, windows, span));
    slices[d] = {0, span, slice.stride};
    exchanged = true;
  }
  if (!exchanged) return std::nullopt;
  ir::InstructionAttributes attributes;
  attributes.slice = std::move(slices);
  return builder.Add(Opcode::kSlice, {local}, std::move(attributes));
}

absl::StatusOr<std::optional<Instruction*>> HaloSlice(SpmdBuilder& builder, const Operands& in) {
  return SliceWithHalo(builder, in.values[0], in.target, in.instruction.attributes().slice);
}

// dynamic-slice whose split dims start at constants: the static slice XLA's simplifier makes of
// it (starts clamped as the op clamps them). A start known only at run time is not a window
// (EmitLocalDynamicSlice masks it).
absl::StatusOr<std::optional<Instruction*>> HaloDynamicSlice(SpmdBuilder& builder,
                                                             const Operands& in) {
  const ir::Shape& global = in.values[0].global;
  std::vector<ir::SliceDimension> slices;
  for (int64_t d = 0; d < global.rank(); ++d) {
    const int64_t size = global.dimension(d);
    const int64_t slice = in.instruction.attributes().dynamic_slice_sizes[d];
    if (slice == size) {
      slices.push_back({0, size, 1});
      continue;
    }
    const Instruction& index = *in.instruction.operand(1 + d);
    if (index.opcode() != Opcode::kConstant) return std::nullopt;
    const ir::Literal& literal = *index.attributes().literal;
    const bool huge = !ir::IsSignedInteger(literal.dtype()) &&
                      literal.GetAsUint64(0) > static_cast<uint64_t>(size - slice);
    const int64_t start =
        huge ? size - slice : std::clamp(literal.GetAsInt64(0), int64_t{0}, size - slice);
    slices.push_back({start, start + slice, 1});
  }
  return SliceWithHalo(builder, in.values[0], in.target, std::move(slices));
}

// pad along split dims: each device fetches the operand rows its result window shows; positions
// outside the operand get the padding value. With interior padding the rows are spread locally
// (a local pad with the interior) and each device takes its window from where its first row lands.
absl::StatusOr<std::optional<Instruction*>> HaloPad(SpmdBuilder& builder, const Operands& in) {
  const PartitionedValue& x = in.values[0];
  if (x.sharding.dims != in.target.dims) return std::nullopt;
  const Mesh& mesh = builder.mesh();
  ir::InstructionAttributes attributes = in.instruction.attributes();
  Instruction* local = x.local;
  Instruction* value = in.values[1].local;
  bool exchanged = false;
  for (int64_t d = 0; d < x.global.rank(); ++d) {
    const int64_t tiles = x.sharding.TilesOn(d, mesh);
    const ir::PaddingDimension padding = attributes.padding[d];
    if (tiles == 1 || (padding.low == 0 && padding.high == 0 && padding.interior == 0)) continue;
    const std::vector<int64_t>& axes = x.sharding.dims[d];
    const int64_t size = x.global.dimension(d);
    const int64_t result_size = in.instruction.shape().dimension(d);
    if (result_size <= 0 || size == 0) return std::nullopt;
    const int64_t step = padding.interior + 1;
    const int64_t shard = CeilDivSigned(result_size, tiles);
    // Result position q shows operand row (q - low) / step where that divides: shard k shows rows
    // [first, last); `lead` is how far its first row lands after the window's start (< step).
    std::vector<HaloWindow> windows;
    std::vector<int64_t> leads;
    int64_t rows = 1;
    for (int64_t k = 0; k < tiles; ++k) {
      const int64_t end = std::min(result_size, (k + 1) * shard);
      const int64_t first = CeilDivSigned(k * shard - padding.low, step);
      const int64_t last = end > k * shard ? FloorDiv(end - 1 - padding.low, step) + 1 : first;
      windows.push_back({first, std::max<int64_t>(last - first, 0)});
      leads.push_back(padding.low + first * step - k * shard);
      rows = std::max(rows, last - first);
    }
    if (step == 1) rows = shard;
    VKSPMD_ASSIGN_OR_RETURN(local, ExchangeHalo(builder, local, d, axes, size, windows, rows));
    VKSPMD_ASSIGN_OR_RETURN(Instruction * fill, builder.Broadcast(value, local->shape()));
    VKSPMD_ASSIGN_OR_RETURN(local, KeepInside(builder, local, d, axes, windows, size, fill));
    attributes.padding[d] = {0, 0, 0};
    exchanged = true;
    if (step == 1) continue;
    // Spread the rows: row m lands at padding.interior + m * step; shard k's window starts
    // lead[k] before its first row.
    const int64_t spread = rows + (rows - 1) * padding.interior;
    ir::InstructionAttributes dilate;
    for (int64_t e = 0; e < local->shape().rank(); ++e) {
      dilate.padding.push_back(e == d ? ir::PaddingDimension{padding.interior,
                                                             std::max<int64_t>(0, shard - spread),
                                                             padding.interior}
                                      : ir::PaddingDimension{0, 0, 0});
    }
    VKSPMD_ASSIGN_OR_RETURN(local, builder.Add(Opcode::kPad, {local, value}, dilate));
    std::vector<int64_t> starts;
    for (int64_t lead : leads)
      starts.push_back(padding.interior - std::clamp<int64_t>(lead, 0, padding.interior));
    VKSPMD_ASSIGN_OR_RETURN(Instruction * start,
                            builder.DeviceValue(ByPartition(mesh, axes, starts)));
    std::vector<Instruction*> offsets(local->shape().rank(), nullptr);
    offsets[d] = start;
    std::vector<int64_t> sizes = local->shape().dimensions();
    sizes[d] = shard;
    VKSPMD_ASSIGN_OR_RETURN(local, builder.DynamicSlice(local, offsets, sizes));
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
  const int64_t shard = CeilDivSigned(result_size, tiles);
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
  const int64_t result_shard = CeilDivSigned(to[*to_dim], tiles);
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
    case Opcode::kDynamicSlice:
      return HaloDynamicSlice(builder, in);
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

absl::StatusOr<std::optional<PartitionedValue>> PartitionWithHalo(
    SpmdBuilder& builder, const Instruction& instruction,
    const std::vector<PartitionedValue>& operands, const AxisSharding& target) {
  const Opcode opcode = instruction.opcode();
  if (opcode != Opcode::kSlice && opcode != Opcode::kPad && opcode != Opcode::kReverse &&
      opcode != Opcode::kConcatenate && opcode != Opcode::kReshape &&
      opcode != Opcode::kDynamicSlice) {
    return std::nullopt;
  }
  if (target.IsSpecial() || instruction.shape().IsTuple()) return std::nullopt;
  if (opcode == Opcode::kDynamicSlice) {
    // Only constant starts make a window (HaloDynamicSlice); no reshard for anything else.
    const ir::Shape& operand = instruction.operand(0)->shape();
    for (int64_t d = 0; d < operand.rank(); ++d) {
      if (instruction.attributes().dynamic_slice_sizes[d] != operand.dimension(d) &&
          instruction.operand(1 + d)->opcode() != Opcode::kConstant) {
        return std::nullopt;
      }
    }
  }
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
