"""torch.distributed.device_mesh: DeviceMesh, init_device_mesh and hybrid_device_mesh over the
mesh devices of the job (vkspmd.distributed.initialize())."""

from .._C.dtensor import DeviceMesh, hybrid_device_mesh  # noqa: F401
from .._C.dtensor import init_device_mesh as _init_device_mesh


def init_device_mesh(device_type, mesh_shape, *, mesh_dim_names=None):
    """A DeviceMesh of `mesh_shape` over the job's mesh devices 0 .. prod(mesh_shape) - 1 in
    row-major order (torch's init_device_mesh). After vkspmd.distributed.initialize() process
    p's devices follow those of processes 0 .. p-1, so a leading dim of process_count() spans
    the processes. device_type is accepted for PyTorch's spelling and not used; a job with fewer
    than prod(mesh_shape) devices raises InvalidArgumentError (a ValueError)."""
    return _init_device_mesh(tuple(mesh_shape), mesh_dim_names=mesh_dim_names)
