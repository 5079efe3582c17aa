// Solving auto-sharding's choices (GSPMD-NOTES 5.4): the cost graph reduced exactly, then one
// ILP (GLPK) over what is left, or one per window of groups in program order when the program
// is too large for one.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "src/spmd/auto_sharding_choices.h"

namespace vkspmd::spmd {

// One time limit for a whole solve (every round, order, descent pass and window): when it ends,
// and the limit the user set, for messages.
struct SolveDeadline {
  std::chrono::steady_clock::time_point end;
  double limit_seconds = 0;

  static SolveDeadline After(double seconds);
  double SecondsLeft() const;  // negative once passed
};

// What solving took, as AutoShardingPlan reports it.
struct SolveFigures {
  int64_t choice_groups = 0, variables = 0, rows = 0, windows = 0;
  double solve_seconds = 0;
  bool optimal = false;
  bool stopped_at_time_limit = false;  // the deadline cut an ILP short or left windows unsolved
  int64_t greedy_groups = 0;           // chosen one by one at the deadline, not by an ILP
};

// Each node's group choice (indexed by node; meaningful at group leaders). `memory_limit_bytes`
// adds the memory rows. Each window's ILP gets the time left before `deadline` and keeps the best
// integer plan GLPK found by then; a window whose ILP found none, and every window after it, is
// chosen greedily (group by group, the cheapest choice given those made, then a descent moving
// each group to its cheapest choice given its neighbours': a valid plan, not a good one). Under a
// memory limit (whose rows a greedy choice would ignore) running out of time before any integer
// plan is DEADLINE_EXCEEDED naming the limit.
absl::StatusOr<std::vector<int64_t>> SolveChoices(const AutoShardingChoices& choices,
                                                  std::optional<int64_t> memory_limit_bytes,
                                                  const SolveDeadline& deadline,
                                                  SolveFigures& figures);

}  // namespace vkspmd::spmd
