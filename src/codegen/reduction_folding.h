// Reduction folding, a pass over a planned program: a short reduce whose only reader is one map
// kernel of the reduce's shape, reading it only at the index it computes, is computed by that
// kernel (each invocation first reduces the elements of its own output element) instead of by a
// kernel of its own writing a buffer. An optimizer's update of a bias and the bias's gradient
// (a sum over the batch) become one kernel.
#pragma once

#include <cstdint>

#include "src/codegen/kernel_plan.h"
#include "src/codegen/target_info.h"

namespace vkspmd::codegen {

// Folds final single-pass reductions of 32-bit values (f32, s32, u32) combining at most
// `max_elements` elements each (over all reductions one kernel holds) into their reader, within
// the target's binding limit. Returns
// how many kernels it removed. Run after multi-output fusion, before donations are planned.
int FoldReductionsIntoReaders(ProgramPlan& plan, const TargetInfo& target, int64_t max_elements);

}  // namespace vkspmd::codegen
