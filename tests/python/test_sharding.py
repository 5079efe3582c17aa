"""Sharding as PyTorch/XLA spells it, on 8 lavapipe devices: the seed RFC's two examples (values
and shards), every partition-spec form, local shards against numpy slices, the sharding
pictures, clear_sharding, the step calls and the errors of a bad spec."""
import numpy as np
import pytest

import vkspmd
import vkspmd.spmd as xs


def test_rfc_example_m1_on_2x4():
    vkspmd.manual_seed(0)
    num_devices = vkspmd.device_count()
    assert num_devices == 8
    mesh_shape = (2, 4)
    device_ids = np.array(range(num_devices))
    mesh = xs.Mesh(device_ids, mesh_shape, ("x", "y"))
    t = vkspmd.randn(8, 4)
    partition_spec = (0, 1)
    m1_sharded = xs.mark_sharding(t, mesh, partition_spec)
    assert isinstance(m1_sharded, xs.XLAShardedTensor)
    assert m1_sharded.sharding_spec == "{devices=[2,4]<=[8]}"
    assert m1_sharded.sharding_type == xs.ShardingType.TILED
    assert vkspmd.sharding_spec(t) == m1_sharded.sharding_spec  # t itself is marked.
    full = t.numpy()
    np.testing.assert_array_equal((m1_sharded + 1).numpy(), full + 1)
    shards = m1_sharded.local_shards
    assert [shard.device for shard in shards] == list(range(8))
    for shard in shards:
        row, col = divmod(shard.device, 4)
        assert shard.indices == (slice(4 * row, 4 * row + 4, 1), slice(col, col + 1, 1))
        np.testing.assert_array_equal(shard.data, full[shard.indices])
        np.testing.assert_array_equal(shard.unpadded_data, full[shard.indices])


def test_rfc_example_linear_layer_on_4x2():
    vkspmd.manual_seed(1)
    mesh = vkspmd.Mesh(list(range(8)), (4, 2), ("data", "model"))
    inputs, weight, bias = vkspmd.randn(8, 32), vkspmd.randn(16, 32), vkspmd.randn(16)
    expected = inputs.numpy() @ weight.numpy().T + bias.numpy()
    xs.mark_sharding(inputs, mesh, ("data", None))
    xs.mark_sharding(weight, mesh, ("model", None))
    output = vkspmd.matmul(inputs, weight.t()) + bias
    replicated = xs.mark_sharding(output, mesh, (None, None))
    assert vkspmd.sharding_spec(inputs) == "{devices=[4,1,2]<=[8] last_tile_dim_replicate}"
    vkspmd.mark_step()
    assert replicated.sharding_type == vkspmd.ShardingType.REPLICATED
    assert len(replicated.local_shards) == 8
    np.testing.assert_allclose(output.numpy(), expected, rtol=1e-4, atol=1e-4)
    weight_shards = vkspmd.mark_sharding(weight, mesh, ("model", None)).local_shards
    assert weight_shards[1].indices == (slice(8, 16, 1), slice(0, 32, 1))


def test_partition_spec_forms_and_uneven_shards():
    mesh = vkspmd.Mesh(np.arange(8), (2, 4), ("dp", "tp"))
    values = np.arange(60, dtype=np.float32).reshape(6, 10)
    for spec, text in [((("dp", "tp"), None), "{devices=[8,1]<=[8]}"),
                       ((None, 1), "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"),
                       (([0, 1], None), "{devices=[8,1]<=[8]}"),
                       (("tp", "dp"), "{devices=[4,2]<=[2,4]T(1,0)}")]:
        t = vkspmd.tensor(values)
        sharded = vkspmd.mark_sharding(t, mesh, spec)
        assert sharded.sharding_spec == text, spec
        for shard in sharded.local_shards:
            np.testing.assert_array_equal(shard.unpadded_data, values[shard.indices])
            # Stored shards are padded with zeros to the common shard shape (6 rows over 8).
            assert shard.data.shape[0] >= shard.unpadded_data.shape[0]
    np.testing.assert_array_equal(sharded.global_tensor.numpy(), values)
    assert sharded.mesh == mesh and mesh.mesh_shape == (2, 4) and mesh.axis_names == ("dp", "tp")
    assert mesh.device_ids == list(range(8)) and mesh.size() == 8
    assert mesh.get_axis_index("tp") == 1 and "dp" in repr(mesh)


def test_clear_sharding_and_like():
    mesh = vkspmd.get_1d_mesh("x")
    assert mesh.mesh_shape == (8,)
    t = vkspmd.ones(8, 2)
    vkspmd.mark_sharding(t, mesh, ("x", None))
    with pytest.raises(vkspmd.Error, match="clear_sharding") as info:
        vkspmd.mark_sharding(t, mesh, (None, "x"))
    assert info.value.code == "FAILED_PRECONDITION" and not isinstance(info.value, ValueError)
    xs.clear_sharding(t)
    resharded = vkspmd.mark_sharding(t, mesh, (None, None))
    assert resharded.sharding_type == vkspmd.ShardingType.REPLICATED
    other = vkspmd.mark_sharding_like(vkspmd.zeros(8, 2), vkspmd.mark_sharding(
        vkspmd.zeros(8, 2), mesh, ("x", None)))
    assert other.sharding_spec == "{devices=[8,1]<=[8]}"
    vkspmd.set_global_mesh(mesh)
    assert vkspmd.get_global_mesh() == mesh
    assert vkspmd.mark_sharding(vkspmd.zeros(8), None, ("x",)).sharding_spec == \
        "{devices=[8]<=[8]}"
    assert vkspmd.sharding_spec(vkspmd.zeros(2)) == ""


def test_visualize_tensor_sharding(tmp_path, capsys):
    mesh = vkspmd.Mesh(np.arange(4), (2, 2))
    t = vkspmd.mark_sharding(vkspmd.zeros(4, 8), mesh, (0, None))
    text = vkspmd.visualize_tensor_sharding(t, svg_path=str(tmp_path / "t.svg"))
    assert capsys.readouterr().out == text
    assert "0,1" in text and "[0:2,0:8]" in text and "[2:4,0:8]" in text and "┌" in text
    svg = (tmp_path / "t.svg").read_text()
    assert svg.startswith("<svg") and "0,1" in svg
    assert "\x1b[" in xs.visualize_tensor_sharding(t, use_color=True)
    assert "0" in vkspmd.visualize_tensor_sharding(vkspmd.zeros(3))


def test_steps_and_metrics():
    vkspmd.reset_metrics()
    t = vkspmd.ones(4) * 3
    vkspmd.sync()
    xs.mark_step()
    xs.wait_device_ops()
    assert vkspmd.wait_device_ops_for(10.0)
    with pytest.raises(ValueError, match="non-negative"):
        vkspmd.wait_device_ops_for(-1.0)
    assert t.numpy().tolist() == [3, 3, 3, 3]
    metrics = vkspmd.metrics()
    assert metrics["execute_count"] >= 1 and metrics["compile_count"] + metrics["cache_hits"] >= 1
    assert "ExecuteCount" in xs.metrics_report()


def test_bad_specs():
    mesh = vkspmd.Mesh(np.arange(8), (2, 4), ("x", "y"))
    t = vkspmd.zeros(8, 4)
    with pytest.raises(ValueError, match="rank"):
        vkspmd.mark_sharding(t, mesh, (0,))
    with pytest.raises(ValueError, match="z"):
        vkspmd.mark_sharding(t, mesh, ("z", None))
    with pytest.raises(ValueError):
        vkspmd.mark_sharding(t, mesh, (0, 0))
    with pytest.raises(TypeError, match="partition spec entry"):
        vkspmd.mark_sharding(t, mesh, (1.5, None))
    with pytest.raises(TypeError, match="tuple"):
        vkspmd.mark_sharding(t, mesh, "x")
    with pytest.raises(ValueError):
        vkspmd.Mesh(np.arange(6), (2, 4))
