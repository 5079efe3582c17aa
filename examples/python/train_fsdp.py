"""A sharded training loop written in Python: the small transformer under FSDPv2 (every parameter
split over the "fsdp" axis, the batch too), AdamW, one graph per step.
Run: VKSPMD_DEVICES=4 PYTHONPATH=build/ci/python /usr/bin/python3 examples/python/train_fsdp.py"""
import numpy as np

import vkspmd
from vkspmd import nn, optim

vkspmd.manual_seed(0)
config = nn.TransformerConfig(vocab=64, d_model=32, heads=4, layers=2, max_seq=16)
model = nn.TransformerLM(config)
mesh = nn.strategy_mesh("fsdp", [vkspmd.device_count()])
nn.fsdp_v2(model, mesh)
optimizer = optim.AdamW(model.parameters(), lr=3e-3)
vkspmd.mark_step()  # The optimizer's state, so step 1 already has every later step's graph.

rng = np.random.default_rng(0)
tokens = rng.integers(0, config.vocab, size=(8, config.max_seq), dtype=np.int32)
for step in range(1, 21):
    inputs = model.shard_input(vkspmd.tensor(tokens))
    targets = model.shard_input(vkspmd.tensor(np.roll(tokens, -1, axis=1)))
    loss = model.loss(inputs, targets)
    optimizer.step(vkspmd.grad(loss, model.parameters()))
    vkspmd.mark_step()
    if step % 5 == 0:
        print(f"step {step}: loss {loss.item():.4f}")
print("head.weight", vkspmd.sharding_spec(dict(model.named_parameters())["head.weight"]))
