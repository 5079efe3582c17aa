// Writing: each kernel's GLSL and push constants, from a plan that planning (planner.h) made.
// Writing follows the plan (the buffers each kernel binds, its workgroups) and never changes it.
#pragma once

#include "absl/status/status.h"
#include "src/codegen/kernel_plan.h"

namespace vkspmd::codegen {

// Fills glsl and push_constants of every kernel but collectives. UNIMPLEMENTED naming the
// instruction for ops the kernels cannot compute (f64 transcendentals, dot of pred, ...).
absl::Status WriteKernels(ProgramPlan& plan);

}  // namespace vkspmd::codegen
