// The basic layers (Linear, Embedding, LayerNorm, GELU, MLP, MlpRegressor) and the losses.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "src/nn/init.h"
#include "vkspmd/nn.h"
#include "vkspmd/ops.h"

namespace vkspmd::nn {

Linear::Linear(int64_t in_features, int64_t out_features, bool bias, LinearSplit split)
    : in_features_(in_features), out_features_(out_features) {
  RequirePositive({in_features, out_features}, "Linear");
  // PyTorch: kaiming_uniform_(a=sqrt(5)) has bound gain * sqrt(3 / fan_in) with
  // gain = sqrt(2 / (1 + 5)), i.e. 1 / sqrt(fan_in); the bias uses the same bound.
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  weight_ = Uniform({out_features, in_features}, bound);
  register_parameter("weight", &weight_,
                     split == LinearSplit::kColumn ? 0
                     : split == LinearSplit::kRow  ? 1
                                                   : -1);
  if (bias) {
    bias_ = Uniform({out_features}, bound);
    register_parameter("bias", &bias_, split == LinearSplit::kColumn ? 0 : -1);
  }
}

Tensor Linear::forward(const Tensor& x) const {
  if (x.dim() == 0 || x.size(-1) != in_features_) {
    throw Error(
        ErrorCode::kInvalidArgument,
        absl::StrCat("Linear(", in_features_, ", ", out_features_, "): the input's last dim ",
                     x.dim() == 0 ? 0 : x.size(-1), " is not ", in_features_));
  }
  // A parallel style's input_layouts / output_layouts, when set, constrain both ends.
  Tensor y = matmul(to_compute_dtype(layout_input(x)), to_compute_dtype(weight_).t());
  return layout_output(bias_.defined() ? y + to_compute_dtype(bias_) : y);
}

Embedding::Embedding(int64_t num_embeddings, int64_t dim, bool vocab_parallel) {
  RequirePositive({num_embeddings, dim}, "Embedding");
  weight_ = randn({num_embeddings, dim});
  register_parameter("weight", &weight_, vocab_parallel ? 0 : -1);
}

Tensor Embedding::forward(const Tensor& indices) const {
  return layout_output(embedding(layout_input(indices), weight_));
}

LayerNorm::LayerNorm(int64_t dim, double eps) : dim_(dim), eps_(eps) {
  RequirePositive({dim}, "LayerNorm");
  weight_ = ones({dim});
  bias_ = zeros({dim});
  register_parameter("weight", &weight_);
  register_parameter("bias", &bias_);
}

// In float32 under mixed precision too (its statistics need the range and the digits).
// Under SequenceParallel the statistics of each position stay on the device holding it.
Tensor LayerNorm::forward(const Tensor& x) const {
  return layout_output(layer_norm(layout_input(x).to(float32), {dim_}, weight_, bias_, eps_));
}

Tensor GELU::forward(const Tensor& x) const { return gelu(x, "none"); }

MLP::MLP(int64_t in_features, int64_t hidden_features, int64_t out_features)
    : fc1_(in_features, hidden_features, true, LinearSplit::kColumn),
      fc2_(hidden_features, out_features, true, LinearSplit::kRow) {
  register_module("fc1", &fc1_);
  register_module("fc2", &fc2_);
}

Tensor MLP::forward(const Tensor& x) const {
  Tensor hidden = constrain(gelu_(fc1_(x)), Activation::kFeatures);
  return constrain(fc2_(hidden), Activation::kBatch);
}

MlpRegressor::MlpRegressor(int64_t in_features, int64_t hidden_features, int64_t out_features)
    : mlp_(in_features, hidden_features, out_features) {
  register_module("mlp", &mlp_);
}

Tensor MlpRegressor::forward(const Tensor& x) const { return mlp_(shard_input(x)); }

Tensor MlpRegressor::loss(const Tensor& x, const Tensor& y) const {
  return mse_loss(forward(x), shard_input(y));
}

Tensor cross_entropy_loss(const Tensor& logits, const Tensor& targets) {
  // The op takes any leading dims ([B, T, V] with [B, T] too) and reduces over all of them, so
  // the batch dim keeps its sharding instead of being reshaped into B * T rows.
  if (logits.dim() != 2 && logits.dim() != 3) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("cross_entropy_loss: logits must be [B, T, V] or [N, V], not ",
                             ShapeText(logits.shape())));
  }
  return cross_entropy(logits.to(float32), targets, "mean");
}

Tensor mse_loss(const Tensor& prediction, const Tensor& target) {
  if (prediction.shape() != target.shape()) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("mse_loss: the prediction is ", ShapeText(prediction.shape()),
                             " but the target is ", ShapeText(target.shape())));
  }
  Tensor difference = prediction.to(float32) - target.to(float32);
  return mean(difference * difference);
}

}  // namespace vkspmd::nn
