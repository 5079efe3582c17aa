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
  // When > 0, the lane's loop is written out one iteration per slot (row caches, row_cache.h):
  // r = lane + j * lanes for j < slots (begin is 0), r < `length`, each iteration setting the
  // private row_slot to j first. The elements are combined in the same order as by the loop.
  int64_t slots = 0;
  int64_t length = 0;
};

// Iterations first .. slots-1 of a loop over a lane's elements of a row written out, each
// setting row_slot to its j and running `body` (GLSL using `r`) where r = lane + j * lanes is
// below `length`.
std::string UnrolledRowLoop(int64_t first, int64_t slots, int64_t length, uint32_t lanes,
                            const std::string& body);

// The code of one reduction inside main(). With lanes > 1 it declares shared memory and
// requires subgroup operations through `writer`; every lane of the workgroup must run it.
std::string LaneReductionCode(const LaneReduction& reduction, KernelWriter& writer);

}  // namespace vkspmd::codegen
