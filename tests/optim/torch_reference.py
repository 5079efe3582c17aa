"""The PyTorch side of the optimizer peer check (tests/optim/torch_peer_test.cc).

Usage: /usr/bin/python3 torch_reference.py DIR

Reads DIR/{w1,b1,w2,b2,x,y}.npy (x: [steps, batch, in], y: [steps, batch, out]) written by the
test, trains the MLP  out = act(x @ w1 + b1) @ w2 + b2  with the MSE loss for `steps` steps, once
with SGD (lr 0.05, momentum 0.9, tanh) and once with AdamW (lr 0.01, weight decay 0.01, gelu),
on the CPU in float32, and writes the per-step losses (before each update) to
DIR/losses_sgd.txt and DIR/losses_adamw.txt, one per line.
"""
import os
import sys

import numpy as np
import torch


def train(directory, make_optimizer, activation):
    params = [torch.tensor(np.load(os.path.join(directory, name + ".npy")), requires_grad=True)
              for name in ("w1", "b1", "w2", "b2")]
    xs = np.load(os.path.join(directory, "x.npy"))
    ys = np.load(os.path.join(directory, "y.npy"))
    optimizer = make_optimizer(params)
    losses = []
    for step in range(xs.shape[0]):
        w1, b1, w2, b2 = params
        x, y = torch.tensor(xs[step]), torch.tensor(ys[step])
        out = activation(x @ w1 + b1) @ w2 + b2
        loss = ((out - y) * (out - y)).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def main():
    directory = sys.argv[1]
    torch.set_num_threads(1)
    runs = {
        "sgd": (lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), torch.tanh),
        "adamw": (lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.01),
                  torch.nn.functional.gelu),
    }
    for name, (make_optimizer, activation) in runs.items():
        losses = train(directory, make_optimizer, activation)
        with open(os.path.join(directory, "losses_%s.txt" % name), "w") as out:
            out.write("".join("%.9g\n" % loss for loss in losses))


if __name__ == "__main__":
    main()
