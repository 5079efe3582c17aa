// Masked local dynamic-slice and dynamic-update-slice (see dynamic_slice_local.h). XLA's
// HandleDynamicSlice replicates a split dim the slice cuts; summing each device's part of the
// window moves the window instead of the operand, which the partitioner prices against the gather
// and takes when it is smaller (one-row lookups of a long split dim: GSPMD's masked gather for a
// vocabulary-sharded table). An update needs no communication at all: each device writes the rows
// of the update that land in its shard.
#include "src/spmd/dynamic_slice_local.h"

#include "src/base/status_macros.h"

namespace vkspmd::spmd {
namespace {

using ir::DType;
using ir::Instruction;
using ir::Opcode;

// A sliced dim split across devices: where the window starts relative to this device's shard,
// and how many elements of the shard are data, by partition.
struct MaskedDim {
  int64_t dim = 0;
  Instruction* relative = nullptr;
  std::vector<int64_t> valid;
};

// The start the global dynamic-slice uses: clamped to [0, size - slice] in the index's own type
// (so that wide indices do not wrap), then s32.
absl::StatusOr<Instruction*> ClampedStart(SpmdBuilder& builder, Instruction* index, int64_t size,
                                          int64_t slice) {
  const DType type = index->shape().dtype();
  VKSPMD_ASSIGN_OR_RETURN(Instruction * low, builder.Scalar(type, 0));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * high,
                          builder.Scalar(type, static_cast<double>(size - slice)));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * clamped, builder.Add(Opcode::kClamp, {low, index, high}));
  if (type == DType::kS32) return clamped;
  return builder.builder().Convert(clamped, DType::kS32);
}

// pred of `shape`: relative + index along `dim` lies in [0, valid[partition]).
absl::StatusOr<Instruction*> InsideShard(SpmdBuilder& builder, const ir::Shape& shape,
                                         const MaskedDim& masked) {
  ir::ComputationBuilder& code = builder.builder();
  const ir::Shape index_shape(DType::kS32, shape.dimensions());
  ir::InstructionAttributes iota;
  iota.iota_dimension = masked.dim;
  VKSPMD_ASSIGN_OR_RETURN(Instruction * index, builder.Add(Opcode::kIota, {}, iota, index_shape));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * relative, builder.Broadcast(masked.relative, index_shape));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * position, code.Binary(Opcode::kAdd, index, relative));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * zero, builder.Scalar(DType::kS32, 0));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * zeros, builder.Broadcast(zero, index_shape));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * valid, builder.DeviceValue(masked.valid));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * valids, builder.Broadcast(valid, index_shape));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * above,
                          code.Compare(position, zeros, ir::ComparisonDirection::kGe));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * below,
                          code.Compare(position, valids, ir::ComparisonDirection::kLt));
  return code.Binary(Opcode::kAnd, above, below);
}

}  // namespace

absl::StatusOr<Instruction*> EmitLocalDynamicSlice(SpmdBuilder& builder, const LocalOp& op,
                                                   const std::vector<Instruction*>& locals) {
  const PartitionedValue& operand = op.operands[0];
  const ir::Shape& global = operand.global;
  const Mesh& mesh = builder.mesh();
  const std::vector<int64_t>& slice_sizes = op.instruction->attributes().dynamic_slice_sizes;
  Instruction* local = locals[0];
  std::vector<Instruction*> starts(global.rank(), nullptr);
  std::vector<int64_t> sizes(global.rank());
  std::vector<MaskedDim> masked;
  ir::InstructionAttributes padding;
  bool padded = false;
  for (int64_t d = 0; d < global.rank(); ++d) {
    const int64_t size = global.dimension(d), slice = slice_sizes[d];
    if (slice == size) {
      // Taken whole (split or not): the global start clamps to 0.
      sizes[d] = local->shape().dimension(d);
      padding.padding.push_back({0, 0, 0});
      continue;
    }
    sizes[d] = slice;
    VKSPMD_ASSIGN_OR_RETURN(Instruction * start, ClampedStart(builder, locals[1 + d], size, slice));
    if (operand.sharding.dims[d].empty()) {
      starts[d] = start;
      padding.padding.push_back({0, 0, 0});
      continue;
    }
    // The window [start, start + slice) seen from this device's shard; padded by slice - 1 on
    // both sides, the local window is never clamped while it overlaps the shard, and where it
    // does not, the mask drops all of it.
    const int64_t shard = local->shape().dimension(d);
    MaskedDim dim{d, nullptr, {}};
    std::vector<int64_t> offsets(mesh.device_count());
    dim.valid.resize(mesh.device_count());
    for (int64_t device : mesh.device_ids()) {
      offsets[device] = ShardIndex(operand.sharding, d, mesh, device) * shard;
      dim.valid[device] = ShardValidSize(global, operand.sharding, d, mesh, device);
    }
    VKSPMD_ASSIGN_OR_RETURN(Instruction * offset, builder.DeviceValue(offsets));
    VKSPMD_ASSIGN_OR_RETURN(dim.relative,
                            builder.builder().Binary(Opcode::kSubtract, start, offset));
    VKSPMD_ASSIGN_OR_RETURN(Instruction * margin,
                            builder.Scalar(DType::kS32, static_cast<double>(slice - 1)));
    VKSPMD_ASSIGN_OR_RETURN(starts[d],
                            builder.builder().Binary(Opcode::kAdd, dim.relative, margin));
    padding.padding.push_back({slice - 1, slice - 1, 0});
    padded = padded || slice > 1;
    masked.push_back(std::move(dim));
  }
  const DType type = local->shape().dtype();
  VKSPMD_ASSIGN_OR_RETURN(Instruction * zero, builder.Scalar(type, 0));
  if (padded) {
    VKSPMD_ASSIGN_OR_RETURN(local, builder.Add(Opcode::kPad, {local, zero}, padding));
  }
  VKSPMD_ASSIGN_OR_RETURN(Instruction * sliced, builder.DynamicSlice(local, starts, sizes));
  Instruction* mask = nullptr;
  for (const MaskedDim& dim : masked) {
    VKSPMD_ASSIGN_OR_RETURN(Instruction * inside, InsideShard(builder, sliced->shape(), dim));
    if (mask != nullptr) {
      VKSPMD_ASSIGN_OR_RETURN(inside, builder.builder().Binary(Opcode::kAnd, mask, inside));
    }
    mask = inside;
  }
  if (mask == nullptr) return sliced;
  // Other devices add -0 for floats: x + -0 is x for every x, -0 and NaN included, so the sum of
  // the owner's element and the others' is that element bit for bit (+0 would turn -0 into +0).
  VKSPMD_ASSIGN_OR_RETURN(Instruction * none, builder.Scalar(type, ir::IsFloat(type) ? -0.0 : 0));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * nones, builder.Broadcast(none, sliced->shape()));
  return builder.Add(Opcode::kSelect, {mask, sliced, nones});
}

absl::StatusOr<Instruction*> EmitLocalDynamicUpdateSlice(SpmdBuilder& builder, const LocalOp& op,
                                                         const std::vector<Instruction*>& locals) {
  const PartitionedValue& operand = op.operands[0];
  const ir::Shape& global = operand.global;
  const ir::Shape& update = op.operands[1].global;
  const Mesh& mesh = builder.mesh();
  Instruction* local = locals[0];
  bool split = false;
  for (int64_t d = 0; d < global.rank(); ++d) {
    split =
        split || (update.dimension(d) != global.dimension(d) && !operand.sharding.dims[d].empty());
  }
  std::vector<Instruction*> operands = locals;
  if (!split) {
    // Dims the update covers whole have their start clamped to 0 in the global program too; the
    // others are not split, so the local op clamps its start as the global one does.
    for (int64_t d = 0; d < global.rank(); ++d) {
      if (update.dimension(d) != global.dimension(d)) continue;
      VKSPMD_ASSIGN_OR_RETURN(operands[2 + d], builder.Scalar(locals[2 + d]->shape().dtype(), 0));
    }
    return builder.Add(Opcode::kDynamicUpdateSlice, operands);
  }
  // A split dim the update is shorter than: the shard padded by the update's length on both
  // sides takes the update at the start seen from the shard, plus that padding. Where the update
  // overlaps the shard the local start is then never clamped, and where it does not, it lands
  // (clamped or not) wholly in the padding; slicing the shard back out keeps exactly the rows of
  // the update that land in it. Padding rows of an uneven shard stay as they were: the update's
  // rows all lie inside the dim.
  ir::InstructionAttributes padding, slice;
  for (int64_t d = 0; d < global.rank(); ++d) {
    const int64_t size = global.dimension(d), rows = update.dimension(d);
    const int64_t shard = local->shape().dimension(d);
    padding.padding.push_back({0, 0, 0});
    slice.slice.push_back({0, shard, 1});
    if (rows == size) {
      VKSPMD_ASSIGN_OR_RETURN(operands[2 + d], builder.Scalar(DType::kS32, 0));
      continue;
    }
    VKSPMD_ASSIGN_OR_RETURN(Instruction * start, ClampedStart(builder, locals[2 + d], size, rows));
    operands[2 + d] = start;
    if (operand.sharding.dims[d].empty()) continue;
    std::vector<int64_t> offsets(mesh.device_count());
    for (int64_t device : mesh.device_ids()) {
      offsets[device] = ShardIndex(operand.sharding, d, mesh, device) * shard - rows;
    }
    VKSPMD_ASSIGN_OR_RETURN(Instruction * offset, builder.DeviceValue(offsets));
    VKSPMD_ASSIGN_OR_RETURN(operands[2 + d],
                            builder.builder().Binary(Opcode::kSubtract, start, offset));
    padding.padding.back() = {rows, rows, 0};
    slice.slice.back() = {rows, rows + shard, 1};
  }
  VKSPMD_ASSIGN_OR_RETURN(Instruction * zero, builder.Scalar(local->shape().dtype(), 0));
  VKSPMD_ASSIGN_OR_RETURN(operands[0], builder.Add(Opcode::kPad, {local, zero}, padding));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * updated,
                          builder.Add(Opcode::kDynamicUpdateSlice, operands));
  return builder.Add(Opcode::kSlice, {updated}, slice);
}

}  // namespace vkspmd::spmd
