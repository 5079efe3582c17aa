"""vkspmd: GSPMD-style sharding of lazy tensor programs over Vulkan devices.

The API follows PyTorch (tensors, ops, nn, optim) and PyTorch/XLA's SPMD sharding
(Mesh, mark_sharding, mark_step). Every function is one call of the C++ library
(libvkspmd); see docs/python.md.

    import numpy as np
    import vkspmd
    mesh = vkspmd.Mesh(np.arange(8), (2, 4), ("x", "y"))
    t = vkspmd.randn(8, 4)
    m1 = vkspmd.mark_sharding(t, mesh, (0, 1))
    print(m1.sharding_spec)          # {devices=[2,4]<=[8]}
"""

import atexit as _atexit

import numpy as _np

from . import _C
from ._C import *  # noqa: F401,F403  (the extension's classes and functions)
from ._C import (Error, InvalidArgumentError, OutOfRangeError, UnimplementedError,  # noqa: F401
                 DeadlineExceededError, Tensor, ShardedTensor, Mesh, Shard, ShardingType, dtype,
                 grad, backward)

# The extension's nn, optim, dtensor, collectives and distributed submodules are re-exported by
# this package's own (below: nn, optim, distributed.tensor, collectives, distributed).
del nn, optim, dtensor, collectives, distributed  # noqa: F821

__version__ = "0.1.0"

# Exit with a graph still compiling or running: the library's own exit guard covers what was
# loaded before the graph it runs, but a graph compiled while the interpreter exits can load
# driver state (LLVM's, on lavapipe) whose C exit handlers run first and crash the driver's
# threads. Python's atexit runs before any C exit handler, with everything intact, so waiting
# here lets the launched graphs finish first (and the library's guard then closes the devices).
_atexit.register(_C.wait_device_ops)

_INT32 = _np.iinfo(_np.int32)


def tensor(data, dtype=None):
    """A tensor with a copy of `data` (a number, nested lists or a numpy array).

    Without `dtype`, Python floats (float64) become float32 and Python ints (int64) become
    int32, as torch.tensor's defaults do with vkspmd's types (ints outside int32 raise
    ValueError). With `dtype`, the values are converted to it (float16/bfloat16 round to
    nearest even).
    """
    array = _np.asarray(data)
    if dtype is None:
        if array.dtype == _np.float64:
            array = array.astype(_np.float32)
        elif array.dtype.kind == "i" and array.dtype.itemsize == 8:
            if array.size and (array.min() < _INT32.min or array.max() > _INT32.max):
                raise ValueError("tensor: the values do not fit int32, vkspmd's integer type")
            array = array.astype(_np.int32)
        return _C.from_numpy(array)
    if dtype == _C.bfloat16:
        if array.ndim == 0:
            return _C.scalar(float(array), dtype)
        return _C._from_float32(array.astype(_np.float32), dtype)
    numpy_types = {_C.float32: _np.float32, _C.float16: _np.float16, _C.int32: _np.int32,
                   _C.uint32: _np.uint32, _C.bool: _np.bool_}
    return _C.from_numpy(_np.asarray(array, dtype=numpy_types[dtype]))


def as_tensor(data, dtype=None):
    """The same as tensor() (vkspmd tensors never share host memory)."""
    return tensor(data, dtype)


def visualize_tensor_sharding(t, use_color=False, svg_path=None):
    """Prints and returns PyTorch/XLA's picture of t's sharding: a table of the tiles of its
    first two dims, each with the devices holding it and its index ranges. With `svg_path`
    the same picture is also written there as SVG."""
    text = _C._visualize_tensor_sharding(t, use_color)
    print(text, end="")
    if svg_path is not None:
        with open(svg_path, "w", encoding="utf-8") as svg:
            svg.write(_C._sharding_svg(t))
    return text


def _tolist(self):
    """The value as nested Python lists (via numpy)."""
    return self.numpy().tolist()


Tensor.tolist = _tolist

from . import collectives, distributed, nn, optim, spmd  # noqa: E402,F401  (spmd re-exports the above)
