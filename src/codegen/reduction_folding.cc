// Reduction folding (see reduction_folding.h).
#include "src/codegen/reduction_folding.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "src/codegen/fused_ops.h"
#include "src/codegen/kernel_reads.h"

namespace vkspmd::codegen {
namespace {

using ir::Instruction;

bool Is32Bit(ir::DType type) {
  return type == ir::DType::kF32 || type == ir::DType::kS32 || type == ir::DType::kU32;
}

int64_t Elements(const Instruction& reduce) {
  return reduce.operand(0)->shape().ElementCount() /
         std::max<int64_t>(reduce.shape().ElementCount(), 1);
}

}  // namespace

int FoldReductionsIntoReaders(ProgramPlan& plan, const TargetInfo& target, int64_t max_elements) {
  std::vector<KernelPlan>& kernels = plan.kernels;
  const std::set<int> returned(plan.outputs.begin(), plan.outputs.end());
  std::vector<bool> removed(kernels.size(), false);
  int folded = 0;
  for (size_t r = 0; r < kernels.size(); ++r) {
    const KernelPlan& reduction = kernels[r];
    if (reduction.kind != KernelKind::kReduction || !reduction.reduction.final() ||
        reduction.reduction.partials >= 0 || reduction.root->opcode() != ir::Opcode::kReduce) {
      continue;
    }
    const Instruction* reduce = reduction.root;
    if (!Is32Bit(reduce->shape().dtype()) || returned.count(reduction.output)) continue;
    // Its one reader.
    size_t reader = kernels.size();
    int readers = 0;
    for (size_t k = r + 1; k < kernels.size(); ++k) {
      const std::vector<int>& inputs = kernels[k].inputs;
      if (!removed[k] && std::count(inputs.begin(), inputs.end(), reduction.output)) {
        reader = k;
        ++readers;
      }
    }
    if (readers != 1) continue;
    KernelPlan& kernel = kernels[reader];
    if (kernel.kind != KernelKind::kMap ||
        kernel.root->shape().dimensions() != reduce->shape().dimensions()) {
      continue;
    }
    int64_t elements = Elements(*reduce);
    for (const Instruction* held : kernel.held_reductions) elements += Elements(*held);
    if (elements > max_elements) continue;
    std::set<const Instruction*> here(kernel.also_stores.begin(), kernel.also_stores.end());
    std::vector<const Instruction*> roots = {kernel.root};
    roots.insert(roots.end(), kernel.also_stores.begin(), kernel.also_stores.end());
    bool in_place = true;
    for (const Instruction* root : roots) {
      std::set<std::pair<const Instruction*, bool>> checked;
      in_place = in_place &&
                 ReadsOnlyAtOwnIndex(plan.materialized, root, reduce, true, true, here, checked);
    }
    if (!in_place) continue;
    // The reader now reads what the reduce read (the same buffers, or fewer: none is written
    // between the two kernels, as every buffer is written once and before its readers).
    std::vector<const Instruction*> held = kernel.held_reductions;
    held.push_back(reduce);
    plan.materialized.erase(reduce);
    KernelReads reads(plan.materialized);
    for (const Instruction* value : kernel.also_stores) reads.ComputeHere(value);
    for (const Instruction* value : held) {
      reads.Hold(value);
      reads.Read(value->operand(0));
      reads.Read(value->operand(1));
    }
    reads.Compute(kernel.root);
    for (const Instruction* value : kernel.also_stores) reads.Compute(value);
    uint64_t bindings = 0;
    for (int buffer : kernel.outputs()) bindings += plan.buffers[buffer].parts();
    for (int buffer : reads.inputs()) bindings += plan.buffers[buffer].parts();
    if (bindings > target.max_storage_buffers_per_stage) {
      plan.materialized[reduce] = reduction.output;
      continue;
    }
    kernel.inputs = reads.inputs();
    kernel.held_reductions = std::move(held);
    removed[r] = true;
    ++folded;
  }
  std::vector<KernelPlan> kept;
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (!removed[k]) kept.push_back(std::move(kernels[k]));
  }
  kernels = std::move(kept);
  return folded;
}

}  // namespace vkspmd::codegen
