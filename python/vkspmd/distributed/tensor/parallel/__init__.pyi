# Type stubs of vkspmd.distributed.tensor.parallel (the extension's _C.dtensor plans).
from typing import Dict, Optional, Union

from ...._C.nn import Module
from .. import DeviceMesh, Placement

class ColwiseParallel:
    def __init__(self, *, input_layouts: Optional[Placement] = None,
                 output_layouts: Optional[Placement] = None,
                 use_local_output: bool = True) -> None: ...

class RowwiseParallel:
    def __init__(self, *, input_layouts: Optional[Placement] = None,
                 output_layouts: Optional[Placement] = None,
                 use_local_output: bool = True) -> None: ...

class SequenceParallel:
    def __init__(self) -> None: ...

class FullyShard:
    def __init__(self, dim: Optional[int] = None) -> None: ...
    @property
    def dim(self) -> Optional[int]: ...

ParallelStyle = Union[ColwiseParallel, RowwiseParallel, SequenceParallel, FullyShard]

def parallelize_module(module: Module, device_mesh: DeviceMesh,
                       parallelize_plan: Dict[str, ParallelStyle], axis: str = "",
                       data_axis: str = "") -> Module: ...

def tensor_parallel_plan(module: Module) -> Dict[str, ParallelStyle]: ...
