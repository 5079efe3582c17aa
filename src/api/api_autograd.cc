// The public autodiff calls: grad, backward and the requires_grad flag.
#include "absl/strings/str_cat.h"
#include "src/api/api_support.h"
#include "src/lazy/autograd.h"
#include "src/lazy/context.h"
#include "vkspmd/autograd.h"

namespace vkspmd {

std::vector<Tensor> grad(const Tensor& loss, const std::vector<Tensor>& inputs) {
  lazy::NodePtr loss_node = lazy::NodeOf(loss, "grad");
  std::vector<lazy::NodePtr> variables;
  for (const Tensor& input : inputs) variables.push_back(lazy::NodeOf(input, "grad"));
  lazy::GradientNodes gradients = lazy::Unwrap(lazy::Differentiate(loss_node, variables));
  std::vector<Tensor> result;
  for (lazy::NodePtr& node : gradients.gradients) result.push_back(lazy::Wrap(std::move(node)));
  return result;
}

void backward(const Tensor& loss) {
  lazy::NodePtr loss_node = lazy::NodeOf(loss, "backward");
  std::vector<std::shared_ptr<lazy::TensorState>> flagged;
  std::vector<lazy::NodePtr> variables;
  for (std::shared_ptr<lazy::TensorState>& state : lazy::Context::Get().LiveTensors()) {
    if (!state->requires_grad) continue;
    variables.push_back(state->node);
    flagged.push_back(std::move(state));
  }
  lazy::GradientNodes gradients = lazy::Unwrap(lazy::Differentiate(loss_node, variables));
  bool any = false;
  for (size_t i = 0; i < flagged.size(); ++i) {
    if (!gradients.reached[i]) continue;
    flagged[i]->grad = lazy::Wrap(std::move(gradients.gradients[i])).state();
    any = true;
  }
  if (!any) {
    throw Error(ErrorCode::kInvalidArgument,
                "backward: the loss depends on no tensor with requires_grad (call "
                "requires_grad_() on the parameters first)");
  }
}

Tensor& Tensor::requires_grad_(bool requires_grad) {
  lazy::NodePtr node = lazy::NodeOf(*this, "requires_grad_");
  if (requires_grad && !ir::IsFloat(node->shape().dtype())) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("requires_grad_: only floating-point tensors can require gradients; "
                             "this one is ",
                             node->shape().ToString()));
  }
  state()->requires_grad = requires_grad;
  return *this;
}

bool Tensor::requires_grad() const {
  lazy::NodeOf(*this, "requires_grad");
  return state()->requires_grad;
}

Tensor Tensor::grad() const {
  lazy::NodeOf(*this, "grad");
  return state()->grad ? Tensor(state()->grad) : Tensor();
}

}  // namespace vkspmd
