// Shape public ops: reshape, transpose, permute, squeeze, unsqueeze, expand, slice, cat, matmul.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/api/api_support.h"
#include "src/lazy/trace_ops.h"
#include "vkspmd/ops.h"

namespace vkspmd {
namespace {

using lazy::NodeOf;
using lazy::NodePtr;
using lazy::NormalizeDim;
using lazy::Wrap;

std::string DimsText(const std::vector<int64_t>& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ", "), "]");
}

Error InvalidArgument(const std::string& message) {
  return Error(ErrorCode::kInvalidArgument, message);
}

}  // namespace

Tensor reshape(const Tensor& x, std::vector<int64_t> shape) {
  NodePtr node = NodeOf(x, "reshape");
  const std::vector<int64_t>& from = node->shape().dimensions();
  int64_t known = 1, inferred = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1 && inferred < 0) {
      inferred = static_cast<int64_t>(d);
    } else if (shape[d] < 0) {
      throw InvalidArgument(absl::StrCat("reshape: invalid shape ", DimsText(shape)));
    } else {
      known *= shape[d];
    }
  }
  const int64_t count = node->shape().ElementCount();
  if (inferred >= 0 && known > 0 && count % known == 0) shape[inferred] = count / known;
  if (ir::Product(shape) != count || (inferred >= 0 && shape[inferred] < 0)) {
    throw InvalidArgument(absl::StrCat("reshape: shape ", DimsText(shape), " is invalid for ",
                                       DimsText(from), " (", count, " elements)"));
  }
  return Wrap(lazy::trace::Reshape(node, shape));
}

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) {
  NodePtr node = NodeOf(x, "transpose");
  const int64_t rank = node->shape().rank();
  std::vector<int64_t> permutation(rank);
  for (int64_t d = 0; d < rank; ++d) permutation[d] = d;
  std::swap(permutation[NormalizeDim(dim0, rank, "transpose")],
            permutation[NormalizeDim(dim1, rank, "transpose")]);
  return Wrap(lazy::trace::Transpose(node, permutation));
}

Tensor permute(const Tensor& x, std::vector<int64_t> dims) {
  NodePtr node = NodeOf(x, "permute");
  const int64_t rank = node->shape().rank();
  if (static_cast<int64_t>(dims.size()) != rank) {
    throw InvalidArgument(absl::StrCat("permute: ", dims.size(), " dims for a tensor of shape ",
                                       DimsText(node->shape().dimensions())));
  }
  for (int64_t& d : dims) d = NormalizeDim(d, rank, "permute");
  std::vector<int64_t> sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw InvalidArgument(absl::StrCat("permute: dims ", DimsText(dims), " repeat a dim"));
  }
  return Wrap(lazy::trace::Transpose(node, dims));
}

Tensor squeeze(const Tensor& x) {
  std::vector<int64_t> kept;
  for (int64_t dim : x.shape()) {
    if (dim != 1) kept.push_back(dim);
  }
  return Wrap(lazy::trace::Reshape(NodeOf(x), kept));
}

Tensor squeeze(const Tensor& x, int64_t dim) {
  std::vector<int64_t> shape = x.shape();
  const int64_t d = NormalizeDim(dim, x.dim(), "squeeze");
  if (shape[d] == 1) shape.erase(shape.begin() + d);
  return Wrap(lazy::trace::Reshape(NodeOf(x), shape));
}

Tensor unsqueeze(const Tensor& x, int64_t dim) {
  std::vector<int64_t> shape = x.shape();
  const int64_t d = NormalizeDim(dim, x.dim() + 1, "unsqueeze");
  shape.insert(shape.begin() + d, 1);
  return Wrap(lazy::trace::Reshape(NodeOf(x), shape));
}

Tensor expand(const Tensor& x, std::vector<int64_t> shape) {
  const std::vector<int64_t>& from = x.shape();
  if (shape.size() < from.size()) {
    throw InvalidArgument(absl::StrCat("expand: shape ", DimsText(shape),
                                       " has fewer dims than the tensor's ", DimsText(from)));
  }
  const size_t offset = shape.size() - from.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      if (d < offset) throw InvalidArgument("expand: -1 is not allowed for a new leading dim");
      shape[d] = from[d - offset];
    }
    if (d >= offset && from[d - offset] != 1 && from[d - offset] != shape[d]) {
      throw InvalidArgument(absl::StrCat("expand: the tensor of shape ", DimsText(from),
                                         " cannot be expanded to ", DimsText(shape),
                                         " (only size-1 dims grow)"));
    }
  }
  return Wrap(lazy::trace::BroadcastTo(NodeOf(x, "expand"), shape));
}

Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  NodePtr node = NodeOf(x, "slice");
  const int64_t d = NormalizeDim(dim, node->shape().rank(), "slice");
  const int64_t size = node->shape().dimension(d);
  if (step <= 0) throw InvalidArgument("slice: step must be positive");
  auto clamp = [&](int64_t index) {
    return std::clamp(index < 0 ? index + size : index, int64_t{0}, size);
  };
  start = clamp(start);
  end = std::max(start, clamp(end));
  return Wrap(lazy::trace::Slice(node, d, start, end, step));
}

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  const int64_t d = NormalizeDim(dim, x.dim(), "narrow");
  const int64_t size = x.shape()[d];
  if (start < 0) start += size;
  if (start < 0 || length < 0 || start + length > size) {
    throw InvalidArgument(absl::StrCat("narrow: [", start, ", ", start + length,
                                       ") is outside dim ", dim, " of shape ",
                                       DimsText(x.shape())));
  }
  return slice(x, d, start, start + length);
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty()) throw InvalidArgument("cat: no tensors");
  std::vector<NodePtr> parts;
  for (const Tensor& t : tensors) parts.push_back(NodeOf(t, "cat"));
  const int64_t d = NormalizeDim(dim, parts[0]->shape().rank(), "cat");
  return Wrap(lazy::trace::Concatenate(parts, d));
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  return Wrap(lazy::trace::Matmul(NodeOf(a, "matmul"), NodeOf(b, "matmul")));
}

}  // namespace vkspmd
