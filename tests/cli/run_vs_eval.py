#!/usr/bin/python3
"""`vkspmd run --output-dir` writes what `vkspmd eval --output-dir` writes.

Usage: run_vs_eval.py VKSPMD WORKDIR CASE [RUN_ARGS...]

Writes the case's inputs (NumPy, fixed seed, odd shapes), runs `eval` and `run` with them, and
checks that both wrote the same file names, bitwise-equal arrays for integer outputs and arrays
within rtol 1e-5 for float ones, and that eval's arrays equal the NumPy oracle (exactly for
integers). Prints both commands' output (the CLI test checks it) and "ok: N files" at the end;
exits 1 on any difference.
"""
import os
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")


def ints(rng, *shape):
    return rng.integers(-20, 21, size=shape, dtype=np.int32)


def floats(rng, *shape):
    return rng.uniform(-1, 1, size=shape).astype(np.float32)


def per_device_int(x):
    # Device d scales x by d + 1; the all-reduce sums the pairs {0,1} and {2,3}.
    return {f"device{d}.output": x * (3 if d < 2 else 7) for d in range(4)}


def scan(carry, xs):
    # lax.scan of c = 0.5 c + x_t, collecting every c (tests/testdata/control_flow/scan.hlo).
    ys = np.zeros_like(xs)
    for t in range(xs.shape[0]):
        carry = carry * np.float32(0.5) + xs[t]
        ys[t] = carry
    return {"output.0": carry, "output.1": ys}


def switch(index, x):
    # Branches -x, x * x, x + 100; an index outside 0..2 runs the last, as XLA.
    branches = [lambda: -x, lambda: x * x, lambda: x + np.int32(100)]
    return {"output": branches[index if 0 <= index < 3 else 2]()}


def grow(x, limit):
    # The grow loop: scale by 1.5 and add 0.25 until the largest element reaches the limit.
    count = 0
    while x.max() < limit:
        x = x * np.float32(1.5) + np.float32(0.25)
        count += 1
    return np.int32(count), x


def nested_state(x, limit, y):
    # tests/testdata/control_flow/nested_state.hlo: grow with the state (count, (x, limit)).
    magnitude, far = np.abs(x), limit * np.float32(100)
    count, final = grow(magnitude, far)
    total = final + y
    return {"output.0": count, "output.1.0": total, "output.1.1": total - magnitude,
            "output.2.0": magnitude, "output.2.1": far}


def loop_in_branch(x, limit, k):
    # tests/testdata/control_flow/loop_in_branch.hlo: switch(k) over grow / halve / triple, then
    # grow again past 4 times the limit if the count is positive, else double.
    magnitude, far = np.abs(x), limit * np.float32(100)
    branches = [lambda: grow(magnitude, far),
                lambda: (np.int32(-1), magnitude * np.float32(0.5)),
                lambda: (np.int32(3), magnitude * np.float32(3))]
    count, v = branches[k if 0 <= k < 3 else 2]()
    count2, w = grow(v, far * np.float32(4)) if count > 0 else (np.int32(0), v + v)
    return {"output.0": count, "output.1": count2, "output.2": w + magnitude}


def long_loop(x):
    # tests/testdata/control_flow/long_loop.hlo: 12,000 steps of v = 0.9999 v + 0.0001 in float32,
    # checked against the closed form h^n x + c (1 - h^n) / (1 - h) (h, c rounded to float32).
    h, c, n = np.float32(0.9999), np.float32(0.0001), 12000
    v = x.copy()
    for _ in range(n):
        v = v * h + c
    hn = np.float64(h) ** n
    closed = hn * x + np.float64(c) * (1 - hn) / (1 - np.float64(h))
    if not np.allclose(v, closed, rtol=1e-3, atol=1e-4):
        sys.exit(f"long_loop: the float32 loop {v.tolist()} is not the closed form {closed.tolist()}")
    return {"output": v}


def loop_in_branch_case(k):
    return (CONTROL_FLOW + "loop_in_branch.hlo",
            lambda rng: [floats(rng, 6), np.array(0.05, np.float32), np.array(k, np.int32)],
            loop_in_branch)


def shard_map_auto(a, w):
    # jax_shard_map_auto.hlo: manual over y (2 groups), each group's body on its column block of
    # a and row block of w: tanh(0.5 a_j w_j), transposed, rows summed pairwise 4 apart.
    out = np.zeros((6, 8), np.float32)
    for j in range(2):
        h = np.tanh(np.float32(0.5) * (a[:, 4 * j:4 * j + 4] @ w[4 * j:4 * j + 4, :]))
        out[:, 4 * j:4 * j + 4] = h.T.reshape(6, 2, 4).sum(axis=1)
    return {"output": out}


CONTROL_FLOW = "../../testdata/control_flow/"

# name: (module, inputs from a generator, the oracle's outputs by file stem)
CASES = {
    "scan": (CONTROL_FLOW + "scan.hlo", lambda rng: [floats(rng, 8), floats(rng, 5, 8)], scan),
    "cond_true": (CONTROL_FLOW + "cond.hlo",
                  lambda rng: [np.array(True), floats(rng, 7), ints(rng, 7)],
                  lambda p, x, n: {"output": x * n.astype(np.float32)}),
    "cond_false": (CONTROL_FLOW + "cond.hlo",
                   lambda rng: [np.array(False), floats(rng, 7), ints(rng, 7)],
                   lambda p, x, n: {"output": x - n.astype(np.float32)}),
    "switch_1": (CONTROL_FLOW + "switch.hlo", lambda rng: [np.array(1, np.int32), ints(rng, 5)],
                 switch),
    "switch_out_of_range": (CONTROL_FLOW + "switch.hlo",
                            lambda rng: [np.array(-4, np.int32), ints(rng, 5)], switch),
    "nested_state": (CONTROL_FLOW + "nested_state.hlo",
                     lambda rng: [floats(rng, 6), np.array(0.05, np.float32), floats(rng, 6)],
                     nested_state),
    "long_loop": (CONTROL_FLOW + "long_loop.hlo", lambda rng: [floats(rng, 6)], long_loop),
    "loop_in_branch_0": loop_in_branch_case(0),
    "loop_in_branch_1": loop_in_branch_case(1),
    "loop_in_branch_2": loop_in_branch_case(2),
    "loop_in_branch_out_of_range": loop_in_branch_case(5),
    "jax_int_rows": ("jax_int_rows.hlo", lambda rng: [ints(rng, 8, 5), ints(rng, 8, 5)],
                     lambda x, y: {"output": (x * y + x).sum(axis=1, dtype=np.int32)}),
    "per_device_int": ("per_device_int.hlo", lambda rng: [ints(rng, 7, 3)], per_device_int),
    "jax_mlp_1d": ("jax_mlp_1d.hlo", lambda rng: [floats(rng, 8, 7), floats(rng, 7, 5)],
                   lambda x, w: {"output": np.square(np.tanh(x @ w))}),
    "jax_dot_2d": ("jax_dot_2d.hlo", lambda rng: [floats(rng, 6, 10), floats(rng, 10, 7)],
                   lambda a, b: {"output": 2 * (a @ b)}),
    "jax_int_rows_8": ("jax_int_rows_8.hlo", lambda rng: [ints(rng, 13, 3)],
                       lambda x: {"output": x * x - x}),
    "jax_permuted_2": ("jax_permuted_2.hlo", lambda rng: [floats(rng, 7, 5)],
                       lambda x: {"output": -np.exp(x)}),
    "jax_transposed_iota_8": ("jax_transposed_iota_8.hlo",
                              lambda rng: [floats(rng, 6, 12), floats(rng, 6, 12)],
                              lambda a, b: {"output": a * b}),
    "jax_one_device": ("jax_one_device.hlo", lambda rng: [floats(rng, 5, 3)],
                       lambda x: {"output": np.sin(x)}),
    "jax_shard_map_auto": ("jax_shard_map_auto.hlo",
                           lambda rng: [floats(rng, 8, 8), floats(rng, 8, 6)], shard_map_auto),
    "jax_shard_map_auto_psum": ("jax_shard_map_auto_psum.hlo",
                                lambda rng: [floats(rng, 8, 8), floats(rng, 8, 6)],
                                lambda a, w: {"output": np.tanh(a @ w)}),
    "mlp_forward": ("../../testdata/mlp_forward.hlo", None, None),
}


def run(command):
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(f"$ {' '.join(command)}\n{result.stdout}", end="", flush=True)
    if result.returncode != 0:
        sys.exit(f"exit code {result.returncode}")


def main():
    vkspmd, workdir, case = sys.argv[1:4]
    run_args = sys.argv[4:]
    module, make_inputs, oracle = CASES[case]
    module = os.path.normpath(os.path.join(HERE, module))
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    rng = np.random.default_rng(19)
    if make_inputs is None:  # the testdata program's own inputs (generate.py)
        stem = module[: -len(".hlo")]
        inputs = [np.load(f"{stem}.arg{k}.npy") for k in range(4)]
        expected = {"output": np.load(f"{stem}.out.npy")}
    else:
        inputs = make_inputs(rng)
        expected = oracle(*inputs)
    flags = []
    for k, value in enumerate(inputs):
        path = os.path.join(workdir, f"arg{k}.npy")
        np.save(path, value)
        flags += ["--input", f"{k}={path}"]
    eval_dir, run_dir = os.path.join(workdir, "eval"), os.path.join(workdir, "run")
    run([vkspmd, "eval", module, *flags, "--output-dir", eval_dir])
    run([vkspmd, "run", module, *flags, "--output-dir", run_dir, *run_args])
    names = sorted(os.listdir(eval_dir))
    if names != sorted(os.listdir(run_dir)):
        sys.exit(f"eval wrote {names}, run wrote {sorted(os.listdir(run_dir))}")
    if names != sorted(f"{stem}.npy" for stem in expected):
        sys.exit(f"eval wrote {names}; expected {sorted(expected)}")
    for name in names:
        evaluated = np.load(os.path.join(eval_dir, name))
        ran = np.load(os.path.join(run_dir, name))
        want = expected[name[: -len(".npy")]]
        if evaluated.dtype != ran.dtype or evaluated.shape != ran.shape:
            sys.exit(f"{name}: eval {evaluated.dtype}{evaluated.shape}, run {ran.dtype}{ran.shape}")
        if np.issubdtype(evaluated.dtype, np.integer):
            with open(os.path.join(eval_dir, name), "rb") as a, \
                 open(os.path.join(run_dir, name), "rb") as b:
                if a.read() != b.read():
                    sys.exit(f"{name}: run's file differs from eval's (integers must be bitwise)")
            if not np.array_equal(evaluated, want):
                sys.exit(f"{name}: eval {evaluated.tolist()}, NumPy {want.tolist()}")
        else:
            if not np.allclose(ran, evaluated, rtol=1e-5, atol=1e-6):
                sys.exit(f"{name}: run differs from eval by {np.max(np.abs(ran - evaluated))}")
            if not np.allclose(evaluated, want, rtol=1e-5, atol=1e-6):
                sys.exit(f"{name}: eval differs from NumPy by {np.max(np.abs(evaluated - want))}")
    print(f"ok: {len(names)} files")


if __name__ == "__main__":
    main()
