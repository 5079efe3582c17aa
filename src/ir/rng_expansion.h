// Random-number ops into others: rng-bit-generator as integer elementwise ops (Philox4x32-10 or
// Threefry-2x32 written out) for the device compiler, which has no random-number kernel; rng as
// ops over an rng-bit-generator, as the parser reads it.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "src/ir/inline_calls.h"
#include "src/ir/module.h"

namespace vkspmd::ir {

// Whether `module`'s entry holds an rng-bit-generator.
bool HasRngBitGenerator(const Module& module);

// A copy of `module` whose entry computes every rng-bit-generator with plain ops: the same bits
// and new state as the CPU reference (interp/rng.h: for rng_philox and rng_default, state word 0
// the key, words 1 and 2 the 128-bit counter, one Philox block per counter value; 8- and 16-bit
// outputs take a word's low bits, 64-bit ones two words, low first), and a get-tuple-element of
// it becomes the element. rng_three_fry: Threefry-2x32's 20 rounds over u32 vectors of one
// element per block, laid out as below (a concatenate interleaves the two words along the paired
// dim). A round reads one word three times (an add and the rotation's two shifts), so as a tree
// the rounds grow threefold each: the device compiler computes a kernel's shared values once
// (codegen's KernelWriter::ShareValues); without that, lavapipe's shader compiler, which inlines
// every call before it eliminates common subexpressions, grew past 20 GiB.
absl::StatusOr<std::unique_ptr<Module>> ExpandRngBitGenerators(const Module& module);

// rng_three_fry as XLA defines it (xla/client/lib/prng.cc, ThreeFryBitGenerator; interp/rng.cc):
// the state is u64[2], {key, counter}; the key's low and high words key Threefry-2x32 (20 rounds),
// and a counter value c is the input block {low word of c, high word of c}. 64-bit outputs: element
// i (row-major) is block counter + i, output word 0 in the low half, and the new counter is counter
// + n. Outputs of 32 bits or fewer pair elements along one dim (ThreeFryPairing): element (o, 2h +
// b, k) of the output seen as [outer, size, inner] is output word b of block counter + (o *
// ceil(size / 2) + h) * inner + k, narrower types take its low bits, and the new counter is counter
// + outer * ceil(size / 2) * inner. A scalar is word 0 of block counter, and the counter advances
// by 1. Counters wrap at 2^64; the key is kept.
struct ThreeFryPairing {
  int64_t outer = 1;  // elements before the paired dim
  int64_t size = 1;   // the paired dim (1 for a scalar)
  int64_t inner = 1;  // elements after it
  int64_t Blocks() const { return outer * ((size + 1) / 2) * inner; }
};
// The paired dim is the first even one, else the first of the largest (XLA's
// SplitShapeIntoHalves).
ThreeFryPairing ThreeFryPairingOf(const Shape& shape);

// OK when `state` is what rng_three_fry takes (u64[2]); otherwise INVALID_ARGUMENT naming `op`.
absl::Status CheckThreeFryState(const Shape& state, std::string_view op);

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
