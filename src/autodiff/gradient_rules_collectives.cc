// Gradients through manual regions: the transpose of each collective (all-reduce -> all-reduce,
// all-gather <-> reduce-scatter, all-to-all -> itself, collective-permute -> the inverse pairs)
// and of the region's boundaries, with JAX's shard_map semantics for replicated values.
#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "src/autodiff/gradient_rules.h"
#include "src/base/status_macros.h"

namespace vkspmd::autodiff {
namespace {

using ir::Instruction;
using ir::Opcode;

// The groups of devices holding the same tile under `sharding` over `partitions` devices (one
// group per tile; every group has one member when nothing is replicated).
absl::StatusOr<std::vector<std::vector<int64_t>>> ReplicationGroups(const ir::Sharding& sharding,
                                                                    int64_t partitions) {
  if (sharding.IsReplicated()) {
    std::vector<int64_t> all(partitions);
    std::iota(all.begin(), all.end(), 0);
    return std::vector<std::vector<int64_t>>{all};
  }
  if (sharding.kind() != ir::Sharding::Kind::kTiled) {
    return absl::UnimplementedError(
        absl::StrCat("no gradient through a manual region's boundary "
                     "under ",
                     sharding.ToString()));
  }
  const bool replicated_last = sharding.HasPartialReplication() ||
                               (sharding.subgroup_types().size() == 1 &&
                                sharding.subgroup_types()[0] == ir::SubgroupType::kReplicated);
  if (!replicated_last && !sharding.subgroup_types().empty()) {
    return absl::UnimplementedError(
        absl::StrCat("no gradient through a manual region's boundary under ", sharding.ToString()));
  }
  const std::vector<int64_t> devices = sharding.tile_assignment().Flatten();
  const int64_t size = replicated_last ? sharding.tile_assignment().dimensions.back() : 1;
  std::vector<std::vector<int64_t>> groups;
  for (size_t start = 0; start < devices.size(); start += size) {
    groups.emplace_back(devices.begin() + start, devices.begin() + start + size);
  }
  return groups;
}

// The devices a manual boundary sums (or shares) an adjoint over: those holding the same tile of
// the full side under `full` and, in a region with auto axes (`manual_side` a manual subgroup),
// the same position outside the manual subgroup dim, i.e. the same coordinates along the auto
// axes. A {manual} region has one such position, so this is ReplicationGroups(full).
absl::StatusOr<std::vector<std::vector<int64_t>>> BoundaryGroups(const ir::Sharding& full,
                                                                 const ir::Sharding& manual_side,
                                                                 int64_t partitions) {
  VKSPMD_ASSIGN_OR_RETURN(auto groups, ReplicationGroups(full, partitions));
  if (manual_side.kind() != ir::Sharding::Kind::kTiled) return groups;
  const ir::DeviceArray& array = manual_side.tile_assignment();
  const std::vector<ir::SubgroupType>& types = manual_side.subgroup_types();
  const auto manual_type = std::find(types.begin(), types.end(), ir::SubgroupType::kManual);
  if (manual_type == types.end()) return groups;
  const int64_t manual_dim =
      static_cast<int64_t>(array.dimensions.size() - types.size()) + (manual_type - types.begin());
  // position[device]: its linear index in the tile assignment with the manual dim left out.
  const std::vector<int64_t> devices = array.Flatten();
  std::vector<int64_t> position(partitions, 0);
  for (int64_t linear = 0; linear < static_cast<int64_t>(devices.size()); ++linear) {
    int64_t rest = linear, key = 0, scale = 1;
    for (int64_t d = static_cast<int64_t>(array.dimensions.size()) - 1; d >= 0; --d) {
      const int64_t coordinate = rest % array.dimensions[d];
      rest /= array.dimensions[d];
      if (d == manual_dim) continue;
      key += coordinate * scale;
      scale *= array.dimensions[d];
    }
    position[devices[linear]] = key;
  }
  std::vector<std::vector<int64_t>> split;
  for (const std::vector<int64_t>& group : groups) {
    std::vector<std::vector<int64_t>> by_position;
    std::vector<int64_t> keys;
    for (int64_t device : group) {
      const auto it = std::find(keys.begin(), keys.end(), position[device]);
      if (it == keys.end()) {
        keys.push_back(position[device]);
        by_position.push_back({device});
      } else {
        by_position[it - keys.begin()].push_back(device);
      }
    }
    split.insert(split.end(), by_position.begin(), by_position.end());
  }
  return split;
}

absl::StatusOr<Instruction*> CustomCall(GradientEmitter& emit, Instruction* operand,
                                        const std::string& target, const ir::Sharding& sharding,
                                        const ir::Shape& shape) {
  ir::InstructionAttributes attributes;
  attributes.custom_call_target = target;
  VKSPMD_ASSIGN_OR_RETURN(Instruction * call,
                          emit.Add(Opcode::kCustomCall, {operand}, attributes, shape));
  call->set_sharding(sharding);
  return call;
}

// A collective over `groups` (partition ids), as the trace emits user collectives.
ir::InstructionAttributes GroupAttributes(std::vector<std::vector<int64_t>> groups) {
  ir::InstructionAttributes attributes;
  attributes.channel_id = 1;
  attributes.use_global_device_ids = true;
  attributes.replica_groups.groups = std::move(groups);
  return attributes;
}

// The sharding a boundary's full-shape side has (the operand's constraint for
// SPMDFullToShardShape, the instruction's own for SPMDShardToFullShape); replicated when none.
ir::Sharding FullSideSharding(const Instruction& instruction) {
  return instruction.sharding().value_or(ir::Sharding::Replicated());
}

// The transpose of an all-reduce max/min, as a reduce max/min's (and JAX's pmax through
// reduce_max): every member's adjoint is summed over the group, and each element goes in equal
// shares to the members whose value equals the result there (ties split evenly; the others get
// 0). Two all-reduce sums over the forward's groups: the adjoints and the tie counts.
absl::StatusOr<Instruction*> ExtremumAllReduceGradient(const RuleInput& input,
                                                       GradientEmitter& emit) {
  const Instruction& forward = input.forward;
  Instruction* x = forward.operand(0);
  Instruction* y = const_cast<Instruction*>(&forward);
  ir::InstructionAttributes attributes = forward.attributes();
  VKSPMD_ASSIGN_OR_RETURN(attributes.to_apply, emit.AddReducer(x->shape().dtype()));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * at_extremum,
                          emit.Compare(x, y, ir::ComparisonDirection::kEq));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * ones, emit.Full(1, x->shape()));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * zeros, emit.Zeros(x->shape()));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * indicator, emit.Select(at_extremum, ones, zeros));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * tied,
                          emit.Add(Opcode::kAllReduce, {indicator}, attributes));
  // NaN compares unequal everywhere: share among at least one so the adjoint is 0, not 0/0.
  VKSPMD_ASSIGN_OR_RETURN(Instruction * counts, emit.Binary(Opcode::kMaximum, tied, ones));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * total,
                          emit.Add(Opcode::kAllReduce, {input.adjoint}, attributes));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * share, emit.Binary(Opcode::kDivide, total, counts));
  return emit.Binary(Opcode::kMultiply, share, indicator);
}

}  // namespace

// SPMDFullToShardShape hands every device of a replication group the same shard, and each uses it
// on its own: the full value's adjoint is the sum of the group's adjoints (JAX's psum over the
// axes an in_spec leaves out), made full again under the same sharding. SPMDShardToFullShape
// takes one device's copy of a replicated shard: each device gets the adjoint divided by the
// group's size, so a later all-reduce (whose transpose is an all-reduce) restores it once. In a
// region with auto axes (a manual-subgroup sharding on the region's side) the groups are those
// of the manual axes only: along the auto axes the devices hold parts of one value.
absl::StatusOr<OperandAdjoints> ManualBoundaryGradient(const RuleInput& input,
                                                       GradientEmitter& emit) {
  const Instruction& forward = input.forward;
  const std::string& target = forward.attributes().custom_call_target;
  if (!input.wanted[0]) return OperandAdjoints{nullptr};
  const ir::Shape& operand_shape = forward.operand(0)->shape();
  if (target == "SPMDFullToShardShape") {
    const ir::Sharding sharding = FullSideSharding(*forward.operand(0));
    const ir::Sharding region = forward.sharding().value_or(ir::Sharding::Manual());
    VKSPMD_ASSIGN_OR_RETURN(auto groups, BoundaryGroups(sharding, region, emit.partition_count()));
    Instruction* summed = input.adjoint;
    if (groups[0].size() > 1) {
      ir::InstructionAttributes attributes = GroupAttributes(std::move(groups));
      VKSPMD_ASSIGN_OR_RETURN(attributes.to_apply, emit.AddReducer(input.adjoint->shape().dtype()));
      VKSPMD_ASSIGN_OR_RETURN(summed, emit.Add(Opcode::kAllReduce, {summed}, attributes));
    }
    VKSPMD_ASSIGN_OR_RETURN(Instruction * manual,
                            CustomCall(emit, summed, "Sharding", region, summed->shape()));
    VKSPMD_ASSIGN_OR_RETURN(Instruction * full, CustomCall(emit, manual, "SPMDShardToFullShape",
                                                           sharding, operand_shape));
    return OperandAdjoints{full};
  }
  if (target == "SPMDShardToFullShape") {
    const ir::Sharding sharding = FullSideSharding(forward);
    const ir::Sharding region = forward.operand(0)->sharding().value_or(ir::Sharding::Manual());
    VKSPMD_ASSIGN_OR_RETURN(auto groups, BoundaryGroups(sharding, region, emit.partition_count()));
    VKSPMD_ASSIGN_OR_RETURN(
        Instruction * constrained,
        CustomCall(emit, input.adjoint, "Sharding", sharding, input.adjoint->shape()));
    VKSPMD_ASSIGN_OR_RETURN(
        Instruction * shard,
        CustomCall(emit, constrained, "SPMDFullToShardShape", region, operand_shape));
    if (groups[0].size() == 1) return OperandAdjoints{shard};
    VKSPMD_ASSIGN_OR_RETURN(
        Instruction * scaled,
        emit.BinaryWithScalar(Opcode::kDivide, shard, static_cast<double>(groups[0].size())));
    return OperandAdjoints{scaled};
  }
  return absl::UnimplementedError(
      absl::StrCat("no gradient rule for custom-call \"", target, "\""));
}

absl::StatusOr<OperandAdjoints> CollectiveGradient(const RuleInput& input, GradientEmitter& emit) {
  const Instruction& forward = input.forward;
  if (!input.wanted[0]) return OperandAdjoints{nullptr};
  ir::InstructionAttributes attributes = forward.attributes();
  const ir::Shape& operand_shape = forward.operand(0)->shape();
  switch (forward.opcode()) {
    case Opcode::kAllReduce: {
      const Opcode reducer = attributes.to_apply->root()->opcode();
      if (reducer == Opcode::kMaximum || reducer == Opcode::kMinimum) {
        VKSPMD_ASSIGN_OR_RETURN(Instruction * adjoint, ExtremumAllReduceGradient(input, emit));
        return OperandAdjoints{adjoint};
      }
      if (reducer != Opcode::kAdd) {
        return absl::UnimplementedError(absl::StrCat(
            forward.Describe(), ": all-reduce with ", std::string(ir::OpcodeName(reducer)),
            " has no gradient rule (sum, max and min are defined)"));
      }
      VKSPMD_ASSIGN_OR_RETURN(attributes.to_apply, emit.AddReducer(operand_shape.dtype()));
      VKSPMD_ASSIGN_OR_RETURN(Instruction * sum,
                              emit.Add(Opcode::kAllReduce, {input.adjoint}, attributes));
      return OperandAdjoints{sum};
    }
    case Opcode::kAllGather: {
      VKSPMD_ASSIGN_OR_RETURN(attributes.to_apply, emit.AddReducer(operand_shape.dtype()));
      VKSPMD_ASSIGN_OR_RETURN(Instruction * scattered,
                              emit.Add(Opcode::kReduceScatter, {input.adjoint}, attributes));
      return OperandAdjoints{scattered};
    }
    case Opcode::kReduceScatter: {
      if (attributes.to_apply->root()->opcode() != Opcode::kAdd) {
        return absl::UnimplementedError(absl::StrCat(
            forward.Describe(), ": reduce-scatter that does not add has no gradient rule"));
      }
      attributes.to_apply = nullptr;
      VKSPMD_ASSIGN_OR_RETURN(Instruction * gathered,
                              emit.Add(Opcode::kAllGather, {input.adjoint}, attributes));
      return OperandAdjoints{gathered};
    }
    case Opcode::kAllToAll: {
      // Piece j of sender i lands at position i of receiver j: the same exchange undoes it.
      VKSPMD_ASSIGN_OR_RETURN(Instruction * back,
                              emit.Add(Opcode::kAllToAll, {input.adjoint}, attributes));
      return OperandAdjoints{back};
    }
    case Opcode::kCollectivePermute: {
      for (auto& [source, target] : attributes.source_target_pairs) std::swap(source, target);
      VKSPMD_ASSIGN_OR_RETURN(Instruction * back,
                              emit.Add(Opcode::kCollectivePermute, {input.adjoint}, attributes));
      return OperandAdjoints{back};
    }
    default:
      return absl::InternalError("not a collective");
  }
}

}  // namespace vkspmd::autodiff
