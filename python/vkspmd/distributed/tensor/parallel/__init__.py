"""torch.distributed.tensor.parallel for vkspmd.nn layers: parallelize_module with the
ColwiseParallel, RowwiseParallel and SequenceParallel styles (docs/dtensor.md)."""

from ...._C.dtensor import (ColwiseParallel, RowwiseParallel, SequenceParallel,  # noqa: F401
                            parallelize_module, tensor_parallel_plan)
