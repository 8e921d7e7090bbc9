#!/usr/bin/python3
"""Writes tests/golden/ragged_golden.txt: golden cases for the maths on batches along the ragged
dim (tests/test_ragged.cpp, "golden cases from torch's masked formulation").

Run with the system Python (needs python3-torch):

    /usr/bin/python3 tests/golden/make_ragged_golden.py

Each case is B sequences of lengths L_i and D features, computed by torch as users do without
ragged support: padded to (B, L_max, D) with a mask, then softmax / log_softmax along dim 1 after
masked_fill(-inf) (rows of the padding dropped afterwards), or the masked sum and mean (the mean
of an empty sequence taken as 0).

File format, one line per case; floats as C hex floats, "nan", "inf" or "-inf":
  case <name> <op> <B> <L_0> ... <L_B-1> <D> <n> <values...> <m> <expected...>
values are the packed rows (sum L_i, D) in row-major order; expected is the packed result
(softmax) or the dense (B, D) result (sum, mean).
"""

import math
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def number(v):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v.hex()


def listed(t):
    values = [number(v) for v in t.flatten().tolist()]
    return f"{len(values)} {' '.join(values)}"


def masked(op, lengths, rows):
    b, d = len(lengths), rows.shape[1]
    l_max = max(lengths) if lengths else 0
    padded = torch.zeros(b, l_max, d, dtype=rows.dtype)
    mask = torch.zeros(b, l_max, dtype=torch.bool)
    first = 0
    for i, l in enumerate(lengths):
        padded[i, :l] = rows[first:first + l]
        mask[i, :l] = True
        first += l
    m = mask.unsqueeze(-1)
    if op in ("softmax", "log_softmax"):
        scores = padded.masked_fill(~m, float("-inf"))
        out = scores.softmax(1) if op == "softmax" else scores.log_softmax(1)
        return out[mask.unsqueeze(-1).expand_as(out)].reshape(-1, d)
    total = padded.masked_fill(~m, 0).sum(1)
    if op == "sum":
        return total
    counts = mask.sum(1, keepdim=True).to(rows.dtype)
    return torch.where(counts > 0, total / counts.clamp(min=1), torch.zeros_like(total))


def main():
    gen = torch.Generator().manual_seed(33)
    lines = ["# written by make_ragged_golden.py (torch " + torch.__version__ + ")"]

    def add(name, op, lengths, rows):
        out = masked(op, lengths, rows)
        lines.append(f"case {name} {op} {len(lengths)} {' '.join(map(str, lengths))} "
                     f"{rows.shape[1]} {listed(rows)} {listed(out)}")

    lengths = [3, 0, 5, 1, 8]
    rows = torch.randn(sum(lengths), 4, generator=gen)
    for op in ("softmax", "log_softmax", "sum", "mean"):
        add(f"random_{op}", op, lengths, rows)
    # Large scores: exp overflows in float unless the maximum is subtracted first.
    large = torch.randn(sum(lengths), 2, generator=gen) * 60 + 100
    add("large_softmax", "softmax", lengths, large)
    add("large_log_softmax", "log_softmax", lengths, large)
    # Attention-like: one score column, many short sequences.
    short = [1, 2, 1, 4, 3, 2, 7, 1]
    add("scores_softmax", "softmax", short, torch.randn(sum(short), 1, generator=gen) * 4)

    with open(os.path.join(HERE, "ragged_golden.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
