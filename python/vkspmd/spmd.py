"""PyTorch/XLA's SPMD module, spelled as torch_xla.distributed.spmd: `import vkspmd.spmd as xs`.
Also the xla_model calls a training loop uses (mark_step, wait_device_ops), and JAX's shard_map
next to the manual-sharding calls (collectives: vkspmd.collectives), and auto_shard (auto-sharding
by an ILP, as PyTorch/XLA's and JAX's auto-sharding)."""

from ._C import (AutoShardPlan, Mesh, ShardedTensor, ShardingType, auto_shard,  # noqa: F401
                 clear_sharding, disable_manual_sharding, enable_manual_sharding, get_1d_mesh,
                 get_global_mesh, mark_sharding, mark_sharding_like, mark_step, metrics_report, set_global_mesh,
                 shard_map, sharding_spec, wait_device_ops)
from . import visualize_tensor_sharding  # noqa: F401

XLAShardedTensor = ShardedTensor
