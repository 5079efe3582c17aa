// Reference evaluation of the data-movement ops: iota, broadcast, reshape, transpose, slice,
// dynamic-slice, dynamic-update-slice, concatenate, pad, reverse.
#pragma once

#include <vector>

#include "src/ir/instruction.h"
#include "src/ir/literal.h"

namespace vkspmd::interp {

ir::Literal EvaluateIota(const ir::Instruction& instruction);
ir::Literal EvaluateBroadcast(const ir::Instruction& instruction, const ir::Literal& operand);
ir::Literal EvaluateReshape(const ir::Shape& shape, const ir::Literal& operand);
ir::Literal EvaluateTranspose(const ir::Instruction& instruction, const ir::Literal& operand);
ir::Literal EvaluateSlice(const ir::Instruction& instruction, const ir::Literal& operand);
// Start indices are clamped so the slice stays inside the operand, as in XLA.
ir::Literal EvaluateDynamicSlice(const ir::Instruction& instruction,
                                 const std::vector<const ir::Literal*>& operands);
ir::Literal EvaluateDynamicUpdateSlice(const std::vector<const ir::Literal*>& operands);
ir::Literal EvaluateConcatenate(const ir::Instruction& instruction,
                                const std::vector<const ir::Literal*>& operands);
ir::Literal EvaluatePad(const ir::Instruction& instruction, const ir::Literal& operand,
                        const ir::Literal& padding_value);
ir::Literal EvaluateReverse(const ir::Instruction& instruction, const ir::Literal& operand);

// Row-major linear index of `index` under `strides`.
int64_t LinearIndex(const std::vector<int64_t>& index, const std::vector<int64_t>& strides);
// destination[destination_index] = source[source_index] (same element type).
void CopyElement(const ir::Literal& source, int64_t source_index, ir::Literal& destination,
                 int64_t destination_index);
// Calls visit(index, linear_index) for every element of `shape`, in row-major order.
template <typename Visit>
void ForEachIndex(const ir::Shape& shape, Visit visit) {
  if (shape.ElementCount() == 0) return;
  std::vector<int64_t> index(shape.rank(), 0);
  int64_t linear = 0;
  do {
    visit(index, linear++);
  } while (ir::NextIndex(shape.dimensions(), index));
}

// Copies the block of `source` starting at `source_start` with the shape of `destination`'s
// `block` dims into `destination` at `destination_start` (all row-major).
void CopyBlock(const ir::Literal& source, const std::vector<int64_t>& source_start,
               ir::Literal& destination, const std::vector<int64_t>& destination_start,
               const std::vector<int64_t>& block);

}  // namespace vkspmd::interp
