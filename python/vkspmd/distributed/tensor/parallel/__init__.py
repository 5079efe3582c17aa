"""torch.distributed.tensor.parallel for vkspmd.nn layers: parallelize_module with the
ColwiseParallel, RowwiseParallel and SequenceParallel styles, and FullyShard (PyTorch's
fully_shard, FSDP) as a style (docs/dtensor.md)."""

from ...._C.dtensor import (ColwiseParallel, FullyShard, RowwiseParallel,  # noqa: F401
                            SequenceParallel, parallelize_module, tensor_parallel_plan)
