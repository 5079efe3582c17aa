// Values a row kernel keeps in registers between its loops over the row. A row kernel
// (KernelKind::kRows) runs one loop over its share of the row per row reduction, then one that
// stores its results; each loop computes the values it reads inline. A value read in several of
// these loops (softmax's masked scores: in the max's loop, in the sum's through the exponential,
// and for their stores) would be computed again in each. Instead, the first loop that reads it
// also writes it into a per-invocation array, one element per loop iteration, and later loops read
// that element: every invocation's loops run over the same elements of the row, r = lane +
// j * lanes for j = 0, 1, ... (the loops are written out iteration by iteration, so the array's
// index is a constant and the compiler keeps the array in registers).
//
// A value is kept only where every read of it in every loop that reads it is at the loop's own
// element (index-preserving ops: elementwise over its dimensions, reshapes, identity index maps),
// and only while the kernel's arrays hold at most `max_slots` values per invocation: rows longer
// than that (over the lanes) recompute as before.
#pragma once

#include <cstdint>
#include <vector>

#include "src/codegen/kernel_plan.h"

namespace vkspmd::codegen {

struct RowCache {
  const ir::Instruction* value = nullptr;
  int64_t slots = 0;  // Loop iterations of one invocation over the value's row.
  // The loops reading it, in order: the first computes it (and writes it), the others read it.
  std::vector<size_t> loops;
};

// The kernel's loops: 0 .. n-1 are its row reductions (kernel.row.reductions), n the loop
// storing its results. Kept values in the order their first loop computes them (users first).
std::vector<RowCache> PlanRowCaches(const ProgramPlan& plan, const KernelPlan& kernel,
                                    int64_t max_slots);

}  // namespace vkspmd::codegen
