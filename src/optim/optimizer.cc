// What every optimizer shares: checking the parameters, matching gradients to them, the
// learning rate and the per-parameter step counts.
#include <string>

#include "vkspmd/ops.h"
#include "vkspmd/optim.h"
#include "vkspmd/sharded_tensor.h"

namespace vkspmd::optim {
namespace {

std::string DimsText(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t d = 0; d < dims.size(); ++d) text += (d ? ", " : "") + std::to_string(dims[d]);
  return text + "]";
}

void CheckLr(double lr) {
  if (!(lr >= 0)) {
    throw Error(ErrorCode::kInvalidArgument, "Invalid learning rate: " + std::to_string(lr));
  }
}

}  // namespace

Optimizer::Optimizer(std::vector<Tensor> params, double lr)
    : params_(std::move(params)), steps_(params_.size(), 0), lr_(lr) {
  CheckLr(lr);
  if (params_.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "optimizer got an empty parameter list");
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].defined()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "optimizer parameter " + std::to_string(i) + " is an undefined tensor");
    }
    if (params_[i].dtype() != float32) {
      throw Error(ErrorCode::kInvalidArgument, "optimizer parameter " + std::to_string(i) + " is " +
                                                   dtype_name(params_[i].dtype()) +
                                                   "; only float32 tensors can be optimized");
    }
    for (size_t j = 0; j < i; ++j) {
      if (params_[j].is_same(params_[i])) {
        throw Error(ErrorCode::kInvalidArgument, "optimizer parameter " + std::to_string(i) +
                                                     " is the same tensor as parameter " +
                                                     std::to_string(j));
      }
    }
  }
}

void Optimizer::set_step_counts(const std::vector<int64_t>& counts) {
  if (counts.size() != params_.size()) {
    throw Error(ErrorCode::kInvalidArgument, "set_step_counts: " + std::to_string(counts.size()) +
                                                 " counts for " + std::to_string(params_.size()) +
                                                 " parameters");
  }
  for (int64_t count : counts) {
    if (count < 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "set_step_counts: a step count is negative (" + std::to_string(count) + ")");
    }
  }
  steps_ = counts;
}

void Optimizer::set_lr(double lr) {
  CheckLr(lr);
  lr_ = lr;
}

Tensor Optimizer::ZerosLikeParam(size_t i) const {
  Tensor zero = zeros_like(params_[i]);
  mark_sharding_like(zero, params_[i]);
  return zero;
}

void Optimizer::step(const std::vector<Tensor>& grads) {
  if (grads.size() != params_.size()) {
    throw Error(ErrorCode::kInvalidArgument, "optimizer step: " + std::to_string(grads.size()) +
                                                 " gradients for " +
                                                 std::to_string(params_.size()) + " parameters");
  }
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) continue;
    if (grads[i].shape() != params_[i].shape() || grads[i].dtype() != params_[i].dtype()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "optimizer step: gradient " + std::to_string(i) + " is " +
                      dtype_name(grads[i].dtype()) + DimsText(grads[i].shape()) +
                      " but its parameter is " + dtype_name(params_[i].dtype()) +
                      DimsText(params_[i].shape()));
    }
  }
  for (size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].defined()) Update(i, grads[i], ++steps_[i]);
  }
  FinishStep();
}

void Optimizer::step() {
  std::vector<Tensor> grads;
  for (const Tensor& param : params_) grads.push_back(param.grad());
  step(grads);
}

}  // namespace vkspmd::optim
