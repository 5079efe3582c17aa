# Type stubs of vkspmd.distributed (torch.distributed's DeviceMesh names).
from .device_mesh import DeviceMesh as DeviceMesh, init_device_mesh as init_device_mesh
from .device_mesh import hybrid_device_mesh as hybrid_device_mesh
from . import tensor as tensor
