"""Checks vkspmd::nn's forward against PyTorch: DIR holds what tests/nn/layers_test.cc wrote (the
models' parameters, inputs, outputs and losses as .npy, sizes in config.json). Exits 1, printing
the differences, when an output differs by more than 1e-4 relative."""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models  # noqa: E402


def differs(name, actual, expected):
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    error = np.max(np.abs(actual - expected) / np.maximum(1.0, np.abs(expected)))
    print(f"{name}: largest relative difference {error:.3g}")
    return not error <= 1e-4


def main(directory):
    def load(name):
        return np.load(os.path.join(directory, name + ".npy"))

    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)
    failed = False
    with torch.no_grad():
        lm = torch_models.TransformerLM(**config["transformer"])
        torch_models.load_npy_dir(lm, os.path.join(directory, "transformer"))
        tokens = torch.from_numpy(load("tokens")).long()
        targets = torch.from_numpy(load("targets"))
        failed |= differs("transformer logits", lm(tokens).numpy(), load("logits"))
        failed |= differs("transformer loss", lm.loss(tokens, targets).numpy(), load("lm_loss"))

        regressor = torch_models.MlpRegressor(**config["regressor"])
        torch_models.load_npy_dir(regressor, os.path.join(directory, "regressor"))
        x, y = torch.from_numpy(load("x")), torch.from_numpy(load("y"))
        failed |= differs("regressor output", regressor(x).numpy(), load("prediction"))
        failed |= differs("regressor loss", regressor.loss(x, y).numpy(), load("mse_loss"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
