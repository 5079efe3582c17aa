"""Checkpoints and loss scaling from Python: a sharded model and its AdamW state saved by the
CheckpointManager and restored bit for bit onto another mesh, the step's description and
checks, safetensors export, and the GradScaler's scale, skip and growth."""
import math

import numpy as np
import pytest

import vkspmd
from vkspmd import nn, optim


def build(mesh):
    vkspmd.manual_seed(0)
    model = nn.MLP(4, 8, 2)
    if mesh is not None:
        nn.fsdp_v2(model, mesh)
    optimizer = optim.AdamW(model.parameters(), lr=0.1)
    vkspmd.mark_step()
    return model, optimizer


def train_step(model, optimizer):
    x = model.shard_input(vkspmd.tensor(np.ones((4, 4), np.float32)))
    loss = (model(x) * model(x)).mean()
    optimizer.step(vkspmd.grad(loss, model.parameters()))
    vkspmd.mark_step()


def test_manager_saves_and_restores_onto_another_mesh(tmp_path):
    model, optimizer = build(nn.strategy_mesh("fsdp", [2]))
    train_step(model, optimizer)
    state = vkspmd.CheckpointState().add_module(model).add_optimizer(optimizer)
    state.data_position = 5
    state.metadata = {"run": "python"}
    manager = vkspmd.CheckpointManager(str(tmp_path / "ckpt"), save_interval=2, max_to_keep=2)
    assert manager.should_save(2) and not manager.should_save(3)
    assert manager.save(2, state) and not manager.save(3, state)
    saved = {name: t.numpy() for name, t in model.named_parameters()}
    train_step(model, optimizer)
    assert manager.save_async(4, state)
    manager.wait_until_finished()
    assert manager.all_steps() == [2, 4] and manager.latest_step() == 4

    other, other_optimizer = build(nn.strategy_mesh("fsdp", [4]))
    restored = vkspmd.CheckpointState().add_module(other).add_optimizer(other_optimizer)
    manager.restore(2, restored)
    for name, value in other.named_parameters():
        np.testing.assert_array_equal(value.numpy(), saved[name], err_msg=name)
    assert restored.data_position == 5 and restored.metadata == {"run": "python"}
    assert other_optimizer.step_count() == 1

    path = manager.step_path(2)
    info = vkspmd.checkpoint_info(path)
    assert info.step == 2 and info.metadata == {"run": "python"} and info.bytes > 0
    names = [tensor.name for tensor in info.tensors]
    assert "model.fc1.weight" in names and "optimizer.exp_avg.0" in names
    weight = info.tensors[names.index("model.fc1.weight")]
    assert weight.shape == [8, 4] and weight.dtype == vkspmd.float32 and weight.shard_count == 2
    assert vkspmd.verify_checkpoint(path) == []
    vkspmd.export_safetensors(path, str(tmp_path / "model.safetensors"))
    assert (tmp_path / "model.safetensors").stat().st_size > 0
    with pytest.raises(vkspmd.Error):
        manager.save(4, state, force=True)  # A step is never overwritten.
    assert not vkspmd.CheckpointManager.preemption_requested() and vkspmd.EXIT_PREEMPTED == 75


def test_save_and_restore_functions(tmp_path):
    t = vkspmd.tensor(np.arange(6, dtype=np.float32))
    state = vkspmd.CheckpointState().add("t", t)
    assert [name for name, _ in state.tensors] == ["t"] and state.rng
    vkspmd.save_checkpoint(str(tmp_path), 7, state)
    t.assign(t * 0)
    vkspmd.restore_checkpoint(str(tmp_path / "step_00000007"), state)
    np.testing.assert_array_equal(t.numpy(), np.arange(6))
    with pytest.raises(vkspmd.Error):
        vkspmd.restore_checkpoint(str(tmp_path / "step_00000008"), state)


def test_grad_scaler():
    p = vkspmd.tensor(np.array([1.0, 2.0], np.float32))
    sgd = optim.SGD([p], lr=0.5)
    scaler = optim.GradScaler(init_scale=8.0, growth_factor=2.0, growth_interval=1)
    assert scaler.scale(vkspmd.tensor(1.5)).item() == 12.0
    assert scaler.step(sgd, [vkspmd.tensor(np.array([8.0, -16.0], np.float32))])
    scaler.update()
    np.testing.assert_array_equal(p.numpy(), [0.5, 3.0])  # Unscaled by 8: [1, -2].
    assert scaler.get_scale() == 16.0 and scaler.growth_tracker == 0
    assert not scaler.step(sgd, [vkspmd.tensor(np.array([math.inf, 0.0], np.float32))])
    scaler.update()
    assert scaler.get_scale() == 8.0 and scaler.skipped_steps == 1
    np.testing.assert_array_equal(p.numpy(), [0.5, 3.0])
    scaler.load_state(4.0, 3)
    assert scaler.get_scale() == 4.0 and scaler.growth_tracker == 3
    with pytest.raises(ValueError):
        optim.GradScaler(init_scale=-1.0)


def test_grad_scaler_checks_gradients_before_a_trailing_none():
    # A list ending in None (a frozen last parameter) is checked whole: the inf is found, the
    # step skipped and the scale backed off (review of 3bf9053: it was applied to the weights).
    params = [vkspmd.ones(2), vkspmd.ones(2)]
    sgd = optim.SGD(params, lr=0.1)
    scaler = optim.GradScaler(init_scale=4.0)
    assert not scaler.step(sgd, [vkspmd.tensor([math.inf, 1.0]), None])
    scaler.update()
    assert scaler.get_scale() == 2.0
    for p in params:
        np.testing.assert_array_equal(p.numpy(), [1.0, 1.0])
    # 14 finite gradients, a NaN in the 15th, then None.
    params = [vkspmd.ones(2) for _ in range(16)]
    sgd = optim.SGD(params, lr=0.1)
    grads = [vkspmd.tensor([1.0, 2.0]) for _ in range(14)]
    assert not scaler.step(sgd, grads + [vkspmd.tensor([1.0, math.nan]), None])
    for p in params:
        np.testing.assert_array_equal(p.numpy(), [1.0, 1.0])
    # All None: nothing overflowed, nothing changes.
    assert scaler.step(sgd, [None] * 16)
    for p in params:
        np.testing.assert_array_equal(p.numpy(), [1.0, 1.0])
