// Local emission per op. Shard shapes follow from the factor assignment; attributes that name
// sizes or windows are rewritten for the dims that are split (which the rules only allow where
// the op leaves the dim alone).
#include "src/spmd/local_ops.h"

#include <algorithm>
#include <functional>

#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/spmd/dynamic_slice_local.h"
#include "src/spmd/gather_scatter_local.h"

namespace vkspmd::spmd {
namespace {

using ir::Instruction;
using ir::Opcode;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Mesh axes of all reduction factors, in factor order.
std::vector<int64_t> ReductionAxes(const LocalOp& op) {
  std::vector<int64_t> axes;
  for (size_t f = 0; f < op.rule->factors.size(); ++f) {
    if (op.rule->factors[f].kind != FactorKind::kReduction) continue;
    axes.insert(axes.end(), op.factors[f].begin(), op.factors[f].end());
  }
  return axes;
}

// Replaces padding on split reduction dims by what `fill` makes.
absl::StatusOr<Instruction*> MaskReductionPadding(
    SpmdBuilder& builder, const LocalOp& op, const PartitionedValue& value, const DimFactors& dims,
    const std::function<absl::StatusOr<Instruction*>()>& fill) {
  std::vector<int64_t> reduced;
  for (int64_t d = 0; d < value.global.rank(); ++d) {
    if (dims[d].size() == 1 && op.rule->factors[dims[d][0]].kind == FactorKind::kReduction) {
      reduced.push_back(d);
    }
  }
  return builder.MaskPadding(value.local, value.global, value.sharding, reduced, fill);
}

// Whether the op leaves dim d alone (its factors pass through), so that it may be split.
bool IsSplitPassThrough(const LocalOp& op, const DimFactors& dims, int64_t d) {
  for (int64_t factor : dims[d]) {
    if (op.rule->factors[factor].kind != FactorKind::kPassThrough) return false;
  }
  return true;
}

absl::StatusOr<Instruction*> Zero(SpmdBuilder& builder, ir::DType type) {
  return builder.Scalar(type, 0);
}

// The op itself on local operands; returns the (possibly tuple-shaped) local result.
absl::StatusOr<Instruction*> EmitOp(SpmdBuilder& builder, const LocalOp& op,
                                    const std::vector<Instruction*>& locals,
                                    const std::vector<ir::Shape>& result_shapes) {
  const Instruction& instruction = *op.instruction;
  const Opcode opcode = instruction.opcode();
  ir::InstructionAttributes attributes = instruction.attributes();
  attributes.to_apply = op.to_apply;
  const DimFactors& operand_dims =
      op.rule->operand_dims.empty() ? DimFactors{} : op.rule->operand_dims[0];
  switch (opcode) {
    case Opcode::kConvert:
    case Opcode::kBitcastConvert:
    case Opcode::kBroadcast:
    case Opcode::kReshape:
      return builder.Add(opcode, locals, attributes, result_shapes[0]);
    case Opcode::kSlice:
      for (int64_t d = 0; d < static_cast<int64_t>(attributes.slice.size()); ++d) {
        if (IsSplitPassThrough(op, operand_dims, d)) {
          attributes.slice[d] = {0, locals[0]->shape().dimension(d), 1};
        }
      }
      return builder.Add(opcode, locals, attributes);
    case Opcode::kPad:
      for (int64_t d = 0; d < static_cast<int64_t>(attributes.padding.size()); ++d) {
        if (IsSplitPassThrough(op, operand_dims, d)) attributes.padding[d] = {0, 0, 0};
      }
      return builder.Add(opcode, locals, attributes);
    case Opcode::kDynamicSlice: {
      if (!ReductionAxes(op).empty()) return EmitLocalDynamicSlice(builder, op, locals);
      // Dims kept whole by the op have their start clamped to 0 in the global program too.
      std::vector<Instruction*> operands = locals;
      for (int64_t d = 0; d < locals[0]->shape().rank(); ++d) {
        if (!IsSplitPassThrough(op, operand_dims, d)) continue;
        VKSPMD_ASSIGN_OR_RETURN(operands[1 + d], Zero(builder, locals[1 + d]->shape().dtype()));
        attributes.dynamic_slice_sizes[d] = locals[0]->shape().dimension(d);
      }
      return builder.Add(opcode, operands, attributes);
    }
    case Opcode::kDynamicUpdateSlice:
      return EmitLocalDynamicUpdateSlice(builder, op, locals);
    case Opcode::kIota: {
      VKSPMD_ASSIGN_OR_RETURN(Instruction * iota,
                              builder.Add(opcode, {}, attributes, result_shapes[0]));
      const int64_t dim = attributes.iota_dimension;
      const AxisSharding& sharding =
          ProjectToTensor(*op.rule, op.rule->result_dims[0], op.factors, builder.mesh());
      if (sharding.dims[dim].empty()) return iota;
      std::vector<int64_t> offsets;
      for (int64_t device = 0; device < builder.mesh().device_count(); ++device) {
        offsets.push_back(ShardIndex(sharding, dim, builder.mesh(), device) *
                          result_shapes[0].dimension(dim));
      }
      VKSPMD_ASSIGN_OR_RETURN(Instruction * offset, builder.DeviceValue(offsets));
      VKSPMD_ASSIGN_OR_RETURN(offset, builder.builder().Convert(offset, result_shapes[0].dtype()));
      VKSPMD_ASSIGN_OR_RETURN(Instruction * offsets_value,
                              builder.Broadcast(offset, result_shapes[0]));
      return builder.builder().Binary(Opcode::kAdd, iota, offsets_value);
    }
    case Opcode::kRngBitGenerator:
      return builder.Add(opcode, locals, attributes, instruction.shape());
    case Opcode::kGather:
      return EmitLocalGather(builder, op, locals);
    case Opcode::kScatter:
      return EmitLocalScatter(builder, op, locals);
    default:
      return builder.Add(opcode, locals, attributes);
  }
}

// Combines partial results over the reduction axes: a reduce-scatter into the dim of the target
// that is split further by some of those axes (when shard boundaries line up), and an all-reduce
// over the rest.
absl::StatusOr<PartitionedValue> CombinePartials(SpmdBuilder& builder, const LocalOp& op,
                                                 PartitionedValue value, std::vector<int64_t> axes,
                                                 ir::Computation* reducer) {
  const Mesh& mesh = builder.mesh();
  const AxisSharding& target = op.result_targets[0];
  for (int64_t d = 0; d < value.global.rank() && !target.maximal_device.has_value(); ++d) {
    const std::vector<int64_t>& have = value.sharding.dims[d];
    const std::vector<int64_t>& want = target.dims[d];
    if (want.size() <= have.size() || !IsPrefix(have, want)) continue;
    const std::vector<int64_t> extra(want.begin() + have.size(), want.end());
    const bool all_reduced = std::all_of(extra.begin(), extra.end(), [&](int64_t axis) {
      return std::find(axes.begin(), axes.end(), axis) != axes.end();
    });
    if (!all_reduced) continue;
    const int64_t kept = mesh.SizeOf(have), group = mesh.SizeOf(extra);
    const int64_t size = value.global.dimension(d);
    const int64_t piece = CeilDiv(size, kept * group);
    if (kept > 1 && CeilDiv(size, kept) != group * piece) continue;
    VKSPMD_ASSIGN_OR_RETURN(Instruction * padded, builder.PadDimTo(value.local, d, group * piece));
    VKSPMD_ASSIGN_OR_RETURN(value.local, builder.ReduceScatter(padded, d, extra, reducer));
    value.sharding.dims[d] = want;
    axes.erase(std::remove_if(axes.begin(), axes.end(),
                              [&](int64_t axis) {
                                return std::find(extra.begin(), extra.end(), axis) != extra.end();
                              }),
               axes.end());
    break;
  }
  VKSPMD_ASSIGN_OR_RETURN(value.local, builder.AllReduce(value.local, axes, reducer));
  return value;
}

}  // namespace

absl::StatusOr<std::vector<PartitionedValue>> EmitLocalOp(SpmdBuilder& builder, const LocalOp& op) {
  const Instruction& instruction = *op.instruction;
  const Opcode opcode = instruction.opcode();
  const Mesh& mesh = builder.mesh();
  std::vector<Instruction*> locals;
  for (const PartitionedValue& operand : op.operands) locals.push_back(operand.local);
  const std::vector<int64_t> reduction_axes = ReductionAxes(op);
  // A gather or dynamic-slice zeroes what its split indexed dims do not hold itself
  // (EmitLocalGather, EmitLocalDynamicSlice).
  const bool masks_itself = opcode == Opcode::kGather || opcode == Opcode::kDynamicSlice;
  if (!reduction_axes.empty() && !masks_itself) {
    // Padding of split contracted/reduced dims must not reach the result: 0 for a dot (on both
    // sides, so NaN padding cannot leak), the init value for a reduce.
    const int64_t inputs = opcode == Opcode::kDot ? 2 : instruction.operand_count() / 2;
    for (int64_t i = 0; i < inputs; ++i) {
      const auto fill = [&, i]() -> absl::StatusOr<Instruction*> {
        if (opcode == Opcode::kDot) return Zero(builder, locals[i]->shape().dtype());
        return locals[inputs + i];
      };
      VKSPMD_ASSIGN_OR_RETURN(locals[i], MaskReductionPadding(builder, op, op.operands[i],
                                                              op.rule->operand_dims[i], fill));
    }
  }
  std::vector<AxisSharding> result_shardings;
  std::vector<ir::Shape> result_shapes;
  for (size_t r = 0; r < op.rule->results.size(); ++r) {
    result_shardings.push_back(
        ProjectToTensor(*op.rule, op.rule->result_dims[r], op.factors, mesh));
    result_shapes.push_back(
        ShardShape(LeafShape(op.rule->results[r]), result_shardings.back(), mesh));
  }
  VKSPMD_ASSIGN_OR_RETURN(Instruction * result, EmitOp(builder, op, locals, result_shapes));
  // The local op keeps the name of the op it partitions (helpers get unique names later).
  result->set_name(instruction.name());
  std::vector<PartitionedValue> values;
  for (size_t r = 0; r < op.rule->results.size(); ++r) {
    Instruction* leaf = result;
    if (result->shape().IsTuple()) {
      VKSPMD_ASSIGN_OR_RETURN(leaf,
                              builder.builder().GetTupleElement(result, op.rule->results[r].leaf));
    }
    if (leaf->shape() != result_shapes[r]) {
      return absl::InternalError(fmt::format("local {} has shape {}, expected {}",
                                             ir::OpcodeName(opcode), leaf->shape().ToString(),
                                             result_shapes[r].ToString()));
    }
    values.push_back({leaf, LeafShape(op.rule->results[r]), result_shardings[r]});
  }
  if (!reduction_axes.empty()) {
    ir::Computation* reducer = op.to_apply;
    if (opcode == Opcode::kDot || masks_itself) {
      const ir::DType type = instruction.shape().dtype();
      reducer = builder.Reducer(type == ir::DType::kPred ? Opcode::kOr : Opcode::kAdd, type);
    }
    VKSPMD_ASSIGN_OR_RETURN(values[0],
                            CombinePartials(builder, op, values[0], reduction_axes, reducer));
  }
  return values;
}

}  // namespace vkspmd::spmd
