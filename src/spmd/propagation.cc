// Propagation: each op's rule projects its tensors' shardings onto factors, picks one sharding
// per factor by the documented priority, and projects back onto every tensor that can take it.
#include "src/spmd/propagation.h"

#include <algorithm>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/spmd/factor_sharding.h"
#include "src/spmd/op_rules.h"

namespace vkspmd::spmd {
namespace {

using ir::Instruction;

// A propagation round never needs more sweeps than this on programs of our size; running out
// means the monotonic growth argument is broken, which is a bug worth an error.
constexpr int64_t kMaxIterations = 1000;

struct RuleTensor {
  TensorRef ref;
  const DimFactors* dims;
};

// Annotated instructions whose sharding propagation may still extend on some dims: a Sharding
// custom-call's unspecified_dims (XLA's sharding_op_util attribute, which JAX writes for
// P.UNCONSTRAINED dims and for the automatic axes of shard_map(auto=)).
using OpenDims = absl::flat_hash_map<const Instruction*, std::vector<int64_t>>;

// A Sharding custom-call and the manual-region boundary that is its only user, with the same
// unspecified dims (JAX's shard_map(auto=) writes both at each end of a region): as in XLA, the
// axes propagation adds to those dims on one side it adds on the other, so that each device's
// shard still passes the boundary unchanged. `original` holds both annotations' shardings.
struct BoundaryTie {
  const Instruction* sharding;
  const Instruction* boundary;
  std::vector<int64_t> dims;
  AxisSharding original_sharding, original_boundary;
};

class Propagator {
 public:
  Propagator(const Mesh& mesh, PropagationResult& result, const OpenDims& open,
             const std::vector<BoundaryTie>& ties)
      : mesh_(mesh), result_(result), open_(open) {
    for (const BoundaryTie& tie : ties) {
      tie_of_[tie.sharding] = &tie;
      tie_of_[tie.boundary] = &tie;
    }
  }

 private:
  // The axes each side of a tie gained on dim d beyond its annotation.
  std::vector<int64_t> Gained(const BoundaryTie& tie, bool boundary, int64_t d) {
    const AxisSharding& now = Slot({boundary ? tie.boundary : tie.sharding, 0});
    const AxisSharding& original = boundary ? tie.original_boundary : tie.original_sharding;
    return std::vector<int64_t>(now.dims[d].begin() + original.dims[d].size(), now.dims[d].end());
  }

  // Extends the side of a tie that gained fewer axes on each tied dim by the other's; returns
  // whether both sides then gained the same axes everywhere.
  bool Sync(const BoundaryTie& tie) {
    bool holds = true;
    for (int64_t d : tie.dims) {
      const std::vector<int64_t> on_sharding = Gained(tie, false, d);
      const std::vector<int64_t> on_boundary = Gained(tie, true, d);
      if (on_sharding == on_boundary) continue;
      const bool boundary_behind = on_boundary.size() < on_sharding.size();
      const Instruction* instruction = boundary_behind ? tie.boundary : tie.sharding;
      const AxisSharding& original =
          boundary_behind ? tie.original_boundary : tie.original_sharding;
      AxisSharding& side = Slot({instruction, 0});
      AxisSharding proposed = side;
      proposed.dims[d] = original.dims[d];
      const std::vector<int64_t>& axes = boundary_behind ? on_sharding : on_boundary;
      proposed.dims[d].insert(proposed.dims[d].end(), axes.begin(), axes.end());
      const std::vector<int64_t> open = {d};
      Grow(side, proposed, &open, &LeafShape({instruction, 0}));
      holds = holds && Gained(tie, false, d) == Gained(tie, true, d);
    }
    return holds;
  }

 public:
  // Applies one rule; returns whether any tensor's sharding grew.
  bool Apply(const OpRule& rule) {
    std::vector<RuleTensor> tensors;
    for (size_t i = 0; i < rule.operands.size(); ++i)
      tensors.push_back({rule.operands[i], &rule.operand_dims[i]});
    for (size_t i = 0; i < rule.results.size(); ++i)
      tensors.push_back({rule.results[i], &rule.result_dims[i]});
    std::vector<FactorAxes> projections;
    for (const RuleTensor& tensor : tensors) {
      projections.push_back(ProjectToFactors(rule, *tensor.dims, Current(tensor.ref), mesh_));
    }
    const FactorAxes chosen =
        MakeRepresentable(rule, Choose(rule, tensors, projections, ManualAxes(tensors)), mesh_);
    const std::vector<int64_t> order = CommonDeviceOrder(tensors);
    bool changed = false;
    for (const RuleTensor& tensor : tensors) {
      const std::vector<int64_t>* open = OpenDimsOf(tensor.ref);
      if (result_.annotated.contains(tensor.ref.instruction) && open == nullptr) continue;
      AxisSharding& current = Slot(tensor.ref);
      if (current.IsSpecial()) continue;
      const AxisSharding proposed = ProjectToTensor(rule, *tensor.dims, chosen, mesh_);
      const bool was_split = IsLaidOutByDeviceOrder(current, mesh_);
      const auto tie = tie_of_.find(tensor.ref.instruction);
      if (tie == tie_of_.end()) {
        if (!Grow(current, proposed, open)) continue;
      } else {
        // Both sides of a boundary tie grow together, into even splits, or neither does.
        const AxisSharding sharding = Slot({tie->second->sharding, 0});
        const AxisSharding boundary = Slot({tie->second->boundary, 0});
        if (!Grow(current, proposed, open, &LeafShape(tensor.ref))) continue;
        if (!Sync(*tie->second)) {
          Slot({tie->second->sharding, 0}) = sharding;
          Slot({tie->second->boundary, 0}) = boundary;
          continue;
        }
      }
      changed = true;
      // A value split for the first time takes the device order its neighbours share, so that
      // the op runs in their layout (GSPMD keeps an operand's tile assignment) with no permute.
      if (!was_split) current.device_order = order;
    }
    return changed;
  }

 private:
  AxisSharding& Slot(const TensorRef& ref) { return result_.shardings[ref.instruction][ref.leaf]; }
  const AxisSharding& Current(const TensorRef& ref) { return Slot(ref); }

  // The dims of an annotated tensor that propagation may still extend; null for none.
  const std::vector<int64_t>* OpenDimsOf(const TensorRef& ref) const {
    const auto found = open_.find(ref.instruction);
    return found == open_.end() ? nullptr : &found->second;
  }

  // Whether the tensor's sharding of a factor is the user's to keep: an annotation, unless every
  // dim of the tensor the factor spans is one of its open (unspecified) dims.
  bool Frozen(const RuleTensor& tensor, size_t factor) const {
    if (!result_.annotated.contains(tensor.ref.instruction)) return false;
    const std::vector<int64_t>* open = OpenDimsOf(tensor.ref);
    if (open == nullptr) return true;
    for (size_t d = 0; d < tensor.dims->size(); ++d) {
      const std::vector<int64_t>& factors = (*tensor.dims)[d];
      if (std::find(factors.begin(), factors.end(), static_cast<int64_t>(factor)) !=
              factors.end() &&
          std::find(open->begin(), open->end(), static_cast<int64_t>(d)) == open->end()) {
        return true;
      }
    }
    return false;
  }

  // Per factor, the best candidate by the documented priority; then factors claim mesh axes in
  // the order of their winners' priority, each axis going to one factor only.
  FactorAxes Choose(const OpRule& rule, const std::vector<RuleTensor>& tensors,
                    const std::vector<FactorAxes>& projections,
                    const std::vector<int64_t>& manual_axes) {
    using Score = std::tuple<bool, int64_t, size_t, int64_t, int64_t>;
    std::vector<std::pair<Score, int64_t>> order;
    FactorAxes best(rule.factors.size());
    for (size_t factor = 0; factor < rule.factors.size(); ++factor) {
      if (rule.factors[factor].kind == FactorKind::kNeedReplication) continue;
      std::optional<Score> best_score;
      for (size_t t = 0; t < tensors.size(); ++t) {
        const std::vector<int64_t>& candidate = projections[t][factor];
        if (candidate.empty()) continue;
        // Tensors already split along this candidate (a prefix of it or extending it) would not
        // need resharding: the more, the less communication.
        int64_t agreeing = 0;
        for (size_t other = 0; other < tensors.size(); ++other) {
          const std::vector<int64_t>& axes = projections[other][factor];
          if (axes.empty() || !HasFactor(*tensors[other].dims, factor)) continue;
          agreeing += IsPrefix(axes, candidate) || IsPrefix(candidate, axes);
        }
        const Score score{Frozen(tensors[t], factor), agreeing, candidate.size(),
                          ByteSize(LeafShape(tensors[t].ref)), -static_cast<int64_t>(t)};
        if (!best_score.has_value() || score > *best_score) {
          best_score = score;
          best[factor] = candidate;
        }
      }
      if (best_score.has_value()) order.push_back({*best_score, static_cast<int64_t>(factor)});
    }
    std::sort(order.begin(), order.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    FactorAxes chosen(rule.factors.size());
    std::vector<bool> used(mesh_.axis_count(), false);
    for (int64_t axis : manual_axes) used[axis] = true;  // each manual group's own: never split
    for (const auto& [score, factor] : order) {
      for (int64_t axis : best[factor]) {
        if (used[axis]) break;
        chosen[factor].push_back(axis);
      }
      for (int64_t axis : chosen[factor]) used[axis] = true;
    }
    return chosen;
  }

  // The axes a rule's partially manual tensors are manual over (they agree within a region).
  std::vector<int64_t> ManualAxes(const std::vector<RuleTensor>& tensors) {
    std::vector<int64_t> axes;
    for (const RuleTensor& tensor : tensors) {
      for (int64_t axis : Current(tensor.ref).manual_axes) {
        if (std::find(axes.begin(), axes.end(), axis) == axes.end()) axes.push_back(axis);
      }
    }
    return axes;
  }

  static bool HasFactor(const DimFactors& dims, size_t factor) {
    for (const std::vector<int64_t>& dim : dims) {
      if (std::find(dim.begin(), dim.end(), static_cast<int64_t>(factor)) != dim.end()) return true;
    }
    return false;
  }

  // Extends `current` by `proposed` dim by dim where the old axes are a prefix of the new and no
  // axis would be used twice; only the `open` dims, if given (an annotation's unspecified dims),
  // and only into even splits of `even`'s dims, if given (a boundary tie's sides: with padding,
  // a shard of the per-group value would not be the same elements as the full value's).
  bool Grow(AxisSharding& current, const AxisSharding& proposed,
            const std::vector<int64_t>* open = nullptr, const ir::Shape* even = nullptr) const {
    bool changed = false;
    for (int64_t d = 0; d < current.rank(); ++d) {
      if (open != nullptr && std::find(open->begin(), open->end(), d) == open->end()) continue;
      if (even != nullptr && even->dimension(d) % mesh_.SizeOf(proposed.dims[d]) != 0) continue;
      if (proposed.dims[d].size() <= current.dims[d].size() ||
          !IsPrefix(current.dims[d], proposed.dims[d])) {
        continue;
      }
      std::vector<int64_t> used = current.UsedAxes();
      used.insert(used.end(), current.manual_axes.begin(), current.manual_axes.end());
      bool clash = false;
      for (size_t k = current.dims[d].size(); k < proposed.dims[d].size(); ++k) {
        clash = clash || std::find(used.begin(), used.end(), proposed.dims[d][k]) != used.end();
      }
      if (clash) continue;
      current.dims[d] = proposed.dims[d];
      changed = true;
    }
    return changed;
  }

  // The device order every split tensor of a rule is laid out in; none (the mesh's) when they
  // differ or none is split.
  std::vector<int64_t> CommonDeviceOrder(const std::vector<RuleTensor>& tensors) {
    std::optional<std::vector<int64_t>> order;
    for (const RuleTensor& tensor : tensors) {
      const AxisSharding& sharding = Current(tensor.ref);
      if (!IsLaidOutByDeviceOrder(sharding, mesh_)) continue;
      if (order.has_value() && *order != sharding.device_order) return {};
      order = sharding.device_order;
    }
    return order.value_or(std::vector<int64_t>{});
  }

  const Mesh& mesh_;
  PropagationResult& result_;
  const OpenDims& open_;
  absl::flat_hash_map<const Instruction*, const BoundaryTie*> tie_of_;
};

// The instructions of `entry` that read each value, in program order.
absl::flat_hash_map<const Instruction*, std::vector<const Instruction*>> UsersOf(
    const ir::Computation& entry) {
  absl::flat_hash_map<const Instruction*, std::vector<const Instruction*>> users;
  for (const auto& instruction : entry.instructions()) {
    for (const Instruction* operand : instruction->operands()) {
      users[operand].push_back(instruction.get());
    }
  }
  return users;
}

// The open dims of each Sharding custom-call with unspecified_dims, as XLA's sharding
// propagation treats them: open by themselves, or tied to the manual-region boundary that is
// their only user when it lists the same dims (open too); not open when it lists others.
void FindOpenDims(const ir::Computation& entry, const ShardingMap& shardings, OpenDims& open,
                  std::vector<BoundaryTie>& ties) {
  absl::flat_hash_map<const Instruction*, std::vector<const Instruction*>> users = UsersOf(entry);
  for (const auto& instruction : entry.instructions()) {
    const ir::InstructionAttributes& attributes = instruction->attributes();
    if (attributes.custom_call_target != "Sharding" || attributes.unspecified_dims.empty() ||
        !instruction->sharding().has_value()) {
      continue;
    }
    const std::vector<const Instruction*>& readers = users[instruction.get()];
    const Instruction* boundary = readers.size() == 1 ? readers[0] : nullptr;
    const bool is_boundary = boundary != nullptr && boundary->opcode() == ir::Opcode::kCustomCall &&
                             (boundary->attributes().custom_call_target == "SPMDFullToShardShape" ||
                              boundary->attributes().custom_call_target == "SPMDShardToFullShape");
    if (!is_boundary) {
      open[instruction.get()] = attributes.unspecified_dims;
      continue;
    }
    const AxisSharding& sharding = shardings.at(instruction.get())[0];
    const AxisSharding& other = shardings.at(boundary)[0];
    if (boundary->attributes().unspecified_dims != attributes.unspecified_dims ||
        !boundary->sharding().has_value() || sharding.IsSpecial() || other.IsSpecial()) {
      continue;
    }
    open[instruction.get()] = attributes.unspecified_dims;
    open[boundary] = attributes.unspecified_dims;
    ties.push_back({instruction.get(), boundary, attributes.unspecified_dims, sharding, other});
  }
}

// partition-id and replica-id have no rule: outside manual regions their meaning is ambiguous
// (XLA refuses them too). Inside a partially manual region (annotated so, or flowing into a
// partially manual value other than through the region's SPMDFullToShardShape) each device
// keeps its own id, as in manual regions. Returns the error for the first that is in neither.
absl::Status CheckDeviceIds(const ir::Computation& entry, const ShardingMap& shardings,
                            const std::vector<const Instruction*>& ids) {
  if (ids.empty()) return absl::OkStatus();
  absl::flat_hash_map<const Instruction*, std::vector<const Instruction*>> users = UsersOf(entry);
  absl::flat_hash_set<const Instruction*> reaches;  // flows into a partially manual value
  const auto& instructions = entry.instructions();
  for (auto it = instructions.rbegin(); it != instructions.rend(); ++it) {
    const Instruction* instruction = it->get();
    bool inside = std::any_of(shardings.at(instruction).begin(), shardings.at(instruction).end(),
                              [](const AxisSharding& leaf) { return leaf.IsPartiallyManual(); });
    for (const Instruction* user : users[instruction]) {
      // A region's entry is the boundary: what feeds SPMDFullToShardShape is outside it (a
      // partition-id there would be read once per device before the region splits the value).
      const bool enters = user->opcode() == ir::Opcode::kCustomCall &&
                          user->attributes().custom_call_target == "SPMDFullToShardShape";
      inside = inside || (reaches.contains(user) && !enters);
    }
    if (inside) reaches.insert(instruction);
  }
  for (const Instruction* id : ids) {
    if (reaches.contains(id)) continue;
    return absl::UnimplementedError(fmt::format(
        "{}: the partitioner does not support {} outside manual regions (which device's id the "
        "program means is ambiguous once it is partitioned; inside a region each device keeps "
        "its own) (sharding {})",
        id->Describe(), ir::OpcodeName(id->opcode()),
        id->sharding().has_value() ? id->sharding()->ToString() : "none given"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<AxisSharding>> LeafShardings(
    const Instruction& instruction, const Mesh& mesh,
    const std::vector<std::vector<int64_t>>& preferred_orders) {
  const ir::Shape& shape = instruction.shape();
  const int64_t leaves = LeafCount(shape);
  std::vector<AxisSharding> shardings;
  const ir::Sharding& sharding = *instruction.sharding();
  if (sharding.kind() == ir::Sharding::Kind::kTuple &&
      static_cast<int64_t>(sharding.tuple_elements().size()) != leaves) {
    return absl::InvalidArgumentError(fmt::format("{}: tuple sharding {} does not fit {}",
                                                  instruction.Describe(), sharding.ToString(),
                                                  shape.ToString()));
  }
  for (int64_t leaf = 0; leaf < leaves; ++leaf) {
    const ir::Sharding& element =
        sharding.kind() == ir::Sharding::Kind::kTuple ? sharding.tuple_elements()[leaf] : sharding;
    absl::StatusOr<AxisSharding> converted =
        FromHloSharding(element, mesh, LeafShape({&instruction, leaf}).rank(), preferred_orders);
    if (!converted.ok()) {
      return absl::Status(
          converted.status().code(),
          fmt::format("{} ({}): {}", instruction.Describe(), ir::OpcodeName(instruction.opcode()),
                      std::string(converted.status().message())));
    }
    shardings.push_back(*converted);
  }
  return shardings;
}

absl::StatusOr<PropagationResult> PropagateShardings(const ir::Module& module, const Mesh& mesh) {
  PropagationResult result;
  const ir::Computation& entry = *module.entry();
  std::vector<OpRule> rules;
  std::vector<std::vector<int64_t>> orders;  // device orders of the annotations so far
  std::vector<const Instruction*> device_ids;
  for (const auto& instruction : entry.instructions()) {
    std::vector<AxisSharding>& leaves = result.shardings[instruction.get()];
    if (instruction->sharding().has_value()) {
      VKSPMD_ASSIGN_OR_RETURN(leaves, LeafShardings(*instruction, mesh, orders));
      for (const AxisSharding& leaf : leaves) {
        if (!leaf.device_order.empty() &&
            std::find(orders.begin(), orders.end(), leaf.device_order) == orders.end()) {
          orders.push_back(leaf.device_order);
        }
      }
      result.annotated.insert(instruction.get());
    } else {
      // Inside a manual region (an operand is manual) every value is manual, as XLA requires;
      // inside a partially manual one, manual over the same axes (the rest propagates).
      // Their manual groups come along: the device order that lays them out.
      bool manual = false;
      std::vector<int64_t> manual_axes, manual_order;
      const bool leaves_region =
          instruction->opcode() == ir::Opcode::kCustomCall &&
          instruction->attributes().custom_call_target == "SPMDShardToFullShape";
      for (const Instruction* operand : instruction->operands()) {
        if (leaves_region) break;
        for (const AxisSharding& leaf : result.shardings.at(operand)) {
          manual = manual || leaf.manual;
          if (manual_axes.empty()) {
            manual_axes = leaf.manual_axes;
            manual_order = leaf.device_order;
          }
        }
      }
      for (int64_t leaf = 0; leaf < LeafCount(instruction->shape()); ++leaf) {
        const int64_t rank = LeafShape({instruction.get(), leaf}).rank();
        leaves.push_back(manual ? AxisSharding::Manual(rank) : AxisSharding::Replicated(rank));
        if (!manual && !manual_axes.empty()) {
          leaves.back().manual_axes = manual_axes;
          leaves.back().device_order = manual_order;
        }
      }
    }
    // The user's own per-device code (collectives and partition-id included) has no rules.
    if (std::all_of(leaves.begin(), leaves.end(),
                    [](const AxisSharding& leaf) { return leaf.manual; })) {
      continue;
    }
    if (ir::IsCollective(instruction->opcode()) &&
        std::any_of(leaves.begin(), leaves.end(),
                    [](const AxisSharding& leaf) { return leaf.IsPartiallyManual(); })) {
      VKSPMD_ASSIGN_OR_RETURN(OpRule rule, PartiallyManualCollectiveRule(*instruction));
      rules.push_back(std::move(rule));
      continue;
    }
    if (instruction->opcode() == ir::Opcode::kPartitionId ||
        instruction->opcode() == ir::Opcode::kReplicaId) {
      device_ids.push_back(instruction.get());
      continue;
    }
    absl::StatusOr<std::vector<OpRule>> instruction_rules = RulesFor(*instruction);
    if (!instruction_rules.ok()) {
      // Name the sharding too: the op is refused whatever it is, and the user should see both.
      return absl::Status(
          instruction_rules.status().code(),
          fmt::format("{} (sharding {})", std::string(instruction_rules.status().message()),
                      instruction->sharding().has_value() ? instruction->sharding()->ToString()
                                                          : "none given"));
    }
    for (OpRule& rule : *instruction_rules) rules.push_back(std::move(rule));
  }
  VKSPMD_RETURN_IF_ERROR(CheckDeviceIds(entry, result.shardings, device_ids));
  OpenDims open;
  std::vector<BoundaryTie> ties;
  FindOpenDims(entry, result.shardings, open, ties);
  Propagator propagator(mesh, result, open, ties);
  bool changed = true;
  while (changed) {
    if (++result.iterations > kMaxIterations) {
      return absl::InternalError("sharding propagation did not reach a fixed point");
    }
    changed = false;
    for (const OpRule& rule : rules) changed = propagator.Apply(rule) || changed;
    for (auto rule = rules.rbegin(); rule != rules.rend(); ++rule) {
      changed = propagator.Apply(*rule) || changed;
    }
  }
  return result;
}

void AnnotateModule(ir::Module& module, const ShardingMap& shardings, const Mesh& mesh) {
  for (const auto& instruction : module.entry()->instructions()) {
    const auto found = shardings.find(instruction.get());
    if (found == shardings.end()) continue;
    if (!instruction->shape().IsTuple()) {
      instruction->set_sharding(ToHloSharding(found->second[0], mesh));
      continue;
    }
    std::vector<ir::Sharding> elements;
    for (const AxisSharding& leaf : found->second) elements.push_back(ToHloSharding(leaf, mesh));
    instruction->set_sharding(ir::Sharding::Tuple(std::move(elements)));
  }
}

}  // namespace vkspmd::spmd
