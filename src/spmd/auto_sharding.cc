// Building auto-sharding's ILP (GSPMD-NOTES 5.1) over the entry computation, solving it with GLPK
// and reading the plan back.
#include "src/spmd/auto_sharding.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/spmd/auto_sharding_graph.h"
#include "src/spmd/auto_sharding_strategies.h"
#include "src/spmd/ilp_solver.h"
#include "src/spmd/op_rules.h"

namespace vkspmd::spmd {
namespace {

// The most ILP variables of one window (GLPK's dual simplex solves about this many in well under
// a second here); a program needing more is solved window by window.
constexpr int64_t kWindowVariables = 8000;

// The ILP's objective is in microseconds: in seconds, differences of a few nanoseconds (a slice,
// a scalar's resharding) are below GLPK's absolute tolerances, and its plan may then cost a
// hair more than one it could have chosen.
constexpr double kObjectiveScale = 1e6;

// How many of the program's fullest points (by replicated bytes) carry a memory row.
constexpr size_t kMemoryCheckpoints = 8;

// Passes of coordinate descent over a multi-axis mesh's axes after the first (each stops early
// when a round no longer lowers the cost).
constexpr size_t kMaxDescentPasses = 3;

// An instruction with a choice. Elementwise ops follow an operand of their shape (Alpa's
// followers): they have no variables of their own, `choice[p]` is their strategy when the node
// `group` leads with strategy p.
struct Node {
  const ir::Instruction* instruction = nullptr;
  OpRule rule;
  std::vector<Strategy> strategies;
  int64_t group = 0;
  std::vector<int64_t> choice;
};

// One operand edge or alias between two nodes: the producer's result is resharded to what the
// consumer needs.
struct Edge {
  int64_t producer = 0, consumer = 0;
  int64_t operand = -1;  // rule operand of the consumer; -1: the consumer's own result (alias)
};

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

class Builder {
 public:
  // `fixed` pins each instruction's result (CostOfShardings: any strategy giving it) or, with
  // `restrict` (CostInChoiceSpace), restricts the choice groups built as AutoShard builds them.
  Builder(const ir::Module& module, const Mesh& mesh, const CostModel& model,
          const AutoShardingOptions& options, const ShardingMap* fixed,
          std::optional<Round> round = std::nullopt, bool restrict = false)
      : module_(module),
        mesh_(mesh),
        model_(model),
        options_(options),
        fixed_(restrict ? nullptr : fixed),
        restrict_(restrict ? fixed : nullptr),
        round_(round) {}

  absl::StatusOr<AutoShardingPlan> Run() {
    VKSPMD_RETURN_IF_ERROR(BuildNodes());
    if (restrict_ != nullptr) VKSPMD_RETURN_IF_ERROR(RestrictToShardings());
    BuildEdges();
    VKSPMD_ASSIGN_OR_RETURN(std::vector<int64_t> chosen, Solve());
    for (size_t j = 0; j < nodes_.size(); ++j) {
      chosen_factors_[nodes_[j].instruction] = StrategyOf(j, chosen[nodes_[j].group]).factors;
    }
    return Plan(chosen);
  }
  const ChosenFactors& chosen_factors() const { return chosen_factors_; }

 private:
  const Strategy& StrategyOf(int64_t node, int64_t group_choice) const {
    return nodes_[node].strategies[nodes_[node].choice[group_choice]];
  }
  int64_t GroupSize(int64_t node) const {
    return static_cast<int64_t>(nodes_[nodes_[node].group].choice.size());
  }

  // The instructions whose values reach the root through fused ops alone (EnumerateStrategies'
  // `late`): every user fuses and is late itself, the root is. Entry order is a topological
  // order, so one backward sweep.
  void FindLateValues() {
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

  absl::Status BuildNodes() {
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
      Node node;
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

  void RestrictToRound(const ir::Instruction& instruction, std::vector<Strategy>& strategies) {
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

  absl::StatusOr<std::optional<AxisSharding>> PinnedSharding(const ir::Instruction& instruction) {
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
  absl::Status RestrictToShardings() {
    std::map<int64_t, std::vector<int64_t>> allowed;
    for (size_t j = 0; j < nodes_.size(); ++j) {
      const Node& node = nodes_[j];
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
    for (Node& node : nodes_) {
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
  void Follow(Node& node) {
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

  void BuildEdges() {
    for (size_t j = 0; j < nodes_.size(); ++j) {
      const Node& node = nodes_[j];
      for (size_t m = 0; m < node.rule.operands.size(); ++m) {
        const TensorRef& operand = node.rule.operands[m];
        auto found = index_.find(operand.instruction);
        if (found == index_.end() || operand.leaf != 0) continue;
        edges_.push_back(Edge{found->second, static_cast<int64_t>(j), static_cast<int64_t>(m)});
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
      edges_.push_back(Edge{from->second, to->second, -1});
    }
  }

  double EdgeCost(const Edge& edge, int64_t producer_choice, int64_t consumer_choice) const {
    const Strategy& consumer = StrategyOf(edge.consumer, consumer_choice);
    return model_.Reshard(nodes_[edge.producer].instruction->shape(),
                          StrategyOf(edge.producer, producer_choice).result,
                          edge.operand < 0 ? consumer.result : consumer.operands[edge.operand],
                          mesh_);
  }

  absl::StatusOr<std::vector<int64_t>> Solve() {
    ChoiceGraph graph;
    for (size_t j = 0; j < nodes_.size(); ++j) {
      std::vector<double> costs(GroupSize(j));
      for (int64_t p = 0; p < GroupSize(j); ++p) {
        const Strategy& strategy = StrategyOf(j, p);
        costs[p] = strategy.compute + strategy.communication;
      }
      graph.AddLinear(nodes_[j].group, costs);
    }
    for (const Edge& edge : edges_) {
      const int64_t from = nodes_[edge.producer].group, to = nodes_[edge.consumer].group;
      const int64_t rows = GroupSize(edge.producer), columns = GroupSize(edge.consumer);
      if (from == to) {
        std::vector<double> diagonal(rows);
        for (int64_t p = 0; p < rows; ++p) diagonal[p] = EdgeCost(edge, p, p);
        graph.AddLinear(from, diagonal);
        continue;
      }
      if (rows == 1 || columns == 1) {  // one side has no choice: a cost of the other's choices
        std::vector<double> costs(rows == 1 ? columns : rows);
        for (int64_t p = 0; p < rows; ++p) {
          for (int64_t q = 0; q < columns; ++q) costs[rows == 1 ? q : p] += EdgeCost(edge, p, q);
        }
        graph.AddLinear(rows == 1 ? to : from, costs);
        continue;
      }
      ChoiceGraph::Matrix matrix(rows, std::vector<double>(columns));
      for (int64_t p = 0; p < rows; ++p) {
        for (int64_t q = 0; q < columns; ++q) matrix[p][q] = EdgeCost(edge, p, q);
      }
      graph.AddEdge(from, to, matrix);
    }
    // Memory rows need every group's variables; without a limit the graph is reduced exactly.
    std::set<int64_t> keep;
    if (options_.memory_limit_bytes.has_value()) {
      for (const auto& [group, costs] : graph.linear()) keep.insert(group);
    }
    graph.Eliminate(keep);

    // Windows of groups in program order, each small enough for GLPK within the time limit; one
    // window (the exact ILP) whenever the whole program fits, and always under a memory limit.
    std::vector<std::vector<int64_t>> windows(1);
    int64_t size = 0;
    std::set<int64_t> current;
    for (const auto& [group, costs] : graph.linear()) {
      int64_t added = static_cast<int64_t>(costs.size());
      for (int64_t other : current) {
        if (graph.edges().contains({other, group})) {
          added += static_cast<int64_t>(costs.size() * graph.linear().at(other).size());
        }
      }
      if (!keep.empty() || size + added <= kWindowVariables || windows.back().empty()) {
        size += added;
      } else {
        windows.emplace_back();
        current.clear();
        size = static_cast<int64_t>(costs.size());
      }
      windows.back().push_back(group);
      current.insert(group);
    }
    std::map<int64_t, int64_t> choices;
    const auto start = std::chrono::steady_clock::now();
    optimal_ = windows.size() == 1;
    windows_ = static_cast<int64_t>(windows.size());
    for (const std::vector<int64_t>& window : windows) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      VKSPMD_RETURN_IF_ERROR(
          SolveWindow(graph, window, choices, options_.time_limit_seconds - elapsed));
    }
    graph.BackSubstitute(choices);
    std::vector<int64_t> chosen(nodes_.size(), 0);
    for (size_t j = 0; j < nodes_.size(); ++j) {
      if (nodes_[j].group == static_cast<int64_t>(j)) chosen[j] = choices.at(j);
    }
    return chosen;
  }

  // The ILP over `window`'s groups: edges to groups already chosen are linear costs at their
  // choice, edges to groups of later windows the cheapest they could be (a one-step lookahead).
  absl::Status SolveWindow(const ChoiceGraph& graph, const std::vector<int64_t>& window,
                           std::map<int64_t, int64_t>& choices, double time_limit) {
    const std::set<int64_t> inside(window.begin(), window.end());
    std::map<int64_t, std::vector<double>> costs;
    for (int64_t group : window) costs[group] = graph.linear().at(group);
    std::vector<std::pair<int64_t, int64_t>> internal;
    for (const auto& [groups, matrix] : graph.edges()) {
      const auto [first, second] = groups;
      const bool has_first = inside.contains(first), has_second = inside.contains(second);
      if (has_first && has_second) {
        internal.push_back(groups);
        continue;
      }
      if (has_first == has_second) continue;
      const int64_t own = has_first ? first : second, other = has_first ? second : first;
      auto fixed = choices.find(other);
      std::vector<double>& own_costs = costs[own];
      for (size_t a = 0; a < own_costs.size(); ++a) {
        double cost = std::numeric_limits<double>::infinity();
        for (size_t b = 0; b < graph.linear().at(other).size(); ++b) {
          if (fixed != choices.end() && static_cast<int64_t>(b) != fixed->second) continue;
          cost = std::min(cost, has_first ? matrix[a][b] : matrix[b][a]);
        }
        own_costs[a] += cost;
      }
    }
    IlpProblem problem;
    std::map<int64_t, int64_t> first_variable;
    for (const auto& [group, group_costs] : costs) {
      std::vector<IlpProblem::Term> one;
      first_variable[group] = problem.variable_count();
      for (double cost : group_costs) {
        one.push_back({problem.AddVariable(cost * kObjectiveScale, /*binary=*/true), 1.0});
      }
      problem.AddRow(std::move(one), 1, 1);
      ++choice_groups_;
    }
    for (const std::pair<int64_t, int64_t>& groups : internal) {
      // e(p,q) = s_first(p)·s_second(q), linearised with the transportation rows (a tight
      // relaxation: GSPMD-NOTES 5.4).
      const ChoiceGraph::Matrix& matrix = graph.edges().at(groups);
      const int64_t from = first_variable.at(groups.first), to = first_variable.at(groups.second);
      const size_t rows = matrix.size(), columns = matrix[0].size();
      std::vector<std::vector<IlpProblem::Term>> row_terms(rows), column_terms(columns);
      for (size_t p = 0; p < rows; ++p) {
        for (size_t q = 0; q < columns; ++q) {
          const int64_t e = problem.AddVariable(matrix[p][q] * kObjectiveScale, /*binary=*/false);
          row_terms[p].push_back({e, 1.0});
          column_terms[q].push_back({e, 1.0});
        }
      }
      for (size_t p = 0; p < rows; ++p) {
        row_terms[p].push_back({from + static_cast<int64_t>(p), -1.0});
        problem.AddRow(std::move(row_terms[p]), 0, 0);
      }
      for (size_t q = 0; q < columns; ++q) {
        column_terms[q].push_back({to + static_cast<int64_t>(q), -1.0});
        problem.AddRow(std::move(column_terms[q]), 0, 0);
      }
    }
    VKSPMD_RETURN_IF_ERROR(AddMemoryRows(problem, first_variable));
    variables_ = std::max(variables_, problem.variable_count());
    rows_ = std::max(rows_, problem.row_count());
    VKSPMD_ASSIGN_OR_RETURN(IlpProblem::Solution solution, problem.Solve(time_limit));
    solve_seconds_ += solution.seconds;
    optimal_ = optimal_ && solution.optimal;
    for (const auto& [group, first] : first_variable) {
      int64_t best = 0;
      for (size_t p = 1; p < costs.at(group).size(); ++p) {
        if (solution.values[first + p] > solution.values[first + best]) best = p;
      }
      choices[group] = best;
    }
    return absl::OkStatus();
  }

  // Per entry instruction in order: the position after which its value is dead (parameters and
  // the root's operands live to the end: they are the step's state).
  std::vector<int64_t> LastUses(absl::flat_hash_map<const ir::Instruction*, int64_t>& position) {
    const auto& instructions = module_.entry()->instructions();
    const int64_t end = static_cast<int64_t>(instructions.size());
    for (int64_t t = 0; t < end; ++t) position[instructions[t].get()] = t;
    std::vector<int64_t> last(end);
    for (int64_t t = 0; t < end; ++t) {
      const ir::Instruction* instruction = instructions[t].get();
      last[t] = instruction->opcode() == ir::Opcode::kParameter ? end : t;
      for (const ir::Instruction* operand : instruction->operands()) {
        auto found = position.find(operand);
        if (found != position.end()) last[found->second] = std::max(last[found->second], t);
      }
    }
    const ir::Instruction* root = module_.entry()->root();
    last[position[root]] = end;
    for (const ir::Instruction* operand : root->operands()) last[position[operand]] = end;
    return last;
  }

  // Σ over the values live at each of the fullest points of their per-device bytes <= limit.
  absl::Status AddMemoryRows(IlpProblem& problem, const std::map<int64_t, int64_t>& variables) {
    if (!options_.memory_limit_bytes.has_value()) return absl::OkStatus();
    absl::flat_hash_map<const ir::Instruction*, int64_t> position;
    const std::vector<int64_t> last = LastUses(position);
    const int64_t end = static_cast<int64_t>(last.size());
    std::vector<double> replicated(end + 1);
    for (const Node& node : nodes_) {
      const int64_t t = position[node.instruction];
      replicated[t] += static_cast<double>(ByteSize(node.instruction->shape()));
      if (last[t] < end) replicated[last[t] + 1] -= ByteSize(node.instruction->shape());
    }
    std::vector<std::pair<double, int64_t>> points;
    double live = 0;
    for (int64_t t = 0; t < end; ++t) {
      live += replicated[t];
      points.push_back({live, t});
    }
    std::sort(points.rbegin(), points.rend());
    points.resize(std::min(points.size(), kMemoryCheckpoints));
    for (const auto& [bytes, t] : points) {
      std::map<int64_t, double> coefficients;
      double constant = 0;
      for (size_t j = 0; j < nodes_.size(); ++j) {
        const int64_t defined = position[nodes_[j].instruction];
        if (defined > t || last[defined] < t) continue;
        auto found = variables.find(nodes_[j].group);
        if (found == variables.end()) {
          constant += static_cast<double>(StrategyOf(j, 0).memory);
          continue;
        }
        for (int64_t p = 0; p < GroupSize(j); ++p) {
          coefficients[found->second + p] += static_cast<double>(StrategyOf(j, p).memory);
        }
      }
      std::vector<IlpProblem::Term> terms;
      for (const auto& [variable, coefficient] : coefficients) {
        terms.push_back({variable, coefficient});
      }
      const double limit = static_cast<double>(*options_.memory_limit_bytes) - constant;
      problem.AddRow(std::move(terms), -std::numeric_limits<double>::infinity(), limit);
    }
    return absl::OkStatus();
  }

  AutoShardingPlan Plan(const std::vector<int64_t>& chosen) {
    AutoShardingPlan plan;
    for (size_t j = 0; j < nodes_.size(); ++j) {
      const int64_t group_choice = chosen[nodes_[j].group];
      const Strategy& strategy = StrategyOf(j, group_choice);
      plan.shardings[nodes_[j].instruction] = {strategy.result};
      plan.compute += strategy.compute;
      plan.communication += strategy.communication;
    }
    for (const Edge& edge : edges_) {
      plan.resharding +=
          EdgeCost(edge, chosen[nodes_[edge.producer].group], chosen[nodes_[edge.consumer].group]);
    }
    // The peak of the per-device bytes of live values, swept in program order.
    absl::flat_hash_map<const ir::Instruction*, int64_t> position;
    const std::vector<int64_t> last = LastUses(position);
    std::vector<int64_t> delta(last.size() + 1);
    for (size_t j = 0; j < nodes_.size(); ++j) {
      const int64_t t = position[nodes_[j].instruction];
      const int64_t bytes = StrategyOf(j, chosen[nodes_[j].group]).memory;
      delta[t] += bytes;
      delta[std::min<int64_t>(last[t] + 1, static_cast<int64_t>(last.size()))] -= bytes;
    }
    int64_t live = 0;
    for (size_t t = 0; t < last.size(); ++t) {
      live += delta[t];
      plan.peak_memory_bytes = std::max(plan.peak_memory_bytes, live);
    }
    plan.instructions = static_cast<int64_t>(nodes_.size());
    plan.choice_groups = choice_groups_;
    plan.variables = variables_;
    plan.rows = rows_;
    plan.solve_seconds = solve_seconds_;
    plan.optimal = optimal_;
    plan.windows = windows_;
    return plan;
  }

  const ir::Module& module_;
  const Mesh& mesh_;
  const CostModel& model_;
  const AutoShardingOptions& options_;
  const ShardingMap* fixed_;
  const ShardingMap* restrict_;
  std::optional<Round> round_;
  ChosenFactors chosen_factors_;
  std::vector<Node> nodes_;
  absl::flat_hash_map<const ir::Instruction*, int64_t> index_;
  absl::flat_hash_map<const ir::Instruction*, std::vector<const ir::Instruction*>> users_;
  absl::flat_hash_set<const ir::Instruction*> late_;
  std::vector<Edge> edges_;
  int64_t choice_groups_ = 0, variables_ = 0, rows_ = 0, windows_ = 0;
  double solve_seconds_ = 0;
  bool optimal_ = false;
};

}  // namespace

std::string AutoShardingPlan::Report(const ir::Module& module, const Mesh& mesh) const {
  std::string text;
  for (const auto& instruction : module.entry()->instructions()) {
    auto found = shardings.find(instruction.get());
    if (found == shardings.end()) continue;
    text += fmt::format("%{} {} {}\n", instruction->name(), instruction->shape().ToString(),
                        found->second[0].ToString(mesh));
  }
  text += fmt::format(
      "modelled step: {:.6g} s (compute {:.6g}, all-reduces {:.6g}, resharding {:.6g}); peak "
      "{} bytes per device\n",
      cost(), compute, communication, resharding, peak_memory_bytes);
  return text;
}

namespace {

// One round per split axis in `order`, each keeping the axes decided before it where the previous
// round put them; then, while a pass lowers the cost, each axis again with the others fixed
// (coordinate descent: the best plan so far is a point of every such round). A program solved in
// windows (not jointly optimal anyway) skips the descent, within the solve time. Returns the
// cheapest plan seen, with the solve figures of all the rounds.
absl::StatusOr<AutoShardingPlan> SolveInRounds(const ir::Module& module, const Mesh& mesh,
                                               const CostModel& model,
                                               const AutoShardingOptions& options,
                                               const std::vector<int64_t>& order) {
  ChosenFactors chosen;
  AutoShardingPlan best;
  double seconds = 0;
  int64_t variables = 0;
  std::vector<bool> decided(mesh.axis_count(), false);
  auto round = [&](int64_t axis, bool first_pass) -> absl::StatusOr<bool> {
    Builder builder(module, mesh, model, options, nullptr, Round{axis, decided, &chosen});
    VKSPMD_ASSIGN_OR_RETURN(AutoShardingPlan plan, builder.Run());
    decided[axis] = true;
    seconds += plan.solve_seconds;
    variables = std::max(variables, plan.variables);
    if (!first_pass && plan.cost() >= best.cost() * (1 - 1e-9)) return false;
    best = std::move(plan);
    chosen = builder.chosen_factors();
    return true;
  };
  for (int64_t axis : order) VKSPMD_RETURN_IF_ERROR(round(axis, true).status());
  for (size_t pass = 0; pass < kMaxDescentPasses && best.windows == 1; ++pass) {
    bool improved = false;
    for (int64_t axis : order) {
      VKSPMD_ASSIGN_OR_RETURN(bool lower, round(axis, false));
      improved = improved || lower;
    }
    if (!improved) break;
  }
  best.solve_seconds = seconds;
  best.variables = variables;
  return best;
}

// The ILP's strategies split values over every mesh axis; inside a partially manual region the
// manual axes are the user's, so such programs are refused rather than planned wrongly.
absl::Status CheckNoManualSubgroups(const ir::Module& module) {
  for (const auto& instruction : module.entry()->instructions()) {
    if (!instruction->sharding().has_value()) continue;
    const ir::Sharding& sharding = *instruction->sharding();
    std::vector<ir::Sharding> leaves = {sharding};
    if (sharding.kind() == ir::Sharding::Kind::kTuple) leaves = sharding.tuple_elements();
    for (const ir::Sharding& leaf : leaves) {
      if (absl::c_linear_search(leaf.subgroup_types(), ir::SubgroupType::kManual)) {
        return absl::UnimplementedError(fmt::format(
            "{} ({}): sharding {} is partially manual; auto-sharding does not plan partially "
            "manual regions (partition the program with its own shardings instead)",
            instruction->Describe(), ir::OpcodeName(instruction->opcode()), leaf.ToString()));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<AutoShardingPlan> AutoShard(const ir::Module& module, const Mesh& mesh,
                                           const CostModel& model,
                                           const AutoShardingOptions& options) {
  VKSPMD_RETURN_IF_ERROR(CheckNoManualSubgroups(module));
  std::vector<int64_t> split;
  for (int64_t axis = 0; axis < mesh.axis_count(); ++axis) {
    if (mesh.shape()[axis] > 1) split.push_back(axis);
  }
  if (split.size() < 2) return Builder(module, mesh, model, options, nullptr).Run();
  // On a mesh of several axes the strategies multiply (each axis to any factor; the transformer's
  // step on 2x2 needs 78,000 variables, whose LP relaxation GLPK does not solve in 30 s): rounds
  // of one axis each, in mesh order and in reverse (so that the axis decided first is either
  // one: a plan splitting the batch over one axis and Megatron's factors over the other is found
  // from either end), each refined by coordinate descent. A program solved in windows (not
  // jointly optimal anyway) takes the mesh order alone, within the solve time.
  VKSPMD_ASSIGN_OR_RETURN(AutoShardingPlan plan,
                          SolveInRounds(module, mesh, model, options, split));
  if (plan.windows > 1) return plan;
  std::vector<int64_t> reversed(split.rbegin(), split.rend());
  VKSPMD_ASSIGN_OR_RETURN(AutoShardingPlan other,
                          SolveInRounds(module, mesh, model, options, reversed));
  const double seconds = plan.solve_seconds + other.solve_seconds;
  const int64_t variables = std::max(plan.variables, other.variables);
  if (other.cost() < plan.cost()) plan = std::move(other);
  plan.solve_seconds = seconds;
  plan.variables = variables;
  return plan;
}

absl::StatusOr<AutoShardingPlan> CostOfShardings(const ir::Module& module, const Mesh& mesh,
                                                 const CostModel& model, const ShardingMap& fixed,
                                                 const AutoShardingOptions& options) {
  return Builder(module, mesh, model, options, &fixed).Run();
}

absl::StatusOr<AutoShardingPlan> CostInChoiceSpace(const ir::Module& module, const Mesh& mesh,
                                                   const CostModel& model,
                                                   const ShardingMap& shardings,
                                                   const AutoShardingOptions& options) {
  return Builder(module, mesh, model, options, &shardings, std::nullopt, /*restrict=*/true).Run();
}

}  // namespace vkspmd::spmd
