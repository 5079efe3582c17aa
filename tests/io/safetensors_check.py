#!/usr/bin/env python3
"""A safetensors reader and writer in numpy alone (there is no safetensors package here), so that
files vkspmd writes are checked by code that shares nothing with it, and the other way round.

usage: safetensors_check.py FILE.safetensors DIR
    Checks that FILE is well formed (header length, JSON, offsets covering the data exactly) and
    that every tensor equals DIR/<name>.npy exactly (dtype, shape, bytes), and every .npy in DIR
    is a tensor of FILE. BF16, which numpy lacks, is compared with a uint16 .npy of its bits.
    Exit 0 when all holds, else exit 1 with one line per problem.
usage: safetensors_check.py --write-sample FILE.safetensors DIR
    Writes FILE by hand the way other writers do (sorted header keys, data in another order,
    no header padding) and each of its tensors as DIR/<name>.npy; prints the names in the order
    their data lies in FILE.
"""
import json
import os
import struct
import sys

import numpy as np

# safetensors dtype -> numpy dtype of the same bytes.
DTYPES = {
    "BOOL": np.dtype("?"), "U8": np.dtype("u1"), "I8": np.dtype("i1"),
    "U16": np.dtype("<u2"), "I16": np.dtype("<i2"), "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"), "U32": np.dtype("<u4"), "I32": np.dtype("<i4"),
    "F32": np.dtype("<f4"), "U64": np.dtype("<u8"), "I64": np.dtype("<i8"),
    "F64": np.dtype("<f8"),
}
NAMES = {dtype.str: name for name, dtype in DTYPES.items() if name != "BF16"}


def read_safetensors(path):
    """({name: ndarray}, metadata, names in data order); raises ValueError for a malformed file."""
    with open(path, "rb") as f:
        contents = f.read()
    if len(contents) < 8:
        raise ValueError(f"{path}: {len(contents)} bytes, no header length")
    (header_size,) = struct.unpack("<Q", contents[:8])
    if 8 + header_size > len(contents):
        raise ValueError(f"{path}: header length {header_size} runs past the file")
    header = json.loads(contents[8:8 + header_size].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    data = contents[8 + header_size:]
    tensors, spans = {}, []
    for name, entry in header.items():
        dtype = DTYPES[entry["dtype"]]
        shape = tuple(entry["shape"])
        begin, end = entry["data_offsets"]
        if end - begin != dtype.itemsize * int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"{path}: {name}: offsets {begin}, {end} do not fit {shape}")
        tensors[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(shape)
        spans.append((begin, end, name))
    spans.sort()
    covered = 0
    for begin, end, name in spans:
        if begin != covered:
            raise ValueError(f"{path}: {name} starts at data byte {begin}, not {covered}")
        covered = end
    if covered != len(data):
        raise ValueError(f"{path}: the tensors cover {covered} of {len(data)} data bytes")
    return tensors, metadata, [name for _, _, name in spans]


def check(path, directory):
    """The problems found, one line each (none: the file matches the directory)."""
    try:
        tensors, _, _ = read_safetensors(path)
    except (OSError, ValueError, KeyError, TypeError) as error:
        return [f"{path}: cannot read: {error!r}"]
    problems = []
    expected = {f[:-4] for f in os.listdir(directory) if f.endswith(".npy")}
    for name in sorted(expected - tensors.keys()):
        problems.append(f"{name}: in {directory} but not in {path}")
    for name in sorted(tensors.keys() - expected):
        problems.append(f"{name}: in {path} but has no {name}.npy in {directory}")
    for name in sorted(tensors.keys() & expected):
        actual, want = tensors[name], np.load(os.path.join(directory, name + ".npy"))
        if actual.dtype != want.dtype or actual.shape != want.shape:
            problems.append(f"{name}: {actual.dtype}{list(actual.shape)} in the file, "
                            f"{want.dtype}{list(want.shape)} in the .npy")
        elif actual.tobytes() != want.tobytes():
            flat_actual, flat_want = actual.reshape(-1), want.reshape(-1)
            first = next(i for i in range(flat_actual.size)
                         if flat_actual[i:i + 1].tobytes() != flat_want[i:i + 1].tobytes())
            problems.append(f"{name}: element {first} is {flat_actual[first]} in the file, "
                            f"{flat_want[first]} in the .npy")
    return problems


def write_safetensors(path, tensors, metadata, data_order):
    header, data = {}, b""
    for name in data_order:
        array = tensors[name]
        header[name] = {"dtype": NAMES[array.dtype.str], "shape": list(array.shape),
                        "data_offsets": [len(data), len(data) + array.nbytes]}
        data += array.tobytes()
    header["__metadata__"] = metadata
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def write_sample(path, directory):
    tensors = {
        "weight": np.array([[1.5, -0.0, np.inf], [np.nan, -2.25, 3e-39]], dtype="<f4"),
        "ids": np.array([-(2**62), 7, 0, 2**40], dtype="<i8"),
        "mask": np.array([[True, False], [False, True]]),
        "half": np.array([0.5, -65504, 1e-7], dtype="<f2"),
        "odd_bytes": np.arange(5, dtype="u1"),
        "shorts": np.array([-32768, 32767, 1], dtype="<i2"),
        "empty": np.zeros((0, 3), dtype="<f4"),
        "scalar": np.array(2.718281828459045, dtype="<f8"),
        "counts": np.array([4294967295, 1], dtype="<u4"),
        "signed_bytes": np.array([-128, 127], dtype="i1"),
        "words": np.array([65535, 2], dtype="<u2"),
        "longs": np.array([2**64 - 1], dtype="<u8"),
        "int32": np.array([[-1, 2], [3, -4]], dtype="<i4"),
    }
    # Data in reverse name order, so neither the header's key order nor the alignment of an
    # 8-byte-aligned writer holds.
    order = sorted(tensors, reverse=True)
    write_safetensors(path, tensors, {"format": "np", "written_by": "safetensors_check.py"}, order)
    os.makedirs(directory, exist_ok=True)
    for name, array in tensors.items():
        np.save(os.path.join(directory, name + ".npy"), array)
    print("\n".join(order))


def main(argv):
    if len(argv) == 4 and argv[1] == "--write-sample":
        write_sample(argv[2], argv[3])
        return 0
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    problems = check(argv[1], argv[2])
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"{argv[1]}: every tensor equals its .npy in {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
