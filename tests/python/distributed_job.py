"""One process of a job of 2 processes x 2 devices: tests/python/CMakeLists.txt starts
`vkspmd launch -n 2 --devices-per-process 2 -- python3 -m pytest -x distributed_job.py` (not
collected with the other test files: it needs the launcher's variables). vkspmd.distributed joins
the job, and sharded ops over meshes spanning both processes (a hybrid DeviceMesh, a 1-D mesh,
PyTorch/XLA's Mesh) equal numpy's. Both processes run the same tests in the same order, as SPMD
programs must: reading a value split over the processes is a collective. Values are small
integers, so every float32 sum is exact in any order."""
import os

import numpy as np
import pytest

import vkspmd
import vkspmd.spmd as xs
from vkspmd import distributed
from vkspmd.distributed import hybrid_device_mesh, init_device_mesh
from vkspmd.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

RANK = int(os.environ["RANK"])


def values(rows, cols, seed):
    """The same small integers in every process."""
    return np.random.default_rng(seed).integers(-3, 4, size=(rows, cols)).astype(np.float32)


@pytest.fixture(scope="module", autouse=True)
def job():
    distributed.initialize()


def test_initialize_joins_the_job():
    distributed.initialize()  # Idempotent.
    assert distributed.is_initialized()
    assert distributed.process_index() == distributed.get_rank() == RANK
    assert distributed.process_count() == distributed.get_world_size() == 2
    assert distributed.device_count() == vkspmd.device_count() == 4
    assert distributed.addressable_devices() == [2 * RANK, 2 * RANK + 1]


def test_hybrid_mesh_spans_the_processes():
    mesh = hybrid_device_mesh((2,), mesh_dim_names=("dp", "tp"))
    assert mesh.shape == (2, 2) and mesh.mesh.tolist() == [[0, 1], [2, 3]]
    a, b = values(6, 8, 1), values(8, 4, 2)
    # Rows over the processes, columns inside each: the contraction's partial sums stay inside
    # each process, the full value gathers rows across them.
    da = distribute_tensor(vkspmd.from_numpy(a), mesh, [Shard(0), Shard(1)])
    db = distribute_tensor(vkspmd.from_numpy(b), mesh, [Replicate(), Shard(0)])
    np.testing.assert_array_equal((da @ db).full_tensor().numpy(), a @ b)
    # The contraction over the processes: its partial sums are all-reduced between them.
    da = distribute_tensor(vkspmd.from_numpy(a), mesh, [Shard(1), Shard(0)])
    db = distribute_tensor(vkspmd.from_numpy(b), mesh, [Shard(0), Replicate()])
    c = da @ db
    np.testing.assert_array_equal(c.full_tensor().numpy(), a @ b)
    assert vkspmd.sum(c.full_tensor()).item() == (a @ b).sum()
    moved = da.redistribute(placements=[Replicate(), Shard(1)])
    assert moved.placements == (Replicate(), Shard(1))
    np.testing.assert_array_equal(moved.full_tensor().numpy(), a)


def test_to_local_gives_this_process_its_own_chunks():
    mesh = hybrid_device_mesh((2,), mesh_dim_names=("dp", "tp"))
    a = values(6, 8, 3)
    locals_ = distribute_tensor(vkspmd.from_numpy(a), mesh, [Shard(0), Shard(1)]).to_local()
    assert len(locals_) == 4
    for device, local in enumerate(locals_):
        if device // 2 != RANK:
            assert local is None, device  # Another process's device.
            continue
        row, col = device // 2, device % 2
        np.testing.assert_array_equal(local.numpy(), a[3 * row:3 * row + 3, 4 * col:4 * col + 4])


def test_partial_sums_over_the_processes():
    mesh = hybrid_device_mesh((2,), mesh_dim_names=("dp", "tp"))
    locals_ = [values(3, 5, 10 + device) for device in range(4)]
    own = [vkspmd.from_numpy(locals_[device]) for device in (2 * RANK, 2 * RANK + 1)]
    # Each process passes its own devices' locals (as PyTorch's from_local takes the rank's
    # shard). Partial over dp (the processes), Replicate over tp (each group's first local).
    d = DTensor.from_local(own, mesh, [Partial("sum"), Replicate()])
    np.testing.assert_array_equal(d.full_tensor().numpy(), locals_[0] + locals_[2])
    # Replicate over dp: the processes' locals agree along it (run_check=False, as PyTorch's).
    same = [values(3, 5, 10 + device % 2) for device in range(4)]
    own = [vkspmd.from_numpy(same[device]) for device in (2 * RANK, 2 * RANK + 1)]
    d = DTensor.from_local(own, mesh, [Replicate(), Partial("max")])
    np.testing.assert_array_equal(d.full_tensor().numpy(), np.maximum(same[0], same[1]))


def test_init_device_mesh_and_mark_sharding_over_the_job():
    flat = init_device_mesh("vulkan", (4,), mesh_dim_names=("x",))
    assert flat.device_ids == [0, 1, 2, 3]
    a, b = values(8, 6, 4), values(6, 4, 5)
    d = distribute_tensor(vkspmd.from_numpy(a), flat, [Shard(1)])
    np.testing.assert_array_equal((d.full_tensor() * 2 + 1).numpy(), a * 2 + 1)

    # PyTorch/XLA's spelling: x splits the processes, y the devices inside each.
    mesh = xs.Mesh(np.arange(4), (2, 2), ("x", "y"))
    t = vkspmd.from_numpy(a)
    sharded = xs.mark_sharding(t, mesh, ("y", "x"))
    u = vkspmd.from_numpy(b)
    xs.mark_sharding(u, mesh, ("x", None))
    np.testing.assert_array_equal((t @ u).numpy(), a @ b)
    shards = sharded.local_shards
    assert [shard.device for shard in shards] == [2 * RANK, 2 * RANK + 1]
    for s, shard in enumerate(shards):
        np.testing.assert_array_equal(shard.data, a[4 * s:4 * s + 4, 3 * RANK:3 * RANK + 3])


def test_meshes_the_job_cannot_hold_raise():
    with pytest.raises(ValueError, match=r"needs 8 devices; the job has 4"):
        init_device_mesh("vulkan", (2, 4))
    with pytest.raises(ValueError, match=r"needs 4 devices in each of the 2 process"):
        hybrid_device_mesh((4,))
