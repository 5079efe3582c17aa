// Collective scheduling, a pass over a planned program: the kernels are reordered so that the
// all-reduces run in as few waves as the data dependences allow. Between two other collectives,
// every kernel that does not wait for a pending all-reduce runs first (in program order), then
// every all-reduce that is ready runs, back to back, and so on. A training step's tensor-parallel
// all-reduces and its gradients' all-reduces then meet the other devices a few times per step
// instead of once per all-reduce in the middle of the backward pass, and the kernels between two
// waves run in one submission.
#pragma once

#include "src/codegen/kernel_plan.h"

namespace vkspmd::codegen {

// Reorders plan.kernels as above. Within a wave, all-reduces with the same replica groups,
// element type and reducer are put next to each other (by their first member, then in program
// order), so the executable can run them as one bucket (exec/collective_bucket.h); every device
// of a program computes the same order, so their rendezvous still match. Other
// collectives (all-gather, reduce-scatter, ...) keep their place, and no kernel moves across
// them: hoisting an FSDP all-gather, or deferring a reduce-scatter, would keep full-size values
// alive for longer. Returns the number of waves of all-reduces. Run before donations are
// planned (they look at the final order).
int ScheduleAllReducesInWaves(ProgramPlan& plan);

}  // namespace vkspmd::codegen
