"""Manual sharding from Python (vkspmd.enable_manual_sharding / disable_manual_sharding /
shard_map and vkspmd.collectives) against numpy: a Megatron MLP with an explicit all_reduce,
each collective once, and the C++ errors as ValueError. Regions with auto axes (JAX's
shard_map(auto=)): the MLP manual over tp, automatic over dp, forward and backward against the
automatic program and numpy; axis_index there; their errors."""
import numpy as np
import pytest

import vkspmd
from vkspmd import collectives

RNG = np.random.default_rng(22)


def values(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_megatron_mlp_with_explicit_all_reduce_equals_numpy():
    mesh = vkspmd.Mesh(np.arange(4), (4,), ("tp",))
    x, w1, w2 = values(4, 6), values(6, 8), values(8, 3)
    expected = np.tanh(x @ w1) @ w2

    def mlp(xs, w1s, w2s):
        return collectives.all_reduce(vkspmd.matmul(vkspmd.tanh(vkspmd.matmul(xs, w1s)), w2s),
                                      "tp")

    mapped = vkspmd.shard_map(mlp, mesh, in_specs=((None, None), (None, "tp"), ("tp", None)),
                              out_specs=((None, None),))
    out = mapped(vkspmd.tensor(x), vkspmd.tensor(w1), vkspmd.tensor(w2))
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)

    # The same region with PyTorch/XLA's calls (mesh= keyword, then the global mesh).
    h = vkspmd.enable_manual_sharding(vkspmd.tensor(w1), (None, "tp"), mesh=mesh)
    partial = vkspmd.matmul(vkspmd.tanh(vkspmd.matmul(vkspmd.tensor(x), h)),
                            vkspmd.enable_manual_sharding(vkspmd.tensor(w2), ("tp", None),
                                                          mesh=mesh))
    out = vkspmd.disable_manual_sharding(collectives.all_reduce(partial, ["tp"]), (None, None),
                                         (4, 3), mesh=mesh)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)


def run(fn, global_value, in_spec, out_spec):
    mesh = vkspmd.Mesh(np.arange(4), (4,), ("x",))
    mapped = vkspmd.shard_map(fn, mesh, [in_spec], [out_spec])
    return mapped(vkspmd.tensor(global_value)).numpy()  # f returns a Tensor: so does mapped


def test_each_collective_equals_numpy():
    a = values(8, 4)
    shards = np.split(a, 4, axis=0)  # device k holds rows 2k, 2k+1
    total = sum(shards)
    # all_reduce avg: every device holds the mean; out_spec (None, None) takes one copy.
    np.testing.assert_allclose(
        run(lambda t: collectives.all_reduce(t, "x", "avg"), a, ("x", None), (None, None)),
        total / 4, rtol=1e-5, atol=1e-5)
    # all_gather along dim 1: every device holds the shards side by side.
    np.testing.assert_allclose(
        run(lambda t: collectives.all_gather(t, "x", 1), a, ("x", None), (None, None)),
        np.concatenate(shards, axis=1), rtol=1e-6)
    # reduce_scatter along dim 1: device k keeps column k of the sum; the out spec splits dim 1.
    np.testing.assert_allclose(
        run(lambda t: collectives.reduce_scatter(t, ("x",), 1), a, ("x", None), (None, "x")),
        total, rtol=1e-5, atol=1e-5)
    # all_to_all split dim 1, concat dim 0: device k gets column k of every shard.
    b = values(8, 8)
    b_shards = np.split(b, 4, axis=0)
    expected = np.concatenate([np.concatenate([s[:, 2 * k:2 * k + 2] for s in b_shards], axis=0)
                               for k in range(4)], axis=1)
    np.testing.assert_allclose(
        run(lambda t: collectives.all_to_all(t, "x", 1, 0), b, ("x", None), (None, "x")),
        expected, rtol=1e-6)
    # ppermute 0->1->2->3: position 0 receives zeros.
    np.testing.assert_allclose(
        run(lambda t: collectives.ppermute(t, "x", [(0, 1), (1, 2), (2, 3)]), a, ("x", None),
            ("x", None)),
        np.concatenate([np.zeros_like(shards[0])] + shards[:3], axis=0), rtol=1e-6)


def test_axis_index_gives_each_device_its_mesh_coordinates():
    # A permuted 2x2 mesh: device (i, j) holds block (i, j) and adds 10 i + j whatever its id.
    mesh = vkspmd.Mesh(np.array([3, 1, 0, 2]), (2, 2), ("x", "y"))
    a = values(4, 4)

    def shift(t):
        i, j = collectives.axis_index(t, "x"), collectives.axis_index(t, "y")
        return t + (i * 10 + j).to(vkspmd.float32)

    out = vkspmd.shard_map(shift, mesh, [("x", "y")], [("x", "y")])(vkspmd.tensor(a)).numpy()
    np.testing.assert_allclose(out, a + np.kron([[0, 1], [10, 11]], np.ones((2, 2))), rtol=1e-6)
    # Over both axes, first major: the linear index 2 i + j, as int32.
    index = vkspmd.shard_map(
        lambda t: vkspmd.reshape(collectives.axis_index(t, ("x", "y")), (1, 1)), mesh,
        [(None, None)], [("x", "y")])(vkspmd.tensor(a[:2, :2])).numpy()
    assert index.dtype == np.int32
    np.testing.assert_array_equal(index, [[0, 1], [2, 3]])


def test_errors_are_value_errors_with_the_cpp_message():
    mesh = vkspmd.Mesh(np.arange(4), (4,), ("x",))
    shard = vkspmd.enable_manual_sharding(vkspmd.tensor(values(8, 4)), ("x", None), mesh=mesh)
    with pytest.raises(ValueError, match="all_reduce: unknown mesh axis 'tp'"):
        collectives.all_reduce(shard, "tp")
    with pytest.raises(ValueError, match="axis_index: unknown mesh axis 'tp'"):
        collectives.axis_index(shard, "tp")
    with pytest.raises(vkspmd.Error, match="axis_index: the f32.4. operand is not inside a manual"):
        collectives.axis_index(vkspmd.tensor(values(4)), "x")
    with pytest.raises(ValueError, match="all_reduce: reduce_op must be"):
        collectives.all_reduce(shard, "x", "prod")
    with pytest.raises(ValueError, match="does not split into 4"):
        vkspmd.enable_manual_sharding(vkspmd.tensor(values(6, 4)), ("x", None), mesh=mesh)
    with pytest.raises(TypeError, match="shard_map: the function returns"):
        vkspmd.shard_map(lambda t: 3, mesh, [("x", None)], [("x", None)])(
            vkspmd.tensor(values(8, 4)))


def megatron_numpy(x, w1, w2, cotangent):
    """tanh(x w1) w2 and the gradients of sum(y * cotangent) in x, w1, w2, in float64."""
    x, w1, w2, cotangent = (a.astype(np.float64) for a in (x, w1, w2, cotangent))
    h = np.tanh(x @ w1)
    dz = (cotangent @ w2.T) * (1 - h * h)
    return [h @ w2, dz @ w1.T, x.T @ dz, h.T @ cotangent]


def forward_and_gradients(build, arrays, cotangent):
    """build(x, w1, w2) -> y on fresh tensors; y and the gradients of sum(y * cotangent)."""
    inputs = [vkspmd.tensor(a) for a in arrays]
    y = build(*inputs)
    grads = vkspmd.grad((y * vkspmd.tensor(cotangent)).sum(), inputs)
    return [t.numpy() for t in [y, *grads]]


def assert_all_close(actual, expected, what, tolerance):
    for name, a, e in zip(("y", "dx", "dw1", "dw2"), actual, expected):
        assert np.all(np.isfinite(a)), f"{what} {name}"
        np.testing.assert_allclose(a, e, rtol=tolerance, atol=tolerance, err_msg=f"{what} {name}")


def test_megatron_mlp_manual_over_tp_automatic_over_dp_equals_the_automatic_program():
    mesh = vkspmd.Mesh(np.arange(4), (2, 2), ("dp", "tp"))
    arrays = [values(4, 6), values(6, 8), values(8, 3)]
    cotangent = values(4, 3)
    expected = megatron_numpy(*arrays, cotangent)
    shapes = []

    def automatic(x, w1, w2):
        vkspmd.mark_sharding(x, mesh, ("dp", None))
        vkspmd.mark_sharding(w1, mesh, (None, "tp"))
        vkspmd.mark_sharding(w2, mesh, ("tp", None))
        return vkspmd.tanh(x @ w1) @ w2

    def mlp(x, w1, w2):  # x whole per tp group, W1 / W2 its tp blocks
        shapes.append([x.shape, w1.shape, w2.shape])
        vkspmd.mark_sharding(x, mesh, ("dp", None))  # the partitioner splits the batch over dp
        return collectives.all_reduce(vkspmd.tanh(x @ w1) @ w2, "tp")

    partly_manual = vkspmd.shard_map(mlp, mesh, ((None, None), (None, "tp"), ("tp", None)),
                                     ((None, None),), auto=frozenset({"dp"}))
    auto_run = forward_and_gradients(automatic, arrays, cotangent)
    manual_run = forward_and_gradients(partly_manual, arrays, cotangent)
    # The shards are split over the manual axis only: dp is the partitioner's.
    assert shapes == [[(4, 6), (6, 4), (4, 3)]]
    assert_all_close(auto_run, expected, "automatic vs numpy", 1e-4)
    assert_all_close(manual_run, expected, "partly manual vs numpy", 1e-4)
    assert_all_close(manual_run, auto_run, "partly manual vs automatic", 1e-5)

    # The same region with PyTorch/XLA's calls; auto as one name or a list.
    def by_hand(x, w1, w2):
        xs = vkspmd.enable_manual_sharding(x, (None, None), mesh=mesh, auto="dp")
        vkspmd.mark_sharding(xs, mesh, ("dp", None))
        w1s = vkspmd.enable_manual_sharding(w1, (None, "tp"), mesh=mesh, auto=["dp"])
        w2s = vkspmd.enable_manual_sharding(w2, ("tp", None), mesh=mesh, auto={"dp"})
        partial = vkspmd.tanh(xs @ w1s) @ w2s
        return vkspmd.disable_manual_sharding(collectives.all_reduce(partial, "tp"), (None, None),
                                              (4, 3), mesh=mesh)

    assert_all_close(forward_and_gradients(by_hand, arrays, cotangent), auto_run,
                     "enable_manual_sharding(auto=) vs automatic", 1e-5)


def test_axis_index_in_a_region_with_auto_axes():
    # 2x4 (dp, tp), manual over tp: column block k (2 columns) gets + 10 k; the rows are split
    # over dp by the partitioner, which leaves the index alone.
    mesh = vkspmd.Mesh(np.arange(8), (2, 4), ("dp", "tp"))
    a = values(4, 8)

    def shift(t):
        vkspmd.mark_sharding(t, mesh, ("dp", None))
        return t + (collectives.axis_index(t, "tp") * 10).to(vkspmd.float32)

    out = vkspmd.shard_map(shift, mesh, [(None, "tp")], [(None, "tp")], auto={"dp"})(
        vkspmd.tensor(a)).numpy()
    np.testing.assert_allclose(out, a + np.repeat([0, 10, 20, 30], 2)[None, :], rtol=1e-6)


def test_auto_axis_errors_are_clear_python_exceptions():
    mesh = vkspmd.Mesh(np.arange(4), (2, 2), ("dp", "tp"))
    x = vkspmd.tensor(values(8, 4))
    identity = [("tp", None)], [("tp", None)]
    with pytest.raises(ValueError, match="auto axes: unknown mesh axis 'zz'"):
        vkspmd.shard_map(lambda t: t, mesh, *identity, auto={"zz"})(x)
    with pytest.raises(ValueError, match="auto axes: unknown mesh axis 'zz'"):
        vkspmd.enable_manual_sharding(x, ("tp", None), mesh=mesh, auto=["dp", "zz"])
    # An axis both manual (named by a spec) and auto.
    with pytest.raises(ValueError, match="dim 0 is split over mesh axis dp, which the region "
                                         "leaves to the automatic partitioner"):
        vkspmd.shard_map(lambda t: t, mesh, [("dp", None)], [("dp", None)], auto={"dp"})(x)
    with pytest.raises(ValueError, match="dim 0 is split over mesh axis dp, which the region "
                                         "leaves to the automatic partitioner"):
        vkspmd.enable_manual_sharding(x, ("dp", None), mesh=mesh, auto="dp")
    # Every axis automatic (given in any order: named in the mesh's).
    with pytest.raises(ValueError, match=r"auto axes dp\+tp leave no manual axis"):
        vkspmd.shard_map(lambda t: t, mesh, [(None, None)], [(None, None)],
                         auto={"tp", "dp"})(x)
    with pytest.raises(ValueError, match='auto axis "dp" twice'):
        vkspmd.enable_manual_sharding(x, ("tp", None), mesh=mesh, auto=["dp", "dp"])
    with pytest.raises(TypeError, match="auto: a set of mesh axis names"):
        vkspmd.shard_map(lambda t: t, mesh, *identity, auto=1)
    with pytest.raises(TypeError, match="auto: mesh axis names are strings"):
        vkspmd.enable_manual_sharding(x, ("tp", None), mesh=mesh, auto=["dp", 0])
    # Inside: collectives and axis_index over the auto axis.
    shard = vkspmd.enable_manual_sharding(x, ("tp", None), mesh=mesh, auto={"dp"})
    assert shard.shape == (4, 4)
    with pytest.raises(ValueError, match='all_reduce: mesh axis "dp" is automatic in this manual '
                                         r'region \(manual over tp\)'):
        collectives.all_reduce(shard, "dp")
    with pytest.raises(ValueError, match='axis_index: mesh axis "dp" is automatic'):
        collectives.axis_index(shard, "dp")
    with pytest.raises(ValueError, match="mark_sharding: dim 0 is split over mesh axis tp, which "
                                         "is manual in this region"):
        vkspmd.mark_sharding(shard, mesh, ("tp", None))
