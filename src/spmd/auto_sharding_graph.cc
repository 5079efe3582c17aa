// Exact elimination of low-degree choice groups, and reading their choices back.
#include "src/spmd/auto_sharding_graph.h"

#include <cstddef>
#include <deque>
#include <limits>

namespace vkspmd::spmd {

void ChoiceGraph::AddLinear(int64_t group, const std::vector<double>& costs) {
  std::vector<double>& linear = linear_[group];
  linear.resize(costs.size());
  for (size_t a = 0; a < costs.size(); ++a) linear[a] += costs[a];
}

void ChoiceGraph::AddEdge(int64_t first, int64_t second, const Matrix& cost) {
  const bool swap = first > second;
  Matrix& matrix = edges_[swap ? std::make_pair(second, first) : std::make_pair(first, second)];
  const size_t rows = swap ? cost[0].size() : cost.size();
  const size_t columns = swap ? cost.size() : cost[0].size();
  matrix.resize(rows, std::vector<double>(columns));
  for (size_t a = 0; a < cost.size(); ++a) {
    for (size_t b = 0; b < cost[a].size(); ++b) (swap ? matrix[b][a] : matrix[a][b]) += cost[a][b];
  }
  neighbours_[first].insert(second);
  neighbours_[second].insert(first);
}

double ChoiceGraph::Cost(int64_t from, int64_t to, int64_t a, int64_t b) const {
  return from < to ? edges_.at({from, to})[a][b] : edges_.at({to, from})[b][a];
}

void ChoiceGraph::RemoveEdge(int64_t first, int64_t second) {
  edges_.erase(first < second ? std::make_pair(first, second) : std::make_pair(second, first));
  neighbours_[first].erase(second);
  neighbours_[second].erase(first);
}

int64_t ChoiceGraph::Eliminate(const std::set<int64_t>& keep) {
  std::deque<int64_t> work;
  for (const auto& [group, costs] : linear_) work.push_back(group);
  int64_t removed = 0;
  while (!work.empty()) {
    const int64_t group = work.front();
    work.pop_front();
    if (!linear_.contains(group) || keep.contains(group)) continue;
    const std::set<int64_t>& around = neighbours_[group];
    if (around.size() > 2) continue;
    Eliminated record{group, std::vector<int64_t>(around.begin(), around.end()), {}};
    const std::vector<double>& own = linear_[group];
    const int64_t size = static_cast<int64_t>(own.size());
    const auto best_for = [&](const auto& extra) {  // argmin over own choices, and the min
      int64_t best = 0;
      double lowest = std::numeric_limits<double>::infinity();
      for (int64_t a = 0; a < size; ++a) {
        const double cost = own[a] + extra(a);
        if (cost < lowest) lowest = cost, best = a;
      }
      return std::make_pair(best, lowest);
    };
    if (record.neighbours.empty()) {
      record.best.push_back(best_for([](int64_t) { return 0.0; }).first);
    } else if (record.neighbours.size() == 1) {
      const int64_t other = record.neighbours[0];
      std::vector<double> added(linear_[other].size());
      for (size_t c = 0; c < added.size(); ++c) {
        auto [best, lowest] = best_for([&](int64_t a) { return Cost(group, other, a, c); });
        record.best.push_back(best);
        added[c] = lowest;
      }
      RemoveEdge(group, other);
      AddLinear(other, added);
      work.push_back(other);
    } else {
      const int64_t first = record.neighbours[0], second = record.neighbours[1];
      Matrix joined(linear_[first].size(), std::vector<double>(linear_[second].size()));
      record.columns = static_cast<int64_t>(linear_[second].size());
      for (size_t c = 0; c < joined.size(); ++c) {
        for (size_t d = 0; d < joined[c].size(); ++d) {
          auto [best, lowest] = best_for(
              [&](int64_t a) { return Cost(group, first, a, c) + Cost(group, second, a, d); });
          record.best.push_back(best);
          joined[c][d] = lowest;
        }
      }
      RemoveEdge(group, first);
      RemoveEdge(group, second);
      AddEdge(first, second, joined);
      work.push_back(first);
      work.push_back(second);
    }
    neighbours_.erase(group);
    linear_.erase(group);
    eliminated_.push_back(std::move(record));
    ++removed;
  }
  return removed;
}

void ChoiceGraph::BackSubstitute(std::map<int64_t, int64_t>& choices) const {
  for (auto it = eliminated_.rbegin(); it != eliminated_.rend(); ++it) {
    const Eliminated& record = *it;
    int64_t index = 0;
    if (record.neighbours.size() == 1) index = choices.at(record.neighbours[0]);
    if (record.neighbours.size() == 2) {
      index = choices.at(record.neighbours[0]) * record.columns + choices.at(record.neighbours[1]);
    }
    choices[record.group] = record.best.at(index);
  }
}

}  // namespace vkspmd::spmd
