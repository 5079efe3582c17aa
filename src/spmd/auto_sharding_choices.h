// Auto-sharding's choices (GSPMD-NOTES 5.1): one node per array-valued entry instruction with the
// strategies its rule allows (elementwise and layout ops following an operand's choice group),
// and the edges whose resharding the ILP costs.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "src/ir/module.h"
#include "src/spmd/auto_sharding_cost.h"
#include "src/spmd/auto_sharding_strategies.h"
#include "src/spmd/mesh.h"
#include "src/spmd/op_rules.h"
#include "src/spmd/propagation.h"

namespace vkspmd::spmd {

// An instruction with a choice. Elementwise ops follow an operand of their shape (Alpa's
// followers): they have no variables of their own, `choice[p]` is their strategy when the node
// `group` leads with strategy p.
struct ChoiceNode {
  const ir::Instruction* instruction = nullptr;
  OpRule rule;
  std::vector<Strategy> strategies;
  int64_t group = 0;
  std::vector<int64_t> choice;
};

// One operand edge or alias between two nodes: the producer's result is resharded to what the
// consumer needs.
struct ChoiceEdge {
  int64_t producer = 0, consumer = 0;
  int64_t operand = -1;  // rule operand of the consumer; -1: the consumer's own result (alias)
};

// Per instruction, the factor axes of its chosen strategy.
using ChosenFactors = absl::flat_hash_map<const ir::Instruction*, FactorAxes>;

// Restricts the strategies to those splitting mesh axis `axis` freely, the `decided` axes where
// an earlier round put them (`earlier`) and no other axis (Alpa's solve_nd_sharding_iteratively);
// none: every strategy.
struct Round {
  int64_t axis = 0;
  std::vector<bool> decided;
  const ChosenFactors* earlier = nullptr;
};

// The nodes and edges of one ILP. It refers to the module, mesh and model it was built from.
class AutoShardingChoices {
 public:
  // `fixed` pins each instruction's result (CostOfShardings: any strategy giving it);
  // `restrict` (CostInChoiceSpace) restricts the choice groups built as AutoShard builds them;
  // `round` keeps the strategies of one round of a multi-axis mesh.
  static absl::StatusOr<AutoShardingChoices> Build(const ir::Module& module, const Mesh& mesh,
                                                   const CostModel& model, const ShardingMap* fixed,
                                                   const ShardingMap* restrict,
                                                   std::optional<Round> round);

  const ir::Module& module() const { return module_; }
  const std::vector<ChoiceNode>& nodes() const { return nodes_; }
  const std::vector<ChoiceEdge>& edges() const { return edges_; }
  // Node `node`'s strategy when its group takes choice `group_choice`.
  const Strategy& StrategyOf(int64_t node, int64_t group_choice) const {
    return nodes_[node].strategies[nodes_[node].choice[group_choice]];
  }
  // The choices of node `node`'s group.
  int64_t GroupSize(int64_t node) const {
    return static_cast<int64_t>(nodes_[nodes_[node].group].choice.size());
  }
  // The resharding an edge costs at the two ends' group choices.
  double EdgeCost(const ChoiceEdge& edge, int64_t producer_choice, int64_t consumer_choice) const {
    const Strategy& consumer = StrategyOf(edge.consumer, consumer_choice);
    return model_.Reshard(nodes_[edge.producer].instruction->shape(),
                          StrategyOf(edge.producer, producer_choice).result,
                          edge.operand < 0 ? consumer.result : consumer.operands[edge.operand],
                          mesh_);
  }

 private:
  AutoShardingChoices(const ir::Module& module, const Mesh& mesh, const CostModel& model,
                      const ShardingMap* fixed, const ShardingMap* restrict,
                      std::optional<Round> round)
      : module_(module),
        mesh_(mesh),
        model_(model),
        fixed_(fixed),
        restrict_(restrict),
        round_(round) {}

  void FindLateValues();
  absl::Status BuildNodes();
  void RestrictToRound(const ir::Instruction& instruction, std::vector<Strategy>& strategies);
  absl::StatusOr<std::optional<AxisSharding>> PinnedSharding(const ir::Instruction& instruction);
  absl::Status RestrictToShardings();
  void Follow(ChoiceNode& node);
  void BuildEdges();

  const ir::Module& module_;
  const Mesh& mesh_;
  const CostModel& model_;
  const ShardingMap* fixed_;
  const ShardingMap* restrict_;
  std::optional<Round> round_;
  std::vector<ChoiceNode> nodes_;
  absl::flat_hash_map<const ir::Instruction*, int64_t> index_;
  absl::flat_hash_map<const ir::Instruction*, std::vector<const ir::Instruction*>> users_;
  absl::flat_hash_set<const ir::Instruction*> late_;
  std::vector<ChoiceEdge> edges_;
};

}  // namespace vkspmd::spmd
