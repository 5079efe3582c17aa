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

// bitcast-convert's result as XLA defines it: the same dims between types of one width; to a
// narrower type a last dim of the width ratio is added (f32[3] -> u8[3,4]); to a wider one the
// operand's last dim must be that ratio and is dropped (u16[3,2] -> f32[3]). Element k of the
// added or dropped dim is the k-th narrow element in memory order (little-endian: the lowest
// bits first).
absl::StatusOr<Shape> BitcastConvertShape(const Shape& operand, DType to);

}  // namespace vkspmd::ir
