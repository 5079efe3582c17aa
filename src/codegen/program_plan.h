// Compiles a single-device ir::Module into a device-independent plan: the buffers it needs
// (parameters, constants, materialized intermediates) and the GLSL compute kernels that fill them.
// Planning (planner.h) decides buffers and kernels; writing (program_writer.h) then adds each
// kernel's GLSL. This is the entry src/exec calls.
#pragma once

#include "absl/status/statusor.h"
#include "src/codegen/kernel_plan.h"
#include "src/codegen/target_info.h"
#include "src/ir/module.h"

namespace vkspmd::codegen {

// UNIMPLEMENTED naming the instruction for ops or types the device compiler does not handle yet.
absl::StatusOr<ProgramPlan> PlanProgram(const ir::Module& module, const TargetInfo& target,
                                        DeviceIds ids = {});

}  // namespace vkspmd::codegen
