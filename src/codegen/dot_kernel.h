// The dot kernel: register tiles per invocation, no shared memory and no barriers (both are slow
// on CPU drivers such as llvmpipe, and caches serve the reuse on GPUs).
//
// A workgroup of `lanes` invocations computes kRowsPerTile rows of the [M, N] result of one batch
// element and kColumnsPerLane * lanes columns (the tiling, dot_tiling.h, is planned). The rows'
// operand reads depend only on the workgroup, so compilers see them as uniform (one scalar load
// for all lanes); the lanes read consecutive columns. Any batch, contracting and free dims, in any
// operand layout, are handled through index arithmetic, so transposed operands are never
// materialized. Contractions longer than the per-invocation iteration bound are split into chunks
// (split-K) whose partial sums a following reduction adds.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "src/codegen/dot_tiling.h"
#include "src/codegen/kernel_plan.h"
#include "src/codegen/kernel_writer.h"
#include "src/ir/instruction.h"

namespace vkspmd::codegen {

// main()'s body for the dot kernel `kernel` (KernelKind::kDot), reading its operands' views
// (kernel.dot_operands); `writer` declares the shared memory a variant uses. Each result element
// goes through store(), or, where the kernel has an epilogue (KernelPlan::epilogue), through a
// function computing the epilogue's values from it and storing each. With more than one chunk,
// the body stores chunk c's partial result at c * (result elements) + index; a following
// reduction sums the chunks.
absl::StatusOr<std::string> WriteDotKernel(const KernelPlan& kernel, KernelWriter& writer);

}  // namespace vkspmd::codegen
