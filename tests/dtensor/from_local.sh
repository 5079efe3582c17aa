#!/bin/sh
# from_local in a job of 2 processes x 2 lavapipe devices: each process passes only its own
# devices' locals; every DTensor's full value and each process's to_local() against NumPy, and a
# local per mesh device is an error naming the counts.
# Usage: from_local.sh VKSPMD FROM_LOCAL_RUN WORKDIR
set -eu
vkspmd=$1
run=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
"$vkspmd" launch -n 2 --devices-per-process 2 -- "$run" > "$work/launch.txt"
for rank in 0 1; do
  sed -n "s/^\[rank $rank\] //p" "$work/launch.txt" > "$work/rank$rank.txt"
done
/usr/bin/python3 - "$work" <<'PY'
import sys
import numpy as np

work = sys.argv[1]

def local(base):
    return np.array([[base + 10 * i + j for j in range(3)] for i in range(2)], np.float32)

# Mesh [2, 2] over devices 0..3 (dp over the processes, tp inside): device d at (d // 2, d % 2).
L = [local(100 * d) for d in range(4)]
R = [local(100 * (d % 2)) for d in range(4)]
full = {
    "shard0_shard1": np.block([[L[0], L[1]], [L[2], L[3]]]),
    "partial_shard0": np.concatenate([L[0], L[1]], 0) + np.concatenate([L[2], L[3]], 0),
    "replicate_shard1": np.concatenate([R[0], R[1]], 1),
    "shard1_partialmax": np.concatenate([np.maximum(L[0], L[1]), np.maximum(L[2], L[3])], 1),
}
failures = 0
for rank in (0, 1):
    lines = dict(l.split(":", 1) for l in open(f"{work}/rank{rank}.txt").read().splitlines()
                 if ":" in l and not l.startswith("mesh"))
    expected = {}
    for name, value in full.items():
        expected[f"{name} full"] = value
        for d in (2 * rank, 2 * rank + 1):
            expected[f"{name} local {d}"] = R[d] if name == "replicate_shard1" else L[d]
    for key, value in expected.items():
        got = np.array([float(x) for x in lines.get(key, "").split()], np.float32)
        if got.shape != value.ravel().shape or not np.array_equal(got, value.ravel()):
            print(f"rank {rank} {key}: got {got}, expected {value.ravel()}")
            failures += 1
    message = lines.get("count mismatch", "")
    if "4 local tensor(s)" not in message or "which drives 2 of its devices" not in message:
        print(f"rank {rank}: count mismatch message: {message!r}")
        failures += 1
if failures:
    sys.exit(1)
print(f"from_local: both processes match NumPy ({len(expected)} values each) and refuse 4 locals")
PY
