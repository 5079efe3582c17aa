// Manual-region boundaries and the ops inside them.
#include "src/spmd/manual_region.h"

#include <numeric>

#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/spmd/op_rules.h"

namespace vkspmd::spmd {

using ir::Instruction;

absl::StatusOr<PartitionedValue> EnterManualRegion(SpmdBuilder& builder,
                                                   const Instruction& instruction,
                                                   const PartitionedValue& operand) {
  const Mesh& mesh = builder.mesh();
  const Instruction& input = *instruction.operand(0);
  const int64_t rank = input.shape().rank();
  AxisSharding tiling = AxisSharding::Replicated(rank);
  if (input.sharding().has_value()) {
    VKSPMD_ASSIGN_OR_RETURN(tiling, FromHloSharding(*input.sharding(), mesh, rank));
  }
  VKSPMD_ASSIGN_OR_RETURN(PartitionedValue shard, Reshard(builder, operand, tiling));
  if (shard.local->shape() != instruction.shape()) {
    return absl::InvalidArgumentError(fmt::format(
        "the shard shape is {} under {}, not the declared {}", shard.local->shape().ToString(),
        tiling.ToString(mesh), instruction.shape().ToString()));
  }
  std::vector<int64_t> all_dims(rank);
  std::iota(all_dims.begin(), all_dims.end(), 0);
  VKSPMD_ASSIGN_OR_RETURN(Instruction * local,
                          builder.MaskPadding(shard.local, input.shape(), tiling, all_dims, [&] {
                            return builder.Scalar(shard.local->shape().dtype(), 0);
                          }));
  return PartitionedValue{local, instruction.shape(), AxisSharding::Manual(rank)};
}

absl::StatusOr<PartitionedValue> LeaveManualRegion(const Mesh& mesh, const Instruction& instruction,
                                                   const PartitionedValue& manual,
                                                   const AxisSharding& tiling) {
  if (!manual.sharding.manual) {
    return absl::InvalidArgumentError("SPMDShardToFullShape needs a manual operand");
  }
  if (ShardShape(instruction.shape(), tiling, mesh) != manual.local->shape()) {
    return absl::InvalidArgumentError(fmt::format(
        "the per-device value {} is not the shard shape of {} under {}",
        manual.local->shape().ToString(), instruction.shape().ToString(), tiling.ToString(mesh)));
  }
  return PartitionedValue{manual.local, instruction.shape(), tiling};
}

absl::StatusOr<PartitionedValue> EnterPartiallyManualRegion(SpmdBuilder& builder,
                                                            const Instruction& instruction,
                                                            const PartitionedValue& operand,
                                                            const AxisSharding& tiling,
                                                            const AxisSharding& target) {
  const Mesh& mesh = builder.mesh();
  const Instruction& input = *instruction.operand(0);
  const int64_t rank = input.shape().rank();
  const ir::Shape local_shape = ShardShape(instruction.shape(), target, mesh);
  if (tiling.IsSpecial() || tiling.IsPartiallyManual() ||
      ShardShape(input.shape(), tiling, mesh) != local_shape) {
    return absl::InvalidArgumentError(fmt::format(
        "each device's shard of {} under {} is {}, not its shard of the manual value {} under "
        "{} ({}): XLA hands each device's shard over unchanged",
        input.shape().ToString(), tiling.ToString(mesh),
        ShardShape(input.shape(), tiling, mesh).ToString(), instruction.shape().ToString(),
        target.ToString(mesh), local_shape.ToString()));
  }
  VKSPMD_ASSIGN_OR_RETURN(PartitionedValue shard, Reshard(builder, operand, tiling));
  // Padding of an uneven operand reads as zeros inside, as XLA pads it.
  std::vector<int64_t> all_dims(rank);
  std::iota(all_dims.begin(), all_dims.end(), 0);
  VKSPMD_ASSIGN_OR_RETURN(Instruction * local,
                          builder.MaskPadding(shard.local, input.shape(), tiling, all_dims, [&] {
                            return builder.Scalar(shard.local->shape().dtype(), 0);
                          }));
  return PartitionedValue{local, instruction.shape(), target};
}

absl::StatusOr<PartitionedValue> LeavePartiallyManualRegion(const Mesh& mesh,
                                                            const Instruction& instruction,
                                                            const PartitionedValue& manual,
                                                            const AxisSharding& target) {
  if (target.IsSpecial() || target.IsPartiallyManual() ||
      ShardShape(instruction.shape(), target, mesh) != manual.local->shape()) {
    return absl::InvalidArgumentError(fmt::format(
        "each device's shard {} of the manual value {} under {} is not its shard of {} under {} "
        "({}): XLA hands each device's shard over unchanged",
        manual.local->shape().ToString(), manual.global.ToString(), manual.sharding.ToString(mesh),
        instruction.shape().ToString(), target.ToString(mesh),
        ShardShape(instruction.shape(), target, mesh).ToString()));
  }
  return PartitionedValue{manual.local, instruction.shape(), target};
}

absl::StatusOr<std::vector<PartitionedValue>> CloneManualOp(
    SpmdBuilder& builder, const Instruction& instruction,
    const std::vector<PartitionedValue>& operands, ir::Computation* to_apply) {
  std::vector<Instruction*> locals;
  for (size_t i = 0; i < operands.size(); ++i) {
    const PartitionedValue& value = operands[i];
    if (!value.sharding.manual && !value.sharding.IsReplicated()) {
      return absl::InvalidArgumentError(
          fmt::format("%{} ({}) enters the manual region without SPMDFullToShardShape",
                      instruction.operand(i)->name(), value.sharding.ToString(builder.mesh())));
    }
    locals.push_back(value.local);
  }
  ir::InstructionAttributes attributes = instruction.attributes();
  attributes.to_apply = to_apply;
  VKSPMD_ASSIGN_OR_RETURN(Instruction * local, builder.Add(instruction.opcode(), locals, attributes,
                                                           instruction.shape()));
  local->set_name(instruction.name());
  std::vector<PartitionedValue> leaves;
  for (int64_t leaf = 0; leaf < LeafCount(instruction.shape()); ++leaf) {
    Instruction* element = local;
    if (instruction.shape().IsTuple()) {
      VKSPMD_ASSIGN_OR_RETURN(element, builder.builder().GetTupleElement(local, leaf));
    }
    const ir::Shape& shape = LeafShape({&instruction, leaf});
    leaves.push_back({element, shape, AxisSharding::Manual(shape.rank())});
  }
  return leaves;
}

}  // namespace vkspmd::spmd
