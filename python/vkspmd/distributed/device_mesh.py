"""torch.distributed.device_mesh: DeviceMesh and init_device_mesh over vkspmd's mesh devices."""

import math as _math

from .._C.dtensor import DeviceMesh, hybrid_device_mesh  # noqa: F401


def init_device_mesh(device_type, mesh_shape, *, mesh_dim_names=None):
    """A DeviceMesh of `mesh_shape` over mesh devices 0 .. prod(mesh_shape) - 1 in row-major
    order (torch's init_device_mesh). device_type is accepted for PyTorch's spelling and not
    used; there must be at least prod(mesh_shape) devices (vkspmd.device_count())."""
    shape = tuple(int(size) for size in mesh_shape)
    ids = list(range(_math.prod(shape)))
    nested = ids
    for size in reversed(shape[1:]):
        nested = [nested[i:i + size] for i in range(0, len(nested), size)]
    return DeviceMesh(device_type, nested, mesh_dim_names=mesh_dim_names)
