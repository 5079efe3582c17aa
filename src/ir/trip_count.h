// Trip counts of while loops that count: a state element that starts at a constant, goes up by a
// constant each iteration and is compared with a constant, as lax.fori_loop and lax.scan write.
#pragma once

#include <cstdint>
#include <optional>

#include "src/ir/module.h"

namespace vkspmd::ir {

// How often `body` runs for a while loop with `condition` and state `init`, when it can be proved
// from the IR: condition's root is compare(get-tuple-element(state, i), N) with LT, LE or NE (or
// those mirrored with the counter on the right), N a constant or a state element the body passes
// on unchanged from a constant in `init` (a fori_loop's bound carried in the state), body's root is
// a tuple whose element i is add(get-tuple-element(state, i), constant step) with step > 0, and
// `init` is a tuple whose element i is an integer constant (or a copy of one). nullopt when any of
// that does not hold, when the counter would overflow its type, or when a NE loop would step over
// its bound.
std::optional<int64_t> CountedLoopTripCount(const Computation& condition, const Computation& body,
                                            const Instruction& init);

}  // namespace vkspmd::ir
