// index(): Python's basic indexing (ints, slices, new axes, an ellipsis) as one slice per cut dim
// and one reshape for the dims ints drop and new axes add.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "src/api/api_support.h"
#include "src/lazy/trace_ops.h"
#include "vkspmd/ops.h"

namespace vkspmd {
namespace {

Error IndexError(const std::string& message) {
  return Error(ErrorCode::kInvalidArgument, absl::StrCat("index: ", message));
}

// The number of tensor dims the entries name (ints and slices; not new axes or the ellipsis).
int64_t NamedDims(const std::vector<TensorIndex>& indices) {
  int64_t named = 0;
  int64_t ellipses = 0;
  for (const TensorIndex& entry : indices) {
    if (std::holds_alternative<int64_t>(entry) || std::holds_alternative<Slice>(entry)) ++named;
    if (std::holds_alternative<EllipsisType>(entry)) ++ellipses;
  }
  if (ellipses > 1) throw IndexError("at most one Ellipsis");
  return named;
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
  int64_t dim = 0;
  for (const TensorIndex& entry : indices) {
    if (std::holds_alternative<NewAxisType>(entry)) {
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
  if (result_shape == node->shape().dimensions()) return lazy::Wrap(node);
  return lazy::Wrap(lazy::trace::Reshape(node, result_shape));
}

}  // namespace vkspmd
