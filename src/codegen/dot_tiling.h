// How a dot kernel divides its result over workgroups (see DotTiling in kernel_plan.h): decided
// while planning, since the split of long contractions (split-K) adds a buffer and a kernel.
#pragma once

#include <cstdint>

#include "src/codegen/kernel_plan.h"
#include "src/codegen/target_info.h"
#include "src/ir/instruction.h"

namespace vkspmd::codegen {

// Result rows per workgroup (uniform operand reads) and columns per lane: 4 x 4 accumulators
// fit the sixteen 256-bit registers a CPU driver has per group of lanes. On llvmpipe every
// shape from 2 x 8 to 16 x 1 with 32 to 128 lanes measured within 10% of this one (1024^3 in
// about 230 ms); 2 x 2 and 8-lane workgroups were slower.
constexpr int64_t kRowsPerTile = 4;
constexpr int64_t kColumnsPerLane = 4;

// The tiling of `dot` with at most `max_iterations` contraction steps per invocation.
DotTiling TileDot(const ir::Instruction& dot, const TargetInfo& target, int64_t max_iterations);

// The dims of `operand` that are neither batch nor contracting dims, in order.
std::vector<int64_t> FreeDims(const ir::Instruction& operand, const std::vector<int64_t>& batch,
                              const std::vector<int64_t>& contracting);

}  // namespace vkspmd::codegen
