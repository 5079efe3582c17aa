// The per-device program's building blocks: partition-id based table lookups, masks and
// collectives whose replica groups come from mesh axes (use_global_device_ids with partition
// ids, as GSPMD emits them with one replica).
#include "src/spmd/spmd_builder.h"

#include "fmt/format.h"
#include "src/base/status_macros.h"

namespace vkspmd::spmd {

using ir::Instruction;
using ir::Opcode;

int64_t CollectiveBytesPerDevice(Opcode kind, int64_t operand_bytes, int64_t group_size) {
  if (group_size <= 1) return 0;
  switch (kind) {
    case Opcode::kAllReduce:
      return 2 * (group_size - 1) * operand_bytes / group_size;
    case Opcode::kAllGather:
      return (group_size - 1) * operand_bytes;
    case Opcode::kReduceScatter:
    case Opcode::kAllToAll:
      return (group_size - 1) * operand_bytes / group_size;
    default:
      return operand_bytes;
  }
}

absl::StatusOr<Instruction*> SpmdBuilder::Add(Opcode opcode, std::vector<Instruction*> operands,
                                              ir::InstructionAttributes attributes,
                                              std::optional<ir::Shape> declared) {
  return builder_.Add(opcode, std::move(operands), std::move(attributes), std::move(declared));
}

absl::StatusOr<Instruction*> SpmdBuilder::Scalar(ir::DType type, double value) {
  ir::Literal literal(ir::Shape::Scalar(type));
  literal.SetFromDouble(0, value);
  return builder_.Constant(std::move(literal));
}

absl::StatusOr<Instruction*> SpmdBuilder::Broadcast(Instruction* scalar, const ir::Shape& shape) {
  return builder_.Broadcast(scalar, ir::Shape(scalar->shape().dtype(), shape.dimensions()), {});
}

absl::StatusOr<Instruction*> SpmdBuilder::Reshape(Instruction* value, std::vector<int64_t> dims) {
  if (value->shape().dimensions() == dims) return value;
  return builder_.Reshape(value, std::move(dims));
}

absl::StatusOr<Instruction*> SpmdBuilder::Transpose(Instruction* value,
                                                    std::vector<int64_t> permutation) {
  bool identity = true;
  for (size_t i = 0; i < permutation.size(); ++i)
    identity = identity && permutation[i] == static_cast<int64_t>(i);
  if (identity) return value;
  return builder_.Transpose(value, std::move(permutation));
}

absl::StatusOr<Instruction*> SpmdBuilder::SliceDim(Instruction* value, int64_t dim, int64_t limit) {
  if (value->shape().dimension(dim) == limit) return value;
  ir::InstructionAttributes attributes;
  for (int64_t d = 0; d < value->shape().rank(); ++d) {
    attributes.slice.push_back({0, d == dim ? limit : value->shape().dimension(d), 1});
  }
  return builder_.Add(Opcode::kSlice, {value}, std::move(attributes));
}

absl::StatusOr<Instruction*> SpmdBuilder::PadDimTo(Instruction* value, int64_t dim, int64_t size) {
  const int64_t have = value->shape().dimension(dim);
  if (have == size) return value;
  VKSPMD_ASSIGN_OR_RETURN(Instruction * zero, Scalar(value->shape().dtype(), 0));
  ir::InstructionAttributes attributes;
  for (int64_t d = 0; d < value->shape().rank(); ++d) {
    attributes.padding.push_back({0, d == dim ? size - have : 0, 0});
  }
  return builder_.Add(Opcode::kPad, {value, zero}, std::move(attributes));
}

absl::StatusOr<Instruction*> SpmdBuilder::DynamicSlice(Instruction* value,
                                                       const std::vector<Instruction*>& starts,
                                                       std::vector<int64_t> sizes) {
  std::vector<Instruction*> operands = {value};
  for (Instruction* start : starts) {
    if (start == nullptr) {
      VKSPMD_ASSIGN_OR_RETURN(start, Scalar(ir::DType::kS32, 0));
    }
    operands.push_back(start);
  }
  ir::InstructionAttributes attributes;
  attributes.dynamic_slice_sizes = std::move(sizes);
  return builder_.Add(Opcode::kDynamicSlice, std::move(operands), std::move(attributes));
}

absl::StatusOr<Instruction*> SpmdBuilder::PartitionId() {
  if (partition_id_ != nullptr) return partition_id_;
  VKSPMD_ASSIGN_OR_RETURN(Instruction * id, builder_.Add(Opcode::kPartitionId, {}));
  VKSPMD_ASSIGN_OR_RETURN(partition_id_, builder_.Convert(id, ir::DType::kS32));
  return partition_id_;
}

absl::StatusOr<Instruction*> SpmdBuilder::DeviceValue(const std::vector<int64_t>& by_partition) {
  const auto cached = device_values_.find(by_partition);
  if (cached != device_values_.end()) return cached->second;
  bool uniform = true;
  for (int64_t value : by_partition) uniform = uniform && value == by_partition[0];
  Instruction* result = nullptr;
  if (uniform) {
    VKSPMD_ASSIGN_OR_RETURN(result, Scalar(ir::DType::kS32, static_cast<double>(by_partition[0])));
  } else {
    std::vector<int32_t> values(by_partition.begin(), by_partition.end());
    Instruction* table = builder_.Constant(ir::Literal::Create<int32_t>(
        ir::DType::kS32, {static_cast<int64_t>(values.size())}, values));
    VKSPMD_ASSIGN_OR_RETURN(Instruction * id, PartitionId());
    VKSPMD_ASSIGN_OR_RETURN(Instruction * entry, DynamicSlice(table, {id}, {1}));
    VKSPMD_ASSIGN_OR_RETURN(result, builder_.Reshape(entry, {}));
  }
  device_values_[by_partition] = result;
  return result;
}

absl::StatusOr<Instruction*> SpmdBuilder::ValidMask(const ir::Shape& shape, int64_t dim,
                                                    const std::vector<int64_t>& offset_by_partition,
                                                    int64_t limit) {
  const auto key = std::make_tuple(shape.dimensions(), dim, offset_by_partition, limit);
  if (const auto cached = masks_.find(key); cached != masks_.end()) return cached->second;
  const ir::Shape index_shape(ir::DType::kS32, shape.dimensions());
  ir::InstructionAttributes iota;
  iota.iota_dimension = dim;
  VKSPMD_ASSIGN_OR_RETURN(Instruction * index, builder_.Add(Opcode::kIota, {}, iota, index_shape));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * offset, DeviceValue(offset_by_partition));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * offsets, Broadcast(offset, index_shape));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * global, builder_.Binary(Opcode::kAdd, index, offsets));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * bound, Scalar(ir::DType::kS32, static_cast<double>(limit)));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * bounds, Broadcast(bound, index_shape));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * mask,
                          builder_.Compare(global, bounds, ir::ComparisonDirection::kLt));
  masks_[key] = mask;
  return mask;
}

absl::StatusOr<Instruction*> SpmdBuilder::MaskPadding(
    Instruction* local, const ir::Shape& global, const AxisSharding& sharding,
    const std::vector<int64_t>& dims, const std::function<absl::StatusOr<Instruction*>()>& fill) {
  Instruction* mask = nullptr;
  for (int64_t d : dims) {
    if (global.dimension(d) % sharding.TilesOn(d, *mesh_) == 0) continue;
    std::vector<int64_t> offsets;
    for (int64_t device = 0; device < mesh_->device_count(); ++device) {
      offsets.push_back(ShardOffset(global, sharding, d, *mesh_, device));
    }
    VKSPMD_ASSIGN_OR_RETURN(Instruction * valid,
                            ValidMask(local->shape(), d, offsets, global.dimension(d)));
    if (mask != nullptr) {
      VKSPMD_ASSIGN_OR_RETURN(valid, builder_.Binary(Opcode::kAnd, mask, valid));
    }
    mask = valid;
  }
  if (mask == nullptr) return local;
  VKSPMD_ASSIGN_OR_RETURN(Instruction * scalar, fill());
  VKSPMD_ASSIGN_OR_RETURN(Instruction * fills, Broadcast(scalar, local->shape()));
  return builder_.Add(Opcode::kSelect, {mask, local, fills});
}

ir::Computation* SpmdBuilder::Reducer(Opcode opcode, ir::DType type) {
  const auto key = std::make_pair(opcode, type);
  const auto found = reducers_.find(key);
  if (found != reducers_.end()) return found->second;
  ir::Computation* reducer = module_.AddComputation(ir::MakeScalarReducer(
      fmt::format("{}.{}.spmd", ir::OpcodeName(opcode), ir::DTypeName(type)), opcode, type));
  reducers_[key] = reducer;
  return reducer;
}

absl::StatusOr<Instruction*> SpmdBuilder::Collective(Opcode opcode, Instruction* value,
                                                     const std::vector<int64_t>& axes,
                                                     ir::InstructionAttributes attributes) {
  attributes.channel_id = next_channel_++;
  attributes.use_global_device_ids = opcode != Opcode::kAllToAll;
  attributes.replica_groups.groups = mesh_->GroupsAlong(axes);
  VKSPMD_ASSIGN_OR_RETURN(Instruction * result,
                          builder_.Add(opcode, {value}, std::move(attributes)));
  records_.push_back(CollectiveRecord{
      opcode, axes, value->shape().ElementCount(),
      CollectiveBytesPerDevice(opcode, ByteSize(value->shape()), mesh_->SizeOf(axes)), current_});
  return result;
}

absl::StatusOr<Instruction*> SpmdBuilder::AllReduce(Instruction* value,
                                                    const std::vector<int64_t>& axes,
                                                    ir::Computation* reducer) {
  if (mesh_->SizeOf(axes) == 1) return value;
  ir::InstructionAttributes attributes;
  attributes.to_apply = reducer;
  return Collective(Opcode::kAllReduce, value, axes, std::move(attributes));
}

absl::StatusOr<Instruction*> SpmdBuilder::AllGather(Instruction* value, int64_t dim,
                                                    const std::vector<int64_t>& axes) {
  if (mesh_->SizeOf(axes) == 1) return value;
  ir::InstructionAttributes attributes;
  attributes.dimensions = {dim};
  return Collective(Opcode::kAllGather, value, axes, std::move(attributes));
}

absl::StatusOr<Instruction*> SpmdBuilder::ReduceScatter(Instruction* value, int64_t dim,
                                                        const std::vector<int64_t>& axes,
                                                        ir::Computation* reducer) {
  if (mesh_->SizeOf(axes) == 1) return value;
  ir::InstructionAttributes attributes;
  attributes.dimensions = {dim};
  attributes.to_apply = reducer;
  return Collective(Opcode::kReduceScatter, value, axes, std::move(attributes));
}

absl::StatusOr<Instruction*> SpmdBuilder::AllToAll(Instruction* value, int64_t dim,
                                                   const std::vector<int64_t>& axes) {
  if (mesh_->SizeOf(axes) == 1) return value;
  ir::InstructionAttributes attributes;
  attributes.dimensions = {dim};
  return Collective(Opcode::kAllToAll, value, axes, std::move(attributes));
}

absl::StatusOr<Instruction*> SpmdBuilder::CollectivePermute(
    Instruction* value, const std::vector<std::pair<int64_t, int64_t>>& pairs,
    const std::vector<int64_t>& axes) {
  ir::InstructionAttributes attributes;
  attributes.channel_id = next_channel_++;
  attributes.source_target_pairs = pairs;
  VKSPMD_ASSIGN_OR_RETURN(Instruction * result,
                          builder_.Add(Opcode::kCollectivePermute, {value}, std::move(attributes)));
  records_.push_back(CollectiveRecord{Opcode::kCollectivePermute, axes,
                                      value->shape().ElementCount(), ByteSize(value->shape()),
                                      current_});
  return result;
}

}  // namespace vkspmd::spmd
