// Random-number ops into others: rng-bit-generator as integer elementwise ops (Philox4x32-10
// written out) for the device compiler, which has no random-number kernel; rng as ops over an
// rng-bit-generator, as the parser reads it.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "src/ir/inline_calls.h"
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

enum class RngDistribution { kUniform, kNormal };

// rng(a, b), distribution=rng_uniform|rng_normal (XLA's older random op, whose values are
// implementation-defined) of `shape`, written through `add` as an rng-bit-generator (Philox)
// whose state is the constant {seed, 0} and ops over its bits. uniform: [a, b), floats as
// a + (b - a) u with u the top 24 bits times 2^-24 (53 and f64 for 64-bit types),
// integers as a + bits mod (b - a) (a when b == a); normal: mean a, standard deviation b
// (Box-Muller), floats only. The same module draws the same values in every run and on any
// mesh. INVALID_ARGUMENT for bounds that are not scalars of the result's type.
absl::StatusOr<Instruction*> RngFromBitGenerator(Instruction* a, Instruction* b, const Shape& shape,
                                                 RngDistribution distribution, uint64_t seed,
                                                 const AddInstructionFn& add);

}  // namespace vkspmd::ir
