// Auto-sharding's driver: the choices built (auto_sharding_choices.h), solved
// (auto_sharding_ilp.h) and read back as a plan, in rounds of one mesh axis each on a mesh of
// several axes; the plan's report.
#include "src/spmd/auto_sharding.h"

#include <algorithm>
#include <utility>

#include "absl/algorithm/container.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/spmd/auto_sharding_choices.h"
#include "src/spmd/auto_sharding_ilp.h"
#include "src/spmd/auto_sharding_memory.h"
#include "src/spmd/auto_sharding_strategies.h"

namespace vkspmd::spmd {
namespace {

// Passes of coordinate descent over a multi-axis mesh's axes after the first (each stops early
// when a round no longer lowers the cost).
constexpr size_t kMaxDescentPasses = 3;

// The plan of the group choices `chosen`: each node's strategy, the modelled costs, the peak.
AutoShardingPlan Plan(const AutoShardingChoices& choices, const std::vector<int64_t>& chosen,
                      const SolveFigures& figures) {
  const std::vector<ChoiceNode>& nodes = choices.nodes();
  AutoShardingPlan plan;
  for (size_t j = 0; j < nodes.size(); ++j) {
    const int64_t group_choice = chosen[nodes[j].group];
    const Strategy& strategy = choices.StrategyOf(j, group_choice);
    plan.shardings[nodes[j].instruction] = {strategy.result};
    plan.compute += strategy.compute;
    double& kind = nodes[j].instruction->opcode() == ir::Opcode::kDot ? plan.compute_dots
                   : Fuses(*nodes[j].instruction)                     ? plan.compute_fused
                                                                      : plan.compute_kernels;
    kind += strategy.compute;
    plan.communication += strategy.communication;
  }
  for (const ChoiceEdge& edge : choices.edges()) {
    plan.resharding += choices.EdgeCost(edge, chosen[nodes[edge.producer].group],
                                        chosen[nodes[edge.consumer].group]);
  }
  plan.peak_memory_bytes = PeakMemory(choices, chosen);
  plan.instructions = static_cast<int64_t>(nodes.size());
  plan.choice_groups = figures.choice_groups;
  plan.variables = figures.variables;
  plan.rows = figures.rows;
  plan.solve_seconds = figures.solve_seconds;
  plan.optimal = figures.optimal;
  plan.stopped_at_time_limit = figures.stopped_at_time_limit;
  plan.greedy_groups = figures.greedy_groups;
  plan.windows = figures.windows;
  return plan;
}

// Builds the choices, solves them and reads the plan back; keeps each instruction's chosen factor
// axes for the next round of a multi-axis mesh.
class Builder {
 public:
  // `fixed` pins each instruction's result (CostOfShardings: any strategy giving it) or, with
  // `restrict` (CostInChoiceSpace), restricts the choice groups built as AutoShard builds them.
  Builder(const ir::Module& module, const Mesh& mesh, const CostModel& model,
          const AutoShardingOptions& options, const SolveDeadline& deadline,
          const ShardingMap* fixed, std::optional<Round> round = std::nullopt,
          bool restrict = false)
      : module_(module),
        mesh_(mesh),
        model_(model),
        options_(options),
        deadline_(deadline),
        fixed_(restrict ? nullptr : fixed),
        restrict_(restrict ? fixed : nullptr),
        round_(round) {}

  absl::StatusOr<AutoShardingPlan> Run() {
    VKSPMD_ASSIGN_OR_RETURN(
        AutoShardingChoices choices,
        AutoShardingChoices::Build(module_, mesh_, model_, fixed_, restrict_, round_));
    SolveFigures figures;
    VKSPMD_ASSIGN_OR_RETURN(std::vector<int64_t> chosen,
                            SolveChoices(choices, options_.memory_limit_bytes, deadline_, figures));
    const std::vector<ChoiceNode>& nodes = choices.nodes();
    for (size_t j = 0; j < nodes.size(); ++j) {
      chosen_factors_[nodes[j].instruction] = choices.StrategyOf(j, chosen[nodes[j].group]).factors;
    }
    AutoShardingPlan plan = Plan(choices, chosen, figures);
    plan.compute += model_.run_seconds;  // the same for every plan: a step's, not a choice's
    plan.compute_run = model_.run_seconds;
    return plan;
  }
  const ChosenFactors& chosen_factors() const { return chosen_factors_; }

 private:
  const ir::Module& module_;
  const Mesh& mesh_;
  const CostModel& model_;
  const AutoShardingOptions& options_;
  const SolveDeadline& deadline_;
  const ShardingMap* fixed_;
  const ShardingMap* restrict_;
  std::optional<Round> round_;
  ChosenFactors chosen_factors_;
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

std::string AutoShardingPlan::ComputeByKind() const {
  return fmt::format(
      "modelled compute by kind: dots {:.3f} ms, other kernels {:.3f}, fused ops {:.3f}, run "
      "{:.3f}\n",
      compute_dots * 1e3, compute_kernels * 1e3, compute_fused * 1e3, compute_run * 1e3);
}

namespace {

// One round per split axis in `order`, each keeping the axes decided before it where the previous
// round put them; then, while a pass lowers the cost, each axis again with the others fixed
// (coordinate descent: the best plan so far is a point of every such round). A program solved in
// windows (not jointly optimal anyway) skips the descent, within the solve time. Every round
// shares `deadline`: after a first plan, the rounds stop once a round ran out of time or less
// time is left than building a round's choices took (what GLPK cannot stop: the 64-layer step's
// take 1.5 s). A plan of the first rounds is a valid plan (the axes not decided yet unsplit).
// Returns the cheapest plan seen, with the solve figures of all the rounds; `building` is the
// most seconds one of its rounds took besides GLPK's (at least its value on entry).
absl::StatusOr<AutoShardingPlan> SolveInRounds(const ir::Module& module, const Mesh& mesh,
                                               const CostModel& model,
                                               const AutoShardingOptions& options,
                                               const SolveDeadline& deadline,
                                               const std::vector<int64_t>& order,
                                               double& building) {
  ChosenFactors chosen;
  AutoShardingPlan best;
  bool found = false, stopped = false;
  double seconds = 0;
  int64_t variables = 0;
  std::vector<bool> decided(mesh.axis_count(), false);
  // Whether to start another round: false once the time is up after a first plan.
  auto time_left = [&] {
    if (found && !stopped && deadline.SecondsLeft() <= building) stopped = true;
    return !stopped;
  };
  auto round = [&](int64_t axis, bool first_pass) -> absl::StatusOr<bool> {
    Builder builder(module, mesh, model, options, deadline, nullptr, Round{axis, decided, &chosen});
    const double left_before = deadline.SecondsLeft();
    absl::StatusOr<AutoShardingPlan> run = builder.Run();
    if (run.ok()) {
      building = std::max(building, left_before - deadline.SecondsLeft() - run->solve_seconds);
    }
    if (found && run.status().code() == absl::StatusCode::kDeadlineExceeded) {
      stopped = true;  // under a memory limit: the plan so far stands
      return false;
    }
    VKSPMD_ASSIGN_OR_RETURN(AutoShardingPlan plan, std::move(run));
    decided[axis] = true;
    seconds += plan.solve_seconds;
    variables = std::max(variables, plan.variables);
    stopped = stopped || plan.stopped_at_time_limit;
    // A round cut short may be worse than the plan it started from: taken only when cheaper.
    const bool must_beat = found && (!first_pass || plan.stopped_at_time_limit);
    if (must_beat && plan.cost() >= best.cost() * (1 - 1e-9)) return false;
    best = std::move(plan);
    found = true;
    chosen = builder.chosen_factors();
    return true;
  };
  for (int64_t axis : order) {
    if (!time_left()) break;
    VKSPMD_RETURN_IF_ERROR(round(axis, true).status());
  }
  for (size_t pass = 0; pass < kMaxDescentPasses && best.windows == 1 && time_left(); ++pass) {
    bool improved = false;
    for (int64_t axis : order) {
      if (!time_left()) break;
      VKSPMD_ASSIGN_OR_RETURN(bool lower, round(axis, false));
      improved = improved || lower;
    }
    if (!improved) break;
  }
  best.solve_seconds = seconds;
  best.variables = variables;
  if (stopped) {
    best.stopped_at_time_limit = true;
    best.optimal = false;
  }
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
  const SolveDeadline deadline = SolveDeadline::After(options.time_limit_seconds);
  VKSPMD_RETURN_IF_ERROR(CheckNoManualSubgroups(module));
  std::vector<int64_t> split;
  for (int64_t axis = 0; axis < mesh.axis_count(); ++axis) {
    if (mesh.shape()[axis] > 1) split.push_back(axis);
  }
  if (split.size() < 2) return Builder(module, mesh, model, options, deadline, nullptr).Run();
  // On a mesh of several axes the strategies multiply (each axis to any factor; the transformer's
  // step on 2x2 needs 78,000 variables, whose LP relaxation GLPK does not solve in 30 s): rounds
  // of one axis each, in mesh order and in reverse (so that the axis decided first is either
  // one: a plan splitting the batch over one axis and Megatron's factors over the other is found
  // from either end), each refined by coordinate descent. A program solved in windows (not
  // jointly optimal anyway) takes the mesh order alone, within the solve time. Both orders share
  // the deadline; the reverse one is skipped when less time is left than building a round's
  // choices took (its first round cannot stop before it has built them: the 64-layer step's
  // took 1.5 s, which it ran past the limit).
  double building = 0;
  VKSPMD_ASSIGN_OR_RETURN(AutoShardingPlan plan,
                          SolveInRounds(module, mesh, model, options, deadline, split, building));
  if (plan.windows > 1 || plan.stopped_at_time_limit) return plan;
  if (deadline.SecondsLeft() <= building) {
    plan.stopped_at_time_limit = true;
    plan.optimal = false;
    return plan;
  }
  std::vector<int64_t> reversed(split.rbegin(), split.rend());
  absl::StatusOr<AutoShardingPlan> other =
      SolveInRounds(module, mesh, model, options, deadline, reversed, building);
  if (other.status().code() == absl::StatusCode::kDeadlineExceeded) {
    plan.stopped_at_time_limit = true;  // under a memory limit: the first order's plan stands
    plan.optimal = false;
    return plan;
  }
  VKSPMD_RETURN_IF_ERROR(other.status());
  const double seconds = plan.solve_seconds + other->solve_seconds;
  const int64_t variables = std::max(plan.variables, other->variables);
  const bool stopped = other->stopped_at_time_limit;
  if (other->cost() < plan.cost()) plan = *std::move(other);
  plan.solve_seconds = seconds;
  plan.variables = variables;
  if (stopped) {
    plan.stopped_at_time_limit = true;
    plan.optimal = false;
  }
  return plan;
}

absl::StatusOr<AutoShardingPlan> CostOfShardings(const ir::Module& module, const Mesh& mesh,
                                                 const CostModel& model, const ShardingMap& fixed,
                                                 const AutoShardingOptions& options) {
  const SolveDeadline deadline = SolveDeadline::After(options.time_limit_seconds);
  return Builder(module, mesh, model, options, deadline, &fixed).Run();
}

absl::StatusOr<AutoShardingPlan> CostInChoiceSpace(const ir::Module& module, const Mesh& mesh,
                                                   const CostModel& model,
                                                   const ShardingMap& shardings,
                                                   const AutoShardingOptions& options) {
  const SolveDeadline deadline = SolveDeadline::After(options.time_limit_seconds);
  return Builder(module, mesh, model, options, deadline, &shardings, std::nullopt,
                 /*restrict=*/true)
      .Run();
}

}  // namespace vkspmd::spmd
