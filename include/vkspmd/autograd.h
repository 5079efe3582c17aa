// Reverse-mode automatic differentiation of lazy tensors, as torch.autograd.grad and
// Tensor.backward. Nothing runs at the call: the gradients are pending tensors traced into the
// same graph as the loss (the backward pass reuses the forward values), so forward, backward and
// the optimizer's update compile and run as one step.
#pragma once

#include <vector>

#include "vkspmd/tensor.h"

namespace vkspmd {

// d loss / d input for each input, as tensors of the inputs' shapes. `loss` must be a
// floating-point scalar (0-d); every input floating-point. An input may be data (a parameter)
// or an intermediate result: either is treated as an independent variable. An input the loss
// does not depend on gets a zero gradient (PyTorch would need allow_unused=True and return
// None). An op on the path from an input to the loss without a gradient rule throws, naming it.
std::vector<Tensor> grad(const Tensor& loss, const std::vector<Tensor>& inputs);

// Sets t.grad() for every live tensor t with requires_grad() that the loss's trace reaches, to
// d loss / d t. Each call OVERWRITES the gradients (PyTorch accumulates into .grad until
// zero_grad; here every backward starts from zero, so there is no zero_grad). Tensors the loss
// does not reach keep their grad(). Throws when the loss reaches no tensor with requires_grad,
// and for the errors of grad().
void backward(const Tensor& loss);

}  // namespace vkspmd
