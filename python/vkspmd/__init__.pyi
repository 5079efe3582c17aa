# Type stubs of the vkspmd package: the extension's names plus the pure-Python helpers.
from typing import Any, Optional

from ._C import *  # noqa: F401,F403
from ._C import Tensor, dtype
from . import collectives as collectives, distributed as distributed, nn as nn, optim as optim, spmd as spmd

__version__: str

def tensor(data: Any, dtype: Optional[dtype] = None) -> Tensor: ...
def as_tensor(data: Any, dtype: Optional[dtype] = None) -> Tensor: ...
def visualize_tensor_sharding(t: Tensor, use_color: bool = False,
                              svg_path: Optional[str] = None) -> str: ...
