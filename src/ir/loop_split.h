// Splits a module at a while loop of its entry into the programs a host-driven loop runs: what
// comes before the loop, its condition, its body, and what comes after (exec::LoopProgram).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "src/ir/module.h"

namespace vkspmd::ir {

// The four modules of one loop. The loop state is a flat tuple of K arrays (the "leaves"); every
// module takes and returns arrays, never tuples, so the leaves can live in device buffers.
struct LoopSplit {
  std::string loop;         // The while's description, for messages.
  int64_t state_count = 0;  // K.
  // The entry's parameters → tuple(K initial leaves, C carried values): the carried values are
  // what `after` needs besides the loop's result. The while's sharding, if any, is on the
  // initial leaves (as copies annotated with it).
  std::unique_ptr<Module> before;
  std::unique_ptr<Module> condition;  // K leaves → pred[].
  std::unique_ptr<Module> body;       // K leaves → tuple(K leaves).
  // K result leaves and the C carried values → the entry's root.
  std::unique_ptr<Module> after;
};

// The first while of `module`'s entry in instruction order (no other while among its operands),
// or null. Run it on a module lowered with keep_unknown_loops, whose entry's whiles are the
// loops of unknown trip count.
const Instruction* FirstEntryLoop(const Module& module);

// Splits `module` at `loop` (an instruction of its entry). UNIMPLEMENTED, naming the loop, for a
// state that is not a flat tuple of arrays, or a tuple-shaped value carried past the loop.
absl::StatusOr<LoopSplit> SplitAtLoop(const Module& module, const Instruction& loop);

}  // namespace vkspmd::ir
