// Solving auto-sharding's choices (GSPMD-NOTES 5.4): the cost graph reduced exactly, then one
// ILP (GLPK) over what is left, or one per window of groups in program order when the program
// is too large for one.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "src/spmd/auto_sharding_choices.h"

namespace vkspmd::spmd {

// What solving took, as AutoShardingPlan reports it.
struct SolveFigures {
  int64_t choice_groups = 0, variables = 0, rows = 0, windows = 0;
  double solve_seconds = 0;
  bool optimal = false;
};

// Each node's group choice (indexed by node; meaningful at group leaders). `memory_limit_bytes`
// adds the memory rows; the solver stops at `time_limit_seconds` with the best plan found.
absl::StatusOr<std::vector<int64_t>> SolveChoices(const AutoShardingChoices& choices,
                                                  std::optional<int64_t> memory_limit_bytes,
                                                  double time_limit_seconds, SolveFigures& figures);

}  // namespace vkspmd::spmd
