#!/usr/bin/python3
"""Checks that tbatch's safetensors files follow the format, both ways, against a reader and a
writer made by hand from the format's description (no safetensors package):

  1. `io_interop write` makes a file with tbatch; it is read here byte by byte and every header
     field, offset and value is checked;
  2. a file is written here; `io_interop check` reads it with tbatch (copied and mapped).

Run with the system Python (needs python3-numpy; exits 77, ctest's skip, without it):

    /usr/bin/python3 tests/io_interop.py PATH_TO_io_interop WORKDIR

A file starts with its header length (u64, little-endian), then the JSON header
{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}, then the
data; offsets count from the start of the data. Every tensor holds value(i) at row-major
position i, the formula tests/io_interop.cpp uses too.
"""

import json
import os
import struct
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed")
    sys.exit(77)

# The tensors both directions hold (for_each_formula_tensor in io_interop.cpp).
TENSORS = [
    ("f32", "F32", [2, 3]),
    ("f32_scalar", "F32", []),
    ("f32_empty", "F32", [0, 4]),
    ("f64", "F64", [5]),
    ("f16", "F16", [2, 2, 2]),
    ("bf16", "BF16", [3, 2]),
    ("i8", "I8", [7]),
    ("i16", "I16", [2, 5]),
    ("i32", "I32", [3, 1, 2]),
    ("i64", "I64", [4]),
    ("u8", "U8", [6]),
    ("u16", "U16", [2, 2]),
    ("u32", "U32", [3]),
    ("bool", "BOOL", [2, 3]),
]
# The packed batch both directions hold: clouds of 2, 5 and 3 xyz points, rows (10, 3).
CLOUD_SIZES = [2, 5, 3]
CLOUD_POINTS = sum(CLOUD_SIZES)

# numpy's little-endian type for each dtype; BF16 is read as its bits (numpy has no bfloat16).
NUMPY_TYPE = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "BF16": "<u2", "I8": "i1", "I16": "<i2",
              "I32": "<i4", "I64": "<i8", "U8": "u1", "U16": "<u2", "U32": "<u4", "BOOL": "?"}


class Mismatch(Exception):
    pass


def value(dtype, count):
    """value(i) for i < count (as io_interop.cpp): -3..7, 0..10 for unsigned dtypes, odd for
    bool."""
    base = np.arange(count, dtype=np.int64) * 7 % 11
    if dtype == "BOOL":
        return base % 2 == 1
    if dtype.startswith("U"):
        return base
    return base - 3


def decode(dtype, raw):
    """The elements in `raw` bytes of `dtype` as a flat numpy array."""
    if dtype == "BOOL" and not set(raw) <= {0, 1}:
        raise Mismatch("a BOOL tensor holds bytes other than 0 and 1")
    elements = np.frombuffer(raw, dtype=NUMPY_TYPE[dtype])
    if dtype == "BF16":  # bfloat16 is the upper half of a float32
        return (elements.astype(np.uint32) << 16).view(np.float32)
    return elements


def encode(dtype, elements):
    """The bytes of `elements` as `dtype` (exact: the formula's values fit every dtype)."""
    if dtype == "BF16":
        return (elements.astype(np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()
    return elements.astype(NUMPY_TYPE[dtype]).tobytes()


def check_tensor(name, tensors, dtype, shape, expected):
    """Checks that tensor `name` of `tensors` ({name: (dtype, shape, elements)}) has `dtype`,
    `shape` and the flat values `expected`."""
    if name not in tensors:
        raise Mismatch(f"tensor '{name}' is missing")
    got_dtype, got_shape, elements = tensors[name]
    if got_dtype != dtype or got_shape != shape:
        raise Mismatch(f"tensor '{name}' is {got_dtype} {got_shape}, expected {dtype} {shape}")
    expected = np.asarray(expected)
    if elements.size != expected.size or not np.array_equal(elements.astype(np.float64),
                                                            expected.astype(np.float64)):
        raise Mismatch(f"tensor '{name}' holds {elements.tolist()}, expected {expected.tolist()}")


def read_by_hand(path):
    """The tensors ({name: (dtype, shape, flat elements)}) and metadata of the file at `path`,
    checking the layout tbatch promises: data 8-byte aligned, offsets tiling the data, every
    tensor aligned to its element size."""
    with open(path, "rb") as f:
        contents = f.read()
    (header_length,) = struct.unpack("<Q", contents[:8])
    data_start = 8 + header_length
    if data_start % 8 != 0:
        raise Mismatch(f"the data starts at byte {data_start}, not a multiple of 8")
    header = json.loads(contents[8:data_start].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    data = contents[data_start:]
    tensors = {}
    reached = 0
    for name, entry in sorted(header.items(), key=lambda item: item[1]["data_offsets"]):
        dtype, shape, (begin, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
        if begin != reached:
            raise Mismatch(f"tensor '{name}' starts at data byte {begin}, the previous ends at "
                           f"{reached}: the offsets do not tile the data")
        reached = end
        item_size = np.dtype(NUMPY_TYPE[dtype]).itemsize
        if (data_start + begin) % item_size != 0:
            raise Mismatch(f"tensor '{name}' starts at file byte {data_start + begin}, not "
                           f"aligned to its {item_size}-byte elements")
        elements = decode(dtype, data[begin:end])
        if elements.size != int(np.prod(shape, dtype=np.int64)):
            raise Mismatch(f"tensor '{name}' has {elements.size} elements for shape {shape}")
        tensors[name] = (dtype, shape, elements)
    if reached != len(data):
        raise Mismatch(f"the tensors cover {reached} of the {len(data)} data bytes")
    return tensors, metadata


def check_from_tbatch(io_interop, path):
    subprocess.run([io_interop, "write", path], check=True)
    tensors, metadata = read_by_hand(path)
    for name, dtype, shape in TENSORS:
        check_tensor(name, tensors, dtype, shape, value(dtype, int(np.prod(shape))))
    # Written from a transposed view: its row-major order, not its buffer's order.
    check_tensor("f32_transposed", tensors, "F32", [4, 3], value("F32", 12))
    check_tensor("clouds", tensors, "F32", [CLOUD_POINTS, 3], value("F32", CLOUD_POINTS * 3))
    check_tensor("clouds.shape_per_tensor", tensors, "I64", [len(CLOUD_SIZES), 1], CLOUD_SIZES)
    check_tensor("clouds.first_idx", tensors, "I64", [len(CLOUD_SIZES) + 1],
                 np.cumsum([0] + CLOUD_SIZES))
    expected_names = {name for name, _, _ in TENSORS} | {
        "f32_transposed", "clouds", "clouds.shape_per_tensor", "clouds.first_idx"}
    if set(tensors) != expected_names:
        raise Mismatch(f"the file holds tensors {sorted(tensors)}, expected "
                       f"{sorted(expected_names)}")
    expected_metadata = {"written_by": "tbatch", "clouds.layout": "packed"}
    if metadata != expected_metadata:
        raise Mismatch(f"the metadata is {metadata}, expected {expected_metadata}")


def write_by_hand(path):
    """Writes the tensors io_interop check expects. Their bytes follow each other in name order,
    with no alignment beyond the header's 8 bytes, as other writers may store them: tbatch must
    copy the tensors a mapped view cannot read in place."""
    tensors = {name: (dtype, shape, value(dtype, int(np.prod(shape))))
               for name, dtype, shape in TENSORS}
    tensors["clouds"] = ("F32", [CLOUD_POINTS, 3], value("F32", CLOUD_POINTS * 3))
    tensors["clouds.shape_per_tensor"] = ("I64", [len(CLOUD_SIZES), 1], np.array(CLOUD_SIZES))
    tensors["clouds.first_idx"] = ("I64", [len(CLOUD_SIZES) + 1], np.cumsum([0] + CLOUD_SIZES))
    header = {"__metadata__": {"written_by": "io_interop.py", "clouds.layout": "packed"}}
    data = b""
    for name in sorted(tensors):
        dtype, shape, elements = tensors[name]
        raw = encode(dtype, elements)
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def main():
    if len(sys.argv) != 3:
        sys.exit(f"usage: {sys.argv[0]} PATH_TO_io_interop WORKDIR")
    io_interop, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    try:
        check_from_tbatch(io_interop, os.path.join(workdir, "from_tbatch.safetensors"))
        print("tbatch -> numpy: every tensor and the metadata match", flush=True)
        from_python = os.path.join(workdir, "from_python.safetensors")
        write_by_hand(from_python)
        if subprocess.run([io_interop, "check", from_python]).returncode != 0:
            raise Mismatch(f"io_interop check rejected {from_python} (its message is above)")
        print("numpy -> tbatch: every tensor and the metadata match, copied and mapped")
    except (Mismatch, subprocess.CalledProcessError) as e:
        sys.exit(f"FAIL: {e}")


if __name__ == "__main__":
    main()
