"""The XLAShardedTensor RFC's first example with vkspmd in place of torch_xla: an 8x4 tensor
sharded over a (2, 4) mesh, computed on 8 devices, each holding its shard.
Run: VKSPMD_DEVICES=8 PYTHONPATH=build/ci/python /usr/bin/python3 examples/python/rfc_m1.py"""
import numpy as np

import vkspmd
import vkspmd.spmd as xs
from vkspmd.spmd import Mesh, XLAShardedTensor

# Device mesh, this and partition spec as well as the input tensor shape define the individual
# shard shape.
num_devices = vkspmd.device_count()
mesh_shape = (2, int(num_devices / 2))
device_ids = np.array(range(num_devices))
mesh = Mesh(device_ids, mesh_shape, ("x", "y"))

vkspmd.manual_seed(0)
t = vkspmd.randn(8, 4)

# Mesh partitioning, each device holds 1/8-th of the input
partition_spec = (0, 1)
m1_sharded = xs.mark_sharding(t, mesh, partition_spec)
assert isinstance(m1_sharded, XLAShardedTensor) == True  # noqa: E712 (as the RFC writes it)

print("sharding_spec:", m1_sharded.sharding_spec)
print("sharding_type:", m1_sharded.sharding_type)
m2 = m1_sharded + 1  # Computed on the 8 devices.
print(m2)
xs.visualize_tensor_sharding(m1_sharded)
for shard in m1_sharded.local_shards:
    print(f"device {shard.device}: {shard.indices} {shard.data.ravel().tolist()}")
assert np.array_equal(m2.numpy(), t.numpy() + 1)
