// Multi-output fusion, a pass over a planned program: a map kernel absorbs the map kernels (or one
// row kernel) whose results it reads at the index it computes, and stores their results too. One
// kernel then computes what several did (an optimizer's update of a parameter and both its moments;
// a chain of activations each also kept for the backward pass), reading their shared inputs once.
#pragma once

#include <cstdint>

#include "src/codegen/kernel_plan.h"
#include "src/codegen/target_info.h"

namespace vkspmd::codegen {

// Folds kernel P into a later kernel K when both are kMap kernels over the same dimensions (or P
// is a kRows kernel and K a plain kMap kernel, which then becomes a kRows kernel), K
// reads each value P stores only at K's own index (through elementwise ops), and no kernel
// between them reads what P stores. A kRows kernel K also absorbs a kMap kernel P of its
// dimensions read the same way (its row reductions may read P's values anywhere in their row),
// and a single-pass kReduction P over the trailing dims with one result per row of K, which K
// reads only inside the row it computes: P becomes K's first row reduction, stored per row where
// other kernels read it. A folded value no later kernel reads and the program does not return
// loses its buffer (it is computed inline only). Kernels stay within the target's binding limit,
// `max_inline_instructions` and `max_row_iterations` loop iterations per invocation. Returns how
// many kernels it removed. Run before donations are planned: they look at the final kernels.
int FuseProducersIntoConsumers(ProgramPlan& plan, const TargetInfo& target,
                               int64_t max_inline_instructions, int64_t max_row_iterations);

}  // namespace vkspmd::codegen
