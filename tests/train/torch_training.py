"""The PyTorch side of the training peer check (tests/train/torch_peer_test.cc).

Usage: /usr/bin/python3 torch_training.py DIR

DIR/runs.json lists the runs: {"name", "model": "transformer" | "mlp", "config" (the twin's
constructor arguments), "optimizer": "adamw" | "sgd", "lr", "momentum" (sgd)}. Each run loads its
initial weights from DIR/<name>/ (Module::save_npy's files, by parameter name) into the PyTorch
twin of tests/nn/torch_models.py, trains on the batches DIR/tokens.npy and DIR/targets.npy
([steps, batch, seq], int32) or DIR/x.npy and DIR/y.npy ([steps, batch, features]) on the CPU in
float32, with torch.optim.AdamW (PyTorch's defaults except lr) or torch.optim.SGD (momentum), and
writes the per-step losses (before each update) to DIR/losses_<name>.txt, one per line.
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "nn"))
import torch_models  # noqa: E402


def batches(directory, model):
    def load(name):
        return torch.from_numpy(np.load(os.path.join(directory, name + ".npy")))

    if model == "transformer":
        return load("tokens").long(), load("targets").long()
    return load("x"), load("y")


def train(directory, run):
    if run["model"] == "transformer":
        model = torch_models.TransformerLM(**run["config"])
    else:
        model = torch_models.MlpRegressor(**run["config"])
    torch_models.load_npy_dir(model, os.path.join(directory, run["name"]))
    if run["optimizer"] == "adamw":
        optimizer = torch.optim.AdamW(model.parameters(), lr=run["lr"])
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=run["lr"], momentum=run["momentum"])
    inputs, targets = batches(directory, run["model"])
    losses = []
    for step in range(inputs.shape[0]):
        loss = model.loss(inputs[step], targets[step])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def main(directory):
    torch.set_num_threads(1)
    with open(os.path.join(directory, "runs.json")) as f:
        runs = json.load(f)
    for run in runs:
        losses = train(directory, run)
        with open(os.path.join(directory, "losses_%s.txt" % run["name"]), "w") as out:
            out.write("".join("%.9g\n" % loss for loss in losses))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
