#!/usr/bin/python3
"""`vkspmd train` with checkpoints, as a user runs it (numpy only, Debian's /usr/bin/python3).

Cases:
  resume STRATEGY MESH  20 uninterrupted steps vs 10 steps, then a new process that resumes and
                        runs 10 more: the per-step losses (loss.csv) and the final parameters
                        (exported as safetensors) must be bitwise equal.
  preemption            SIGTERM during training: exit 75, a committed step at the step reached,
                        and --resume continues to the same losses as an uninterrupted run.
  cli                   ckpt ls / verify / export, and verify failing on a flipped bit.
Every command's output is echoed (so the ctest wrapper can refuse validation messages) and checked
here too.
"""
import argparse
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time

import numpy as np

# A small model so that each run takes seconds on lavapipe.
MODEL = ["--d-model", "32", "--heads", "2", "--layers", "1", "--batch", "4", "--seq", "16",
         "--log-every", "1"]
FORBIDDEN = ["[vulkan validation", "terminate called", "Segmentation fault"]


def run(vkspmd, args, expect=0):
    result = subprocess.run([vkspmd] + args, capture_output=True, text=True)
    output = result.stdout + result.stderr
    print(f"$ vkspmd {' '.join(args)}  -> exit {result.returncode}\n{output}", flush=True)
    for bad in FORBIDDEN:
        if bad in output:
            sys.exit(f"FAIL: forbidden output {bad!r}")
    if result.returncode != expect:
        sys.exit(f"FAIL: expected exit {expect}, got {result.returncode}")
    return output


def read_safetensors(path):
    with open(path, "rb") as file:
        data = file.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    header.pop("__metadata__", None)
    types = {"F32": np.float32, "I32": np.int32, "U32": np.uint32, "BOOL": np.bool_}
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        raw = data[8 + length + begin:8 + length + end]
        tensors[name] = np.frombuffer(raw, dtype=types[entry["dtype"]]).reshape(entry["shape"])
    return tensors


def expect_same_parameters(vkspmd, work, step_a, step_b):
    files = []
    for index, step in enumerate([step_a, step_b]):
        out = os.path.join(work, f"final{index}.safetensors")
        run(vkspmd, ["ckpt", "export", step, "--safetensors", out])
        files.append(read_safetensors(out))
    a, b = files
    if sorted(a) != sorted(b):
        sys.exit(f"FAIL: different tensor names {sorted(a)} vs {sorted(b)}")
    for name in a:
        if a[name].tobytes() != b[name].tobytes():
            sys.exit(f"FAIL: tensor {name} differs after resuming")
    if not any("exp_avg" in name for name in a):
        sys.exit("FAIL: the optimizer state is not in the checkpoint")
    print(f"{len(a)} tensors bitwise equal")


def expect_same_losses(path_a, path_b, steps):
    with open(path_a) as a, open(path_b) as b:
        rows_a, rows_b = a.read().splitlines(), b.read().splitlines()
    if len(rows_a) != steps + 1:
        sys.exit(f"FAIL: {path_a} has {len(rows_a) - 1} steps, expected {steps}")
    if rows_a != rows_b:
        for x, y in zip(rows_a, rows_b):
            if x != y:
                sys.exit(f"FAIL: losses differ: {x} vs {y}")
        sys.exit(f"FAIL: {path_a} and {path_b} differ in length")


def case_resume(vkspmd, work, strategy, mesh):
    base = MODEL + ["--strategy", strategy, "--mesh", mesh]
    run(vkspmd, ["train", "--steps", "20", "--checkpoint-dir", f"{work}/full",
                 "--out", f"{work}/full_out"] + base)
    run(vkspmd, ["train", "--steps", "10", "--checkpoint-dir", f"{work}/split",
                 "--out", f"{work}/split_out"] + base)
    output = run(vkspmd, ["train", "--steps", "20", "--checkpoint-dir", f"{work}/split",
                          "--resume", "--out", f"{work}/split_out"] + base)
    if "resuming after step 10" not in output:
        sys.exit("FAIL: the second run did not resume from step 10")
    expect_same_losses(f"{work}/full_out/loss.csv", f"{work}/split_out/loss.csv", 20)
    expect_same_parameters(vkspmd, work, f"{work}/full/step_00000020",
                           f"{work}/split/step_00000020")


def loss_rows(path):
    try:
        with open(path) as file:
            return len(file.read().splitlines()) - 1
    except FileNotFoundError:
        return 0


def case_preemption(vkspmd, work):
    base = MODEL + ["--strategy", "dp+tp", "--mesh", "2x2"]
    args = [vkspmd, "train", "--steps", "100000", "--checkpoint-dir", f"{work}/ckpt",
            "--out", f"{work}/out", "--save-every", "4", "--keep", "2"] + base
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 120
    while loss_rows(f"{work}/out/loss.csv") < 6 and time.time() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=120)
    print(f"$ vkspmd train ... (SIGTERM) -> exit {process.returncode}\n{output}", flush=True)
    if process.returncode != 75:
        sys.exit(f"FAIL: expected exit 75 after SIGTERM, got {process.returncode}")
    steps = loss_rows(f"{work}/out/loss.csv")
    if f"saved step {steps} " not in output:
        sys.exit(f"FAIL: the message does not name step {steps} (the last logged)")
    listing = run(vkspmd, ["ckpt", "ls", f"{work}/ckpt"])
    if f"step {steps:>8}" not in listing:
        sys.exit(f"FAIL: step {steps} is not committed")
    run(vkspmd, ["ckpt", "verify", f"{work}/ckpt"])
    # Resume to a few steps past the preemption and compare with an uninterrupted run.
    total = str(steps + 3)
    run(vkspmd, ["train", "--steps", total, "--checkpoint-dir", f"{work}/ckpt", "--resume",
                 "--out", f"{work}/out"] + base)
    run(vkspmd, ["train", "--steps", total, "--checkpoint-dir", f"{work}/reference",
                 "--out", f"{work}/reference_out"] + base)
    expect_same_losses(f"{work}/reference_out/loss.csv", f"{work}/out/loss.csv", steps + 3)
    expect_same_parameters(vkspmd, work, f"{work}/reference/step_{steps + 3:08d}",
                           f"{work}/ckpt/step_{steps + 3:08d}")


def case_cli(vkspmd, work):
    base = MODEL + ["--strategy", "fsdp", "--mesh", "4"]
    run(vkspmd, ["train", "--steps", "6", "--checkpoint-dir", f"{work}/ckpt", "--save-every", "2",
                 "--keep", "2", "--out", f"{work}/out"] + base)
    listing = run(vkspmd, ["ckpt", "ls", f"{work}/ckpt", "--tensors"])
    for expected in ["step        4", "step        6", "model.token_embedding.weight", "fsdp"]:
        if expected not in listing:
            sys.exit(f"FAIL: ckpt ls does not show {expected!r}")
    if "step        2" in listing:
        sys.exit("FAIL: --keep 2 left step 2")
    run(vkspmd, ["ckpt", "verify", f"{work}/ckpt"])
    # A checkpoint directory that cannot be created is reported before any training.
    output = run(vkspmd, ["train", "--steps", "6", "--checkpoint-dir", "/proc/vkspmd-ckpt",
                          "--out", f"{work}/out3"] + base, expect=1)
    if "cannot be created or written" not in output or "step" in output.split("cannot")[0][-40:]:
        sys.exit("FAIL: no early error for an unwritable checkpoint directory")
    # A fresh run into a directory that has steps is refused before any work.
    output = run(vkspmd, ["train", "--steps", "6", "--checkpoint-dir", f"{work}/ckpt",
                          "--out", f"{work}/out2"] + base, expect=1)
    if "already holds step 6" not in output:
        sys.exit("FAIL: no clear error for a directory that already has steps")
    # One flipped bit: verify names the file and fails; the other step still verifies.
    step = f"{work}/ckpt/step_00000006"
    shard = sorted(name for name in os.listdir(step) if name.endswith(".bin"))[0]
    with open(os.path.join(step, shard), "r+b") as file:
        file.seek(3)
        byte = file.read(1)
        file.seek(3)
        file.write(bytes([byte[0] ^ 0x01]))
    output = run(vkspmd, ["ckpt", "verify", f"{work}/ckpt"], expect=1)
    if shard not in output or "is corrupt" not in output:
        sys.exit("FAIL: verify does not name the damaged file")
    run(vkspmd, ["ckpt", "verify", f"{work}/ckpt", "--step", "4"])
    output = run(vkspmd, ["ckpt", "export", step, "--safetensors", f"{work}/x.safetensors"],
                 expect=1)
    if "is corrupt" not in output or os.path.exists(f"{work}/x.safetensors"):
        sys.exit("FAIL: export of a damaged step did not fail cleanly")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--vkspmd", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("case", nargs="+")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    if args.case[0] == "resume":
        case_resume(args.vkspmd, args.work, args.case[1], args.case[2])
    elif args.case[0] == "preemption":
        case_preemption(args.vkspmd, args.work)
    elif args.case[0] == "cli":
        case_cli(args.vkspmd, args.work)
    else:
        sys.exit(f"unknown case {args.case}")
    print("PASS")


if __name__ == "__main__":
    main()
