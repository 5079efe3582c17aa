#!/usr/bin/python3
"""Matmul peer of issue #18 on a real GPU: vkspmd's dot kernels (codegen_benchmarks'
BM_MatmulDevice for f32, BM_MatmulHalfDevice for f16 and bf16) against PyTorch's torch.matmul
(cuBLAS on CUDA, OpenBLAS/MKL on the CPU) for the same square sizes, measured in one run.

Usage: python3 benchmarks/matmul_vs_torch.py --codegen-benchmarks build/ci/benchmarks/codegen_benchmarks
           [--torch-device cuda|cpu] [--sizes 256,512,1024,2048] [--dtypes f32,f16,bf16]
           [--json out.json]

f32: cuBLAS is measured in strict f32 (TF32 off), the arithmetic vkspmd's kernel does; the TF32
figure is printed beside it for reference. f16/bf16: both sides multiply 16-bit operands into a
16-bit result (vkspmd accumulates in f32; cuBLAS's default f16 matmul does too). vkspmd's f16 rows
say whether its dot ran on cooperative matrices (tensor cores, VK_NV_cooperative_matrix), and at
1024 and 2048 also give the same GPU's shared-memory kernel (VKSPMD_DOT_KERNEL=shared_memory) as
the baseline. Each PyTorch figure is the median of 20 timed products after 3 warm-ups,
synchronised around each. vkspmd's figure is its benchmark's GFLOP/s counter (GPU timestamps of
the dispatch).
"""
import argparse
import json
import statistics
import subprocess
import sys
import time

import torch


def run_vkspmd(args, pattern):
    """{(variant, n): (GFLOP/s, label)} of codegen_benchmarks' benchmarks matching `pattern`;
    variant is "f32" for BM_MatmulDevice, else BM_MatmulHalfDevice's (f16, f16_shared_memory,
    bf16)."""
    command = [args.codegen_benchmarks, f"--benchmark_filter={pattern}",
               "--benchmark_format=json"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0 or not result.stdout.strip():
        sys.exit(f"codegen_benchmarks failed ({result.returncode}):\n{result.stderr}")
    report = json.loads(result.stdout)
    figures = {}
    for benchmark in report["benchmarks"]:
        if benchmark.get("error_occurred"):
            print(f"{benchmark['name']}: {benchmark.get('error_message')}", file=sys.stderr)
            continue
        parts = benchmark["name"].split("/")
        variant, n = ("f32", int(parts[1])) if parts[0] == "BM_MatmulDevice" else (
            parts[1], int(parts[2]))
        gflops = benchmark["GFLOPs"] if "GFLOPs" in benchmark else benchmark["GFLOPS"]
        figures[(variant, n)] = (gflops, benchmark.get("label", ""))
    return figures


def torch_gflops(n, device, dtype, tf32=False):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
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


TORCH_TYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--codegen-benchmarks", required=True)
    parser.add_argument("--torch-device", default="cuda", choices=["cpu", "cuda"])
    parser.add_argument("--sizes", default="256,512,1024,2048")
    parser.add_argument("--dtypes", default="f32,f16,bf16")
    parser.add_argument("--json")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    dtypes = args.dtypes.split(",")
    device = torch.device(args.torch_device)
    sizes_pattern = "|".join(str(n) for n in sizes)
    patterns = []
    if "f32" in dtypes:
        patterns.append(f"^BM_MatmulDevice/({sizes_pattern})/")
    half = [t for t in dtypes if t in ("f16", "bf16")]
    if half:
        variants = "|".join(half + (["f16_shared_memory"] if "f16" in half else []))
        patterns.append(f"^BM_MatmulHalfDevice/({variants})/({sizes_pattern})/")
    vkspmd = run_vkspmd(args, "|".join(patterns))
    rows = []
    for dtype in dtypes:
        for n in sizes:
            try:
                torch_figure = torch_gflops(n, device, TORCH_TYPES[dtype])
            except RuntimeError as error:  # Debian's CPU PyTorch has no f16 matmul.
                print(f"PyTorch {args.torch_device} {dtype}: {error}", file=sys.stderr)
                torch_figure = None
            tf32 = (torch_gflops(n, device, torch.float32, tf32=True)
                    if device.type == "cuda" and dtype == "f32" else None)
            ours, label = vkspmd.get((dtype, n), (None, ""))
            baseline = vkspmd.get((dtype + "_shared_memory", n), (None, ""))[0]
            rows.append({"dtype": dtype, "n": n, "vkspmd_gflops": ours, "vkspmd_kernel": label,
                         "vkspmd_shared_memory_gflops": baseline,
                         f"torch_{dtype}_gflops": torch_figure, "torch_tf32_gflops": tf32,
                         "ratio": ours / torch_figure if ours and torch_figure else None})
            text = f"{dtype} {n}^3: vkspmd {ours or float('nan'):.0f} GFLOP/s"
            if label:
                text += f" ({label})"
            if baseline:
                text += f", shared-memory kernel {baseline:.0f}"
            text += f", PyTorch {args.torch_device} {dtype} {torch_figure or float('nan'):.0f}"
            if tf32 is not None:
                text += f", TF32 {tf32:.0f}"
            ratio = rows[-1]["ratio"]
            print(text + (f"; ratio {ratio:.3f}" if ratio is not None else "; ratio n/a"))
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"torch_device": args.torch_device, "rows": rows}, file, indent=1)


if __name__ == "__main__":
    main()
