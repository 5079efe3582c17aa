// index(): Python's basic indexing (ints, slices, new axes, an ellipsis) as one slice per cut dim
// and one reshape for the dims ints drop and new axes add; a tensor entry (torch's advanced
// indexing by an integer tensor or a bool mask) then as one gather.
#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "src/api/api_support.h"
#include "src/ir/instruction.h"
#include "src/lazy/node.h"
#include "src/lazy/trace_ops.h"
#include "vkspmd/ops.h"

namespace vkspmd {
namespace {

using lazy::NodeOf;
using lazy::NodePtr;
using lazy::ShapeText;
using lazy::Unwrap;

Error IndexError(const std::string& message) {
  return Error(ErrorCode::kInvalidArgument, absl::StrCat("index: ", message));
}

// The tensor dims a tensor entry covers: one for integer indices, the rank for a bool mask.
int64_t CoveredDims(const Tensor& entry) {
  const NodePtr node = NodeOf(entry, "index");
  if (node->shape().dtype() == ir::DType::kPred) return node->shape().rank();
  if (node->shape().dtype() != ir::DType::kS32 && node->shape().dtype() != ir::DType::kU32) {
    throw IndexError(absl::StrCat("a tensor index must be int32, uint32 or bool, not ",
                                  node->shape().ToString()));
  }
  return 1;
}

// The number of tensor dims the entries name (ints, slices and tensors; not new axes or the
// ellipsis).
int64_t NamedDims(const std::vector<TensorIndex>& indices) {
  int64_t named = 0;
  int64_t ellipses = 0;
  int64_t tensors = 0;
  for (const TensorIndex& entry : indices) {
    if (std::holds_alternative<int64_t>(entry) || std::holds_alternative<Slice>(entry)) ++named;
    if (const Tensor* tensor = std::get_if<Tensor>(&entry)) {
      named += CoveredDims(*tensor);
      ++tensors;
    }
    if (std::holds_alternative<EllipsisType>(entry)) ++ellipses;
  }
  if (ellipses > 1) throw IndexError("at most one Ellipsis");
  if (tensors > 1) {
    throw Error(ErrorCode::kUnimplemented,
                absl::StrCat("index: ", tensors,
                             " tensor indices (torch broadcasts several together); only one "
                             "tensor index per index() is supported"));
  }
  return named;
}

// x gathered along `dim` at int32/uint32 `indices` (any shape): x's dims before `dim`, the
// indices' dims, x's dims after `dim`. One XLA gather; negative indices count from the end.
NodePtr GatherAlong(const NodePtr& x, int64_t dim, NodePtr indices) {
  const std::vector<int64_t> shape = x->shape().dimensions();
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (indices->shape().dtype() == ir::DType::kS32) {
    NodePtr size = lazy::trace::Constant(static_cast<double>(shape[dim]), ir::DType::kS32);
    NodePtr negative = Unwrap(lazy::trace::Compare(
        ir::ComparisonDirection::kLt, indices, lazy::trace::Constant(0, ir::DType::kS32), "index"));
    NodePtr wrapped = Unwrap(lazy::trace::Binary(ir::Opcode::kAdd, indices, size, "index"));
    indices = Unwrap(lazy::trace::Select(negative, wrapped, indices));
  }
  const int64_t index_rank = indices->shape().rank();
  ir::InstructionAttributes attributes;
  ir::GatherDimensions& gather = attributes.gather;
  gather.collapsed_slice_dims = {dim};
  gather.start_index_map = {dim};
  gather.index_vector_dim = index_rank;
  gather.slice_sizes = shape;
  gather.slice_sizes[dim] = 1;
  for (int64_t d = 0; d < rank - 1; ++d) {
    gather.offset_dims.push_back(d < dim ? d : d + index_rank);
  }
  return Unwrap(lazy::MakeOp(ir::Opcode::kGather, {x, indices}, std::move(attributes)));
}

// x[..., mask] with `mask` covering dims [dim, dim + mask rank): the mask is read and the
// flat positions of its true elements gathered from those dims merged into one.
NodePtr MaskAlong(const NodePtr& x, int64_t dim, const Tensor& mask) {
  const std::vector<int64_t> shape = x->shape().dimensions();
  const std::vector<int64_t>& mask_shape = mask.shape();
  const int64_t covered = static_cast<int64_t>(mask_shape.size());
  if (!std::equal(mask_shape.begin(), mask_shape.end(), shape.begin() + dim)) {
    throw IndexError(absl::StrCat("the bool mask ", ShapeText(NodeOf(mask)),
                                  " does not match the dims it indexes of ", ShapeText(x)));
  }
  const HostTensor values = mask.to_host();
  std::vector<int32_t> positions;
  for (int64_t i = 0; i < values.numel(); ++i) {
    if (values.at<bool>(i)) positions.push_back(static_cast<int32_t>(i));
  }
  std::vector<int64_t> merged(shape.begin(), shape.begin() + dim);
  merged.push_back(std::accumulate(mask_shape.begin(), mask_shape.end(), int64_t{1},
                                   std::multiplies<int64_t>()));
  merged.insert(merged.end(), shape.begin() + dim + covered, shape.end());
  NodePtr flat = merged == shape ? x : Unwrap(lazy::trace::Reshape(x, merged));
  const Tensor picked =
      tensor(std::span<const int32_t>(positions), {static_cast<int64_t>(positions.size())});
  return GatherAlong(flat, dim, NodeOf(picked));
}

// [start, stop) of a slice over a dim of `size`, clamped as Python clamps.
std::pair<int64_t, int64_t> SliceBounds(const Slice& slice, int64_t size) {
  auto clamp = [size](int64_t value) {
    return std::clamp(value < 0 ? value + size : value, int64_t{0}, size);
  };
  const int64_t start = slice.start.has_value() ? clamp(*slice.start) : 0;
  const int64_t stop = slice.stop.has_value() ? clamp(*slice.stop) : size;
  return {start, std::max(start, stop)};
}

}  // namespace

Tensor index(const Tensor& x, const std::vector<TensorIndex>& indices) {
  lazy::NodePtr node = lazy::NodeOf(x, "index");
  const std::vector<int64_t> shape = node->shape().dimensions();
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t named = NamedDims(indices);
  if (named > rank) {
    throw IndexError(absl::StrCat(named, " indices for a tensor of rank ", rank));
  }
  std::vector<int64_t> result_shape;  // After ints drop dims and new axes add them.
  const Tensor* advanced = nullptr;   // The tensor entry, applied last at `advanced_dim`.
  int64_t advanced_dim = 0;
  int64_t dim = 0;
  for (const TensorIndex& entry : indices) {
    if (const Tensor* tensor = std::get_if<Tensor>(&entry)) {
      advanced = tensor;
      advanced_dim = static_cast<int64_t>(result_shape.size());
      for (int64_t covered = CoveredDims(*tensor); covered > 0; --covered, ++dim) {
        result_shape.push_back(shape[dim]);
      }
    } else if (std::holds_alternative<NewAxisType>(entry)) {
      result_shape.push_back(1);
    } else if (std::holds_alternative<EllipsisType>(entry)) {
      for (int64_t whole = rank - named; whole > 0; --whole, ++dim) {
        result_shape.push_back(shape[dim]);
      }
    } else if (const int64_t* at = std::get_if<int64_t>(&entry)) {
      const int64_t position = *at < 0 ? *at + shape[dim] : *at;
      if (position < 0 || position >= shape[dim]) {
        throw Error(ErrorCode::kOutOfRange,
                    absl::StrCat("index: ", *at, " is out of range for dim ", dim, " of size ",
                                 shape[dim]));
      }
      node = lazy::Unwrap(lazy::trace::Slice(node, dim, position, position + 1, 1));
      ++dim;
    } else {
      const Slice& slice = std::get<Slice>(entry);
      if (slice.step <= 0) throw IndexError("a slice's step must be positive");
      const auto [start, stop] = SliceBounds(slice, shape[dim]);
      if (start != 0 || stop != shape[dim] || slice.step != 1) {
        node = lazy::Unwrap(lazy::trace::Slice(node, dim, start, stop, slice.step));
      }
      result_shape.push_back(node->shape().dimension(dim));
      ++dim;
    }
  }
  for (; dim < rank; ++dim) result_shape.push_back(shape[dim]);
  if (result_shape != node->shape().dimensions()) {
    node = lazy::Unwrap(lazy::trace::Reshape(node, result_shape));
  }
  if (advanced != nullptr) {
    NodePtr index_node = lazy::NodeOf(*advanced, "index");
    node = index_node->shape().dtype() == ir::DType::kPred
               ? MaskAlong(node, advanced_dim, *advanced)
               : GatherAlong(node, advanced_dim, index_node);
  }
  return lazy::Wrap(node);
}

}  // namespace vkspmd
