// Auto-sharding's cost graph over choice groups (a linear cost per choice, a cost matrix per
// edge) and its exact reduction before the ILP: groups with at most two neighbours are
// eliminated by dynamic programming (GSPMD-NOTES 5.4, step 5), as in tree and chain DP.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace vkspmd::spmd {

class ChoiceGraph {
 public:
  using Matrix = std::vector<std::vector<double>>;

  // Adds to a group's cost of each choice (creating the group with costs.size() choices).
  void AddLinear(int64_t group, const std::vector<double>& costs);
  // Adds cost[a][b] to the pair (choice a of `first`, choice b of `second`); first != second.
  void AddEdge(int64_t first, int64_t second, const Matrix& cost);

  // Eliminates, exactly, every group outside `keep` with at most two neighbours, until none is
  // left: a leaf adds its best cost per neighbour choice to the neighbour, a group between two
  // others becomes an edge between them (min over its choices). Returns how many were removed.
  int64_t Eliminate(const std::set<int64_t>& keep);

  // What is left for the ILP.
  const std::map<int64_t, std::vector<double>>& linear() const { return linear_; }
  const std::map<std::pair<int64_t, int64_t>, Matrix>& edges() const { return edges_; }

  // Fills in the eliminated groups' choices from those of the groups left (in `choices`).
  void BackSubstitute(std::map<int64_t, int64_t>& choices) const;

 private:
  double Cost(int64_t from, int64_t to, int64_t a, int64_t b) const;
  void RemoveEdge(int64_t first, int64_t second);

  struct Eliminated {
    int64_t group = 0;
    std::vector<int64_t> neighbours;  // 0, 1 or 2
    std::vector<int64_t> best;        // per neighbour choice (c1 · columns + c2)
    int64_t columns = 1;              // the second neighbour's choices
  };
  std::map<int64_t, std::vector<double>> linear_;
  std::map<std::pair<int64_t, int64_t>, Matrix> edges_;  // first < second, [first][second]
  std::map<int64_t, std::set<int64_t>> neighbours_;
  std::vector<Eliminated> eliminated_;
};

}  // namespace vkspmd::spmd
