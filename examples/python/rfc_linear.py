"""The RFC's linear-layer example with vkspmd in place of torch_xla: an 8x32 input on a (4, 2)
mesh, data parallel over axis 0, the weight's output features over axis 1, the output
replicated; checked against numpy.
Run: VKSPMD_DEVICES=8 PYTHONPATH=build/ci/python /usr/bin/python3 examples/python/rfc_linear.py"""
import numpy as np

import vkspmd
import vkspmd.spmd as xs

vkspmd.manual_seed(1)
mesh = xs.Mesh(np.arange(8), (4, 2), ("data", "model"))
model = vkspmd.nn.Linear(32, 16)
data = vkspmd.randn(8, 32)
expected = data.numpy() @ model.weight.numpy().T + model.bias.numpy()

# Sharding annotate the linear layer weights.
xs.mark_sharding(model.weight, mesh, ("model", None))
# Sharding annotate input data: sharding the batch dimension gives data parallelism.
xs.mark_sharding(data, mesh, ("data", None))
output = model(data)
replicated = xs.mark_sharding(output, mesh, (None, None))
print("output sharding before running (propagated):", vkspmd.sharding_spec(output))
xs.mark_step()
print(f"output {replicated.sharding_type.name}, {len(replicated.local_shards)} shards")
np.testing.assert_allclose(output.numpy(), expected, rtol=1e-4, atol=1e-4)
print(xs.metrics_report())
