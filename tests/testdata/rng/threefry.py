#!/usr/bin/python3
# NumPy oracle for rng-bit-generator with algorithm=rng_three_fry: Threefry-2x32 with 20 rounds
# (Salmon et al., SC 2011), checked against the Random123 known-answer vectors, laid out as XLA's
# RngBitGenerator expander does (xla/client/lib/prng.cc, ThreeFryBitGenerator). Writes, for each
# case, threefry.NAME.state.npy (u64[2]: key, counter), threefry.NAME.bits.npy and
# threefry.NAME.new_state.npy here. With --check it writes them to a temporary folder instead and
# exits 1 unless they equal the checked-in files byte for byte (77 where NumPy is missing).
import filecmp
import glob
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROTATIONS = [13, 15, 26, 6, 17, 29, 16, 24]
PARITY = 0x1BD11BDA

# name, dtype, shape, key, counter
CASES = [
    ("xla_zero", "uint32", (3, 2), 0, 0),
    ("u32_odd_dims", "uint32", (7, 5), 0x0123456789ABCDEF, 2**64 - 3),
    ("u64", "uint64", (3, 3), 0xFEDCBA9876543210, 0xFFFFFFFD),
    ("u64_odd", "uint64", (5,), 1, 2),
    ("s32_even", "int32", (4, 6), 42, 7),
    ("u8_odd", "uint8", (13,), 2**64 - 1, 2**64 - 1),
    ("u16_last_dim_even", "uint16", (5, 3, 4), 5, 1000),
    ("u32_scalar", "uint32", (), 9, 3),
]


def threefry2x32(np, key, x0, x1):
    """Threefry-2x32, 20 rounds: the blocks (x0[i], x1[i]) under the key (key[0], key[1])."""
    u32 = np.uint32
    ks = [u32(key[0]), u32(key[1]), u32(PARITY ^ key[0] ^ key[1])]
    x0 = np.asarray(x0, dtype=np.uint32) + ks[0]
    x1 = np.asarray(x1, dtype=np.uint32) + ks[1]
    for block in range(5):
        for r in range(4):
            rotation = ROTATIONS[(block % 2) * 4 + r]
            x0 = x0 + x1
            x1 = ((x1 << u32(rotation)) | (x1 >> u32(32 - rotation))) ^ x0
        x0 = x0 + ks[(block + 1) % 3]
        x1 = x1 + ks[(block + 2) % 3] + u32(block + 1)
    return x0.astype(np.uint32), x1.astype(np.uint32)


def check_known_answers(np):
    # Random123's kat_vectors, "threefry2x32 20 ctr0 ctr1 key0 key1 -> out0 out1".
    m = 0xFFFFFFFF
    for ctr, key, want in [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
                           ((m, m), (m, m), (0x1CB996FC, 0xBB002BE7)),
                           ((0x243F6A88, 0x85A308D3), (0x13198A2E, 0x03707344),
                            (0xC4923A9C, 0x483DF7A0))]:
        y0, y1 = threefry2x32(np, key, [ctr[0]], [ctr[1]])
        got = (int(y0[0]), int(y1[0]))
        assert got == want, f"Threefry-2x32 known answer: {got} != {want}"


def blocks(np, key, counter, count):
    """The two output words of the blocks counter, counter + 1, ... (wrapping at 2^64)."""
    c = (np.uint64(counter) + np.arange(count, dtype=np.uint64)).astype(np.uint64)
    lo = (c & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    hi = (c >> np.uint64(32)).astype(np.uint32)
    return threefry2x32(np, (key & 0xFFFFFFFF, key >> 32), lo, hi)


def rng_three_fry(np, dtype, shape, key, counter):
    """(bits, new counter) as XLA's ThreeFryBitGenerator lays them out."""
    n = int(np.prod(shape, dtype=np.int64))
    if np.dtype(dtype).itemsize == 8:
        w0, w1 = blocks(np, key, counter, n)
        bits = w0.astype(np.uint64) | (w1.astype(np.uint64) << np.uint64(32))
        return bits.reshape(shape).view(dtype), (counter + n) % 2**64
    unsigned = np.dtype(dtype).str.replace("i", "u")
    if len(shape) == 0:  # word 0 of one block
        w0, _ = blocks(np, key, counter, 1)
        return w0.reshape(()).astype(unsigned).view(dtype), (counter + 1) % 2**64
    # SplitShapeIntoHalves: the first even dim, else the first largest one.
    even = [d for d, size in enumerate(shape) if size % 2 == 0]
    paired = even[0] if even else int(np.argmax(shape))
    half = list(shape)
    half[paired] = (shape[paired] + 1) // 2
    count = int(np.prod(half, dtype=np.int64))
    w0, w1 = blocks(np, key, counter, count)
    pairs = np.stack([w0.reshape(half), w1.reshape(half)], axis=paired + 1)
    full = list(shape)
    full[paired] = 2 * half[paired]
    words = pairs.reshape(full)
    words = words[tuple(slice(0, size) for size in shape)]
    return words.astype(unsigned).view(dtype), (counter + count) % 2**64


def write_all(np, folder):
    check_known_answers(np)
    # XLA's own output for state (0, 0) and u32[3,2] (as printed by the R package anvil, which
    # runs XLA's CPU backend): 1.7973e+09 2.5791e+09 / 1.3515e+09 3.2358e+09 / 1.6886e+09
    # 4.2293e+09, new state (0, 3).
    bits, new_counter = rng_three_fry(np, "uint32", (3, 2), 0, 0)
    assert new_counter == 3
    assert np.allclose(bits.astype(np.float64) / 1e9,
                       [[1.7973, 2.5791], [1.3515, 3.2358], [1.6886, 4.2293]], atol=1e-4), bits
    for name, dtype, shape, key, counter in CASES:
        bits, new_counter = rng_three_fry(np, dtype, shape, key, counter)
        assert bits.dtype == np.dtype(dtype) and bits.shape == shape
        np.save(os.path.join(folder, f"threefry.{name}.state.npy"),
                np.array([key, counter], dtype=np.uint64))
        np.save(os.path.join(folder, f"threefry.{name}.bits.npy"), bits.copy(order="C"))
        np.save(os.path.join(folder, f"threefry.{name}.new_state.npy"),
                np.array([key, new_counter], dtype=np.uint64))


def main():
    try:
        import numpy as np
    except ImportError:
        print(f"SKIPPED: {sys.executable} has no numpy")
        return 77
    np.seterr(over="ignore")
    if "--check" not in sys.argv:
        write_all(np, HERE)
        return 0
    with tempfile.TemporaryDirectory() as work:
        write_all(np, work)
        written = sorted(os.path.basename(p) for p in glob.glob(os.path.join(work, "*.npy")))
        checked_in = sorted(os.path.basename(p) for p in glob.glob(os.path.join(HERE, "*.npy")))
        problems = [f"{name}: checked in but not written"
                    for name in sorted(set(checked_in) - set(written))]
        problems += [f"{name}: written but not checked in"
                     for name in sorted(set(written) - set(checked_in))]
        problems += [f"{name}: differs" for name in sorted(set(written) & set(checked_in))
                     if not filecmp.cmp(os.path.join(work, name), os.path.join(HERE, name),
                                        shallow=False)]
        for problem in problems:
            print(problem)
        print(f"{len(problems)} problem(s) in {len(checked_in)} files")
        return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
