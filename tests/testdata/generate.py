#!/usr/bin/python3
# Writes the HLO test programs of tests/testdata and their inputs and expected outputs, computed
# independently with NumPy. Run with Debian's /usr/bin/python3 (python3-numpy); output is
# deterministic, so re-running it changes nothing unless a case changes (float32 products go
# through numpy_oracle.matmul, not the CPU-dependent BLAS of `@`, and log1p, expm1 and power
# through numpy_oracle.in_float64, not NumPy's CPU-dependent float32 SIMD code;
# check_generated.py checks, with and without AVX-512).
#
# Files per case NAME: NAME.hlo; NAME.argK.npy (every device's argument K) or NAME.devD.argK.npy
# (device D's); NAME.out.npy / NAME.out.J.npy (tuple element J) or NAME.devD.out.npy.
import math
import os

import numpy as np

from numpy_oracle import in_float64, matmul

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.RandomState(1234)
CASES = []

ADD_F32 = """%add.f32 (lhs: f32[], rhs: f32[]) -> f32[] {
  %lhs = f32[] parameter(0)
  %rhs = f32[] parameter(1)
  ROOT %sum = f32[] add(f32[] %lhs, f32[] %rhs)
}
"""
MAX_F32 = """%max.f32 (lhs: f32[], rhs: f32[]) -> f32[] {
  %lhs = f32[] parameter(0)
  %rhs = f32[] parameter(1)
  ROOT %maximum = f32[] maximum(f32[] %lhs, f32[] %rhs)
}
"""


def case(name, hlo, args, outputs, devices=None):
    """args: list of arrays, or per-device list of lists when devices is set; outputs likewise
    (a tuple output is a list of arrays)."""
    CASES.append((name, hlo, args, outputs, devices))


def f32(*shape):
    return rng.uniform(-2, 2, size=shape).astype(np.float32)


def write(name, hlo, args, outputs, devices):
    with open(os.path.join(HERE, name + ".hlo"), "w") as f:
        f.write(hlo)
    def save(stem, value):
        np.save(os.path.join(HERE, stem + ".npy"), np.array(value, order="C"))
    if devices is None:
        for k, a in enumerate(args):
            save(f"{name}.arg{k}", a)
        if isinstance(outputs, list):
            for j, o in enumerate(outputs):
                save(f"{name}.out.{j}", o)
        else:
            save(f"{name}.out", outputs)
        return
    for d in range(devices):
        for k, a in enumerate(args[d]):
            save(f"{name}.dev{d}.arg{k}", a)
        save(f"{name}.dev{d}.out", outputs[d])


# --- elementwise -----------------------------------------------------------------------------
x, y = f32(4, 8), f32(4, 8)
case("elementwise_chain", """HloModule elementwise_chain, entry_computation_layout={(f32[4,8]{1,0}, f32[4,8]{1,0})->f32[4,8]{1,0}}

ENTRY %main.6 (Arg_0.1: f32[4,8], Arg_1.2: f32[4,8]) -> f32[4,8] {
  %Arg_0.1 = f32[4,8]{1,0} parameter(0), metadata={op_name="x"}
  %Arg_1.2 = f32[4,8]{1,0} parameter(1), metadata={op_name="y"}
  %add.3 = f32[4,8]{1,0} add(f32[4,8]{1,0} %Arg_0.1, f32[4,8]{1,0} %Arg_1.2), metadata={op_type="add" op_name="jit(f)/add" source_file="f.py" source_line=3}
  %multiply.4 = f32[4,8]{1,0} multiply(f32[4,8]{1,0} %add.3, f32[4,8]{1,0} %Arg_0.1)
  %negate.5 = f32[4,8]{1,0} negate(f32[4,8]{1,0} %multiply.4)
  ROOT %exponential.6 = f32[4,8]{1,0} exponential(f32[4,8]{1,0} %negate.5)
}
""", [x, y], np.exp(-((x + y) * x)))

x = f32(8)
y = f32(4, 8)
case("broadcast_add", """HloModule broadcast_add

ENTRY %main (p0: f32[8], p1: f32[4,8]) -> f32[4,8] {
  %p0 = f32[8]{0} parameter(0)
  %p1 = f32[4,8]{1,0} parameter(1)
  %broadcast.1 = f32[4,8]{1,0} broadcast(f32[8]{0} %p0), dimensions={1}
  ROOT %add.2 = f32[4,8]{1,0} add(f32[4,8]{1,0} %broadcast.1, f32[4,8]{1,0} %p1)
}
""", [x, y], x[None, :] + y)

x = f32(3, 5)
case("unary_math", """HloModule unary_math

ENTRY %main (p0: f32[3,5]) -> (f32[3,5], f32[3,5], f32[3,5], f32[3,5], f32[3,5], /*index=5*/f32[3,5], f32[3,5], f32[3,5], f32[3,5], f32[3,5], /*index=10*/f32[3,5], f32[3,5], f32[3,5], f32[3,5]) {
  %p0 = f32[3,5]{1,0} parameter(0)
  %abs = f32[3,5]{1,0} abs(f32[3,5]{1,0} %p0)
  %sqrt = f32[3,5]{1,0} sqrt(f32[3,5]{1,0} %abs)
  %rsqrt = f32[3,5]{1,0} rsqrt(f32[3,5]{1,0} %abs)
  %log = f32[3,5]{1,0} log(f32[3,5]{1,0} %abs)
  %log1p = f32[3,5]{1,0} log-plus-one(f32[3,5]{1,0} %abs)
  %expm1 = f32[3,5]{1,0} exponential-minus-one(f32[3,5]{1,0} %p0)
  %tanh = f32[3,5]{1,0} tanh(f32[3,5]{1,0} %p0)
  %logistic = f32[3,5]{1,0} logistic(f32[3,5]{1,0} %p0)
  %sine = f32[3,5]{1,0} sine(f32[3,5]{1,0} %p0)
  %cosine = f32[3,5]{1,0} cosine(f32[3,5]{1,0} %p0)
  %floor = f32[3,5]{1,0} floor(f32[3,5]{1,0} %p0)
  %ceil = f32[3,5]{1,0} ceil(f32[3,5]{1,0} %p0)
  %round = f32[3,5]{1,0} round-nearest-even(f32[3,5]{1,0} %p0)
  %sign = f32[3,5]{1,0} sign(f32[3,5]{1,0} %p0)
  ROOT %tuple = (f32[3,5]{1,0}, f32[3,5]{1,0}, f32[3,5]{1,0}, f32[3,5]{1,0}, f32[3,5]{1,0}, /*index=5*/f32[3,5]{1,0}, f32[3,5]{1,0}, f32[3,5]{1,0}, f32[3,5]{1,0}, f32[3,5]{1,0}, /*index=10*/f32[3,5]{1,0}, f32[3,5]{1,0}, f32[3,5]{1,0}, f32[3,5]{1,0}) tuple(f32[3,5]{1,0} %abs, f32[3,5]{1,0} %sqrt, f32[3,5]{1,0} %rsqrt, f32[3,5]{1,0} %log, f32[3,5]{1,0} %log1p, /*index=5*/f32[3,5]{1,0} %expm1, f32[3,5]{1,0} %tanh, f32[3,5]{1,0} %logistic, f32[3,5]{1,0} %sine, f32[3,5]{1,0} %cosine, /*index=10*/f32[3,5]{1,0} %floor, f32[3,5]{1,0} %ceil, f32[3,5]{1,0} %round, f32[3,5]{1,0} %sign)
}
""", [x], [np.abs(x), np.sqrt(np.abs(x)), 1 / np.sqrt(np.abs(x)), np.log(np.abs(x)),
           in_float64(np.log1p, np.abs(x)), in_float64(np.expm1, x), np.tanh(x),
           (1 / (1 + np.exp(-x))).astype(np.float32), np.sin(x), np.cos(x), np.floor(x),
           np.ceil(x), np.rint(x), np.sign(x)])

x = f32(6)
case("erf", """HloModule erf

ENTRY %main (p0: f32[6]) -> f32[6] {
  %p0 = f32[6]{0} parameter(0)
  ROOT %erf = f32[6]{0} erf(f32[6]{0} %p0)
}
""", [x], np.array([math.erf(v) for v in x.astype(np.float64)], dtype=np.float32))

x, y = f32(2, 6), f32(2, 6)
case("binary_math", """HloModule binary_math

ENTRY %main (p0: f32[2,6], p1: f32[2,6]) -> (f32[2,6], f32[2,6], f32[2,6], f32[2,6], f32[2,6], /*index=5*/f32[2,6], f32[2,6]) {
  %p0 = f32[2,6]{1,0} parameter(0)
  %p1 = f32[2,6]{1,0} parameter(1)
  %abs = f32[2,6]{1,0} abs(f32[2,6]{1,0} %p0)
  %power = f32[2,6]{1,0} power(f32[2,6]{1,0} %abs, f32[2,6]{1,0} %p1)
  %atan2 = f32[2,6]{1,0} atan2(f32[2,6]{1,0} %p0, f32[2,6]{1,0} %p1)
  %maximum = f32[2,6]{1,0} maximum(f32[2,6]{1,0} %p0, f32[2,6]{1,0} %p1)
  %minimum = f32[2,6]{1,0} minimum(f32[2,6]{1,0} %p0, f32[2,6]{1,0} %p1)
  %remainder = f32[2,6]{1,0} remainder(f32[2,6]{1,0} %p0, f32[2,6]{1,0} %p1)
  %divide = f32[2,6]{1,0} divide(f32[2,6]{1,0} %p0, f32[2,6]{1,0} %p1)
  %subtract = f32[2,6]{1,0} subtract(f32[2,6]{1,0} %p0, f32[2,6]{1,0} %p1)
  ROOT %tuple = (f32[2,6]{1,0}, f32[2,6]{1,0}, f32[2,6]{1,0}, f32[2,6]{1,0}, f32[2,6]{1,0}, /*index=5*/f32[2,6]{1,0}, f32[2,6]{1,0}) tuple(f32[2,6]{1,0} %power, f32[2,6]{1,0} %atan2, f32[2,6]{1,0} %maximum, f32[2,6]{1,0} %minimum, f32[2,6]{1,0} %remainder, /*index=5*/f32[2,6]{1,0} %divide, f32[2,6]{1,0} %subtract)
}
""", [x, y], [in_float64(np.power, np.abs(x), y), np.arctan2(x, y), np.maximum(x, y),
              np.minimum(x, y), np.fmod(x, y), x / y, x - y])

a = rng.randint(-100, 100, size=(10,)).astype(np.int32)
b = rng.randint(-7, 8, size=(10,)).astype(np.int32)
b[b == 0] = 3
s = rng.randint(0, 31, size=(10,)).astype(np.int32)
case("integer_ops", """HloModule integer_ops

ENTRY %main (p0: s32[10], p1: s32[10], p2: s32[10]) -> (s32[10], s32[10], s32[10], s32[10], s32[10], /*index=5*/s32[10], s32[10], s32[10], s32[10]) {
  %p0 = s32[10]{0} parameter(0)
  %p1 = s32[10]{0} parameter(1)
  %p2 = s32[10]{0} parameter(2)
  %divide = s32[10]{0} divide(s32[10]{0} %p0, s32[10]{0} %p1)
  %remainder = s32[10]{0} remainder(s32[10]{0} %p0, s32[10]{0} %p1)
  %and = s32[10]{0} and(s32[10]{0} %p0, s32[10]{0} %p1)
  %or = s32[10]{0} or(s32[10]{0} %p0, s32[10]{0} %p1)
  %xor = s32[10]{0} xor(s32[10]{0} %p0, s32[10]{0} %p1)
  %shl = s32[10]{0} shift-left(s32[10]{0} %p0, s32[10]{0} %p2)
  %sra = s32[10]{0} shift-right-arithmetic(s32[10]{0} %p0, s32[10]{0} %p2)
  %srl = s32[10]{0} shift-right-logical(s32[10]{0} %p0, s32[10]{0} %p2)
  %mul = s32[10]{0} multiply(s32[10]{0} %p0, s32[10]{0} %p1)
  ROOT %tuple = (s32[10]{0}, s32[10]{0}, s32[10]{0}, s32[10]{0}, s32[10]{0}, /*index=5*/s32[10]{0}, s32[10]{0}, s32[10]{0}, s32[10]{0}) tuple(s32[10]{0} %divide, s32[10]{0} %remainder, s32[10]{0} %and, s32[10]{0} %or, s32[10]{0} %xor, /*index=5*/s32[10]{0} %shl, s32[10]{0} %sra, s32[10]{0} %srl, s32[10]{0} %mul)
}
""", [a, b, s], [np.trunc(a / b).astype(np.int32), np.fmod(a, b).astype(np.int32), a & b, a | b,
                 a ^ b, np.left_shift(a, s), np.right_shift(a, s),
                 (a.view(np.uint32) >> s.astype(np.uint32)).view(np.int32), a * b])

u = rng.randint(0, 2**32, size=(6,), dtype=np.uint64).astype(np.uint32)
v = rng.randint(1, 2**16, size=(6,)).astype(np.uint32)
case("unsigned_ops", """HloModule unsigned_ops

ENTRY %main (p0: u32[6], p1: u32[6]) -> (u32[6], u32[6], u32[6], u32[6]) {
  %p0 = u32[6]{0} parameter(0)
  %p1 = u32[6]{0} parameter(1)
  %add = u32[6]{0} add(u32[6]{0} %p0, u32[6]{0} %p1)
  %multiply = u32[6]{0} multiply(u32[6]{0} %p0, u32[6]{0} %p1)
  %divide = u32[6]{0} divide(u32[6]{0} %p0, u32[6]{0} %p1)
  %maximum = u32[6]{0} maximum(u32[6]{0} %p0, u32[6]{0} %p1)
  ROOT %tuple = (u32[6]{0}, u32[6]{0}, u32[6]{0}, u32[6]{0}) tuple(u32[6]{0} %add, u32[6]{0} %multiply, u32[6]{0} %divide, u32[6]{0} %maximum)
}
""", [u, v], [u + v, u * v, u // v, np.maximum(u, v)])

x = (rng.uniform(-50, 50, size=(8,))).astype(np.float32)
case("convert_types", """HloModule convert_types

ENTRY %main (p0: f32[8]) -> (s32[8], u32[8], f64[8], pred[8], f32[8]) {
  %p0 = f32[8]{0} parameter(0)
  %to_s32 = s32[8]{0} convert(f32[8]{0} %p0)
  %abs = f32[8]{0} abs(f32[8]{0} %p0)
  %to_u32 = u32[8]{0} convert(f32[8]{0} %abs)
  %to_f64 = f64[8]{0} convert(f32[8]{0} %p0)
  %to_pred = pred[8]{0} convert(s32[8]{0} %to_s32)
  %back = f32[8]{0} convert(s32[8]{0} %to_s32)
  ROOT %tuple = (s32[8]{0}, u32[8]{0}, f64[8]{0}, pred[8]{0}, f32[8]{0}) tuple(s32[8]{0} %to_s32, u32[8]{0} %to_u32, f64[8]{0} %to_f64, pred[8]{0} %to_pred, f32[8]{0} %back)
}
""", [x], [np.trunc(x).astype(np.int32), np.trunc(np.abs(x)).astype(np.uint32),
           x.astype(np.float64), np.trunc(x).astype(np.int32) != 0,
           np.trunc(x).astype(np.int32).astype(np.float32)])

x = f32(3, 4)
lo, hi = np.float32(-0.5), np.float32(0.75)
case("clamp", """HloModule clamp

ENTRY %main (p0: f32[3,4]) -> f32[3,4] {
  %p0 = f32[3,4]{1,0} parameter(0)
  %lo = f32[] constant(-0.5)
  %hi = f32[] constant(0.75)
  ROOT %clamp = f32[3,4]{1,0} clamp(f32[] %lo, f32[3,4]{1,0} %p0, f32[] %hi)
}
""", [x], np.clip(x, lo, hi))

x = rng.uniform(-2, 2, size=(5,)).astype(np.float64)
case("f64_chain", """HloModule f64_chain

ENTRY %main (p0: f64[5]) -> f64[5] {
  %p0 = f64[5]{0} parameter(0)
  %c = f64[] constant(0.1)
  %b = f64[5]{0} broadcast(f64[] %c), dimensions={}
  %mul = f64[5]{0} multiply(f64[5]{0} %p0, f64[5]{0} %b)
  %tanh = f64[5]{0} tanh(f64[5]{0} %mul)
  ROOT %add = f64[5]{0} add(f64[5]{0} %tanh, f64[5]{0} %p0)
}
""", [x], np.tanh(x * 0.1) + x)

x = f32(4, 4)
x[0, 0] = np.inf
x[1, 1] = np.nan
x[2, 2] = -np.inf
case("predicates", """HloModule predicates

ENTRY %main (p0: f32[4,4]) -> (pred[4,4], pred[4,4], pred[4,4], pred[4,4]) {
  %p0 = f32[4,4]{1,0} parameter(0)
  %finite = pred[4,4]{1,0} is-finite(f32[4,4]{1,0} %p0)
  %not = pred[4,4]{1,0} not(pred[4,4]{1,0} %finite)
  %zero = f32[] constant(0)
  %zeros = f32[4,4]{1,0} broadcast(f32[] %zero), dimensions={}
  %positive = pred[4,4]{1,0} compare(f32[4,4]{1,0} %p0, f32[4,4]{1,0} %zeros), direction=GT
  %both = pred[4,4]{1,0} and(pred[4,4]{1,0} %positive, pred[4,4]{1,0} %finite)
  %ne = pred[4,4]{1,0} compare(f32[4,4]{1,0} %p0, f32[4,4]{1,0} %p0), direction=NE, type=FLOAT
  ROOT %tuple = (pred[4,4]{1,0}, pred[4,4]{1,0}, pred[4,4]{1,0}, pred[4,4]{1,0}) tuple(pred[4,4]{1,0} %finite, pred[4,4]{1,0} %not, pred[4,4]{1,0} %both, pred[4,4]{1,0} %ne)
}
""", [x], [np.isfinite(x), ~np.isfinite(x), (x > 0) & np.isfinite(x), x != x])

# --- constants of every type ---------------------------------------------------------------------
case("constants_all_types", """HloModule constants_all_types

ENTRY %main () -> (pred[3], s32[2,2], u32[3], f32[2,3], f64[2], /*index=5*/f32[], s32[0], f32[2,0], s8[2], u8[2], /*index=10*/s16[2], u16[2], s64[2], u64[2], f16[3], /*index=15*/f32[2]) {
  %pred = pred[3]{0} constant({true, false, true})
  %s32 = s32[2,2]{1,0} constant({ {-2147483648, 2147483647}, {0, -1} })
  %u32 = u32[3]{0} constant({0, 4294967295, 7})
  %f32 = f32[2,3]{1,0} constant({ {1, -0.5, inf}, {-inf, 1e-30, 3.4028235e+38} })
  %f64 = f64[2]{0} constant({0.1, -1e+300})
  %scalar = f32[] constant(-0)
  %empty = s32[0]{0} constant({})
  %empty2 = f32[2,0]{1,0} constant({ {}, {} })
  %s8 = s8[2]{0} constant({-128, 127})
  %u8 = u8[2]{0} constant({0, 255})
  %s16 = s16[2]{0} constant({-32768, 32767})
  %u16 = u16[2]{0} constant({0, 65535})
  %s64 = s64[2]{0} constant({-9223372036854775808, 9223372036854775807})
  %u64 = u64[2]{0} constant({0, 18446744073709551615})
  %f16 = f16[3]{0} constant({1, -0.333251953, 65504})
  %bf16 = bf16[2]{0} constant({1.5, -2.5})
  %bf16_as_f32 = f32[2]{0} convert(bf16[2]{0} %bf16)
  ROOT %tuple = (pred[3]{0}, s32[2,2]{1,0}, u32[3]{0}, f32[2,3]{1,0}, f64[2]{0}, /*index=5*/f32[], s32[0]{0}, f32[2,0]{1,0}, s8[2]{0}, u8[2]{0}, /*index=10*/s16[2]{0}, u16[2]{0}, s64[2]{0}, u64[2]{0}, f16[3]{0}, /*index=15*/f32[2]{0}) tuple(pred[3]{0} %pred, s32[2,2]{1,0} %s32, u32[3]{0} %u32, f32[2,3]{1,0} %f32, f64[2]{0} %f64, /*index=5*/f32[] %scalar, s32[0]{0} %empty, f32[2,0]{1,0} %empty2, s8[2]{0} %s8, u8[2]{0} %u8, /*index=10*/s16[2]{0} %s16, u16[2]{0} %u16, s64[2]{0} %s64, u64[2]{0} %u64, f16[3]{0} %f16, /*index=15*/f32[2]{0} %bf16_as_f32)
}
""", [], [np.array([True, False, True]), np.array([[-2**31, 2**31 - 1], [0, -1]], dtype=np.int32),
          np.array([0, 2**32 - 1, 7], dtype=np.uint32),
          np.array([[1, -0.5, np.inf], [-np.inf, 1e-30, 3.4028235e+38]], dtype=np.float32),
          np.array([0.1, -1e300]), np.float32(-0.0), np.zeros((0,), np.int32),
          np.zeros((2, 0), np.float32), np.array([-128, 127], np.int8),
          np.array([0, 255], np.uint8), np.array([-32768, 32767], np.int16),
          np.array([0, 65535], np.uint16), np.array([-2**63, 2**63 - 1], np.int64),
          np.array([0, 2**64 - 1], np.uint64), np.array([1, -0.333251953, 65504], np.float16),
          np.array([1.5, -2.5], np.float32)])

# --- reductions ----------------------------------------------------------------------------------
x = f32(4, 8)
case("reduce_sum", """HloModule reduce_sum

""" + ADD_F32 + """
ENTRY %main (p0: f32[4,8]) -> f32[4] {
  %p0 = f32[4,8]{1,0} parameter(0)
  %zero = f32[] constant(0)
  ROOT %reduce = f32[4]{0} reduce(f32[4,8]{1,0} %p0, f32[] %zero), dimensions={1}, to_apply=%add.f32
}
""", [x], x.sum(axis=1))

x = f32(3, 4, 5)
case("reduce_max_rank3", """HloModule reduce_max_rank3

""" + MAX_F32 + """
ENTRY %main (p0: f32[3,4,5]) -> f32[4] {
  %p0 = f32[3,4,5]{2,1,0} parameter(0)
  %init = f32[] constant(-inf)
  ROOT %reduce = f32[4]{0} reduce(f32[3,4,5]{2,1,0} %p0, f32[] %init), dimensions={0,2}, to_apply=%max.f32
}
""", [x], x.max(axis=(0, 2)))

x = f32(3, 7)
case("argmax_variadic_reduce", """HloModule argmax_variadic_reduce

%argmax (a_value: f32[], a_index: s32[], b_value: f32[], b_index: s32[]) -> (f32[], s32[]) {
  %a_value = f32[] parameter(0)
  %a_index = s32[] parameter(1)
  %b_value = f32[] parameter(2)
  %b_index = s32[] parameter(3)
  %greater = pred[] compare(f32[] %a_value, f32[] %b_value), direction=GE
  %value = f32[] select(pred[] %greater, f32[] %a_value, f32[] %b_value)
  %index = s32[] select(pred[] %greater, s32[] %a_index, s32[] %b_index)
  ROOT %result = (f32[], s32[]) tuple(f32[] %value, s32[] %index)
}

ENTRY %main (p0: f32[3,7]) -> (f32[3], s32[3]) {
  %p0 = f32[3,7]{1,0} parameter(0)
  %iota = s32[3,7]{1,0} iota(), iota_dimension=1
  %init_value = f32[] constant(-inf)
  %init_index = s32[] constant(0)
  ROOT %reduce = (f32[3]{0}, s32[3]{0}) reduce(f32[3,7]{1,0} %p0, s32[3,7]{1,0} %iota, f32[] %init_value, s32[] %init_index), dimensions={1}, to_apply=%argmax
}
""", [x], [x.max(axis=1), x.argmax(axis=1).astype(np.int32)])

# --- dot -----------------------------------------------------------------------------------------
a, b = f32(8, 16), f32(16, 4)
case("dot_matmul", """HloModule dot_matmul

ENTRY %main (p0: f32[8,16], p1: f32[16,4]) -> f32[8,4] {
  %p0 = f32[8,16]{1,0} parameter(0)
  %p1 = f32[16,4]{1,0} parameter(1)
  ROOT %dot = f32[8,4]{1,0} dot(f32[8,16]{1,0} %p0, f32[16,4]{1,0} %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, precision_config={default,default}
}
""", [a, b], matmul(a, b))

a, b = f32(2, 4, 8), f32(2, 3, 8)
case("dot_batch", """HloModule dot_batch

ENTRY %main (p0: f32[2,4,8], p1: f32[2,3,8]) -> f32[2,4,3] {
  %p0 = f32[2,4,8]{2,1,0} parameter(0)
  %p1 = f32[2,3,8]{2,1,0} parameter(1)
  ROOT %dot = f32[2,4,3]{2,1,0} dot(f32[2,4,8]{2,1,0} %p0, f32[2,3,8]{2,1,0} %p1), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}
}
""", [a, b], np.einsum("bik,bjk->bij", a, b))

a = rng.randint(-5, 5, size=(3, 4)).astype(np.int32)
b = rng.randint(-5, 5, size=(4,)).astype(np.int32)
case("dot_matvec_s32", """HloModule dot_matvec_s32

ENTRY %main (p0: s32[3,4], p1: s32[4]) -> s32[3] {
  %p0 = s32[3,4]{1,0} parameter(0)
  %p1 = s32[4]{0} parameter(1)
  ROOT %dot = s32[3]{0} dot(s32[3,4]{1,0} %p0, s32[4]{0} %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
""", [a, b], a @ b)

# --- composite programs --------------------------------------------------------------------------
x = f32(4, 16)
e = np.exp(x - x.max(axis=1, keepdims=True))
case("softmax", """HloModule softmax

""" + MAX_F32 + "\n" + ADD_F32 + """
ENTRY %main (p0: f32[4,16]) -> f32[4,16] {
  %p0 = f32[4,16]{1,0} parameter(0)
  %neg_inf = f32[] constant(-inf)
  %row_max = f32[4]{0} reduce(f32[4,16]{1,0} %p0, f32[] %neg_inf), dimensions={1}, to_apply=%max.f32
  %max_b = f32[4,16]{1,0} broadcast(f32[4]{0} %row_max), dimensions={0}
  %shifted = f32[4,16]{1,0} subtract(f32[4,16]{1,0} %p0, f32[4,16]{1,0} %max_b)
  %exp = f32[4,16]{1,0} exponential(f32[4,16]{1,0} %shifted)
  %zero = f32[] constant(0)
  %row_sum = f32[4]{0} reduce(f32[4,16]{1,0} %exp, f32[] %zero), dimensions={1}, to_apply=%add.f32
  %sum_b = f32[4,16]{1,0} broadcast(f32[4]{0} %row_sum), dimensions={0}
  ROOT %softmax = f32[4,16]{1,0} divide(f32[4,16]{1,0} %exp, f32[4,16]{1,0} %sum_b)
}
""", [x], e / e.sum(axis=1, keepdims=True))

x, gamma, beta = f32(4, 16), f32(16), f32(16)
mean = x.mean(axis=1, keepdims=True)
var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
case("layer_norm", """HloModule layer_norm

""" + ADD_F32 + """
ENTRY %main (x: f32[4,16], gamma: f32[16], beta: f32[16]) -> f32[4,16] {
  %x = f32[4,16]{1,0} parameter(0)
  %gamma = f32[16]{0} parameter(1)
  %beta = f32[16]{0} parameter(2)
  %zero = f32[] constant(0)
  %n = f32[] constant(16)
  %n_b = f32[4]{0} broadcast(f32[] %n), dimensions={}
  %sum = f32[4]{0} reduce(f32[4,16]{1,0} %x, f32[] %zero), dimensions={1}, to_apply=%add.f32
  %mean = f32[4]{0} divide(f32[4]{0} %sum, f32[4]{0} %n_b)
  %mean_b = f32[4,16]{1,0} broadcast(f32[4]{0} %mean), dimensions={0}
  %centered = f32[4,16]{1,0} subtract(f32[4,16]{1,0} %x, f32[4,16]{1,0} %mean_b)
  %square = f32[4,16]{1,0} multiply(f32[4,16]{1,0} %centered, f32[4,16]{1,0} %centered)
  %square_sum = f32[4]{0} reduce(f32[4,16]{1,0} %square, f32[] %zero), dimensions={1}, to_apply=%add.f32
  %var = f32[4]{0} divide(f32[4]{0} %square_sum, f32[4]{0} %n_b)
  %eps = f32[] constant(1e-05)
  %eps_b = f32[4]{0} broadcast(f32[] %eps), dimensions={}
  %var_eps = f32[4]{0} add(f32[4]{0} %var, f32[4]{0} %eps_b)
  %inv = f32[4]{0} rsqrt(f32[4]{0} %var_eps)
  %inv_b = f32[4,16]{1,0} broadcast(f32[4]{0} %inv), dimensions={0}
  %normed = f32[4,16]{1,0} multiply(f32[4,16]{1,0} %centered, f32[4,16]{1,0} %inv_b)
  %gamma_b = f32[4,16]{1,0} broadcast(f32[16]{0} %gamma), dimensions={1}
  %scaled = f32[4,16]{1,0} multiply(f32[4,16]{1,0} %normed, f32[4,16]{1,0} %gamma_b)
  %beta_b = f32[4,16]{1,0} broadcast(f32[16]{0} %beta), dimensions={1}
  ROOT %out = f32[4,16]{1,0} add(f32[4,16]{1,0} %scaled, f32[4,16]{1,0} %beta_b)
}
""", [x, gamma, beta], (x - mean) / np.sqrt(var + np.float32(1e-5)) * gamma + beta)

x, w1, b1, w2 = f32(8, 16), f32(16, 32), f32(32), f32(32, 4)
h = matmul(x, w1) + b1
r = np.maximum(h, 0)
case("mlp_forward", """HloModule jit_mlp_forward, entry_computation_layout={(f32[8,16]{1,0}, f32[16,32]{1,0}, f32[32]{0}, f32[32,4]{1,0})->f32[8,4]{1,0}}

ENTRY %main.10 (Arg_0.1: f32[8,16], Arg_1.2: f32[16,32], Arg_2.3: f32[32], Arg_3.4: f32[32,4]) -> f32[8,4] {
  %Arg_0.1 = f32[8,16]{1,0} parameter(0)
  %Arg_1.2 = f32[16,32]{1,0} parameter(1)
  %dot.5 = f32[8,32]{1,0} dot(f32[8,16]{1,0} %Arg_0.1, f32[16,32]{1,0} %Arg_1.2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %Arg_2.3 = f32[32]{0} parameter(2)
  %broadcast.6 = f32[8,32]{1,0} broadcast(f32[32]{0} %Arg_2.3), dimensions={1}
  %add.7 = f32[8,32]{1,0} add(f32[8,32]{1,0} %dot.5, f32[8,32]{1,0} %broadcast.6)
  %constant.8 = f32[] constant(0)
  %broadcast.9 = f32[8,32]{1,0} broadcast(f32[] %constant.8), dimensions={}
  %maximum.10 = f32[8,32]{1,0} maximum(f32[8,32]{1,0} %add.7, f32[8,32]{1,0} %broadcast.9)
  %Arg_3.4 = f32[32,4]{1,0} parameter(3)
  ROOT %dot.11 = f32[8,4]{1,0} dot(f32[8,32]{1,0} %maximum.10, f32[32,4]{1,0} %Arg_3.4), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
""", [x, w1, b1, w2], matmul(r, w2))

g = f32(8, 4)
dr = matmul(g, w2.T)
dh = np.where(h > 0, dr, np.float32(0))
case("mlp_backward", """HloModule jit_mlp_backward

""" + ADD_F32 + """
ENTRY %main.20 (x: f32[8,16], w1: f32[16,32], b1: f32[32], w2: f32[32,4], g: f32[8,4]) -> (f32[16,32], f32[32], f32[32,4]) {
  %x = f32[8,16]{1,0} parameter(0)
  %w1 = f32[16,32]{1,0} parameter(1)
  %b1 = f32[32]{0} parameter(2)
  %w2 = f32[32,4]{1,0} parameter(3)
  %g = f32[8,4]{1,0} parameter(4)
  %dot.1 = f32[8,32]{1,0} dot(f32[8,16]{1,0} %x, f32[16,32]{1,0} %w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %broadcast.2 = f32[8,32]{1,0} broadcast(f32[32]{0} %b1), dimensions={1}
  %add.3 = f32[8,32]{1,0} add(f32[8,32]{1,0} %dot.1, f32[8,32]{1,0} %broadcast.2)
  %constant.4 = f32[] constant(0)
  %broadcast.5 = f32[8,32]{1,0} broadcast(f32[] %constant.4), dimensions={}
  %maximum.6 = f32[8,32]{1,0} maximum(f32[8,32]{1,0} %add.3, f32[8,32]{1,0} %broadcast.5)
  %dot.7 = f32[32,4]{1,0} dot(f32[8,32]{1,0} %maximum.6, f32[8,4]{1,0} %g), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %dot.8 = f32[8,32]{1,0} dot(f32[8,4]{1,0} %g, f32[32,4]{1,0} %w2), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  %compare.9 = pred[8,32]{1,0} compare(f32[8,32]{1,0} %add.3, f32[8,32]{1,0} %broadcast.5), direction=GT
  %select.10 = f32[8,32]{1,0} select(pred[8,32]{1,0} %compare.9, f32[8,32]{1,0} %dot.8, f32[8,32]{1,0} %broadcast.5)
  %reduce.11 = f32[32]{0} reduce(f32[8,32]{1,0} %select.10, f32[] %constant.4), dimensions={0}, to_apply=%add.f32
  %dot.12 = f32[16,32]{1,0} dot(f32[8,16]{1,0} %x, f32[8,32]{1,0} %select.10), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT %tuple.13 = (f32[16,32]{1,0}, f32[32]{0}, f32[32,4]{1,0}) tuple(f32[16,32]{1,0} %dot.12, f32[32]{0} %reduce.11, f32[32,4]{1,0} %dot.7)
}
""", [x, w1, b1, w2, g], [matmul(x.T, dh), dh.sum(axis=0), matmul(r.T, g)])

# --- shape ops -----------------------------------------------------------------------------------
x = f32(2, 3, 4)
case("transpose_reshape", """HloModule transpose_reshape

ENTRY %main (p0: f32[2,3,4]) -> f32[4,6] {
  %p0 = f32[2,3,4]{2,1,0} parameter(0)
  %transpose = f32[4,2,3]{2,1,0} transpose(f32[2,3,4]{2,1,0} %p0), dimensions={2,0,1}
  ROOT %reshape = f32[4,6]{1,0} reshape(f32[4,2,3]{2,1,0} %transpose)
}
""", [x], x.transpose(2, 0, 1).reshape(4, 6))

x, y = f32(4, 6), f32(2, 6)
case("slice_concatenate", """HloModule slice_concatenate

ENTRY %main (p0: f32[4,6], p1: f32[2,6]) -> f32[5,3] {
  %p0 = f32[4,6]{1,0} parameter(0)
  %p1 = f32[2,6]{1,0} parameter(1)
  %slice.0 = f32[3,3]{1,0} slice(f32[4,6]{1,0} %p0), slice={[1:4], [0:6:2]}
  %slice.1 = f32[2,3]{1,0} slice(f32[2,6]{1,0} %p1), slice={[0:2:1], [3:6:1]}
  ROOT %concatenate = f32[5,3]{1,0} concatenate(f32[3,3]{1,0} %slice.0, f32[2,3]{1,0} %slice.1), dimensions={0}
}
""", [x, y], np.concatenate([x[1:4, 0:6:2], y[0:2, 3:6]], axis=0))

x = f32(3, 4)
p = np.full((3 + 2 + 2 * 1, 4 - 1 + 2), np.float32(9), dtype=np.float32)
for i in range(3):
    p[1 + 2 * i, 0:3] = x[i, 1:4]
p = np.full((1 + 3 + 2 + 1, 5), np.float32(9), dtype=np.float32)  # low 1, high 1, interior 1
for i in range(3):
    for j in range(4):
        jj = -1 + j
        if 0 <= jj < 5:
            p[1 + 2 * i, jj] = x[i, j]
case("pad_interior_negative", """HloModule pad_interior_negative

ENTRY %main (p0: f32[3,4]) -> f32[7,5] {
  %p0 = f32[3,4]{1,0} parameter(0)
  %nine = f32[] constant(9)
  ROOT %pad = f32[7,5]{1,0} pad(f32[3,4]{1,0} %p0, f32[] %nine), padding=1_1_1x-1_2
}
""", [x], p)

x = f32(3, 4)
case("reverse", """HloModule reverse

ENTRY %main (p0: f32[3,4]) -> f32[3,4] {
  %p0 = f32[3,4]{1,0} parameter(0)
  ROOT %reverse = f32[3,4]{1,0} reverse(f32[3,4]{1,0} %p0), dimensions={0,1}
}
""", [x], x[::-1, ::-1])

x = f32(5, 6)
case("dynamic_slice_clamped", """HloModule dynamic_slice_clamped

ENTRY %main (p0: f32[5,6], i: s32[], j: s32[]) -> f32[2,4] {
  %p0 = f32[5,6]{1,0} parameter(0)
  %i = s32[] parameter(1)
  %j = s32[] parameter(2)
  ROOT %ds = f32[2,4]{1,0} dynamic-slice(f32[5,6]{1,0} %p0, s32[] %i, s32[] %j), dynamic_slice_sizes={2,4}
}
""", [x, np.int32(1), np.int32(5)], x[1:3, 2:6])

x, upd = f32(4, 4), f32(2, 2)
o = x.copy()
o[2:4, 0:2] = upd
case("dynamic_update_slice", """HloModule dynamic_update_slice

ENTRY %main (p0: f32[4,4], u: f32[2,2], i: s32[], j: s32[]) -> f32[4,4] {
  %p0 = f32[4,4]{1,0} parameter(0)
  %u = f32[2,2]{1,0} parameter(1)
  %i = s32[] parameter(2)
  %j = s32[] parameter(3)
  ROOT %dus = f32[4,4]{1,0} dynamic-update-slice(f32[4,4]{1,0} %p0, f32[2,2]{1,0} %u, s32[] %i, s32[] %j)
}
""", [x, upd, np.int32(3), np.int32(-1)], o)

x = f32(4, 5)
case("iota_select", """HloModule iota_select

ENTRY %main (p0: f32[4,5]) -> f32[4,5] {
  %p0 = f32[4,5]{1,0} parameter(0)
  %rows = s32[4,5]{1,0} iota(), iota_dimension=0
  %cols = s32[4,5]{1,0} iota(), iota_dimension=1
  %lower = pred[4,5]{1,0} compare(s32[4,5]{1,0} %rows, s32[4,5]{1,0} %cols), direction=GE
  %zero = f32[] constant(0)
  %zeros = f32[4,5]{1,0} broadcast(f32[] %zero), dimensions={}
  ROOT %select = f32[4,5]{1,0} select(pred[4,5]{1,0} %lower, f32[4,5]{1,0} %p0, f32[4,5]{1,0} %zeros)
}
""", [x], np.tril(x))

x, y = f32(2, 2), f32(3)
case("tuple_get_tuple_element", """HloModule tuple_get_tuple_element, input_output_alias={ {0}: (0, {}, may-alias) }

ENTRY %main (p0: f32[2,2], p1: f32[3]) -> (f32[2,2], f32[3]) {
  %p0 = f32[2,2]{1,0} parameter(0)
  %p1 = f32[3]{0} parameter(1)
  %inner = (f32[2,2]{1,0}, f32[3]{0}) tuple(f32[2,2]{1,0} %p0, f32[3]{0} %p1)
  %outer = ((f32[2,2]{1,0}, f32[3]{0}), f32[3]{0}) tuple((f32[2,2]{1,0}, f32[3]{0}) %inner, f32[3]{0} %p1)
  %first = (f32[2,2]{1,0}, f32[3]{0}) get-tuple-element(((f32[2,2]{1,0}, f32[3]{0}), f32[3]{0}) %outer), index=0
  %matrix = f32[2,2]{1,0} get-tuple-element((f32[2,2]{1,0}, f32[3]{0}) %first), index=0
  %vector = f32[3]{0} get-tuple-element(((f32[2,2]{1,0}, f32[3]{0}), f32[3]{0}) %outer), index=1
  %doubled = f32[2,2]{1,0} add(f32[2,2]{1,0} %matrix, f32[2,2]{1,0} %matrix)
  %copy = f32[3]{0} copy(f32[3]{0} %vector)
  ROOT %result = (f32[2,2]{1,0}, f32[3]{0}) tuple(f32[2,2]{1,0} %doubled, f32[3]{0} %copy)
}
""", [x, y], [x + x, y])

x = f32(4, 8)
case("sharding_annotations", """HloModule sharding_annotations, num_partitions=4

ENTRY %main (p0: f32[4,8], p1: f32[8]) -> (f32[4,8], f32[8]) {
  %p0 = f32[4,8]{1,0} parameter(0), sharding={devices=[2,2]<=[4]}
  %p1 = f32[8]{0} parameter(1), sharding={replicated}
  %a = f32[4,8]{1,0} custom-call(f32[4,8]{1,0} %p0), custom_call_target="Sharding", sharding={devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}
  %b = f32[4,8]{1,0} negate(f32[4,8]{1,0} %a), sharding={devices=[2,2]<=[2,2]T(1,0)}
  %c = f32[4,8]{1,0} copy(f32[4,8]{1,0} %b), sharding={devices=[1,2,2]<=[4] last_tile_dims={manual}}
  %d = f32[8]{0} copy(f32[8]{0} %p1), sharding={maximal device=3}
  %e = f32[4,8]{1,0} copy(f32[4,8]{1,0} %c), sharding={manual}
  ROOT %t = (f32[4,8]{1,0}, f32[8]{0}) tuple(f32[4,8]{1,0} %e, f32[8]{0} %d), sharding={{devices=[2,2]0,2,1,3}, {replicated}}
}
""", [x, f32(8)], None)
# The expected value depends on the argument drawn above; fill it in.
_n, _h, _args, _o, _d = CASES[-1]
CASES[-1] = (_n, _h, _args, [-_args[0], _args[1]], _d)

# --- collectives over 4 partitions -----------------------------------------------------------
dev = [[f32(2, 3)] for _ in range(4)]
case("all_reduce_groups", """HloModule all_reduce_groups, num_partitions=4

""" + ADD_F32 + """
ENTRY %main (p0: f32[2,3]) -> f32[2,3] {
  %p0 = f32[2,3]{1,0} parameter(0)
  ROOT %all-reduce = f32[2,3]{1,0} all-reduce(f32[2,3]{1,0} %p0), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%add.f32
}
""", dev, [dev[0][0] + dev[1][0], dev[0][0] + dev[1][0], dev[2][0] + dev[3][0],
           dev[2][0] + dev[3][0]], devices=4)

dev = [[f32(2, 3)] for _ in range(4)]
# [2,2]<=[2,2]T(1,0) gives groups {0,2},{1,3}.
g02 = np.concatenate([dev[0][0], dev[2][0]], axis=0)
g13 = np.concatenate([dev[1][0], dev[3][0]], axis=0)
case("all_gather_iota_groups", """HloModule all_gather_iota_groups, num_partitions=4

ENTRY %main (p0: f32[2,3]) -> f32[4,3] {
  %p0 = f32[2,3]{1,0} parameter(0)
  ROOT %all-gather = f32[4,3]{1,0} all-gather(f32[2,3]{1,0} %p0), channel_id=2, replica_groups=[2,2]<=[2,2]T(1,0), dimensions={0}, use_global_device_ids=true
}
""", dev, [g02, g13, g02, g13], devices=4)

dev = [[f32(4, 2)] for _ in range(4)]
total = sum(d[0] for d in dev)
case("reduce_scatter", """HloModule reduce_scatter, num_partitions=4

""" + ADD_F32 + """
ENTRY %main (p0: f32[4,2]) -> f32[1,2] {
  %p0 = f32[4,2]{1,0} parameter(0)
  ROOT %reduce-scatter = f32[1,2]{1,0} reduce-scatter(f32[4,2]{1,0} %p0), channel_id=3, replica_groups=[1,4]<=[4], use_global_device_ids=true, dimensions={0}, to_apply=%add.f32
}
""", dev, [total[k:k + 1] for k in range(4)], devices=4)

dev = [[f32(4, 3)] for _ in range(4)]
case("all_to_all", """HloModule all_to_all, num_partitions=4

ENTRY %main (p0: f32[4,3]) -> f32[4,3] {
  %p0 = f32[4,3]{1,0} parameter(0)
  ROOT %all-to-all = f32[4,3]{1,0} all-to-all(f32[4,3]{1,0} %p0), channel_id=4, replica_groups={{0,1,2,3}}, dimensions={0}
}
""", dev, [np.concatenate([dev[s][0][r:r + 1] for s in range(4)], axis=0) for r in range(4)],
     devices=4)

dev = [[f32(3)] for _ in range(4)]
case("collective_permute", """HloModule collective_permute, num_partitions=4

ENTRY %main (p0: f32[3]) -> f32[3] {
  %p0 = f32[3]{0} parameter(0)
  ROOT %collective-permute = f32[3]{0} collective-permute(f32[3]{0} %p0), channel_id=5, source_target_pairs={{0,1},{1,2},{2,3}}
}
""", dev, [np.zeros(3, np.float32), dev[0][0], dev[1][0], dev[2][0]], devices=4)

full = f32(8, 4)
case("partition_id_slice", """HloModule partition_id_slice, num_partitions=4

ENTRY %main (p0: f32[8,4]) -> f32[2,4] {
  %p0 = f32[8,4]{1,0} parameter(0), sharding={replicated}
  %partition-id = u32[] partition-id()
  %convert = s32[] convert(u32[] %partition-id)
  %two = s32[] constant(2)
  %offset = s32[] multiply(s32[] %convert, s32[] %two)
  %zero = s32[] constant(0)
  ROOT %dynamic-slice = f32[2,4]{1,0} dynamic-slice(f32[8,4]{1,0} %p0, s32[] %offset, s32[] %zero), dynamic_slice_sizes={2,4}, sharding={devices=[4,1]<=[4]}
}
""", [[full] for _ in range(4)], [full[2 * d:2 * d + 2] for d in range(4)], devices=4)

dev = [[f32(2)] for _ in range(4)]
# Two replicas x two partitions; no channel_id: cross-replica groups {0,1} per partition.
case("cross_replica_all_reduce", """HloModule cross_replica_all_reduce, replica_count=2, num_partitions=2

""" + ADD_F32 + """
ENTRY %main (p0: f32[2]) -> f32[2] {
  %p0 = f32[2]{0} parameter(0)
  %all-reduce = f32[2]{0} all-reduce(f32[2]{0} %p0), replica_groups={}, to_apply=%add.f32
  %replica-id = u32[] replica-id()
  %id = f32[] convert(u32[] %replica-id)
  %id_b = f32[2]{0} broadcast(f32[] %id), dimensions={}
  ROOT %add = f32[2]{0} add(f32[2]{0} %all-reduce, f32[2]{0} %id_b)
}
""", dev, [dev[0][0] + dev[2][0], dev[1][0] + dev[3][0], dev[0][0] + dev[2][0] + 1,
           dev[1][0] + dev[3][0] + 1], devices=4)

full = f32(4, 6)
case("spmd_shard_roundtrip", """HloModule spmd_shard_roundtrip, num_partitions=2

ENTRY %main (p0: f32[4,6]) -> f32[4,6] {
  %p0 = f32[4,6]{1,0} parameter(0)
  %annotate = f32[4,6]{1,0} custom-call(f32[4,6]{1,0} %p0), custom_call_target="Sharding", sharding={devices=[1,2]0,1}
  %shard = f32[4,3]{1,0} custom-call(f32[4,6]{1,0} %annotate), custom_call_target="SPMDFullToShardShape", sharding={manual}
  %negate = f32[4,3]{1,0} negate(f32[4,3]{1,0} %shard), sharding={manual}
  ROOT %full = f32[4,6]{1,0} custom-call(f32[4,3]{1,0} %negate), custom_call_target="SPMDShardToFullShape", sharding={devices=[1,2]0,1}
}
""", [[full], [full]], [-full, -full], devices=2)

# --- gather and scatter ------------------------------------------------------------------------
# Oracles: NumPy indexing with XLA's rules written out (gather clamps each start so the slice fits;
# scatter drops an update whose window does not fit, and adds duplicates with np.add.at).
table = f32(11, 64)
ids = np.array([3, 0, 10, -1, 13, -12, 7], dtype=np.int32)  # -1 wraps to 10; 13 and -1-11 clamp
wrapped = np.where(ids < 0, ids + 11, ids)
case("gather_embedding", """HloModule jit_embed, entry_computation_layout={(f32[11,64]{1,0}, s32[7]{0})->f32[7,64]{1,0}}

ENTRY %main.9 (Arg_0.1: f32[11,64], Arg_1.2: s32[7]) -> f32[7,64] {
  %Arg_0.1 = f32[11,64]{1,0} parameter(0), metadata={op_name="table"}
  %Arg_1.2 = s32[7]{0} parameter(1), metadata={op_name="ids"}
  %constant.3 = s32[] constant(0)
  %broadcast.4 = s32[7]{0} broadcast(s32[] %constant.3), dimensions={}
  %compare.5 = pred[7]{0} compare(s32[7]{0} %Arg_1.2, s32[7]{0} %broadcast.4), direction=LT, metadata={op_name="jit(embed)/jit(main)/lt"}
  %constant.6 = s32[] constant(11)
  %broadcast.7 = s32[7]{0} broadcast(s32[] %constant.6), dimensions={}
  %add.8 = s32[7]{0} add(s32[7]{0} %Arg_1.2, s32[7]{0} %broadcast.7)
  %select.9 = s32[7]{0} select(pred[7]{0} %compare.5, s32[7]{0} %add.8, s32[7]{0} %Arg_1.2)
  %reshape.10 = s32[7,1]{1,0} reshape(s32[7]{0} %select.9)
  ROOT %gather.11 = f32[7,64]{1,0} gather(f32[11,64]{1,0} %Arg_0.1, s32[7,1]{1,0} %reshape.10), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,64}, metadata={op_name="jit(embed)/jit(main)/gather" source_file="embed.py" source_line=4}
}
""", [table, ids], table[np.clip(wrapped, 0, 10)])

grid = rng.randint(-50, 50, size=(7, 9)).astype(np.int32)
starts = np.array([[0, 4], [2, 2], [-1, 5], [6, 8], [5, 6]], dtype=np.int32).T.copy()  # [2,5]
def gather_windows(operand, start_rows, sizes):
    out = []
    for r0, c0 in start_rows:
        r = min(max(r0, 0), operand.shape[0] - sizes[0])
        c = min(max(c0, 0), operand.shape[1] - sizes[1])
        out.append(operand[r:r + sizes[0], c:c + sizes[1]])
    return np.stack(out)
case("gather_windows", """HloModule gather_windows

ENTRY %main (operand: s32[7,9], starts: s32[2,5]) -> s32[5,2,3] {
  %operand = s32[7,9]{1,0} parameter(0)
  %starts = s32[2,5]{1,0} parameter(1)
  ROOT %windows = s32[5,2,3]{2,1,0} gather(%operand, %starts), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=0, slice_sizes={2,3}, indices_are_sorted=false
}
""", [grid, starts], gather_windows(grid, starts.T, (2, 3)))

batched = f32(3, 7, 5)
batch_ids = np.array([[[1], [6], [0], [9]], [[2], [2], [-4], [5]], [[0], [3], [6], [1]]], dtype=np.int32)
expected = np.stack([batched[b][np.clip(batch_ids[b, :, 0], 0, 6)] for b in range(3)])
case("gather_batching", """HloModule gather_batching

ENTRY %main (operand: f32[3,7,5], ids: s32[3,4,1]) -> f32[3,4,5] {
  %operand = f32[3,7,5]{2,1,0} parameter(0)
  %ids = s32[3,4,1]{2,1,0} parameter(1)
  ROOT %rows = f32[3,4,5]{2,1,0} gather(%operand, %ids), offset_dims={2}, collapsed_slice_dims={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, start_index_map={1}, index_vector_dim=2, slice_sizes={1,1,5}
}
""", [batched, batch_ids], expected)

base = f32(11, 7)
rows = np.array([4, 0, 4, 10, 11, -1, 2, 4], dtype=np.int32)  # duplicates add; 11 and -1 drop
updates = f32(8, 7)
added = base.copy()
keep = (rows >= 0) & (rows < 11)
np.add.at(added, rows[keep], updates[keep])
case("scatter_add", """HloModule jit_scatter_add, entry_computation_layout={(f32[11,7]{1,0}, s32[8]{0}, f32[8,7]{1,0})->f32[11,7]{1,0}}

%region_0.4 (Arg_0.5: f32[], Arg_1.6: f32[]) -> f32[] {
  %Arg_0.5 = f32[] parameter(0)
  %Arg_1.6 = f32[] parameter(1)
  ROOT %add.7 = f32[] add(f32[] %Arg_0.5, f32[] %Arg_1.6), metadata={op_name="jit(f)/jit(main)/scatter-add"}
}

ENTRY %main.10 (Arg_0.1: f32[11,7], Arg_1.2: s32[8], Arg_2.3: f32[8,7]) -> f32[11,7] {
  %Arg_0.1 = f32[11,7]{1,0} parameter(0), metadata={op_name="x"}
  %Arg_1.2 = s32[8]{0} parameter(1), metadata={op_name="i"}
  %Arg_2.3 = f32[8,7]{1,0} parameter(2), metadata={op_name="v"}
  %reshape.8 = s32[8,1]{1,0} reshape(s32[8]{0} %Arg_1.2)
  ROOT %scatter.9 = f32[11,7]{1,0} scatter(f32[11,7]{1,0} %Arg_0.1, s32[8,1]{1,0} %reshape.8, f32[8,7]{1,0} %Arg_2.3), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%region_0.4, metadata={op_name="jit(f)/jit(main)/scatter-add" source_file="f.py" source_line=2}
}
""", [base, rows, updates], added)

target = rng.randint(-9, 9, size=(5, 6)).astype(np.int32)
corners = np.array([[0, 0], [3, 4], [2, 5], [-1, 1], [1, 2]], dtype=np.int32)  # [2,5] and [-1,1] drop
patches = rng.randint(-9, 9, size=(5, 2, 2)).astype(np.int32)
assigned = target.copy()
for (r, c), patch in zip(corners, patches):
    if 0 <= r <= 5 - 2 and 0 <= c <= 6 - 2:
        assigned[r:r + 2, c:c + 2] = patch
case("scatter_assign_windows", """HloModule scatter_assign_windows

%assign (old: s32[], new: s32[]) -> s32[] {
  %old = s32[] parameter(0)
  ROOT %new = s32[] parameter(1)
}

ENTRY %main (target: s32[5,6], corners: s32[5,2], patches: s32[5,2,2]) -> s32[5,6] {
  %target = s32[5,6]{1,0} parameter(0)
  %corners = s32[5,2]{1,0} parameter(1)
  %patches = s32[5,2,2]{2,1,0} parameter(2)
  ROOT %scattered = s32[5,6]{1,0} scatter(%target, %corners, %patches), update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, unique_indices=true, to_apply=%assign
}
""", [target, corners, patches], assigned)

counts = rng.randint(0, 5, size=(3, 6)).astype(np.int32)
slots = np.array([[5, 0, 5], [1, 6, 1], [2, 2, 2], [0, 3, 4]], dtype=np.int32)  # [4,3]: 6 drops
increments = rng.randint(1, 4, size=(4, 3)).astype(np.int32)  # [position, batch], as slots
summed = counts.copy()
for b in range(3):
    for j in range(4):
        if 0 <= slots[j, b] < 6:
            summed[b, slots[j, b]] += increments[j, b]
case("scatter_add_batching", """HloModule scatter_add_batching

%add (x: s32[], y: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  %y = s32[] parameter(1)
  ROOT %sum = s32[] add(%x, %y)
}

ENTRY %main (counts: s32[3,6], slots: s32[4,3], increments: s32[4,3]) -> s32[3,6] {
  %counts = s32[3,6]{1,0} parameter(0)
  %slots = s32[4,3]{1,0} parameter(1)
  %increments = s32[4,3]{1,0} parameter(2)
  ROOT %histogram = s32[3,6]{1,0} scatter(%counts, %slots, %increments), update_window_dims={}, inserted_window_dims={1}, input_batching_dims={0}, scatter_indices_batching_dims={1}, scatter_dims_to_operand_dims={1}, index_vector_dim=2, to_apply=%add
}
""", [counts, slots, increments], summed)

# --- sort -----------------------------------------------------------------------------------------
def argsort_text(shape):
    """JAX's pre-optimisation dump of jnp.argsort along the last dim of an f32[shape] ("3,7")."""
    return """HloModule jit_argsort, entry_computation_layout={{(f32[{shape}]{{1,0}})->(f32[{shape}]{{1,0}}, s32[{shape}]{{1,0}})}}

%region_0.3 (Arg_0.4: f32[], Arg_1.5: f32[], Arg_2.6: s32[], Arg_3.7: s32[]) -> pred[] {{
  %Arg_0.4 = f32[] parameter(0)
  %Arg_1.5 = f32[] parameter(1)
  %Arg_2.6 = s32[] parameter(2)
  %Arg_3.7 = s32[] parameter(3)
  ROOT %compare.8 = pred[] compare(f32[] %Arg_0.4, f32[] %Arg_1.5), direction=LT, type=TOTALORDER, metadata={{op_name="jit(argsort)/jit(main)/sort"}}
}}

ENTRY %main.12 (Arg_0.1: f32[{shape}]) -> (f32[{shape}], s32[{shape}]) {{
  %Arg_0.1 = f32[{shape}]{{1,0}} parameter(0), metadata={{op_name="x"}}
  %iota.2 = s32[{shape}]{{1,0}} iota(), iota_dimension=1, metadata={{op_name="jit(argsort)/jit(main)/iota"}}
  %sort.9 = (f32[{shape}]{{1,0}}, s32[{shape}]{{1,0}}) sort(f32[{shape}]{{1,0}} %Arg_0.1, s32[{shape}]{{1,0}} %iota.2), dimensions={{1}}, is_stable=true, to_apply=%region_0.3, metadata={{op_name="jit(argsort)/jit(main)/sort"}}
  %get-tuple-element.10 = f32[{shape}]{{1,0}} get-tuple-element((f32[{shape}]{{1,0}}, s32[{shape}]{{1,0}}) %sort.9), index=0
  %get-tuple-element.11 = s32[{shape}]{{1,0}} get-tuple-element((f32[{shape}]{{1,0}}, s32[{shape}]{{1,0}}) %sort.9), index=1
  ROOT %tuple.12 = (f32[{shape}]{{1,0}}, s32[{shape}]{{1,0}}) tuple(f32[{shape}]{{1,0}} %get-tuple-element.10, s32[{shape}]{{1,0}} %get-tuple-element.11)
}}
""".format(shape=shape)


# Oracle: a stable argsort of XLA's total-order key (the float's bits as a signed integer, negative
# values flipped): -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN.
def total_order_key(x):
    bits = x.view(np.int32).astype(np.int64)
    return np.where(bits < 0, bits ^ 0x7fffffff, bits)

keys = f32(3, 7)
keys[0, 1] = np.nan
keys[0, 4] = -np.inf
keys[1, 0] = np.float32(-0.0)
keys[1, 3] = np.float32(0.0)
keys[1, 5] = np.float32(-0.0)
keys[2, :] = np.array([1, 2, 1, np.inf, 2, 1, -np.inf], dtype=np.float32)
keys[2, 2] = np.frombuffer(np.array([0xffc00000], dtype=np.uint32).tobytes(), dtype=np.float32)[0]
order = np.argsort(total_order_key(keys), axis=1, kind="stable").astype(np.int32)
case("sort_argsort", argsort_text("3,7"), [keys], [np.take_along_axis(keys, order, axis=1), order])

# The same argsort over rows of 1,000 values (past the device's 64-element sort kernel: a bitonic
# network there): keys from 41 values, so most have ties that must keep their order, and NaNs,
# infinities and signed zeros.
long_keys = (np.random.RandomState(1000).randint(-20, 21, size=(3, 1000)) / 4).astype(np.float32)
long_keys[0, ::97] = np.nan
long_keys[1, ::89] = -np.inf
long_keys[2, ::83] = np.float32(-0.0)
long_order = np.argsort(total_order_key(long_keys), axis=1, kind="stable").astype(np.int32)
case("sort_argsort_long", argsort_text("3,1000"), [long_keys],
     [np.take_along_axis(long_keys, long_order, axis=1), long_order])

column = rng.randint(-20, 20, size=(5, 4)).astype(np.int32)
case("sort_descending", """HloModule sort_descending

%greater (a: s32[], b: s32[]) -> pred[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %gt = pred[] compare(%a, %b), direction=GT
}

ENTRY %main (x: s32[5,4]) -> s32[5,4] {
  %x = s32[5,4]{1,0} parameter(0)
  ROOT %sorted = s32[5,4]{1,0} sort(%x), dimensions={0}, to_apply=%greater
}
""", [column], -np.sort(-column, axis=0))

major = rng.randint(0, 3, size=(11,)).astype(np.int32)
minor = f32(11)
payload = np.arange(11, dtype=np.int32) * 10
lex = np.array(sorted(range(11), key=lambda i: (major[i], -minor[i])), dtype=np.int64)
case("sort_lexicographic", """HloModule sort_lexicographic

%major_then_minor_descending (a0: s32[], a1: s32[], b0: f32[], b1: f32[], c0: s32[], c1: s32[]) -> pred[] {
  %a0 = s32[] parameter(0)
  %a1 = s32[] parameter(1)
  %b0 = f32[] parameter(2)
  %b1 = f32[] parameter(3)
  %c0 = s32[] parameter(4)
  %c1 = s32[] parameter(5)
  %less = pred[] compare(%a0, %a1), direction=LT
  %same = pred[] compare(%a0, %a1), direction=EQ
  %greater = pred[] compare(%b0, %b1), direction=GT
  %then = pred[] and(%same, %greater)
  ROOT %before = pred[] or(%less, %then)
}

ENTRY %main (a: s32[11], b: f32[11], c: s32[11]) -> (s32[11], f32[11], s32[11]) {
  %a = s32[11]{0} parameter(0)
  %b = f32[11]{0} parameter(1)
  %c = s32[11]{0} parameter(2)
  %sorted = (s32[11]{0}, f32[11]{0}, s32[11]{0}) sort(%a, %b, %c), dimensions={0}, is_stable=true, to_apply=%major_then_minor_descending
  %a_sorted = s32[11]{0} get-tuple-element(%sorted), index=0
  %b_sorted = f32[11]{0} get-tuple-element(%sorted), index=1
  %c_sorted = s32[11]{0} get-tuple-element(%sorted), index=2
  ROOT %result = (s32[11]{0}, f32[11]{0}, s32[11]{0}) tuple(%a_sorted, %b_sorted, %c_sorted)
}
""", [major, minor, payload], [major[lex], minor[lex], payload[lex]])

# --- partially manual regions (JAX's shard_map with auto= axes, issue 19) -----------------------
# Each program is the unpartitioned SPMD program every device runs (the same inputs on all); a
# region's value belongs to its manual group. Mesh ("x", "y") = 2x2 with devices 2x + y, manual
# over y unless said otherwise. Own RandomState, so the cases above keep their data.
pm_rng = np.random.RandomState(1919)
def pm_f32(*shape):
    return pm_rng.uniform(-2, 2, size=shape).astype(np.float32)

PM_HEADER = "HloModule {name}, entry_computation_layout={{{layout}}}, num_partitions={n}\n"
def pm_meta(op):
    return f'metadata={{op_name="jit(f)/jit(main)/shmap_body/{op}" source_file="/tmp/f.py" source_line=7}}'

# lax.all_gather(sin(a_y), "y", axis=1, tiled=True) with a in P(None, "y"), rows constrained to
# P("x") inside, out_specs P(): sin(a) on every device.
a = pm_f32(8, 6)
case("shard_map_auto_all_gather", PM_HEADER.format(name="jit_f", layout="(f32[8,6]{1,0})->f32[8,6]{1,0}", n=4) + f"""
ENTRY %main.9 (Arg_0.1: f32[8,6]) -> f32[8,6] {{
  %Arg_0.1 = f32[8,6]{{1,0}} parameter(0), sharding={{devices=[2,2]<=[4]}}, metadata={{op_name="a"}}
  %custom-call.2 = f32[8,6]{{1,0}} custom-call(f32[8,6]{{1,0}} %Arg_0.1), custom_call_target="Sharding", sharding={{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}}, backend_config="unspecified_dims=[0,1]"
  %custom-call.3 = f32[8,3]{{1,0}} custom-call(f32[8,6]{{1,0}} %custom-call.2), custom_call_target="SPMDFullToShardShape", sharding={{devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={{manual, replicated}}}}, backend_config="unspecified_dims=[0,1]"
  %custom-call.4 = f32[8,3]{{1,0}} custom-call(f32[8,3]{{1,0}} %custom-call.3), custom_call_target="Sharding", sharding={{devices=[2,1,2]<=[4] last_tile_dims={{manual}}}}, {pm_meta("sharding_constraint")}
  %sine.5 = f32[8,3]{{1,0}} sine(f32[8,3]{{1,0}} %custom-call.4), {pm_meta("sin")}
  %all-gather.6 = f32[8,6]{{1,0}} all-gather(f32[8,3]{{1,0}} %sine.5), channel_id=1, replica_groups={{{{0,1}},{{2,3}}}}, dimensions={{1}}, use_global_device_ids=true, {pm_meta("all_gather")}
  %custom-call.7 = f32[8,6]{{1,0}} custom-call(f32[8,6]{{1,0}} %all-gather.6), custom_call_target="Sharding", sharding={{devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={{manual, replicated}}}}, backend_config="unspecified_dims=[0,1]"
  ROOT %custom-call.8 = f32[8,6]{{1,0}} custom-call(f32[8,6]{{1,0}} %custom-call.7), custom_call_target="SPMDShardToFullShape", sharding={{replicated}}, backend_config="unspecified_dims=[0,1]"
}}
""", [[a]] * 4, [np.sin(a)] * 4, devices=4)

# lax.psum_scatter(tanh(a_y), "y", scatter_dimension=0, tiled=True) with a in P(None, "y"), the
# columns constrained to P(None, "x") inside, out_specs P("y"): each y group keeps its half of the
# rows of tanh(a[:, :2]) + tanh(a[:, 2:]).
a = pm_f32(8, 4)
case("shard_map_auto_reduce_scatter", PM_HEADER.format(name="jit_f", layout="(f32[8,4]{1,0})->f32[8,2]{1,0}", n=4) + ADD_F32 + f"""
ENTRY %main.9 (Arg_0.1: f32[8,4]) -> f32[8,2] {{
  %Arg_0.1 = f32[8,4]{{1,0}} parameter(0), sharding={{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}}, metadata={{op_name="a"}}
  %custom-call.2 = f32[8,4]{{1,0}} custom-call(f32[8,4]{{1,0}} %Arg_0.1), custom_call_target="Sharding", sharding={{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}}, backend_config="unspecified_dims=[0,1]"
  %custom-call.3 = f32[8,2]{{1,0}} custom-call(f32[8,4]{{1,0}} %custom-call.2), custom_call_target="SPMDFullToShardShape", sharding={{devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={{manual, replicated}}}}, backend_config="unspecified_dims=[0,1]"
  %custom-call.4 = f32[8,2]{{1,0}} custom-call(f32[8,2]{{1,0}} %custom-call.3), custom_call_target="Sharding", sharding={{devices=[1,2,2]<=[4] last_tile_dims={{manual}}}}, {pm_meta("sharding_constraint")}
  %tanh.5 = f32[8,2]{{1,0}} tanh(f32[8,2]{{1,0}} %custom-call.4), {pm_meta("tanh")}
  %reduce-scatter.6 = f32[4,2]{{1,0}} reduce-scatter(f32[8,2]{{1,0}} %tanh.5), channel_id=1, replica_groups={{{{0,1}},{{2,3}}}}, use_global_device_ids=true, dimensions={{0}}, to_apply=%add.f32, {pm_meta("reduce_scatter")}
  %custom-call.7 = f32[4,2]{{1,0}} custom-call(f32[4,2]{{1,0}} %reduce-scatter.6), custom_call_target="Sharding", sharding={{devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={{manual, replicated}}}}, backend_config="unspecified_dims=[0,1]"
  ROOT %custom-call.8 = f32[8,2]{{1,0}} custom-call(f32[4,2]{{1,0}} %custom-call.7), custom_call_target="SPMDShardToFullShape", sharding={{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}}, backend_config="unspecified_dims=[0,1]"
}}
""", [[a]] * 4, [np.tanh(a[:, :2]) + np.tanh(a[:, 2:])] * 4, devices=4)

# lax.all_to_all(a_y * 3, "y", 0, 0, tiled=True) with a in P("y"), the columns constrained to
# P(None, "x") inside, out_specs P("y"): y group g receives rows [2g, 2g+2) of both groups' blocks.
a = pm_f32(8, 6)
case("shard_map_auto_all_to_all", PM_HEADER.format(name="jit_f", layout="(f32[8,6]{1,0})->f32[8,6]{1,0}", n=4) + f"""
ENTRY %main.11 (Arg_0.1: f32[8,6]) -> f32[8,6] {{
  %Arg_0.1 = f32[8,6]{{1,0}} parameter(0), sharding={{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}}, metadata={{op_name="a"}}
  %custom-call.2 = f32[8,6]{{1,0}} custom-call(f32[8,6]{{1,0}} %Arg_0.1), custom_call_target="Sharding", sharding={{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}}, backend_config="unspecified_dims=[0,1]"
  %custom-call.3 = f32[4,6]{{1,0}} custom-call(f32[8,6]{{1,0}} %custom-call.2), custom_call_target="SPMDFullToShardShape", sharding={{devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={{manual, replicated}}}}, backend_config="unspecified_dims=[0,1]"
  %custom-call.4 = f32[4,6]{{1,0}} custom-call(f32[4,6]{{1,0}} %custom-call.3), custom_call_target="Sharding", sharding={{devices=[1,2,2]<=[4] last_tile_dims={{manual}}}}, {pm_meta("sharding_constraint")}
  %constant.5 = f32[] constant(3)
  %broadcast.6 = f32[4,6]{{1,0}} broadcast(f32[] %constant.5), dimensions={{}}
  %multiply.7 = f32[4,6]{{1,0}} multiply(f32[4,6]{{1,0}} %custom-call.4, f32[4,6]{{1,0}} %broadcast.6), {pm_meta("mul")}
  %all-to-all.8 = f32[4,6]{{1,0}} all-to-all(f32[4,6]{{1,0}} %multiply.7), channel_id=1, replica_groups={{{{0,1}},{{2,3}}}}, dimensions={{0}}, {pm_meta("all_to_all")}
  %custom-call.9 = f32[4,6]{{1,0}} custom-call(f32[4,6]{{1,0}} %all-to-all.8), custom_call_target="Sharding", sharding={{devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={{manual, replicated}}}}, backend_config="unspecified_dims=[0,1]"
  ROOT %custom-call.10 = f32[8,6]{{1,0}} custom-call(f32[4,6]{{1,0}} %custom-call.9), custom_call_target="SPMDShardToFullShape", sharding={{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}}, backend_config="unspecified_dims=[0,1]"
}}
""", [[a]] * 4, [3 * np.concatenate([a[0:2], a[4:6], a[2:4], a[6:8]])] * 4, devices=4)

# partition-id inside the region: every device scales its rows of its group's block by its own
# partition id + 1, as XLA's partition-id gives it (the global id, 2x + y). a in P("y"), rows
# constrained to P("x") inside; the region is left with the rows still split over x (out_specs
# P("y") after XLA's propagation kept x), so device 2x + y writes rows [4y + 2x, 4y + 2x + 2).
a = pm_f32(8, 3)
scaled = a.copy()
for x in range(2):
    for y in range(2):
        rows = slice(4 * y + 2 * x, 4 * y + 2 * x + 2)
        scaled[rows] = a[rows] * (2 * x + y + 1)
case("shard_map_auto_partition_id", PM_HEADER.format(name="jit_f", layout="(f32[8,3]{1,0})->f32[8,3]{1,0}", n=4) + f"""
ENTRY %main.14 (Arg_0.1: f32[8,3]) -> f32[8,3] {{
  %Arg_0.1 = f32[8,3]{{1,0}} parameter(0), sharding={{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}}, metadata={{op_name="a"}}
  %custom-call.2 = f32[4,3]{{1,0}} custom-call(f32[8,3]{{1,0}} %Arg_0.1), custom_call_target="SPMDFullToShardShape", sharding={{devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={{manual, replicated}}}}
  %custom-call.3 = f32[4,3]{{1,0}} custom-call(f32[4,3]{{1,0}} %custom-call.2), custom_call_target="Sharding", sharding={{devices=[2,1,2]<=[4] last_tile_dims={{manual}}}}, {pm_meta("sharding_constraint")}
  %partition-id.4 = u32[] partition-id(), {pm_meta("axis_index")}
  %constant.5 = u32[] constant(1)
  %add.6 = u32[] add(u32[] %partition-id.4, u32[] %constant.5)
  %convert.7 = f32[] convert(u32[] %add.6)
  %broadcast.8 = f32[4,3]{{1,0}} broadcast(f32[] %convert.7), dimensions={{}}
  %multiply.9 = f32[4,3]{{1,0}} multiply(f32[4,3]{{1,0}} %custom-call.3, f32[4,3]{{1,0}} %broadcast.8), {pm_meta("mul")}
  %custom-call.10 = f32[4,3]{{1,0}} custom-call(f32[4,3]{{1,0}} %multiply.9), custom_call_target="Sharding", sharding={{devices=[2,1,2]<=[4] last_tile_dims={{manual}}}}
  ROOT %custom-call.11 = f32[8,3]{{1,0}} custom-call(f32[4,3]{{1,0}} %custom-call.10), custom_call_target="SPMDShardToFullShape", sharding={{devices=[4,1]<=[2,2]T(1,0)}}
}}
""", [[a]] * 4, [scaled] * 4, devices=4)

# Manual groups laid out by an explicit device list, not along the mesh's axes: groups {0,3} and
# {1,2}. a in P("m") (rows 0-3 to {0,3}, 4-7 to {1,2}), rows split inside over the other axis
# ({0,1} hold rows 0-1 of their groups' blocks, {3,2} rows 2-3); lax.psum over m (devices holding
# the same rows: {0,1} and {3,2}) of tanh, out_specs P().
a = pm_f32(8, 6)
case("shard_map_auto_permuted_groups", PM_HEADER.format(name="jit_f", layout="(f32[8,6]{1,0})->f32[4,6]{1,0}", n=4) + ADD_F32 + f"""
ENTRY %main.10 (Arg_0.1: f32[8,6]) -> f32[4,6] {{
  %Arg_0.1 = f32[8,6]{{1,0}} parameter(0), sharding={{devices=[2,1,2]0,3,1,2 last_tile_dim_replicate}}, metadata={{op_name="a"}}
  %custom-call.2 = f32[8,6]{{1,0}} custom-call(f32[8,6]{{1,0}} %Arg_0.1), custom_call_target="Sharding", sharding={{devices=[2,1,2]0,3,1,2 last_tile_dim_replicate}}
  %custom-call.3 = f32[4,6]{{1,0}} custom-call(f32[8,6]{{1,0}} %custom-call.2), custom_call_target="SPMDFullToShardShape", sharding={{devices=[1,1,2,2]0,3,1,2 last_tile_dims={{manual, replicated}}}}
  %custom-call.4 = f32[4,6]{{1,0}} custom-call(f32[4,6]{{1,0}} %custom-call.3), custom_call_target="Sharding", sharding={{devices=[2,1,2]0,1,3,2 last_tile_dims={{manual}}}}, {pm_meta("sharding_constraint")}
  %tanh.5 = f32[4,6]{{1,0}} tanh(f32[4,6]{{1,0}} %custom-call.4), {pm_meta("tanh")}
  %all-reduce.6 = f32[4,6]{{1,0}} all-reduce(f32[4,6]{{1,0}} %tanh.5), channel_id=1, replica_groups={{{{0,1}},{{3,2}}}}, use_global_device_ids=true, to_apply=%add.f32, {pm_meta("psum")}
  %custom-call.7 = f32[4,6]{{1,0}} custom-call(f32[4,6]{{1,0}} %all-reduce.6), custom_call_target="Sharding", sharding={{devices=[1,1,2,2]0,3,1,2 last_tile_dims={{manual, replicated}}}}
  ROOT %custom-call.8 = f32[4,6]{{1,0}} custom-call(f32[4,6]{{1,0}} %custom-call.7), custom_call_target="SPMDShardToFullShape", sharding={{replicated}}
}}
""", [[a]] * 4, [np.tanh(a[:4]) + np.tanh(a[4:])] * 4, devices=4)

# Eight devices as a logical mesh (a, b, c) laid out by the list 0,3,5,6,1,2,4,7 (device at
# [a][b][c] is entry 4a + 2b + c), manual over b: groups {0,3,1,2} and {5,6,4,7}. a in P("b"),
# rows split over a and columns over c inside; lax.psum over b of tanh and lax.all_gather of tanh
# over b along the columns, concatenated: [tanh(a0) | tanh(a1) | tanh(a0) + tanh(a1)] for the
# two row blocks a0, a1.
a = pm_f32(8, 6)
t0, t1 = np.tanh(a[:4]), np.tanh(a[4:])
case("shard_map_auto_permuted_8", PM_HEADER.format(name="jit_f", layout="(f32[8,6]{1,0})->f32[4,18]{1,0}", n=8) + ADD_F32 + f"""
ENTRY %main.12 (Arg_0.1: f32[8,6]) -> f32[4,18] {{
  %Arg_0.1 = f32[8,6]{{1,0}} parameter(0), sharding={{devices=[2,1,4]0,3,1,2,5,6,4,7 last_tile_dim_replicate}}, metadata={{op_name="a"}}
  %custom-call.2 = f32[4,6]{{1,0}} custom-call(f32[8,6]{{1,0}} %Arg_0.1), custom_call_target="SPMDFullToShardShape", sharding={{devices=[1,1,2,4]0,3,1,2,5,6,4,7 last_tile_dims={{manual, replicated}}}}
  %custom-call.3 = f32[4,6]{{1,0}} custom-call(f32[4,6]{{1,0}} %custom-call.2), custom_call_target="Sharding", sharding={{devices=[2,2,2]0,5,3,6,1,4,2,7 last_tile_dims={{manual}}}}, {pm_meta("sharding_constraint")}
  %tanh.4 = f32[4,6]{{1,0}} tanh(f32[4,6]{{1,0}} %custom-call.3), {pm_meta("tanh")}
  %all-reduce.5 = f32[4,6]{{1,0}} all-reduce(f32[4,6]{{1,0}} %tanh.4), channel_id=1, replica_groups={{{{0,5}},{{3,6}},{{1,4}},{{2,7}}}}, use_global_device_ids=true, to_apply=%add.f32, {pm_meta("psum")}
  %all-gather.6 = f32[4,12]{{1,0}} all-gather(f32[4,6]{{1,0}} %tanh.4), channel_id=2, replica_groups={{{{0,5}},{{3,6}},{{1,4}},{{2,7}}}}, dimensions={{1}}, use_global_device_ids=true, {pm_meta("all_gather")}
  %concatenate.7 = f32[4,18]{{1,0}} concatenate(f32[4,12]{{1,0}} %all-gather.6, f32[4,6]{{1,0}} %all-reduce.5), dimensions={{1}}
  %custom-call.8 = f32[4,18]{{1,0}} custom-call(f32[4,18]{{1,0}} %concatenate.7), custom_call_target="Sharding", sharding={{devices=[1,1,2,4]0,3,1,2,5,6,4,7 last_tile_dims={{manual, replicated}}}}
  ROOT %custom-call.9 = f32[4,18]{{1,0}} custom-call(f32[4,18]{{1,0}} %custom-call.8), custom_call_target="SPMDShardToFullShape", sharding={{replicated}}
}}
""", [[a]] * 8, [np.concatenate([t0, t1, t0 + t1], axis=1)] * 8, devices=8)

# jax.lax.with_sharding_constraint(tanh(a), P(P.UNCONSTRAINED, "y")) in plain jit code: the
# constraint fixes the columns over y and leaves the rows to propagation (unspecified_dims=[0]),
# which keeps them split over x as a is: no collective. 2 * tanh(a).
a = pm_f32(8, 6)
case("sharding_unspecified_dims", """HloModule jit_g, entry_computation_layout={(f32[8,6]{1,0})->f32[8,6]{1,0}}, num_partitions=4

ENTRY %main.7 (Arg_0.1: f32[8,6]) -> f32[8,6] {
  %Arg_0.1 = f32[8,6]{1,0} parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}, metadata={op_name="a"}
  %tanh.2 = f32[8,6]{1,0} tanh(f32[8,6]{1,0} %Arg_0.1), metadata={op_name="jit(g)/jit(main)/tanh" source_file="/tmp/g.py" source_line=5}
  %custom-call.3 = f32[8,6]{1,0} custom-call(f32[8,6]{1,0} %tanh.2), custom_call_target="Sharding", sharding={devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}, backend_config="unspecified_dims=[0]", metadata={op_name="jit(g)/jit(main)/sharding_constraint" source_file="/tmp/g.py" source_line=6}
  %constant.4 = f32[] constant(2)
  %broadcast.5 = f32[8,6]{1,0} broadcast(f32[] %constant.4), dimensions={}
  ROOT %multiply.6 = f32[8,6]{1,0} multiply(f32[8,6]{1,0} %custom-call.3, f32[8,6]{1,0} %broadcast.5), metadata={op_name="jit(g)/jit(main)/mul" source_file="/tmp/g.py" source_line=7}
}
""", [a], 2 * np.tanh(a))

# Collectives over several operands inside the region, as XLA's combiners write them (and JAX's
# psum of a tuple): a in P(None, "y"), rows constrained to P("x") inside; all-reduce(t, s) and
# all-gather(t, s) over y of t = tanh(a_y), s = sin(a_y), and an all-to-all(t, s) without
# dimensions= (y member j receives operand j of each member), concatenated along the columns;
# out_specs P(None, "y"). Each y group's block: [T | S | tanh(a) | sin(a) | x_0 | x_1] with
# T, S the sums over both column halves a0, a1 and x = (t, t) for y = 0, (s, s) for y = 1.
a = pm_f32(8, 6)
a0, a1 = a[:, :3], a[:, 3:]
common = [np.tanh(a0) + np.tanh(a1), np.sin(a0) + np.sin(a1), np.tanh(a), np.sin(a)]
tuple_out = np.concatenate(common + [np.tanh(a0), np.tanh(a1)] + common + [np.sin(a0), np.sin(a1)], axis=1)
case("shard_map_auto_tuple_collectives", PM_HEADER.format(name="jit_f", layout="(f32[8,6]{1,0})->f32[8,48]{1,0}", n=4) + ADD_F32 + f"""
ENTRY %main.24 (Arg_0.1: f32[8,6]) -> f32[8,48] {{
  %Arg_0.1 = f32[8,6]{{1,0}} parameter(0), sharding={{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}}, metadata={{op_name="a"}}
  %custom-call.2 = f32[8,6]{{1,0}} custom-call(f32[8,6]{{1,0}} %Arg_0.1), custom_call_target="Sharding", sharding={{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}}, backend_config="unspecified_dims=[0]"
  %custom-call.3 = f32[8,3]{{1,0}} custom-call(f32[8,6]{{1,0}} %custom-call.2), custom_call_target="SPMDFullToShardShape", sharding={{devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={{manual, replicated}}}}, backend_config="unspecified_dims=[0]"
  %custom-call.4 = f32[8,3]{{1,0}} custom-call(f32[8,3]{{1,0}} %custom-call.3), custom_call_target="Sharding", sharding={{devices=[2,1,2]<=[4] last_tile_dims={{manual}}}}, {pm_meta("sharding_constraint")}
  %tanh.5 = f32[8,3]{{1,0}} tanh(f32[8,3]{{1,0}} %custom-call.4), {pm_meta("tanh")}
  %sine.6 = f32[8,3]{{1,0}} sine(f32[8,3]{{1,0}} %custom-call.4), {pm_meta("sin")}
  %all-reduce.7 = (f32[8,3]{{1,0}}, f32[8,3]{{1,0}}) all-reduce(f32[8,3]{{1,0}} %tanh.5, f32[8,3]{{1,0}} %sine.6), channel_id=1, replica_groups={{{{0,1}},{{2,3}}}}, use_global_device_ids=true, to_apply=%add.f32, {pm_meta("psum")}
  %get-tuple-element.8 = f32[8,3]{{1,0}} get-tuple-element((f32[8,3]{{1,0}}, f32[8,3]{{1,0}}) %all-reduce.7), index=0
  %get-tuple-element.9 = f32[8,3]{{1,0}} get-tuple-element((f32[8,3]{{1,0}}, f32[8,3]{{1,0}}) %all-reduce.7), index=1
  %all-gather.10 = (f32[8,6]{{1,0}}, f32[8,6]{{1,0}}) all-gather(f32[8,3]{{1,0}} %tanh.5, f32[8,3]{{1,0}} %sine.6), channel_id=2, replica_groups={{{{0,1}},{{2,3}}}}, dimensions={{1}}, use_global_device_ids=true, {pm_meta("all_gather")}
  %get-tuple-element.11 = f32[8,6]{{1,0}} get-tuple-element((f32[8,6]{{1,0}}, f32[8,6]{{1,0}}) %all-gather.10), index=0
  %get-tuple-element.12 = f32[8,6]{{1,0}} get-tuple-element((f32[8,6]{{1,0}}, f32[8,6]{{1,0}}) %all-gather.10), index=1
  %all-to-all.13 = (f32[8,3]{{1,0}}, f32[8,3]{{1,0}}) all-to-all(f32[8,3]{{1,0}} %tanh.5, f32[8,3]{{1,0}} %sine.6), channel_id=3, replica_groups={{{{0,1}},{{2,3}}}}, {pm_meta("all_to_all")}
  %get-tuple-element.14 = f32[8,3]{{1,0}} get-tuple-element((f32[8,3]{{1,0}}, f32[8,3]{{1,0}}) %all-to-all.13), index=0
  %get-tuple-element.15 = f32[8,3]{{1,0}} get-tuple-element((f32[8,3]{{1,0}}, f32[8,3]{{1,0}}) %all-to-all.13), index=1
  %concatenate.16 = f32[8,24]{{1,0}} concatenate(f32[8,3]{{1,0}} %get-tuple-element.8, f32[8,3]{{1,0}} %get-tuple-element.9, f32[8,6]{{1,0}} %get-tuple-element.11, f32[8,6]{{1,0}} %get-tuple-element.12, f32[8,3]{{1,0}} %get-tuple-element.14, f32[8,3]{{1,0}} %get-tuple-element.15), dimensions={{1}}
  %custom-call.17 = f32[8,24]{{1,0}} custom-call(f32[8,24]{{1,0}} %concatenate.16), custom_call_target="Sharding", sharding={{devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={{manual, replicated}}}}, backend_config="unspecified_dims=[0]"
  ROOT %custom-call.18 = f32[8,48]{{1,0}} custom-call(f32[8,24]{{1,0}} %custom-call.17), custom_call_target="SPMDShardToFullShape", sharding={{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}}, backend_config="unspecified_dims=[0]"
}}
""", [[a]] * 4, [tuple_out] * 4, devices=4)

# A stencil along an automatic axis inside the region: a in P(None, "y"), rows constrained to
# P("x") inside; t = tanh(a_y), its rows shifted up by one (slice [1:8], pad one zero row below)
# and added to t; out_specs P(None, "y"). Each device needs one row of its x neighbour's shard.
a = pm_f32(8, 6)
t = np.tanh(a)
halo_out = t + np.concatenate([t[1:], np.zeros((1, 6), np.float32)])
case("shard_map_auto_halo", PM_HEADER.format(name="jit_f", layout="(f32[8,6]{1,0})->f32[8,6]{1,0}", n=4) + f"""
ENTRY %main.11 (Arg_0.1: f32[8,6]) -> f32[8,6] {{
  %Arg_0.1 = f32[8,6]{{1,0}} parameter(0), sharding={{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}}, metadata={{op_name="a"}}
  %custom-call.2 = f32[8,3]{{1,0}} custom-call(f32[8,6]{{1,0}} %Arg_0.1), custom_call_target="SPMDFullToShardShape", sharding={{devices=[1,1,2,2]<=[2,2]T(1,0) last_tile_dims={{manual, replicated}}}}
  %custom-call.3 = f32[8,3]{{1,0}} custom-call(f32[8,3]{{1,0}} %custom-call.2), custom_call_target="Sharding", sharding={{devices=[2,1,2]<=[4] last_tile_dims={{manual}}}}, {pm_meta("sharding_constraint")}
  %tanh.4 = f32[8,3]{{1,0}} tanh(f32[8,3]{{1,0}} %custom-call.3), {pm_meta("tanh")}
  %slice.5 = f32[7,3]{{1,0}} slice(f32[8,3]{{1,0}} %tanh.4), slice={{[1:8], [0:3]}}, {pm_meta("slice")}
  %constant.6 = f32[] constant(0)
  %pad.7 = f32[8,3]{{1,0}} pad(f32[7,3]{{1,0}} %slice.5, f32[] %constant.6), padding=0_1x0_0, {pm_meta("pad")}
  %add.8 = f32[8,3]{{1,0}} add(f32[8,3]{{1,0}} %tanh.4, f32[8,3]{{1,0}} %pad.7), {pm_meta("add")}
  %custom-call.9 = f32[8,3]{{1,0}} custom-call(f32[8,3]{{1,0}} %add.8), custom_call_target="Sharding", sharding={{devices=[2,1,2]<=[4] last_tile_dims={{manual}}}}
  ROOT %custom-call.10 = f32[8,6]{{1,0}} custom-call(f32[8,3]{{1,0}} %custom-call.9), custom_call_target="SPMDShardToFullShape", sharding={{devices=[2,2]<=[4]}}
}}
""", [[a]] * 4, [halo_out] * 4, devices=4)

for name, hlo, args, outputs, devices in CASES:
    write(name, hlo, args, outputs, devices)
print(f"wrote {len(CASES)} cases")
