"""vkspmd.distributed: jax.distributed's calls for a job of several processes (initialize,
process_index, process_count, device_count, addressable_devices, with torch.distributed's
is_initialized, get_rank and get_world_size), and torch.distributed's DTensor API: DeviceMesh,
init_device_mesh and hybrid_device_mesh here, DTensor and the placements in
vkspmd.distributed.tensor, the tensor-parallel plans in vkspmd.distributed.tensor.parallel.
Each process drives its own devices; after initialize() a mesh spans every process's
(docs/distributed.md)."""

from .._C.distributed import (addressable_devices, device_count, initialize,  # noqa: F401
                              is_initialized, process_count, process_index)
from .device_mesh import DeviceMesh, hybrid_device_mesh, init_device_mesh  # noqa: F401
from . import tensor  # noqa: F401

# torch.distributed's names for the same queries (without initialize(): rank 0 of 1, where torch
# raises).
get_rank = process_index
get_world_size = process_count
