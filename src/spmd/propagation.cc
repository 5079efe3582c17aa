// Propagation: each op's rule projects its tensors' shardings onto factors, picks one sharding
// per factor by the documented priority, and projects back onto every tensor that can take it.
#include "src/spmd/propagation.h"

#include <algorithm>
#include <tuple>

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

class Propagator {
 public:
  Propagator(const Mesh& mesh, PropagationResult& result) : mesh_(mesh), result_(result) {}

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
      if (result_.annotated.contains(tensor.ref.instruction)) continue;
      AxisSharding& current = Slot(tensor.ref);
      if (current.IsSpecial()) continue;
      const AxisSharding proposed = ProjectToTensor(rule, *tensor.dims, chosen, mesh_);
      const bool was_split = IsSplit(current);
      if (!Grow(current, proposed)) continue;
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

  bool Frozen(const TensorRef& ref) const { return result_.annotated.contains(ref.instruction); }

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
        const Score score{Frozen(tensors[t].ref), agreeing, candidate.size(),
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
  // axis would be used twice.
  bool Grow(AxisSharding& current, const AxisSharding& proposed) const {
    bool changed = false;
    for (int64_t d = 0; d < current.rank(); ++d) {
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

  bool IsSplit(const AxisSharding& sharding) const {
    return !sharding.IsSpecial() && sharding.NumTiles(mesh_) > 1;
  }

  // The device order every split tensor of a rule is laid out in; none (the mesh's) when they
  // differ or none is split.
  std::vector<int64_t> CommonDeviceOrder(const std::vector<RuleTensor>& tensors) {
    std::optional<std::vector<int64_t>> order;
    for (const RuleTensor& tensor : tensors) {
      const AxisSharding& sharding = Current(tensor.ref);
      if (!IsSplit(sharding)) continue;
      if (order.has_value() && *order != sharding.device_order) return {};
      order = sharding.device_order;
    }
    return order.value_or(std::vector<int64_t>{});
  }

  const Mesh& mesh_;
  PropagationResult& result_;
};

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
      bool manual = false;
      std::vector<int64_t> manual_axes;
      const bool leaves_region =
          instruction->opcode() == ir::Opcode::kCustomCall &&
          instruction->attributes().custom_call_target == "SPMDShardToFullShape";
      for (const Instruction* operand : instruction->operands()) {
        if (leaves_region) break;
        for (const AxisSharding& leaf : result.shardings.at(operand)) {
          manual = manual || leaf.manual;
          if (manual_axes.empty()) manual_axes = leaf.manual_axes;
        }
      }
      for (int64_t leaf = 0; leaf < LeafCount(instruction->shape()); ++leaf) {
        const int64_t rank = LeafShape({instruction.get(), leaf}).rank();
        leaves.push_back(manual ? AxisSharding::Manual(rank) : AxisSharding::Replicated(rank));
        if (!manual) leaves.back().manual_axes = manual_axes;
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
  Propagator propagator(mesh, result);
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
