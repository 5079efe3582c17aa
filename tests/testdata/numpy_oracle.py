# What the NumPy oracles of tests/testdata (generate.py, dumps/generate.py and the modules beside
# it) share so that a rerun writes the same bits on any machine.
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
