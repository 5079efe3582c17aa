// Expands rng-bit-generator into integer elementwise ops (Philox4x32-10 written out), so the
// device compiler, which has no random-number kernel, runs it as one fused kernel.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "src/ir/module.h"

namespace vkspmd::ir {

// Whether `module`'s entry holds an rng-bit-generator.
bool HasRngBitGenerator(const Module& module);

// A copy of `module` whose entry computes every rng-bit-generator with plain ops: the same bits
// and new state as the CPU reference (interp/rng.h: state word 0 the key, words 1 and 2 the
// 128-bit counter, one Philox block per counter value; 8- and 16-bit outputs take a word's low
// bits, 64-bit ones two words, low first), and a get-tuple-element of it becomes the element.
// rng_three_fry is UNIMPLEMENTED naming the op (the reference has no ThreeFry either).
absl::StatusOr<std::unique_ptr<Module>> ExpandRngBitGenerators(const Module& module);

}  // namespace vkspmd::ir
