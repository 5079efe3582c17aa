// Auto-sharding's memory rows and peak (auto_sharding_memory.h).
#include "src/spmd/auto_sharding_memory.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "src/spmd/axis_sharding.h"

namespace vkspmd::spmd {
namespace {

// How many of the program's fullest points (by replicated bytes) carry a memory row.
constexpr size_t kMemoryCheckpoints = 8;

}  // namespace

// Per entry instruction in order: the position after which its value is dead (parameters and
// the root's operands live to the end: they are the step's state).
std::vector<int64_t> LastUses(const ir::Module& module,
                              absl::flat_hash_map<const ir::Instruction*, int64_t>& position) {
  const auto& instructions = module.entry()->instructions();
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
  const ir::Instruction* root = module.entry()->root();
  last[position[root]] = end;
  for (const ir::Instruction* operand : root->operands()) last[position[operand]] = end;
  return last;
}

absl::Status AddMemoryRows(IlpProblem& problem, const AutoShardingChoices& choices,
                           std::optional<int64_t> limit,
                           const std::map<int64_t, int64_t>& variables) {
  if (!limit.has_value()) return absl::OkStatus();
  const std::vector<ChoiceNode>& nodes = choices.nodes();
  absl::flat_hash_map<const ir::Instruction*, int64_t> position;
  const std::vector<int64_t> last = LastUses(choices.module(), position);
  const int64_t end = static_cast<int64_t>(last.size());
  std::vector<double> replicated(end + 1);
  for (const ChoiceNode& node : nodes) {
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
    for (size_t j = 0; j < nodes.size(); ++j) {
      const int64_t defined = position[nodes[j].instruction];
      if (defined > t || last[defined] < t) continue;
      auto found = variables.find(nodes[j].group);
      if (found == variables.end()) {
        constant += static_cast<double>(choices.StrategyOf(j, 0).memory);
        continue;
      }
      for (int64_t p = 0; p < choices.GroupSize(j); ++p) {
        coefficients[found->second + p] += static_cast<double>(choices.StrategyOf(j, p).memory);
      }
    }
    std::vector<IlpProblem::Term> terms;
    for (const auto& [variable, coefficient] : coefficients) {
      terms.push_back({variable, coefficient});
    }
    const double bound = static_cast<double>(*limit) - constant;
    problem.AddRow(std::move(terms), -std::numeric_limits<double>::infinity(), bound);
  }
  return absl::OkStatus();
}

int64_t PeakMemory(const AutoShardingChoices& choices, const std::vector<int64_t>& chosen) {
  const std::vector<ChoiceNode>& nodes = choices.nodes();
  absl::flat_hash_map<const ir::Instruction*, int64_t> position;
  const std::vector<int64_t> last = LastUses(choices.module(), position);
  std::vector<int64_t> delta(last.size() + 1);
  for (size_t j = 0; j < nodes.size(); ++j) {
    const int64_t t = position[nodes[j].instruction];
    const int64_t bytes = choices.StrategyOf(j, chosen[nodes[j].group]).memory;
    delta[t] += bytes;
    delta[std::min<int64_t>(last[t] + 1, static_cast<int64_t>(last.size()))] -= bytes;
  }
  int64_t live = 0, peak = 0;
  for (size_t t = 0; t < last.size(); ++t) {
    live += delta[t];
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace vkspmd::spmd
