// Which instructions a kernel computes inline, and in which order a fused instruction reads its
// operands: shared by planning (which buffers a kernel binds) and row fusion.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "src/ir/instruction.h"

namespace vkspmd::codegen {

// Elementwise ops whose element i reads their operands' elements i (scalars at 0).
bool IsFusedElementwise(ir::Opcode opcode);

// The operand indices of `instruction`, computed inline, in the order its code first reads them
// (dynamic slices read their start indices first). Kernels bind buffers in first-read order.
std::vector<int64_t> OperandReadOrder(const ir::Instruction& instruction);

// Whether element i of `instruction` reads element i of its operand `k` (and no other element
// of it), i being the row-major linear index: elementwise ops over operands of their own
// dimensions, and index mappings that map nothing (any reshape, a pad of zero widths, a
// transpose or broadcast keeping every dimension in place, a full slice).
bool ReadsOperandAtOwnIndex(const ir::Instruction& instruction, int64_t k);

// Whether a kernel computing `value` inline (and the values in `here`, which it computes although
// they have buffers) reads `target` only at the index `value` is computed at, given whether the
// path so far kept the index. Values with buffers in `materialized` (other than `value` itself
// when `is_root`, and those in `here`) are read from their buffers, so the walk stops there.
// `checked` memoises the walk (a DAG reaches one value by many paths); pass an empty set.
bool ReadsOnlyAtOwnIndex(const std::map<const ir::Instruction*, int>& materialized,
                         const ir::Instruction* value, const ir::Instruction* target,
                         bool same_index, bool is_root,
                         const std::set<const ir::Instruction*>& here,
                         std::set<std::pair<const ir::Instruction*, bool>>& checked);

}  // namespace vkspmd::codegen
