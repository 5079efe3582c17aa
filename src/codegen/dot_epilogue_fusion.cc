// Dot epilogue fusion (see dot_epilogue_fusion.h).
#include "src/codegen/dot_epilogue_fusion.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "src/codegen/fused_ops.h"
#include "src/codegen/kernel_merging.h"
#include "src/codegen/kernel_reads.h"

namespace vkspmd::codegen {
namespace {

using ir::Instruction;

class EpilogueFusion : KernelMerging {
 public:
  EpilogueFusion(ProgramPlan& plan, const TargetInfo& target, int64_t max_inline)
      : KernelMerging(plan), target_(target), max_inline_(max_inline) {}

  int Run() {
    int removed = 0;
    std::vector<KernelPlan>& kernels = plan_.kernels;
    for (size_t k = 0; k < kernels.size(); ++k) {
      const KernelPlan& consumer = kernels[k];
      if (consumer.kind != KernelKind::kMap || !consumer.parts.empty() ||
          !consumer.held_reductions.empty()) {
        continue;
      }
      for (int input : consumer.inputs) {
        auto found = writer_.find(input);
        if (found == writer_.end() || found->second >= k || removed_[found->second]) continue;
        if (TryFuse(found->second, k, input)) {
          ++removed;
          break;
        }
      }
    }
    DropRemoved();
    return removed;
  }

 private:
  // The dot kernel P (writing `buffer`, the dot's) takes in the map kernel K as its epilogue.
  bool TryFuse(size_t p, size_t k, int buffer) {
    const KernelPlan& producer = plan_.kernels[p];
    const KernelPlan& consumer = plan_.kernels[k];
    if (producer.kind != KernelKind::kDot || producer.epilogue != nullptr ||
        producer.output != buffer || producer.dot.chunks != 1 || !producer.also_stores.empty()) {
      return false;
    }
    const Instruction* dot = producer.root;
    if (consumer.root->shape().ElementCount() != dot->shape().ElementCount()) return false;
    const bool keep_dot = returned_.count(buffer) || ReadByOthers(buffer, p, k, false);
    // Reshapes reading the dot's buffer in place (the planner's aliases: a value read by several
    // ops, as the GELU backward reads its [8,32,256] view of the [256,256] dot twice) read it at
    // the same linear index: K may compute them from the dot's variable instead, where nothing
    // else reads that buffer, and they lose it with the dot.
    std::vector<const Instruction*> aliases;
    auto names = names_per_buffer_.find(buffer);
    for (const auto& [value, id] : plan_.materialized) {
      if (names == names_per_buffer_.end() || names->second == 1) break;  // The dot's alone.
      if (id != buffer || value == dot) continue;
      if (value->opcode() != ir::Opcode::kReshape || keep_dot) return false;
      aliases.push_back(value);
    }
    if (aliases.empty() ? !BuffersMovable({buffer}, p, k)
                        : ReadByOthers(buffer, p, k, /*before_k=*/true)) {
      return false;
    }
    std::map<const Instruction*, int> without_aliases;
    if (!aliases.empty()) {
      without_aliases = plan_.materialized;
      for (const Instruction* alias : aliases) without_aliases.erase(alias);
    }
    const std::map<const Instruction*, int>& materialized =
        aliases.empty() ? plan_.materialized : without_aliases;
    // Every value K computes reads the dot only at its own index.
    const std::set<const Instruction*> here(consumer.also_stores.begin(),
                                            consumer.also_stores.end());
    std::vector<const Instruction*> roots = {consumer.root};
    roots.insert(roots.end(), consumer.also_stores.begin(), consumer.also_stores.end());
    for (const Instruction* root : roots) {
      std::set<std::pair<const Instruction*, bool>> checked;
      if (!ReadsOnlyAtOwnIndex(materialized, root, dot, true, true, here, checked)) {
        return false;
      }
    }
    // The merged kernel's stores: K's, then the dot where others still read it.
    std::vector<const Instruction*> stores = consumer.also_stores;
    std::vector<int> store_buffers = consumer.also_outputs;
    if (keep_dot) {
      stores.push_back(dot);
      store_buffers.push_back(buffer);
    }
    KernelReads reads(materialized);
    reads.Read(producer.dot_operands.lhs.value);
    reads.Read(producer.dot_operands.rhs.value);
    reads.ComputeHere(dot);
    reads.Hold(dot);  // The epilogue's variable, not a buffer.
    for (const Instruction* value : here) reads.ComputeHere(value);
    reads.Compute(consumer.root);
    for (const Instruction* value : consumer.also_stores) reads.Compute(value);
    if (static_cast<int64_t>(reads.computed_count()) > max_inline_) return false;
    uint64_t bindings = plan_.buffers[consumer.output].parts();
    for (int stored : store_buffers) bindings += plan_.buffers[stored].parts();
    for (int input : reads.inputs()) bindings += plan_.buffers[input].parts();
    if (bindings > target_.max_storage_buffers_per_stage) return false;

    KernelPlan merged = std::move(plan_.kernels[p]);
    merged.epilogue = consumer.root;
    merged.output = consumer.output;
    merged.also_stores = std::move(stores);
    merged.also_outputs = std::move(store_buffers);
    merged.inputs = reads.inputs();
    plan_.kernels[k] = std::move(merged);
    removed_[p] = true;
    for (int written : plan_.kernels[k].outputs()) writer_[written] = k;
    if (!keep_dot) {
      writer_.erase(buffer);
      plan_.materialized.erase(dot);  // Only the epilogue's variable holds it now.
      for (const Instruction* alias : aliases) plan_.materialized.erase(alias);
    }
    return true;
  }

  const TargetInfo& target_;
  const int64_t max_inline_;
};

}  // namespace

int FuseDotEpilogues(ProgramPlan& plan, const TargetInfo& target, int64_t max_inline_instructions) {
  return EpilogueFusion(plan, target, max_inline_instructions).Run();
}

bool IsDotEpilogue(const ir::Instruction& value,
                   const std::function<bool(const ir::Instruction*)>& in_buffer) {
  // The planner asks this of every inline elementwise value, so the walk down to the buffers is
  // bounded: a long chain of inline values (100,000 traced ops) would otherwise be walked from
  // each of its links (quadratic) and, recursively, overflow the stack. An epilogue bigger than
  // this is not worth a dot kernel's registers anyway.
  constexpr size_t kMaxVisited = 256;
  bool reads_a_dot = false;
  std::set<std::pair<const Instruction*, bool>> checked;
  std::vector<std::pair<const Instruction*, bool>> pending = {{&value, true}};
  while (!pending.empty()) {
    const auto [node, same_index] = pending.back();
    pending.pop_back();
    if (node != &value && in_buffer(node)) {
      if (node->opcode() != ir::Opcode::kDot) continue;
      reads_a_dot = true;
      if (!same_index || node->shape().ElementCount() != value.shape().ElementCount()) {
        return false;
      }
      continue;
    }
    if (!checked.insert({node, same_index}).second) continue;
    if (checked.size() > kMaxVisited) return false;
    for (int64_t k = 0; k < node->operand_count(); ++k) {
      pending.push_back({node->operand(k), same_index && ReadsOperandAtOwnIndex(*node, k)});
    }
  }
  return reads_a_dot;
}

}  // namespace vkspmd::codegen
