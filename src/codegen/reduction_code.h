// GLSL for reductions: how a reducer combines two values, and the loop in which the lanes of a
// workgroup split one reduction (strided over the elements, then combined across the subgroup with
// shuffles, then across subgroups through shared memory when a workgroup holds several).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "src/codegen/kernel_writer.h"
#include "src/ir/instruction.h"

namespace vkspmd::codegen {

// How `reduce`'s reducer combines `a` and `b`, as a GLSL expression; UNIMPLEMENTED naming the
// reduce for reducers other than add, multiply, maximum, minimum, and, or.
absl::StatusOr<std::string> CombinerCode(const ir::Instruction& reduce);

struct LaneReduction {
  std::string type;     // GLSL type of the values.
  std::string element;  // The element at index `r` (GLSL using `r`).
  std::string begin;    // First r (GLSL).
  std::string end;      // One past the last r (GLSL).
  std::string combine;  // Of `a` and `b`.
  std::string init;     // Combined once into the result; empty for none (then begin < end).
  std::string result;   // Variable assigned the result in every lane.
  uint32_t lanes = 1;   // The workgroup's size; lane = gl_LocalInvocationID.x.
  // ProgramPlan::subgroup_size: with lanes at most this, the workgroup is one subgroup and the
  // shuffles alone combine the lanes (no shared memory or barriers, which make CPU drivers run
  // the whole kernel as coroutines).
  uint32_t subgroup_size = 0;
};

// The code of one reduction inside main(). With lanes > 1 it declares shared memory and
// requires subgroup operations through `writer`; every lane of the workgroup must run it.
std::string LaneReductionCode(const LaneReduction& reduction, KernelWriter& writer);

}  // namespace vkspmd::codegen
