"""Manual sharding from Python (vkspmd.enable_manual_sharding / disable_manual_sharding /
shard_map and vkspmd.collectives) against numpy: a Megatron MLP with an explicit all_reduce,
each collective once, and the C++ errors as ValueError."""
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
