"""vkspmd.auto_shard from Python: an MLP trained with AdamW, its first step auto-sharded on 4
devices under a memory limit below data parallelism's state, equals the same training on one
device (losses and parameters, and the first loss equals numpy's); an infeasible limit is a
vkspmd.Error naming it, with the parameters left as they were."""
import math

import numpy as np
import pytest

import vkspmd
from vkspmd import nn

RNG = np.random.default_rng(7)
X = RNG.standard_normal((3, 8, 16)).astype(np.float32)
Y = RNG.standard_normal((3, 8, 4)).astype(np.float32)


def train(mesh=None, find_state=False, **options):
    """Three AdamW steps of a seeded MlpRegressor(16, 256, 4); with a mesh the first is
    auto_shard's (given the state, or with find_state finding it). Returns the losses, the final
    parameters, the initial ones and the plan."""
    vkspmd.manual_seed(5)
    model = nn.MlpRegressor(16, 256, 4)
    parameters = list(model.parameters())
    initial = [p.numpy() for p in parameters]
    adamw = vkspmd.optim.AdamW(parameters, lr=1e-2)
    state = parameters + [t for _, t in adamw.state_tensors()]
    vkspmd.mark_step()
    losses, plan = [], None
    for step in range(3):
        holder = {}

        def trace():
            holder["loss"] = model.loss(vkspmd.tensor(X[step]), vkspmd.tensor(Y[step]))
            adamw.step(vkspmd.grad(holder["loss"], parameters))

        if mesh is not None and step == 0:
            plan = (vkspmd.auto_shard(trace, mesh, **options) if find_state else
                    vkspmd.auto_shard(trace, mesh, state, **options))
        else:
            trace()
            vkspmd.mark_step()
        losses.append(holder["loss"].item())
    return losses, [p.numpy() for p in parameters], initial, plan, parameters


def test_auto_sharded_training_under_a_memory_limit_equals_one_device():
    expected_losses, expected_parameters, initial, _, _ = train()
    # The first loss by numpy from the initial weights (fc1, exact GELU, fc2; torch's Linear
    # layout).
    w1, b1, w2, b2 = initial
    pre = (X[0] @ w1.T + b1).astype(np.float64)
    hidden = 0.5 * pre * (1 + np.vectorize(math.erf)(pre / math.sqrt(2)))
    np.testing.assert_allclose(expected_losses[0], np.mean((hidden @ w2.T + b2 - Y[0]) ** 2),
                               rtol=1e-5)
    state_bytes = 3 * sum(p.nbytes for p in initial)  # parameters and AdamW's two moments
    mesh = vkspmd.Mesh(np.arange(4), (4,), ("x",))
    # Unlimited, the tiny step is cheapest replicated (as data parallelism keeps the state); half
    # the state below that peak does not fit it.
    _, _, _, replicated, _ = train(mesh)
    assert all(s == "{replicated}" for s in replicated.shardings)
    limit = replicated.peak_memory_bytes - state_bytes // 2
    losses, parameters, _, plan, tensors = train(mesh, memory_limit=limit, time_limit=20.0)
    np.testing.assert_allclose(losses, expected_losses, rtol=1e-4)
    # atol: AdamW turns a near-zero gradient's rounding (which sharding changes) into up to an
    # lr-sized (1e-2) step; 2e-4 is 2% of one.
    for actual, expected in zip(parameters, expected_parameters):
        np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=2e-4)
    assert isinstance(plan, vkspmd.AutoShardPlan)
    assert len(plan.shardings) == 12 and len(plan.axes) == 12
    assert plan.shardings[0] != "{replicated}", plan  # fc1.weight, the largest
    assert plan.peak_memory_bytes <= limit
    assert plan.modelled_seconds == pytest.approx(
        plan.compute_seconds + plan.communication_seconds + plan.resharding_seconds)
    assert plan.instructions > 0 and plan.variables >= 0 and plan.solve_seconds >= 0
    assert isinstance(plan.optimal, bool) and "modelled step" in plan.report
    assert plan.stopped_at_time_limit is False  # the tiny step solves well within 20 s
    assert plan.cost_model == "defaults"
    # Each parameter stays where the plan put it.
    assert [vkspmd.sharding_spec(t) for t in tensors] == plan.shardings[:4]
    assert "AutoShardPlan(" in repr(plan)


def test_auto_shard_without_state_finds_it_and_plans_as_the_explicit_list():
    expected_losses, expected_parameters, initial, _, _ = train()
    mesh = vkspmd.Mesh(np.arange(4), (4,), ("x",))
    _, _, _, replicated, _ = train(mesh)
    # The memory limit of the test above, so that the plan shards the parameters.
    limit = replicated.peak_memory_bytes - 3 * sum(p.nbytes for p in initial) // 2
    _, _, _, given, given_tensors = train(mesh, memory_limit=limit, time_limit=20.0)
    losses, parameters, _, plan, tensors = train(mesh, find_state=True, memory_limit=limit,
                                                 time_limit=20.0)
    # The 4 parameters and AdamW's 2 moments of each; not the batches the step makes.
    assert len(plan.state) == 12 and len(plan.shardings) == 12
    assert [vkspmd.sharding_spec(t) for t in plan.state] == plan.shardings
    assert plan.report == given.report
    assert [vkspmd.sharding_spec(t) for t in tensors] == [
        vkspmd.sharding_spec(t) for t in given_tensors]
    assert vkspmd.sharding_spec(tensors[0]) != "{replicated}"
    assert sorted(plan.shardings) == sorted(given.shardings)
    np.testing.assert_allclose(losses, expected_losses, rtol=1e-4)
    for actual, expected in zip(parameters, expected_parameters):
        np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=2e-4)


def test_an_infeasible_memory_limit_is_an_error_and_leaves_the_parameters():
    vkspmd.manual_seed(5)
    model = nn.MlpRegressor(16, 64, 4)
    parameters = list(model.parameters())
    sgd = vkspmd.optim.SGD(parameters, lr=0.1)
    vkspmd.mark_step()
    before = parameters[0].numpy()

    def trace():
        loss = model.loss(vkspmd.tensor(X[0]), vkspmd.tensor(Y[0]))
        sgd.step(vkspmd.grad(loss, parameters))

    mesh = vkspmd.Mesh(np.arange(2), (2,), ("x",))
    with pytest.raises(vkspmd.Error, match="memory limit"):
        vkspmd.auto_shard(trace, mesh, parameters, memory_limit=64)
    np.testing.assert_array_equal(parameters[0].numpy(), before)
    with pytest.raises(ValueError, match="memory_limit_bytes"):
        vkspmd.auto_shard(trace, mesh, parameters, memory_limit=0)
