// Planning, then writing (see program_plan.h).
#include "src/codegen/program_plan.h"

#include "src/base/status_macros.h"
#include "src/codegen/planner.h"
#include "src/codegen/program_writer.h"

namespace vkspmd::codegen {

absl::StatusOr<ProgramPlan> PlanProgram(const ir::Module& module, const TargetInfo& target,
                                        DeviceIds ids) {
  VKSPMD_ASSIGN_OR_RETURN(ProgramPlan plan, PlanKernels(module, target, ids));
  VKSPMD_RETURN_IF_ERROR(WriteKernels(plan));
  return plan;
}

}  // namespace vkspmd::codegen
