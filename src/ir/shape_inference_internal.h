// Shared pieces of shape inference: operand checks used by every op family, and the
// per-family inference functions that shape_inference.cc dispatches to.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/shape_inference.h"

namespace vkspmd::ir::shape_inference_internal {

absl::Status Invalid(std::string message);
absl::Status CheckOperandCount(const Instruction& instruction, int64_t count);
absl::Status CheckArrays(const Instruction& instruction);
bool IsPermutation(const std::vector<int64_t>& values, int64_t size);
absl::Status CheckDimensionsInRange(const std::vector<int64_t>& dimensions, int64_t rank,
                                    bool unique);

// Data-movement, contraction and collective ops (shape_inference_data_ops.cc).
absl::StatusOr<Shape> InferBroadcast(const Instruction& instruction);
absl::StatusOr<Shape> InferShapeOps(const Instruction& instruction);
absl::StatusOr<Shape> InferDynamicSlices(const Instruction& instruction);
absl::StatusOr<Shape> InferConcatenate(const Instruction& instruction);
absl::StatusOr<Shape> InferPad(const Instruction& instruction);
absl::StatusOr<Shape> InferDot(const Instruction& instruction);
absl::StatusOr<Shape> InferReduce(const Instruction& instruction);
// Gather and scatter (shape_inference_gather.cc).
absl::StatusOr<Shape> InferGather(const Instruction& instruction);
absl::StatusOr<Shape> InferScatter(const Instruction& instruction);
absl::StatusOr<Shape> InferSort(const Instruction& instruction);
// Control flow (shape_inference_control_flow.cc).
absl::StatusOr<Shape> InferWhile(const Instruction& instruction);
absl::StatusOr<Shape> InferConditional(const Instruction& instruction);
absl::StatusOr<Shape> InferCollective(const Instruction& instruction,
                                      const ShapeInferenceContext& context);

}  // namespace vkspmd::ir::shape_inference_internal
