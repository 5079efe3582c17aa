// The text form of gather's and scatter's dimension numbers (offset_dims=, update_window_dims=,
// ...): which names apply to which op, parsing one, and printing them all in XLA's order.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "src/ir/instruction.h"
#include "src/ir/text_reader.h"

namespace vkspmd::ir {

// How the dims of a gather's operand, indices and result (a scatter's operand, indices and updates)
// correspond, derived from its dimension numbers.
struct GatherIndexSpaces {
  // Result (updates) dims not in offset_dims, in order: one per entry of indices_batch.
  std::vector<int64_t> result_batch;
  // Indices dims other than index_vector_dim, in order.
  std::vector<int64_t> indices_batch;
  // Operand dims that are neither collapsed nor batching, in order: one per offset dim.
  std::vector<int64_t> operand_window;
  // Entries of one index vector (1 when index_vector_dim is the indices' rank).
  int64_t index_vector_size = 1;
  bool explicit_index_vector = false;  // index_vector_dim < the indices' rank
};
// Assumes the dimension numbers were checked (shape inference) for these ranks.
GatherIndexSpaces DescribeGather(const GatherDimensions& dimensions, int64_t operand_rank,
                                 const Shape& indices, int64_t result_rank);

// Whether `name` is a gather or scatter dimension-number attribute (of either op).
bool IsGatherScatterAttribute(std::string_view name);
// Whether `name` (a gather or scatter attribute) belongs to `opcode`.
bool GatherScatterAttributeAppliesTo(std::string_view name, Opcode opcode);
// Reads the value of attribute `name` (after its '=') into `dimensions`.
absl::Status ParseGatherScatterAttribute(TextReader& reader, std::string_view name,
                                         GatherDimensions& dimensions);
// "offset_dims={1}", ... for a gather, "update_window_dims={1}", ... for a scatter.
std::vector<std::string> GatherScatterAttributeStrings(const Instruction& instruction);

}  // namespace vkspmd::ir
