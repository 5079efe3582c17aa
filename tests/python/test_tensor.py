"""vkspmd.Tensor from Python: numpy round trips of every dtype, factories, operators and the ops
of include/vkspmd/ops.h against numpy, printing, and the errors a bad argument raises."""
import numpy as np
import pytest

import vkspmd

ROUND_TRIP = [
    (np.float32, vkspmd.float32), (np.float16, vkspmd.float16), (np.int32, vkspmd.int32),
    (np.uint32, vkspmd.uint32), (np.bool_, vkspmd.bool),
]


@pytest.mark.parametrize("numpy_type,dtype", ROUND_TRIP)
def test_numpy_round_trip_every_dtype(numpy_type, dtype):
    source = (np.arange(24).reshape(2, 3, 4) % 7).astype(numpy_type)
    t = vkspmd.from_numpy(source)
    assert t.dtype == dtype and t.shape == (2, 3, 4) and t.numel() == 24 and t.dim() == 3
    back = t.numpy()
    assert back.dtype == source.dtype and back.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(back, source)
    np.testing.assert_array_equal(np.asarray(t), source)
    np.testing.assert_array_equal(np.asarray(t, dtype=np.float64), source.astype(np.float64))
    # Zero-copy from the gathered host value: the array does not own its memory, a capsule
    # holding that value does.
    assert not back.flags["OWNDATA"] and type(back.base).__name__ == "PyCapsule"


def test_bfloat16_rounds_and_is_not_numpy():
    t = vkspmd.tensor([1.0, 1.00390625, 3.0], dtype=vkspmd.bfloat16)  # 1 + 2^-8 ties to 1.
    assert t.dtype == vkspmd.bfloat16 and t.dtype.itemsize == 2
    np.testing.assert_array_equal(t.to(vkspmd.float32).numpy(), [1.0, 1.0, 3.0])
    with pytest.raises(TypeError, match="bfloat16"):
        t.numpy()


def test_scalars_and_empty():
    assert vkspmd.tensor(2.5).shape == () and vkspmd.tensor(2.5).item() == 2.5
    assert vkspmd.scalar(3, vkspmd.int32).dtype == vkspmd.int32
    assert vkspmd.tensor(np.zeros((0, 3), np.float32)).numpy().shape == (0, 3)
    assert float(vkspmd.tensor([4.0])) == 4.0 and bool(vkspmd.tensor(True))


def test_tensor_defaults_follow_torch():
    assert vkspmd.tensor([1.5, 2]).dtype == vkspmd.float32
    assert vkspmd.tensor([[1, 2], [3, 4]]).dtype == vkspmd.int32
    assert vkspmd.tensor([True, False]).dtype == vkspmd.bool
    assert vkspmd.tensor([1, 2], dtype=vkspmd.float16).dtype == vkspmd.float16
    with pytest.raises(ValueError, match="int32"):
        vkspmd.tensor([2**40])


def test_factories():
    np.testing.assert_array_equal(vkspmd.zeros(2, 3).numpy(), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(vkspmd.ones((2, 3), dtype=vkspmd.int32).numpy(),
                                  np.ones((2, 3), np.int32))
    np.testing.assert_array_equal(vkspmd.full([2], 7).numpy(), [7.0, 7.0])
    np.testing.assert_array_equal(vkspmd.arange(5).numpy(), np.arange(5, dtype=np.int32))
    np.testing.assert_allclose(vkspmd.arange(0, 1, 0.25).numpy(), [0, 0.25, 0.5, 0.75])
    x = vkspmd.ones(2, 2)
    assert vkspmd.zeros_like(x).numpy().sum() == 0 and vkspmd.ones_like(x).numpy().sum() == 4
    vkspmd.manual_seed(3)
    first = vkspmd.randn(4, 4).numpy()
    state = vkspmd.get_rng_state()
    uniform = vkspmd.rand(100).numpy()
    vkspmd.set_rng_state(*state)
    np.testing.assert_array_equal(vkspmd.rand(100).numpy(), uniform)
    vkspmd.manual_seed(3)
    np.testing.assert_array_equal(vkspmd.randn(4, 4).numpy(), first)
    assert 0 <= uniform.min() and uniform.max() < 1 and abs(first.mean()) < 1


def test_operators_against_numpy():
    a_np = np.array([[1.0, -2.0], [3.0, 4.0]], np.float32)
    b_np = np.array([[0.5, 2.0], [-1.0, 8.0]], np.float32)
    a, b = vkspmd.tensor(a_np), vkspmd.tensor(b_np)
    cases = {
        "add": (a + b, a_np + b_np), "sub": (a - b, a_np - b_np), "mul": (a * b, a_np * b_np),
        "div": (a / b, a_np / b_np), "radd": (1 + a, 1 + a_np), "rsub": (1 - a, 1 - a_np),
        "rmul": (2 * a, 2 * a_np), "rdiv": (1 / b, 1 / b_np), "neg": (-a, -a_np),
        "matmul": (a @ b, a_np @ b_np), "pow": (b ** 2, b_np ** 2),
        "lt": (a < b, a_np < b_np), "le": (a <= 3, a_np <= 3), "gt": (a > b, a_np > b_np),
        "ge": (a >= b, a_np >= b_np), "eq": (a == 3, a_np == 3), "ne": (a != b, a_np != b_np),
        "numpy scalar": (a * np.float32(0.5), a_np * 0.5),
    }
    for name, (actual, expected) in cases.items():
        np.testing.assert_allclose(actual.numpy(), expected, rtol=1e-6, err_msg=name)
    c = vkspmd.tensor(a_np)
    c += b
    c *= 2
    c -= 1
    c /= 4
    np.testing.assert_allclose(c.numpy(), ((a_np + b_np) * 2 - 1) / 4, rtol=1e-6)
    assert hash(a) != hash(b) and {a: 1}[a] == 1


def test_ops_against_numpy():
    x_np = np.array([[0.5, -1.5, 2.0], [3.0, 0.25, -0.75]], np.float32)
    x = vkspmd.tensor(x_np)
    pos = vkspmd.tensor(np.abs(x_np) + 0.5)
    pos_np = np.abs(x_np) + 0.5
    expect = {
        "neg": (vkspmd.neg(x), -x_np), "abs": (x.abs(), np.abs(x_np)),
        "exp": (vkspmd.exp(x), np.exp(x_np)), "log": (pos.log(), np.log(pos_np)),
        "sqrt": (vkspmd.sqrt(pos), np.sqrt(pos_np)), "rsqrt": (pos.rsqrt(), 1 / np.sqrt(pos_np)),
        "tanh": (x.tanh(), np.tanh(x_np)), "sigmoid": (x.sigmoid(), 1 / (1 + np.exp(-x_np))),
        "relu": (vkspmd.relu(x), np.maximum(x_np, 0)),
        "gelu tanh": (vkspmd.gelu(x, "tanh"), 0.5 * x_np * (1 + np.tanh(
            np.sqrt(2 / np.pi) * (x_np + 0.044715 * x_np ** 3)))),
        "pow": (vkspmd.pow(pos, pos), pos_np ** pos_np), "maximum": (vkspmd.maximum(x, pos),
                                                                   np.maximum(x_np, pos_np)),
        "minimum": (vkspmd.minimum(x, pos), np.minimum(x_np, pos_np)),
        "add/sub/mul/div": (vkspmd.div(vkspmd.mul(vkspmd.sub(vkspmd.add(x, 1), pos), 2), 4),
                            ((x_np + 1 - pos_np) * 2) / 4),
        "where": (vkspmd.where(x > 0, x, 0.0), np.where(x_np > 0, x_np, 0)),
        "where tensors": (vkspmd.where(vkspmd.lt(x, pos), x, pos), np.where(x_np < pos_np, x_np,
                                                                              pos_np)),
        "sum": (x.sum(), x_np.sum()), "sum dim": (vkspmd.sum(x, 1, keepdim=True),
                                                  x_np.sum(1, keepdims=True)),
        "mean": (x.mean((0, 1)), x_np.mean()), "amax": (vkspmd.amax(x, 0), x_np.max(0)),
        "amin": (x.amin(1), x_np.min(1)), "max": (x.max(), x_np.max()), "min": (x.min(0).values,
                                                                                 x_np.min(0)),
        "softmax": (x.softmax(1), np.exp(x_np) / np.exp(x_np).sum(1, keepdims=True)),
        "log_softmax": (vkspmd.log_softmax(x, -1), x_np - np.log(np.exp(x_np).sum(
            1, keepdims=True))),
        "matmul": (vkspmd.matmul(x, x.t()), x_np @ x_np.T), "T": (x.T, x_np.T),
        "reshape": (x.reshape(3, 2), x_np.reshape(3, 2)), "view": (x.view(-1), x_np.reshape(-1)),
        "transpose": (vkspmd.transpose(x, 0, 1), x_np.T), "permute": (x.permute(1, 0), x_np.T),
        "unsqueeze/squeeze": (x.unsqueeze(0).squeeze(0), x_np),
        "squeeze all": (vkspmd.squeeze(vkspmd.reshape(x, [1, 2, 1, 3])), x_np),
        "expand": (vkspmd.expand(vkspmd.unsqueeze(x, 0), [2, 2, 3]),
                   np.broadcast_to(x_np, (2, 2, 3))),
        "slice": (vkspmd.slice(x, 1, 0, 3, 2), x_np[:, 0:3:2]), "narrow": (x.narrow(1, 1, 2),
                                                                         x_np[:, 1:3]),
        "cat": (vkspmd.cat([x, pos], 0), np.concatenate([x_np, pos_np], 0)),
        "to_dtype": (vkspmd.to_dtype(pos, vkspmd.int32), pos_np.astype(np.int32)),
        "layer_norm": (vkspmd.layer_norm(x, [3]), (x_np - x_np.mean(1, keepdims=True)) /
                       np.sqrt(x_np.var(1, keepdims=True) + 1e-5)),
    }
    for name, (actual, expected) in expect.items():
        np.testing.assert_allclose(actual.numpy(), expected, rtol=2e-5, atol=2e-6, err_msg=name)
    labels = vkspmd.tensor(np.array([2, 0], np.int32))
    np.testing.assert_array_equal(vkspmd.argmax(x, 1).numpy(), [2, 0])
    np.testing.assert_array_equal(x.argmax(0).numpy(), [1, 1, 0])
    np.testing.assert_array_equal(vkspmd.argmin(x, 1).numpy(), x_np.argmin(1))
    np.testing.assert_array_equal(x.argmin(0, keepdim=True).numpy(), x_np.argmin(0)[None])
    np.testing.assert_array_equal(vkspmd.one_hot(labels, 3).numpy(), np.eye(3, dtype=np.int32)[[2, 0]])
    np.testing.assert_allclose(vkspmd.embedding(labels, pos.t()).numpy(), pos_np.T[[2, 0]])
    log_probs = x_np - np.log(np.exp(x_np).sum(1, keepdims=True))
    np.testing.assert_allclose(vkspmd.cross_entropy(x, labels).item(),
                               -log_probs[[0, 1], [2, 0]].mean(), rtol=1e-5)
    for comparison in (vkspmd.eq, vkspmd.ne, vkspmd.lt, vkspmd.le, vkspmd.gt, vkspmd.ge):
        assert comparison(x, 0.5).dtype == vkspmd.bool and comparison(x, pos).shape == (2, 3)


def test_queries_and_printing():
    t = vkspmd.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert repr(t) == "tensor([[1., 2.],\n        [3., 4.]])" and str(t) == repr(t)
    assert t.size() == (2, 2) and t.size(-1) == 2 and len(t) == 2 and t.ndim == 2
    assert repr(t.dtype) == "vkspmd.float32" and t.dtype.is_floating_point
    assert not vkspmd.int32.is_floating_point and t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert t.float().dtype == vkspmd.float32 and t.int().dtype == vkspmd.int32
    u = vkspmd.zeros(2, 2)
    u.copy_(t)
    w = vkspmd.zeros(2, 2)
    w.assign(t * 2)
    assert u.tolist() == t.tolist() and w.numpy().sum() == 20 and t.is_same(t)
    assert not u.is_same(t) and vkspmd.negative(t).numpy().sum() == -10


def test_errors_name_the_problem():
    a = vkspmd.zeros(2, 3)
    with pytest.raises(ValueError, match=r"\[2, 3\] and \[2, 3\]") as info:
        a @ vkspmd.zeros(2, 3)
    assert isinstance(info.value, vkspmd.Error) and info.value.code == "INVALID_ARGUMENT"
    with pytest.raises(vkspmd.InvalidArgumentError):
        a.reshape(4, 4)
    with pytest.raises(TypeError, match="float64"):
        vkspmd.from_numpy(np.zeros(3))
    with pytest.raises(TypeError, match="int64"):
        vkspmd.from_numpy(np.zeros(3, np.int64))
    with pytest.raises(TypeError, match="numpy.ndarray"):
        vkspmd.from_numpy([1, 2])
    with pytest.raises(TypeError):
        a + "text"
    u = vkspmd.zeros(2, 3)
    with pytest.raises(ValueError):
        u.copy_(vkspmd.zeros(3))  # Wrong rank.


def test_non_contiguous_arrays_are_copied():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    for view in (base[:, ::2], base.T, base[1:3, 1:5]):
        assert not view.flags["C_CONTIGUOUS"]
        np.testing.assert_array_equal(vkspmd.from_numpy(view).numpy(), view)
    big_endian = np.arange(3, dtype=">f4")
    with pytest.raises(TypeError, match="big-endian"):
        vkspmd.from_numpy(big_endian)


def test_npy_files(tmp_path):
    t = vkspmd.tensor(np.arange(6, dtype=np.int32).reshape(2, 3))
    t.to_npy(str(tmp_path / "t.npy"))
    np.testing.assert_array_equal(np.load(tmp_path / "t.npy"), t.numpy())
    np.testing.assert_array_equal(vkspmd.from_npy(str(tmp_path / "t.npy")).numpy(), t.numpy())


def test_methods_equal_functions():
    x_np = np.array([[0.5, 1.5, 2.0], [3.0, 0.25, 0.75]], np.float32)
    x = vkspmd.tensor(x_np)
    pairs = {
        "abs": (x.abs(), vkspmd.abs(x)), "neg": (x.neg(), vkspmd.neg(x)),
        "negative": (x.negative(), vkspmd.negative(x)), "exp": (x.exp(), vkspmd.exp(x)),
        "log": (x.log(), vkspmd.log(x)), "sqrt": (x.sqrt(), vkspmd.sqrt(x)),
        "rsqrt": (x.rsqrt(), vkspmd.rsqrt(x)), "tanh": (x.tanh(), vkspmd.tanh(x)),
        "sigmoid": (x.sigmoid(), vkspmd.sigmoid(x)), "relu": (x.relu(), vkspmd.relu(x)),
        "amax": (x.amax(1), vkspmd.amax(x, 1)), "amin": (x.amin(0), vkspmd.amin(x, 0)),
        "mean": (x.mean(1, True), vkspmd.mean(x, 1, True)), "sum": (x.sum(), vkspmd.sum(x)),
        "softmax": (x.softmax(0), vkspmd.softmax(x, 0)),
        "log_softmax": (x.log_softmax(1), vkspmd.log_softmax(x, 1)),
        "matmul": (x.matmul(x.t()), vkspmd.matmul(x, x.transpose(0, 1))),
        "transpose": (x.transpose(0, 1), vkspmd.transpose(x, 0, 1)),
        "permute": (x.permute(1, 0), vkspmd.permute(x, [1, 0])),
        "expand": (x.unsqueeze(0).expand(2, 2, 3), vkspmd.expand(x.unsqueeze(0), [2, 2, 3])),
        "narrow": (x.narrow(1, 1, 2), vkspmd.narrow(x, 1, 1, 2)),
    }
    for name, (method, function) in pairs.items():
        np.testing.assert_array_equal(method.numpy(), function.numpy(), err_msg=name)
    np.testing.assert_allclose(x.log_softmax(1).numpy(),
                               np.log(np.exp(x_np) / np.exp(x_np).sum(1, keepdims=True)),
                               rtol=1e-5, atol=1e-6)


def test_indexing_against_numpy():
    x_np = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    x = vkspmd.tensor(x_np)
    keys = [1, -1, (0, 2), (slice(None), 1), (slice(1, None), slice(None, None, 2)),
            (Ellipsis, 3), (None, 1), (1, None, slice(-3, 100)), (Ellipsis, None),
            (slice(-100, 2), Ellipsis, slice(1, 4, 2)), (2, 3, 4), slice(5, 9)]
    for key in keys:
        np.testing.assert_array_equal(x[key].numpy(), x_np[key], err_msg=repr(key))
    with pytest.raises(IndexError, match="out of range"):
        x[3]
    with pytest.raises(ValueError, match="rank"):
        x[0, 0, 0, 0]
    with pytest.raises(ValueError, match="step"):
        x[::-1]
    with pytest.raises(ValueError, match="Ellipsis"):
        x[..., 0, ...]
    with pytest.raises(TypeError, match="int32/bool tensor"):
        x[1.5]


def test_tensor_and_mask_indexing_against_numpy():
    x_np = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = vkspmd.tensor(x_np)
    rows = np.array([2, 0, -1, 2], np.int32)
    grid = np.array([[0, 5], [3, 3]], np.int32)
    cases = [(vkspmd.tensor(rows), rows), ((slice(None), vkspmd.tensor(grid)), (slice(None), grid)),
             ((Ellipsis, vkspmd.tensor(grid)), (Ellipsis, grid)),
             ((1, vkspmd.tensor(rows)), (1, rows)), ([1, 3], [1, 3]),
             (np.array([3, 1]), np.array([3, 1])),
             (vkspmd.tensor(np.array([1, 0], np.uint32)), np.array([1, 0])),
             ((slice(1, 3), vkspmd.tensor(rows)), (slice(1, 3), rows)),
             (x > 10.0, x_np > 10.0), ([True, False, True, True], [True, False, True, True]),
             ((slice(None), vkspmd.tensor(x_np[0] % 2 == 0)), (slice(None), x_np[0] % 2 == 0)),
             (vkspmd.zeros(4, 6) > 1.0, np.zeros((4, 6), bool))]
    for key, numpy_key in cases:
        got = x[key]
        assert got.shape == x_np[numpy_key].shape, repr(numpy_key)
        np.testing.assert_array_equal(got.numpy(), x_np[numpy_key], err_msg=repr(numpy_key))
    # The gradient of a gather is a scatter-add (repeated rows add up).
    w = vkspmd.tensor(x_np).requires_grad_()
    (dw,) = vkspmd.grad((w[vkspmd.tensor(rows)] * 2.0).sum(), [w])
    expected = np.zeros_like(x_np)
    np.add.at(expected, rows, 2.0)
    np.testing.assert_array_equal(dw.numpy(), expected)
    with pytest.raises(NotImplementedError, match="tensor indices"):
        x[vkspmd.tensor(rows), vkspmd.tensor(rows)]
    with pytest.raises(ValueError, match="mask"):
        x[vkspmd.tensor(np.ones(3, bool))]  # Dim 0 has 4 elements.
    with pytest.raises(ValueError, match="int32, uint32 or bool"):
        x[vkspmd.tensor(np.ones(2, np.float32))]
    with pytest.raises(IndexError, match="int32"):
        x[np.array([2**40])]


def test_max_and_min_over_a_dim_return_values_and_indices():
    x_np = np.array([[3, 1, 1, 7], [2, 9, 9, -4], [5, 5, 0, 0]], np.float32)  # Ties: the first.
    x = vkspmd.tensor(x_np)
    for name, numpy_values, numpy_indices in (("max", np.max, np.argmax),
                                              ("min", np.min, np.argmin)):
        for dim in (0, 1, -1):
            result = getattr(x, name)(dim)
            assert type(result) is getattr(vkspmd.return_types, name)
            values, indices = result
            assert values is result.values and indices is result.indices
            np.testing.assert_array_equal(values.numpy(), numpy_values(x_np, dim))
            np.testing.assert_array_equal(indices.numpy(), numpy_indices(x_np, dim))
            assert indices.dtype == vkspmd.int32
        kept = getattr(x, name)(1, keepdim=True)
        assert kept.values.shape == (3, 1) and kept.indices.shape == (3, 1)
        assert getattr(x, name)().item() == numpy_values(x_np)  # No dim: the value alone.
        with pytest.raises(TypeError, match="dim must be one int"):
            getattr(x, name)((0, 1))
