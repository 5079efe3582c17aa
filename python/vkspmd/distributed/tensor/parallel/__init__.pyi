# Type stubs of vkspmd.distributed.tensor.parallel (the extension's _C.dtensor plans).
from typing import Dict, Union

from ...._C.nn import Module
from .. import DeviceMesh

class ColwiseParallel:
    def __init__(self) -> None: ...

class RowwiseParallel:
    def __init__(self) -> None: ...

class SequenceParallel:
    def __init__(self) -> None: ...

ParallelStyle = Union[ColwiseParallel, RowwiseParallel, SequenceParallel]

def parallelize_module(module: Module, device_mesh: DeviceMesh,
                       parallelize_plan: Dict[str, ParallelStyle], axis: str = "") -> Module: ...
