#!/usr/bin/python3
"""Writes the torch-autograd reference for vkspmd's gradient tests.

For each case it writes tests/testdata/autodiff/<case>.hlo (the forward program, loss as root),
<case>.arg<i>.npy (inputs) and <case>.grad<i>.npy (d loss / d argument i from torch autograd).
Run with Debian's python (numpy and torch belong to /usr/bin/python3):

    /usr/bin/python3 tests/autodiff/torch_reference.py
"""
import os

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "autodiff")
TYPES = {"f64": (np.float64, torch.float64), "f32": (np.float32, torch.float32)}


class Hlo:
    """Emits HLO text in XLA's printed form, one instruction per call."""

    def __init__(self, name, dtype):
        self.name, self.t, self.lines, self.params, self.count = name, dtype, [], [], 0

    def shape(self, dims):
        return f"{self.t}[{','.join(str(d) for d in dims)}]"

    def emit(self, dims, text, base):
        self.count += 1
        name = f"{base}.{self.count}"
        self.lines.append(f"  %{name} = {self.shape(dims)} {text}")
        return (name, tuple(dims))

    def param(self, dims):
        index = len(self.params)
        name = f"p{index}"
        self.params.append((name, tuple(dims)))
        self.lines.append(f"  %{name} = {self.shape(dims)} parameter({index})")
        return (name, tuple(dims))

    def scalar(self, value):
        return self.emit((), f"constant({value})", "constant")

    def full(self, value, dims):
        return self.broadcast(self.scalar(value), dims, [])

    def broadcast(self, x, dims, mapped):
        return self.emit(dims, f"broadcast(%{x[0]}), dimensions={{{','.join(map(str, mapped))}}}",
                         "broadcast")

    def unary(self, op, x):
        return self.emit(x[1], f"{op}(%{x[0]})", op)

    def binary(self, op, a, b):
        return self.emit(a[1], f"{op}(%{a[0]}, %{b[0]})", op)

    def dot(self, a, b, lc, rc, lb=(), rb=()):
        free_a = [d for i, d in enumerate(a[1]) if i not in lc and i not in lb]
        free_b = [d for i, d in enumerate(b[1]) if i not in rc and i not in rb]
        dims = [a[1][i] for i in lb] + free_a + free_b
        attrs = ""
        if lb:
            attrs += f", lhs_batch_dims={{{','.join(map(str, lb))}}}"
        attrs += f", lhs_contracting_dims={{{','.join(map(str, lc))}}}"
        if rb:
            attrs += f", rhs_batch_dims={{{','.join(map(str, rb))}}}"
        attrs += f", rhs_contracting_dims={{{','.join(map(str, rc))}}}"
        return self.emit(dims, f"dot(%{a[0]}, %{b[0]}){attrs}", "dot")

    def reduce(self, x, dims, kind):
        init = self.scalar({"add": "0", "max": "-inf"}[kind])
        kept = [d for i, d in enumerate(x[1]) if i not in dims]
        return self.emit(kept, f"reduce(%{x[0]}, %{init[0]}), dimensions={{{','.join(map(str, dims))}}}, "
                         f"to_apply=%{kind}.{self.t}", "reduce")

    def transpose(self, x, permutation):
        dims = [x[1][p] for p in permutation]
        return self.emit(dims, f"transpose(%{x[0]}), dimensions={{{','.join(map(str, permutation))}}}",
                         "transpose")

    def text(self, root):
        reducers = "".join(
            f"%{kind}.{self.t} (lhs: {self.t}[], rhs: {self.t}[]) -> {self.t}[] {{\n"
            f"  %lhs = {self.t}[] parameter(0)\n  %rhs = {self.t}[] parameter(1)\n"
            f"  ROOT %r = {self.t}[] {op}({self.t}[] %lhs, {self.t}[] %rhs)\n}}\n\n"
            for kind, op in (("add", "add"), ("max", "maximum")))
        signature = ", ".join(f"{n}: {self.shape(d)}" for n, d in self.params)
        body = "\n".join(self.lines).replace(f"  %{root[0]} = ", f"  ROOT %{root[0]} = ")
        return (f"HloModule {self.name}\n\n{reducers}ENTRY %main ({signature}) -> {self.t}[] {{\n"
                f"{body}\n}}\n")


def sum_all(h, x):
    return h.reduce(x, list(range(len(x[1]))), "add")


def weighted_loss(h, y):
    """sum(y * sin(y)): a scalar whose adjoint differs element to element."""
    return sum_all(h, h.binary("multiply", y, h.unary("sine", y)))


def torch_weighted_loss(y):
    return (y * torch.sin(y)).sum()


def softmax_rows(h, x):
    rows, cols = x[1]
    shifted = h.binary("subtract", x, h.broadcast(h.reduce(x, [1], "max"), x[1], [0]))
    e = h.unary("exponential", shifted)
    return h.binary("divide", e, h.broadcast(h.reduce(e, [1], "add"), x[1], [0]))


def mlp(h):
    x, w1, b1, w2, b2, target = (h.param(d) for d in ([8, 16], [16, 32], [32], [32, 4], [4], [8, 4]))
    hidden = h.unary("tanh", h.binary("add", h.dot(x, w1, [1], [0]), h.broadcast(b1, [8, 32], [1])))
    out = h.binary("add", h.dot(hidden, w2, [1], [0]), h.broadcast(b2, [8, 4], [1]))
    diff = h.binary("subtract", out, target)
    loss = h.binary("multiply", sum_all(h, h.binary("multiply", diff, diff)), h.scalar(1 / 32))
    def reference(x, w1, b1, w2, b2, target):
        out = torch.tanh(x @ w1 + b1) @ w2 + b2
        return ((out - target) ** 2).mean()
    return loss, reference


def softmax_cross_entropy(h):
    x, w, labels = (h.param(d) for d in ([8, 12], [12, 10], [8, 10]))
    logits = h.dot(x, w, [1], [0])
    shifted = h.binary("subtract", logits, h.broadcast(h.reduce(logits, [1], "max"), [8, 10], [0]))
    log_sum = h.unary("log", h.reduce(h.unary("exponential", shifted), [1], "add"))
    log_softmax = h.binary("subtract", shifted, h.broadcast(log_sum, [8, 10], [0]))
    total = sum_all(h, h.binary("multiply", labels, log_softmax))
    loss = h.binary("multiply", total, h.scalar(-1 / 8))
    def reference(x, w, labels):
        return -(labels * torch.log_softmax(x @ w, dim=1)).sum() / 8
    return loss, reference


def layer_norm(h):
    x, gamma, beta, w = (h.param(d) for d in ([6, 16], [16], [16], [6, 16]))
    mean = h.binary("multiply", h.reduce(x, [1], "add"), h.full(1 / 16, [6]))
    centered = h.binary("subtract", x, h.broadcast(mean, [6, 16], [0]))
    var = h.binary("multiply", h.reduce(h.binary("multiply", centered, centered), [1], "add"),
                   h.full(1 / 16, [6]))
    inv = h.unary("rsqrt", h.binary("add", var, h.full(1e-5, [6])))
    normed = h.binary("multiply", centered, h.broadcast(inv, [6, 16], [0]))
    y = h.binary("add", h.binary("multiply", normed, h.broadcast(gamma, [6, 16], [1])),
                 h.broadcast(beta, [6, 16], [1]))
    loss = sum_all(h, h.binary("multiply", y, w))
    def reference(x, gamma, beta, w):
        return (torch.nn.functional.layer_norm(x, (16,), gamma, beta, 1e-5) * w).sum()
    return loss, reference


def attention(h):
    x, wq, wk, wv = (h.param(d) for d in ([5, 8], [8, 8], [8, 8], [8, 8]))
    q, k, v = (h.dot(x, w, [1], [0]) for w in (wq, wk, wv))
    scores = h.binary("multiply", h.dot(q, k, [1], [1]), h.full(1 / np.sqrt(8), [5, 5]))
    out = h.dot(softmax_rows(h, scores), v, [1], [0])
    relu = h.binary("maximum", out, h.full(0, [5, 8]))
    loss = weighted_loss(h, relu)
    def reference(x, wq, wk, wv):
        q, k, v = x @ wq, x @ wk, x @ wv
        p = torch.softmax((q @ k.T) / np.sqrt(8), dim=1)
        return torch_weighted_loss(torch.relu(p @ v))
    return loss, reference


def unary_case(op, torch_op, low=-2.0, high=2.0):
    def build(h):
        x = h.param([3, 5])
        return weighted_loss(h, h.unary(op, x)), lambda x: torch_weighted_loss(torch_op(x))
    return build, (low, high)


def binary_case(op, torch_op, low=0.5, high=2.0):
    def build(h):
        a, b = h.param([4, 3]), h.param([4, 3])
        return weighted_loss(h, h.binary(op, a, b)), lambda a, b: torch_weighted_loss(torch_op(a, b))
    return build, (low, high)


CASES = {
    "mlp": (mlp, (-1.0, 1.0)),
    "softmax_cross_entropy": (softmax_cross_entropy, (0.0, 1.0)),
    "layer_norm": (layer_norm, (-2.0, 2.0)),
    "attention": (attention, (-1.0, 1.0)),
    "op_negate": unary_case("negate", torch.neg),
    "op_abs": unary_case("abs", torch.abs),
    "op_exponential": unary_case("exponential", torch.exp),
    "op_exponential_minus_one": unary_case("exponential-minus-one", torch.expm1),
    "op_log": unary_case("log", torch.log, 0.3),
    "op_log_plus_one": unary_case("log-plus-one", torch.log1p, -0.5),
    "op_sqrt": unary_case("sqrt", torch.sqrt, 0.3),
    "op_rsqrt": unary_case("rsqrt", torch.rsqrt, 0.3),
    "op_tanh": unary_case("tanh", torch.tanh),
    "op_logistic": unary_case("logistic", torch.sigmoid),
    "op_sine": unary_case("sine", torch.sin),
    "op_cosine": unary_case("cosine", torch.cos),
    "op_erf": unary_case("erf", torch.erf),
    "op_add": binary_case("add", torch.add, -2.0),
    "op_subtract": binary_case("subtract", torch.sub, -2.0),
    "op_multiply": binary_case("multiply", torch.mul, -2.0),
    "op_divide": binary_case("divide", torch.div),
    "op_remainder": binary_case("remainder", torch.fmod),
    "op_maximum": binary_case("maximum", torch.maximum, -2.0),
    "op_minimum": binary_case("minimum", torch.minimum, -2.0),
    "op_power": binary_case("power", torch.pow),
    "op_atan2": binary_case("atan2", torch.atan2, -2.0),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, (build, (low, high)) in CASES.items():
        for type_name, (np_type, torch_type) in TYPES.items():
            case = f"{name}.{type_name}"
            h = Hlo(case.replace(".", "_"), type_name)
            loss, reference = build(h)
            with open(os.path.join(OUT, f"{case}.hlo"), "w") as f:
                f.write(h.text(loss))
            rng = np.random.default_rng(sum(map(ord, name)))  # Stable across runs and machines.
            args = [rng.uniform(low, high, size=dims).astype(np_type) for _, dims in h.params]
            tensors = [torch.tensor(a, dtype=torch_type, requires_grad=True) for a in args]
            value = reference(*tensors)
            value.backward()
            for i, (a, t) in enumerate(zip(args, tensors)):
                np.save(os.path.join(OUT, f"{case}.arg{i}.npy"), a)
                np.save(os.path.join(OUT, f"{case}.grad{i}.npy"), t.grad.numpy().astype(np_type))
            np.save(os.path.join(OUT, f"{case}.loss.npy"), np.array(value.item(), dtype=np_type))
    print(f"wrote {len(CASES) * len(TYPES)} cases to {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
