"""vkspmd.nn: torch.nn's layers (forward; gradients come from vkspmd.grad/backward), the losses
and the sharding strategies (data_parallel, tensor_parallel, data_tensor_parallel, fsdp_v2).

Subclass Module as in PyTorch: call super().__init__(), assign Parameters and child modules as
attributes (each assignment is one register_parameter / add_module call of the C++ Module, so
named_parameters, the optimizers, grad and the strategies see them), and define forward."""

from .. import _C
from .._C.nn import *  # noqa: F401,F403
from .._C.nn import Module
from . import functional  # noqa: F401


class Parameter(_C.Tensor):
    """torch.nn.Parameter: `data` itself (not a copy) marked as a module parameter; a floating
    point one gets requires_grad (for backward()) unless requires_grad=False."""

    def __init__(self, data, requires_grad=True):
        super().__init__(data)
        if requires_grad and data.dtype.is_floating_point:
            self.requires_grad_()


def _setattr(self, name, value):
    """Assigning a Parameter registers it, a Module adds it as a child (as torch.nn.Module)."""
    object.__setattr__(self, name, value)
    if isinstance(value, Parameter):
        self.register_parameter(name, value)
    elif isinstance(value, Module):
        self.add_module(name, value)


def _call(self, *args, **kwargs):
    """module(x) is module.forward(x)."""
    return self.forward(*args, **kwargs)


def _forward(self, *args, **kwargs):
    raise NotImplementedError(f"{type(self).__name__} defines no forward()")


# The C++ layers bind their own forward and __call__, which take precedence.
Module.__setattr__ = _setattr
Module.__call__ = _call
Module.forward = _forward
