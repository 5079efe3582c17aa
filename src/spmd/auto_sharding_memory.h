// Auto-sharding's memory model: when each entry value dies, the ILP's rows bounding the bytes
// per device at the program's fullest points, and a plan's peak.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "src/ir/module.h"
#include "src/spmd/auto_sharding_choices.h"
#include "src/spmd/ilp_solver.h"

namespace vkspmd::spmd {

// Per entry instruction in order: the position after which its value is dead (parameters and
// the root's operands live to the end: they are the step's state). Fills `position`.
std::vector<int64_t> LastUses(const ir::Module& module,
                              absl::flat_hash_map<const ir::Instruction*, int64_t>& position);

// With a limit: Σ over the values live at each of the fullest points of their per-device bytes
// <= limit, over the variables of each group (`variables`: its first); groups without variables
// count at their choice 0.
absl::Status AddMemoryRows(IlpProblem& problem, const AutoShardingChoices& choices,
                           std::optional<int64_t> limit,
                           const std::map<int64_t, int64_t>& variables);

// The peak of the per-device bytes of live values under the group choices `chosen`, swept in
// program order.
int64_t PeakMemory(const AutoShardingChoices& choices, const std::vector<int64_t>& chosen);

}  // namespace vkspmd::spmd
