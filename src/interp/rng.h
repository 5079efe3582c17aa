// rng-bit-generator for the reference evaluator: Philox4x32-10 or Threefry-2x32 keyed by the u64
// state, so the same state gives the same bits on any mesh.
#pragma once

#include "absl/status/statusor.h"
#include "src/ir/instruction.h"

namespace vkspmd::interp {

// Returns (new state, bits). rng_philox and rng_default: state word 0 is the key, words 1.. the
// 128-bit counter (missing words are zero); each 4x32-bit block uses the next counter value, and
// the new state holds the counter after the last block. Bits are the same family as XLA's
// Philox; bit equality with XLA is not claimed. rng_three_fry: XLA's ThreeFry bit generator
// (u64[2] state {key, counter}; layout in ir/rng_expansion.h, ThreeFryPairing); INVALID_ARGUMENT
// for another state shape.
absl::StatusOr<ir::Literal> EvaluateRngBitGenerator(const ir::Instruction& instruction,
                                                    const ir::Literal& state);

}  // namespace vkspmd::interp
