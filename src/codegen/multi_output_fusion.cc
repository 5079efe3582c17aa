// Multi-output fusion (see multi_output_fusion.h).
#include "src/codegen/multi_output_fusion.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "src/codegen/fused_ops.h"
#include "src/codegen/kernel_reads.h"

namespace vkspmd::codegen {
namespace {

using ir::Instruction;

bool Contains(const std::vector<int>& buffers, int buffer) {
  return std::find(buffers.begin(), buffers.end(), buffer) != buffers.end();
}

class Fusion {
 public:
  Fusion(ProgramPlan& plan, const TargetInfo& target, int64_t max_inline)
      : plan_(plan), target_(target), max_inline_(max_inline), removed_(plan.kernels.size()) {
    for (const auto& [instruction, buffer] : plan.materialized) ++names_per_buffer_[buffer];
    for (size_t k = 0; k < plan.kernels.size(); ++k) {
      for (int buffer : plan.kernels[k].outputs()) writer_[buffer] = k;
    }
    returned_.insert(plan.outputs.begin(), plan.outputs.end());
  }

  int Run() {
    int removed = 0;
    std::vector<KernelPlan>& kernels = plan_.kernels;
    for (size_t k = 0; k < kernels.size(); ++k) {
      if (kernels[k].kind != KernelKind::kMap) continue;
      for (bool merged = true; merged;) {
        merged = false;
        for (int input : std::vector<int>(kernels[k].inputs)) {
          auto found = writer_.find(input);
          if (found == writer_.end()) continue;
          const size_t p = found->second;
          if (p >= k || removed_[p]) continue;
          // A row kernel's results are complete per row once its reductions ran, so a map kernel
          // reading them at its own index can compute them itself, row by row (layer norm's
          // variance and its rsqrt; softmax's sum and the division by it). Only one such
          // producer, and into a plain map kernel: the merged kernel is a row kernel.
          const bool rows = kernels[p].kind == KernelKind::kRows;
          if (kernels[k].kind != KernelKind::kMap) break;
          if (kernels[p].kind != KernelKind::kMap && !rows) continue;
          if (TryMerge(p, k)) {
            merged = true;
            ++removed;
            break;
          }
        }
      }
    }
    std::vector<KernelPlan> kept;
    for (size_t k = 0; k < kernels.size(); ++k) {
      if (!removed_[k]) kept.push_back(std::move(kernels[k]));
    }
    kernels = std::move(kept);
    return removed;
  }

 private:
  // Whether a kernel other than `p` and `k`, not removed, reads `buffer`; with `before_k`, only
  // those at or before k count.
  bool ReadByOthers(int buffer, size_t p, size_t k, bool before_k) const {
    const size_t end = before_k ? k : plan_.kernels.size();
    for (size_t j = 0; j < end; ++j) {
      if (j == p || j == k || removed_[j]) continue;
      if (Contains(plan_.kernels[j].inputs, buffer)) return true;
    }
    return false;
  }

  bool TryMerge(size_t p, size_t k) {
    KernelPlan& producer = plan_.kernels[p];
    KernelPlan& consumer = plan_.kernels[k];
    if (producer.root->shape().dimensions() != consumer.root->shape().dimensions()) return false;
    std::vector<const Instruction*> values = {producer.root};
    values.insert(values.end(), producer.also_stores.begin(), producer.also_stores.end());
    const std::vector<int> buffers = producer.outputs();
    for (int buffer : buffers) {
      // A buffer shared with a reshape reading it in place, or read before K: keep the kernel.
      if (names_per_buffer_[buffer] != 1 || ReadByOthers(buffer, p, k, /*before_k=*/true)) {
        return false;
      }
    }
    std::set<const Instruction*> here(consumer.also_stores.begin(), consumer.also_stores.end());
    here.insert(values.begin(), values.end());
    std::vector<const Instruction*> roots = {consumer.root};
    roots.insert(roots.end(), consumer.also_stores.begin(), consumer.also_stores.end());
    for (const Instruction* root : roots) {
      for (const Instruction* value : values) {
        std::set<std::pair<const Instruction*, bool>> checked;
        if (!ReadsOnlyAtOwnIndex(plan_.materialized, root, value, true, true, here, checked)) {
          return false;
        }
      }
    }
    // The merged kernel's stores: the consumer's, then the producer's that are still needed.
    std::vector<const Instruction*> stores = consumer.also_stores;
    std::vector<int> store_buffers = consumer.also_outputs;
    std::vector<const Instruction*> dropped;
    for (size_t v = 0; v < values.size(); ++v) {
      if (returned_.count(buffers[v]) || ReadByOthers(buffers[v], p, k, /*before_k=*/false)) {
        stores.push_back(values[v]);
        store_buffers.push_back(buffers[v]);
      } else {
        dropped.push_back(values[v]);
      }
    }
    KernelReads reads(plan_.materialized);
    const bool rows = producer.kind == KernelKind::kRows;
    if (rows) {
      for (const Instruction* reduce : producer.row.reductions) {
        reads.Hold(reduce);
        reads.Read(reduce->operand(0));
        reads.Read(reduce->operand(1));
      }
    }
    for (const Instruction* value : here) reads.ComputeHere(value);
    reads.Compute(consumer.root);
    for (const Instruction* value : stores) reads.Compute(value);
    if (static_cast<int64_t>(reads.computed_count()) > max_inline_) return false;
    uint64_t bindings = plan_.buffers[consumer.output].parts();
    for (int buffer : store_buffers) bindings += plan_.buffers[buffer].parts();
    for (int buffer : reads.inputs()) bindings += plan_.buffers[buffer].parts();
    if (bindings > target_.max_storage_buffers_per_stage) return false;

    consumer.inputs = reads.inputs();
    if (rows) {
      consumer.kind = KernelKind::kRows;
      consumer.row = producer.row;
      consumer.invocations = producer.invocations;
      consumer.local_size = producer.local_size;
    }
    consumer.also_stores = std::move(stores);
    consumer.also_outputs = std::move(store_buffers);
    removed_[p] = true;
    for (int buffer : consumer.also_outputs) writer_[buffer] = k;
    for (const Instruction* value : dropped) {
      writer_.erase(plan_.materialized.at(value));
      plan_.materialized.erase(value);  // Computed inline by its only reader from now on.
    }
    return true;
  }

  ProgramPlan& plan_;
  const TargetInfo& target_;
  const int64_t max_inline_;
  std::vector<bool> removed_;
  std::map<int, int> names_per_buffer_;
  std::map<int, size_t> writer_;
  std::set<int> returned_;
};

}  // namespace

int FuseProducersIntoConsumers(ProgramPlan& plan, const TargetInfo& target,
                               int64_t max_inline_instructions) {
  return Fusion(plan, target, max_inline_instructions).Run();
}

}  // namespace vkspmd::codegen
