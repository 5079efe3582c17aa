// Auto-sharding (GSPMD-NOTES 5, Alpa's intra-op ILP): one sharding per instruction chosen by an
// integer linear program over the factor rules' strategies, minimising modelled step time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "src/ir/module.h"
#include "src/spmd/auto_sharding_cost.h"
#include "src/spmd/mesh.h"
#include "src/spmd/propagation.h"

namespace vkspmd::spmd {

struct AutoShardingOptions {
  // Bytes per device the live values may hold at the program's fullest points (none: no limit).
  std::optional<int64_t> memory_limit_bytes;
  // The whole solve's, every ILP of it together (rounds, orders, descent passes, windows): when it
  // ends, the cheapest plan found so far is taken (stopped_at_time_limit says so). Where no ILP
  // found a plan by then, the groups left are chosen greedily (a valid plan, not a good one);
  // under a memory limit, which the greedy choice ignores, that is DEADLINE_EXCEEDED instead.
  double time_limit_seconds = 30;
};

struct AutoShardingPlan {
  ShardingMap shardings;  // per array-valued entry instruction (tuples are left to propagation)
  // Modelled seconds per step: the ops' compute (with the cost model's run_seconds, a run's
  // fixed cost), their all-reduces, and resharding on edges.
  double compute = 0, communication = 0, resharding = 0;
  double cost() const { return compute + communication + resharding; }
  // `compute` by kind of op: dots (with their dispatch and bytes), the other ops that run a kernel
  // of their own (reductions, gathers, ...), the ops that fuse into others' kernels (elementwise,
  // layout, leaves), and the model's run_seconds. What `vkspmd partition --auto/--cost` prints
  // beside a profile's kernel time per kind.
  double compute_dots = 0, compute_kernels = 0, compute_fused = 0, compute_run = 0;
  // Modelled bytes per device at the fullest checked point (parameters and live values).
  int64_t peak_memory_bytes = 0;
  int64_t instructions = 0;   // with a choice (array values)
  int64_t choice_groups = 0;  // after elementwise ops follow their operand
  int64_t variables = 0, rows = 0;
  double solve_seconds = 0;
  // false: solved in several windows (a program too large for one ILP: not proven optimal) or
  // stopped by the time limit.
  bool optimal = false;
  // The time limit ended the search: an ILP stopped at its best integer plan, or rounds, orders
  // or windows were left out (a plan may still be optimal-looking; it is the best found by then).
  bool stopped_at_time_limit = false;
  int64_t greedy_groups = 0;  // of the plan's round, chosen one by one when time ran out
  int64_t windows = 1;        // ILPs solved one after the other (program order), in the last round
  // "%dot.3  [{dp}, {}]" per instruction in entry order, then the costs; what `vkspmd partition
  // --auto` prints and the golden files hold.
  std::string Report(const ir::Module& module, const Mesh& mesh) const;
  // "modelled compute by kind: dots 1.234 ms, other kernels ..., fused ops ..., run ...\n".
  std::string ComputeByKind() const;
};

// Chooses every instruction's sharding. Instructions with sharding= in the input keep it (the
// ILP costs the rest around them). Errors: an op without a rule (as the partitioner's), a memory
// limit no plan meets (FAILED_PRECONDITION), or, under a memory limit, no plan within the time
// limit (DEADLINE_EXCEEDED naming it).
absl::StatusOr<AutoShardingPlan> AutoShard(const ir::Module& module, const Mesh& mesh,
                                           const CostModel& model,
                                           const AutoShardingOptions& options = {});

// The modelled cost of given shardings (a hand strategy's propagation result): the same ILP
// with each instruction's result fixed to its sharding in `fixed`, the op's best way to produce
// it still chosen.
absl::StatusOr<AutoShardingPlan> CostOfShardings(const ir::Module& module, const Mesh& mesh,
                                                 const CostModel& model, const ShardingMap& fixed,
                                                 const AutoShardingOptions& options = {});

// The ILP's own cost of given shardings (a hand strategy's propagation result): the choice
// groups AutoShard builds (sharding= in the module ignored; on a mesh of several axes, all axes
// at once: the space its rounds search an axis at a time), each kept to the choices giving every
// member its sharding in `shardings`. NOT_FOUND, naming the instruction, when no choice gives
// one: the shardings are not a point of the ILP. Where they are, the cost is CostOfShardings'.
absl::StatusOr<AutoShardingPlan> CostInChoiceSpace(const ir::Module& module, const Mesh& mesh,
                                                   const CostModel& model,
                                                   const ShardingMap& shardings,
                                                   const AutoShardingOptions& options = {});

// AnnotateModule(module, plan.shardings, mesh) writes a plan as sharding= for Partition.

}  // namespace vkspmd::spmd
