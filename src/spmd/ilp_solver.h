// A small mixed-integer linear program and its solution by GLPK (the Debian package libglpk-dev):
// what auto-sharding's ILP is written in, kept apart so that the model code never sees GLPK.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace vkspmd::spmd {

// minimize Σ cost[v]·x[v] subject to each row's lower <= Σ coefficient·x <= upper, every variable
// in [0, 1], binary ones integral.
class IlpProblem {
 public:
  struct Term {
    int64_t variable = 0;
    double coefficient = 0;
  };

  // Returns the new variable's index.
  int64_t AddVariable(double cost, bool binary);
  void AddRow(std::vector<Term> terms, double lower, double upper);

  int64_t variable_count() const { return static_cast<int64_t>(costs_.size()); }
  int64_t row_count() const { return static_cast<int64_t>(rows_.size()); }
  int64_t nonzero_count() const;

  struct Solution {
    std::vector<double> values;  // per variable
    double objective = 0;
    bool optimal = false;                // proven optimal
    bool stopped_at_time_limit = false;  // the time limit stopped the search at this solution
    double seconds = 0;                  // solver wall time
  };
  // Solves within `time_limit_seconds`. Errors: INFEASIBLE program (FAILED_PRECONDITION naming
  // it), or DEADLINE_EXCEEDED when no integer solution was found in time (callers holding a
  // deadline pass what is left of it).
  absl::StatusOr<Solution> Solve(double time_limit_seconds) const;

 private:
  struct Row {
    std::vector<Term> terms;
    double lower = 0, upper = 0;
  };
  std::vector<double> costs_;
  std::vector<bool> binary_;
  std::vector<Row> rows_;
};

}  // namespace vkspmd::spmd
