// Row fusion planning: grows each kernel's set of absorbed values one at a time, keeping only
// sets under which every value that depends on an in-kernel reduction is read row-aligned.
#include "src/codegen/row_fusion.h"

#include <algorithm>
#include <functional>

#include "src/codegen/fused_ops.h"

namespace vkspmd::codegen {
namespace {

using ir::Instruction;
using ir::Opcode;

// How often an absorbed elementwise value may be recomputed per element (softmax's exp is
// computed twice: once for the sum, once for the output).
constexpr int64_t kMaxRecomputation = 4;

std::vector<const Instruction*> DistinctOperands(const Instruction& instruction) {
  std::vector<const Instruction*> operands;
  for (const Instruction* operand : instruction.operands()) {
    if (std::find(operands.begin(), operands.end(), operand) == operands.end()) {
      operands.push_back(operand);
    }
  }
  return operands;
}

class RowFusionPlanner {
 public:
  RowFusionPlanner(const ir::Computation& entry, std::set<const Instruction*>& materialized,
                   const std::set<const Instruction*>& outputs, uint32_t lanes,
                   int64_t max_row_iterations)
      : materialized_(materialized),
        outputs_(outputs),
        lanes_(std::max<uint32_t>(lanes, 1)),
        max_row_iterations_(max_row_iterations) {
    for (const auto& instruction : entry.instructions()) {
      order_[instruction.get()] = static_cast<int>(order_.size());
      for (const Instruction* operand : DistinctOperands(*instruction)) {
        users_[operand].push_back(instruction.get());
      }
    }
  }

  std::map<const Instruction*, RowFusion> Plan() {
    std::vector<const Instruction*> roots;
    for (const auto& [instruction, index] : order_) {
      if (materialized_.count(instruction) && IsMapKernel(*instruction)) {
        roots.push_back(instruction);
      }
    }
    // Later kernels first, so a consumer absorbs a producer before the producer would absorb
    // reductions of its own.
    std::sort(roots.begin(), roots.end(), [this](const Instruction* a, const Instruction* b) {
      return order_.at(a) > order_.at(b);
    });
    std::map<const Instruction*, RowFusion> fusions;
    for (const Instruction* root : roots) {
      if (!materialized_.count(root)) continue;  // Absorbed by a later kernel.
      RowFusion fusion = Grow(root);
      if (fusion.reductions.empty()) continue;
      for (const Instruction* absorbed : fusion.absorbed) materialized_.erase(absorbed);
      fusions[root] = std::move(fusion);
    }
    return fusions;
  }

 private:
  static bool IsMapKernel(const Instruction& instruction) {
    const Opcode opcode = instruction.opcode();
    return opcode != Opcode::kParameter && opcode != Opcode::kConstant && opcode != Opcode::kDot &&
           opcode != Opcode::kReduce && !ir::IsCollective(opcode);
  }

  RowFusion Grow(const Instruction* root) {
    RowFusion fusion;
    for (;;) {
      std::vector<const Instruction*> region = Region(root, fusion.absorbed);
      std::vector<const Instruction*> candidates;
      for (const Instruction* node : region) {
        for (const Instruction* operand : node->operands()) {
          if (IsCandidate(*operand, root, fusion) &&
              std::find(candidates.begin(), candidates.end(), operand) == candidates.end()) {
            candidates.push_back(operand);
          }
        }
      }
      std::sort(candidates.begin(), candidates.end(),
                [this](const Instruction* a, const Instruction* b) {
                  return order_.at(a) > order_.at(b);
                });
      bool grew = false;
      for (const Instruction* candidate : candidates) {
        const std::vector<const Instruction*>& users = users_[candidate];
        bool users_inside = std::all_of(users.begin(), users.end(), [&](const Instruction* user) {
          return std::find(region.begin(), region.end(), user) != region.end();
        });
        if (!users_inside) continue;
        RowFusion trial = fusion;
        trial.absorbed.insert(candidate);
        if (candidate->opcode() == Opcode::kReduce) {
          trial.rows = candidate->shape().ElementCount();
          trial.reductions.push_back(candidate);
        }
        if (!Valid(root, trial)) continue;
        fusion = std::move(trial);
        grew = true;
        break;
      }
      if (!grew) break;
    }
    std::sort(
        fusion.reductions.begin(), fusion.reductions.end(),
        [this](const Instruction* a, const Instruction* b) { return order_.at(a) < order_.at(b); });
    return fusion;
  }

  bool IsCandidate(const Instruction& operand, const Instruction* root,
                   const RowFusion& fusion) const {
    if (&operand == root || !materialized_.count(&operand) || fusion.absorbed.count(&operand) ||
        outputs_.count(&operand) ||
        (!IsMapKernel(operand) && operand.opcode() != Opcode::kReduce)) {
      return false;
    }
    if (operand.opcode() == Opcode::kReduce) {
      return ReducesTrailingDims(operand) && operand.shape().ElementCount() > 0 &&
             (fusion.reductions.empty() || operand.shape().ElementCount() == fusion.rows);
    }
    // Recomputing a shared elementwise value only pays when it saves a reduction's kernel.
    return !fusion.reductions.empty();
  }

  // The instructions the root's kernel computes: reached from the root through values without a
  // buffer of their own, or absorbed ones. Sorted from the root down (reverse topological).
  std::vector<const Instruction*> Region(const Instruction* root,
                                         const std::set<const Instruction*>& absorbed) const {
    std::set<const Instruction*> seen = {root};
    std::vector<const Instruction*> stack = {root};
    while (!stack.empty()) {
      const Instruction* node = stack.back();
      stack.pop_back();
      for (const Instruction* operand : node->operands()) {
        bool computed = absorbed.count(operand) || !materialized_.count(operand);
        if (computed && seen.insert(operand).second) stack.push_back(operand);
      }
    }
    std::vector<const Instruction*> region(seen.begin(), seen.end());
    std::sort(region.begin(), region.end(), [this](const Instruction* a, const Instruction* b) {
      return order_.at(a) > order_.at(b);
    });
    return region;
  }

  bool Valid(const Instruction* root, const RowFusion& fusion) const {
    const int64_t rows = fusion.rows;
    if (rows <= 0 || root->shape().ElementCount() % rows != 0) return false;
    std::vector<const Instruction*> region = Region(root, fusion.absorbed);
    std::map<const Instruction*, bool> aligned = {{root, true}};
    std::map<const Instruction*, int64_t> work = {{root, root->shape().ElementCount() / rows}};
    for (const Instruction* node : region) {  // Users before operands.
      for (const Instruction* operand : DistinctOperands(*node)) {
        if (!std::binary_search(region.begin(), region.end(), operand,
                                [this](const Instruction* a, const Instruction* b) {
                                  return order_.at(a) > order_.at(b);
                                })) {
          continue;
        }
        bool edge = aligned[node] && ReadsOperandInOwnRow(*node, *operand, rows);
        aligned[operand] = aligned.count(operand) ? aligned[operand] && edge : edge;
        work[operand] +=
            node->opcode() == Opcode::kReduce ? operand->shape().ElementCount() / rows : work[node];
      }
    }
    // A value depending on an in-kernel reduction must be read row-aligned.
    std::set<const Instruction*> depends;
    for (auto it = region.rbegin(); it != region.rend(); ++it) {  // Operands before users.
      const Instruction* node = *it;
      bool dependent = node->opcode() == Opcode::kReduce && fusion.absorbed.count(node);
      for (const Instruction* operand : node->operands()) dependent |= depends.count(operand) > 0;
      if (!dependent) continue;
      depends.insert(node);
      if (!aligned[node]) return false;
    }
    int64_t iterations = (root->shape().ElementCount() / rows + lanes_ - 1) / lanes_;
    for (const Instruction* reduction : fusion.reductions) {
      iterations += (reduction->operand(0)->shape().ElementCount() / rows + lanes_ - 1) / lanes_;
    }
    if (iterations > max_row_iterations_) return false;
    for (const Instruction* absorbed : fusion.absorbed) {
      if (absorbed->opcode() == Opcode::kReduce) continue;
      if (work[absorbed] > kMaxRecomputation * (absorbed->shape().ElementCount() / rows)) {
        return false;
      }
    }
    return true;
  }

  std::set<const Instruction*>& materialized_;
  const std::set<const Instruction*>& outputs_;
  const uint32_t lanes_;
  const int64_t max_row_iterations_;
  std::map<const Instruction*, int> order_;
  std::map<const Instruction*, std::vector<const Instruction*>> users_;
};

}  // namespace

bool ReducesTrailingDims(const ir::Instruction& reduce) {
  if (reduce.opcode() != Opcode::kReduce) return false;
  std::vector<int64_t> reduced = reduce.attributes().dimensions;
  std::sort(reduced.begin(), reduced.end());
  const int64_t rank = reduce.operand(0)->shape().rank();
  for (size_t k = 0; k < reduced.size(); ++k) {
    if (reduced[k] != rank - static_cast<int64_t>(reduced.size()) + static_cast<int64_t>(k)) {
      return false;
    }
  }
  return true;
}

bool ReadsOperandInOwnRow(const ir::Instruction& consumer, const ir::Instruction& operand,
                          int64_t rows) {
  if (rows == 1) return true;
  const int64_t consumer_count = consumer.shape().ElementCount();
  const int64_t operand_count = operand.shape().ElementCount();
  if (consumer_count % rows != 0 || operand_count % rows != 0) return false;
  const Opcode opcode = consumer.opcode();
  if (IsFusedElementwise(opcode)) {
    return operand.shape().dimensions() == consumer.shape().dimensions();
  }
  switch (opcode) {
    case Opcode::kReshape:
      return operand_count == consumer_count;
    case Opcode::kBroadcast: {
      const std::vector<int64_t>& mapped = consumer.attributes().dimensions;
      const std::vector<int64_t>& from = operand.shape().dimensions();
      const std::vector<int64_t>& to = consumer.shape().dimensions();
      for (size_t k = 0; k < mapped.size(); ++k) {
        if (mapped[k] != static_cast<int64_t>(k) || from[k] != to[k]) return false;
      }
      return true;
    }
    case Opcode::kReduce:
      return ReducesTrailingDims(consumer) && consumer_count == rows;
    default:
      return false;
  }
}

std::map<const ir::Instruction*, RowFusion> PlanRowFusions(
    const ir::Computation& entry, std::set<const ir::Instruction*>& materialized,
    const std::set<const ir::Instruction*>& outputs, uint32_t lanes, int64_t max_row_iterations) {
  return RowFusionPlanner(entry, materialized, outputs, lanes, max_row_iterations).Plan();
}

}  // namespace vkspmd::codegen
