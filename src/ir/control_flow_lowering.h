// Lowers while and conditional into plain ops for the device compiler and the partitioner: a
// loop whose trip count is known is unrolled, a conditional evaluates every branch and selects.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "src/ir/module.h"

namespace vkspmd::ir {

struct ControlFlowLoweringOptions {
  // The most instructions the lowered module may hold (every unrolled iteration and every
  // branch adds its body's); a loop whose unrolling would pass it is RESOURCE_EXHAUSTED naming
  // the loop (kept with keep_unknown_loops), so that a long loop is never a compile that never
  // ends.
  int64_t max_instructions = 100'000;
  // A while whose trip count is unknown, or known but too long to unroll within
  // max_instructions, stays a while (its condition and body lowered) instead of being an error,
  // and a conditional with such a loop in a branch stays a conditional (its branches lowered;
  // if-conversion would run the loop untaken too): exec::LoopProgram runs them from the host,
  // evaluating the condition each iteration (ir/loop_split.h).
  bool keep_unknown_loops = false;
};

// Whether LowerControlFlow changes `module`: a while or conditional anywhere, or a tuple that a
// get-tuple-element reads in the entry (the device compiler keeps only the root's tuple).
bool NeedsControlFlowLowering(const Module& module);

// A copy of `module` with every while and conditional replaced by plain ops, and every
// get-tuple-element of a tuple instruction replaced by that element:
// - while: its body inlined K times, K from backend_config's known_trip_count or proved from a
//   counter (CountedLoopTripCount); the condition is not evaluated. A loop whose trip count is
//   neither is an UNIMPLEMENTED error naming it, one whose unrolling would pass max_instructions
//   a RESOURCE_EXHAUSTED one; with keep_unknown_loops either stays a while over lowered copies of
//   its condition and body. The while's sharding goes onto each iteration's state.
// - conditional: every branch inlined, the result selected leaf by leaf (a pred picks branch 0
//   when true; an index outside 0..N-1 picks the last branch, as XLA). Every op of the IR is a
//   function of its operands, so evaluating the branches not taken changes nothing but the cost.
//   With keep_unknown_loops, a conditional whose branch holds a loop kept so stays a
//   conditional over lowered copies of its branches (the host picks the branch).
// Names stay unique (an inlined name that is taken gets a .N suffix); parameters, the root's
// shape, aliases and counts are unchanged. The CPU reference evaluates the original module.
absl::StatusOr<std::unique_ptr<Module>> LowerControlFlow(
    const Module& module, const ControlFlowLoweringOptions& options = {});

}  // namespace vkspmd::ir
