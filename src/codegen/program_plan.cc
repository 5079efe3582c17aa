// Planning, then writing (see program_plan.h).
#include "src/codegen/program_plan.h"

#include "src/base/status_macros.h"
#include "src/codegen/planner.h"
#include "src/codegen/program_writer.h"
#include "src/codegen/sort_code.h"
#include "src/ir/bitcast_expansion.h"
#include "src/ir/control_flow_lowering.h"
#include "src/ir/rng_expansion.h"
#include "src/ir/sort_expansion.h"

namespace vkspmd::codegen {

absl::StatusOr<ProgramPlan> PlanProgram(const ir::Module& module, const TargetInfo& target,
                                        DeviceIds ids) {
  // The device programs have no loops or branches of their own: control flow is unrolled and
  // if-converted first. Nor is there a random-number kernel: rng-bit-generator becomes Philox
  // written out in integer ops, which fuse into one kernel.
  std::shared_ptr<const ir::Module> lowered;
  if (ir::NeedsControlFlowLowering(module)) {
    VKSPMD_ASSIGN_OR_RETURN(lowered, ir::LowerControlFlow(module));
  }
  if (ir::HasRngBitGenerator(lowered != nullptr ? *lowered : module)) {
    VKSPMD_ASSIGN_OR_RETURN(lowered,
                            ir::ExpandRngBitGenerators(lowered != nullptr ? *lowered : module));
  }
  // A bitcast-convert that changes the element width is not elementwise: shifts and ors of
  // same-width bitcasts are, and fuse.
  if (ir::HasWidthChangingBitcast(lowered != nullptr ? *lowered : module)) {
    VKSPMD_ASSIGN_OR_RETURN(
        lowered, ir::ExpandWidthChangingBitcasts(lowered != nullptr ? *lowered : module));
  }
  // Nor a kernel for long sorts: rows longer than the ranking kernel takes go through a bitonic
  // network of plain ops (log2(P) (log2(P) + 1) / 2 stages for rows padded to P).
  if (ir::HasLongSort(lowered != nullptr ? *lowered : module, kMaxSortRow)) {
    VKSPMD_ASSIGN_OR_RETURN(
        lowered, ir::ExpandLongSorts(lowered != nullptr ? *lowered : module, kMaxSortRow));
  }
  VKSPMD_ASSIGN_OR_RETURN(ProgramPlan plan,
                          PlanKernels(lowered != nullptr ? *lowered : module, target, ids));
  plan.lowered_module = std::move(lowered);
  VKSPMD_RETURN_IF_ERROR(WriteKernels(plan));
  return plan;
}

}  // namespace vkspmd::codegen
