// Choosing the values a row kernel keeps between its loops (see row_cache.h).
#include "src/codegen/row_cache.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "src/codegen/fused_ops.h"

namespace vkspmd::codegen {
namespace {

using ir::Instruction;

// Where one loop of the kernel computes values inline, as KernelWriter::Value does: from its
// entries down to values read from buffers, the row reductions' variables, and kept values an
// earlier loop computed.
class LoopWalk {
 public:
  LoopWalk(const ProgramPlan& plan, const KernelPlan& kernel,
           const std::map<const Instruction*, size_t>& kept, size_t loop)
      : plan_(plan), kept_(kept), loop_(loop) {
    here_.insert(kernel.also_stores.begin(), kernel.also_stores.end());
    held_.insert(kernel.row.reductions.begin(), kernel.row.reductions.end());
  }

  void Walk(const Instruction* node, bool own_index, bool is_root) {
    if (held_.count(node)) return;
    if (!is_root && !here_.count(node) && plan_.materialized.count(node)) return;  // A buffer.
    if (!seen_.insert({node, own_index}).second) return;
    reached_.insert(node);
    if (!own_index) elsewhere_.insert(node);
    if (auto kept = kept_.find(node); kept != kept_.end() && kept->second < loop_) return;
    for (int64_t k = 0; k < node->operand_count(); ++k) {
      Walk(node->operand(k), own_index && ReadsOperandAtOwnIndex(*node, k), false);
    }
  }
  bool Reached(const Instruction* node) const { return reached_.count(node) > 0; }
  bool ReachedElsewhere(const Instruction* node) const { return elsewhere_.count(node) > 0; }

 private:
  const ProgramPlan& plan_;
  const std::map<const Instruction*, size_t>& kept_;  // Value -> its first loop.
  const size_t loop_;
  std::set<const Instruction*> here_, held_, reached_, elsewhere_;
  std::set<std::pair<const Instruction*, bool>> seen_;
};

// Whether the row kernel stores `stored` once per row, apart from its per-element results.
bool OnePerRow(const KernelPlan& kernel, const Instruction* stored) {
  return stored->shape().ElementCount() == kernel.row.rows &&
         kernel.root->shape().ElementCount() != kernel.row.rows;
}

// Operands before users, over everything the kernel's loops may compute.
void PostOrder(const Instruction* node, std::set<const Instruction*>& seen,
               std::vector<const Instruction*>& order) {
  if (!seen.insert(node).second) return;
  for (const Instruction* operand : node->operands()) PostOrder(operand, seen, order);
  order.push_back(node);
}

}  // namespace

std::vector<RowCache> PlanRowCaches(const ProgramPlan& plan, const KernelPlan& kernel,
                                    int64_t max_slots) {
  const RowPlan& row = kernel.row;
  const int64_t lanes = std::max<int64_t>(row.lanes, 1);
  if (kernel.kind != KernelKind::kRows || row.rows <= 0 || max_slots <= 0) return {};
  const size_t loops = row.reductions.size() + 1;
  const std::set<const Instruction*> held(row.reductions.begin(), row.reductions.end());
  // Walks loop `loop` with `kept` as chosen so far.
  const auto walk = [&](size_t loop, const std::map<const Instruction*, size_t>& kept) {
    LoopWalk loop_walk(plan, kernel, kept, loop);
    if (loop < row.reductions.size()) {
      const Instruction* reduce = row.reductions[loop];
      loop_walk.Walk(reduce->operand(0), true, false);
      loop_walk.Walk(reduce->operand(1), false, false);  // The init, read at 0.
    } else {
      loop_walk.Walk(kernel.root, true, true);
      for (const Instruction* stored : kernel.also_stores) {
        // Values with one element per row are stored once per row, outside the loop, where no
        // kept array has this element's slot: what they read counts as read elsewhere.
        if (!held.count(stored)) loop_walk.Walk(stored, !OnePerRow(kernel, stored), false);
      }
    }
    return loop_walk;
  };
  std::set<const Instruction*> seen;
  std::vector<const Instruction*> order;
  for (const Instruction* reduce : row.reductions) PostOrder(reduce->operand(0), seen, order);
  PostOrder(kernel.root, seen, order);
  for (const Instruction* stored : kernel.also_stores) PostOrder(stored, seen, order);

  std::map<const Instruction*, size_t> kept;
  std::vector<RowCache> caches;
  int64_t used = 0;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {  // Users first.
    const Instruction* value = *it;
    if (held.count(value) || value == kernel.root || !IsFusedElementwise(value->opcode()) ||
        value->shape().IsTuple() || value->shape().ElementCount() % row.rows != 0) {
      continue;
    }
    std::vector<size_t> reading;
    bool everywhere_own = true;
    for (size_t loop = 0; loop < loops && everywhere_own; ++loop) {
      const LoopWalk loop_walk = walk(loop, kept);
      if (!loop_walk.Reached(value)) continue;
      everywhere_own = !loop_walk.ReachedElsewhere(value);
      reading.push_back(loop);
    }
    if (!everywhere_own || reading.size() < 2) continue;
    const int64_t slots = (value->shape().ElementCount() / row.rows + lanes - 1) / lanes;
    if (used + slots > max_slots) continue;
    used += slots;
    kept[value] = reading[0];
    caches.push_back({value, slots, reading});
  }
  return caches;
}

}  // namespace vkspmd::codegen
