#!/usr/bin/python3
"""`vkspmd train --precision bf16` follows `--precision f32` (issue #18): the same run in both
precisions, the mean loss of the last 10 steps within --tolerance (relative) of f32's.

  precision_curve_test.py --vkspmd PATH --work DIR [--tolerance 0.02] [--precision bf16]
                          -- TRAIN ARGS...

Every command's output is echoed (so the ctest wrapper can refuse validation messages); prints
PASS or exits with FAIL and the figures.
"""
import argparse
import csv
import os
import subprocess
import sys


def train(vkspmd, work, precision, args):
    out = os.path.join(work, precision)
    command = [vkspmd, "train", "--precision", precision, "--out", out] + args
    result = subprocess.run(command, capture_output=True, text=True)
    print(f"$ {' '.join(command)}  -> exit {result.returncode}\n{result.stdout}{result.stderr}",
          flush=True)
    if result.returncode != 0:
        sys.exit(f"FAIL: vkspmd train --precision {precision} exited {result.returncode}")
    if f"precision: {precision}" not in result.stdout:
        sys.exit(f"FAIL: the summary does not name the precision {precision}")
    with open(os.path.join(out, "loss.csv")) as file:
        return [float(row["loss"]) for row in csv.DictReader(file)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--vkspmd", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--tolerance", type=float, default=0.02)
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("train_args", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    args = [a for a in options.train_args if a != "--"]
    os.makedirs(options.work, exist_ok=True)
    f32 = train(options.vkspmd, options.work, "f32", args)
    low = train(options.vkspmd, options.work, options.precision, args)
    if len(f32) != len(low) or len(f32) < 10:
        sys.exit(f"FAIL: {len(f32)} f32 losses and {len(low)} {options.precision} losses")
    tail_f32, tail_low = sum(f32[-10:]) / 10, sum(low[-10:]) / 10
    difference = abs(tail_low - tail_f32) / tail_f32
    worst = max(abs(a - b) / b for a, b in zip(low, f32))
    print(f"{len(f32)} steps: f32 {f32[0]:.4f} -> {f32[-1]:.4f} (last 10: {tail_f32:.4f}), "
          f"{options.precision} {low[0]:.4f} -> {low[-1]:.4f} (last 10: {tail_low:.4f}); "
          f"last-10 means {difference:.4f} apart (tolerance {options.tolerance}), "
          f"largest per-step difference {worst:.4f}")
    if not difference <= options.tolerance:
        sys.exit("FAIL: the loss curves differ by more than the tolerance")
    if not tail_low < 0.8 * low[0]:
        sys.exit(f"FAIL: {options.precision} training did not learn")
    print("PASS")


if __name__ == "__main__":
    main()
