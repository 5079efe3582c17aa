"""vkspmd.distributed.tensor (PyTorch's DTensor API over the C++ one) against numpy: placements
on 1-D and 2-D meshes (a permuted device order, an uneven dim), redistribute, Partial's
reductions, ops, parallelize_module against the unsharded MLP, and FullyShard (FSDP as a plan
style) training against the unsharded model and SGD in numpy. 8 mesh devices."""
import math

import numpy as np
import pytest

import vkspmd
from vkspmd import nn, optim
from vkspmd.distributed import hybrid_device_mesh, init_device_mesh
from vkspmd.distributed.tensor import (DTensor, DeviceMesh, Partial, Replicate, Shard,
                                       distribute_tensor)
from vkspmd.distributed.tensor.parallel import (ColwiseParallel, FullyShard, RowwiseParallel,
                                                SequenceParallel, parallelize_module,
                                                tensor_parallel_plan)


def chunk(array, parts, axis):
    """torch.chunk's split (chunks of ceil(n / parts), the last ones shorter or empty)."""
    size = -(-array.shape[axis] // parts)
    return [np.take(array, range(min(i * size, array.shape[axis]),
                                 min((i + 1) * size, array.shape[axis])), axis=axis)
            for i in range(parts)]


def expected_locals(x, mesh_shape, placements):
    """Each mesh coordinate's local value (row-major) for Shard / Replicate placements."""
    locals_ = []
    for coordinate in np.ndindex(*mesh_shape):
        local = x
        for axis, placement in enumerate(placements):
            if placement.is_shard():
                local = chunk(local, mesh_shape[axis], placement.dim)[coordinate[axis]]
        locals_.append(local)
    return locals_


def check_locals(d, expected):
    got = d.to_local()
    assert len(got) == len(expected)
    for local, want in zip(got, expected):
        assert local.shape == want.shape
        np.testing.assert_array_equal(local.numpy(), want)


def test_device_mesh():
    mesh = DeviceMesh("vulkan", [[3, 1], [0, 2]], mesh_dim_names=("dp", "tp"))
    assert mesh.shape == (2, 2) and mesh.ndim == 2 and mesh.mesh_dim_names == ("dp", "tp")
    np.testing.assert_array_equal(mesh.mesh, [[3, 1], [0, 2]])
    assert mesh.device_ids == [3, 1, 0, 2]
    assert mesh.size() == 4 and mesh.size(0) == 2 and mesh.size("tp") == 2
    assert mesh.to_mesh().device_ids == [3, 1, 0, 2] and "dp" in repr(mesh)
    assert mesh == DeviceMesh("vulkan", np.array([[3, 1], [0, 2]]), mesh_dim_names=["dp", "tp"])
    assert DeviceMesh(vkspmd.Mesh([0, 1], (2,), ("x",))).mesh_dim_names == ("x",)
    flat = init_device_mesh("vulkan", (2, 4), mesh_dim_names=("a", "b"))
    np.testing.assert_array_equal(flat.mesh, np.arange(8).reshape(2, 4))
    assert init_device_mesh("xla", (4,)).mesh_dim_names is None
    with pytest.raises(ValueError):
        DeviceMesh("vulkan", [0, 0])  # A device twice.
    with pytest.raises(ValueError):
        DeviceMesh("vulkan", [0, 99])  # No such device.


def test_placement_objects():
    assert Shard(1).dim == 1 and Shard(1).is_shard() and Shard(1).is_shard(1)
    assert not Shard(1).is_shard(0) and not Shard(1).is_replicate() and not Shard(1).is_partial()
    assert Replicate().is_replicate() and not Replicate().is_shard()
    assert not Replicate().is_partial() and Replicate() == Replicate()
    assert Partial().reduce_op == "sum" and Partial("max").is_partial()
    assert not Partial().is_shard() and not Partial().is_replicate()
    assert Partial("avg") != Partial("min") and Shard(0) != Shard(1)
    assert {Shard(0), Shard(0), Replicate(), Partial()} == {Shard(0), Replicate(), Partial()}
    assert [repr(p) for p in (Shard(0), Replicate(), Partial("max"))] == [
        "Shard(dim=0)", "Replicate()", "Partial(max)"]
    with pytest.raises(ValueError):
        Partial("prod")


def test_1d_permuted_mesh_uneven_dim():
    mesh = DeviceMesh("vulkan", [2, 0, 3, 1], mesh_dim_names=("x",))
    x = np.arange(21, dtype=np.float32).reshape(7, 3)
    d = distribute_tensor(vkspmd.tensor(x), mesh, [Shard(0)])
    assert isinstance(d, DTensor) and d.placements == (Shard(0),)
    assert d.shape == (7, 3) and d.dtype == vkspmd.float32 and d.device_mesh == mesh
    assert "Shard(dim=0)" in repr(d)
    check_locals(d, chunk(x, 4, 0))  # Rows 2, 2, 2, 1, in mesh order (not device order).
    np.testing.assert_array_equal(d.full_tensor().numpy(), x)
    check_locals(distribute_tensor(vkspmd.tensor(x), mesh, [Shard(-1)]), chunk(x, 4, 1))
    replicated = d.redistribute(placements=[Replicate()])
    check_locals(replicated, [x] * 4)
    assert any("all-gather" in c for c in d.redistribute_collectives(placements=[Replicate()]))


PLACEMENTS_2D = [
    (Shard(0), Shard(1)), (Shard(1), Shard(0)), (Replicate(), Shard(0)), (Shard(1), Replicate()),
    (Shard(0), Shard(0)), (Replicate(), Replicate())]


@pytest.mark.parametrize("placements", PLACEMENTS_2D, ids=repr)
def test_2d_permuted_mesh(placements):
    mesh = DeviceMesh("vulkan", [[3, 1, 5], [0, 2, 4]], mesh_dim_names=("dp", "tp"))
    x = np.arange(60, dtype=np.float32).reshape(6, 10)  # 10 over 3 is uneven: 4, 4, 2.
    d = distribute_tensor(vkspmd.tensor(x), mesh, placements)
    assert d.placements == tuple(placements)
    if placements != (Shard(0), Shard(0)):  # Two axes on one dim: split once over 6 (below).
        check_locals(d, expected_locals(x, (2, 3), placements))
    else:
        check_locals(d, chunk(x, 6, 0))
    np.testing.assert_array_equal(d.full_tensor().numpy(), x)


def test_redistribute_between_2d_placements():
    mesh = init_device_mesh("vulkan", (2, 2), mesh_dim_names=("dp", "tp"))
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    d = distribute_tensor(vkspmd.tensor(x), mesh, [Shard(0), Replicate()])
    for target in [(Replicate(), Shard(1)), (Shard(1), Shard(0)), (Replicate(), Replicate())]:
        moved = d.redistribute(mesh, target)
        assert moved.placements == target
        check_locals(moved, expected_locals(x, (2, 2), target))
    other = DeviceMesh("vulkan", [4, 5, 6, 7], mesh_dim_names=("z",))
    onto = d.redistribute(other, [Shard(1)])
    assert onto.device_mesh == other
    check_locals(onto, chunk(x, 4, 1))


def test_partial():
    mesh = DeviceMesh("vulkan", [1, 0, 3, 2], mesh_dim_names=("x",))
    rng = np.random.default_rng(1)
    addends = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(4)]
    locals_ = [vkspmd.tensor(a) for a in addends]
    for op, reduce in [("sum", np.sum), ("avg", np.mean), ("max", np.max), ("min", np.min)]:
        d = DTensor.from_local(locals_, mesh, [Partial(op)])
        assert d.placements == (Partial(op),)
        check_locals(d, addends)  # Each device keeps its own addend.
        np.testing.assert_allclose(d.full_tensor().numpy(), reduce(addends, axis=0), rtol=1e-6)
        check_locals_close = d.redistribute(placements=[Replicate()]).to_local()
        for local in check_locals_close:
            np.testing.assert_allclose(local.numpy(), reduce(addends, axis=0), rtol=1e-6)
    summed = DTensor.from_local(locals_, mesh, [Partial()])
    assert any("all-reduce" in c for c in summed.redistribute_collectives(placements=[Replicate()]))
    scattered = summed.redistribute(placements=[Shard(1)])
    total = np.sum(addends, axis=0)
    for local, want in zip(scattered.to_local(), chunk(total, 4, 1)):
        np.testing.assert_allclose(local.numpy(), want, rtol=1e-6)
    # distribute_tensor with Partial('sum') stores value / 4 on each device (PyTorch's contract).
    x = np.full((2, 2), 8.0, np.float32)
    for local in distribute_tensor(vkspmd.tensor(x), mesh, [Partial()]).to_local():
        np.testing.assert_array_equal(local.numpy(), x / 4)


def test_from_local_shards_and_ops():
    mesh = init_device_mesh("vulkan", (2,), mesh_dim_names=("x",))
    top, bottom = np.ones((3, 4), np.float32), np.full((1, 4), 2.0, np.float32)
    d = DTensor.from_local([vkspmd.tensor(top), vkspmd.tensor(bottom)], mesh, [Shard(0)])
    whole = np.concatenate([top, bottom])
    assert d.shape == (4, 4)
    np.testing.assert_array_equal(d.full_tensor().numpy(), whole)
    r = distribute_tensor(vkspmd.tensor(whole), mesh, [Replicate()])
    np.testing.assert_array_equal((d + r).full_tensor().numpy(), 2 * whole)
    np.testing.assert_array_equal((d - r).full_tensor().numpy(), 0 * whole)
    np.testing.assert_array_equal((d * r).full_tensor().numpy(), whole * whole)
    product = d @ r
    assert product.placements == (Shard(0),)
    np.testing.assert_allclose(product.full_tensor().numpy(), whole @ whole)


def test_errors():
    mesh = init_device_mesh("vulkan", (2, 2))
    t = vkspmd.zeros(4, 4)
    with pytest.raises(ValueError, match="placement"):
        distribute_tensor(t, mesh, [Shard(0)])  # One placement for a 2-D mesh.
    with pytest.raises(TypeError):
        distribute_tensor(t, mesh, [Shard(0), "replicate"])
    with pytest.raises(ValueError):
        distribute_tensor(t, mesh, [Shard(2), Replicate()])  # No dim 2.


def test_parallelize_module_matches_tensor_parallel():
    mesh = DeviceMesh("vulkan", [0, 1], mesh_dim_names=("tp",))
    vkspmd.manual_seed(3)
    mlp = nn.MLP(8, 16, 8)
    vkspmd.manual_seed(3)
    reference = nn.MLP(8, 16, 8)
    x_np = np.random.default_rng(2).standard_normal((4, 8)).astype(np.float32)
    expected = reference(vkspmd.tensor(x_np)).numpy()
    assert parallelize_module(mlp, mesh, {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()}) is mlp
    specs = {name: vkspmd.sharding_spec(p) for name, p in mlp.named_parameters()}
    assert specs["fc1.weight"] == "{devices=[2,1]<=[2]}"
    assert specs["fc2.weight"] == "{devices=[1,2]<=[2]}"
    tp = nn.MLP(8, 16, 8)
    nn.tensor_parallel(tp, vkspmd.Mesh([0, 1], (2,), ("tp",)))
    assert specs == {name: vkspmd.sharding_spec(p) for name, p in tp.named_parameters()}
    np.testing.assert_allclose(mlp(vkspmd.tensor(x_np)).numpy(), expected, rtol=1e-5, atol=1e-6)
    # A Python module's children are planned by their attribute names.
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.up = nn.Linear(8, 16)
            self.down = nn.Linear(16, 8)

        def forward(self, x):
            return self.down(nn.functional.gelu(self.up(x)))

    net = parallelize_module(Net(), mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})
    assert [vkspmd.sharding_spec(p) for _, p in net.named_parameters()] == [
        specs["fc1.weight"], specs["fc1.bias"], specs["fc2.weight"], specs["fc2.bias"]]
    w = {name: p.numpy().astype(np.float64) for name, p in net.named_parameters()}
    hidden = x_np @ w["up.weight"].T + w["up.bias"]
    hidden = 0.5 * hidden * (1 + np.vectorize(math.erf)(hidden / math.sqrt(2)))  # Exact GELU.
    np.testing.assert_allclose(net(vkspmd.tensor(x_np)).numpy(),
                               hidden @ w["down.weight"].T + w["down.bias"], rtol=1e-4, atol=1e-5)
    # SequenceParallel on a LayerNorm: its input and output split on the sequence dim (1).
    class Normed(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(8)

        def forward(self, x):
            return self.norm(x)

    h_np = np.random.default_rng(6).standard_normal((2, 4, 8)).astype(np.float32)
    normed = parallelize_module(Normed(), mesh, {"norm": SequenceParallel()})
    out = normed(vkspmd.tensor(h_np))
    assert vkspmd.sharding_spec(out) == "{devices=[1,2,1]<=[2]}"
    centered = h_np - h_np.mean(-1, keepdims=True)
    np.testing.assert_allclose(out.numpy(), centered / np.sqrt((centered**2).mean(-1, keepdims=True)
                                                               + 1e-5), rtol=1e-4, atol=1e-5)
    with pytest.raises(vkspmd.Error, match="SequenceParallel"):  # Not for a Linear.
        parallelize_module(nn.MLP(8, 16, 8), mesh, {"fc1": SequenceParallel()})
    with pytest.raises(ValueError, match="fc3"):
        parallelize_module(nn.MLP(8, 16, 8), mesh, {"fc3": ColwiseParallel()})
    with pytest.raises(TypeError):
        parallelize_module(nn.MLP(8, 16, 8), mesh, {"fc1": Shard(0)})


def test_strategies_as_plans_layouts_and_hybrid_mesh():
    # dp+tp as a plan: the strategy's parameter shardings, inputs placed on the data axis, and the
    # strategy's training loss bit for bit.
    x_np = np.random.default_rng(4).standard_normal((4, 6)).astype(np.float32)
    y_np = np.random.default_rng(5).standard_normal((4, 3)).astype(np.float32)
    models = []
    for planned in (True, False):
        vkspmd.manual_seed(9)
        model = nn.MlpRegressor(6, 8, 3)
        if planned:
            plan = tensor_parallel_plan(model)
            assert {name: type(style).__name__ for name, style in plan.items()} == {
                "mlp.fc1": "ColwiseParallel", "mlp.fc2": "RowwiseParallel"}
            mesh = DeviceMesh("vulkan", [[0, 1], [2, 3]], mesh_dim_names=("dp", "tp"))
            parallelize_module(model, mesh, plan, "tp", data_axis="dp")
        else:
            nn.apply_strategy(model, nn.strategy_mesh("dp+tp", [2, 2]), "dp+tp")
        models.append(model)
    specs = [[vkspmd.sharding_spec(p) for _, p in m.named_parameters()] for m in models]
    assert specs[0] == specs[1]
    inputs = [m.shard_input(vkspmd.tensor(x_np)) for m in models]
    assert vkspmd.sharding_spec(inputs[0]) == vkspmd.sharding_spec(inputs[1])
    assert vkspmd.sharding_spec(inputs[0]) == "{devices=[2,1,2]<=[4] last_tile_dim_replicate}"
    losses = [m.loss(x, vkspmd.tensor(y_np)).item() for m, x in zip(models, inputs)]
    assert losses[0] == losses[1]

    # Layout options: a sequence-split input and a replicated output of a Colwise Linear.
    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 6)

        def forward(self, x):
            return self.fc(x)

    holder = Holder()
    w = {name: p.numpy().astype(np.float64) for name, p in holder.named_parameters()}
    tp = DeviceMesh("vulkan", [0, 1], mesh_dim_names=("tp",))
    style = ColwiseParallel(input_layouts=Shard(1), output_layouts=(Replicate(),))
    parallelize_module(holder, tp, {"fc": style})
    h_np = np.random.default_rng(7).standard_normal((2, 4, 8)).astype(np.float32)
    h = vkspmd.tensor(h_np)
    out = holder(h)
    assert vkspmd.sharding_spec(h) == "{devices=[1,2,1]<=[2]}"
    assert vkspmd.sharding_spec(out) == "{replicated}"
    np.testing.assert_allclose(out.numpy(), h_np @ w["fc.weight"].T + w["fc.bias"], rtol=1e-5,
                               atol=1e-5)
    with pytest.raises(ValueError, match="use_local_output=False"):
        RowwiseParallel(use_local_output=False)
    with pytest.raises(ValueError, match="one placement"):
        ColwiseParallel(input_layouts=(Shard(0), Shard(1)))
    with pytest.raises(vkspmd.Error, match="Partial"):
        parallelize_module(Holder(), tp, {"fc": RowwiseParallel(output_layouts=Partial())})

    # One process: the hybrid mesh's process dim has size 1, the inner dims every device.
    hybrid = hybrid_device_mesh((2, 4), mesh_dim_names=("dp_replicate", "dp_shard", "tp"))
    assert hybrid.shape == (1, 2, 4) and list(hybrid.device_ids) == list(range(8))
    with pytest.raises(vkspmd.Error, match="needs 4 devices in each of the 1 process"):
        hybrid_device_mesh((4,))


class TanhNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(vkspmd.tanh(self.fc1(x)))


FSDP_X = np.random.default_rng(12).standard_normal((8, 6)).astype(np.float32)
FSDP_Y = np.random.default_rng(13).standard_normal((8, 3)).astype(np.float32)


def train_tanh_net(plan=None, mesh=None, steps=3, lr=0.1):
    """SGD steps of TanhNet (mse loss); the initial and final parameters, losses, shardings."""
    vkspmd.manual_seed(11)
    model = TanhNet()
    initial = {name: p.numpy() for name, p in model.named_parameters()}
    if plan is not None:
        assert parallelize_module(model, mesh, plan, data_axis="fsdp") is model
    specs = {name: vkspmd.sharding_spec(p) for name, p in model.named_parameters()}
    optimizer = optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        x = model.shard_input(vkspmd.tensor(FSDP_X))
        y = model.shard_input(vkspmd.tensor(FSDP_Y))
        loss = nn.mse_loss(model(x), y)
        optimizer.step(vkspmd.grad(loss, model.parameters()))
        vkspmd.mark_step()
        losses.append(loss.item())
    final = {name: p.numpy() for name, p in model.named_parameters()}
    return initial, final, losses, specs


def train_numpy(parameters, steps=3, lr=0.1):
    """The same SGD steps in float64: out = tanh(x W1^T + b1) W2^T + b2, mean squared error."""
    p = {name: value.astype(np.float64) for name, value in parameters.items()}
    x, y = FSDP_X.astype(np.float64), FSDP_Y.astype(np.float64)
    losses = []
    for _ in range(steps):
        h = np.tanh(x @ p["fc1.weight"].T + p["fc1.bias"])
        out = h @ p["fc2.weight"].T + p["fc2.bias"]
        losses.append(np.mean((out - y) ** 2))
        d_out = 2 * (out - y) / out.size
        dz = (d_out @ p["fc2.weight"]) * (1 - h * h)
        grads = {"fc2.weight": d_out.T @ h, "fc2.bias": d_out.sum(0),
                 "fc1.weight": dz.T @ x, "fc1.bias": dz.sum(0)}
        for name in p:
            p[name] = p[name] - lr * grads[name]
    return p, losses


def test_fully_shard_training_equals_the_unsharded_model_and_numpy():
    mesh = DeviceMesh("vulkan", [0, 1, 2, 3], mesh_dim_names=("fsdp",))
    initial, plain, plain_losses, _ = train_tanh_net()
    sharded_initial, sharded, sharded_losses, specs = train_tanh_net({"": FullyShard()}, mesh)
    # Each parameter split over the 4 devices on its largest dim (fc2.bias: 3 over 4, uneven).
    assert specs == {"fc1.weight": "{devices=[4,1]<=[4]}", "fc1.bias": "{devices=[4]<=[4]}",
                     "fc2.weight": "{devices=[1,4]<=[4]}", "fc2.bias": "{devices=[4]<=[4]}"}
    # nn.fsdp_v2 marks them alike: FullyShard() on the whole model is the fsdp strategy.
    vkspmd.manual_seed(11)
    strategy = TanhNet()
    nn.fsdp_v2(strategy, vkspmd.Mesh([0, 1, 2, 3], (4,), ("fsdp",)))
    assert specs == {name: vkspmd.sharding_spec(p) for name, p in strategy.named_parameters()}
    expected, expected_losses = train_numpy(initial)
    for name in initial:
        np.testing.assert_array_equal(sharded_initial[name], initial[name])
        assert np.all(np.isfinite(sharded[name])), name
        np.testing.assert_allclose(sharded[name], plain[name], rtol=1e-5, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(sharded[name], expected[name], rtol=1e-4, atol=1e-5,
                                   err_msg=name)
        assert not np.allclose(sharded[name], initial[name]), name  # The steps moved it.
    np.testing.assert_allclose(sharded_losses, plain_losses, rtol=1e-5)
    np.testing.assert_allclose(sharded_losses, expected_losses, rtol=1e-4)
    assert sharded_losses[-1] < sharded_losses[0]


def test_fully_shard_on_a_submodule_dims_and_errors():
    mesh = DeviceMesh("vulkan", [0, 1, 2, 3], mesh_dim_names=("fsdp",))
    style = FullyShard(dim=0)
    assert style.dim == 0 and FullyShard().dim is None and repr(style) == "FullyShard(dim=0)"
    # PyTorch's Shard(0) on fc2 alone (its weight's 3 rows over 4 devices); fc1 replicated.
    _, _, _, specs = train_tanh_net({"fc2": style}, mesh, steps=0)
    assert specs == {"fc1.weight": "{replicated}", "fc1.bias": "{replicated}",
                     "fc2.weight": "{devices=[4,1]<=[4]}", "fc2.bias": "{devices=[4]<=[4]}"}
    _, _, _, specs = train_tanh_net({"fc1": FullyShard(-1)}, mesh, steps=0)
    assert specs["fc1.weight"] == "{devices=[1,4]<=[4]}"
    # With ColwiseParallel on a dp x tp mesh: the weight's dim 0 split over both, dp major.
    square = DeviceMesh("vulkan", [[0, 1], [2, 3]], mesh_dim_names=("dp", "tp"))
    model = TanhNet()
    parallelize_module(model, square, {"": FullyShard(0), "fc1": ColwiseParallel()}, "tp",
                       data_axis="dp")
    assert vkspmd.sharding_spec(model.fc1.weight) == "{devices=[4,1]<=[4]}"
    with pytest.raises(vkspmd.Error, match="FullyShard on the whole model shards over the data "
                                           "axis; name it"):
        parallelize_module(TanhNet(), mesh, {"": FullyShard()})
    with pytest.raises(vkspmd.Error, match='FullyShard dim 1 is outside parameter "fc1.bias"'):
        parallelize_module(TanhNet(), mesh, {"fc1": FullyShard(1)}, data_axis="fsdp")
    with pytest.raises(TypeError, match="FullyShard"):
        parallelize_module(TanhNet(), mesh, {"fc1": Shard(0)}, data_axis="fsdp")


def test_ops_propagate_partial_as_pytorch():
    # A contraction over a sharded dim returns a pending Partial(sum): each device holds the
    # product of its own blocks (to_local), and only resolving it runs the all-reduce.
    mesh = DeviceMesh("vulkan", [2, 0, 3, 1], mesh_dim_names=("x",))
    rng = np.random.default_rng(21)
    a = rng.integers(-4, 5, (3, 7)).astype(np.float32)  # 7 over 4: blocks 2, 2, 2, 1.
    b = rng.integers(-4, 5, (7, 2)).astype(np.float32)
    product = distribute_tensor(vkspmd.tensor(a), mesh, [Shard(1)]) @ distribute_tensor(
        vkspmd.tensor(b), mesh, [Shard(0)])
    assert product.placements == (Partial(),) and product.shape == (3, 2)
    check_locals(product, [x @ y for x, y in zip(chunk(a, 4, 1), chunk(b, 4, 0))])
    assert not any("all-reduce" in c for c in product.redistribute_collectives(
        placements=[Partial()]))
    assert product.redistribute_collectives(placements=[Replicate()])[-1] == "all-reduce along x"
    np.testing.assert_array_equal(product.full_tensor().numpy(), a @ b)
    # add / sub of two Partial(sum) stay pending; mul by a Replicate too; + Replicate reduces.
    r = distribute_tensor(vkspmd.tensor(np.full((3, 2), 2.0, np.float32)), mesh, [Replicate()])
    for result, expected, partial in [(product + product, 2 * (a @ b), True),
                                      (product - product, 0 * (a @ b), True),
                                      (product * r, 2 * (a @ b), True),
                                      (r * product, 2 * (a @ b), True),
                                      (product + r, a @ b + 2, False)]:
        assert result.placements[0].is_partial() == partial, result
        np.testing.assert_array_equal(result.full_tensor().numpy(), expected)
    # On a 2x2 mesh: rows over dp, the contraction over tp.
    square = DeviceMesh("vulkan", [[3, 1], [0, 2]], mesh_dim_names=("dp", "tp"))
    c = rng.integers(-4, 5, (5, 5)).astype(np.float32)
    rows = distribute_tensor(vkspmd.tensor(c), square, [Shard(0), Shard(1)])
    blocks = distribute_tensor(vkspmd.tensor(c), square, [Replicate(), Shard(0)])
    square_product = rows @ blocks
    assert square_product.placements == (Shard(0), Partial())
    addends = [x @ y for x, y in zip(chunk(c, 2, 1), chunk(c, 2, 0))]
    check_locals(square_product, [chunk(addends[j], 2, 0)[i] for i in range(2) for j in range(2)])
    np.testing.assert_array_equal(square_product.full_tensor().numpy(), c @ c)


def test_integer_partial_keeps_its_dtype():
    mesh = DeviceMesh("vulkan", [1, 0, 3, 2], mesh_dim_names=("x",))
    x = np.array([[7, -3], [10, 4]], np.int32)
    for d in (distribute_tensor(vkspmd.tensor(x), mesh, [Partial()]),
              distribute_tensor(vkspmd.tensor(x), mesh, [Replicate()]).redistribute(
                  placements=[Partial()])):
        assert d.dtype == vkspmd.int32
        # The first device of the dim holds the value, the others zeros: an exact sum.
        check_locals(d, [x] + [np.zeros_like(x)] * 3)
        assert d.full_tensor().dtype == vkspmd.int32
        np.testing.assert_array_equal(d.full_tensor().numpy(), x)
    a = np.arange(8, dtype=np.int32).reshape(1, 8)
    product = distribute_tensor(vkspmd.tensor(a), mesh, [Shard(1)]) @ distribute_tensor(
        vkspmd.tensor(a.T.copy()), mesh, [Shard(0)])
    assert product.placements == (Partial(),) and product.dtype == vkspmd.int32
    np.testing.assert_array_equal(product.full_tensor().numpy(), a @ a.T)


def test_unary_ops_and_sum_propagate_placements():
    mesh = DeviceMesh("vulkan", [1, 3, 0, 2], mesh_dim_names=("x",))
    addends = [np.array([i, 10 + i], np.float32) for i in range(4)]
    p = DTensor.from_local([vkspmd.tensor(a) for a in addends], mesh, [Partial()])
    vkspmd.mark_step()
    # neg is linear: the sum stays pending; max and min swap.
    assert (-p).placements == (Partial(),) and p.neg().placements == (Partial(),)
    assert (-p).redistribute_collectives(placements=[Partial()]) == []
    check_locals(-p, [-a for a in addends])
    m = DTensor.from_local([vkspmd.tensor(a - 12) for a in addends], mesh, [Partial("max")])
    assert m.neg().placements == (Partial("min"),)
    np.testing.assert_array_equal(m.neg().full_tensor().numpy(), -np.max(addends, 0) + 12)
    # relu keeps Partial('max') and reduces a Partial('sum') first.
    assert m.relu().placements == (Partial("max"),)
    np.testing.assert_array_equal(m.relu().full_tensor().numpy(),
                                  np.maximum(np.max(addends, 0) - 12, 0))
    shifted = DTensor.from_local([vkspmd.tensor(a - 10) for a in addends], mesh, [Partial()])
    assert shifted.relu().placements == (Replicate(),)
    np.testing.assert_array_equal(shifted.relu().full_tensor().numpy(),
                                  np.maximum(np.sum(addends, 0) - 40, 0))
    # sum over a Shard dim: a pending Partial('sum') of each device's chunk sums (7 rows over 4).
    x = np.random.default_rng(22).integers(-5, 6, (7, 3)).astype(np.float32)
    d = distribute_tensor(vkspmd.tensor(x), mesh, [Shard(0)])
    total = d.sum(0)
    assert total.placements == (Partial(),) and total.shape == (3,)
    check_locals(total, [c.sum(0) for c in chunk(x, 4, 0)])
    np.testing.assert_array_equal(total.full_tensor().numpy(), x.sum(0))
    kept = d.sum(dim=[-1], keepdim=True)
    assert kept.placements == (Shard(0),) and kept.shape == (7, 1)
    np.testing.assert_array_equal(kept.full_tensor().numpy(), x.sum(1, keepdims=True))
    assert d.sum().placements == (Partial(),)
    assert d.sum().full_tensor().item() == x.sum()
