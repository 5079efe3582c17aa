// Enumerating an instruction's strategies from its factor rule and costing each.
#include "src/spmd/auto_sharding_strategies.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace vkspmd::spmd {
namespace {

// The op's iteration space: the product of its factors (a dot's 2·M·N·K counts the multiply and
// the add), the work a device does when no factor is split.
double Work(const ir::Instruction& instruction, const OpRule& rule) {
  double work = instruction.opcode() == ir::Opcode::kDot ? 2.0 : 1.0;
  for (const Factor& factor : rule.factors) work *= static_cast<double>(factor.size);
  return work;
}

// Dispatches the op costs on its own: elementwise chains fuse into the kernel of a neighbour or
// into one kernel per chain, slices and transposes into their consumers' kernels, and leaves,
// layout-only ops (reshape, broadcast) and annotations (custom-call Sharding) make none.
double Dispatches(const ir::Instruction& instruction) {
  const ir::Opcode opcode = instruction.opcode();
  if (ir::IsElementwiseUnary(opcode) || ir::IsElementwiseBinary(opcode)) return 0;
  switch (opcode) {
    case ir::Opcode::kParameter:
    case ir::Opcode::kConstant:
    case ir::Opcode::kIota:
    case ir::Opcode::kBroadcast:
    case ir::Opcode::kReshape:
    case ir::Opcode::kGetTupleElement:
    case ir::Opcode::kTuple:
    case ir::Opcode::kCompare:
    case ir::Opcode::kSelect:
    case ir::Opcode::kClamp:
    case ir::Opcode::kConvert:
    case ir::Opcode::kSlice:
    case ir::Opcode::kTranspose:
    case ir::Opcode::kCustomCall:
      return 0;
    default:
      return 1;
  }
}

// Fills in a strategy's shardings and costs from its factor axes.
// The runtime's largest bucket member (exec::kMaxBucketMemberBytes): larger all-reduces run alone.
constexpr int64_t kMaxBucketedBytes = 1 << 20;

Strategy Costed(const ir::Instruction& instruction, const OpRule& rule, FactorAxes factors,
                const Mesh& mesh, const CostModel& model, bool late) {
  Strategy strategy;
  strategy.factors = std::move(factors);
  strategy.result = ProjectToTensor(rule, rule.result_dims[0], strategy.factors, mesh);
  for (const DimFactors& dims : rule.operand_dims) {
    strategy.operands.push_back(ProjectToTensor(rule, dims, strategy.factors, mesh));
  }
  int64_t split = 1;
  for (const std::vector<int64_t>& axes : strategy.factors) split *= mesh.SizeOf(axes);
  const int64_t result_bytes =
      ByteSize(instruction.shape()) / std::max<int64_t>(1, strategy.result.NumTiles(mesh));
  // Bytes through memory: a kernel reads its operands' shards and writes its result's. A fused
  // op moves none of its own: its chain reads and writes once, in registers between. (Charging
  // each elementwise op its result made sharding AdamW's dozen ops per parameter look worth 8 ms
  // on the transformer's 2x2 step, a plan 28 ms slower in practice than data parallelism.)
  const double dispatches = Dispatches(instruction);
  double bytes = dispatches > 0 ? static_cast<double>(result_bytes) : 0.0;
  for (size_t m = 0; m < rule.operands.size() && dispatches > 0; ++m) {
    const ir::Shape& whole = rule.operands[m].instruction->shape();
    const ir::Shape& shape =
        whole.IsTuple() ? whole.tuple_elements().at(rule.operands[m].leaf) : whole;
    bytes += static_cast<double>(ByteSize(shape)) /
             static_cast<double>(std::max<int64_t>(1, strategy.operands[m].NumTiles(mesh)));
  }
  // A dot's work is flops; every other op's is elements at the (measured) elementwise rate.
  const double work = Work(instruction, rule) / static_cast<double>(split);
  const bool dot = instruction.opcode() == ir::Opcode::kDot;
  strategy.compute = model.Kernel(dot ? work : 0, bytes, dispatches, dot ? 0 : work);
  strategy.memory = result_bytes;
  for (size_t f = 0; f < rule.factors.size(); ++f) {
    if (rule.factors[f].kind != FactorKind::kReduction) continue;
    for (int64_t axis : strategy.factors[f]) {
      strategy.communication += model.Collective(CollectiveKind::kAllReduce, axis, result_bytes,
                                                 mesh, late && result_bytes <= kMaxBucketedBytes);
    }
  }
  return strategy;
}

bool Valid(const OpRule& rule, const FactorAxes& factors, const Mesh& mesh) {
  for (size_t f = 0; f < factors.size(); ++f) {
    if (factors[f].empty()) continue;
    if (NeedsWhole(rule.factors[f].kind)) return false;
    if (rule.factors[f].size % mesh.SizeOf(factors[f]) != 0) return false;
  }
  return MakeRepresentable(rule, factors, mesh) == factors;
}

}  // namespace

bool Fuses(const ir::Instruction& instruction) { return Dispatches(instruction) == 0; }

std::vector<Strategy> EnumerateStrategies(const ir::Instruction& instruction, const OpRule& rule,
                                          const Mesh& mesh, const CostModel& model, bool late) {
  const int64_t axes = mesh.axis_count();
  const int64_t choices = static_cast<int64_t>(rule.factors.size()) + 1;  // a factor, or none
  int64_t combinations = 1;
  for (int64_t a = 0; a < axes; ++a) combinations *= choices;
  // Keyed by the shardings, so that assignments differing only in how they split factors the
  // tensors do not show (none here, but reshape rules may) stay one strategy: the cheapest.
  std::map<std::tuple<std::string, std::vector<std::string>>, Strategy> distinct;
  for (int64_t code = 0; code < combinations; ++code) {
    FactorAxes factors(rule.factors.size());
    int64_t rest = code;
    for (int64_t a = 0; a < axes; ++a) {
      const int64_t choice = rest % choices;
      rest /= choices;
      if (choice > 0) factors[choice - 1].push_back(a);  // axes ascending: mesh-major first
    }
    if (!Valid(rule, factors, mesh)) continue;
    Strategy strategy = Costed(instruction, rule, std::move(factors), mesh, model, late);
    std::vector<std::string> operands;
    for (const AxisSharding& operand : strategy.operands)
      operands.push_back(operand.ToString(mesh));
    auto key = std::make_tuple(strategy.result.ToString(mesh), std::move(operands));
    auto found = distinct.find(key);
    const double cost = strategy.compute + strategy.communication;
    if (found == distinct.end()) {
      distinct.emplace(std::move(key), std::move(strategy));
    } else if (cost < found->second.compute + found->second.communication) {
      found->second = std::move(strategy);
    }
  }
  std::vector<Strategy> strategies;
  for (auto& [key, strategy] : distinct) strategies.push_back(std::move(strategy));
  return strategies;
}

Strategy StrategyFor(const ir::Instruction& instruction, const OpRule& rule,
                     const std::vector<Strategy>& strategies, const AxisSharding& result,
                     const Mesh& mesh, const CostModel& model, bool late) {
  const Strategy* best = nullptr;
  for (const Strategy& strategy : strategies) {
    if (strategy.result != result) continue;
    if (best == nullptr ||
        strategy.compute + strategy.communication < best->compute + best->communication) {
      best = &strategy;
    }
  }
  if (best != nullptr) return *best;
  Strategy projected = Costed(
      instruction, rule,
      MakeRepresentable(rule, ProjectToFactors(rule, rule.result_dims[0], result, mesh), mesh),
      mesh, model, late);
  // The value keeps the annotation even where the factors cannot carry all of it (an uneven
  // split of a compound dim): the partitioner reshards what the op produces.
  projected.result = result;
  projected.memory = ByteSize(instruction.shape()) / std::max<int64_t>(1, result.NumTiles(mesh));
  return projected;
}

}  // namespace vkspmd::spmd
