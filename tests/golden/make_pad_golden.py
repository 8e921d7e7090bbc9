#!/usr/bin/python3
"""Writes tests/golden/pad_golden.txt: golden cases for tbatch::pad (tests/test_pad.cpp).

Run with the system Python (needs python3-torch and python3-numpy):

    /usr/bin/python3 tests/golden/make_pad_golden.py

Sources, recorded per case:
  torch  torch.nn.functional.pad (constant, reflect, replicate, circular), cross-checked
         against numpy.pad where numpy has the same mode;
  numpy  numpy.pad (symmetric; and circular with negative pads, see below).

Negative pads crop. tbatch defines every non-constant mode with negative pads as "pad the
original by the positive parts, then crop" (numpy.pad of the positive parts, then a slice).
torch agrees for constant, reflect and replicate, but its circular mode crops first and then
wraps the cropped tensor (and torch 1.13 sometimes returns memory it never wrote there), so
circular cases with a negative pad come from numpy, with torch's rule noted in a comment.

Inputs are small integers and every output element is an input element or the constant
value, so the test can apply the cases to all twelve dtypes.

File format, one token stream per case:
  case <name> <mode> <value> <source>
  shape <rank> <sizes...>
  pad <count> <pads...>          (torch order: last dim first)
  input <numel> <values...>      (row-major)
  output <rank> <sizes...>
  values <numel> <values...>
"""

import os
import random

import numpy as np
import torch
import torch.nn.functional as F

NUMPY_MODE = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
              "circular": "wrap", "symmetric": "symmetric"}


def pairs_of(shape, pad):
    """Per-dim (before, after) pairs, first dim first, from a torch-order pad list."""
    pairs = [(0, 0)] * len(shape)
    for k in range(len(pad) // 2):
        pairs[len(shape) - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    return pairs


def numpy_pad(x, pad, mode, value):
    """Pads by the positive parts with numpy.pad, then crops the negative parts."""
    pairs = pairs_of(x.shape, pad)
    widths = [(max(b, 0), max(a, 0)) for b, a in pairs]
    if mode == "constant":
        out = np.pad(x, widths, mode="constant", constant_values=value)
    else:
        out = np.pad(x, widths, mode=NUMPY_MODE[mode])
    index = tuple(slice(max(-b, 0), out.shape[d] - max(-a, 0)) for d, (b, a) in enumerate(pairs))
    return out[index]


def torch_pad(x, pad, mode, value):
    """torch.nn.functional.pad for any rank. Non-constant modes take at most 3 trailing dims
    behind a (batch, channel) prefix: the leading dims are folded into the batch, and pads of
    more than 3 dims are applied one dim at a time (every mode is separable per dim)."""
    if not pad:
        return x.astype(np.float64)
    if mode == "constant" or len(pad) <= 6:
        t = torch.from_numpy(x.astype(np.float64))
        if mode == "constant":
            return F.pad(t, tuple(pad), mode="constant", value=float(value)).numpy()
        k = len(pad) // 2
        rank = t.dim()
        folded = t.reshape((-1, 1) + tuple(t.shape[rank - k:]))
        padded = F.pad(folded, tuple(pad), mode=mode)
        return padded.reshape(tuple(t.shape[: rank - k]) + tuple(padded.shape[2:])).numpy()
    # More than 3 padded dims: one dim at a time (separable), moving it to the end.
    out = x
    for k in range(len(pad) // 2):
        d = x.ndim - 1 - k
        moved = np.moveaxis(out, d, -1)
        padded = torch_pad(np.ascontiguousarray(moved), [pad[2 * k], pad[2 * k + 1]], mode,
                               value)
        out = np.moveaxis(padded, -1, d)
    return out


def check_doc_examples():
    """The reference documents' examples, checked against torch / numpy."""
    def t_pad(values, shape, pad, mode, value=0.0):
        x = torch.tensor(values, dtype=torch.float64).reshape(shape)
        if mode == "constant":
            return F.pad(x, pad, mode=mode, value=value).tolist()
        return F.pad(x, pad, mode=mode).tolist()

    # PyPTO pad (reference 003): [1, 1, 2, 2] padded right and bottom by 1.
    assert t_pad([0., 1., 2., 3.], (1, 1, 2, 2), (0, 1, 0, 1), "constant") == \
        [[[[0., 1., 0.], [2., 3., 0.], [0., 0., 0.]]]]
    # torch ReflectionPad2d docs.
    nine = list(range(9))
    assert t_pad(nine, (1, 1, 3, 3), (2, 2, 2, 2), "reflect")[0][0] == [
        [8, 7, 6, 7, 8, 7, 6], [5, 4, 3, 4, 5, 4, 3], [2, 1, 0, 1, 2, 1, 0],
        [5, 4, 3, 4, 5, 4, 3], [8, 7, 6, 7, 8, 7, 6], [5, 4, 3, 4, 5, 4, 3],
        [2, 1, 0, 1, 2, 1, 0]]
    assert t_pad(nine, (1, 1, 3, 3), (1, 1, 2, 0), "reflect")[0][0] == [
        [7, 6, 7, 8, 7], [4, 3, 4, 5, 4], [1, 0, 1, 2, 1], [4, 3, 4, 5, 4], [7, 6, 7, 8, 7]]
    # torch CircularPad2d docs.
    assert t_pad(nine, (1, 1, 3, 3), (2, 2, 2, 2), "circular")[0][0] == [
        [4, 5, 3, 4, 5, 3, 4], [7, 8, 6, 7, 8, 6, 7], [1, 2, 0, 1, 2, 0, 1],
        [4, 5, 3, 4, 5, 3, 4], [7, 8, 6, 7, 8, 6, 7], [1, 2, 0, 1, 2, 0, 1],
        [4, 5, 3, 4, 5, 3, 4]]
    assert t_pad(nine, (1, 1, 3, 3), (1, 1, 2, 0), "circular")[0][0] == [
        [5, 3, 4, 5, 3], [8, 6, 7, 8, 6], [2, 0, 1, 2, 0], [5, 3, 4, 5, 3], [8, 6, 7, 8, 6]]
    # tf.pad docs: t = [[1, 2, 3], [4, 5, 6]], paddings [[1, 1], [2, 2]].
    t = np.array([[1, 2, 3], [4, 5, 6]])
    assert np.pad(t, ((1, 1), (2, 2)), mode="reflect").tolist() == [
        [6, 5, 4, 5, 6, 5, 4], [3, 2, 1, 2, 3, 2, 1], [6, 5, 4, 5, 6, 5, 4],
        [3, 2, 1, 2, 3, 2, 1]]
    assert np.pad(t, ((1, 1), (2, 2)), mode="symmetric").tolist() == [
        [2, 1, 1, 2, 3, 3, 2], [2, 1, 1, 2, 3, 3, 2], [5, 4, 4, 5, 6, 6, 5],
        [5, 4, 4, 5, 6, 6, 5]]
    # numpy.pad docs, a = [1, 2, 3, 4, 5].
    a = np.array([1, 2, 3, 4, 5])
    assert np.pad(a, (2, 3), mode="edge").tolist() == [1, 1, 1, 2, 3, 4, 5, 5, 5, 5]
    assert np.pad(a, (2,), mode="reflect").tolist() == [3, 2, 1, 2, 3, 4, 5, 4, 3]
    assert np.pad(a, (2,), mode="symmetric").tolist() == [2, 1, 1, 2, 3, 4, 5, 5, 4]
    assert np.pad(a, (2, 3), mode="wrap").tolist() == [4, 5, 1, 2, 3, 4, 5, 1, 2, 3]
    # Each mode's rule on [1, 2, 3], as docs/pad.md's Modes table shows it.
    b = np.array([1, 2, 3])
    assert np.pad(b, (0, 2), mode="reflect").tolist() == [1, 2, 3, 2, 1]
    assert np.pad(b, (0, 2), mode="symmetric").tolist() == [1, 2, 3, 3, 2]


def random_case(rng, mode):
    """A random shape of rank 1..5 and a pad within the mode's limits (negative pads too)."""
    rank = rng.randint(1, 5)
    low = 0 if mode == "constant" else 1
    max_size = 5 if rank <= 3 else 3
    shape = [rng.randint(low, max_size) for _ in range(rank)]
    padded_dims = rng.randint(0, rank)
    pad = []
    for k in range(padded_dims):
        size = shape[rank - 1 - k]
        limit = {"constant": 3, "reflect": size - 1, "replicate": 3,
                 "circular": size, "symmetric": size}[mode]
        while True:
            b = rng.randint(-size, limit)
            a = rng.randint(-size, limit)
            if size + b + a >= 0:
                break
        pad += [b, a]
    return shape, pad


def main():
    check_doc_examples()
    rng = random.Random(20240604)
    cases = []

    def add(name, mode, shape, pad, value=0, values=None):
        x = (np.array(values, dtype=np.int64).reshape(shape) if values is not None
             else np.array([rng.randint(0, 99) for _ in range(int(np.prod(shape)))],
                           dtype=np.int64).reshape(shape))
        expected = numpy_pad(x, pad, mode, value)
        source = "numpy"
        note = None
        if mode != "symmetric":
            try:
                got = torch_pad(x, pad, mode, value)
            except RuntimeError as error:
                # torch rejects crops down to an empty dim (and non-constant modes on empty
                # inputs); tbatch allows output sizes of 0.
                assert expected.size == 0 or x.size == 0, (name, error)
                got = None
                note = "torch rejects: " + str(error).splitlines()[0]
            if got is None:
                pass
            elif mode == "circular" and any(p < 0 for p in pad):
                # torch's own rule, computed with numpy (torch 1.13 sometimes returns memory it
                # never wrote here, so its output itself is not recorded).
                pairs = pairs_of(x.shape, pad)
                cropped = x[tuple(slice(max(-b, 0), x.shape[d] - max(-a, 0))
                                  for d, (b, a) in enumerate(pairs))]
                try:
                    torch_rule = np.pad(cropped, [(max(b, 0), max(a, 0)) for b, a in pairs],
                                        mode="wrap")
                except ValueError:  # the crop empties a dim that is then wrapped
                    torch_rule = None
                    note = "torch crops first, leaving nothing to wrap: its result is undefined"
                if torch_rule is None:
                    pass
                elif (torch_rule.shape != expected.shape or
                      not np.array_equal(torch_rule, expected)):
                    flat = [str(int(v)) for v in torch_rule.reshape(-1)]
                    note = ("torch crops first, then wraps: shape %s values %s%s" %
                            (list(torch_rule.shape), " ".join(flat[:12]),
                             " ..." if len(flat) > 12 else ""))
            else:
                assert got.shape == expected.shape, (name, got.shape, expected.shape)
                assert np.array_equal(got, expected), (name, got, expected)
                source = "torch"
        cases.append((name, mode, value, source, shape, pad, x, expected, note))

    # Reference document examples.
    add("pypto_example", "constant", [1, 1, 2, 2], [0, 1, 0, 1], 0, [0, 1, 2, 3])
    add("torch_reflectionpad2d_2", "reflect", [1, 1, 3, 3], [2, 2, 2, 2], 0, range(9))
    add("torch_reflectionpad2d_1120", "reflect", [1, 1, 3, 3], [1, 1, 2, 0], 0, range(9))
    add("torch_circularpad2d_2", "circular", [1, 1, 3, 3], [2, 2, 2, 2], 0, range(9))
    add("torch_circularpad2d_1120", "circular", [1, 1, 3, 3], [1, 1, 2, 0], 0, range(9))
    add("tf_constant", "constant", [2, 3], [2, 2, 1, 1], 0, [1, 2, 3, 4, 5, 6])
    add("tf_reflect", "reflect", [2, 3], [2, 2, 1, 1], 0, [1, 2, 3, 4, 5, 6])
    add("tf_symmetric", "symmetric", [2, 3], [2, 2, 1, 1], 0, [1, 2, 3, 4, 5, 6])
    add("numpy_edge", "replicate", [5], [2, 3], 0, [1, 2, 3, 4, 5])
    add("numpy_reflect", "reflect", [5], [2, 2], 0, [1, 2, 3, 4, 5])
    add("numpy_symmetric", "symmetric", [5], [2, 2], 0, [1, 2, 3, 4, 5])
    add("numpy_wrap", "circular", [5], [2, 3], 0, [1, 2, 3, 4, 5])
    add("design_reflect", "reflect", [3], [0, 2], 0, [1, 2, 3])
    add("design_symmetric", "symmetric", [3], [0, 2], 0, [1, 2, 3])
    # Crops, including crops that cut into the data a border is made from.
    add("reflect_crop_left", "reflect", [5], [-1, 2], 0, range(5))
    add("reflect_crop_right", "reflect", [5], [2, -1], 0, range(5))
    add("reflect_crop_into_mirror", "reflect", [5], [-4, 3], 0, range(5))
    add("circular_crop_left", "circular", [5], [-1, 2], 0, range(5))
    add("circular_crop_right", "circular", [5], [2, -1], 0, range(5))
    add("symmetric_crop_both", "symmetric", [4, 5], [-2, 3, 2, -3], 0, range(20))
    add("replicate_crop_2d", "replicate", [3, 4], [-1, 2, 3, -2], 0, range(12))
    add("constant_crop_to_empty", "constant", [3, 4], [-2, -2, 1, 0], 5, range(12))
    add("constant_empty_input", "constant", [0, 3], [1, 1, 2, 0], 7, [])
    add("constant_value", "constant", [2, 2], [1, 1, 1, 1], -3, [1, 2, 3, 4])
    # Random cases of every mode.
    for mode in ["constant", "reflect", "replicate", "circular", "symmetric"]:
        for i in range(40):
            shape, pad = random_case(rng, mode)
            value = rng.randint(-5, 5) if mode == "constant" else 0
            add(f"random_{mode}_{i}", mode, shape, pad, value)

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pad_golden.txt")
    with open(path, "w") as out:
        out.write("# Generated by make_pad_golden.py with torch %s and numpy %s; do not edit.\n"
                  % (torch.__version__, np.__version__))
        for name, mode, value, source, shape, pad, x, expected, note in cases:
            if note:
                out.write(f"# {name}: {note}\n")
            out.write(f"case {name} {mode} {value} {source}\n")
            out.write(f"shape {len(shape)} {' '.join(map(str, shape))}\n")
            out.write(f"pad {len(pad)} {' '.join(map(str, pad))}\n")
            out.write(f"input {x.size} {' '.join(str(int(v)) for v in x.reshape(-1))}\n")
            out.write(f"output {expected.ndim} {' '.join(map(str, expected.shape))}\n")
            out.write(f"values {expected.size} "
                      f"{' '.join(str(int(v)) for v in expected.reshape(-1))}\n")
    print(f"wrote {len(cases)} cases to {path}")


if __name__ == "__main__":
    main()
