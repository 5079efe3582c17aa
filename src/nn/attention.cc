// Causal multi-head self-attention.
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "src/nn/init.h"
#include "vkspmd/nn.h"
#include "vkspmd/ops.h"

namespace vkspmd::nn {
namespace {

int64_t CheckedHeadDim(int64_t d_model, int64_t heads) {
  RequirePositive({d_model, heads}, "CausalSelfAttention");
  if (d_model % heads != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("CausalSelfAttention: d_model ", d_model,
                             " is not divisible by the number of heads ", heads));
  }
  return d_model / heads;
}

// [T, T] bool, true where key position s may be seen from query position t (s <= t).
Tensor CausalMask(int64_t length) {
  Tensor positions = arange(length);
  return ge(positions.unsqueeze(1), positions.unsqueeze(0));
}

}  // namespace

// d_model is checked first, so a bad head count throws before any weight is drawn.
CausalSelfAttention::CausalSelfAttention(int64_t d_model, int64_t heads)
    : d_model_(CheckedHeadDim(d_model, heads) * heads),
      heads_(heads),
      query_(d_model, d_model, true, LinearSplit::kColumn),
      key_(d_model, d_model, true, LinearSplit::kColumn),
      value_(d_model, d_model, true, LinearSplit::kColumn),
      output_(d_model, d_model, true, LinearSplit::kRow) {
  register_module("query", &query_);
  register_module("key", &key_);
  register_module("value", &value_);
  register_module("output", &output_);
}

void CausalSelfAttention::check_parallel_plan(const ParallelPlan& plan) const {
  const int64_t ways = plan.axis_size(plan.model_axis);
  if (heads_ % ways != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("strategy ", plan.strategy, ": the ", heads_,
                             " attention heads do not split over the ", ways,
                             " devices of model axis \"", plan.model_axis, "\""));
  }
}

// [B, T, d_model] → [B, heads, T, head_dim]: the column-parallel projection's split features
// are whole heads, so under tensor parallelism each device keeps its heads.
Tensor CausalSelfAttention::SplitHeads(const Tensor& x) const {
  Tensor split = x.reshape({x.size(0), x.size(1), heads_, d_model_ / heads_});
  return constrain(split.permute({0, 2, 1, 3}), Activation::kHeads);
}

Tensor CausalSelfAttention::forward(const Tensor& x) const {
  if (x.dim() != 3 || x.size(2) != d_model_) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("CausalSelfAttention: the input must be [B, T, ", d_model_, "], not ",
                             ShapeText(x.shape())));
  }
  const int64_t batch = x.size(0), length = x.size(1);
  Tensor q = SplitHeads(query_(x)), k = SplitHeads(key_(x)), v = SplitHeads(value_(x));
  const double scale = 1.0 / std::sqrt(static_cast<double>(d_model_ / heads_));
  // Under mixed precision q, k and v are in the compute dtype; the softmax is in float32 and its
  // probabilities go back to the compute dtype for the second matmul.
  Tensor scores = matmul(q, k.transpose(-2, -1)) * scale;
  // -inf as PyTorch's masked_fill: the diagonal is never masked, so each row keeps a finite
  // maximum and the masked entries become exact zeros after the softmax.
  scores = where(CausalMask(length), scores, -std::numeric_limits<float>::infinity());
  Tensor heads = matmul(to_compute_dtype(softmax(scores.to(float32), -1)), v);
  Tensor merged = heads.permute({0, 2, 1, 3}).reshape({batch, length, d_model_});
  return constrain(output_(constrain(merged, Activation::kFeatures)), Activation::kBatch);
}

}  // namespace vkspmd::nn
