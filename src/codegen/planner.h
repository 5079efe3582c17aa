// Planning: which instructions of a single-device module get buffers, and the kernels that fill
// them (what each computes, the buffers it binds, its workgroups), with no GLSL written.
// Elementwise and index-mapping ops (broadcast, transpose, slice, pad, concatenate, reverse,
// reshape, dynamic-slice, dynamic-update-slice, iota, convert, select, ...) fuse into the kernel of
// their consumer; dot and reduce get kernels of their own that absorb their operands' producers.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "src/codegen/kernel_plan.h"
#include "src/codegen/target_info.h"
#include "src/ir/module.h"

namespace vkspmd::codegen {

// The most elements one invocation of a reduce or dot kernel combines; longer reductions are
// split into passes, which keeps every invocation far below llvmpipe's 65,535-iteration limit.
constexpr int64_t kMaxElementsPerInvocation = 4096;
// The most instructions one kernel computes inline: longer chains get buffers at that interval.
constexpr int64_t kMaxFusedInstructions = 128;

// The plan with every kernel's glsl and push_constants still empty (WriteKernels fills them).
// UNIMPLEMENTED naming the instruction for ops or types the device compiler does not handle yet,
// and for kernels or buffers beyond the target's limits.
absl::StatusOr<ProgramPlan> PlanKernels(const ir::Module& module, const TargetInfo& target,
                                        DeviceIds ids = {});

}  // namespace vkspmd::codegen
