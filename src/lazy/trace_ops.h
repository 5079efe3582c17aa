// The ops of the trace in terms of IR instructions, with PyTorch's broadcasting and type
// promotion. Status-returning: the public API (api_*.cc) turns errors into vkspmd::Error. Dims
// given here are already normalised (non-negative).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/lazy/node.h"

namespace vkspmd::lazy::trace {

// A constant scalar of `type` (for values fixed by the op, never for user scalars).
NodePtr Constant(double value, ir::DType type);
// A host scalar that becomes a graph parameter.
NodePtr ScalarParameter(double value, ir::DType type);
absl::StatusOr<NodePtr> Convert(const NodePtr& x, ir::DType type);
// To float32 unless already floating (PyTorch's true division and float math on integers).
absl::StatusOr<NodePtr> ToFloat(const NodePtr& x);

// PyTorch broadcasting of two shapes; the error names both shapes and `op`.
absl::StatusOr<std::vector<int64_t>> BroadcastShapes(const std::vector<int64_t>& a,
                                                     const std::vector<int64_t>& b,
                                                     const std::string& op);
// Broadcasts `x` to `dims` (trailing alignment; x's dims must be 1 or equal).
absl::StatusOr<NodePtr> BroadcastTo(const NodePtr& x, const std::vector<int64_t>& dims);
// The common type of two operands: equal types stay, bool takes the other, float beats ints.
absl::StatusOr<ir::DType> PromoteTypes(ir::DType a, ir::DType b, const std::string& op);

absl::StatusOr<NodePtr> Unary(ir::Opcode opcode, const NodePtr& x);
// Promotes and broadcasts both operands, then applies the op.
absl::StatusOr<NodePtr> Binary(ir::Opcode opcode, NodePtr a, NodePtr b, const std::string& op);
absl::StatusOr<NodePtr> Compare(ir::ComparisonDirection direction, NodePtr a, NodePtr b,
                                const std::string& op);
absl::StatusOr<NodePtr> Select(NodePtr condition, NodePtr a, NodePtr b);

absl::StatusOr<NodePtr> Reshape(const NodePtr& x, const std::vector<int64_t>& dims);
absl::StatusOr<NodePtr> Transpose(const NodePtr& x, const std::vector<int64_t>& permutation);
absl::StatusOr<NodePtr> Slice(const NodePtr& x, int64_t dim, int64_t start, int64_t end,
                              int64_t step);
absl::StatusOr<NodePtr> Concatenate(const std::vector<NodePtr>& parts, int64_t dim);
absl::StatusOr<NodePtr> Iota(ir::DType type, const std::vector<int64_t>& dims, int64_t dim);
// dims sorted, distinct; opcode kAdd, kMaximum or kMinimum; keepdim leaves size-1 dims.
absl::StatusOr<NodePtr> Reduce(const NodePtr& x, const std::vector<int64_t>& dims,
                               ir::Opcode opcode, bool keepdim);
absl::StatusOr<NodePtr> Matmul(const NodePtr& a, const NodePtr& b);
// A Sharding custom-call: `x` must have `sharding` (over placement's local mesh).
absl::StatusOr<NodePtr> ShardingConstraint(const NodePtr& x, const ir::Sharding& sharding,
                                           PlacementPtr placement);

}  // namespace vkspmd::lazy::trace
