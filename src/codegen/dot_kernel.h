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

// main()'s body, which calls store(). `lhs_value`/`rhs_value` name the GLSL functions returning
// the operands' elements by linear index; `writer` declares the shared memory a variant uses. With
// more than one chunk, the body stores chunk c's partial result at c * (result elements) + index; a
// following reduction sums the chunks.
absl::StatusOr<std::string> WriteDotKernel(const ir::Instruction& dot, const DotOperands& operands,
                                           const DotTiling& tiling, const std::string& lhs_value,
                                           const std::string& rhs_value, KernelWriter& writer);

}  // namespace vkspmd::codegen
