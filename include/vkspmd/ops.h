// Tensor ops with PyTorch's names, broadcasting and dim conventions (negative dims count from
// the end). Shape errors throw vkspmd::Error at the call, naming the shapes involved.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "vkspmd/tensor.h"

namespace vkspmd {

// Arithmetic with broadcasting; a scalar operand is a graph parameter.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, Scalar b);
Tensor operator-(const Tensor& a, Scalar b);
Tensor operator*(const Tensor& a, Scalar b);
Tensor operator/(const Tensor& a, Scalar b);
Tensor operator+(Scalar a, const Tensor& b);
Tensor operator-(Scalar a, const Tensor& b);
Tensor operator*(Scalar a, const Tensor& b);
Tensor operator/(Scalar a, const Tensor& b);
Tensor operator-(const Tensor& a);

// Elementwise math.
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
// approximate: "none" (the erf form, PyTorch's default) or "tanh".
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor pow(const Tensor& x, const Tensor& exponent);
Tensor pow(const Tensor& x, Scalar exponent);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);

// Comparisons give bool tensors.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, Scalar b);
Tensor ne(const Tensor& a, Scalar b);
Tensor lt(const Tensor& a, Scalar b);
Tensor le(const Tensor& a, Scalar b);
Tensor gt(const Tensor& a, Scalar b);
Tensor ge(const Tensor& a, Scalar b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, Scalar b);
Tensor operator<=(const Tensor& a, Scalar b);
Tensor operator>(const Tensor& a, Scalar b);
Tensor operator>=(const Tensor& a, Scalar b);
// condition ? a : b, all three broadcast together.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, Scalar b);
// Element type conversion.
Tensor to_dtype(const Tensor& x, DType dtype);

// matmul with PyTorch's rules: 1-D operands are vectors, batch dims broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);

// Shape ops. reshape accepts one -1.
Tensor reshape(const Tensor& x, std::vector<int64_t> shape);
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
Tensor permute(const Tensor& x, std::vector<int64_t> dims);
Tensor squeeze(const Tensor& x);
Tensor squeeze(const Tensor& x, int64_t dim);
Tensor unsqueeze(const Tensor& x, int64_t dim);
// Size-1 dims grow to `shape` (-1 keeps a dim); new leading dims may be added.
Tensor expand(const Tensor& x, std::vector<int64_t> shape);
// Elements start, start + step, ... below end of `dim` (end is clamped, negatives count back).
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);

// Basic indexing, as Python's x[1, :, 2:5] (torch::indexing). Per entry: an int picks one
// element of its dim and drops the dim (negative counts from the end; out of range throws); a
// Slice keeps start, start + step, ... below stop (missing ends are the dim's ends, negative ones
// count from the end, all clamped as Python clamps them; the step is positive); NewAxis inserts
// a dim of size 1; Ellipsis stands for the whole dims the other entries leave (at most one).
// Dims after the entries stay whole.
// A Tensor entry is advanced indexing, as torch's x[idx] (at most one per index): an integer
// tensor picks elements of its dim by index (the dim becomes the index's shape, one gather;
// negative indices count from the end, indices still out of range are clamped as XLA's gather
// clamps, since checking them would read them); a bool mask covers as many dims as its rank,
// which must equal those dims, and keeps the elements where it is true, flattened into one dim.
// A mask's result shape depends on its values, so the mask is read (waiting for it, as item()
// does) and the positions sent back as a gather's indices.
struct Slice {
  std::optional<int64_t> start;
  std::optional<int64_t> stop;
  int64_t step = 1;
};
struct NewAxisType {};
inline constexpr NewAxisType NewAxis{};
struct EllipsisType {};
inline constexpr EllipsisType Ellipsis{};
using TensorIndex = std::variant<int64_t, Slice, NewAxisType, EllipsisType, Tensor>;
Tensor index(const Tensor& x, const std::vector<TensorIndex>& indices);

// Reductions over `dims` (empty: all dims).
Tensor sum(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor amax(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
// The index (int32) of the first largest element along `dim`.
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
// The index (int32) of the first smallest element along `dim`.
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);

// Neural-network functions.
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);
// Normalises over the trailing dims `normalized_shape`; weight and bias are optional.
Tensor layer_norm(const Tensor& x, std::vector<int64_t> normalized_shape,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                  double eps = 1e-5);
// int32 indices → int32 one-hot vectors with a new last dim of `num_classes`.
Tensor one_hot(const Tensor& indices, int64_t num_classes);
// Rows of `weight` ([num_embeddings, dim]) picked by int32 `indices`, as a one-hot matmul.
Tensor embedding(const Tensor& indices, const Tensor& weight);
// logits [N, C] (or [C]) and int32 class indices [N] (or []); reduction "mean", "sum" or
// "none".
Tensor cross_entropy(const Tensor& logits, const Tensor& target,
                     const std::string& reduction = "mean");

}  // namespace vkspmd
