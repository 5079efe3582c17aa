// Solving auto-sharding's choices (auto_sharding_ilp.h): the choice graph, its exact reduction,
// the windows and their ILPs.
#include "src/spmd/auto_sharding_ilp.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/spmd/auto_sharding_graph.h"
#include "src/spmd/auto_sharding_memory.h"
#include "src/spmd/ilp_solver.h"

namespace vkspmd::spmd {
namespace {

// The most ILP variables of one window (GLPK's dual simplex solves about this many in well under
// a second here); a program needing more is solved window by window.
constexpr int64_t kWindowVariables = 8000;

// The ILP's objective is in microseconds: in seconds, differences of a few nanoseconds (a slice,
// a scalar's resharding) are below GLPK's absolute tolerances, and its plan may then cost a
// hair more than one it could have chosen.
constexpr double kObjectiveScale = 1e6;

// Less time than this left: GLPK is not started (it would stop before a first plan).
constexpr double kMinimumIlpSeconds = 0.005;

// The most passes of the descent after a greedy choice (each looks at every edge once).
constexpr int64_t kDescentPasses = 20;

// Choice `a` of one end of an edge's `matrix` (`first`: the row end) against the group `other` at
// the other end: at other's choice where made, else at its cheapest.
double CostAgainst(const ChoiceGraph& graph, const ChoiceGraph::Matrix& matrix, bool first,
                   int64_t other, size_t a, const std::map<int64_t, int64_t>& choices) {
  auto fixed = choices.find(other);
  double cost = std::numeric_limits<double>::infinity();
  for (size_t b = 0; b < graph.linear().at(other).size(); ++b) {
    if (fixed != choices.end() && static_cast<int64_t>(b) != fixed->second) continue;
    cost = std::min(cost, first ? matrix[a][b] : matrix[b][a]);
  }
  return cost;
}

class Solver {
 public:
  Solver(const AutoShardingChoices& choices, std::optional<int64_t> memory_limit,
         const SolveDeadline& deadline, SolveFigures& figures)
      : choices_(choices),
        nodes_(choices.nodes()),
        edges_(choices.edges()),
        memory_limit_(memory_limit),
        deadline_(deadline),
        figures_(figures) {}

  absl::StatusOr<std::vector<int64_t>> Solve() {
    ChoiceGraph graph;
    for (size_t j = 0; j < nodes_.size(); ++j) {
      std::vector<double> costs(choices_.GroupSize(j));
      for (int64_t p = 0; p < choices_.GroupSize(j); ++p) {
        const Strategy& strategy = choices_.StrategyOf(j, p);
        costs[p] = strategy.compute + strategy.communication;
      }
      graph.AddLinear(nodes_[j].group, costs);
    }
    for (const ChoiceEdge& edge : edges_) {
      const int64_t from = nodes_[edge.producer].group, to = nodes_[edge.consumer].group;
      const int64_t rows = choices_.GroupSize(edge.producer),
                    columns = choices_.GroupSize(edge.consumer);
      if (from == to) {
        std::vector<double> diagonal(rows);
        for (int64_t p = 0; p < rows; ++p) diagonal[p] = choices_.EdgeCost(edge, p, p);
        graph.AddLinear(from, diagonal);
        continue;
      }
      if (rows == 1 || columns == 1) {  // one side has no choice: a cost of the other's choices
        std::vector<double> costs(rows == 1 ? columns : rows);
        for (int64_t p = 0; p < rows; ++p) {
          for (int64_t q = 0; q < columns; ++q)
            costs[rows == 1 ? q : p] += choices_.EdgeCost(edge, p, q);
        }
        graph.AddLinear(rows == 1 ? to : from, costs);
        continue;
      }
      ChoiceGraph::Matrix matrix(rows, std::vector<double>(columns));
      for (int64_t p = 0; p < rows; ++p) {
        for (int64_t q = 0; q < columns; ++q) matrix[p][q] = choices_.EdgeCost(edge, p, q);
      }
      graph.AddEdge(from, to, matrix);
    }
    // Memory rows need every group's variables; without a limit the graph is reduced exactly.
    std::set<int64_t> keep;
    if (memory_limit_.has_value()) {
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
    figures_.optimal = windows.size() == 1;
    figures_.windows = static_cast<int64_t>(windows.size());
    figures_.choice_groups += static_cast<int64_t>(graph.linear().size());
    bool out_of_time = false;
    std::vector<int64_t> greedy;  // the groups of the windows no ILP chose, in program order
    for (const std::vector<int64_t>& window : windows) {
      const double left = deadline_.SecondsLeft();
      absl::Status solved = absl::DeadlineExceededError(
          fmt::format("the time limit was reached before the ILP of {} choice groups was started",
                      window.size()));
      if (!out_of_time && left >= kMinimumIlpSeconds) {
        solved = SolveWindow(graph, window, choices, left);
        if (solved.ok()) continue;
        if (solved.code() != absl::StatusCode::kDeadlineExceeded) return solved;
      }
      out_of_time = true;
      if (memory_limit_.has_value()) {
        return absl::DeadlineExceededError(fmt::format(
            "no auto-sharding plan within the {:g} s time limit under the memory limit ({}); "
            "raise the time limit",
            deadline_.limit_seconds, std::string(solved.message())));
      }
      greedy.insert(greedy.end(), window.begin(), window.end());
    }
    if (out_of_time) {
      figures_.stopped_at_time_limit = true;
      figures_.optimal = false;
      figures_.greedy_groups += static_cast<int64_t>(greedy.size());
      // Two greedy choices, each then descended; the cheaper is taken.
      std::map<int64_t, int64_t> best;
      double best_cost = std::numeric_limits<double>::infinity();
      for (const bool optimistic : {true, false}) {
        std::map<int64_t, int64_t> trial = choices;
        ChooseGreedily(graph, greedy, trial, optimistic);
        Descend(graph, trial);
        const double cost = CostOf(graph, trial);
        if (cost < best_cost) {
          best_cost = cost;
          best = std::move(trial);
        }
      }
      choices = std::move(best);
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
      std::vector<double>& own_costs = costs[own];
      for (size_t a = 0; a < own_costs.size(); ++a) {
        own_costs[a] += CostAgainst(graph, matrix, has_first, other, a, choices);
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
    VKSPMD_RETURN_IF_ERROR(AddMemoryRows(problem, choices_, memory_limit_, first_variable));
    figures_.variables = std::max(figures_.variables, problem.variable_count());
    figures_.rows = std::max(figures_.rows, problem.row_count());
    VKSPMD_ASSIGN_OR_RETURN(IlpProblem::Solution solution, problem.Solve(time_limit));
    figures_.solve_seconds += solution.seconds;
    figures_.optimal = figures_.optimal && solution.optimal;
    figures_.stopped_at_time_limit =
        figures_.stopped_at_time_limit || solution.stopped_at_time_limit;
    for (const auto& [group, first] : first_variable) {
      int64_t best = 0;
      for (size_t p = 1; p < costs.at(group).size(); ++p) {
        if (solution.values[first + p] > solution.values[first + best]) best = p;
      }
      choices[group] = best;
    }
    return absl::OkStatus();
  }

  // `order`'s groups one by one, each the cheapest choice given the groups chosen, edges to
  // groups not chosen yet at their cheapest (`optimistic`) or left out: what is left when the
  // time limit ends before the windows' ILPs found a plan. No memory rows: only without a memory
  // limit.
  void ChooseGreedily(const ChoiceGraph& graph, const std::vector<int64_t>& order,
                      std::map<int64_t, int64_t>& choices, bool optimistic) {
    if (neighbours_.empty()) {
      for (const auto& [groups, matrix] : graph.edges()) {
        neighbours_[groups.first].push_back(groups);
        neighbours_[groups.second].push_back(groups);
      }
    }
    for (int64_t group : order) {
      std::vector<double> costs = graph.linear().at(group);
      for (const std::pair<int64_t, int64_t>& pair : neighbours_[group]) {
        const ChoiceGraph::Matrix& matrix = graph.edges().at(pair);
        const bool first = pair.first == group;
        const int64_t other = first ? pair.second : pair.first;
        if (!optimistic && !choices.contains(other)) continue;
        for (size_t a = 0; a < costs.size(); ++a) {
          costs[a] += CostAgainst(graph, matrix, first, other, a, choices);
        }
      }
      choices[group] = std::min_element(costs.begin(), costs.end()) - costs.begin();
    }
  }

  // The reduced graph's cost of `choices` (every group chosen).
  static double CostOf(const ChoiceGraph& graph, const std::map<int64_t, int64_t>& choices) {
    double cost = 0;
    for (const auto& [group, linear] : graph.linear()) cost += linear[choices.at(group)];
    for (const auto& [groups, matrix] : graph.edges()) {
      cost += matrix[choices.at(groups.first)][choices.at(groups.second)];
    }
    return cost;
  }

  // After a greedy choice, whose groups saw later groups at their cheapest rather than at what
  // they became: each group in turn takes its cheapest choice given every neighbour's (iterated
  // conditional modes), until a pass changes nothing or kDescentPasses. Each move lowers the
  // plan's cost, so it ends no worse than it started.
  void Descend(const ChoiceGraph& graph, std::map<int64_t, int64_t>& choices) {
    for (int64_t pass = 0; pass < kDescentPasses; ++pass) {
      bool changed = false;
      for (const auto& [group, linear] : graph.linear()) {
        std::vector<double> costs = linear;
        for (const std::pair<int64_t, int64_t>& groups : neighbours_[group]) {
          const ChoiceGraph::Matrix& matrix = graph.edges().at(groups);
          const bool first = groups.first == group;
          const int64_t other = choices.at(first ? groups.second : groups.first);
          for (size_t a = 0; a < costs.size(); ++a) {
            costs[a] += first ? matrix[a][other] : matrix[other][a];
          }
        }
        int64_t& chosen = choices.at(group);
        const int64_t best = std::min_element(costs.begin(), costs.end()) - costs.begin();
        if (costs[best] < costs[chosen] - 1e-15) {
          chosen = best;
          changed = true;
        }
      }
      if (!changed) break;
    }
  }

 private:
  const AutoShardingChoices& choices_;
  const std::vector<ChoiceNode>& nodes_;
  const std::vector<ChoiceEdge>& edges_;
  std::optional<int64_t> memory_limit_;
  const SolveDeadline& deadline_;
  SolveFigures& figures_;
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> neighbours_;  // edges per group
};

}  // namespace

SolveDeadline SolveDeadline::After(double seconds) {
  const auto now = std::chrono::steady_clock::now();
  // Clamped so that a huge limit does not overflow the clock's range.
  const double clamped = std::clamp(seconds, 0.0, 1e9);
  return {now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(clamped)),
          seconds};
}

double SolveDeadline::SecondsLeft() const {
  return std::chrono::duration<double>(end - std::chrono::steady_clock::now()).count();
}

absl::StatusOr<std::vector<int64_t>> SolveChoices(const AutoShardingChoices& choices,
                                                  std::optional<int64_t> memory_limit_bytes,
                                                  const SolveDeadline& deadline,
                                                  SolveFigures& figures) {
  return Solver(choices, memory_limit_bytes, deadline, figures).Solve();
}

}  // namespace vkspmd::spmd
