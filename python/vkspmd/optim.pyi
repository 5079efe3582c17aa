# Type stubs of vkspmd.optim (the extension's _C.optim).
from typing import Iterable, List, Optional, Sequence, Tuple

from ._C import Tensor

class Optimizer:
    lr: float
    params: List[Tensor]
    def step(self, grads: Optional[Sequence[Optional[Tensor]]] = None) -> None: ...
    def step_count(self, index: int = 0) -> int: ...
    def state_tensors(self) -> List[Tuple[str, Tensor]]: ...

class SGD(Optimizer):
    def __init__(self, params: Iterable[Tensor], lr: float, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False) -> None: ...

class AdamW(Optimizer):
    def __init__(self, params: Iterable[Tensor], lr: float = 1e-3,
                 betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2) -> None: ...
