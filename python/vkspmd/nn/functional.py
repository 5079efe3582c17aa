"""torch.nn.functional's names for vkspmd's ops."""

from .._C import (cross_entropy, embedding, gelu, layer_norm, log_softmax,  # noqa: F401
                  one_hot, relu, sigmoid, softmax, tanh)
from .._C.nn import mse_loss  # noqa: F401
