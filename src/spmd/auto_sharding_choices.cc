// Building auto-sharding's choice nodes and edges (GSPMD-NOTES 5.1) over the entry computation.
#include "src/spmd/auto_sharding_choices.h"

#include <algorithm>
#include <map>
#include <utility>

#include "fmt/format.h"
#include "src/base/status_macros.h"

namespace vkspmd::spmd {
namespace {

bool IsElementwiseRule(const OpRule& rule) {
  if (rule.result_dims.size() != 1) return false;
  for (const DimFactors& dims : rule.operand_dims) {
    if (dims != rule.result_dims[0]) return false;
  }
  return std::all_of(rule.factors.begin(), rule.factors.end(),
                     [](const Factor& f) { return f.kind == FactorKind::kPassThrough; });
}

// The factor a mesh axis splits in an assignment (-1: none).
int64_t FactorOf(const FactorAxes& factors, int64_t axis) {
  for (size_t f = 0; f < factors.size(); ++f) {
    if (std::find(factors[f].begin(), factors[f].end(), axis) != factors[f].end()) {
      return static_cast<int64_t>(f);
    }
  }
  return -1;
}

}  // namespace

absl::StatusOr<AutoShardingChoices> AutoShardingChoices::Build(
    const ir::Module& module, const Mesh& mesh, const CostModel& model, const ShardingMap* fixed,
    const ShardingMap* restrict, std::optional<Round> round) {
  AutoShardingChoices choices(module, mesh, model, fixed, restrict, round);
  VKSPMD_RETURN_IF_ERROR(choices.BuildNodes());
  if (restrict != nullptr) VKSPMD_RETURN_IF_ERROR(choices.RestrictToShardings());
  choices.BuildEdges();
  return choices;
}

// The instructions whose values reach the root through fused ops alone (EnumerateStrategies'
// `late`): every user fuses and is late itself, the root is. Entry order is a topological
// order, so one backward sweep.
void AutoShardingChoices::FindLateValues() {
  const ir::Instruction* root = module_.entry()->root();
  const auto& instructions = module_.entry()->instructions();
  for (auto it = instructions.rbegin(); it != instructions.rend(); ++it) {
    const ir::Instruction* instruction = it->get();
    auto users = users_.find(instruction);
    bool late = instruction == root;
    if (!late && users != users_.end()) {
      late = std::all_of(users->second.begin(), users->second.end(), [&](const auto* user) {
        return (user == root || Fuses(*user)) && late_.contains(user);
      });
    }
    if (late) late_.insert(instruction);
  }
}

absl::Status AutoShardingChoices::BuildNodes() {
  for (const auto& owned : module_.entry()->instructions()) {
    for (const ir::Instruction* operand : owned->operands()) {
      users_[operand].push_back(owned.get());
    }
  }
  FindLateValues();
  for (const auto& owned : module_.entry()->instructions()) {
    const ir::Instruction* instruction = owned.get();
    VKSPMD_ASSIGN_OR_RETURN(std::vector<OpRule> rules, RulesFor(*instruction));
    if (rules.size() != 1 || rules[0].results.size() != 1 || instruction->shape().IsTuple()) {
      continue;  // tuples and manual-region boundaries: propagation and the partitioner decide
    }
    ChoiceNode node;
    node.instruction = instruction;
    node.rule = std::move(rules[0]);
    const bool late = late_.contains(instruction);
    node.strategies = EnumerateStrategies(*instruction, node.rule, mesh_, model_, late);
    if (round_.has_value()) RestrictToRound(*instruction, node.strategies);
    VKSPMD_ASSIGN_OR_RETURN(std::optional<AxisSharding> pinned, PinnedSharding(*instruction));
    if (pinned.has_value()) {
      std::vector<Strategy> matching;
      for (Strategy& strategy : node.strategies) {
        if (strategy.result == *pinned) matching.push_back(std::move(strategy));
      }
      if (matching.empty()) {
        matching.push_back(
            StrategyFor(*instruction, node.rule, node.strategies, *pinned, mesh_, model_, late));
      }
      node.strategies = std::move(matching);
    }
    const int64_t index = static_cast<int64_t>(nodes_.size());
    index_[instruction] = index;
    node.group = index;
    for (size_t s = 0; s < node.strategies.size(); ++s) node.choice.push_back(s);
    if (!pinned.has_value()) Follow(node);
    nodes_.push_back(std::move(node));
  }
  return absl::OkStatus();
}

void AutoShardingChoices::RestrictToRound(const ir::Instruction& instruction,
                                          std::vector<Strategy>& strategies) {
  const FactorAxes* earlier = nullptr;
  if (round_->earlier != nullptr) {
    auto found = round_->earlier->find(&instruction);
    if (found != round_->earlier->end()) earlier = &found->second;
  }
  std::vector<Strategy> allowed;
  for (Strategy& strategy : strategies) {
    bool fits = true;
    for (int64_t axis = 0; axis < mesh_.axis_count() && fits; ++axis) {
      if (axis == round_->axis) continue;
      const int64_t factor = FactorOf(strategy.factors, axis);
      const bool decided = round_->decided[axis] && earlier != nullptr;
      fits = factor == (decided ? FactorOf(*earlier, axis) : -1);
    }
    if (fits) allowed.push_back(std::move(strategy));
  }
  strategies = std::move(allowed);
}

absl::StatusOr<std::optional<AxisSharding>> AutoShardingChoices::PinnedSharding(
    const ir::Instruction& instruction) {
  if (restrict_ != nullptr) return std::optional<AxisSharding>();  // the module as AutoShard's
  if (fixed_ != nullptr) {
    auto found = fixed_->find(&instruction);
    if (found != fixed_->end()) return found->second.at(0);
  }
  if (!instruction.sharding().has_value()) return std::optional<AxisSharding>();
  VKSPMD_ASSIGN_OR_RETURN(std::vector<AxisSharding> leaves, LeafShardings(instruction, mesh_));
  return std::optional<AxisSharding>(leaves.at(0));
}

// Keeps, in each choice group, the choices that give every member its sharding in `restrict_`
// (members without one are free); a group left with none means the shardings are not a point
// of the ILP.
absl::Status AutoShardingChoices::RestrictToShardings() {
  std::map<int64_t, std::vector<int64_t>> allowed;
  for (size_t j = 0; j < nodes_.size(); ++j) {
    const ChoiceNode& node = nodes_[j];
    auto found = restrict_->find(node.instruction);
    if (found == restrict_->end()) continue;
    auto [group, inserted] = allowed.try_emplace(node.group);
    if (inserted) {
      for (int64_t p = 0; p < GroupSize(j); ++p) group->second.push_back(p);
    }
    std::vector<int64_t> kept;
    for (int64_t p : group->second) {
      if (StrategyOf(j, p).result == found->second.at(0)) kept.push_back(p);
    }
    if (kept.empty()) {
      return absl::NotFoundError(fmt::format(
          "%{} {}: no choice of the auto-sharding ILP gives it (in the choice group of %{})",
          node.instruction->name(), found->second.at(0).ToString(mesh_),
          nodes_[node.group].instruction->name()));
    }
    group->second = std::move(kept);
  }
  for (ChoiceNode& node : nodes_) {
    auto found = allowed.find(node.group);
    if (found == allowed.end()) continue;
    std::vector<int64_t> choice;
    for (int64_t p : found->second) choice.push_back(node.choice[p]);
    node.choice = std::move(choice);
  }
  return absl::OkStatus();
}

// Elementwise and layout ops (reshape, transpose) join the group of an operand
// (Alpa's followers): for each choice of that group the op takes its cheapest strategy that
// needs the operand exactly as produced. This drops their resharding alternatives (an op
// never reshards its operand on its own) to keep the ILP small.
void AutoShardingChoices::Follow(ChoiceNode& node) {
  const ir::Opcode opcode = node.instruction->opcode();
  // A broadcast stays free: splitting the dims it adds costs nothing.
  const bool layout = opcode == ir::Opcode::kReshape || opcode == ir::Opcode::kTranspose;
  if (node.strategies.size() < 2 || !(layout || IsElementwiseRule(node.rule))) return;
  // A sharding constraint (custom-call Sharding without its sharding=, as CostInChoiceSpace
  // reads a hand-annotated step) is where the user reshards: its own choice, a group.
  if (opcode == ir::Opcode::kCustomCall) return;
  for (size_t m = 0; m < node.rule.operands.size(); ++m) {
    const TensorRef& operand = node.rule.operands[m];
    auto found = index_.find(operand.instruction);
    if (found == index_.end() || operand.leaf != 0) continue;
    const int64_t producer = found->second;
    if (GroupSize(producer) < 2) continue;
    std::vector<int64_t> choice;
    for (int64_t p = 0; p < GroupSize(producer); ++p) {
      const AxisSharding& result = StrategyOf(producer, p).result;
      int64_t match = -1;
      for (size_t s = 0; s < node.strategies.size(); ++s) {
        const Strategy& strategy = node.strategies[s];
        if (strategy.operands[m] != result) continue;
        if (match < 0 ||
            strategy.compute + strategy.communication <
                node.strategies[match].compute + node.strategies[match].communication) {
          match = static_cast<int64_t>(s);
        }
      }
      if (match < 0) break;
      choice.push_back(match);
    }
    if (static_cast<int64_t>(choice.size()) != GroupSize(producer)) continue;
    node.group = nodes_[producer].group;
    node.choice = std::move(choice);
    return;
  }
}

void AutoShardingChoices::BuildEdges() {
  for (size_t j = 0; j < nodes_.size(); ++j) {
    const ChoiceNode& node = nodes_[j];
    for (size_t m = 0; m < node.rule.operands.size(); ++m) {
      const TensorRef& operand = node.rule.operands[m];
      auto found = index_.find(operand.instruction);
      if (found == index_.end() || operand.leaf != 0) continue;
      edges_.push_back(ChoiceEdge{found->second, static_cast<int64_t>(j), static_cast<int64_t>(m)});
    }
  }
  // An output aliasing a parameter (the updated weights of a training step) should leave in the
  // parameter's sharding, or the next step starts by resharding it.
  const ir::Instruction* root = module_.entry()->root();
  for (const ir::InputOutputAlias& alias : module_.input_output_aliases()) {
    const ir::Instruction* output = root;
    if (root->opcode() == ir::Opcode::kTuple) {
      if (alias.output_index.size() != 1) continue;
      output = root->operands().at(alias.output_index[0]);
    }
    const auto& parameters = module_.entry()->parameters();
    if (alias.parameter_number >= static_cast<int64_t>(parameters.size())) continue;
    auto from = index_.find(output);
    auto to = index_.find(parameters[alias.parameter_number]);
    if (from == index_.end() || to == index_.end()) continue;
    edges_.push_back(ChoiceEdge{from->second, to->second, -1});
  }
}

}  // namespace vkspmd::spmd
