"""The independent oracle of tests/lazy/ops_test.cc: every op of its AllOps computed by PyTorch's
own functions. DIR holds the inputs the test wrote (a.npy, b.npy, ... as its devices hold them)
and ops.txt (the op names, one a line); each op's value is written to DIR/<name>.npy. Computed
in float64 and rounded to float32 once at the end, so the oracle's own error is one rounding.
PyTorch's int64 results (argmax, one_hot, sums of bools, integer arange) are written as int32,
vkspmd's integer type. Exits 2 when ops.txt and this file disagree on the names."""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F


def ops(i):
    """name -> a function computing that op's value from the inputs `i` (float64 tensors)."""
    a, b, c, v, a3, w3 = i["a"], i["b"], i["c"], i["v"], i["a3"], i["w3"]
    indices, condition = i["indices"], i["condition"]
    positive = torch.abs(a) + 0.5
    return {
        "add": lambda: torch.add(a, b),
        "sub": lambda: torch.sub(a, b),
        "mul": lambda: torch.mul(a, b),
        "div": lambda: torch.div(a, positive),
        "add_scalar": lambda: torch.add(a, 2.5),
        "scalar_sub": lambda: torch.rsub(a, 2),
        "mul_scalar": lambda: torch.mul(a, 3),
        "div_scalar": lambda: torch.div(a, 4.0),
        "neg": lambda: torch.neg(a),
        "abs": lambda: torch.abs(a),
        "exp": lambda: torch.exp(a),
        "log": lambda: torch.log(positive),
        "sqrt": lambda: torch.sqrt(positive),
        "rsqrt": lambda: torch.rsqrt(positive),
        "tanh": lambda: torch.tanh(a),
        "sigmoid": lambda: torch.sigmoid(a),
        "relu": lambda: F.relu(a),
        "gelu": lambda: F.gelu(a),
        "gelu_tanh": lambda: F.gelu(a, approximate="tanh"),
        "pow_scalar": lambda: torch.pow(positive, 1.5),
        "pow": lambda: torch.pow(positive, b),
        "maximum": lambda: torch.maximum(a, b),
        "minimum": lambda: torch.minimum(a, b),
        "lt": lambda: torch.lt(a, b),
        "le": lambda: torch.le(a, b),
        "gt": lambda: torch.gt(a, b),
        "ge": lambda: torch.ge(a, b),
        "eq": lambda: torch.eq(a, a),
        "ne_scalar": lambda: torch.ne(a, 0),
        "where": lambda: torch.where(torch.gt(a, b), a, b),
        "where_broadcast": lambda: torch.where(condition, a, torch.tensor(0.5, dtype=a.dtype)),
        "broadcast_add": lambda: torch.add(a, v),
        "broadcast_column": lambda: torch.mul(a, torch.sum(a, 1, keepdim=True)),
        "matmul": lambda: torch.matmul(a, c),
        "matmul_batched": lambda: torch.matmul(a3, c),
        "matmul_broadcast_batch": lambda: torch.matmul(a3, w3),
        "matmul_vector_right": lambda: torch.matmul(a, v),
        "matmul_vector_left": lambda: torch.matmul(v, c),
        "transpose": lambda: torch.transpose(a, 0, 1),
        "permute": lambda: a3.permute(2, 0, 1),
        "reshape": lambda: torch.reshape(a, (7, 5)),
        "view_flat": lambda: a.view(-1),
        "unsqueeze_squeeze": lambda: a.unsqueeze(1).squeeze(1) + a.unsqueeze(0).squeeze(),
        "expand": lambda: v.unsqueeze(0).expand(5, -1),
        "slice": lambda: a[:, 1:6:2],
        "narrow": lambda: torch.narrow(a, 0, 1, 3),
        "index_int_slice": lambda: a[-2, 1::3],
        "index_ellipsis_newaxis": lambda: a3[..., None, -4:100],
        "index_int_middle": lambda: a3[:, 3],
        "index_tensor": lambda: a[:, indices.long()],
        "index_tensor_3d": lambda: a3[..., indices.long()],
        "index_mask": lambda: a[:, condition],
        "cat0": lambda: torch.cat([a, b], 0),
        "cat1": lambda: torch.cat([a, torch.narrow(b, 1, 0, 3)], 1),
        "sum": lambda: torch.sum(a),
        "sum_keepdim": lambda: torch.sum(a, 1, keepdim=True),
        "mean": lambda: torch.mean(a, 0),
        "max": lambda: torch.max(a, 1).values,
        "min": lambda: torch.min(a, 0, keepdim=True).values,
        "amax3": lambda: torch.amax(a3, (0, 2)),
        "argmax": lambda: torch.argmax(a, 1),
        "argmax_keepdim": lambda: torch.argmax(a, 0, keepdim=True),
        "softmax": lambda: F.softmax(a, 1),
        "log_softmax": lambda: F.log_softmax(a, 0),
        "layer_norm": lambda: F.layer_norm(a, (7,), v, v * 0.5),
        "one_hot": lambda: F.one_hot(indices.long(), 7),
        "embedding": lambda: F.embedding(indices.long(), c),
        "cross_entropy": lambda: F.cross_entropy(a, indices.long()),
        "cross_entropy_none": lambda: F.cross_entropy(a, indices.long(), reduction="none"),
        "arange": lambda: torch.arange(0, 5) * 2,
        "arange_float": lambda: torch.arange(0.5, 3.0, 0.5, dtype=torch.float64),
        "full": lambda: torch.full((5, 7), 1.25, dtype=torch.float64) + a,
        "zeros_ones": lambda: torch.zeros(5, 7, dtype=torch.float64)
        + torch.ones(5, 7, dtype=torch.float64) * a,
        "int_arithmetic": lambda: indices * 3 + 1 - indices,
        "int_to_float": lambda: indices.to(torch.float64) / 2,
        "bool_sum": lambda: torch.sum(torch.gt(a, 0), 1),
    }


def as_written(value):
    array = value.contiguous().numpy()
    if array.dtype == np.float64:
        return array.astype(np.float32)
    if array.dtype == np.int64:
        assert np.all(np.abs(array) < 2**31), "an int64 result does not fit int32"
        return array.astype(np.int32)
    return array


def main(directory):
    inputs = {}
    for name in ("a", "b", "c", "v", "a3", "w3", "indices", "condition"):
        array = np.load(os.path.join(directory, name + ".npy"))
        value = torch.from_numpy(array)
        inputs[name] = value.to(torch.float64) if array.dtype == np.float32 else value
    with open(os.path.join(directory, "ops.txt")) as f:
        requested = [line.strip() for line in f if line.strip()]
    table = ops(inputs)
    unknown = sorted(set(requested) - set(table))
    unused = sorted(set(table) - set(requested))
    if unknown or unused:
        print(f"ops without a PyTorch oracle: {unknown}; oracles of no op: {unused}")
        return 2
    with torch.no_grad():
        for name in requested:
            np.save(os.path.join(directory, name + ".npy"), as_written(table[name]()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
