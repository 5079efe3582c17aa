"""torch.distributed.tensor for vkspmd: DTensor, the placements Shard / Replicate / Partial,
distribute_tensor, DeviceMesh and init_device_mesh. Each call is one call of the C++ DTensor API
(docs/dtensor.md); `vkspmd.Shard` is PyTorch/XLA's local shard, this module's Shard the
placement."""

from ..._C.dtensor import (DTensor, DeviceMesh, Partial, Replicate, Shard,  # noqa: F401
                           distribute_tensor)
from ..device_mesh import hybrid_device_mesh, init_device_mesh  # noqa: F401
from . import parallel  # noqa: F401

Placement = (Shard, Replicate, Partial)
