#!/usr/bin/python3
"""The training-step peer of issue #18: `vkspmd train`'s default transformer against the same
model in Debian's PyTorch on the CPU (eager, one thread), measured in one run.

Usage: /usr/bin/python3 benchmarks/train_vs_torch.py --vkspmd build/ci/tools/vkspmd
           [--steps 40] [--mesh 1 --strategy dp] [--torch-device cpu|cuda] [--json out.json]

The PyTorch twin is tests/nn/torch_models.py's TransformerLM with vkspmd train's defaults
(vocabulary of the default corpus, d_model 64, 4 heads, 2 layers, batch 8 x 32 tokens, AdamW
lr 3e-3). vkspmd's figure is the steady-state ms/step its summary prints (the steps after the
first, compiling one), with its compute/collectives/host split; PyTorch's is the mean of the
steps after 3 warm-up steps. Prints both and the ratio, and writes them as JSON with --json.
With --torch-device cuda the peer is PyTorch on the GPU (eager, synchronised after every step),
the baseline for vkspmd on that GPU.
Run it on a quiet machine: both sides share its cores.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn"))
import torch_models  # noqa: E402

SUMMARY = re.compile(r"then ([0-9.]+) ms/step, [0-9]+ \w+/s: compute ([0-9.]+) ms, "
                     r"collectives ([0-9.]+) ms, host ([0-9.]+) ms per step")
VOCABULARY = re.compile(r"transformer \(([0-9]+) parameters\)")


def run_vkspmd(args):
    command = [args.vkspmd, "train", "--steps", str(args.steps), "--mesh", args.mesh,
               "--strategy", args.strategy, "--out", args.out, "--log-every", "1000"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"vkspmd train failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    match = SUMMARY.search(result.stdout)
    if match is None:
        sys.exit(f"no steady-state line in vkspmd train's summary:\n{result.stdout}")
    ms, compute, collectives, host = (float(value) for value in match.groups())
    parameters = int(VOCABULARY.search(result.stdout).group(1))
    return {"ms_per_step": ms, "compute_ms": compute, "collectives_ms": collectives,
            "host_ms": host, "parameters": parameters}


def torch_vocabulary(parameters, d_model=64, layers=2, seq=32):
    # vkspmd train prints its parameter count; the vocabulary is what makes the twin's equal:
    # 2*V*d (embedding and head) + seq*d + layers*(12*d*d + 13*d) + 2*d.
    fixed = seq * d_model + layers * (12 * d_model * d_model + 13 * d_model) + 2 * d_model
    return (parameters - fixed) // (2 * d_model)


def run_torch(args, vocabulary):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    device = torch.device(args.torch_device)
    model = torch_models.TransformerLM(vocabulary, 64, 4, 2, 32).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    tokens = torch.randint(0, vocabulary, (args.steps, 8, 32), device=device)
    targets = torch.randint(0, vocabulary, (args.steps, 8, 32), device=device)
    times = []
    for step in range(args.steps):
        start = time.perf_counter()
        optimizer.zero_grad()
        loss = model.loss(tokens[step], targets[step])
        loss.backward()
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize()  # a step ends when its kernels have run, as vkspmd's does
        times.append(time.perf_counter() - start)
    steady = times[3:] if len(times) > 3 else times
    return {"ms_per_step": 1e3 * sum(steady) / len(steady),
            "parameters": sum(p.numel() for p in model.parameters())}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--vkspmd", required=True)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--mesh", default="1")
    parser.add_argument("--strategy", default="dp")
    parser.add_argument("--out", default="/tmp/vkspmd-train-vs-torch")
    parser.add_argument("--torch-device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--json")
    args = parser.parse_args()
    vkspmd = run_vkspmd(args)
    vocabulary = torch_vocabulary(vkspmd["parameters"])
    peer = run_torch(args, vocabulary)
    if peer["parameters"] != vkspmd["parameters"]:
        sys.exit(f"the twin has {peer['parameters']} parameters, vkspmd {vkspmd['parameters']}")
    ratio = vkspmd["ms_per_step"] / peer["ms_per_step"]
    print(f"vkspmd train ({args.strategy} on mesh {args.mesh}): {vkspmd['ms_per_step']:.1f} "
          f"ms/step (compute {vkspmd['compute_ms']:.1f}, collectives "
          f"{vkspmd['collectives_ms']:.1f}, host {vkspmd['host_ms']:.1f})")
    peer_name = "PyTorch CUDA" if args.torch_device == "cuda" else "PyTorch CPU, 1 thread"
    print(f"{peer_name}: {peer['ms_per_step']:.2f} ms/step")
    print(f"ratio vkspmd / PyTorch: {ratio:.1f}")
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"vkspmd": vkspmd, "torch": peer, "ratio": ratio,
                       "mesh": args.mesh, "strategy": args.strategy, "steps": args.steps,
                       "torch_device": args.torch_device},
                      file, indent=1)


if __name__ == "__main__":
    main()
