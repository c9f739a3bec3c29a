"""Special values of the math built-ins: every rule of the OpenCL C 3.0 spec's edge-case
section (7.5.1 "Additional Requirements Beyond ISO/IEC 9899:1999", 7.5.2 changes to C99,
FP_ILOGB0/FP_ILOGBNAN of 6.15.2) plus the C99 Annex F rules for pow that vector math
libraries get wrong, for float and double.

Each rule runs three ways: as a scalar call in a work-item loop (which LLVM vectorizes into
libmvec calls), and in one lane of a float4 / float16 (or double) vector whose other lanes
hold ordinary values, so a vector library's fast path cannot hide a special lane. Results
are compared bit for bit (signed zeros included; any NaN matches any NaN).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from harness import build
from refs import assert_same_bits

INF, NAN = math.inf, math.nan

# (function, arguments, expected). Integer arguments (n of pown/rootn) are ints.
RULES_1 = [
    ("acospi", 1.0, 0.0), ("acospi", 2.0, NAN), ("acospi", -1.5, NAN),
    ("asinpi", 0.0, 0.0), ("asinpi", -0.0, -0.0), ("asinpi", 2.0, NAN),
    ("atanpi", 0.0, 0.0), ("atanpi", -0.0, -0.0), ("atanpi", INF, 0.5), ("atanpi", -INF, -0.5),
    ("ceil", -0.5, -0.0), ("ceil", -0.25, -0.0),
    ("cospi", 0.0, 1.0), ("cospi", -0.0, 1.0), ("cospi", 0.5, 0.0), ("cospi", 1.5, 0.0),
    ("cospi", -2.5, 0.0), ("cospi", 1048576.5, 0.0), ("cospi", INF, NAN), ("cospi", -INF, NAN),
    ("exp10", -INF, 0.0), ("exp10", INF, INF),
    ("rint", -0.5, -0.0), ("rint", -0.25, -0.0),
    ("round", -0.25, -0.0), ("round", -0.49, -0.0),
    ("sinpi", 0.0, 0.0), ("sinpi", -0.0, -0.0), ("sinpi", 1.0, 0.0), ("sinpi", 4.0, 0.0),
    ("sinpi", -1.0, -0.0), ("sinpi", -6.0, -0.0), ("sinpi", INF, NAN), ("sinpi", -INF, NAN),
    ("tanpi", 0.0, 0.0), ("tanpi", -0.0, -0.0), ("tanpi", INF, NAN), ("tanpi", -INF, NAN),
    ("tanpi", 2.0, 0.0), ("tanpi", -2.0, -0.0), ("tanpi", 1.0, -0.0), ("tanpi", -1.0, 0.0),
    ("tanpi", 3.0, -0.0), ("tanpi", 0.5, INF), ("tanpi", 2.5, INF), ("tanpi", 1.5, -INF),
    ("tanpi", -0.5, -INF),
    ("trunc", -0.5, -0.0), ("trunc", -0.99, -0.0),
]  # fmt: skip

RULES_2 = [
    ("atan2pi", (0.0, -0.0), 1.0), ("atan2pi", (-0.0, -0.0), -1.0),
    ("atan2pi", (0.0, 0.0), 0.0), ("atan2pi", (-0.0, 0.0), -0.0),
    ("atan2pi", (0.0, -3.0), 1.0), ("atan2pi", (-0.0, -3.0), -1.0),
    ("atan2pi", (0.0, 3.0), 0.0), ("atan2pi", (-0.0, 3.0), -0.0),
    ("atan2pi", (-3.0, 0.0), -0.5), ("atan2pi", (-3.0, -0.0), -0.5),
    ("atan2pi", (3.0, 0.0), 0.5), ("atan2pi", (3.0, -0.0), 0.5),
    ("atan2pi", (3.0, -INF), 1.0), ("atan2pi", (-3.0, -INF), -1.0),
    ("atan2pi", (3.0, INF), 0.0), ("atan2pi", (-3.0, INF), -0.0),
    ("atan2pi", (INF, 5.0), 0.5), ("atan2pi", (-INF, 5.0), -0.5),
    ("atan2pi", (INF, -INF), 0.75), ("atan2pi", (-INF, -INF), -0.75),
    ("atan2pi", (INF, INF), 0.25), ("atan2pi", (-INF, INF), -0.25),
    ("fdim", (1.0, NAN), NAN), ("fdim", (NAN, 1.0), NAN),
    ("fmod", (0.0, NAN), NAN), ("fmod", (-0.0, NAN), NAN),
    ("pow", (0.0, -INF), INF), ("pow", (-0.0, -INF), INF),
    # C99 Annex F, which OpenCL C keeps; vector math libraries tend to miss these.
    ("pow", (NAN, 0.0), 1.0), ("pow", (NAN, -0.0), 1.0), ("pow", (1.0, NAN), 1.0),
    ("pow", (-1.0, INF), 1.0), ("pow", (-1.0, -INF), 1.0), ("pow", (INF, 0.0), 1.0),
    ("pow", (-0.0, -3.0), -INF), ("pow", (0.0, -3.0), INF), ("pow", (-0.0, -2.0), INF),
    ("pow", (-0.0, 3.0), -0.0), ("pow", (-0.0, 2.0), 0.0), ("pow", (0.5, -INF), INF),
    ("pow", (2.0, -INF), 0.0), ("pow", (0.5, INF), 0.0), ("pow", (2.0, INF), INF),
    ("pow", (-INF, -3.0), -0.0), ("pow", (-INF, 3.0), -INF), ("pow", (-INF, 2.0), INF),
    ("pow", (INF, -1.0), 0.0), ("pow", (-2.0, 0.5), NAN),
    ("powr", (3.0, 0.0), 1.0), ("powr", (3.0, -0.0), 1.0), ("powr", (0.0, -2.0), INF),
    ("powr", (-0.0, -2.0), INF), ("powr", (0.0, -INF), INF), ("powr", (-0.0, -INF), INF),
    ("powr", (0.0, 2.0), 0.0), ("powr", (-0.0, 3.0), 0.0), ("powr", (1.0, 7.5), 1.0),
    ("powr", (1.0, -7.5), 1.0), ("powr", (-2.0, 2.0), NAN), ("powr", (0.0, 0.0), NAN),
    ("powr", (-0.0, -0.0), NAN), ("powr", (INF, 0.0), NAN), ("powr", (INF, -0.0), NAN),
    ("powr", (1.0, INF), NAN), ("powr", (1.0, -INF), NAN), ("powr", (2.0, NAN), NAN),
    ("powr", (NAN, 2.0), NAN), ("powr", (NAN, 0.0), NAN),
    ("nextafter", (-0.0, 1.0), "min_subnormal"), ("nextafter", (0.0, -1.0), "-min_subnormal"),
]  # fmt: skip

RULES_N = [  # (function, (x, n), expected)
    ("pown", (NAN, 0), 1.0), ("pown", (INF, 0), 1.0), ("pown", (-INF, 0), 1.0),
    ("pown", (0.0, -3), INF), ("pown", (-0.0, -3), -INF), ("pown", (0.0, -2), INF),
    ("pown", (-0.0, -2), INF), ("pown", (0.0, 2), 0.0), ("pown", (-0.0, 2), 0.0),
    ("pown", (0.0, 3), 0.0), ("pown", (-0.0, 3), -0.0),
    ("rootn", (0.0, -3), INF), ("rootn", (-0.0, -3), -INF), ("rootn", (0.0, -2), INF),
    ("rootn", (-0.0, -2), INF), ("rootn", (0.0, 2), 0.0), ("rootn", (-0.0, 2), 0.0),
    ("rootn", (0.0, 3), 0.0), ("rootn", (-0.0, 3), -0.0), ("rootn", (-1.0, 2), NAN),
    ("rootn", (-8.0, 4), NAN), ("rootn", (5.0, 0), NAN), ("rootn", (-5.0, 0), NAN),
]  # fmt: skip

# ilogb: FP_ILOGB0 is INT_MIN and FP_ILOGBNAN INT_MAX in OpenCL C; ilogb(inf) is INT_MAX.
RULES_ILOGB = [(0.0, -(2**31)), (-0.0, -(2**31)), (NAN, 2**31 - 1), (-NAN, 2**31 - 1),
               (INF, 2**31 - 1), (-INF, 2**31 - 1), (1.0, 0), (-0.75, -1), (8.5, 3),
               ("min_subnormal", None), ("min_normal", None)]  # fmt: skip

# Functions with an integer result through a pointer: (function, args, value, stored).
RULES_OUT = [
    ("frexp", (INF,), INF, 0), ("frexp", (-INF,), -INF, 0), ("frexp", (NAN,), NAN, 0),
    ("frexp", (0.0,), 0.0, 0), ("frexp", (-0.0,), -0.0, 0),
    ("lgamma_r", (0.0,), INF, 0), ("lgamma_r", (-2.0,), INF, 0), ("lgamma_r", (-3.0,), INF, 0),
    ("remquo", (INF, 2.0), NAN, 0), ("remquo", (-INF, 2.0), NAN, 0), ("remquo", (3.0, 0.0), NAN, 0),
    ("remquo", (NAN, 2.0), NAN, 0), ("remquo", (3.0, NAN), NAN, 0),
    ("remquo", (7.0, 2.0), -1.0, 4), ("remquo", (-7.0, 2.0), 1.0, -4),
    ("remquo", (1000.0, 3.0), 1.0, 333 % 128), ("remquo", (-1000.0, 3.0), -1.0, -(333 % 128)),
]  # fmt: skip

# fract(x, iptr): (x, fract, *iptr) from 7.5.1: +-0 and +-inf give a zero of x's sign (x - floor(x)
# alone gives +0 for -0); below 0 by a hair gives the largest value below 1, not 1.
RULES_FRACT = [(0.0, 0.0, 0.0), (-0.0, -0.0, -0.0), (INF, 0.0, INF), (-INF, -0.0, -INF),
               (NAN, NAN, NAN), (-2.5, 0.5, -3.0),
               ("-min_subnormal", "below_one", -1.0)]  # fmt: skip

# modf behaves as though *iptr = trunc(x), return copysign(isinf(x) ? 0 : x - *iptr, x) (7.5.2).
RULES_MODF = [(INF, 0.0, INF), (-INF, -0.0, -INF), (NAN, NAN, NAN), (-3.5, -0.5, -3.0),
              (-0.0, -0.0, -0.0), (2.0, 0.0, 2.0), (-2.0, -0.0, -2.0)]  # fmt: skip

ROWS = 16  # work-items per rule: enough for the vectorized work-item loops

# Groups of functions sharing a signature: (argument kinds, result kinds, functions).
# "f" is the floating type, "i" int; a pointer result is written through the last argument.
GROUPS = {
    "one": ("f", "f", sorted({r[0] for r in RULES_1})),
    "two": ("ff", "f", sorted({r[0] for r in RULES_2})),
    "pown": ("fi", "f", sorted({r[0] for r in RULES_N})),
    "ilogb": ("f", "i", ["ilogb"]),
    "out": ("ff", "fi", ["frexp", "lgamma_r", "remquo"]),
    "modf": ("f", "ff", ["fract", "modf"]),
}
_CALLS = {
    "frexp": "{o0} = frexp({a0}, &{r1})", "lgamma_r": "{o0} = lgamma_r({a0}, &{r1})",
    "remquo": "{o0} = remquo({a0}, {a1}, &{r1})", "modf": "{o0} = modf({a0}, &{r1})",
    "fract": "{o0} = fract({a0}, &{r1})",
}  # fmt: skip


def _source(t: str, w: int) -> str:
    """One kernel per group and shape (s: scalar, v: vector of w lanes). Function k of a
    group reads and writes rows [k*n, (k+1)*n) of each array (n = global size)."""
    lines = ["#pragma OPENCL EXTENSION cl_khr_fp64 : enable"]
    for group, (ins, outs, funcs) in GROUPS.items():
        for suffix, lanes in (("s", ""), ("v", str(w))):
            ty = {"f": t + lanes, "i": "int" + lanes}
            params = [f"global const {ty[k]}* a{j}" for j, k in enumerate(ins)]
            params += [f"global {ty[k]}* o{j}" for j, k in enumerate(outs)]
            body = ["size_t i = get_global_id(0), n = get_global_size(0);"]
            for k, f in enumerate(funcs):
                at = f"{k} * n + i"
                if f in _CALLS:
                    body.append(f"{{ {ty[outs[1]]} r1; " + _CALLS[f].format(
                        o0=f"o0[{at}]", a0=f"a0[{at}]", a1=f"a1[{at}]", r1="r1"
                    ) + f"; o1[{at}] = r1; }}")  # fmt: skip
                else:
                    args = ", ".join(f"a{j}[{at}]" for j in range(len(ins)))
                    body.append(f"o0[{at}] = {f}({args});")
            lines.append(f"kernel void {group}_{suffix}({', '.join(params)}) {{")
            lines += ["    " + b for b in body] + ["}"]
    return "\n".join(lines)


def _value(v, dtype):
    info = np.finfo(dtype)
    named = {"min_subnormal": info.smallest_subnormal, "-min_subnormal": -info.smallest_subnormal,
             "min_normal": info.tiny, "below_one": np.nextafter(dtype(1), dtype(0))}  # fmt: skip
    return dtype(named[v]) if isinstance(v, str) else dtype(v)


def _run_group(prog, dtype, width, group, rules):
    """Runs every rule of a group in one launch per shape and checks it bit for bit.

    rules: (function, special arguments, expected results). Scalar shape: ROWS work-items
    per rule, all on the special case. Vector shape: the special case in one lane (moving
    row by row), ordinary values (0.25 .. 0.75, small ints) in the others."""
    ins, outs, funcs = GROUPS[group]
    by_func: dict[str, list] = {f: [] for f in funcs}
    for rule in rules:
        by_func[rule[0]].append(rule)
    depth = max(len(v) for v in by_func.values())
    n = depth * ROWS
    rng = np.random.default_rng(7)
    np_type = {"f": dtype, "i": np.int32}
    lanes = np.arange(n) % width

    def ordinary(kind, shape):
        if kind == "i":
            return rng.integers(1, 5, shape).astype(np.int32)
        return rng.uniform(0.25, 0.75, shape).astype(dtype)

    for suffix, shape in (("s", (len(funcs), n)), ("v", (len(funcs), n, width))):
        arrays = [ordinary(kind, shape) for kind in ins]
        for k, f in enumerate(funcs):
            for r, (_, args, _) in enumerate(by_func[f]):
                rows = slice(r * ROWS, (r + 1) * ROWS)
                for array, kind, a in zip(arrays, ins, args, strict=True):
                    value = _value(a, dtype) if kind == "f" else a
                    if suffix == "s":
                        array[k, rows] = value
                    else:
                        array[k, np.arange(n)[rows], lanes[rows]] = value
        results = [np.zeros(shape, np_type[kind]) for kind in outs]
        prog.kernel(f"{group}_{suffix}")(*arrays, *results, global_size=n)
        for k, f in enumerate(funcs):
            for r, (_, args, expected) in enumerate(by_func[f]):
                rows = np.arange(r * ROWS, (r + 1) * ROWS)
                for j, (res, want) in enumerate(zip(results, expected, strict=True)):
                    got = res[k, rows] if suffix == "s" else res[k, rows, lanes[rows]]
                    want = _value(want, dtype) if outs[j] == "f" else want
                    assert_same_bits(got, np.full(ROWS, want, got.dtype), f"{f}{args} ({suffix})")


# float and double in 4-lane vectors from both producers; 16 float lanes (AVX-512 libmvec
# width) from the default producer only, to keep the suite's compile time down.
@pytest.fixture(params=[(np.float32, 4), (np.float64, 4), (np.float32, 16)],
                ids=["float", "double", "float16"])  # fmt: skip
def variant(request, producer):
    dtype, width = request.param
    if width == 16 and producer != "clang":
        pytest.skip("16-lane vectors run from the default producer only")
    t = "float" if dtype == np.float32 else "double"
    return build(_source(t, width), producer=producer), dtype, width


def test_one_argument_rules(variant):
    _run_group(*variant, "one", [(f, (x,), (want,)) for f, x, want in RULES_1])


def test_two_argument_rules(variant):
    _run_group(*variant, "two", [(f, xy, (want,)) for f, xy, want in RULES_2])


def test_integer_exponent_rules(variant):
    _run_group(*variant, "pown", [(f, xn, (want,)) for f, xn, want in RULES_N])


def test_ilogb_special_values(variant):
    info = np.finfo(variant[1])
    computed = {"min_subnormal": info.minexp - info.nmant, "min_normal": info.minexp}
    rules = [("ilogb", (x,), (computed[x] if want is None else want,)) for x, want in RULES_ILOGB]
    _run_group(*variant, "ilogb", rules)


def test_integer_out_rules(variant):
    rules = [(f, (*args, 1.0)[:2], (value, stored)) for f, args, value, stored in RULES_OUT]
    _run_group(*variant, "out", rules)


def test_modf_rules(variant):
    _run_group(*variant, "modf", [("modf", (x,), (frac, whole)) for x, frac, whole in RULES_MODF])


def test_fract_rules(variant):
    _run_group(*variant, "modf", [("fract", (x,), (f, fl)) for x, f, fl in RULES_FRACT])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_remquo_quotient_bits_for_tiny_divisors(producer, dtype):
    """The integral quotient's low seven bits, with the sign of x/y, also when the divisor
    is subnormal and the quotient huge, and when x is near the largest finite value and
    128 y overflows (x - remainder overflowed: remquo(FLT_MAX, 2e38) stored 0, not 2;
    found probing the math built-ins against PoCL). Exact rational reference."""
    from fractions import Fraction

    t = "float" if dtype == np.float32 else "double"
    prog = build(_source(t, 4), producer=producer)
    info = np.finfo(dtype)
    rng = np.random.default_rng(3)
    sub = float(info.smallest_subnormal)
    y = np.concatenate([
        sub * rng.integers(1, 1000, 24), float(info.tiny) * rng.uniform(1, 4, 8),
        rng.uniform(0.5, 3, 16) * np.exp2(rng.integers(-20, 20, 16)),
    ]).astype(dtype)  # fmt: skip
    x = np.concatenate([
        rng.uniform(-8, 8, 24) * np.exp2(rng.integers(-30, 30, 24)),
        rng.uniform(-1, 1, 8) * np.exp2(rng.integers(-100, 100, 8)),
        rng.uniform(-1000, 1000, 16),
    ]).astype(dtype)  # fmt: skip
    big = float(info.max)
    x = np.concatenate([x, np.array([big, -big, big, big / 3, big, -big], dtype)])
    y = np.concatenate([y, np.array([big / 1.7, big / 1.7, big / 2.9, big / 2, big / 5.5,
                                     big / 1.2], dtype)])  # fmt: skip
    y *= np.where(rng.random(y.size) < 0.5, -1, 1).astype(dtype)
    # The "out" group's kernel: frexp, lgamma_r, remquo on rows 0, 1, 2.
    a0, a1 = np.ones((3, x.size), dtype), np.ones((3, x.size), dtype)
    a0[2], a1[2] = x, y
    o0, o1 = np.zeros((3, x.size), dtype), np.zeros((3, x.size), np.int32)
    prog.kernel("out_s")(a0, a1, o0, o1, global_size=x.size)
    rem, quo = o0[2], o1[2]
    want_r, want_q = [], []
    for a, b in zip(x, y, strict=True):
        exact = Fraction(float(a)) / Fraction(float(b))
        k = round(exact)  # nearest, ties to even
        want_r.append(float(Fraction(float(a)) - k * Fraction(float(b))))
        want_q.append((abs(k) % 128) * (1 if exact >= 0 else -1))
    assert_same_bits(rem, np.array(want_r, dtype), "remainder")
    assert_same_bits(quo, np.array(want_q, np.int32), "quotient bits")
