// torch.optim.SGD's single-tensor update.
#include <string>

#include "vkspmd/ops.h"
#include "vkspmd/optim.h"

namespace vkspmd::optim {

SGD::SGD(std::vector<Tensor> params, double lr, double momentum, double dampening,
         double weight_decay, bool nesterov)
    : Optimizer(std::move(params), lr),
      momentum_(momentum),
      dampening_(dampening),
      weight_decay_(weight_decay),
      nesterov_(nesterov) {
  if (!(momentum >= 0)) {
    throw Error(ErrorCode::kInvalidArgument, "Invalid momentum value: " + std::to_string(momentum));
  }
  if (!(weight_decay >= 0)) {
    throw Error(ErrorCode::kInvalidArgument,
                "Invalid weight_decay value: " + std::to_string(weight_decay));
  }
  if (nesterov && (momentum <= 0 || dampening != 0)) {
    throw Error(ErrorCode::kInvalidArgument,
                "Nesterov momentum requires a momentum and zero dampening");
  }
  buffers_.resize(this->params().size());
  if (momentum != 0) {
    for (size_t i = 0; i < buffers_.size(); ++i) buffers_[i] = ZerosLikeParam(i);
  }
}

std::vector<std::pair<std::string, Tensor>> SGD::state_tensors() const {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (size_t i = 0; i < buffers_.size(); ++i) {
    if (buffers_[i].defined())
      tensors.emplace_back("momentum_buffer." + std::to_string(i), buffers_[i]);
  }
  return tensors;
}

void SGD::Update(size_t i, const Tensor& grad, int64_t step) {
  Tensor param = params()[i];
  Tensor direction = grad;
  if (weight_decay_ != 0) direction = direction + param * weight_decay_;
  if (momentum_ != 0) {
    // PyTorch starts the buffer as a copy of the first direction; with a zero buffer that is a
    // scale of 1 at step 1, a graph parameter like every other scalar (one graph for all steps).
    const double scale = step == 1 ? 1.0 : 1.0 - dampening_;
    Tensor& buffer = buffers_[i];
    buffer.assign(buffer * momentum_ + direction * scale);
    direction = nesterov_ ? direction + buffer * momentum_ : Tensor(buffer);
  }
  param.assign(param - direction * lr());
}

}  // namespace vkspmd::optim
