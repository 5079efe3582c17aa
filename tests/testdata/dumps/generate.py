#!/usr/bin/python3
# Writes HLO programs in the exact style of JAX's and PyTorch/XLA's dumps (pre-optimisation and
# compiled) with their inputs and NumPy-computed expected outputs. Run with Debian's
# /usr/bin/python3 (python3-numpy); the output is deterministic.
#
# Files per case NAME: NAME.hlo; NAME.argK.npy (every device's argument K) or NAME.devD.argK.npy;
# NAME.out.npy / NAME.out.J.npy (tuple element J) or NAME.devD.out.npy / NAME.devD.out.J.npy.
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # ../numpy_oracle.py, for this file and its modules
from numpy_oracle import matmul  # noqa: E402

rng = np.random.RandomState(4321)
CASES = []


def case(name, hlo, args, outputs, devices=None):
    CASES.append((name, hlo, args, outputs, devices))


def f32(*shape):
    return rng.uniform(-1.5, 1.5, size=shape).astype(np.float32)


def save(stem, value):
    np.save(os.path.join(HERE, stem + ".npy"), np.array(value, order="C"))


def save_outputs(prefix, outputs):
    if isinstance(outputs, list):
        for j, o in enumerate(outputs):
            save(f"{prefix}.out.{j}", o)
    else:
        save(f"{prefix}.out", outputs)


def write(name, hlo, args, outputs, devices):
    with open(os.path.join(HERE, name + ".hlo"), "w") as f:
        f.write(hlo)
    if devices is None:
        for k, a in enumerate(args):
            save(f"{name}.arg{k}", a)
        save_outputs(name, outputs)
        return
    for d in range(devices):
        for k, a in enumerate(args[d]):
            save(f"{name}.dev{d}.arg{k}", a)
        save_outputs(f"{name}.dev{d}", outputs[d])


def relu(x):
    return np.maximum(x, np.float32(0))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x, gamma, beta, eps=np.float32(1e-5)):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def gelu_tanh(x):
    c = np.float32(np.sqrt(2.0 / np.pi))
    return np.float32(0.5) * x * (np.float32(1) + np.tanh(c * (x + np.float32(0.044715) * x**3)))


# --- MLP, JAX pre-optimisation (`jax.jit(mlp).lower(...).as_text(dialect="hlo")`): no '%',
# operands without shapes, metadata, a `call` for the jitted relu, a reduce region.
def jax_mlp_hlo(compiled_suffix=""):
    meta = 'source_file="/home/user/mlp.py"'
    return f"""HloModule jit_mlp, entry_computation_layout={{(f32[8,16]{{1,0}}, f32[16,32]{{1,0}}, f32[32]{{0}}, f32[32,5]{{1,0}}, f32[5]{{0}})->f32[8,5]{{1,0}}}}

relu.10 {{
  Arg_0.11 = f32[8,32]{{1,0}} parameter(0)
  constant.12 = f32[] constant(0)
  broadcast.13 = f32[8,32]{{1,0}} broadcast(constant.12), dimensions={{}}
  ROOT maximum.14 = f32[8,32]{{1,0}} maximum(Arg_0.11, broadcast.13), metadata={{op_name="jit(mlp)/jit(main)/jit(relu)/max" {meta} source_line=6}}
}}

region_0.20 {{
  Arg_0.21 = f32[] parameter(0)
  Arg_1.22 = f32[] parameter(1)
  ROOT maximum.23 = f32[] maximum(Arg_0.21, Arg_1.22), metadata={{op_name="jit(mlp)/jit(main)/reduce_max[axes=(1,)]" {meta} source_line=12}}
}}

region_1.30 {{
  Arg_0.31 = f32[] parameter(0)
  Arg_1.32 = f32[] parameter(1)
  ROOT add.33 = f32[] add(Arg_0.31, Arg_1.32), metadata={{op_name="jit(mlp)/jit(main)/reduce_sum[axes=(1,)]" {meta} source_line=13}}
}}

ENTRY main.50 {{
  Arg_0.1 = f32[8,16]{{1,0}} parameter(0), metadata={{op_name="x"}}
  Arg_1.2 = f32[16,32]{{1,0}} parameter(1), metadata={{op_name="params[\\'w1\\']"}}
  Arg_2.3 = f32[32]{{0}} parameter(2), metadata={{op_name="params[\\'b1\\']"}}
  Arg_3.4 = f32[32,5]{{1,0}} parameter(3), metadata={{op_name="params[\\'w2\\']"}}
  Arg_4.5 = f32[5]{{0}} parameter(4), metadata={{op_name="params[\\'b2\\']"}}
  dot.6 = f32[8,32]{{1,0}} dot(Arg_0.1, Arg_1.2), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, frontend_attributes={{grad_x="false",grad_y="false"}}, metadata={{op_name="jit(mlp)/jit(main)/dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32]" {meta} source_line=10}}
  reshape.7 = f32[1,32]{{1,0}} reshape(Arg_2.3), metadata={{op_name="jit(mlp)/jit(main)/add" {meta} source_line=10}}
  broadcast.8 = f32[1,32]{{1,0}} broadcast(reshape.7), dimensions={{0,1}}, metadata={{op_name="jit(mlp)/jit(main)/add" {meta} source_line=10}}
  reshape.9 = f32[32]{{0}} reshape(broadcast.8), metadata={{op_name="jit(mlp)/jit(main)/add" {meta} source_line=10}}
  broadcast.15 = f32[8,32]{{1,0}} broadcast(reshape.9), dimensions={{1}}, metadata={{op_name="jit(mlp)/jit(main)/add" {meta} source_line=10}}
  add.16 = f32[8,32]{{1,0}} add(dot.6, broadcast.15), metadata={{op_name="jit(mlp)/jit(main)/add" {meta} source_line=10}}
  call.17 = f32[8,32]{{1,0}} call(add.16), to_apply=relu.10
  dot.18 = f32[8,5]{{1,0}} dot(call.17, Arg_3.4), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, metadata={{op_name="jit(mlp)/jit(main)/dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32]" {meta} source_line=11}}
  broadcast.19 = f32[8,5]{{1,0}} broadcast(Arg_4.5), dimensions={{1}}, metadata={{op_name="jit(mlp)/jit(main)/add" {meta} source_line=11}}
  add.24 = f32[8,5]{{1,0}} add(dot.18, broadcast.19), metadata={{op_name="jit(mlp)/jit(main)/add" {meta} source_line=11}}
  constant.25 = f32[] constant(-inf)
  reduce.26 = f32[8]{{0}} reduce(add.24, constant.25), dimensions={{1}}, to_apply=region_0.20, metadata={{op_name="jit(mlp)/jit(main)/reduce_max[axes=(1,)]" {meta} source_line=12}}
  broadcast.27 = f32[8,5]{{1,0}} broadcast(reduce.26), dimensions={{0}}, metadata={{op_name="jit(mlp)/jit(main)/sub" {meta} source_line=12}}
  subtract.28 = f32[8,5]{{1,0}} subtract(add.24, broadcast.27), metadata={{op_name="jit(mlp)/jit(main)/sub" {meta} source_line=12}}
  exponential.29 = f32[8,5]{{1,0}} exponential(subtract.28), metadata={{op_name="jit(mlp)/jit(main)/exp" {meta} source_line=13}}
  constant.34 = f32[] constant(0)
  reduce.35 = f32[8]{{0}} reduce(exponential.29, constant.34), dimensions={{1}}, to_apply=region_1.30, metadata={{op_name="jit(mlp)/jit(main)/reduce_sum[axes=(1,)]" {meta} source_line=13}}
  broadcast.36 = f32[8,5]{{1,0}} broadcast(reduce.35), dimensions={{0}}, metadata={{op_name="jit(mlp)/jit(main)/div" {meta} source_line=13}}
  ROOT divide.37 = f32[8,5]{{1,0}} divide(exponential.29, broadcast.36), metadata={{op_name="jit(mlp)/jit(main)/div" {meta} source_line=13}}
}}
"""


x, w1, b1, w2, b2 = f32(8, 16), f32(16, 32), f32(32), f32(32, 5), f32(5)
mlp_out = softmax(matmul(relu(matmul(x, w1) + b1), w2) + b2)
case("jax_mlp_preopt", jax_mlp_hlo(), [x, w1, b1, w2, b2], mlp_out)

# --- The same MLP compiled for a TPU-like backend (`.compile().as_text()`): '%' names, typed
# operands, scheduled, loop and output fusions, a two-output fusion read through
# get-tuple-element, tiled layouts with memory spaces, bitcasts that are reshapes, a copy that
# only changes the layout, and backend_config in both forms.
JAX_MLP_COMPILED = """HloModule jit_mlp, is_scheduled=true, entry_computation_layout={(f32[8,16]{1,0:T(8,128)}, f32[16,32]{1,0:T(8,128)}, f32[32]{0:T(256)}, f32[32,5]{1,0:T(8,128)}, f32[5]{0:T(256)})->f32[8,5]{1,0:T(8,128)}}, allow_spmd_sharding_propagation_to_output={true}

%fused_computation (param_0: f32[8,16], param_1: f32[16,32], param_2: f32[32]) -> f32[8,32] {
  %param_0 = f32[8,16]{1,0:T(8,128)} parameter(0)
  %param_1 = f32[16,32]{1,0:T(8,128)} parameter(1)
  %convolution.1 = f32[8,32]{1,0:T(8,128)} dot(f32[8,16]{1,0:T(8,128)} %param_0, f32[16,32]{1,0:T(8,128)} %param_1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(mlp)/jit(main)/dot_general" source_file="/home/user/mlp.py" source_line=10}
  %param_2 = f32[32]{0:T(256)} parameter(2)
  %broadcast.2 = f32[8,32]{1,0:T(8,128)} broadcast(f32[32]{0:T(256)} %param_2), dimensions={1}
  %add.1 = f32[8,32]{1,0:T(8,128)} add(f32[8,32]{1,0:T(8,128)} %convolution.1, f32[8,32]{1,0:T(8,128)} %broadcast.2)
  %constant.1 = f32[]{:T(128)} constant(0)
  %broadcast.3 = f32[8,32]{1,0:T(8,128)} broadcast(f32[]{:T(128)} %constant.1), dimensions={}
  ROOT %maximum.1 = f32[8,32]{1,0:T(8,128)} maximum(f32[8,32]{1,0:T(8,128)} %add.1, f32[8,32]{1,0:T(8,128)} %broadcast.3), metadata={op_name="jit(mlp)/jit(main)/jit(relu)/max" source_file="/home/user/mlp.py" source_line=6}
}

%fused_computation.1 (param_0.1: f32[8,32], param_1.1: f32[32,5], param_2.1: f32[5]) -> f32[8,5] {
  %param_0.1 = f32[8,32]{1,0:T(8,128)} parameter(0)
  %param_1.1 = f32[32,5]{1,0:T(8,128)} parameter(1)
  %convolution.2 = f32[8,5]{1,0:T(8,128)} dot(f32[8,32]{1,0:T(8,128)} %param_0.1, f32[32,5]{1,0:T(8,128)} %param_1.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %param_2.1 = f32[5]{0:T(256)} parameter(2)
  %broadcast.4 = f32[8,5]{1,0:T(8,128)} broadcast(f32[5]{0:T(256)} %param_2.1), dimensions={1}
  ROOT %add.2 = f32[8,5]{1,0:T(8,128)} add(f32[8,5]{1,0:T(8,128)} %convolution.2, f32[8,5]{1,0:T(8,128)} %broadcast.4)
}

%region_0.20 (Arg_0.21: f32[], Arg_1.22: f32[]) -> f32[] {
  %Arg_0.21 = f32[]{:T(128)} parameter(0)
  %Arg_1.22 = f32[]{:T(128)} parameter(1)
  ROOT %maximum.23 = f32[]{:T(128)} maximum(f32[]{:T(128)} %Arg_0.21, f32[]{:T(128)} %Arg_1.22)
}

%region_1.30 (Arg_0.31: f32[], Arg_1.32: f32[]) -> f32[] {
  %Arg_0.31 = f32[]{:T(128)} parameter(0)
  %Arg_1.32 = f32[]{:T(128)} parameter(1)
  ROOT %add.33 = f32[]{:T(128)} add(f32[]{:T(128)} %Arg_0.31, f32[]{:T(128)} %Arg_1.32)
}

%fused_computation.2 (param_0.2: f32[8,5]) -> (f32[8], f32[8,5]) {
  %param_0.2 = f32[8,5]{1,0:T(8,128)} parameter(0)
  %constant.2 = f32[]{:T(128)} constant(-inf)
  %reduce.1 = f32[8]{0:T(256)} reduce(f32[8,5]{1,0:T(8,128)} %param_0.2, f32[]{:T(128)} %constant.2), dimensions={1}, to_apply=%region_0.20
  %broadcast.5 = f32[8,5]{1,0:T(8,128)} broadcast(f32[8]{0:T(256)} %reduce.1), dimensions={0}
  %subtract.1 = f32[8,5]{1,0:T(8,128)} subtract(f32[8,5]{1,0:T(8,128)} %param_0.2, f32[8,5]{1,0:T(8,128)} %broadcast.5)
  %exponential.1 = f32[8,5]{1,0:T(8,128)} exponential(f32[8,5]{1,0:T(8,128)} %subtract.1)
  %constant.3 = f32[]{:T(128)} constant(0)
  %reduce.2 = f32[8]{0:T(256)} reduce(f32[8,5]{1,0:T(8,128)} %exponential.1, f32[]{:T(128)} %constant.3), dimensions={1}, to_apply=%region_1.30
  ROOT %tuple = (f32[8]{0:T(256)}, f32[8,5]{1,0:T(8,128)}) tuple(f32[8]{0:T(256)} %reduce.2, f32[8,5]{1,0:T(8,128)} %exponential.1)
}

%fused_computation.3 (param_0.3: f32[8,5], param_1.3: f32[8]) -> f32[8,5] {
  %param_0.3 = f32[8,5]{1,0:T(8,128)} parameter(0)
  %param_1.3 = f32[8]{0:T(256)} parameter(1)
  %broadcast.6 = f32[8,5]{1,0:T(8,128)} broadcast(f32[8]{0:T(256)} %param_1.3), dimensions={0}
  ROOT %divide.1 = f32[8,5]{1,0:T(8,128)} divide(f32[8,5]{1,0:T(8,128)} %param_0.3, f32[8,5]{1,0:T(8,128)} %broadcast.6)
}

ENTRY %main.50 (Arg_0.1: f32[8,16], Arg_1.2: f32[16,32], Arg_2.3: f32[32], Arg_3.4: f32[32,5], Arg_4.5: f32[5]) -> f32[8,5] {
  %Arg_0.1 = f32[8,16]{1,0:T(8,128)} parameter(0), metadata={op_name="x"}
  %Arg_1.2 = f32[16,32]{1,0:T(8,128)} parameter(1), metadata={op_name="params[\\'w1\\']"}
  %Arg_2.3 = f32[32]{0:T(256)} parameter(2), metadata={op_name="params[\\'b1\\']"}
  %Arg_3.4 = f32[32,5]{1,0:T(8,128)} parameter(3), metadata={op_name="params[\\'w2\\']"}
  %Arg_4.5 = f32[5]{0:T(256)} parameter(4), metadata={op_name="params[\\'b2\\']"}
  %copy = f32[16,32]{0,1:T(8,128)} copy(f32[16,32]{1,0:T(8,128)} %Arg_1.2)
  %fusion = f32[8,32]{1,0:T(8,128)S(1)} fusion(f32[8,16]{1,0:T(8,128)} %Arg_0.1, f32[16,32]{0,1:T(8,128)} %copy, f32[32]{0:T(256)} %Arg_2.3), kind=kOutput, calls=%fused_computation, metadata={op_name="jit(mlp)/jit(main)/dot_general" source_file="/home/user/mlp.py" source_line=10}, backend_config={"flag_configs":[],"scoped_memory_configs":[],"used_scoped_memory_configs":[]}
  %fusion.1 = f32[8,5]{1,0:T(8,128)} fusion(f32[8,32]{1,0:T(8,128)S(1)} %fusion, f32[32,5]{1,0:T(8,128)} %Arg_3.4, f32[5]{0:T(256)} %Arg_4.5), kind=kOutput, calls=%fused_computation.1, backend_config="{\\"flag_configs\\":[]}"
  %fusion.2 = (f32[8]{0:T(256)}, f32[8,5]{1,0:T(8,128)}) fusion(f32[8,5]{1,0:T(8,128)} %fusion.1), kind=kLoop, calls=%fused_computation.2
  %get-tuple-element = f32[8]{0:T(256)} get-tuple-element((f32[8]{0:T(256)}, f32[8,5]{1,0:T(8,128)}) %fusion.2), index=0
  %get-tuple-element.1 = f32[8,5]{1,0:T(8,128)} get-tuple-element((f32[8]{0:T(256)}, f32[8,5]{1,0:T(8,128)}) %fusion.2), index=1
  ROOT %fusion.3 = f32[8,5]{1,0:T(8,128)} fusion(f32[8,5]{1,0:T(8,128)} %get-tuple-element.1, f32[8]{0:T(256)} %get-tuple-element), kind=kLoop, calls=%fused_computation.3
}
"""
case("jax_mlp_compiled", JAX_MLP_COMPILED, [x, w1, b1, w2, b2], mlp_out)

# --- The MLP as PyTorch/XLA dumps it (XLA_SAVE_TENSORS_FMT=hlo): '%' names, typed operands,
# nn.Linear's transposed weight, a tuple root, op_type metadata.
TORCH_MLP = """HloModule IrToHlo.24, entry_computation_layout={(f32[5]{0}, f32[5,32]{1,0}, f32[32]{0}, f32[32,16]{1,0}, f32[8,16]{1,0})->(f32[8,5]{1,0})}

ENTRY %IrToHlo.24 (p0.1: f32[5], p1.2: f32[5,32], p2.3: f32[32], p3.4: f32[32,16], p4.5: f32[8,16]) -> (f32[8,5]) {
  %p4.5 = f32[8,16]{1,0} parameter(4), metadata={op_type="xla__device_data" op_name="xla__device_data" source_file="/usr/lib/python3/dist-packages/torch/nn/modules/linear.py" source_line=125}
  %p3.4 = f32[32,16]{1,0} parameter(3), metadata={op_type="xla__device_data" op_name="xla__device_data"}
  %transpose.6 = f32[16,32]{0,1} transpose(f32[32,16]{1,0} %p3.4), dimensions={1,0}, metadata={op_type="aten__permute" op_name="aten__permute" source_file="/usr/lib/python3/dist-packages/torch/nn/modules/linear.py" source_line=125}
  %dot.7 = f32[8,32]{1,0} dot(f32[8,16]{1,0} %p4.5, f32[16,32]{0,1} %transpose.6), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_type="aten__addmm" op_name="aten__addmm"}
  %p2.3 = f32[32]{0} parameter(2), metadata={op_type="xla__device_data" op_name="xla__device_data"}
  %broadcast.8 = f32[8,32]{1,0} broadcast(f32[32]{0} %p2.3), dimensions={1}, metadata={op_type="aten__addmm" op_name="aten__addmm"}
  %add.9 = f32[8,32]{1,0} add(f32[8,32]{1,0} %dot.7, f32[8,32]{1,0} %broadcast.8), metadata={op_type="aten__addmm" op_name="aten__addmm"}
  %constant.10 = f32[] constant(0), metadata={op_type="aten__relu" op_name="aten__relu"}
  %broadcast.11 = f32[8,32]{1,0} broadcast(f32[] %constant.10), dimensions={}, metadata={op_type="aten__relu" op_name="aten__relu"}
  %maximum.12 = f32[8,32]{1,0} maximum(f32[8,32]{1,0} %add.9, f32[8,32]{1,0} %broadcast.11), metadata={op_type="aten__relu" op_name="aten__relu"}
  %p1.2 = f32[5,32]{1,0} parameter(1), metadata={op_type="xla__device_data" op_name="xla__device_data"}
  %transpose.13 = f32[32,5]{0,1} transpose(f32[5,32]{1,0} %p1.2), dimensions={1,0}, metadata={op_type="aten__permute" op_name="aten__permute"}
  %dot.14 = f32[8,5]{1,0} dot(f32[8,32]{1,0} %maximum.12, f32[32,5]{0,1} %transpose.13), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_type="aten__addmm" op_name="aten__addmm"}
  %p0.1 = f32[5]{0} parameter(0), metadata={op_type="xla__device_data" op_name="xla__device_data"}
  %broadcast.15 = f32[8,5]{1,0} broadcast(f32[5]{0} %p0.1), dimensions={1}, metadata={op_type="aten__addmm" op_name="aten__addmm"}
  %add.16 = f32[8,5]{1,0} add(f32[8,5]{1,0} %dot.14, f32[8,5]{1,0} %broadcast.15), metadata={op_type="aten__addmm" op_name="aten__addmm"}
  ROOT %tuple.17 = (f32[8,5]{1,0}) tuple(f32[8,5]{1,0} %add.16)
}
"""
case("torch_xla_mlp", TORCH_MLP, [b2, w2.T.copy(), b1, w1.T.copy(), x], [matmul(relu(matmul(x, w1) + b1), w2) + b2])

# --- A transformer block (pre-LN, 2 heads, tanh GELU), JAX pre-optimisation: calls for the
# jitted layer norm and gelu, batched dots for attention.
S, D, H, HD, F = 5, 8, 2, 4, 12


def block(xx, g1, be1, wqkv, wo, g2, be2, wf1, wf2):
    h = layer_norm(xx, g1, be1)
    qkv = matmul(h, wqkv)  # [S, 3*D]
    q = qkv[:, 0:D].reshape(S, H, HD).transpose(1, 0, 2)
    k = qkv[:, D:2 * D].reshape(S, H, HD).transpose(1, 0, 2)
    v = qkv[:, 2 * D:3 * D].reshape(S, H, HD).transpose(1, 0, 2)
    scores = np.einsum("hqd,hkd->hqk", q, k) * np.float32(0.5)
    p = softmax(scores)
    attn = np.einsum("hqk,hkd->hqd", p, v).transpose(1, 0, 2).reshape(S, D)
    y = xx + matmul(attn, wo)
    z = layer_norm(y, g2, be2)
    return y + matmul(gelu_tanh(matmul(z, wf1)), wf2)


LAYER_NORM = """layer_norm.{n} {{
  Arg_0.{a} = f32[5,8]{{1,0}} parameter(0)
  Arg_1.{b} = f32[8]{{0}} parameter(1)
  Arg_2.{c} = f32[8]{{0}} parameter(2)
  constant.{n}0 = f32[] constant(0)
  reduce.{n}1 = f32[5]{{0}} reduce(Arg_0.{a}, constant.{n}0), dimensions={{1}}, to_apply=region_add.1, metadata={{op_name="jit(block)/jit(main)/jit(layer_norm)/reduce_sum[axes=(1,)]" source_file="/home/user/block.py" source_line=9}}
  constant.{n}2 = f32[] constant(0.125)
  broadcast.{n}3 = f32[5]{{0}} broadcast(constant.{n}2), dimensions={{}}
  multiply.{n}4 = f32[5]{{0}} multiply(reduce.{n}1, broadcast.{n}3)
  broadcast.{n}5 = f32[5,8]{{1,0}} broadcast(multiply.{n}4), dimensions={{0}}
  subtract.{n}6 = f32[5,8]{{1,0}} subtract(Arg_0.{a}, broadcast.{n}5)
  multiply.{n}7 = f32[5,8]{{1,0}} multiply(subtract.{n}6, subtract.{n}6)
  reduce.{n}8 = f32[5]{{0}} reduce(multiply.{n}7, constant.{n}0), dimensions={{1}}, to_apply=region_add.1
  multiply.{n}9 = f32[5]{{0}} multiply(reduce.{n}8, broadcast.{n}3)
  constant.{n}10 = f32[] constant(1e-05)
  broadcast.{n}11 = f32[5]{{0}} broadcast(constant.{n}10), dimensions={{}}
  add.{n}12 = f32[5]{{0}} add(multiply.{n}9, broadcast.{n}11)
  rsqrt.{n}13 = f32[5]{{0}} rsqrt(add.{n}12)
  broadcast.{n}14 = f32[5,8]{{1,0}} broadcast(rsqrt.{n}13), dimensions={{0}}
  multiply.{n}15 = f32[5,8]{{1,0}} multiply(subtract.{n}6, broadcast.{n}14)
  broadcast.{n}16 = f32[5,8]{{1,0}} broadcast(Arg_1.{b}), dimensions={{1}}
  multiply.{n}17 = f32[5,8]{{1,0}} multiply(multiply.{n}15, broadcast.{n}16)
  broadcast.{n}18 = f32[5,8]{{1,0}} broadcast(Arg_2.{c}), dimensions={{1}}
  ROOT add.{n}19 = f32[5,8]{{1,0}} add(multiply.{n}17, broadcast.{n}18)
}}
"""

JAX_BLOCK = """HloModule jit_block, entry_computation_layout={(f32[5,8]{1,0}, f32[8]{0}, f32[8]{0}, f32[8,24]{1,0}, f32[8,8]{1,0}, f32[8]{0}, f32[8]{0}, f32[8,12]{1,0}, f32[12,8]{1,0})->f32[5,8]{1,0}}

region_add.1 {
  Arg_0.2 = f32[] parameter(0)
  Arg_1.3 = f32[] parameter(1)
  ROOT add.4 = f32[] add(Arg_0.2, Arg_1.3)
}

region_max.5 {
  Arg_0.6 = f32[] parameter(0)
  Arg_1.7 = f32[] parameter(1)
  ROOT maximum.8 = f32[] maximum(Arg_0.6, Arg_1.7)
}

""" + LAYER_NORM.format(n=10, a=101, b=102, c=103) + "\n" + LAYER_NORM.format(
    n=20, a=201, b=202, c=203) + """
gelu.30 {
  Arg_0.31 = f32[5,12]{1,0} parameter(0)
  multiply.32 = f32[5,12]{1,0} multiply(Arg_0.31, Arg_0.31)
  multiply.33 = f32[5,12]{1,0} multiply(multiply.32, Arg_0.31)
  constant.34 = f32[] constant(0.044715)
  broadcast.35 = f32[5,12]{1,0} broadcast(constant.34), dimensions={}
  multiply.36 = f32[5,12]{1,0} multiply(broadcast.35, multiply.33)
  add.37 = f32[5,12]{1,0} add(Arg_0.31, multiply.36)
  constant.38 = f32[] constant(0.797884583)
  broadcast.39 = f32[5,12]{1,0} broadcast(constant.38), dimensions={}
  multiply.40 = f32[5,12]{1,0} multiply(broadcast.39, add.37)
  tanh.41 = f32[5,12]{1,0} tanh(multiply.40), metadata={op_name="jit(block)/jit(main)/jit(gelu)/tanh" source_file="/home/user/block.py" source_line=14}
  constant.42 = f32[] constant(1)
  broadcast.43 = f32[5,12]{1,0} broadcast(constant.42), dimensions={}
  add.44 = f32[5,12]{1,0} add(broadcast.43, tanh.41)
  constant.45 = f32[] constant(0.5)
  broadcast.46 = f32[5,12]{1,0} broadcast(constant.45), dimensions={}
  multiply.47 = f32[5,12]{1,0} multiply(broadcast.46, Arg_0.31)
  ROOT multiply.48 = f32[5,12]{1,0} multiply(multiply.47, add.44)
}

ENTRY main.100 {
  Arg_0.1 = f32[5,8]{1,0} parameter(0), metadata={op_name="x"}
  Arg_1.2 = f32[8]{0} parameter(1), metadata={op_name="params[\\'ln1\\'][\\'scale\\']"}
  Arg_2.3 = f32[8]{0} parameter(2), metadata={op_name="params[\\'ln1\\'][\\'bias\\']"}
  Arg_3.4 = f32[8,24]{1,0} parameter(3), metadata={op_name="params[\\'wqkv\\']"}
  Arg_4.5 = f32[8,8]{1,0} parameter(4), metadata={op_name="params[\\'wo\\']"}
  Arg_5.6 = f32[8]{0} parameter(5), metadata={op_name="params[\\'ln2\\'][\\'scale\\']"}
  Arg_6.7 = f32[8]{0} parameter(6), metadata={op_name="params[\\'ln2\\'][\\'bias\\']"}
  Arg_7.8 = f32[8,12]{1,0} parameter(7), metadata={op_name="params[\\'w1\\']"}
  Arg_8.9 = f32[12,8]{1,0} parameter(8), metadata={op_name="params[\\'w2\\']"}
  call.50 = f32[5,8]{1,0} call(Arg_0.1, Arg_1.2, Arg_2.3), to_apply=layer_norm.10
  dot.51 = f32[5,24]{1,0} dot(call.50, Arg_3.4), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(block)/jit(main)/dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32]" source_file="/home/user/block.py" source_line=20}
  slice.52 = f32[5,8]{1,0} slice(dot.51), slice={[0:5], [0:8]}
  reshape.53 = f32[5,2,4]{2,1,0} reshape(slice.52)
  transpose.54 = f32[2,5,4]{2,1,0} transpose(reshape.53), dimensions={1,0,2}
  slice.55 = f32[5,8]{1,0} slice(dot.51), slice={[0:5], [8:16]}
  reshape.56 = f32[5,2,4]{2,1,0} reshape(slice.55)
  transpose.57 = f32[2,5,4]{2,1,0} transpose(reshape.56), dimensions={1,0,2}
  slice.58 = f32[5,8]{1,0} slice(dot.51), slice={[0:5], [16:24]}
  reshape.59 = f32[5,2,4]{2,1,0} reshape(slice.58)
  transpose.60 = f32[2,5,4]{2,1,0} transpose(reshape.59), dimensions={1,0,2}
  dot.61 = f32[2,5,5]{2,1,0} dot(transpose.54, transpose.57), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}, metadata={op_name="jit(block)/jit(main)/dot_general[dimension_numbers=(([2], [2]), ([0], [0])) precision=None preferred_element_type=float32]" source_file="/home/user/block.py" source_line=24}
  constant.62 = f32[] constant(0.5)
  broadcast.63 = f32[2,5,5]{2,1,0} broadcast(constant.62), dimensions={}
  multiply.64 = f32[2,5,5]{2,1,0} multiply(dot.61, broadcast.63)
  constant.65 = f32[] constant(-inf)
  reduce.66 = f32[2,5]{1,0} reduce(multiply.64, constant.65), dimensions={2}, to_apply=region_max.5
  broadcast.67 = f32[2,5,5]{2,1,0} broadcast(reduce.66), dimensions={0,1}
  subtract.68 = f32[2,5,5]{2,1,0} subtract(multiply.64, broadcast.67)
  exponential.69 = f32[2,5,5]{2,1,0} exponential(subtract.68)
  constant.70 = f32[] constant(0)
  reduce.71 = f32[2,5]{1,0} reduce(exponential.69, constant.70), dimensions={2}, to_apply=region_add.1
  broadcast.72 = f32[2,5,5]{2,1,0} broadcast(reduce.71), dimensions={0,1}
  divide.73 = f32[2,5,5]{2,1,0} divide(exponential.69, broadcast.72)
  dot.74 = f32[2,5,4]{2,1,0} dot(divide.73, transpose.60), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  transpose.75 = f32[5,2,4]{2,1,0} transpose(dot.74), dimensions={1,0,2}
  reshape.76 = f32[5,8]{1,0} reshape(transpose.75)
  dot.77 = f32[5,8]{1,0} dot(reshape.76, Arg_4.5), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  add.78 = f32[5,8]{1,0} add(Arg_0.1, dot.77)
  call.79 = f32[5,8]{1,0} call(add.78, Arg_5.6, Arg_6.7), to_apply=layer_norm.20
  dot.80 = f32[5,12]{1,0} dot(call.79, Arg_7.8), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  call.81 = f32[5,12]{1,0} call(dot.80), to_apply=gelu.30
  dot.82 = f32[5,8]{1,0} dot(call.81, Arg_8.9), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT add.83 = f32[5,8]{1,0} add(add.78, dot.82), metadata={op_name="jit(block)/jit(main)/add" source_file="/home/user/block.py" source_line=30}
}
"""
block_args = [f32(S, D), f32(D), f32(D), f32(D, 3 * D) * np.float32(0.5), f32(D, D) * np.float32(0.5),
              f32(D), f32(D), f32(D, F) * np.float32(0.5), f32(F, D) * np.float32(0.5)]
block_out = block(*block_args)
case("jax_transformer_block_preopt", JAX_BLOCK, block_args, block_out)

# --- The block compiled for two devices after SPMD partitioning (GPU-style
# `.compile().as_text()` of a Megatron-sharded jit: one head per device, the MLP's hidden units
# split): scheduled, fusions of every kind, a multi-output fusion, bitcasts that transpose and
# reshape, async all-reduce/all-gather/collective-permute pairs. Device d holds head d, columns
# 6d..6d+5 of w1, rows of wo and w2 to match, and half of the first layer norm's scale and bias.
JAX_BLOCK_SPMD = """HloModule jit_block, is_scheduled=true, entry_computation_layout={(f32[5,8]{1,0}, f32[4]{0}, f32[4]{0}, f32[8,12]{1,0}, f32[4,8]{1,0}, f32[8]{0}, f32[8]{0}, f32[8,6]{1,0}, f32[6,8]{1,0})->(f32[5,1,8]{2,1,0}, f32[4]{0})}, num_partitions=2, frontend_attributes={fingerprint_before_lhs="3e1c9a"}

%add (x.1: f32[], y.1: f32[]) -> f32[] {
  %x.1 = f32[] parameter(0)
  %y.1 = f32[] parameter(1)
  ROOT %add.1 = f32[] add(f32[] %x.1, f32[] %y.1)
}

%max (x.2: f32[], y.2: f32[]) -> f32[] {
  %x.2 = f32[] parameter(0)
  %y.2 = f32[] parameter(1)
  ROOT %maximum.1 = f32[] maximum(f32[] %x.2, f32[] %y.2)
}

%fused_layer_norm (param_0: f32[5,8], param_1: f32[8], param_2: f32[8]) -> f32[5,8] {
  %param_0 = f32[5,8]{1,0} parameter(0)
  %constant_0 = f32[] constant(0)
  %reduce.0 = f32[5]{0} reduce(f32[5,8]{1,0} %param_0, f32[] %constant_0), dimensions={1}, to_apply=%add
  %constant_1 = f32[] constant(0.125)
  %broadcast.0 = f32[5]{0} broadcast(f32[] %constant_1), dimensions={}
  %multiply.0 = f32[5]{0} multiply(f32[5]{0} %reduce.0, f32[5]{0} %broadcast.0)
  %broadcast.1 = f32[5,8]{1,0} broadcast(f32[5]{0} %multiply.0), dimensions={0}
  %subtract.0 = f32[5,8]{1,0} subtract(f32[5,8]{1,0} %param_0, f32[5,8]{1,0} %broadcast.1)
  %multiply.1 = f32[5,8]{1,0} multiply(f32[5,8]{1,0} %subtract.0, f32[5,8]{1,0} %subtract.0)
  %reduce.1 = f32[5]{0} reduce(f32[5,8]{1,0} %multiply.1, f32[] %constant_0), dimensions={1}, to_apply=%add
  %multiply.2 = f32[5]{0} multiply(f32[5]{0} %reduce.1, f32[5]{0} %broadcast.0)
  %constant_2 = f32[] constant(1e-05)
  %broadcast.2 = f32[5]{0} broadcast(f32[] %constant_2), dimensions={}
  %add.0 = f32[5]{0} add(f32[5]{0} %multiply.2, f32[5]{0} %broadcast.2)
  %rsqrt.0 = f32[5]{0} rsqrt(f32[5]{0} %add.0)
  %broadcast.3 = f32[5,8]{1,0} broadcast(f32[5]{0} %rsqrt.0), dimensions={0}
  %multiply.3 = f32[5,8]{1,0} multiply(f32[5,8]{1,0} %subtract.0, f32[5,8]{1,0} %broadcast.3)
  %param_1 = f32[8]{0} parameter(1)
  %broadcast.4 = f32[5,8]{1,0} broadcast(f32[8]{0} %param_1), dimensions={1}
  %multiply.4 = f32[5,8]{1,0} multiply(f32[5,8]{1,0} %multiply.3, f32[5,8]{1,0} %broadcast.4)
  %param_2 = f32[8]{0} parameter(2)
  %broadcast.5 = f32[5,8]{1,0} broadcast(f32[8]{0} %param_2), dimensions={1}
  ROOT %add.2 = f32[5,8]{1,0} add(f32[5,8]{1,0} %multiply.4, f32[5,8]{1,0} %broadcast.5)
}

%fused_scores (param_0.1: f32[5,4], param_1.1: f32[4,5]) -> f32[5,5] {
  %param_0.1 = f32[5,4]{1,0} parameter(0)
  %param_1.1 = f32[4,5]{0,1} parameter(1)
  %dot.0 = f32[5,5]{1,0} dot(f32[5,4]{1,0} %param_0.1, f32[4,5]{0,1} %param_1.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(block)/jit(main)/dot_general" source_file="/home/user/block.py" source_line=24}
  %constant_3 = f32[] constant(0.5)
  %broadcast.6 = f32[5,5]{1,0} broadcast(f32[] %constant_3), dimensions={}
  ROOT %multiply.5 = f32[5,5]{1,0} multiply(f32[5,5]{1,0} %dot.0, f32[5,5]{1,0} %broadcast.6)
}

%fused_softmax (param_0.2: f32[5,5]) -> (f32[5], f32[5,5]) {
  %param_0.2 = f32[5,5]{1,0} parameter(0)
  %constant_4 = f32[] constant(-inf)
  %reduce.2 = f32[5]{0} reduce(f32[5,5]{1,0} %param_0.2, f32[] %constant_4), dimensions={1}, to_apply=%max
  %broadcast.7 = f32[5,5]{1,0} broadcast(f32[5]{0} %reduce.2), dimensions={0}
  %subtract.1 = f32[5,5]{1,0} subtract(f32[5,5]{1,0} %param_0.2, f32[5,5]{1,0} %broadcast.7)
  %exponential.0 = f32[5,5]{1,0} exponential(f32[5,5]{1,0} %subtract.1)
  %constant_5 = f32[] constant(0)
  %reduce.3 = f32[5]{0} reduce(f32[5,5]{1,0} %exponential.0, f32[] %constant_5), dimensions={1}, to_apply=%add
  ROOT %tuple.0 = (f32[5]{0}, f32[5,5]{1,0}) tuple(f32[5]{0} %reduce.3, f32[5,5]{1,0} %exponential.0)
}

%fused_divide (param_0.3: f32[5,5], param_1.3: f32[5]) -> f32[5,5] {
  %param_0.3 = f32[5,5]{1,0} parameter(0)
  %param_1.3 = f32[5]{0} parameter(1)
  %broadcast.8 = f32[5,5]{1,0} broadcast(f32[5]{0} %param_1.3), dimensions={0}
  ROOT %divide.0 = f32[5,5]{1,0} divide(f32[5,5]{1,0} %param_0.3, f32[5,5]{1,0} %broadcast.8)
}

%fused_gelu (param_0.4: f32[5,6]) -> f32[5,6] {
  %param_0.4 = f32[5,6]{1,0} parameter(0)
  %multiply.6 = f32[5,6]{1,0} multiply(f32[5,6]{1,0} %param_0.4, f32[5,6]{1,0} %param_0.4)
  %multiply.7 = f32[5,6]{1,0} multiply(f32[5,6]{1,0} %multiply.6, f32[5,6]{1,0} %param_0.4)
  %constant_6 = f32[] constant(0.044715)
  %broadcast.9 = f32[5,6]{1,0} broadcast(f32[] %constant_6), dimensions={}
  %multiply.8 = f32[5,6]{1,0} multiply(f32[5,6]{1,0} %broadcast.9, f32[5,6]{1,0} %multiply.7)
  %add.3 = f32[5,6]{1,0} add(f32[5,6]{1,0} %param_0.4, f32[5,6]{1,0} %multiply.8)
  %constant_7 = f32[] constant(0.797884583)
  %broadcast.10 = f32[5,6]{1,0} broadcast(f32[] %constant_7), dimensions={}
  %multiply.9 = f32[5,6]{1,0} multiply(f32[5,6]{1,0} %broadcast.10, f32[5,6]{1,0} %add.3)
  %tanh.0 = f32[5,6]{1,0} tanh(f32[5,6]{1,0} %multiply.9)
  %constant_8 = f32[] constant(1)
  %broadcast.11 = f32[5,6]{1,0} broadcast(f32[] %constant_8), dimensions={}
  %add.4 = f32[5,6]{1,0} add(f32[5,6]{1,0} %broadcast.11, f32[5,6]{1,0} %tanh.0)
  %constant_9 = f32[] constant(0.5)
  %broadcast.12 = f32[5,6]{1,0} broadcast(f32[] %constant_9), dimensions={}
  %multiply.10 = f32[5,6]{1,0} multiply(f32[5,6]{1,0} %broadcast.12, f32[5,6]{1,0} %param_0.4)
  ROOT %multiply.11 = f32[5,6]{1,0} multiply(f32[5,6]{1,0} %multiply.10, f32[5,6]{1,0} %add.4)
}

%fused_residual (param_0.5: f32[5,8], param_1.5: f32[5,8]) -> f32[5,8] {
  %param_0.5 = f32[5,8]{1,0} parameter(0)
  %param_1.5 = f32[5,8]{1,0} parameter(1)
  ROOT %add.5 = f32[5,8]{1,0} add(f32[5,8]{1,0} %param_0.5, f32[5,8]{1,0} %param_1.5)
}

ENTRY %main.200 (Arg_0.1: f32[5,8], Arg_1.2: f32[4], Arg_2.3: f32[4], Arg_3.4: f32[8,12], Arg_4.5: f32[4,8], Arg_5.6: f32[8], Arg_6.7: f32[8], Arg_7.8: f32[8,6], Arg_8.9: f32[6,8]) -> (f32[5,1,8], f32[4]) {
  %Arg_1.2 = f32[4]{0} parameter(1), sharding={devices=[2]<=[2]}, metadata={op_name="params[\'ln1\'][\'scale\']"}
  %all-gather-start = (f32[4]{0}, f32[8]{0}) all-gather-start(f32[4]{0} %Arg_1.2), channel_id=1, replica_groups=[1,2]<=[2], dimensions={0}, use_global_device_ids=true, backend_config={"operation_queue_id":"0","wait_on_operation_queues":[],"collective_backend_config":{"is_sync":true,"no_parallel_custom_call":false},"force_earliest_schedule":false}
  %Arg_2.3 = f32[4]{0} parameter(2), sharding={devices=[2]<=[2]}
  %all-gather-start.1 = (f32[4]{0}, f32[8]{0}) all-gather-start(f32[4]{0} %Arg_2.3), channel_id=2, replica_groups=[1,2]<=[2], dimensions={0}, use_global_device_ids=true
  %collective-permute-start = (f32[4]{0}, f32[4]{0}, u32[], u32[]) collective-permute-start(f32[4]{0} %Arg_1.2), channel_id=3, source_target_pairs={{0,1},{1,0}}, backend_config={"operation_queue_id":"0","wait_on_operation_queues":[]}
  %all-gather-done = f32[8]{0} all-gather-done((f32[4]{0}, f32[8]{0}) %all-gather-start)
  %all-gather-done.1 = f32[8]{0} all-gather-done((f32[4]{0}, f32[8]{0}) %all-gather-start.1)
  %Arg_0.1 = f32[5,8]{1,0} parameter(0), sharding={replicated}, metadata={op_name="x"}
  %fusion = f32[5,8]{1,0} fusion(f32[5,8]{1,0} %Arg_0.1, f32[8]{0} %all-gather-done, f32[8]{0} %all-gather-done.1), kind=kInput, calls=%fused_layer_norm
  %Arg_3.4 = f32[8,12]{1,0} parameter(3), sharding={devices=[1,2]<=[2]}
  %dot.1 = f32[5,12]{1,0} dot(f32[5,8]{1,0} %fusion, f32[8,12]{1,0} %Arg_3.4), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %slice.0 = f32[5,4]{1,0} slice(f32[5,12]{1,0} %dot.1), slice={[0:5], [0:4]}
  %slice.1 = f32[5,4]{1,0} slice(f32[5,12]{1,0} %dot.1), slice={[0:5], [4:8]}
  %bitcast.0 = f32[4,5]{0,1} bitcast(f32[5,4]{1,0} %slice.1)
  %fusion.1 = f32[5,5]{1,0} fusion(f32[5,4]{1,0} %slice.0, f32[4,5]{0,1} %bitcast.0), kind=kOutput, calls=%fused_scores
  %fusion.2 = (f32[5]{0}, f32[5,5]{1,0}) fusion(f32[5,5]{1,0} %fusion.1), kind=kInput, calls=%fused_softmax
  %get-tuple-element.0 = f32[5]{0} get-tuple-element((f32[5]{0}, f32[5,5]{1,0}) %fusion.2), index=0
  %get-tuple-element.1 = f32[5,5]{1,0} get-tuple-element((f32[5]{0}, f32[5,5]{1,0}) %fusion.2), index=1
  %fusion.3 = f32[5,5]{1,0} fusion(f32[5,5]{1,0} %get-tuple-element.1, f32[5]{0} %get-tuple-element.0), kind=kLoop, calls=%fused_divide
  %slice.2 = f32[5,4]{1,0} slice(f32[5,12]{1,0} %dot.1), slice={[0:5], [8:12]}
  %dot.2 = f32[5,4]{1,0} dot(f32[5,5]{1,0} %fusion.3, f32[5,4]{1,0} %slice.2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %Arg_4.5 = f32[4,8]{1,0} parameter(4), sharding={devices=[2,1]<=[2]}
  %dot.3 = f32[5,8]{1,0} dot(f32[5,4]{1,0} %dot.2, f32[4,8]{1,0} %Arg_4.5), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %all-reduce-start = f32[5,8]{1,0} all-reduce-start(f32[5,8]{1,0} %dot.3), channel_id=4, replica_groups=[1,2]<=[2], use_global_device_ids=true, to_apply=%add, backend_config={"operation_queue_id":"0","wait_on_operation_queues":[],"collective_backend_config":{"is_sync":true}}
  %all-reduce-done = f32[5,8]{1,0} all-reduce-done(f32[5,8]{1,0} %all-reduce-start)
  %fusion.4 = f32[5,8]{1,0} fusion(f32[5,8]{1,0} %Arg_0.1, f32[5,8]{1,0} %all-reduce-done), kind=kLoop, calls=%fused_residual
  %Arg_5.6 = f32[8]{0} parameter(5), sharding={replicated}
  %Arg_6.7 = f32[8]{0} parameter(6), sharding={replicated}
  %fusion.5 = f32[5,8]{1,0} fusion(f32[5,8]{1,0} %fusion.4, f32[8]{0} %Arg_5.6, f32[8]{0} %Arg_6.7), kind=kInput, calls=%fused_layer_norm
  %Arg_7.8 = f32[8,6]{1,0} parameter(7), sharding={devices=[1,2]<=[2]}
  %dot.4 = f32[5,6]{1,0} dot(f32[5,8]{1,0} %fusion.5, f32[8,6]{1,0} %Arg_7.8), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %fusion.6 = f32[5,6]{1,0} fusion(f32[5,6]{1,0} %dot.4), kind=kLoop, calls=%fused_gelu
  %Arg_8.9 = f32[6,8]{1,0} parameter(8), sharding={devices=[2,1]<=[2]}
  %dot.5 = f32[5,8]{1,0} dot(f32[5,6]{1,0} %fusion.6, f32[6,8]{1,0} %Arg_8.9), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %all-reduce-start.1 = f32[5,8]{1,0} all-reduce-start(f32[5,8]{1,0} %dot.5), channel_id=5, replica_groups=[1,2]<=[2], use_global_device_ids=true, to_apply=%add
  %all-reduce-done.1 = f32[5,8]{1,0} all-reduce-done(f32[5,8]{1,0} %all-reduce-start.1)
  %fusion.7 = f32[5,8]{1,0} fusion(f32[5,8]{1,0} %fusion.4, f32[5,8]{1,0} %all-reduce-done.1), kind=kLoop, calls=%fused_residual
  %bitcast.1 = f32[5,1,8]{2,1,0} bitcast(f32[5,8]{1,0} %fusion.7)
  %collective-permute-done = f32[4]{0} collective-permute-done((f32[4]{0}, f32[4]{0}, u32[], u32[]) %collective-permute-start)
  ROOT %tuple = (f32[5,1,8]{2,1,0}, f32[4]{0}) tuple(f32[5,1,8]{2,1,0} %bitcast.1, f32[4]{0} %collective-permute-done)
}
"""
xx, g1, be1, wqkv, wo, g2, be2, wf1, wf2 = block_args
spmd_args, spmd_outs = [], []
full_out = block(*block_args).reshape(S, 1, D)
for d in range(2):
    heads = np.concatenate([wqkv[:, HD * d:HD * (d + 1)], wqkv[:, D + HD * d:D + HD * (d + 1)],
                            wqkv[:, 2 * D + HD * d:2 * D + HD * (d + 1)]], axis=1)
    spmd_args.append([xx, g1[4 * d:4 * d + 4], be1[4 * d:4 * d + 4], heads, wo[HD * d:HD * (d + 1)],
                      g2, be2, wf1[:, 6 * d:6 * d + 6], wf2[6 * d:6 * d + 6]])
    spmd_outs.append([full_out, g1[4 * (1 - d):4 * (1 - d) + 4]])
case("jax_transformer_block_spmd_compiled", JAX_BLOCK_SPMD, spmd_args, spmd_outs, devices=2)

# --- An embedding lookup feeding the block: JAX's pre-optimisation dump of
# jit(lambda table, ids, *p: block(table[ids], *p)): negative ids wrapped by a select, a gather of
# one row per id, and the jitted block as a call.
V = 11
JAX_EMBED_BLOCK = JAX_BLOCK.replace(
    "HloModule jit_block, entry_computation_layout={(f32[5,8]{1,0}, ",
    "HloModule jit_model, entry_computation_layout={(f32[11,8]{1,0}, s32[5]{0}, ").replace(
    "ENTRY main.100 {", "block.100 {") + """
ENTRY main.140 {
  Arg_0.111 = f32[11,8]{1,0} parameter(0), metadata={op_name="params[\\'embed\\']"}
  Arg_1.112 = s32[5]{0} parameter(1), metadata={op_name="ids"}
  Arg_2.113 = f32[8]{0} parameter(2)
  Arg_3.114 = f32[8]{0} parameter(3)
  Arg_4.115 = f32[8,24]{1,0} parameter(4)
  Arg_5.116 = f32[8,8]{1,0} parameter(5)
  Arg_6.117 = f32[8]{0} parameter(6)
  Arg_7.118 = f32[8]{0} parameter(7)
  Arg_8.119 = f32[8,12]{1,0} parameter(8)
  Arg_9.120 = f32[12,8]{1,0} parameter(9)
  constant.121 = s32[] constant(0)
  broadcast.122 = s32[5]{0} broadcast(constant.121), dimensions={}
  compare.123 = pred[5]{0} compare(Arg_1.112, broadcast.122), direction=LT, metadata={op_name="jit(model)/jit(main)/lt"}
  constant.124 = s32[] constant(11)
  broadcast.125 = s32[5]{0} broadcast(constant.124), dimensions={}
  add.126 = s32[5]{0} add(Arg_1.112, broadcast.125)
  select.127 = s32[5]{0} select(compare.123, add.126, Arg_1.112)
  reshape.128 = s32[5,1]{1,0} reshape(select.127)
  gather.129 = f32[5,8]{1,0} gather(Arg_0.111, reshape.128), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,8}, metadata={op_name="jit(model)/jit(main)/gather" source_file="/home/user/block.py" source_line=34}
  ROOT call.130 = f32[5,8]{1,0} call(gather.129, Arg_2.113, Arg_3.114, Arg_4.115, Arg_5.116, Arg_6.117, Arg_7.118, Arg_8.119, Arg_9.120), to_apply=block.100
}
"""
embed_table = f32(V, D)
embed_ids = np.array([3, -1, 10, 0, -11], np.int32)
embed_args = [embed_table, embed_ids] + block_args[1:]
embed_out = block(embed_table[embed_ids], *block_args[1:])
case("jax_embed_block_preopt", JAX_EMBED_BLOCK, embed_args, embed_out)

# Compiled-style scan, cond, argsort and scatter-add (compiled_control_flow.py beside this file).
import compiled_control_flow  # noqa: E402

for c in compiled_control_flow.cases():
    case(*c)

# lax.top_k as newer XLA's topk instruction and older XLA's custom-call "TopK" (jax_top_k.py).
import jax_top_k  # noqa: E402

for c in jax_top_k.cases():
    case(*c)

# PyTorch/XLA's embedding-fed block (also as a 2x2 SPMD dump), while, cond, argsort and index_add_
# (torch_xla_programs.py beside this file).
import torch_xla_programs  # noqa: E402

torch_cases, torch_variants = torch_xla_programs.cases(
    np.load(os.path.join(os.path.dirname(HERE), "sort_argsort.arg0.npy")))
for c in torch_cases:
    case(*c)
for prefix, files in torch_variants.items():
    for suffix, value in files.items():
        if isinstance(value, list):
            save_outputs(prefix, value)
        else:
            save(f"{prefix}.{suffix}", value)

for c in CASES:
    write(*c)
