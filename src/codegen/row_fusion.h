// Row fusion: a kernel that computes its output one row at a time may also compute, inside the
// same kernel, the row reductions its output reads through row-aligned broadcasts, and the
// multi-user elementwise values feeding them. Softmax (max, exp, sum, divide) and layer norm
// (mean, centred values, variance, scale) then become one kernel instead of four or five.
//
// "Row-aligned": the kernel's output of N elements is O rows of N/O consecutive elements. Every
// fused value of count C is read only inside its own row, [o*C/O, (o+1)*C/O), when the kernel
// computes row o; a reduction over its operand's trailing dims has O outputs, so row o needs
// exactly the reduction of row o of its operand, which the kernel computes first.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "src/ir/module.h"

namespace vkspmd::codegen {

struct RowFusion {
  int64_t rows = 0;
  // Reductions computed inside the kernel, in execution order (a later one may read an earlier).
  std::vector<const ir::Instruction*> reductions;
  // Everything the kernel computes that would otherwise have had a buffer (reductions included).
  std::set<const ir::Instruction*> absorbed;
};

// Whether a reduce combines trailing dims of its operand (so each output is one contiguous run).
bool ReducesTrailingDims(const ir::Instruction& reduce);

// Whether `consumer`, computed at an element of row o (of `rows` rows over its elements), reads
// `operand` only inside row o of the operand's elements.
bool ReadsOperandInOwnRow(const ir::Instruction& consumer, const ir::Instruction& operand,
                          int64_t rows);

// Chooses row fusions for the entry computation. `materialized` holds the instructions that get
// buffers; absorbed ones are removed from it. `outputs` are never absorbed. `max_row_iterations`
// bounds the loop iterations one invocation may run (rows are split over `lanes` invocations).
// Returns the fusion of each kernel root that absorbed at least one reduction.
std::map<const ir::Instruction*, RowFusion> PlanRowFusions(
    const ir::Computation& entry, std::set<const ir::Instruction*>& materialized,
    const std::set<const ir::Instruction*>& outputs, uint32_t lanes, int64_t max_row_iterations);

}  // namespace vkspmd::codegen
