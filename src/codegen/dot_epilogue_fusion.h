// Dot epilogue fusion, a pass over a planned program: a dot kernel absorbs the map kernel that
// reads its result only at the index it computes (a bias add, a scaling, an activation, a
// residual add of another buffer, an optimizer's update of a weight from its gradient), and
// computes that kernel's values from each result element in registers before storing them. The
// dot's own result is stored too only where other kernels still read it. A layer's x.W + b, or
// GELU(x.W1 + b1), is one dispatch instead of two.
#pragma once

#include <cstdint>
#include <functional>

#include "src/codegen/kernel_plan.h"
#include "src/codegen/target_info.h"

namespace vkspmd::codegen {

// Folds each kMap kernel K (no parts, no held reductions) that reads the result of an earlier
// kDot kernel P (one chunk: not split-K, whose result a reduction writes) into P, when K's values
// have the dot's element count and read the dot only at their own index (elementwise ops and
// reshapes), and no kernel between P and K reads the dot's buffer. Reshapes aliasing that buffer
// (read in place) are computed by K from the dot instead, where no other kernel reads the buffer
// and the program does not return the dot; with them K cannot be fused otherwise. The merged kernel
// runs at K's place (the dot's operands are written before P and never again), stores K's values
// (KernelPlan::epilogue and also_stores) and the dot where a later kernel or the program's result
// reads it; otherwise the dot loses its buffer. Kernels stay within `max_inline_instructions` and
// the target's binding limit. Returns how many kernels it removed. Run after multi-output fusion
// (so K already holds the map kernels it absorbed) and before donations and horizontal fusion.
int FuseDotEpilogues(ProgramPlan& plan, const TargetInfo& target, int64_t max_inline_instructions);

// Whether `value` (computed inline, reading the values in `in_buffer` from their buffers) reads
// some dot in a buffer, and every such dot only at `value`'s own index with as many elements: a
// dot kernel can compute it as its epilogue. The planner gives such a value a buffer where
// transposes or reshapes of it are read only by dots (dot_tiling.h: ViewThrough), so that the dot
// kernel stores it and the transposes need no kernel.
bool IsDotEpilogue(const ir::Instruction& value,
                   const std::function<bool(const ir::Instruction*)>& in_buffer);

}  // namespace vkspmd::codegen
