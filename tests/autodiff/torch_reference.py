#!/usr/bin/python3
"""Writes the torch-autograd reference for vkspmd's gradient tests.

For each case it writes tests/testdata/autodiff/<case>.hlo (the forward program, loss as root),
<case>.arg<i>.npy (inputs) and <case>.grad<i>.npy (d loss / d argument i from torch autograd).
Run with Debian's python (numpy and torch belong to /usr/bin/python3):

    /usr/bin/python3 tests/autodiff/torch_reference.py

It takes no options and rewrites every case. Inputs avoid the points where torch's conventions
differ from JAX's (ties of max/min, clamp at its bounds, select's predicate flipping). Another
torch or BLAS build changes the existing cases' gradients in the last bits; commit only the files
of the cases a change is about.
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

    def shape(self, dims, dtype=None):
        return f"{dtype or self.t}[{','.join(str(d) for d in dims)}]"

    def emit(self, dims, text, base, dtype=None):
        self.count += 1
        name = f"{base}.{self.count}"
        self.lines.append(f"  %{name} = {self.shape(dims, dtype)} {text}")
        return (name, tuple(dims))

    def param(self, dims, bounds=None):
        """A parameter; `bounds` (low, high) overrides the case's input range for this one."""
        index = len(self.params)
        name = f"p{index}"
        self.params.append((name, tuple(dims), bounds))
        self.lines.append(f"  %{name} = {self.shape(dims)} parameter({index})")
        return (name, tuple(dims))

    def scalar(self, value):
        return self.emit((), f"constant({value})", "constant")

    def full(self, value, dims):
        return self.broadcast(self.scalar(value), dims, [])

    def broadcast(self, x, dims, mapped):
        return self.emit(dims, f"broadcast(%{x[0]}), dimensions={{{','.join(map(str, mapped))}}}",
                         "broadcast")

    def unary(self, op, x, dtype=None):
        return self.emit(x[1], f"{op}(%{x[0]})", op, dtype)

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

    def compare(self, a, b, direction):
        return self.emit(a[1], f"compare(%{a[0]}, %{b[0]}), direction={direction}", "compare",
                         "pred")

    def select(self, predicate, a, b):
        return self.emit(a[1], f"select(%{predicate[0]}, %{a[0]}, %{b[0]})", "select")

    def clamp(self, low, x, high):
        return self.emit(x[1], f"clamp(%{low[0]}, %{x[0]}, %{high[0]})", "clamp")

    def convert(self, x, dtype):
        return self.emit(x[1], f"convert(%{x[0]})", "convert", dtype)

    def reshape(self, x, dims):
        return self.emit(dims, f"reshape(%{x[0]})", "reshape")

    def slice(self, x, ranges):
        """ranges: (start, limit, stride) per dimension."""
        dims = [len(range(*r)) for r in ranges]
        text = ", ".join(f"[{a}:{b}:{c}]" for a, b, c in ranges)
        return self.emit(dims, f"slice(%{x[0]}), slice={{{text}}}", "slice")

    def concatenate(self, parts, axis):
        dims = list(parts[0][1])
        dims[axis] = sum(p[1][axis] for p in parts)
        names = ", ".join(f"%{p[0]}" for p in parts)
        return self.emit(dims, f"concatenate({names}), dimensions={{{axis}}}", "concatenate")

    def pad(self, x, value, config):
        """config: (low, high, interior) per dimension, as XLA's padding=low_high_interior."""
        dims = [lo + hi + n + max(n - 1, 0) * inner for n, (lo, hi, inner) in zip(x[1], config)]
        text = "x".join("_".join(map(str, c)) for c in config)
        return self.emit(dims, f"pad(%{x[0]}, %{value[0]}), padding={text}", "pad")

    def reverse(self, x, dims):
        return self.emit(x[1], f"reverse(%{x[0]}), dimensions={{{','.join(map(str, dims))}}}",
                         "reverse")

    def text(self, root):
        reducers = "".join(
            f"%{kind}.{self.t} (lhs: {self.t}[], rhs: {self.t}[]) -> {self.t}[] {{\n"
            f"  %lhs = {self.t}[] parameter(0)\n  %rhs = {self.t}[] parameter(1)\n"
            f"  ROOT %r = {self.t}[] {op}({self.t}[] %lhs, {self.t}[] %rhs)\n}}\n\n"
            for kind, op in (("add", "add"), ("max", "maximum")))
        signature = ", ".join(f"{n}: {self.shape(d)}" for n, d, _ in self.params)
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


def select_case(h):
    a, b = h.param([4, 3]), h.param([4, 3])
    chosen = h.select(h.compare(a, b, "GT"), h.unary("exponential", a), h.binary("multiply", a, b))
    def reference(a, b):
        return torch_weighted_loss(torch.where(a > b, torch.exp(a), a * b))
    return weighted_loss(h, chosen), reference


def clamp_case(h):
    """clamp(low, x, high) with a scalar low and an elementwise high, x on both sides of each."""
    low, x = h.param([], (-1.0, -0.5)), h.param([3, 5], (-2.5, 2.5))
    high = h.param([3, 5], (0.5, 1.5))
    def reference(low, x, high):
        return torch_weighted_loss(torch.clamp(x, min=low, max=high))
    return weighted_loss(h, h.clamp(low, x, high)), reference


def convert_case(h):
    """A round trip through the other float type: tanh is computed there, then converted back."""
    other = "f32" if h.t == "f64" else "f64"
    x = h.param([3, 5])
    detour = h.convert(h.unary("tanh", h.convert(x, other), other), h.t)
    def reference(x):
        other_type = torch.float32 if x.dtype == torch.float64 else torch.float64
        return torch_weighted_loss(torch.tanh(x.to(other_type)).to(x.dtype) * x)
    return weighted_loss(h, h.binary("multiply", detour, x)), reference


def broadcast_case(h):
    """A [3,5] value broadcast to [3,2,5] (a new middle dim), times a broadcast scalar."""
    x, s = h.param([3, 5]), h.param([])
    y = h.binary("multiply", h.broadcast(x, [3, 2, 5], [0, 2]), h.broadcast(s, [3, 2, 5], []))
    def reference(x, s):
        return torch_weighted_loss(x[:, None, :].expand(3, 2, 5) * s)
    return weighted_loss(h, y), reference


def reshape_case(h):
    x = h.param([4, 6])
    def reference(x):
        return torch_weighted_loss(x.reshape(2, 3, 4))
    return weighted_loss(h, h.reshape(x, [2, 3, 4])), reference


def transpose_case(h):
    x = h.param([2, 3, 4])
    def reference(x):
        return torch_weighted_loss(x.permute(2, 0, 1))
    return weighted_loss(h, h.transpose(x, [2, 0, 1])), reference


def slice_case(h):
    x = h.param([7, 9])
    def reference(x):
        return torch_weighted_loss(x[1:6:2, 2:9:3])
    return weighted_loss(h, h.slice(x, [(1, 6, 2), (2, 9, 3)])), reference


def concatenate_case(h):
    a, b, c = h.param([3, 2]), h.param([3, 4]), h.param([3, 1])
    def reference(a, b, c):
        return torch_weighted_loss(torch.cat([a, b, c], dim=1))
    return weighted_loss(h, h.concatenate([a, b, c], 1)), reference


def pad_case(h):
    """Interior padding on both dims, high padding, and a negative low padding that crops x's first
    column; the padding value is a parameter too."""
    x, value = h.param([3, 4]), h.param([])
    def reference(x, value):
        full = value.expand(8, 11).clone()
        full[1:6:2, 0:10:3] = x
        return torch_weighted_loss(full[:, 1:])
    return weighted_loss(h, h.pad(x, value, [(1, 2, 1), (-1, 1, 2)])), reference


def reverse_case(h):
    x = h.param([3, 4, 2])
    def reference(x):
        return torch_weighted_loss(torch.flip(x, [0, 2]))
    return weighted_loss(h, h.reverse(x, [0, 2])), reference


def batched_dot_case(h):
    """Batch dim 0 of lhs against batch dim 1 of rhs; the contracting dim leads lhs's free dim and
    trails rhs's (lhs is contracted as if transposed)."""
    a, b = h.param([2, 5, 3]), h.param([4, 2, 5])
    y = h.dot(a, b, [1], [2], [0], [1])
    def reference(a, b):
        return torch_weighted_loss(torch.einsum("bkm,nbk->bmn", a, b))
    return weighted_loss(h, y), reference


def dot_two_contracting_case(h):
    """A middle batch dim and two contracting dims listed out of order ({3,0} against {0,2})."""
    a, b = h.param([3, 2, 4, 5]), h.param([5, 2, 3, 6])
    y = h.dot(a, b, [3, 0], [0, 2], [1], [1])
    def reference(a, b):
        return torch_weighted_loss(torch.einsum("kbmj,jbkn->bmn", a, b))
    return weighted_loss(h, y), reference


def reduce_max_case(h):
    """Max over dim 0 of distinct values (no ties, so torch's amax and JAX agree)."""
    x = h.param([5, 6])
    def reference(x):
        return torch_weighted_loss(x.amax(dim=0))
    return weighted_loss(h, h.reduce(x, [0], "max")), reference


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
    "op_select": (select_case, (-1.5, 1.5)),
    "op_clamp": (clamp_case, None),
    "op_convert": (convert_case, (-2.0, 2.0)),
    "op_broadcast": (broadcast_case, (-2.0, 2.0)),
    "op_reshape": (reshape_case, (-2.0, 2.0)),
    "op_transpose": (transpose_case, (-2.0, 2.0)),
    "op_slice": (slice_case, (-2.0, 2.0)),
    "op_concatenate": (concatenate_case, (-2.0, 2.0)),
    "op_pad": (pad_case, (-2.0, 2.0)),
    "op_reverse": (reverse_case, (-2.0, 2.0)),
    "op_dot_batched": (batched_dot_case, (-1.0, 1.0)),
    "op_dot_two_contracting": (dot_two_contracting_case, (-1.0, 1.0)),
    "op_reduce_max": (reduce_max_case, (-2.0, 2.0)),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, (build, bounds) in CASES.items():
        for type_name, (np_type, torch_type) in TYPES.items():
            case = f"{name}.{type_name}"
            h = Hlo(case.replace(".", "_"), type_name)
            loss, reference = build(h)
            with open(os.path.join(OUT, f"{case}.hlo"), "w") as f:
                f.write(h.text(loss))
            rng = np.random.default_rng(sum(map(ord, name)))  # Stable across runs and machines.
            args = [rng.uniform(*(own or bounds), size=dims).astype(np_type)
                    for _, dims, own in h.params]
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
