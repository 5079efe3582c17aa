// Partitioner driver: walks the entry in order; for each op it prices the factor assignments its
// tensors suggest (bytes moved to reshard operands, combine partial results and reshard the
// result to its propagated sharding), emits the cheapest, and records what it did.
#include "src/spmd/partitioner.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/ir/collective_groups.h"
#include "src/ir/control_flow_lowering.h"
#include "src/ir/verifier.h"
#include "src/spmd/factor_sharding.h"
#include "src/spmd/halo_ops.h"
#include "src/spmd/local_ops.h"
#include "src/spmd/manual_region.h"
#include "src/spmd/mesh_assignment.h"
#include "src/spmd/op_rules.h"

namespace vkspmd::spmd {
namespace {

using ir::Instruction;
using ir::Opcode;

absl::Status CheckMesh(const ir::Module& module, const Mesh& mesh) {
  std::vector<int64_t> ids = mesh.device_ids();
  std::sort(ids.begin(), ids.end());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != static_cast<int64_t>(i)) {
      return absl::InvalidArgumentError(fmt::format(
          "mesh {} must use the partitions 0..{} (in any order): the per-device program runs "
          "on every partition",
          mesh.ToString(), mesh.device_count() - 1));
    }
  }
  if (module.partition_count() != 1 && module.partition_count() != mesh.device_count()) {
    return absl::InvalidArgumentError(
        fmt::format("module has num_partitions={} but mesh {} has {} devices",
                    module.partition_count(), mesh.ToString(), mesh.device_count()));
  }
  if (module.replica_count() != 1) {
    return absl::InvalidArgumentError("the partitioner handles modules with one replica");
  }
  return absl::OkStatus();
}

// The mesh the annotations are read over: `mesh` when it expresses every one, else `mesh` with
// its axes split into prime factors (a [4] mesh cannot split two dims two ways each; [2,2] can),
// else the error of the first annotation `mesh` cannot express. Manual groups are read in the
// mesh's own order where either mesh can (one layout for a whole region); a device order lays
// them out only where neither can.
absl::StatusOr<Mesh> MeshForAnnotations(const ir::Module& module, const Mesh& mesh) {
  const auto first_error = [&](const Mesh& candidate, bool groups_in_mesh_order) {
    for (const auto& instruction : module.entry()->instructions()) {
      if (!instruction->sharding().has_value()) continue;
      absl::StatusOr<std::vector<AxisSharding>> leaves = LeafShardings(*instruction, candidate);
      if (!leaves.ok()) return leaves.status();
      for (const AxisSharding& leaf : *leaves) {
        if (groups_in_mesh_order && leaf.IsPartiallyManual() && !leaf.device_order.empty()) {
          return absl::InvalidArgumentError("manual groups in a device order");
        }
      }
    }
    return absl::OkStatus();
  };
  std::vector<Mesh> candidates = {mesh};
  if (!mesh.IsRefined()) candidates.push_back(mesh.Refined());
  for (bool groups_in_mesh_order : {true, false}) {
    for (const Mesh& candidate : candidates) {
      if (first_error(candidate, groups_in_mesh_order).ok()) return candidate;
    }
  }
  return first_error(mesh, false);
}

// Copies a reducer (or any callee) into the output module.
ir::Computation* CloneComputation(
    const ir::Computation& computation, ir::Module& module,
    const absl::flat_hash_map<const ir::Computation*, ir::Computation*>& clones) {
  auto clone = std::make_unique<ir::Computation>(computation.name());
  absl::flat_hash_map<const Instruction*, Instruction*> map;
  for (const auto& instruction : computation.instructions()) {
    std::vector<Instruction*> operands;
    for (const Instruction* operand : instruction->operands()) operands.push_back(map.at(operand));
    auto copy =
        std::make_unique<Instruction>(instruction->opcode(), instruction->shape(), operands);
    copy->attributes() = instruction->attributes();
    if (copy->attributes().to_apply != nullptr) {
      copy->attributes().to_apply = clones.at(copy->attributes().to_apply);
    }
    copy->set_name(instruction->name());
    map[instruction.get()] = clone->AddInstruction(std::move(copy));
  }
  clone->set_root(map.at(computation.root()));
  return module.AddComputation(std::move(clone));
}

// Names from the input are kept for the ops they name; helper names that collide get a suffix.
void MakeNamesUnique(ir::Computation& computation) {
  absl::flat_hash_set<std::string> taken;
  for (const auto& instruction : computation.instructions()) {
    std::string name = instruction->name();
    for (int suffix = 1; taken.contains(name); ++suffix) {
      name = fmt::format("{}.s{}", instruction->name(), suffix);
    }
    instruction->set_name(name);
    taken.insert(name);
  }
}

class Partitioner {
 public:
  Partitioner(const ir::Module& input, const Mesh& mesh, PartitionResult& result)
      : input_(input), mesh_(mesh), result_(result) {}

  absl::Status Run() {
    result_.module = std::make_unique<ir::Module>(input_.name());
    ir::Module& output = *result_.module;
    output.set_partition_count(mesh_.device_count());
    for (const auto& computation : input_.computations()) {
      if (computation.get() == input_.entry()) continue;
      clones_[computation.get()] = CloneComputation(*computation, output, clones_);
    }
    const ir::Computation& entry = *input_.entry();
    ir::ComputationBuilder builder(entry.name(), {1, mesh_.device_count()});
    SpmdBuilder spmd(builder, output, mesh_);
    spmd_ = &spmd;
    for (const auto& instruction : entry.instructions()) {
      spmd.set_current(instruction->name());
      absl::Status status = PartitionInstruction(*instruction);
      if (!status.ok()) return Explain(*instruction, status);
    }
    const Instruction* root = entry.root();
    Instruction* local_root = nullptr;
    if (root->shape().IsTuple()) {
      std::vector<Instruction*> leaves;
      for (const PartitionedValue& leaf : values_.at(root)) leaves.push_back(leaf.local);
      VKSPMD_ASSIGN_OR_RETURN(local_root, builder.Tuple(leaves));
    } else {
      local_root = values_.at(root)[0].local;
    }
    for (const PartitionedValue& leaf : values_.at(root))
      result_.result_shardings.push_back(leaf.sharding);
    KeepAliases(output);
    std::unique_ptr<ir::Computation> computation = builder.Build(local_root);
    MakeNamesUnique(*computation);
    output.set_entry(output.AddComputation(std::move(computation)));
    result_.collectives = spmd.records();
    absl::Status verified = ir::VerifyModule(output);
    if (!verified.ok()) {
      return absl::InternalError(fmt::format("the partitioned module does not verify: {}",
                                             std::string(verified.message())));
    }
    return absl::OkStatus();
  }

 private:
  // A donated parameter stays aliased to its output where both are sharded alike, so each device
  // updates its own shard in place; otherwise the output's shards have other shapes or hold
  // other elements, and the alias is dropped (the run then writes a new buffer).
  void KeepAliases(ir::Module& output) const {
    for (const ir::InputOutputAlias& alias : input_.input_output_aliases()) {
      if (!alias.parameter_index.empty() || alias.output_index.size() > 1) continue;
      const size_t leaf = alias.output_index.empty() ? 0 : alias.output_index[0];
      const auto& parameters = result_.parameter_shardings;
      if (alias.parameter_number >= static_cast<int64_t>(parameters.size()) ||
          parameters[alias.parameter_number].size() != 1 ||
          leaf >= result_.result_shardings.size()) {
        continue;
      }
      if (parameters[alias.parameter_number][0] == result_.result_shardings[leaf]) {
        output.input_output_aliases().push_back(alias);
      }
    }
  }

  const std::vector<AxisSharding>& Targets(const Instruction& instruction) const {
    return result_.propagation.shardings.at(&instruction);
  }

  absl::Status Explain(const Instruction& instruction, const absl::Status& status) const {
    std::vector<std::string> operands;
    for (const Instruction* operand : instruction.operands()) {
      for (const AxisSharding& leaf : Targets(*operand)) {
        operands.push_back(fmt::format("%{} {}", operand->name(), leaf.ToString(mesh_)));
      }
    }
    std::vector<std::string> results;
    for (const AxisSharding& leaf : Targets(instruction)) results.push_back(leaf.ToString(mesh_));
    return absl::Status(status.code(),
                        fmt::format("{}: cannot partition {} with sharding {} (operands: {}): {}",
                                    instruction.Describe(), ir::OpcodeName(instruction.opcode()),
                                    absl::StrJoin(results, ", "),
                                    operands.empty() ? "none" : absl::StrJoin(operands, ", "),
                                    std::string(status.message())));
  }

  absl::Status PartitionInstruction(const Instruction& instruction) {
    const std::vector<AxisSharding>& targets = Targets(instruction);
    switch (instruction.opcode()) {
      case Opcode::kParameter:
        return PartitionParameter(instruction, targets);
      case Opcode::kConstant: {
        if (instruction.shape().IsTuple()) return absl::UnimplementedError("tuple constants");
        Instruction* constant = spmd_->builder().Constant(*instruction.attributes().literal);
        constant->set_name(instruction.name());
        return SetReshard(instruction, {{constant, instruction.shape(),
                                         AxisSharding::Replicated(instruction.shape().rank())}});
      }
      case Opcode::kTuple: {
        std::vector<PartitionedValue> leaves;
        for (const Instruction* operand : instruction.operands())
          leaves.push_back(values_.at(operand)[0]);
        return SetReshard(instruction, leaves);
      }
      case Opcode::kGetTupleElement:
        return SetReshard(
            instruction,
            {values_.at(instruction.operand(0))[instruction.attributes().tuple_index]});
      case Opcode::kCustomCall: {
        const std::string& target = instruction.attributes().custom_call_target;
        if (target == "Sharding")
          return SetReshard(instruction, {values_.at(instruction.operand(0))[0]});
        if (target == "SPMDFullToShardShape") return EnterManualRegion(instruction);
        if (target == "SPMDShardToFullShape") return LeaveManualRegion(instruction);
        break;
      }
      default:
        break;
    }
    if (std::all_of(targets.begin(), targets.end(),
                    [](const AxisSharding& leaf) { return leaf.manual; })) {
      return CloneManual(instruction);
    }
    if (instruction.opcode() == Opcode::kPartitionId ||
        instruction.opcode() == Opcode::kReplicaId) {
      // Inside a partially manual region (propagation checked): each device's own id, as XLA
      // gives it (the instruction is kept, as in manual regions).
      VKSPMD_ASSIGN_OR_RETURN(
          Instruction * id,
          spmd_->Add(instruction.opcode(), {}, instruction.attributes(), instruction.shape()));
      id->set_name(instruction.name());
      AxisSharding sharding = targets[0];
      sharding.dims.assign(sharding.rank(), {});
      return SetReshard(instruction, {{id, instruction.shape(), sharding}});
    }
    if (ir::IsCollective(instruction.opcode()) && !targets.empty() &&
        targets[0].IsPartiallyManual()) {
      VKSPMD_ASSIGN_OR_RETURN(OpRule rule, PartiallyManualCollectiveRule(instruction));
      const AxisSharding& operand = values_.at(instruction.operand(0))[0].sharding;
      std::vector<int64_t> split = targets[0].UsedAxes();
      for (int64_t axis : operand.UsedAxes()) {
        if (std::find(split.begin(), split.end(), axis) == split.end()) split.push_back(axis);
      }
      VKSPMD_RETURN_IF_ERROR(CheckGroupsWithinShards(instruction, split, targets[0]));
      if (operand.IsPartiallyManual()) {
        VKSPMD_RETURN_IF_ERROR(CheckGroupsWithinShards(instruction, split, operand));
      }
      return PartitionWithRule(instruction, rule);
    }
    VKSPMD_ASSIGN_OR_RETURN(std::vector<OpRule> rules, RulesFor(instruction));
    if (rules.size() != 1) return absl::InternalError("an op with several rules");
    return PartitionWithRule(instruction, rules[0]);
  }

  // A user's collective in a partially manual region combines the devices its groups (or pairs)
  // name; each device holds its shard over the axes that split the op's operand or result (the
  // only axes its factors can take), so every group must keep to devices with the same
  // coordinates on those (in the layout of `sharding`, whose device order lays out the manual
  // groups): it may run over the manual axes and over axes nothing splits.
  absl::Status CheckGroupsWithinShards(const Instruction& instruction,
                                       const std::vector<int64_t>& split_axes,
                                       const AxisSharding& sharding) const {
    const Mesh layout = LayoutMesh(sharding, mesh_);
    std::vector<std::vector<int64_t>> groups;
    if (instruction.opcode() == Opcode::kCollectivePermute) {
      VKSPMD_ASSIGN_OR_RETURN(
          auto pairs, ir::CollectivePermuteDevicePairs(instruction, 1, mesh_.device_count()));
      for (const auto& [source, target] : pairs) groups.push_back({source, target});
    } else {
      VKSPMD_ASSIGN_OR_RETURN(groups,
                              ir::CollectiveDeviceGroups(instruction, 1, mesh_.device_count()));
    }
    const auto other_coordinates = [&](int64_t device) {
      const std::vector<int64_t> coordinates =
          layout.CoordinatesOf(device).value_or(std::vector<int64_t>{});
      std::vector<int64_t> on_split;
      for (int64_t axis : split_axes) on_split.push_back(coordinates.at(axis));
      return on_split;
    };
    for (const std::vector<int64_t>& group : groups) {
      for (int64_t device : group) {
        if (other_coordinates(device) == other_coordinates(group[0])) continue;
        return absl::InvalidArgumentError(fmt::format(
            "its devices {{{}}} hold different shards (they differ along mesh axes {} that split "
            "its operand or result): inside a partially manual region the user's collectives "
            "run over the manual axes (and axes nothing splits) only",
            absl::StrJoin(group, ","), mesh_.AxesLabel(split_axes)));
      }
    }
    return absl::OkStatus();
  }

  absl::Status EnterManualRegion(const Instruction& instruction) {
    const PartitionedValue& operand = values_.at(instruction.operand(0))[0];
    const AxisSharding& target = Targets(instruction)[0];
    if (target.IsPartiallyManual()) {
      // The operand's shards as propagation left them (an annotation whose unspecified dims it
      // extended included), else split as the region's values are, whole over the manual axes.
      const Instruction& input = *instruction.operand(0);
      AxisSharding tiling = target;
      tiling.manual_axes.clear();
      if (input.sharding().has_value()) tiling = Targets(input)[0];
      VKSPMD_ASSIGN_OR_RETURN(
          PartitionedValue value,
          spmd::EnterPartiallyManualRegion(*spmd_, instruction, operand, tiling, target));
      values_[&instruction] = {value};
      return absl::OkStatus();
    }
    VKSPMD_ASSIGN_OR_RETURN(PartitionedValue value,
                            spmd::EnterManualRegion(*spmd_, instruction, operand));
    values_[&instruction] = {value};
    return absl::OkStatus();
  }

  absl::Status LeaveManualRegion(const Instruction& instruction) {
    PartitionedValue operand = values_.at(instruction.operand(0))[0];
    const AxisSharding& target = Targets(instruction)[0];
    if (operand.sharding.IsPartiallyManual() && !instruction.operand(0)->sharding().has_value() &&
        target.device_order.empty()) {
      // An operand the user did not annotate (JAX always does) is first split as the target's
      // shards need: the target's axes less the manual ones.
      AxisSharding inside = target;
      for (std::vector<int64_t>& axes : inside.dims) {
        axes.erase(std::remove_if(axes.begin(), axes.end(),
                                  [&](int64_t axis) {
                                    return absl::c_linear_search(operand.sharding.manual_axes,
                                                                 axis);
                                  }),
                   axes.end());
      }
      inside.manual_axes = operand.sharding.manual_axes;
      VKSPMD_ASSIGN_OR_RETURN(operand, CachedReshard(operand, inside));
    }
    if (operand.sharding.IsPartiallyManual()) {
      VKSPMD_ASSIGN_OR_RETURN(PartitionedValue value, spmd::LeavePartiallyManualRegion(
                                                          mesh_, instruction, operand, target));
      return SetReshard(instruction, {value});
    }
    VKSPMD_ASSIGN_OR_RETURN(PartitionedValue value,
                            spmd::LeaveManualRegion(mesh_, instruction, operand, target));
    values_[&instruction] = {value};
    return absl::OkStatus();
  }

  absl::Status CloneManual(const Instruction& instruction) {
    std::vector<PartitionedValue> operands;
    for (const Instruction* operand : instruction.operands()) {
      operands.push_back(values_.at(operand)[0]);
    }
    ir::Computation* to_apply = instruction.attributes().to_apply;
    VKSPMD_ASSIGN_OR_RETURN(values_[&instruction],
                            CloneManualOp(*spmd_, instruction, operands,
                                          to_apply == nullptr ? nullptr : clones_.at(to_apply)));
    return absl::OkStatus();
  }

  absl::Status PartitionParameter(const Instruction& instruction,
                                  const std::vector<AxisSharding>& targets) {
    const int64_t number = instruction.attributes().parameter_number;
    if (static_cast<int64_t>(result_.parameter_shardings.size()) <= number) {
      result_.parameter_shardings.resize(number + 1);
    }
    result_.parameter_shardings[number] = targets;
    std::vector<ir::Shape> local_shapes;
    for (int64_t leaf = 0; leaf < LeafCount(instruction.shape()); ++leaf) {
      local_shapes.push_back(ShardShape(LeafShape({&instruction, leaf}), targets[leaf], mesh_));
    }
    const bool tuple = instruction.shape().IsTuple();
    Instruction* parameter = spmd_->builder().Parameter(
        number, tuple ? ir::Shape::Tuple(local_shapes) : local_shapes[0], instruction.name());
    std::vector<PartitionedValue> leaves;
    for (int64_t leaf = 0; leaf < LeafCount(instruction.shape()); ++leaf) {
      Instruction* local = parameter;
      if (tuple) {
        VKSPMD_ASSIGN_OR_RETURN(local, spmd_->builder().GetTupleElement(parameter, leaf));
      }
      leaves.push_back({local, LeafShape({&instruction, leaf}), targets[leaf]});
    }
    values_[&instruction] = leaves;
    return absl::OkStatus();
  }

  // Reshards each leaf to the instruction's propagated sharding and records it as its value.
  absl::Status SetReshard(const Instruction& instruction,
                          const std::vector<PartitionedValue>& leaves) {
    const std::vector<AxisSharding>& targets = Targets(instruction);
    std::vector<PartitionedValue> values;
    for (size_t leaf = 0; leaf < leaves.size(); ++leaf) {
      VKSPMD_ASSIGN_OR_RETURN(PartitionedValue value, CachedReshard(leaves[leaf], targets[leaf]));
      values.push_back(value);
    }
    values_[&instruction] = std::move(values);
    return absl::OkStatus();
  }

  // Reshard, emitted once per value, layout and target: an op that reads one value twice (x + x)
  // or two ops that want it alike share the collectives.
  absl::StatusOr<PartitionedValue> CachedReshard(const PartitionedValue& value,
                                                 const AxisSharding& to) {
    if (value.sharding == to) return value;
    const std::tuple<const Instruction*, std::vector<int64_t>, std::string, std::string> key = {
        value.local, spmd_->mesh().device_ids(), value.sharding.ToString(mesh_),
        to.ToString(mesh_)};
    const auto found = reshards_.find(key);
    if (found != reshards_.end()) return found->second;
    VKSPMD_ASSIGN_OR_RETURN(PartitionedValue resharded, Reshard(*spmd_, value, to));
    reshards_.emplace(key, resharded);
    return resharded;
  }

  // Tensors of a rule with their current (operands) or wanted (results) shardings.
  struct Tensor {
    const DimFactors* dims;
    ir::Shape global;
    AxisSharding sharding;
  };

  // The manual axes of an op in a partially manual region: those of its partially manual
  // operands and results, which must agree; its other tensors must be replicated (constants).
  absl::StatusOr<std::vector<int64_t>> OpManualAxes(const std::vector<Tensor>& operands,
                                                    const std::vector<Tensor>& results) const {
    std::vector<int64_t> axes;
    const AxisSharding* laid_out = nullptr;  // the first partially manual tensor
    for (const std::vector<Tensor>* tensors : {&operands, &results}) {
      for (const Tensor& tensor : *tensors) {
        const AxisSharding& sharding = tensor.sharding;
        if (sharding.IsPartiallyManual() && laid_out == nullptr) laid_out = &sharding;
        if (sharding.IsPartiallyManual() && sharding.device_order != laid_out->device_order) {
          // Manual groups laid out by different device orders would each hold other values.
          return absl::UnimplementedError(fmt::format(
              "its partially manual values are laid out in different device orders ({} and {}); "
              "a partially manual region keeps one layout of its manual groups throughout",
              laid_out->ToString(mesh_), sharding.ToString(mesh_)));
        }
        if (!sharding.IsPartiallyManual() || sharding.manual_axes == axes) continue;
        if (!axes.empty()) {
          return absl::InvalidArgumentError(
              fmt::format("its values are manual over mesh axes {} and {}; a partially manual "
                          "region is manual over the same axes throughout",
                          mesh_.AxesLabel(axes), mesh_.AxesLabel(sharding.manual_axes)));
        }
        axes = sharding.manual_axes;
      }
    }
    for (size_t r = 0; r < results.size() && !axes.empty(); ++r) {
      if (results[r].sharding.manual_axes != axes) {
        return absl::InvalidArgumentError(fmt::format(
            "result {} is to be {}, not manual over mesh axes {} like its operands: values leave "
            "a partially manual region only through SPMDShardToFullShape",
            r, results[r].sharding.ToString(mesh_), mesh_.AxesLabel(axes)));
      }
    }
    return axes;
  }

  // A factor assignment that takes each factor from the first tensor in `order` that splits it.
  FactorAxes AssignmentFrom(const OpRule& rule, const std::vector<Tensor>& tensors,
                            const std::vector<size_t>& order) const {
    FactorAxes factors(rule.factors.size());
    std::vector<bool> used(mesh_.axis_count(), false);
    for (int64_t axis : manual_axes_) used[axis] = true;  // each manual group's own
    std::vector<bool> assigned(rule.factors.size(), false);
    for (size_t t : order) {
      const FactorAxes projected =
          ProjectToFactors(rule, *tensors[t].dims, tensors[t].sharding, mesh_);
      for (size_t f = 0; f < rule.factors.size(); ++f) {
        if (assigned[f] || projected[f].empty() || NeedsWhole(rule.factors[f].kind)) {
          continue;
        }
        assigned[f] = true;
        for (int64_t axis : projected[f]) {
          if (used[axis]) break;
          factors[f].push_back(axis);
        }
        for (int64_t axis : factors[f]) used[axis] = true;
      }
    }
    return MakeRepresentable(rule, factors, mesh_);
  }

  // Bytes moved per device running the op with `factors` in `layout` (the mesh permuted to the
  // op's device order: the tensors' shardings are read relative to it, see MakeRelative).
  int64_t Cost(const OpRule& rule, const std::vector<Tensor>& operands,
               const std::vector<Tensor>& results, const FactorAxes& factors,
               const Mesh& layout) const {
    int64_t bytes = 0;
    for (const Tensor& operand : operands) {
      bytes += ReshardBytes(operand.global, operand.sharding,
                            ProjectToTensor(rule, *operand.dims, factors, mesh_), layout);
    }
    std::vector<int64_t> reduction_axes;
    for (size_t f = 0; f < rule.factors.size(); ++f) {
      if (rule.factors[f].kind == FactorKind::kReduction) {
        reduction_axes.insert(reduction_axes.end(), factors[f].begin(), factors[f].end());
      }
    }
    for (const Tensor& result : results) {
      const AxisSharding produced = ProjectToTensor(rule, *result.dims, factors, mesh_);
      bytes += CollectiveBytesPerDevice(Opcode::kAllReduce,
                                        ByteSize(ShardShape(result.global, produced, mesh_)),
                                        mesh_.SizeOf(reduction_axes));
      bytes += ReshardBytes(result.global, produced, result.sharding, layout);
    }
    return bytes;
  }

  absl::Status PartitionWithRule(const Instruction& instruction, const OpRule& rule) {
    std::vector<Tensor> operands, results;
    std::vector<PartitionedValue> operand_values;
    for (size_t i = 0; i < rule.operands.size(); ++i) {
      const PartitionedValue& value =
          values_.at(rule.operands[i].instruction)[rule.operands[i].leaf];
      operand_values.push_back(value);
      operands.push_back({&rule.operand_dims[i], value.global, value.sharding});
    }
    for (size_t r = 0; r < rule.results.size(); ++r) {
      results.push_back({&rule.result_dims[r], LeafShape(rule.results[r]),
                         Targets(instruction)[rule.results[r].leaf]});
    }
    // Factors never take the manual axes of a partially manual region: every collective below
    // then runs along the other axes, within the devices of one manual group.
    VKSPMD_ASSIGN_OR_RETURN(manual_axes_, OpManualAxes(operands, results));
    const auto [device_order, cheapest] = CheapestLayout(rule, operands, results);
    // Where the rule would move data for an op that shifts elements along a split dim (slice,
    // pad, reverse, concatenate, reshape), GSPMD's halo exchange keeps the tiling and sends only
    // boundary rows; inside a partially manual region too, where the split axes are automatic
    // ones, so the neighbours it exchanges with are in the same manual group.
    if (cheapest > 0 && results.size() == 1) {
      VKSPMD_ASSIGN_OR_RETURN(std::optional<int64_t> halo_bytes,
                              HaloBytes(*spmd_, instruction, operand_values, results[0].sharding));
      if (halo_bytes.has_value() && *halo_bytes <= cheapest) {
        VKSPMD_ASSIGN_OR_RETURN(
            std::optional<PartitionedValue> halo,
            PartitionWithHalo(*spmd_, instruction, operand_values, results[0].sharding));
        if (halo.has_value()) return SetReshard(instruction, {*halo});
      }
    }
    std::optional<Mesh> layout;
    std::optional<ScopedMesh> in_layout;
    if (!device_order.empty()) {
      layout = mesh_.WithDeviceIds(device_order);
      in_layout.emplace(*spmd_, *layout);
      MakeRelative(operands, device_order);
      MakeRelative(results, device_order);
      for (size_t i = 0; i < operands.size(); ++i)
        operand_values[i].sharding = operands[i].sharding;
    }
    // An op whose results live on one device (maximal) and whose operands live there too (or
    // everywhere) runs there: every device runs it on what it holds, and only that device's
    // result counts, so nothing is broadcast.
    const std::optional<int64_t> on_device = MaximalDevice(operands, results);
    if (on_device.has_value()) {
      for (size_t i = 0; i < operands.size(); ++i) {
        operands[i].sharding.maximal_device.reset();
        operand_values[i].sharding = operands[i].sharding;
      }
      for (Tensor& result : results) result.sharding.maximal_device.reset();
    }
    FactorAxes best = CheapestFactors(rule, operands, results, layout.value_or(mesh_)).first;
    LocalOp op;
    op.instruction = &instruction;
    op.rule = &rule;
    op.factors = best;
    if (instruction.attributes().to_apply != nullptr) {
      op.to_apply = clones_.at(instruction.attributes().to_apply);
    }
    for (size_t i = 0; i < rule.operands.size(); ++i) {
      AxisSharding wanted = ProjectToTensor(rule, rule.operand_dims[i], op.factors, mesh_);
      wanted.manual_axes = manual_axes_;
      RecordFallbacks(instruction, rule, i, operand_values[i].sharding, wanted);
      VKSPMD_ASSIGN_OR_RETURN(PartitionedValue value, CachedReshard(operand_values[i], wanted));
      op.operands.push_back(value);
    }
    for (const Tensor& result : results) op.result_targets.push_back(result.sharding);
    RecordLocalOp(instruction, op);
    VKSPMD_ASSIGN_OR_RETURN(std::vector<PartitionedValue> produced, EmitLocalOp(*spmd_, op));
    in_layout.reset();
    std::vector<PartitionedValue> leaves(LeafCount(instruction.shape()));
    for (size_t r = 0; r < produced.size(); ++r) {
      produced[r].sharding.manual_axes = manual_axes_;
      if (!device_order.empty() && IsLaidOutByDeviceOrder(produced[r].sharding, mesh_)) {
        produced[r].sharding.device_order = device_order;
      }
      if (on_device.has_value()) produced[r].sharding.maximal_device = on_device;
      leaves[rule.results[r].leaf] = produced[r];
    }
    return SetReshard(instruction, leaves);
  }

  // The device layout an op runs in that moves the fewest bytes, with the bytes: the mesh's
  // order (empty) or that of one of its split tensors (GSPMD runs an op in its operands' tile
  // assignment). Shardings are then read over the mesh permuted to that order.
  std::pair<std::vector<int64_t>, int64_t> CheapestLayout(
      const OpRule& rule, const std::vector<Tensor>& operands,
      const std::vector<Tensor>& results) const {
    std::vector<int64_t> device_order;
    int64_t cheapest = -1;
    for (const std::vector<int64_t>& candidate : LayoutCandidates(operands, results)) {
      std::vector<Tensor> relative_operands = operands, relative_results = results;
      MakeRelative(relative_operands, candidate);
      MakeRelative(relative_results, candidate);
      // Priced over the permuted mesh the relative shardings are read in: over the mesh itself,
      // a tensor in the mesh's order (relative order: the mesh's ids) would read as already in
      // the candidate's layout, and moving it into (or the result out of) that layout as free.
      const Mesh candidate_layout = candidate.empty() ? mesh_ : mesh_.WithDeviceIds(candidate);
      const int64_t cost =
          CheapestFactors(rule, relative_operands, relative_results, candidate_layout).second;
      if (cheapest < 0 || cost < cheapest) {
        cheapest = cost;
        device_order = candidate;
      }
    }
    return {device_order, cheapest};
  }

  // The device all of an op's results are maximal on, when its operands are maximal there too or
  // replicated; none otherwise.
  static std::optional<int64_t> MaximalDevice(const std::vector<Tensor>& operands,
                                              const std::vector<Tensor>& results) {
    std::optional<int64_t> device;
    for (const Tensor& result : results) {
      if (!result.sharding.maximal_device.has_value()) return std::nullopt;
      if (device.has_value() && *device != *result.sharding.maximal_device) return std::nullopt;
      device = result.sharding.maximal_device;
    }
    for (const Tensor& operand : operands) {
      const AxisSharding& sharding = operand.sharding;
      if (sharding.maximal_device == device || sharding.IsReplicated()) continue;
      return std::nullopt;
    }
    return device;
  }

  // The device layouts an op may run in: the mesh's order (empty), then each order its split
  // tensors are laid out in; only the order of its partially manual tensors, where it has some.
  std::vector<std::vector<int64_t>> LayoutCandidates(const std::vector<Tensor>& operands,
                                                     const std::vector<Tensor>& results) const {
    std::vector<std::vector<int64_t>> candidates = {{}};
    // A partially manual region keeps one layout of its manual groups throughout (Reshard refuses
    // to move them into another order): an op with a partially manual tensor runs in its order.
    for (const std::vector<Tensor>* tensors : {&results, &operands}) {
      for (const Tensor& tensor : *tensors) {
        if (!tensor.sharding.IsPartiallyManual()) continue;
        candidates.front() = tensor.sharding.device_order;
        return candidates;
      }
    }
    for (const std::vector<Tensor>* tensors : {&results, &operands}) {
      for (const Tensor& tensor : *tensors) {
        const std::vector<int64_t>& order = tensor.sharding.device_order;
        if (IsLaidOutByDeviceOrder(tensor.sharding, mesh_) &&
            std::find(candidates.begin(), candidates.end(), order) == candidates.end()) {
          candidates.push_back(order);
        }
      }
    }
    return candidates;
  }

  // Reads the tensors' shardings over the mesh permuted to `order`: that order becomes none,
  // none becomes the mesh's own ids.
  void MakeRelative(std::vector<Tensor>& tensors, const std::vector<int64_t>& order) const {
    if (order.empty()) return;
    for (Tensor& tensor : tensors) {
      AxisSharding& sharding = tensor.sharding;
      if (!IsLaidOutByDeviceOrder(sharding, mesh_)) continue;
      if (sharding.device_order == order) {
        sharding.device_order.clear();
      } else if (sharding.device_order.empty()) {
        sharding.device_order = mesh_.device_ids();
      }
    }
  }

  // The cheapest factor assignment of the candidates the op's tensors suggest (each tensor
  // first, the rest by size: larger tensors are costlier to move), with its cost in bytes when
  // run in `layout` (the mesh, or the mesh permuted to the device order the shardings are
  // relative to).
  std::pair<FactorAxes, int64_t> CheapestFactors(const OpRule& rule,
                                                 const std::vector<Tensor>& operands,
                                                 const std::vector<Tensor>& results,
                                                 const Mesh& layout) const {
    std::vector<Tensor> all = results;
    all.insert(all.end(), operands.begin(), operands.end());
    std::vector<size_t> by_size(all.size());
    for (size_t t = 0; t < all.size(); ++t) by_size[t] = t;
    std::stable_sort(by_size.begin(), by_size.end(), [&](size_t a, size_t b) {
      return ByteSize(all[a].global) > ByteSize(all[b].global);
    });
    std::optional<FactorAxes> best;
    int64_t best_cost = 0;
    for (size_t first = 0; first < all.size(); ++first) {
      std::vector<size_t> order = {first};
      for (size_t t : by_size) {
        if (t != first) order.push_back(t);
      }
      std::vector<FactorAxes> candidates = {AssignmentFrom(rule, all, order)};
      if (rule.may_gather_reductions) {
        // Also with the reduction factors whole: gathering the operand's split dim moves fewer
        // bytes than summing a long window.
        FactorAxes whole_reductions = candidates[0];
        for (size_t f = 0; f < rule.factors.size(); ++f) {
          if (rule.factors[f].kind == FactorKind::kReduction) whole_reductions[f].clear();
        }
        candidates.push_back(MakeRepresentable(rule, std::move(whole_reductions), mesh_));
      }
      for (const FactorAxes& factors : candidates) {
        const int64_t cost = Cost(rule, operands, results, factors, layout);
        if (!best.has_value() || cost < best_cost) {
          best = factors;
          best_cost = cost;
        }
      }
    }
    if (!best.has_value()) return {FactorAxes(rule.factors.size()), 0};
    return {*best, best_cost};
  }

  // Counts dims an operand had split that the op forces whole (GSPMD's replication fallback).
  void RecordFallbacks(const Instruction& instruction, const OpRule& rule, size_t operand,
                       const AxisSharding& had, const AxisSharding& wanted) {
    if (had.IsSpecial()) return;
    for (int64_t d = 0; d < had.rank(); ++d) {
      if (had.dims[d].empty() || IsPrefix(had.dims[d], wanted.dims[d])) continue;
      const std::vector<int64_t>& factors = rule.operand_dims[operand][d];
      const FactorKind kind = rule.factors[factors[0]].kind;
      // A reduction factor the op could have kept split (a dynamic-slice at a run-time start)
      // but gathers because that is cheaper counts too.
      const bool forced = factors.size() > 1 || NeedsWhole(kind) ||
                          (rule.may_gather_reductions && kind == FactorKind::kReduction);
      if (!forced) continue;
      result_.fallbacks.push_back(
          {instruction.name(),
           fmt::format("{} needs dim {} of operand {} ({}) unsplit; it was split over {}",
                       ir::OpcodeName(instruction.opcode()), d, operand,
                       LeafShape(rule.operands[operand]).ToString(),
                       mesh_.AxesLabel(had.dims[d]))});
    }
  }

  void RecordLocalOp(const Instruction& instruction, const LocalOp& op) {
    if (instruction.opcode() != Opcode::kDot && instruction.opcode() != Opcode::kReduce) return;
    LocalOpRecord record{instruction.name(), instruction.opcode(), {}, {}, {}};
    for (const PartitionedValue& operand : op.operands) {
      record.global_operand_shapes.push_back(operand.global);
      record.operand_shardings.push_back(operand.sharding);
      record.local_operand_shapes.push_back(operand.local->shape());
    }
    result_.local_ops.push_back(std::move(record));
  }

  const ir::Module& input_;
  const Mesh& mesh_;
  PartitionResult& result_;
  SpmdBuilder* spmd_ = nullptr;
  // The manual axes of the op PartitionWithRule is partitioning (none outside partially manual
  // regions); factor assignments leave them out.
  std::vector<int64_t> manual_axes_;
  absl::flat_hash_map<const ir::Computation*, ir::Computation*> clones_;
  absl::flat_hash_map<const Instruction*, std::vector<PartitionedValue>> values_;
  std::map<std::tuple<const Instruction*, std::vector<int64_t>, std::string, std::string>,
           PartitionedValue>
      reshards_;
};

// `partition` run on `module` with while and conditional lowered; the result keeps the lowered
// module, which its propagation refers to.
absl::StatusOr<PartitionResult> PartitionLowered(
    const ir::Module& module,
    const std::function<absl::StatusOr<PartitionResult>(const ir::Module&)>& partition) {
  VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<ir::Module> lowered, ir::LowerControlFlow(module));
  VKSPMD_ASSIGN_OR_RETURN(PartitionResult result, partition(*lowered));
  result.lowered_input = std::move(lowered);
  return result;
}

}  // namespace

int64_t PartitionResult::BytesPerDevice() const {
  int64_t bytes = 0;
  for (const CollectiveRecord& record : collectives) bytes += record.bytes_per_device;
  return bytes;
}

absl::StatusOr<PartitionResult> Partition(const ir::Module& module, const Mesh& mesh) {
  if (ir::NeedsControlFlowLowering(module)) {
    return PartitionLowered(module,
                            [&](const ir::Module& lowered) { return Partition(lowered, mesh); });
  }
  VKSPMD_RETURN_IF_ERROR(CheckMesh(module, mesh));
  PartitionResult result;
  VKSPMD_ASSIGN_OR_RETURN(result.mesh, MeshForAnnotations(module, mesh));
  VKSPMD_ASSIGN_OR_RETURN(result.propagation, PropagateShardings(module, result.mesh));
  Partitioner partitioner(module, result.mesh, result);
  VKSPMD_RETURN_IF_ERROR(partitioner.Run());
  return result;
}

absl::StatusOr<PartitionResult> Partition(const ir::Module& module,
                                          const std::vector<Mesh>& meshes) {
  if (meshes.empty()) return absl::InvalidArgumentError("no mesh to partition over");
  if (ir::NeedsControlFlowLowering(module)) {
    return PartitionLowered(module,
                            [&](const ir::Module& lowered) { return Partition(lowered, meshes); });
  }
  VKSPMD_ASSIGN_OR_RETURN(auto assigned, AssignMeshes(module, meshes));
  std::set<int64_t> used;
  for (const auto& [instruction, mesh] : assigned) {
    if (mesh >= 0) used.insert(mesh);
  }
  if (used.size() > 1) {
    std::vector<std::string> names;
    for (int64_t mesh : used) names.push_back(meshes[mesh].ToString());
    return absl::UnimplementedError(
        fmt::format("the program's values live on {} meshes ({}); one per-device program runs "
                    "on one mesh",
                    used.size(), absl::StrJoin(names, "; ")));
  }
  return Partition(module, meshes[used.empty() ? 0 : *used.begin()]);
}

}  // namespace vkspmd::spmd
