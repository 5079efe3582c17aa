// Shape inference for every op: the result shape an instruction must have given its operands and
// attributes. Messages say what is inconsistent; the verifier prefixes the instruction.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "src/ir/instruction.h"

namespace vkspmd::ir {

struct ShapeInferenceContext {
  int64_t replica_count = 1;
  int64_t partition_count = 1;
};

// The shape `instruction` must have. Ops whose result is stated rather than derived (parameter,
// iota, broadcast, reshape, convert, custom-call shard shapes) return the declared shape after
// checking it against the operands.
absl::StatusOr<Shape> InferShape(const Instruction& instruction,
                                 const ShapeInferenceContext& context = {});

}  // namespace vkspmd::ir
