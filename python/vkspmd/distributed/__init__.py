"""vkspmd.distributed, spelled as torch.distributed for the DTensor API: DeviceMesh and
init_device_mesh here, DTensor and the placements in vkspmd.distributed.tensor, the
tensor-parallel plans in vkspmd.distributed.tensor.parallel. One process drives every mesh
device, so there is no process group to initialise."""

from .device_mesh import DeviceMesh, hybrid_device_mesh, init_device_mesh  # noqa: F401
from . import tensor  # noqa: F401
