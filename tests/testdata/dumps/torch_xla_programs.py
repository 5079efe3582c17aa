# PyTorch/XLA-style dumps (what torch_xla._XLAC._get_xla_tensors_hlo, XLA_SAVE_TENSORS_FMT=hlo and
# the SPMD debug dumps print) of a transformer block fed by an embedding lookup, a while loop, a
# cond, an argsort and an index_add_, written by hand in XLA's syntax with NumPy oracles; the
# block also as a 2x2-mesh SPMD dump. generate.py calls cases() and writes the files.
import numpy as np
from numpy_oracle import matmul  # ../numpy_oracle.py (generate.py puts .. on the path)

rng = np.random.RandomState(2024)
TORCH = "/usr/lib/python3/dist-packages/torch"


def f32(*shape):
    return rng.uniform(-1.5, 1.5, size=shape).astype(np.float32)


def ty(dtype, dims, layout=None):
    """An HLO array type with its layout, e.g. f32[5,8]{1,0} (descending unless given)."""
    if layout is None:
        layout = list(range(len(dims) - 1, -1, -1))
    return f"{dtype}[{','.join(map(str, dims))}]{{{','.join(map(str, layout))}}}"


def meta(op, file=None, line=None):
    text = f'op_type="{op}" op_name="{op}"'
    if file is not None:
        text += f' source_file="{file}" source_line={line}'
    return f"metadata={{{text}}}"


class Emitter:
    """Writes one computation's instructions as PyTorch/XLA prints them: '%' names numbered in
    the order the lowering creates them, typed operands, op_type/op_name metadata."""

    def __init__(self, counter):
        self.counter = counter
        self.lines = []

    def next_id(self):
        self.counter[0] += 1
        return self.counter[0]

    def op(self, opcode, type_text, operands=(), attrs="", md=None, name=None, root=False):
        name = name or f"{opcode}.{self.next_id()}"
        args = ", ".join(f"{t} %{n}" for n, t in operands)
        extra = "".join(", " + a for a in (attrs, md) if a)
        self.lines.append(f"  {'ROOT ' if root else ''}%{name} = {type_text} {opcode}({args}){extra}")
        return (name, type_text)

    def param(self, k, type_text, md=None, sharding=None):
        name = f"p{k}.{self.next_id()}"
        extra = "".join(", " + a for a in (f"sharding={sharding}" if sharding else None,
                                           md or meta("xla__device_data")) if a)
        self.lines.append(f"  %{name} = {type_text} parameter({k}){extra}")
        return (name, type_text)


def dims_of(value):
    return [int(d) for d in value[1].split("[")[1].split("]")[0].split(",") if d]


def dtype_of(value):
    return value[1].split("[")[0]


def layout_of(value):
    return [int(d) for d in value[1].split("{")[1].rstrip("}").split(",") if d]


def scalar_computation(counter, name, op, dtype="f32", params=("x", "y")):
    """AddComputation / MaxComputation / ScatterCombiner as torch_xla builds them; op "assign"
    (index_copy's combiner) returns the update, its second parameter."""
    i = counter[0] + 1
    counter[0] += 4
    a, b = f"{params[0]}.{i + 1}", f"{params[1]}.{i + 2}"
    lines = [f"  %{a} = {dtype}[] parameter(0)", f"  %{b} = {dtype}[] parameter(1)"]
    if op == "assign":
        lines[1] = "  ROOT" + lines[1][1:]
    else:
        lines.append(f"  ROOT %{op}.{i + 3} = {dtype}[] {op}({dtype}[] %{a}, {dtype}[] %{b})")
    body = "\n".join(lines)
    return f"%{name}.{i}", f"%{name}.{i} ({a}: {dtype}[], {b}: {dtype}[]) -> {dtype}[] {{\n{body}\n}}\n"


def signature(params, result):
    args = ", ".join(f"{n}: {t.split('{')[0]}" for n, t in params)
    return f"({args}) -> {result}"


def strip_layouts(type_text):
    """(f32[2,5,8]{2,1,0}) -> (f32[2,5,8]): how computation signatures print."""
    out, depth = "", 0
    for ch in type_text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif depth == 0:
            out += ch
    return out


def module(name, entry_id, computations, params, root_type, lines):
    param_types = ", ".join(t for _, t in params)
    header = (f"HloModule {name}.{entry_id}, entry_computation_layout="
              f"{{({param_types})->{root_type}}}\n\n")
    entry = (f"ENTRY %{name}.{entry_id} {signature(params, strip_layouts(root_type))} {{\n" +
             "\n".join(lines) + "\n}\n")
    return header + "".join(c + "\n" for c in computations) + entry


# ------------------------------------------------------------------------------------------------
# Transformer block fed by nn.Embedding: pre-LN, 2 heads, exact (erf) GELU, batch 2 of 5 tokens.
B, S, D, H, HD, F, V = 2, 5, 8, 2, 4, 12, 11
LINEAR = f"{TORCH}/nn/modules/linear.py"
FUNCTIONAL = f"{TORCH}/nn/functional.py"
MODEL = "/home/user/block.py"


class Block:
    def __init__(self, shardings):
        self.counter = [0]
        self.add_name, add_text = scalar_computation(self.counter, "AddComputation", "add")
        self.max_name, max_text = scalar_computation(self.counter, "MaxComputation", "maximum")
        self.computations = [add_text, max_text]
        self.e = Emitter(self.counter)
        self.params = []
        self.shardings = shardings

    def param(self, dims, dtype="f32", line=None):
        k = len(self.params)
        md = meta("xla__device_data", MODEL if line else None, line)
        p = self.e.param(k, ty(dtype, dims), md, self.shardings.get(k))
        self.params.append(p)
        return p

    def bcast(self, value, dims, kept, md):
        return self.e.op("broadcast", ty(dtype_of(value), dims), [value],
                         f"dimensions={{{','.join(map(str, kept))}}}", md)

    def constant(self, text, md, dtype="f32"):
        value = self.e.op("constant", f"{dtype}[]", [], md=md)
        # A constant's literal goes inside the parentheses.
        self.e.lines[-1] = self.e.lines[-1].replace("constant()", f"constant({text})")
        return value

    def scalar(self, text, dims, md, dtype="f32"):
        return self.bcast(self.constant(text, md, dtype), dims, [], md)

    def binary(self, opcode, a, b, md):
        return self.e.op(opcode, a[1], [a, b], md=md)

    def reshape(self, value, dims, md=None):
        return self.e.op("reshape", ty(dtype_of(value), dims), [value],
                         md=md or meta("aten__view", MODEL, 20))

    def transpose(self, value, perm, op="aten__permute", line=20):
        dims = dims_of(value)
        inverse = [perm.index(i) for i in range(len(perm))]
        out_dims = [dims[p] for p in perm]
        layout = [inverse[l] for l in layout_of(value)]
        return self.e.op("transpose", ty(dtype_of(value), out_dims, layout), [value],
                         f"dimensions={{{','.join(map(str, perm))}}}", meta(op, MODEL, line))

    def reduce(self, value, init_text, dim, computation, md):
        c = self.constant(init_text, md)
        dims = dims_of(value)
        out = [d for i, d in enumerate(dims) if i != dim]
        return self.e.op("reduce", ty("f32", out), [value, c],
                         f"dimensions={{{dim}}}, to_apply={computation}", md)

    def linear(self, x3, weight, bias, line):
        """nn.Linear on [B,S,in]: view to 2-D, addmm with the transposed weight, view back."""
        md = meta("aten__addmm", LINEAR, 125)
        rows = B * S
        x2 = self.reshape(x3, [rows, dims_of(x3)[2]], meta("aten__view", LINEAR, 125))
        wt = self.transpose(weight, [1, 0], "aten__permute", line)
        out = dims_of(weight)[0]
        dot = self.e.op("dot", ty("f32", [rows, out]), [x2, wt],
                        "lhs_contracting_dims={1}, rhs_contracting_dims={0}", md)
        summed = self.binary("add", dot, self.bcast(bias, [rows, out], [1], md), md)
        return self.reshape(summed, [B, S, out], meta("aten__view", LINEAR, 125))

    def layer_norm(self, x, gamma, beta):
        md = meta("aten__native_layer_norm", FUNCTIONAL, 2546)
        full, rows = [B, S, D], [B, S]
        mean = self.binary("multiply", self.reduce(x, "0", 2, self.add_name, md),
                           self.scalar("0.125", rows, md), md)
        centered = self.binary("subtract", x, self.bcast(mean, full, [0, 1], md), md)
        square = self.binary("multiply", centered, centered, md)
        var = self.binary("multiply", self.reduce(square, "0", 2, self.add_name, md),
                          self.scalar("0.125", rows, md), md)
        eps = self.binary("add", var, self.scalar("1e-05", rows, md), md)
        rstd = self.e.op("rsqrt", eps[1], [eps], md=md)
        normed = self.binary("multiply", centered, self.bcast(rstd, full, [0, 1], md), md)
        scaled = self.binary("multiply", normed, self.bcast(gamma, full, [2], md), md)
        return self.binary("add", scaled, self.bcast(beta, full, [2], md), md)

    def bmm(self, a4, b4):
        """torch.matmul on 4-D tensors: expand/view to 3-D, bmm, view back."""
        da, db = dims_of(a4), dims_of(b4)
        a3 = self.reshape(a4, [B * H] + da[2:], meta("aten__view", MODEL, 24))
        b3 = self.reshape(b4, [B * H] + db[2:], meta("aten__view", MODEL, 24))
        out = [B * H, da[2], db[3]]
        dot = self.e.op("dot", ty("f32", out), [a3, b3],
                        "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
                        "rhs_contracting_dims={1}", meta("aten__bmm", MODEL, 24))
        return self.reshape(dot, [B, H, da[2], db[3]], meta("aten__view", MODEL, 24))

    def softmax(self, x):
        md = meta("aten__softmax", FUNCTIONAL, 1885)
        dims = dims_of(x)
        keep = list(range(len(dims) - 1))
        peak = self.reduce(x, "-inf", len(dims) - 1, self.max_name, md)
        shifted = self.binary("subtract", x, self.bcast(peak, dims, keep, md), md)
        e = self.e.op("exponential", shifted[1], [shifted], md=md)
        total = self.reduce(e, "0", len(dims) - 1, self.add_name, md)
        return self.binary("divide", e, self.bcast(total, dims, keep, md), md)

    def gelu(self, x):
        md = meta("aten__gelu", FUNCTIONAL, 1550)
        dims = dims_of(x)
        scaled = self.binary("multiply", x, self.scalar("0.707106769", dims, md), md)
        erf = self.e.op("erf", x[1], [scaled], md=md)
        one_plus = self.binary("add", erf, self.scalar("1", dims, md), md)
        half = self.binary("multiply", x, self.scalar("0.5", dims, md), md)
        return self.binary("multiply", half, one_plus, md)

    def build(self, mark_sharding):
        e = self.e
        ids = self.param([B, S], "s64", 31)
        table = self.param([V, D])
        # nn.Embedding: F.embedding lowers to index_select, a gather of one row per id.
        md = meta("aten__index_select", FUNCTIONAL, 2233)
        ids32 = e.op("convert", ty("u32", [B, S]), [ids])
        flat = self.reshape(ids32, [B * S], meta("aten__view", FUNCTIONAL, 2233))
        rows = e.op("gather", ty("f32", [B * S, D]), [table, flat],
                    "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
                    f"index_vector_dim=1, slice_sizes={{1,{D}}}", md)
        x = self.reshape(rows, [B, S, D], meta("aten__view", FUNCTIONAL, 2233))
        if mark_sharding:
            # xs.mark_sharding(x, mesh, ("data", None, None)) on an intermediate value.
            x = e.op("custom-call", x[1], [x],
                     f'custom_call_target="Sharding", sharding={mark_sharding}',
                     meta("xla__custom_sharding", "/home/user/block.py", 32))
        h = self.layer_norm(x, self.param([D]), self.param([D]))
        qkv = self.linear(h, self.param([3 * D, D]), self.param([3 * D]), 22)
        heads = []
        for j in range(3):
            part = e.op("slice", ty("f32", [B, S, D]), [qkv],
                        f"slice={{[0:{B}], [0:{S}], [{j * D}:{(j + 1) * D}]}}",
                        meta("aten__split", MODEL, 23))
            heads.append(self.transpose(self.reshape(part, [B, S, H, HD]), [0, 2, 1, 3]))
        q, k, v = heads
        scores = self.bmm(q, self.transpose(k, [0, 1, 3, 2], "aten__transpose", 24))
        md = meta("aten__div", MODEL, 24)
        scores = self.binary("divide", scores, self.scalar("2", dims_of(scores), md), md)
        attn = self.bmm(self.softmax(scores), v)
        merged = self.reshape(self.transpose(attn, [0, 2, 1, 3]), [B, S, D])
        y = self.linear(merged, self.param([D, D]), self.param([D]), 26)
        y = self.binary("add", x, y, meta("aten__add", MODEL, 26))
        z = self.layer_norm(y, self.param([D]), self.param([D]))
        f = self.gelu(self.linear(z, self.param([F, D]), self.param([F]), 28))
        out = self.linear(f, self.param([D, F]), self.param([D]), 28)
        out = self.binary("add", y, out, meta("aten__add", MODEL, 28))
        root = f"({out[1]})"
        e.op("tuple", root, [out], root=True)
        return module("IrToHlo", self.counter[0] + 1, self.computations, self.params, root,
                      e.lines)


def layer_norm(x, gamma, beta, eps=np.float32(1e-5)):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def erf(x):
    from math import erf as scalar_erf
    return np.vectorize(scalar_erf)(x.astype(np.float64)).astype(np.float32)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def block_numpy(ids, table, g1, b1, wqkv, bqkv, wo, bo, g2, b2, w1, bb1, w2, bb2):
    x = table[ids]  # [B,S,D]
    qkv = matmul(layer_norm(x, g1, b1), wqkv.T) + bqkv
    q, k, v = (qkv[..., j * D:(j + 1) * D].reshape(B, S, H, HD).transpose(0, 2, 1, 3)
               for j in range(3))
    p = softmax(matmul(q, k.transpose(0, 1, 3, 2)) / np.float32(2))
    y = x + matmul(matmul(p, v).transpose(0, 2, 1, 3).reshape(B, S, D), wo.T) + bo
    hidden = matmul(layer_norm(y, g2, b2), w1.T) + bb1
    gelu = hidden * np.float32(0.5) * (np.float32(1) + erf(hidden * np.float32(np.sqrt(0.5))))
    return y + matmul(gelu, w2.T) + bb2


# The 2x2 SPMD dump: mesh ("data", "model") over devices 0..3; ids split on the batch ("data"),
# the table on the vocabulary and the MLP Megatron-style on "model" (device order 0,2,1,3: the
# model axis is the minor mesh axis), the rest replicated, the embedding output marked
# ("data", None, None) by a Sharding custom-call.
DATA = "[2,1,2]0,1,2,3 last_tile_dim_replicate"
MODEL_ROWS = "{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}"
SPMD_SHARDINGS = {0: "{devices=" + DATA + "}", 1: MODEL_ROWS,
                  10: MODEL_ROWS, 11: "{devices=[2,2]0,2,1,3 last_tile_dim_replicate}",
                  12: "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}"}
for k in range(2, 14):
    SPMD_SHARDINGS.setdefault(k, "{replicated}")


def block_cases():
    ids = rng.randint(0, V, size=(B, S)).astype(np.int64)
    args = [ids, f32(V, D), f32(D), f32(D), f32(3 * D, D) * np.float32(0.5), f32(3 * D),
            f32(D, D) * np.float32(0.5), f32(D), f32(D), f32(D), f32(F, D) * np.float32(0.5),
            f32(F), f32(D, F) * np.float32(0.5), f32(D)]
    out = [block_numpy(*args)]
    plain = Block({}).build(None)
    spmd = Block(SPMD_SHARDINGS).build("{devices=[2,1,1,2]0,1,2,3 last_tile_dim_replicate}")
    return [("torch_xla_embed_block", plain, args, out, None),
            ("torch_xla_embed_block_spmd", spmd, args, out, None)]


class Program:
    """One IrToHlo module: scalar computations, sub-computations and the entry, numbered in
    order of creation as torch_xla's lowering numbers them."""

    def __init__(self):
        self.counter = [0]
        self.computations = []
        self.params = []
        self.e = Emitter(self.counter)

    def scalar(self, name, op, dtype="f32", params=("x", "y")):
        ref, text = scalar_computation(self.counter, name, op, dtype, params)
        self.computations.append(text)
        return ref

    def param(self, dtype, dims, line):
        p = self.e.param(len(self.params), ty(dtype, dims),
                         meta("xla__device_data", "/home/user/program.py", line))
        self.params.append(p)
        return p

    def constant(self, e, dtype, text, md=None):
        value = e.op("constant", f"{dtype}[]", [], md=md)
        e.lines[-1] = e.lines[-1].replace("constant()", f"constant({text})")
        return value

    def tuple_param(self, e, types):
        """A sub-computation's tuple parameter and its elements (get-tuple-element)."""
        tuple_type = "(" + ", ".join(types) + ")"
        p = (f"p0.{e.next_id()}", tuple_type)
        e.lines.append(f"  %{p[0]} = {tuple_type} parameter(0)")
        return [e.op("get-tuple-element", t, [p], f"index={j}") for j, t in enumerate(types)], p

    def computation(self, base, e, params, root_type):
        ident = e.counter[0] + 1
        e.counter[0] += 1
        args = ", ".join(f"{n}: {strip_layouts(t)}" for n, t in params)
        self.computations.append(f"%{base}.{ident} ({args}) -> {strip_layouts(root_type)} {{\n" +
                                 "\n".join(e.lines) + "\n}\n")
        return f"%{base}.{ident}"

    def finish(self, outputs):
        root = "(" + ", ".join(t for _, t in outputs) + ")"
        self.e.op("tuple", root, outputs, root=True)
        return module("IrToHlo", self.counter[0] + 1, self.computations, self.params, root,
                      self.e.lines)


# --- torch_xla.experimental.fori_loop/while_loop of c = 0.5 c + xs[i], ys[i] = c for i < 5: the
# counter an s64 tensor, xs[i] an index_select (gather), ys.index_copy(0, i, c) a scatter whose
# ScatterCombiner returns the update; condition and body lowered as condctx/bodyctx.
LOOP_FILE = "/home/user/loop.py"


def while_case():
    prog = Program()
    state = ["s64[]", ty("f32", [8]), ty("f32", [5, 8]), ty("f32", [5, 8])]
    combiner = prog.scalar("ScatterCombiner", "assign", params=("p0", "p1"))
    cond = Emitter(prog.counter)
    (i, _, _, _), cp = prog.tuple_param(cond, state)
    five = prog.constant(cond, "s64", "5")
    cond.op("compare", "pred[]", [i, five], "direction=LT", meta("aten__lt", LOOP_FILE, 5),
            root=True)
    cond_ref = prog.computation("condctx", cond, [cp], "pred[]")
    body = Emitter(prog.counter)
    (i, c, xs, ys), bp = prog.tuple_param(body, state)
    index = body.op("reshape", ty("s64", [1]), [i], md=meta("aten__view", LOOP_FILE, 8))
    md = meta("aten__index_select", LOOP_FILE, 8)
    row = body.op("gather", ty("f32", [1, 8]), [xs, index],
                  "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
                  "index_vector_dim=1, slice_sizes={1,8}", md)
    x_t = body.op("reshape", ty("f32", [8]), [row], md=meta("aten__view", LOOP_FILE, 8))
    md = meta("aten__mul", LOOP_FILE, 9)
    half = body.op("broadcast", ty("f32", [8]), [prog.constant(body, "f32", "0.5", md)],
                   "dimensions={}", md)
    scaled = body.op("multiply", c[1], [c, half], md=md)
    c_next = body.op("add", c[1], [scaled, x_t], md=meta("aten__add", LOOP_FILE, 9))
    update = body.op("reshape", ty("f32", [1, 8]), [c_next], md=meta("aten__view", LOOP_FILE, 10))
    ys_next = body.op("scatter", ys[1], [ys, index, update],
                      "update_window_dims={1}, inserted_window_dims={0}, "
                      f"scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, to_apply={combiner}",
                      meta("aten__index_copy", LOOP_FILE, 10))
    one = prog.constant(body, "s64", "1")
    i_next = body.op("add", "s64[]", [i, one], md=meta("aten__add", LOOP_FILE, 11))
    state_type = "(" + ", ".join(state) + ")"
    body.op("tuple", state_type, [i_next, c_next, xs, ys_next], root=True)
    body_ref = prog.computation("bodyctx", body, [bp], state_type)
    e = prog.e
    carry = prog.param("f32", [8], 14)
    xs_in = prog.param("f32", [5, 8], 14)
    zero = prog.constant(e, "s64", "0")
    md = meta("aten__zeros", LOOP_FILE, 13)
    ys0 = e.op("broadcast", ty("f32", [5, 8]), [prog.constant(e, "f32", "0", md)],
               "dimensions={}", md)
    init = e.op("tuple", state_type, [zero, carry, xs_in, ys0])
    loop = e.op("while", state_type, [init], f"condition={cond_ref}, body={body_ref}",
                meta("xla___op_WhileLoop", LOOP_FILE, 15))
    outs = [e.op("get-tuple-element", state[j], [loop], f"index={j}") for j in (1, 3)]
    carry_v, xs_v = f32(8), f32(5, 8)
    ys_v = np.zeros_like(xs_v)
    c_v = carry_v
    for t in range(5):
        c_v = c_v * np.float32(0.5) + xs_v[t]
        ys_v[t] = c_v
    return ("torch_xla_while", prog.finish(outs), [carry_v, xs_v], [c_v, ys_v], None)


# --- torch.cond(x.sum() > 0, lambda x, n: x * n.float(), lambda x, n: x - n.float(), (x, n)):
# the predicate computed in the graph, the branches true_computation/false_computation over a
# tuple operand. The stored .false inputs negate x so the other branch runs.
COND_FILE = "/home/user/cond.py"


def cond_case():
    prog = Program()
    add = prog.scalar("AddComputation", "add")
    operand = [ty("f32", [7]), ty("s64", [7])]
    refs = []
    for base, opcode, line in (("truecomputation", "multiply", 4),
                               ("falsecomputation", "subtract", 5)):
        e = Emitter(prog.counter)
        (x, n), p = prog.tuple_param(e, operand)
        nf = e.op("convert", ty("f32", [7]), [n], md=meta("aten___to_copy", COND_FILE, line))
        r = e.op(opcode, x[1], [x, nf],
                 md=meta("aten__mul" if opcode == "multiply" else "aten__sub", COND_FILE, line))
        e.op("tuple", f"({x[1]})", [r], root=True)
        refs.append(prog.computation(base, e, [p], f"({x[1]})"))
    e = prog.e
    x = prog.param("f32", [7], 6)
    n = prog.param("s64", [7], 6)
    md = meta("aten__sum", COND_FILE, 6)
    total = e.op("reduce", "f32[]", [x, prog.constant(e, "f32", "0", md)],
                 f"dimensions={{0}}, to_apply={add}", md)
    md = meta("aten__gt", COND_FILE, 6)
    p = e.op("compare", "pred[]", [total, prog.constant(e, "f32", "0", md)], "direction=GT", md)
    operands = e.op("tuple", "(" + ", ".join(operand) + ")", [x, n])
    branch = e.op("conditional", f"({x[1]})", [p, operands, operands],
                  f"true_computation={refs[0]}, false_computation={refs[1]}",
                  meta("xla___op_cond", COND_FILE, 6))
    out = e.op("get-tuple-element", x[1], [branch], "index=0")
    x_v = f32(7)
    x_v *= np.float32(np.sign(x_v.sum()))  # a positive sum: the true branch
    n_v = rng.randint(-4, 5, size=7).astype(np.int64)
    outs = [x_v * n_v.astype(np.float32)]
    false_inputs = {"arg0": -x_v, "out.0": [(-x_v) - n_v.astype(np.float32)]}
    return ("torch_xla_cond", prog.finish([out]), [x_v, n_v], outs, None), false_inputs


# --- torch.sort(x, dim=1, stable=True) and torch.topk(x, 3): torch_xla's CreateTopK, a sort of
# the values and an s32 iota under XLA's "comparator" (LT / GT over TOTALORDER), sliced to k,
# the indices converted to s64.
SORT_FILE = "/home/user/sort.py"


def sort_case(x_v):
    prog = Program()
    e = prog.e
    x = prog.param("f32", [3, 7], 3)
    outs = []
    for direction, k, op, line in (("LT", 7, "aten__sort", 3), ("GT", 3, "aten__topk", 4)):
        c = Emitter(prog.counter)
        names = [f"p.{j}.{side}.{c.next_id()}" for j in (0, 1) for side in ("lhs", "rhs")]
        types = ["f32[]", "f32[]", "s32[]", "s32[]"]
        for j, (name, t) in enumerate(zip(names, types)):
            c.lines.append(f"  %{name} = {t} parameter({j})")
        c.op("compare", "pred[]", [(names[0], "f32[]"), (names[1], "f32[]")],
             f"direction={direction}, type=TOTALORDER", root=True)
        comparator = prog.computation("comparator", c, list(zip(names, types)), "pred[]")
        md = meta(op, SORT_FILE, line)
        iota = e.op("iota", ty("s32", [3, 7]), [], "iota_dimension=1", md)
        pair = f"({ty('f32', [3, 7])}, {ty('s32', [3, 7])})"
        sort = e.op("sort", pair, [x, iota],
                    f"dimensions={{1}}, is_stable=true, to_apply={comparator}", md)
        for j, dtype in ((0, "f32"), (1, "s32")):
            part = e.op("get-tuple-element", ty(dtype, [3, 7]), [sort], f"index={j}", md)
            part = e.op("slice", ty(dtype, [3, k]), [part], f"slice={{[0:3], [0:{k}]}}", md)
            if dtype == "s32":
                part = e.op("convert", ty("s64", [3, k]), [part], md=md)
            outs.append(part)
    # TOTALORDER: the float's bits as a signed integer, negative ones flipped (-NaN < -inf < ...
    # < -0 < 0 < ... < inf < NaN), as XLA's comparison expander computes it.
    bits = x_v.view(np.int32).astype(np.int64)
    key = np.where(bits < 0, bits ^ 0x7FFFFFFF, bits)
    order = np.argsort(key, axis=1, kind="stable")
    top = np.argsort(-key, axis=1, kind="stable")[:, :3]
    expected = [np.take_along_axis(x_v, order, 1), order.astype(np.int64),
                np.take_along_axis(x_v, top, 1), top.astype(np.int64)]
    return ("torch_xla_sort_topk", prog.finish(outs), [x_v], expected, None)


# --- x.index_add(0, i, v) and y.scatter_add(1, j, src): torch_xla's CreateIndexAlongDim (a
# scatter of rows by s64 indices, index_vector_dim past the indices' rank) and CreateScatter (the
# index tensor completed by iotas into [3,4,2] coordinates, src sliced to the index's shape),
# both combining with ScatterCombiner (add).
SCATTER_FILE = "/home/user/scatter.py"


def scatter_case():
    prog = Program()
    add = prog.scalar("ScatterCombiner", "add", params=("p0", "p1"))
    e = prog.e
    x = prog.param("f32", [11, 7], 3)
    i = prog.param("s64", [8], 3)
    v = prog.param("f32", [8, 7], 3)
    md = meta("aten__index_add", SCATTER_FILE, 3)
    first = e.op("scatter", x[1], [x, i, v],
                 "update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
                 f"index_vector_dim=1, to_apply={add}", md)
    y = prog.param("f32", [3, 6], 4)
    j = prog.param("s64", [3, 4], 4)
    src = prog.param("f32", [3, 5], 4)
    md = meta("aten__scatter_add", SCATTER_FILE, 4)
    rows = e.op("iota", ty("s64", [3, 4, 1]), [], "iota_dimension=0", md)
    cols = e.op("reshape", ty("s64", [3, 4, 1]), [j], md=md)
    coords = e.op("concatenate", ty("s64", [3, 4, 2]), [rows, cols], "dimensions={2}", md)
    updates = e.op("slice", ty("f32", [3, 4]), [src], "slice={[0:3], [0:4]}", md)
    second = e.op("scatter", y[1], [y, coords, updates],
                  "update_window_dims={}, inserted_window_dims={0,1}, "
                  f"scatter_dims_to_operand_dims={{0,1}}, index_vector_dim=2, to_apply={add}", md)
    x_v, v_v = f32(11, 7), f32(8, 7)
    i_v = np.array([4, 0, 4, 10, 2, 7, 2, 4], np.int64)
    y_v, src_v = f32(3, 6), f32(3, 5)
    j_v = rng.randint(0, 6, size=(3, 4)).astype(np.int64)
    out1 = x_v.copy()
    np.add.at(out1, i_v, v_v)
    out2 = y_v.copy()
    for r in range(3):
        for q in range(4):
            out2[r, j_v[r, q]] += src_v[r, q]
    return ("torch_xla_scatter_add", prog.finish([first, second]), [x_v, i_v, v_v, y_v, j_v, src_v],
            [out1, out2], None)


def cases(sort_input):
    """(name, hlo, args, outputs, devices) per program, as generate.case() takes them, and the
    cond's other-branch files (stem suffix -> value)."""
    cond, cond_false = cond_case()
    return (block_cases() + [while_case(), cond, sort_case(sort_input), scatter_case()],
            {"torch_xla_cond.false": cond_false})
