// Reductions (sum, mean, amax, amin, argmax) and the functions built from them (softmax,
// log_softmax, layer_norm, one_hot, embedding, cross_entropy).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "src/api/api_support.h"
#include "src/lazy/trace_ops.h"
#include "vkspmd/ops.h"

namespace vkspmd {
namespace {

using ir::Opcode;
using lazy::NodeOf;
using lazy::NodePtr;
using lazy::Unwrap;
using lazy::Wrap;

// Sorted, distinct, non-negative dims; empty means every dim.
std::vector<int64_t> ReduceDims(std::vector<int64_t> dims, int64_t rank, const char* op) {
  if (dims.empty()) {
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  }
  for (int64_t& d : dims) d = lazy::NormalizeDim(d, rank, op);
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return dims;
}

NodePtr ReduceNode(NodePtr x, std::vector<int64_t> dims, Opcode opcode, bool keepdim,
                   const char* op) {
  dims = ReduceDims(std::move(dims), x->shape().rank(), op);
  // Booleans sum as integers, as in PyTorch.
  if (opcode == Opcode::kAdd && x->shape().dtype() == ir::DType::kPred) {
    x = Unwrap(lazy::trace::Convert(x, ir::DType::kS32));
  }
  return Unwrap(lazy::trace::Reduce(x, dims, opcode, keepdim));
}

NodePtr MeanNode(NodePtr x, std::vector<int64_t> dims, bool keepdim) {
  x = Unwrap(lazy::trace::ToFloat(x));
  dims = ReduceDims(std::move(dims), x->shape().rank(), "mean");
  int64_t count = 1;
  for (int64_t d : dims) count *= x->shape().dimension(d);
  NodePtr total = ReduceNode(x, dims, Opcode::kAdd, keepdim, "mean");
  return Unwrap(lazy::trace::Binary(
      Opcode::kDivide, total, lazy::trace::Constant(static_cast<double>(count), x->shape().dtype()),
      "mean"));
}

NodePtr Apply(Opcode opcode, NodePtr a, NodePtr b, const char* op) {
  return Unwrap(lazy::trace::Binary(opcode, std::move(a), std::move(b), op));
}

// x - max(x) along dim (kept), the numerically safe start of softmax and log_softmax.
NodePtr Shifted(const NodePtr& x, int64_t dim, const char* op) {
  NodePtr peak = ReduceNode(x, {dim}, Opcode::kMaximum, true, op);
  return Apply(Opcode::kSubtract, x, peak, op);
}

NodePtr LogSoftmaxNode(const NodePtr& input, int64_t dim) {
  NodePtr x = Unwrap(lazy::trace::ToFloat(input));
  NodePtr shifted = Shifted(x, dim, "log_softmax");
  NodePtr total = ReduceNode(Unwrap(lazy::trace::Unary(Opcode::kExp, shifted)), {dim}, Opcode::kAdd,
                             true, "log_softmax");
  return Apply(Opcode::kSubtract, shifted, Unwrap(lazy::trace::Unary(Opcode::kLog, total)),
               "log_softmax");
}

NodePtr OneHotNode(const NodePtr& indices, int64_t num_classes) {
  if (!ir::IsInteger(indices->shape().dtype())) {
    throw Error(ErrorCode::kInvalidArgument, absl::StrCat("one_hot: indices must be integers, not ",
                                                          indices->shape().ToString()));
  }
  if (num_classes <= 0) {
    throw Error(ErrorCode::kInvalidArgument, "one_hot: num_classes must be positive");
  }
  std::vector<int64_t> dims = indices->shape().dimensions();
  dims.push_back(num_classes);
  NodePtr classes = Unwrap(
      lazy::trace::Iota(indices->shape().dtype(), dims, static_cast<int64_t>(dims.size()) - 1));
  std::vector<int64_t> with_one = indices->shape().dimensions();
  with_one.push_back(1);
  NodePtr column = Unwrap(lazy::trace::Reshape(indices, with_one));
  return Unwrap(lazy::trace::Compare(ir::ComparisonDirection::kEq, column, classes, "one_hot"));
}

}  // namespace

Tensor sum(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return Wrap(ReduceNode(NodeOf(x, "sum"), std::move(dims), Opcode::kAdd, keepdim, "sum"));
}

Tensor mean(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return Wrap(MeanNode(NodeOf(x, "mean"), std::move(dims), keepdim));
}

Tensor amax(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return Wrap(ReduceNode(NodeOf(x, "max"), std::move(dims), Opcode::kMaximum, keepdim, "max"));
}

Tensor amin(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return Wrap(ReduceNode(NodeOf(x, "min"), std::move(dims), Opcode::kMinimum, keepdim, "min"));
}

namespace {

// A variadic (value, index) reduce does not run on devices, so: the extreme (`peak_op`: maximum
// or minimum), then the smallest index whose element equals it.
Tensor ArgExtreme(const Tensor& x, int64_t dim, bool keepdim, Opcode peak_op, const char* op) {
  NodePtr node = NodeOf(x, op);
  const int64_t d = lazy::NormalizeDim(dim, node->shape().rank(), op);
  const std::vector<int64_t>& dims = node->shape().dimensions();
  NodePtr peak = ReduceNode(node, {d}, peak_op, true, op);
  NodePtr is_peak = Unwrap(lazy::trace::Compare(ir::ComparisonDirection::kEq, node, peak, op));
  NodePtr index = Unwrap(lazy::trace::Iota(ir::DType::kS32, dims, d));
  NodePtr candidates = Unwrap(lazy::trace::Select(
      is_peak, index, lazy::trace::Constant(static_cast<double>(dims[d]), ir::DType::kS32)));
  return Wrap(lazy::trace::Reduce(candidates, {d}, Opcode::kMinimum, keepdim));
}

}  // namespace

Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  return ArgExtreme(x, dim, keepdim, Opcode::kMaximum, "argmax");
}

Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) {
  return ArgExtreme(x, dim, keepdim, Opcode::kMinimum, "argmin");
}

Tensor softmax(const Tensor& x, int64_t dim) {
  NodePtr node = Unwrap(lazy::trace::ToFloat(NodeOf(x, "softmax")));
  const int64_t d = lazy::NormalizeDim(dim, node->shape().rank(), "softmax");
  NodePtr exponent = Unwrap(lazy::trace::Unary(Opcode::kExp, Shifted(node, d, "softmax")));
  NodePtr total = ReduceNode(exponent, {d}, Opcode::kAdd, true, "softmax");
  return Wrap(lazy::trace::Binary(Opcode::kDivide, exponent, total, "softmax"));
}

Tensor log_softmax(const Tensor& x, int64_t dim) {
  NodePtr node = NodeOf(x, "log_softmax");
  return Wrap(LogSoftmaxNode(node, lazy::NormalizeDim(dim, node->shape().rank(), "log_softmax")));
}

Tensor layer_norm(const Tensor& x, std::vector<int64_t> normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  NodePtr node = Unwrap(lazy::trace::ToFloat(NodeOf(x, "layer_norm")));
  const std::vector<int64_t>& dims = node->shape().dimensions();
  const size_t k = normalized_shape.size();
  if (k == 0 || k > dims.size() ||
      !std::equal(normalized_shape.begin(), normalized_shape.end(), dims.end() - k)) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("layer_norm: normalized_shape does not match the trailing dims of ",
                             node->shape().ToString()));
  }
  std::vector<int64_t> reduced;
  for (size_t d = dims.size() - k; d < dims.size(); ++d) reduced.push_back(static_cast<int64_t>(d));
  NodePtr centered = Apply(Opcode::kSubtract, node, MeanNode(node, reduced, true), "layer_norm");
  NodePtr variance =
      MeanNode(Apply(Opcode::kMultiply, centered, centered, "layer_norm"), reduced, true);
  NodePtr scale = Unwrap(lazy::trace::Unary(
      Opcode::kRsqrt, Apply(Opcode::kAdd, variance,
                            lazy::trace::Constant(eps, node->shape().dtype()), "layer_norm")));
  NodePtr y = Apply(Opcode::kMultiply, centered, scale, "layer_norm");
  if (weight.defined()) y = Apply(Opcode::kMultiply, y, NodeOf(weight), "layer_norm weight");
  if (bias.defined()) y = Apply(Opcode::kAdd, y, NodeOf(bias), "layer_norm bias");
  return Wrap(y);
}

Tensor one_hot(const Tensor& indices, int64_t num_classes) {
  return Wrap(
      lazy::trace::Convert(OneHotNode(NodeOf(indices, "one_hot"), num_classes), ir::DType::kS32));
}

Tensor embedding(const Tensor& indices, const Tensor& weight) {
  NodePtr table = NodeOf(weight, "embedding");
  if (table->shape().rank() != 2) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("embedding: the weight must be [num_embeddings, dim], not ",
                             table->shape().ToString()));
  }
  NodePtr rows = Unwrap(
      lazy::trace::Convert(OneHotNode(NodeOf(indices, "embedding"), table->shape().dimension(0)),
                           table->shape().dtype()));
  return Wrap(lazy::trace::Matmul(rows, table));
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const std::string& reduction) {
  NodePtr scores = NodeOf(logits, "cross_entropy");
  NodePtr classes = NodeOf(target, "cross_entropy");
  const int64_t rank = scores->shape().rank();
  if (rank < 1 || classes->shape().rank() != rank - 1 ||
      !std::equal(classes->shape().dimensions().begin(), classes->shape().dimensions().end(),
                  scores->shape().dimensions().begin())) {
    throw Error(
        ErrorCode::kInvalidArgument,
        absl::StrCat("cross_entropy: logits ", scores->shape().ToString(), " and target ",
                     classes->shape().ToString(), " do not match (expected [N, C] and [N])"));
  }
  NodePtr log_probabilities = LogSoftmaxNode(scores, rank - 1);
  NodePtr chosen = Unwrap(lazy::trace::Convert(
      OneHotNode(classes, scores->shape().dimensions().back()), ir::DType::kF32));
  NodePtr picked = ReduceNode(Apply(Opcode::kMultiply, log_probabilities, chosen, "cross_entropy"),
                              {rank - 1}, Opcode::kAdd, false, "cross_entropy");
  NodePtr losses = Unwrap(lazy::trace::Unary(Opcode::kNegate, picked));
  if (reduction == "none") return Wrap(losses);
  if (reduction == "sum") return Wrap(ReduceNode(losses, {}, Opcode::kAdd, false, "cross_entropy"));
  if (reduction == "mean") return Wrap(MeanNode(losses, {}, false));
  throw Error(
      ErrorCode::kInvalidArgument,
      "cross_entropy: reduction must be \"mean\", \"sum\" or \"none\", not \"" + reduction + "\"");
}

}  // namespace vkspmd
