// Local gather and scatter (see gather_scatter_local.h). Index arithmetic is done in s32, on
// tensors of the indices' local shape whose index-vector entries hold one value per component.
#include "src/spmd/gather_scatter_local.h"

#include "src/base/status_macros.h"
#include "src/ir/gather_attributes.h"

namespace vkspmd::spmd {
namespace {

using ir::DType;
using ir::Instruction;
using ir::Opcode;

// An operand dim split across devices that an index vector component starts in, and whose
// slices (update windows) do not cover it whole: the component must be shifted.
struct SplitIndexedDim {
  int64_t component = 0;
  int64_t local_size = 0;
  std::vector<int64_t> offsets;  // By partition: the first element of the device's shard.
};

std::vector<SplitIndexedDim> SplitIndexedDims(const SpmdBuilder& builder, const LocalOp& op,
                                              const std::vector<int64_t>& window) {
  const ir::GatherDimensions& dims = op.instruction->attributes().gather;
  const PartitionedValue& operand = op.operands[0];
  std::vector<SplitIndexedDim> splits;
  for (size_t k = 0; k < dims.start_index_map.size(); ++k) {
    const int64_t d = dims.start_index_map[k];
    if (operand.sharding.dims[d].empty() || window[d] == operand.global.dimension(d)) continue;
    SplitIndexedDim split{static_cast<int64_t>(k), operand.local->shape().dimension(d), {}};
    for (int64_t device = 0; device < builder.mesh().device_count(); ++device) {
      split.offsets.push_back(ShardIndex(operand.sharding, d, builder.mesh(), device) *
                              split.local_size);
    }
    splits.push_back(std::move(split));
  }
  return splits;
}

// A tensor of `indices`' shape holding values[k] at index-vector entry k.
absl::StatusOr<Instruction*> PerComponent(SpmdBuilder& builder, const Instruction& indices,
                                          int64_t index_vector_dim,
                                          const std::vector<Instruction*>& values) {
  ir::ComputationBuilder& code = builder.builder();
  if (index_vector_dim == indices.shape().rank()) {
    return builder.Broadcast(values[0], indices.shape());
  }
  std::vector<Instruction*> pieces;
  for (Instruction* value : values) {
    VKSPMD_ASSIGN_OR_RETURN(Instruction * piece, code.Reshape(value, {1}));
    pieces.push_back(piece);
  }
  ir::InstructionAttributes concatenate;
  concatenate.dimensions = {0};
  VKSPMD_ASSIGN_OR_RETURN(Instruction * vector,
                          builder.Add(Opcode::kConcatenate, pieces, concatenate));
  return code.Broadcast(vector, ir::Shape(values[0]->shape().dtype(), indices.shape().dimensions()),
                        {index_vector_dim});
}

// PerComponent of constants.
absl::StatusOr<Instruction*> PerComponentConstant(SpmdBuilder& builder, const Instruction& indices,
                                                  int64_t index_vector_dim,
                                                  const std::vector<int64_t>& values) {
  std::vector<Instruction*> scalars;
  for (int64_t value : values) {
    VKSPMD_ASSIGN_OR_RETURN(Instruction * scalar,
                            builder.Scalar(DType::kS32, static_cast<double>(value)));
    scalars.push_back(scalar);
  }
  return PerComponent(builder, indices, index_vector_dim, scalars);
}

// The indices minus this device's offsets (0 for components of unsplit dims), in s32.
absl::StatusOr<Instruction*> Shift(SpmdBuilder& builder, Instruction* indices,
                                   int64_t index_vector_dim, int64_t components,
                                   const std::vector<SplitIndexedDim>& splits) {
  std::vector<Instruction*> offsets;
  for (int64_t k = 0; k < components; ++k) {
    VKSPMD_ASSIGN_OR_RETURN(Instruction * zero, builder.Scalar(DType::kS32, 0));
    offsets.push_back(zero);
  }
  for (const SplitIndexedDim& split : splits) {
    VKSPMD_ASSIGN_OR_RETURN(offsets[split.component], builder.DeviceValue(split.offsets));
  }
  VKSPMD_ASSIGN_OR_RETURN(Instruction * offset,
                          PerComponent(builder, *indices, index_vector_dim, offsets));
  return builder.builder().Binary(Opcode::kSubtract, indices, offset);
}

absl::StatusOr<Instruction*> ToS32(SpmdBuilder& builder, Instruction* indices) {
  if (indices->shape().dtype() == DType::kS32) return indices;
  return builder.builder().Convert(indices, DType::kS32);
}

}  // namespace

absl::StatusOr<Instruction*> EmitLocalGather(SpmdBuilder& builder, const LocalOp& op,
                                             const std::vector<Instruction*>& locals) {
  const Instruction& gather = *op.instruction;
  ir::InstructionAttributes attributes = gather.attributes();
  ir::GatherDimensions& dims = attributes.gather;
  const ir::Shape& global = op.operands[0].global;
  const std::vector<int64_t> slice_sizes = dims.slice_sizes;
  for (int64_t d = 0; d < global.rank(); ++d) {
    if (dims.slice_sizes[d] == global.dimension(d)) {
      dims.slice_sizes[d] = locals[0]->shape().dimension(d);
    }
  }
  const std::vector<SplitIndexedDim> splits = SplitIndexedDims(builder, op, slice_sizes);
  if (splits.empty()) return builder.Add(Opcode::kGather, locals, attributes);
  // Clamp as the global gather would, then shift: a start names a row on exactly one device.
  ir::ComputationBuilder& code = builder.builder();
  const int64_t components = static_cast<int64_t>(dims.start_index_map.size());
  VKSPMD_ASSIGN_OR_RETURN(Instruction * indices, ToS32(builder, locals[1]));
  std::vector<int64_t> upper, sizes;
  for (int64_t d : dims.start_index_map) {
    upper.push_back(global.dimension(d) - slice_sizes[d]);
    sizes.push_back(global.dimension(d));
  }
  for (const SplitIndexedDim& split : splits) sizes[split.component] = split.local_size;
  VKSPMD_ASSIGN_OR_RETURN(Instruction * zeros,
                          PerComponentConstant(builder, *indices, dims.index_vector_dim,
                                               std::vector<int64_t>(components, 0)));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * uppers,
                          PerComponentConstant(builder, *indices, dims.index_vector_dim, upper));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * limits,
                          PerComponentConstant(builder, *indices, dims.index_vector_dim, sizes));
  VKSPMD_ASSIGN_OR_RETURN(indices, code.Binary(Opcode::kMaximum, indices, zeros));
  VKSPMD_ASSIGN_OR_RETURN(indices, code.Binary(Opcode::kMinimum, indices, uppers));
  VKSPMD_ASSIGN_OR_RETURN(indices,
                          Shift(builder, indices, dims.index_vector_dim, components, splits));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * above,
                          code.Compare(indices, zeros, ir::ComparisonDirection::kGe));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * below,
                          code.Compare(indices, limits, ir::ComparisonDirection::kLt));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * valid, code.Binary(Opcode::kAnd, above, below));
  if (dims.index_vector_dim < indices->shape().rank()) {
    VKSPMD_ASSIGN_OR_RETURN(Instruction * all, builder.Scalar(DType::kPred, 1));
    VKSPMD_ASSIGN_OR_RETURN(valid, code.Reduce(valid, all, {dims.index_vector_dim},
                                               builder.Reducer(Opcode::kAnd, DType::kPred)));
  }
  VKSPMD_ASSIGN_OR_RETURN(Instruction * gathered,
                          builder.Add(Opcode::kGather, {locals[0], indices}, attributes));
  const ir::GatherIndexSpaces spaces =
      ir::DescribeGather(dims, global.rank(), indices->shape(), gathered->shape().rank());
  VKSPMD_ASSIGN_OR_RETURN(
      Instruction * mask,
      code.Broadcast(valid, ir::Shape(DType::kPred, gathered->shape().dimensions()),
                     spaces.result_batch));
  // Rows another device holds add -0 for floats: x + -0 is x bit for bit (-0 and NaN included).
  const DType type = gathered->shape().dtype();
  VKSPMD_ASSIGN_OR_RETURN(Instruction * none, builder.Scalar(type, ir::IsFloat(type) ? -0.0 : 0));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * nones, builder.Broadcast(none, gathered->shape()));
  return builder.Add(Opcode::kSelect, {mask, gathered, nones});
}

absl::StatusOr<Instruction*> EmitLocalScatter(SpmdBuilder& builder, const LocalOp& op,
                                              const std::vector<Instruction*>& locals) {
  ir::InstructionAttributes attributes = op.instruction->attributes();
  attributes.to_apply = op.to_apply;
  const ir::GatherDimensions& dims = attributes.gather;
  const Instruction& updates = *op.operands[2].local;
  const ir::GatherIndexSpaces spaces = ir::DescribeGather(
      dims, op.operands[0].global.rank(), op.operands[1].global, updates.shape().rank());
  std::vector<int64_t> window(op.operands[0].global.rank(), 1);
  for (size_t w = 0; w < spaces.operand_window.size(); ++w) {
    window[spaces.operand_window[w]] = op.operands[2].global.dimension(dims.offset_dims[w]);
  }
  const std::vector<SplitIndexedDim> splits = SplitIndexedDims(builder, op, window);
  if (splits.empty()) return builder.Add(Opcode::kScatter, locals, attributes);
  VKSPMD_ASSIGN_OR_RETURN(Instruction * indices, ToS32(builder, locals[1]));
  VKSPMD_ASSIGN_OR_RETURN(indices,
                          Shift(builder, indices, dims.index_vector_dim,
                                static_cast<int64_t>(dims.start_index_map.size()), splits));
  return builder.Add(Opcode::kScatter, {locals[0], indices, locals[2]}, attributes);
}

}  // namespace vkspmd::spmd
