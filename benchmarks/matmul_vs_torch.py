#!/usr/bin/python3
"""Matmul peer of issue #18 on a real GPU: vkspmd's f32 dot kernel (codegen_benchmarks'
BM_MatmulDevice) against PyTorch's torch.matmul (cuBLAS on CUDA, OpenBLAS/MKL on the CPU) for
the same square sizes, measured in one run.

Usage: python3 benchmarks/matmul_vs_torch.py --codegen-benchmarks build/ci/benchmarks/codegen_benchmarks
           [--torch-device cuda|cpu] [--sizes 256,512,1024,2048] [--json out.json]

cuBLAS is measured in strict f32 (TF32 off), the arithmetic vkspmd's kernel does; the TF32 figure
is printed beside it for reference. Each PyTorch figure is the median of 20 timed products after 3
warm-ups, synchronised around each. vkspmd's figure is its benchmark's GFLOP/s counter (GPU
timestamps of the dispatch).
"""
import argparse
import json
import statistics
import subprocess
import sys
import time

import torch


def run_vkspmd(args, sizes):
    pattern = "|".join(str(n) for n in sizes)
    command = [args.codegen_benchmarks, f"--benchmark_filter=^BM_MatmulDevice/({pattern})/",
               "--benchmark_format=json"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0 or not result.stdout.strip():
        sys.exit(f"codegen_benchmarks failed ({result.returncode}):\n{result.stderr}")
    report = json.loads(result.stdout)
    figures = {}
    for benchmark in report["benchmarks"]:
        n = int(benchmark["name"].split("/")[1])
        figures[n] = benchmark["GFLOPs"] if "GFLOPs" in benchmark else benchmark["GFLOPS"]
    return figures


def torch_gflops(n, device, tf32):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    times = []
    for repetition in range(23):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        torch.matmul(a, b)
        if device.type == "cuda":
            torch.cuda.synchronize()
        if repetition >= 3:
            times.append(time.perf_counter() - start)
    return 2.0 * n * n * n / statistics.median(times) / 1e9


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--codegen-benchmarks", required=True)
    parser.add_argument("--torch-device", default="cuda", choices=["cpu", "cuda"])
    parser.add_argument("--sizes", default="256,512,1024,2048")
    parser.add_argument("--json")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    device = torch.device(args.torch_device)
    vkspmd = run_vkspmd(args, sizes)
    rows = []
    for n in sizes:
        strict = torch_gflops(n, device, tf32=False)
        tf32 = torch_gflops(n, device, tf32=True) if device.type == "cuda" else None
        rows.append({"n": n, "vkspmd_gflops": vkspmd.get(n), "torch_f32_gflops": strict,
                     "torch_tf32_gflops": tf32,
                     "ratio": vkspmd[n] / strict if n in vkspmd else None})
        tf32_text = f", TF32 {tf32:.0f}" if tf32 is not None else ""
        print(f"{n}^3: vkspmd {vkspmd.get(n, float('nan')):.0f} GFLOP/s, PyTorch "
              f"{args.torch_device} f32 {strict:.0f}{tf32_text}; ratio {rows[-1]['ratio']:.3f}")
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"torch_device": args.torch_device, "rows": rows}, file, indent=1)


if __name__ == "__main__":
    main()
