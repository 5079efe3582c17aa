# What the NumPy oracles of tests/testdata (generate.py, dumps/generate.py and the modules beside
# it) share so that a rerun writes the same bits on x86-64 machines with AVX2 and FMA3, with or
# without AVX-512 (docs/ir.md, "Tests", says what differs elsewhere).
import numpy as np


def matmul(a, b):
    """a @ b of float arrays (2-D, or batched with broadcastable leading dims), rounded to float32,
    without BLAS: OpenBLAS picks its sgemm kernel by the CPU (an unrecognised virtual Xeon gets
    'Prescott', an AVX-512 one 'SkylakeX'), each kernel sums in its own order, and the last bits of
    a float32 `@` changed with the machine. Here the products are exact in float64, summed in
    index order, and rounded once to float32."""
    a64 = np.asarray(a, np.float64)
    b64 = np.asarray(b, np.float64)
    return (a64[..., :, :, None] * b64[..., None, :, :]).sum(axis=-2).astype(np.float32)


def in_float64(function, *args):
    """function(*args) of float32 arrays, evaluated in float64 and rounded once to float32. NumPy's
    float32 log1p, expm1 and power take AVX-512 SIMD code (Intel's SVML) where the CPU has it and
    libm or other SIMD code elsewhere, which differ in the last bit (an AVX-512 and an AVX2 machine
    wrote different unary_math.out.4/.5 and binary_math.out.0). Their float64 forms differ too,
    but by far less than a float32 ulp, so the rounded results agree unless a value falls within
    a few float64 ulps of a float32 rounding boundary; check_generated.py reruns the generators
    with AVX-512 off to see that none does."""
    return function(*(np.asarray(a, np.float64) for a in args)).astype(np.float32)
