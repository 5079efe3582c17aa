// torch.optim.AdamW's single-tensor update (decoupled weight decay).
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

void AdamW::Update(size_t i, const Tensor& grad, int64_t step) {
  Tensor param = params()[i];
  Tensor& exp_avg = exp_avg_[i];
  Tensor& exp_avg_sq = exp_avg_sq_[i];
  // The step count enters only through these host numbers, which are graph parameters.
  const double bias_correction1 = 1 - std::pow(beta1_, static_cast<double>(step));
  const double bias_correction2 = 1 - std::pow(beta2_, static_cast<double>(step));
  const double step_size = lr() / bias_correction1;
  const double bias_correction2_sqrt = std::sqrt(bias_correction2);
  param.assign(param * (1 - lr() * weight_decay_));
  exp_avg.assign(exp_avg + (grad - exp_avg) * (1 - beta1_));  // lerp_(grad, 1 - beta1)
  exp_avg_sq.assign(exp_avg_sq * beta2_ + grad * grad * (1 - beta2_));
  Tensor denom = sqrt(exp_avg_sq) / bias_correction2_sqrt + eps_;
  param.assign(param - exp_avg / denom * step_size);
}

}  // namespace vkspmd::optim
