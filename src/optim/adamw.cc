// torch.optim.AdamW's single-tensor update (decoupled weight decay).
#include <algorithm>
#include <cmath>
#include <string>

#include "vkspmd/ops.h"
#include "vkspmd/optim.h"

namespace vkspmd::optim {

AdamW::AdamW(std::vector<Tensor> params, double lr, std::pair<double, double> betas, double eps,
             double weight_decay)
    : Optimizer(std::move(params), lr),
      beta1_(betas.first),
      beta2_(betas.second),
      eps_(eps),
      weight_decay_(weight_decay) {
  if (!(eps >= 0)) {
    throw Error(ErrorCode::kInvalidArgument, "Invalid epsilon value: " + std::to_string(eps));
  }
  for (double beta : {beta1_, beta2_}) {
    if (!(beta >= 0 && beta < 1)) {
      throw Error(ErrorCode::kInvalidArgument, "Invalid beta parameter: " + std::to_string(beta));
    }
  }
  if (!(weight_decay >= 0)) {
    throw Error(ErrorCode::kInvalidArgument,
                "Invalid weight_decay value: " + std::to_string(weight_decay));
  }
  for (size_t i = 0; i < this->params().size(); ++i) {
    exp_avg_.push_back(ZerosLikeParam(i));
    exp_avg_sq_.push_back(ZerosLikeParam(i));
  }
}

std::vector<std::pair<std::string, Tensor>> AdamW::state_tensors() const {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (size_t i = 0; i < exp_avg_.size(); ++i) {
    tensors.emplace_back("exp_avg." + std::to_string(i), exp_avg_[i]);
    tensors.emplace_back("exp_avg_sq." + std::to_string(i), exp_avg_sq_[i]);
  }
  return tensors;
}

const std::vector<Tensor>& AdamW::StepScalars(int64_t step, DType dtype) {
  const double bias_correction1 = 1 - std::pow(beta1_, static_cast<double>(step));
  const double bias_correction2 = 1 - std::pow(beta2_, static_cast<double>(step));
  const std::vector<double> values = {
      1 - lr() * weight_decay_, 1 - beta1_, beta2_, 1 - beta2_, std::sqrt(bias_correction2), eps_,
      lr() / bias_correction1};
  // Entries of earlier steps (or learning rates) are dropped; parameters at the same step share.
  auto found = std::find_if(step_scalars_.begin(), step_scalars_.end(), [&](const auto& entry) {
    return entry.step == step && entry.dtype == dtype && entry.values == values;
  });
  if (found != step_scalars_.end()) return found->tensors;
  if (step_scalars_.size() >= 4) step_scalars_.erase(step_scalars_.begin());
  // One host tensor holding all seven, each scalar a slice of it: a kernel updating several
  // parameters binds one buffer for them instead of seven, which leaves room under a device's
  // binding limit (32 on lavapipe) for four parameters' updates per kernel instead of three.
  // Other dtypes keep a tensor per value, each rounded once from the double (as scalar() does).
  ScalarsEntry entry{step, dtype, values, {}};
  if (dtype == float32) {
    const std::vector<float> narrowed(values.begin(), values.end());
    const Tensor all = tensor(narrowed, {static_cast<int64_t>(values.size())}, dtype);
    for (int64_t k = 0; k < static_cast<int64_t>(values.size()); ++k) {
      entry.tensors.push_back(all.narrow(0, k, 1).reshape({}));
    }
  } else {
    for (double value : values) entry.tensors.push_back(scalar(value, dtype));
  }
  step_scalars_.push_back(std::move(entry));
  return step_scalars_.back().tensors;
}

void AdamW::Update(size_t i, const Tensor& grad, int64_t step) {
  Tensor param = params()[i];
  Tensor& exp_avg = exp_avg_[i];
  Tensor& exp_avg_sq = exp_avg_sq_[i];
  // The step count enters only through these host numbers, one graph parameter. Every parameter
  // of a step reads the same scalar tensors (slices of it) instead of seven of its own, so the
  // device kernels updating several parameters bind them once.
  const std::vector<Tensor>& s = StepScalars(step, param.dtype());
  param.assign(param * s[0]);
  exp_avg.assign(exp_avg + (grad - exp_avg) * s[1]);  // lerp_(grad, 1 - beta1)
  exp_avg_sq.assign(exp_avg_sq * s[2] + grad * grad * s[3]);
  Tensor denom = sqrt(exp_avg_sq) / s[4] + s[5];
  param.assign(param - exp_avg / denom * s[6]);
}

}  // namespace vkspmd::optim
