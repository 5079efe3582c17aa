"""vkspmd.nn: torch.nn's layers (forward; gradients come from vkspmd.grad/backward), the losses
and the sharding strategies (data_parallel, tensor_parallel, data_tensor_parallel, fsdp_v2)."""

from .._C.nn import *  # noqa: F401,F403
from . import functional  # noqa: F401
