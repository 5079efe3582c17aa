"""Training from Python: grad/backward against hand derivatives, SGD and AdamW against their
formulas in numpy, the layers' parameters, and 20 steps of a small transformer under fsdp_v2 on 2
devices matching the same loop on one device."""
import os
import subprocess
import time

import numpy as np
import pytest

import vkspmd
from vkspmd import nn, optim


def test_grad_and_backward():
    x_np = np.array([1.0, -2.0, 3.0], np.float32)
    x = vkspmd.tensor(x_np).requires_grad_()
    assert x.requires_grad and x.grad is None
    loss = (x * x).sum() + (x * 3).sum()
    (dx,) = vkspmd.grad(loss, [x])
    np.testing.assert_allclose(dx.numpy(), 2 * x_np + 3)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x_np + 3)
    y = vkspmd.tensor(x_np)
    y.requires_grad = True
    vkspmd.backward(vkspmd.tanh(y).sum())
    np.testing.assert_allclose(y.grad.numpy(), 1 - np.tanh(x_np) ** 2, rtol=1e-5)
    with pytest.raises(vkspmd.Error):
        vkspmd.ones(2).sum().backward()  # Reaches no tensor with requires_grad.


def test_sgd_and_adamw_match_their_formulas():
    p_np = np.array([0.5, -1.0, 2.0], np.float32)
    g_np = np.array([0.1, 0.2, -0.3], np.float32)
    p = vkspmd.tensor(p_np)
    sgd = optim.SGD([p], lr=0.1, momentum=0.9)
    for _ in range(2):
        sgd.step([vkspmd.tensor(g_np)])
    # buf = g, then 0.9 g + g; p -= 0.1 buf each step.
    np.testing.assert_allclose(p.numpy(), p_np - 0.1 * g_np - 0.1 * 1.9 * g_np, rtol=1e-6)
    assert sgd.step_count() == 2 and sgd.lr == pytest.approx(0.1)
    sgd.lr = 0.05
    assert sgd.lr == pytest.approx(0.05) and [n for n, _ in sgd.state_tensors()] == [
        "momentum_buffer.0"]
    q = vkspmd.tensor(p_np).requires_grad_()
    adamw = vkspmd.optim.AdamW([q], lr=0.01, weight_decay=0.1)
    (q * vkspmd.tensor(g_np)).sum().backward()
    adamw.step()
    m = 0.1 * g_np
    v = 0.001 * g_np * g_np
    expected = p_np * (1 - 0.01 * 0.1) - 0.01 / 0.1 * m / (np.sqrt(v) / np.sqrt(0.001) + 1e-8)
    np.testing.assert_allclose(q.numpy(), expected, rtol=1e-5)
    assert len(adamw.params) == 1
    with pytest.raises(ValueError):
        optim.SGD([p], lr=-1.0)


def test_layers():
    vkspmd.manual_seed(0)
    linear = nn.Linear(4, 3)
    assert [name for name, _ in linear.named_parameters()] == ["weight", "bias"]
    assert linear.parameter_count() == 15 and linear.weight.shape == (3, 4)
    x = vkspmd.randn(2, 4)
    np.testing.assert_allclose(linear(x).numpy(), x.numpy() @ linear.weight.numpy().T +
                               linear.bias.numpy(), rtol=1e-5, atol=1e-6)
    assert nn.Linear(4, 3, bias=False).bias is None
    norm = nn.LayerNorm(4)
    assert norm.forward(x).shape == (2, 4) and norm.weight.numpy().tolist() == [1, 1, 1, 1]
    np.testing.assert_allclose(nn.GELU()(x).numpy(), nn.functional.gelu(x).numpy())
    assert nn.MLP(4, 8, 2)(x).shape == (2, 2) and nn.Embedding(5, 3).weight.shape == (5, 3)
    tokens = vkspmd.tensor(np.array([[1, 2, 3]], np.int32))
    assert nn.Embedding(5, 3)(tokens).shape == (1, 3, 3)
    h = vkspmd.randn(1, 3, 8)
    assert nn.CausalSelfAttention(8, 2)(h).shape == (1, 3, 8)
    assert nn.TransformerBlock(8, 2)(h).shape == (1, 3, 8)
    regressor = nn.MlpRegressor(4, 8, 1)
    assert regressor.loss(x, vkspmd.zeros(2, 1)).shape == ()
    assert nn.mse_loss(x, x).item() == 0.0
    # forward is __call__ (one C++ function, bound twice).
    layers = [(linear, x), (norm, x), (nn.GELU(), x), (nn.MLP(4, 8, 2), x),
              (nn.Embedding(5, 3), tokens), (nn.CausalSelfAttention(8, 2), h),
              (nn.TransformerBlock(8, 2), h), (regressor, x)]
    for layer, value in layers:
        np.testing.assert_array_equal(layer.forward(value).numpy(), layer(value).numpy())
    lm = nn.TransformerLM(nn.TransformerConfig(vocab=8, d_model=8, heads=2, layers=1, max_seq=4))
    logits = lm.forward(tokens)
    np.testing.assert_allclose(nn.cross_entropy_loss(logits, tokens).item(),
                               lm.loss(tokens, tokens).item(), rtol=1e-6)
    with pytest.raises(ValueError, match="heads"):
        nn.CausalSelfAttention(6, 4)


class TwoLayer(nn.Module):
    """A user's module: its own Parameters plus a child layer, as in PyTorch."""

    def __init__(self, w, b):
        super().__init__()
        self.w = nn.Parameter(vkspmd.tensor(w))
        self.b = nn.Parameter(vkspmd.tensor(b))
        self.head = nn.Linear(w.shape[0], 1)

    def forward(self, x):
        return self.head(vkspmd.tanh(x @ self.w.t() + self.b))


def test_module_subclass_trains_like_torch():
    import torch
    rng = np.random.default_rng(4)
    w0, b0 = rng.standard_normal((3, 4)).astype(np.float32), np.zeros(3, np.float32)
    x_np = rng.standard_normal((8, 4)).astype(np.float32)
    y_np = rng.standard_normal((8, 1)).astype(np.float32)
    vkspmd.manual_seed(0)
    model = TwoLayer(w0, b0)
    assert [name for name, _ in model.named_parameters()] == ["w", "b", "head.weight", "head.bias"]
    assert model.parameter_count() == 12 + 3 + 3 + 1 and model.w.requires_grad
    assert [name for name, _ in model.named_modules()] == ["head"]
    assert isinstance(model.named_modules()[0][1], nn.Linear)
    reference = {name: torch.tensor(p.numpy(), requires_grad=True)
                 for name, p in model.named_parameters()}
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    torch_optimizer = torch.optim.SGD(reference.values(), lr=0.1, momentum=0.9)
    x, y = vkspmd.tensor(x_np), vkspmd.tensor(y_np)
    for _ in range(5):
        loss = nn.mse_loss(model(x), y)
        optimizer.step(vkspmd.grad(loss, model.parameters()))
        vkspmd.mark_step()
        hidden = torch.tanh(torch.tensor(x_np) @ reference["w"].T + reference["b"])
        out = hidden @ reference["head.weight"].T + reference["head.bias"]
        torch_loss = torch.nn.functional.mse_loss(out, torch.tensor(y_np))
        torch_optimizer.zero_grad()
        torch_loss.backward()
        torch_optimizer.step()
        np.testing.assert_allclose(loss.item(), torch_loss.item(), rtol=1e-5)
    for name, p in model.named_parameters():
        np.testing.assert_allclose(p.numpy(), reference[name].detach().numpy(), rtol=1e-4,
                                   atol=1e-6, err_msg=name)
    # The attribute is the registered parameter: the optimizer's in-place updates show there.
    np.testing.assert_array_equal(model.w.numpy(), dict(model.named_parameters())["w"].numpy())
    # backward() reaches the Parameters (requires_grad), and reassigning keeps the order.
    nn.mse_loss(model(x), y).backward()
    assert model.w.grad is not None and model.w.grad.shape == (3, 4)
    model.b = nn.Parameter(vkspmd.ones(3), requires_grad=False)
    assert [n for n, _ in model.named_parameters()][:2] == ["w", "b"] and not model.b.requires_grad
    np.testing.assert_array_equal(dict(model.named_parameters())["b"].numpy(), [1, 1, 1])
    model.register_parameter("scale", vkspmd.ones(1))
    model.add_module("extra", nn.Linear(1, 1))
    assert "extra.weight" in dict(model.named_parameters())
    with pytest.raises(ValueError, match="'.'"):
        model.register_parameter("a.b", vkspmd.ones(1))
    with pytest.raises(ValueError, match="submodule"):
        model.register_parameter("head", vkspmd.ones(1))
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(x)


def test_module_subclass_under_fsdp_v2():
    rng = np.random.default_rng(5)
    w0, b0 = rng.standard_normal((3, 4)).astype(np.float32), np.ones(3, np.float32)
    x_np = rng.standard_normal((4, 4)).astype(np.float32)
    vkspmd.manual_seed(1)
    plain = TwoLayer(w0, b0)(vkspmd.tensor(x_np)).numpy()
    vkspmd.manual_seed(1)
    model = TwoLayer(w0, b0)
    nn.fsdp_v2(model, vkspmd.Mesh([0, 1], (2,), ("fsdp",)))
    assert vkspmd.sharding_spec(model.w) == "{devices=[1,2]<=[2]}"  # The largest dim, 4, split.
    out = model(model.shard_input(vkspmd.tensor(x_np)))
    np.testing.assert_allclose(out.numpy(), plain, rtol=1e-5, atol=1e-6)


def test_save_and_load(tmp_path):
    vkspmd.manual_seed(0)
    first, second = nn.Linear(3, 2), nn.Linear(3, 2)
    first.save_safetensors(str(tmp_path / "w.safetensors"))
    second.load_safetensors(str(tmp_path / "w.safetensors"))
    np.testing.assert_array_equal(second.weight.numpy(), first.weight.numpy())
    first.save_npy(str(tmp_path / "npy"))
    second.load_npy(str(tmp_path / "npy"))
    assert second.compute_dtype == vkspmd.float32
    second.set_compute_dtype(vkspmd.bfloat16)
    assert second.compute_dtype == vkspmd.bfloat16


def train_transformer(strategy_mesh, steps=20):
    vkspmd.manual_seed(7)
    config = nn.TransformerConfig(vocab=32, d_model=16, heads=2, layers=1, max_seq=8)
    model = nn.TransformerLM(config)
    if strategy_mesh is not None:
        nn.fsdp_v2(model, strategy_mesh)
    # SGD, not AdamW: AdamW scales gradients that are zero up to rounding (the key bias's) to
    # full steps, so the two runs' rounding would decide those parameters.
    optimizer = optim.SGD(model.parameters(), lr=0.5)
    vkspmd.mark_step()
    tokens = np.random.default_rng(0).integers(0, 32, size=(4, 8), dtype=np.int32)
    losses = []
    for _ in range(steps):
        inputs = model.shard_input(vkspmd.tensor(tokens))
        targets = model.shard_input(vkspmd.tensor(np.roll(tokens, -1, axis=1)))
        loss = model.loss(inputs, targets)
        parameters = model.parameters()
        optimizer.step(vkspmd.grad(loss, parameters))
        vkspmd.mark_step()
        losses.append(loss.item())
    return losses, {name: p.numpy() for name, p in model.named_parameters()}


def test_fsdp_v2_training_loop_matches_one_device():
    mesh = nn.strategy_mesh("fsdp", [2])
    assert mesh.axis_names == ("fsdp",)
    sharded_losses, sharded = train_transformer(mesh)
    plain_losses, plain = train_transformer(None)
    assert sharded_losses[-1] < sharded_losses[0]
    np.testing.assert_allclose(sharded_losses, plain_losses, rtol=1e-4)
    for name, value in plain.items():
        np.testing.assert_allclose(sharded[name], value, rtol=1e-3, atol=1e-4, err_msg=name)


def test_every_strategy_marks_the_parameters():
    vkspmd.manual_seed(0)
    config = nn.TransformerConfig(vocab=16, d_model=8, heads=2, layers=1, max_seq=4)
    for strategy, shape in [("dp", [2]), ("tp", [2]), ("dp+tp", [2, 2]), ("fsdp", [2])]:
        model = nn.TransformerLM(config)
        nn.apply_strategy(model, nn.strategy_mesh(strategy, shape), strategy)
        head = dict(model.named_parameters())["head.weight"]
        assert vkspmd.sharding_spec(head) != "", strategy
    mesh = vkspmd.Mesh([0, 1, 2, 3], (2, 2), ("dp", "tp"))
    for apply in (lambda m: nn.data_parallel(m, nn.strategy_mesh("dp", [2])),
                  lambda m: nn.tensor_parallel(m, nn.strategy_mesh("tp", [2])),
                  lambda m: nn.data_tensor_parallel(m, mesh)):
        model = nn.TransformerLM(config)
        apply(model)
        tokens = model.shard_input(vkspmd.tensor(np.zeros((2, 4), np.int32)))
        assert model(tokens).shape == (2, 4, 16)
    with pytest.raises(ValueError):
        nn.apply_strategy(nn.TransformerLM(config), mesh, "zero")


def python_loop(tokens_path, targets_path, steps, strategy):
    """train_reference.cc's loop, call for call."""
    vkspmd.manual_seed(7)
    model = nn.TransformerLM(nn.TransformerConfig(vocab=32, d_model=16, heads=2, layers=1,
                                                  max_seq=8))
    if strategy == "fsdp":
        nn.fsdp_v2(model, nn.strategy_mesh("fsdp", [2]))
    optimizer = optim.AdamW(model.parameters(), 1e-2)
    vkspmd.mark_step()
    tokens, targets = vkspmd.from_npy(tokens_path), vkspmd.from_npy(targets_path)
    losses = []
    start = 0.0
    for step in range(steps):
        if step == 1:
            start = time.perf_counter()
        inputs = model.shard_input(tokens)
        labels = model.shard_input(targets)
        loss = model.loss(inputs, labels)
        optimizer.step(vkspmd.grad(loss, model.parameters()))
        vkspmd.mark_step()
        losses.append(loss.item())
    return losses, 1e6 * (time.perf_counter() - start) / (steps - 1)


@pytest.mark.parametrize("strategy", ["fsdp", "plain"])
def test_python_loop_equals_cpp_loop_bitwise(tmp_path, strategy):
    reference = os.environ.get("VKSPMD_TRAIN_REFERENCE")
    if not reference:
        pytest.skip("VKSPMD_TRAIN_REFERENCE (the built train_reference program) is not set")
    tokens = np.random.default_rng(3).integers(0, 32, size=(4, 8), dtype=np.int32)
    np.save(tmp_path / "tokens.npy", tokens)
    np.save(tmp_path / "targets.npy", np.roll(tokens, -1, axis=1))
    args = [str(tmp_path / "tokens.npy"), str(tmp_path / "targets.npy"), "20", strategy]
    result = subprocess.run([reference] + args, capture_output=True, text=True, timeout=120,
                            env=os.environ)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.split("\n")
    cpp_losses = [float.fromhex(line.split()[1]) for line in lines if line.startswith("loss ")]
    cpp_step_us = [float(line.split()[1]) for line in lines if line.startswith("step_us ")][0]
    losses, step_us = python_loop(*args[:2], 20, strategy)
    assert len(cpp_losses) == 20 and losses[-1] < losses[0]
    assert [x.hex() for x in losses] == [x.hex() for x in cpp_losses]
    print(f"{strategy}: step {step_us:.0f} us from Python, {cpp_step_us:.0f} us from C++")
