#!/usr/bin/python3
"""Writes tests/golden/math_golden.txt: golden cases for tbatch's elementwise maths
(tests/test_math.cpp, "golden cases from torch").

Run with the system Python (needs python3-torch):

    /usr/bin/python3 tests/golden/make_math_golden.py

Every case is torch's result on CPU (where torch 1.13 has no float16 kernel for a function on
CPU, the function in float rounded to float16, which is how torch computes the others): float16 and bfloat16 arithmetic and functions, integer
division with truncation (torch.div(rounding_mode="trunc"), which is what tbatch's integer /
means), integer wrapping, NaN through minimum / maximum, round half to even, sign, where with
broadcasting; softmax, log_softmax, logsumexp (large values too), cumsum, sums of integers
(int64 results), mean, prod, amax with NaN, argmax / argmin with ties and NaN. A reduction's op is
"<name>@<dims>", dims a comma-separated list or "all".

File format, one token stream per case; floats are written as C hex floats (exact), "nan",
"inf" or "-inf", integers in decimal:
  case <name> <op> <dtype>
  a <rank> <sizes...> <numel> <values...>
  b <rank> <sizes...> <numel> <values...>      (binary ops and where's b)
  c <rank> <sizes...> <numel> <values...>      (where's condition, 0 / 1)
  out <rank> <sizes...> <numel> <values...>
"""

import math
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
          "bfloat16": torch.bfloat16, "int8": torch.int8, "int16": torch.int16,
          "int32": torch.int32, "int64": torch.int64, "uint8": torch.uint8, "bool": torch.bool}


def number(v, floating):
    if not floating:
        return str(int(v))
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v.hex()


def tensor_line(tag, t):
    floating = t.dtype.is_floating_point
    values = [number(v, floating) for v in t.flatten().tolist()]
    sizes = list(t.shape)
    return f"{tag} {len(sizes)} {' '.join(map(str, sizes))} {len(values)} {' '.join(values)}"


def main():
    gen = torch.Generator().manual_seed(32)
    cases = []

    def add(name, op, dtype, out, a, b=None, c=None):
        lines = [f"case {name} {op} {dtype}", tensor_line("a", a)]
        if b is not None:
            lines.append(tensor_line("b", b))
        if c is not None:
            lines.append(tensor_line("c", c.to(torch.uint8)))
        lines.append(tensor_line("out", out))
        cases.append("\n".join(lines))

    # 16-bit floats: computed in float and rounded once, as torch does on CPU.
    for dtype in ("float16", "bfloat16"):
        t = DTYPES[dtype]
        a = (torch.rand(3, 4, generator=gen) * 8 - 4).to(t)
        b = (torch.rand(4, generator=gen) * 4 + 0.25).to(t)
        for op, fn in (("add", torch.add), ("sub", torch.sub), ("mul", torch.mul),
                       ("div", torch.div), ("minimum", torch.minimum),
                       ("maximum", torch.maximum)):
            add(f"{dtype}_{op}_broadcast", op, dtype, fn(a, b), a, b)
        positive = (torch.rand(2, 5, generator=gen) * 6 + 0.1).to(t)
        for op in ("exp", "sqrt", "log", "tanh", "sigmoid", "sin"):
            x = positive if op in ("sqrt", "log") else a
            try:
                out = getattr(torch, op)(x)
            except RuntimeError:  # torch 1.13 has no float16 kernel for some functions on CPU
                out = getattr(torch, op)(x.float()).to(t)
            add(f"{dtype}_{op}", op, dtype, out, x)
        exponent = torch.tensor(1.5, dtype=t)
        try:
            out = torch.pow(positive, exponent)
        except RuntimeError:
            out = torch.pow(positive.float(), 1.5).to(t)
        add(f"{dtype}_pow_scalar", "pow", dtype, out, positive, exponent)

    # Integer division truncates toward zero (torch.div(..., rounding_mode="trunc")).
    for dtype in ("int8", "int16", "int32", "int64"):
        t = DTYPES[dtype]
        a = torch.tensor([[7, -7, 7, -7, 0, 100], [1, -1, 13, -13, 99, -100]], dtype=t)
        b = torch.tensor([2, 2, -2, -2, 3, 7], dtype=t)
        add(f"{dtype}_div_trunc", "div", dtype, torch.div(a, b, rounding_mode="trunc"), a, b)
    # Integer wrapping modulo 2^N.
    a = torch.tensor([250, 100, 255, 0], dtype=torch.uint8)
    b = torch.tensor([10, 200, 255, 1], dtype=torch.uint8)
    add("uint8_add_wraps", "add", "uint8", a + b, a, b)
    add("uint8_mul_wraps", "mul", "uint8", a * b, a, b)
    add("uint8_sub_wraps", "sub", "uint8", b - a, b, a)
    a = torch.tensor([120, -120, 100], dtype=torch.int8)
    b = torch.tensor([10, -10, 3], dtype=torch.int8)
    add("int8_add_wraps", "add", "int8", a + b, a, b)
    add("int8_mul_wraps", "mul", "int8", a * b, a, b)

    # NaN propagates through minimum and maximum; comparisons with NaN are false.
    nan = float("nan")
    a = torch.tensor([nan, 1.0, 2.0, -0.0], dtype=torch.float32)
    b = torch.tensor([1.0, nan, 2.0, 0.0], dtype=torch.float32)
    add("float32_minimum_nan", "minimum", "float32", torch.minimum(a, b), a, b)
    add("float32_maximum_nan", "maximum", "float32", torch.maximum(a, b), a, b)
    add("float32_lt_nan", "lt", "float32", a < b, a, b)
    add("float32_eq_nan", "eq", "float32", a == b, a, b)
    # round is half to even; sign of +-0 and negatives.
    x = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, 2.4999, -2.6], dtype=torch.float32)
    add("float32_round_half_even", "round", "float32", torch.round(x), x)
    add("float64_round_half_even", "round", "float64", torch.round(x.double()), x.double())
    x = torch.tensor([-3.0, -0.0, 0.0, 2.5], dtype=torch.float32)
    add("float32_sign", "sign", "float32", torch.sign(x), x)
    # where with all three operands broadcasting.
    cond = torch.tensor([[True], [False]])
    a = torch.arange(6, dtype=torch.float32).reshape(1, 6)
    b = torch.tensor([-1.0, -2.0, -3.0, -4.0, -5.0, -6.0], dtype=torch.float32)
    add("float32_where_broadcast", "where", "float32", torch.where(cond, a, b), a, b, cond)

    # Reductions, softmax and scans: "<op>@<dims>" reduces over dims ("all": every dim).
    def float16_or_float(fn, x):
        try:
            return fn(x)
        except RuntimeError:  # no float16 kernel on CPU in torch 1.13: computed in float
            return fn(x.float()).to(x.dtype)

    x = torch.randn(3, 5, generator=gen) * 3
    add("float32_softmax_last", "softmax@-1", "float32", torch.softmax(x, -1), x)
    add("float32_softmax_first", "softmax@0", "float32", torch.softmax(x, 0), x)
    add("float64_log_softmax", "log_softmax@1", "float64", torch.log_softmax(x.double(), 1),
        x.double())
    big = torch.tensor([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -999.0]])
    add("float32_log_softmax_large", "log_softmax@1", "float32", torch.log_softmax(big, 1), big)
    add("float32_softmax_large", "softmax@1", "float32", torch.softmax(big, 1), big)
    h = x.half()
    add("float16_softmax", "softmax@1", "float16",
        float16_or_float(lambda t: torch.softmax(t, 1), h), h)
    add("float32_logsumexp_dim", "logsumexp@1", "float32", torch.logsumexp(x, 1), x)
    add("float32_logsumexp_all", "logsumexp@0,1", "float32", torch.logsumexp(x, (0, 1)), x)
    add("float32_logsumexp_large", "logsumexp@1", "float32", torch.logsumexp(big, 1), big)
    add("float16_logsumexp", "logsumexp@0", "float16",
        float16_or_float(lambda t: torch.logsumexp(t, 0), h), h)
    add("float32_cumsum", "cumsum@0", "float32", torch.cumsum(x, 0), x)
    i8 = torch.tensor([[100, 100, -128], [27, 1, -1]], dtype=torch.int8)
    add("int8_cumsum_widens", "cumsum@1", "int8", torch.cumsum(i8, 1), i8)
    add("int8_sum_widens", "sum@1", "int8", torch.sum(i8, 1), i8)
    add("uint8_sum_all", "sum@all", "uint8", torch.sum(i8.to(torch.uint8)), i8.to(torch.uint8))
    add("float16_mean", "mean@0", "float16", float16_or_float(lambda t: torch.mean(t, 0), h), h)
    add("float32_prod", "prod@1", "float32", torch.prod(x, 1), x)
    add("float32_amax_nan", "amax@1", "float32",
        torch.amax(torch.tensor([[1.0, nan, 3.0], [4.0, 5.0, 6.0]]), 1),
        torch.tensor([[1.0, nan, 3.0], [4.0, 5.0, 6.0]]))
    ties = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 0.0, 0.0], [nan, 1.0, nan, 5.0]])
    add("float32_argmax_ties", "argmax@1", "float32", torch.argmax(ties, 1), ties)
    add("float32_argmin_ties", "argmin@1", "float32", torch.argmin(ties, 1), ties)
    add("float32_argmax_ties_dim0", "argmax@0", "float32", torch.argmax(ties, 0), ties)
    it = torch.tensor([[5, 1, 5], [0, 7, 7]], dtype=torch.int32)
    add("int32_argmax_ties", "argmax@1", "int32", torch.argmax(it, 1), it)
    add("int32_argmin_all", "argmin@all", "int32", torch.argmin(it), it)

    path = os.path.join(HERE, "math_golden.txt")
    with open(path, "w") as f:
        f.write(f"# Generated by make_math_golden.py with torch {torch.__version__}; "
                "do not edit.\n")
        f.write("\n".join(cases) + "\n")
    print(f"wrote {len(cases)} cases to {path}")


if __name__ == "__main__":
    main()
