// Splits a module at a while loop or conditional of its entry into the programs the host runs
// around it: what comes before, the condition and body or the branches, and what comes after.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/module.h"

namespace vkspmd::ir {

// The four modules of one loop. The loop state, however its tuples nest, is passed as its K
// array leaves (depth first); every module takes and returns arrays, never tuples, so the leaves
// can live in device buffers.
struct LoopSplit {
  std::string loop;         // The while's description, for messages.
  int64_t state_count = 0;  // K.
  // The entry's parameters → tuple(K initial leaves, the carried leaves): the carried values are
  // what `after` needs besides the loop's result. The while's sharding, if any, is on the
  // initial leaves (as copies annotated with it).
  std::unique_ptr<Module> before;
  std::unique_ptr<Module> condition;  // K leaves → pred[].
  std::unique_ptr<Module> body;       // K leaves → tuple(K leaves).
  // K result leaves and the carried leaves → the entry's root (its leaves as one flat tuple when
  // the root is a nested tuple).
  std::unique_ptr<Module> after;
};

// The modules of one conditional whose branches the host chooses between (a branch holds a loop
// of unknown trip count, which if-conversion would run untaken too).
struct ConditionalSplit {
  std::string conditional;  // Its description, for messages.
  // The entry's parameters → tuple(selector, branch 0's operand leaves, ..., branch N-1's, the
  // carried leaves). The selector is pred[] (true picks branch 0) or s32[] (an index; outside
  // 0..N-1 the last branch, as XLA).
  std::unique_ptr<Module> before;
  std::vector<int64_t> operand_counts;            // Per branch: how many leaves its operand has.
  std::vector<std::unique_ptr<Module>> branches;  // Operand leaves → tuple(R result leaves).
  int64_t result_count = 0;                       // R.
  // R result leaves and the carried leaves → the entry's root (flat as LoopSplit's after).
  std::unique_ptr<Module> after;
};

// The first while or conditional of `module`'s entry in instruction order, or null. Run it on a
// module lowered with keep_unknown_loops, whose entry's whiles are the loops of unknown trip
// count or too long to unroll, and whose conditionals are those with such a loop in a branch.
const Instruction* FirstHostControlFlow(const Module& module);

// Splits `module` at `loop` (a while of its entry).
absl::StatusOr<LoopSplit> SplitAtLoop(const Module& module, const Instruction& loop);

// Splits `module` at `conditional` (a conditional of its entry).
absl::StatusOr<ConditionalSplit> SplitAtConditional(const Module& module,
                                                    const Instruction& conditional);

// The array leaves of `shape`, depth first (an array: itself).
std::vector<Shape> LeafShapes(const Shape& shape);

}  // namespace vkspmd::ir
