// The public Tensor class: its shape, reading values, assign, and the methods that forward to
// the free ops.
#include <fstream>

#include "absl/strings/str_cat.h"
#include "src/api/api_support.h"
#include "src/io/npy.h"
#include "src/lazy/trace_ops.h"
#include "vkspmd/ops.h"
#include "vkspmd/tensor.h"

namespace vkspmd {

using lazy::NodeOf;

const std::vector<int64_t>& Tensor::shape() const {
  return NodeOf(*this, "shape")->shape().dimensions();
}

int64_t Tensor::size(int64_t d) const { return shape()[lazy::NormalizeDim(d, dim(), "size")]; }

int64_t Tensor::numel() const { return NodeOf(*this, "numel")->shape().ElementCount(); }

DType Tensor::dtype() const { return lazy::FromIrType(NodeOf(*this, "dtype")->shape().dtype()); }

HostTensor Tensor::to_host(std::source_location where) const {
  return lazy::ToHostTensor(lazy::ReadValue(*this, where));
}

double Tensor::item(std::source_location where) const {
  if (numel() != 1) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("item: the tensor has ", numel(), " elements, not one"));
  }
  return to_host(where).at<double>(0);
}

void Tensor::to_npy(const std::string& path, std::source_location where) const {
  lazy::ThrowIfError(io::WriteNpyFile(path, lazy::ReadValue(*this, where)));
}

Tensor& Tensor::assign(const Tensor& value) {
  lazy::NodePtr target = NodeOf(*this, "assign");
  lazy::NodePtr node = NodeOf(value, "assign");
  if (target->shape() != node->shape()) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("assign: the value is ", node->shape().ToString(),
                             " but the tensor is ", target->shape().ToString()));
  }
  // The tensor keeps its sharding: the new value is constrained to it, so a parameter updated
  // every step stays where it was marked and the step's graph stays the same.
  if (const std::optional<lazy::ShardingAnnotation>& annotation = state()->annotation) {
    node = lazy::Unwrap(lazy::trace::ShardingConstraint(
        node, spmd::ToHloSharding(annotation->sharding, annotation->placement->local_mesh),
        annotation->placement));
  }
  // The first old value of a step, when it is data rather than a pending computation, may be
  // donated to the step's graph.
  if (state()->replaced == nullptr && target->is_leaf()) state()->replaced = target;
  state()->node = std::move(node);
  return *this;
}

Tensor& Tensor::operator+=(const Tensor& other) { return assign(*this + other); }
Tensor& Tensor::operator-=(const Tensor& other) { return assign(*this - other); }
Tensor& Tensor::operator*=(const Tensor& other) { return assign(*this * other); }
Tensor& Tensor::operator/=(const Tensor& other) { return assign(*this / other); }
Tensor& Tensor::operator+=(Scalar other) { return assign(*this + other); }
Tensor& Tensor::operator-=(Scalar other) { return assign(*this - other); }
Tensor& Tensor::operator*=(Scalar other) { return assign(*this * other); }
Tensor& Tensor::operator/=(Scalar other) { return assign(*this / other); }

Tensor Tensor::reshape(std::vector<int64_t> shape) const {
  return vkspmd::reshape(*this, std::move(shape));
}
Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  return vkspmd::transpose(*this, dim0, dim1);
}
Tensor Tensor::permute(std::vector<int64_t> dims) const {
  return vkspmd::permute(*this, std::move(dims));
}
Tensor Tensor::squeeze() const { return vkspmd::squeeze(*this); }
Tensor Tensor::squeeze(int64_t dim) const { return vkspmd::squeeze(*this, dim); }
Tensor Tensor::unsqueeze(int64_t dim) const { return vkspmd::unsqueeze(*this, dim); }
Tensor Tensor::expand(std::vector<int64_t> shape) const {
  return vkspmd::expand(*this, std::move(shape));
}
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  return vkspmd::narrow(*this, dim, start, length);
}
Tensor Tensor::sum() const { return vkspmd::sum(*this); }
Tensor Tensor::sum(std::vector<int64_t> dims, bool keepdim) const {
  return vkspmd::sum(*this, std::move(dims), keepdim);
}
Tensor Tensor::mean() const { return vkspmd::mean(*this); }
Tensor Tensor::mean(std::vector<int64_t> dims, bool keepdim) const {
  return vkspmd::mean(*this, std::move(dims), keepdim);
}
Tensor Tensor::max() const { return amax(*this); }
Tensor Tensor::max(int64_t dim, bool keepdim) const { return amax(*this, {dim}, keepdim); }
Tensor Tensor::min() const { return amin(*this); }
Tensor Tensor::min(int64_t dim, bool keepdim) const { return amin(*this, {dim}, keepdim); }
Tensor Tensor::argmax(int64_t dim, bool keepdim) const {
  return vkspmd::argmax(*this, dim, keepdim);
}
Tensor Tensor::argmin(int64_t dim, bool keepdim) const {
  return vkspmd::argmin(*this, dim, keepdim);
}
Tensor Tensor::softmax(int64_t dim) const { return vkspmd::softmax(*this, dim); }
Tensor Tensor::log_softmax(int64_t dim) const { return vkspmd::log_softmax(*this, dim); }
Tensor Tensor::matmul(const Tensor& other) const { return vkspmd::matmul(*this, other); }
Tensor Tensor::to(DType dtype) const { return to_dtype(*this, dtype); }

std::string dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kInt32:
      return "int32";
    case DType::kUInt32:
      return "uint32";
    case DType::kBool:
      return "bool";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
  }
  return "unknown";
}

}  // namespace vkspmd
