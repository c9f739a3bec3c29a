"""Integer and float arithmetic: wrap-around, division, shifts and OpenCL.std integer functions."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from refs import as_py, assert_same_bits, c_div, from_py, round_array, saturate
from sources import ARITH_INT, FLOAT_ARITH, HALF_ARITH, INT_BUILTINS, SHIFTS, parse_type


def _ops(ops, prefix):
    return [op for op in ops if op.name.startswith(prefix)]


def _check_int(r, op, fn):
    """fn maps Python-int inputs to the exact result; the kernel must match it mod 2**bits."""
    ins = [as_py(r[f"{op.name}:{x}"]) for x in "abc"[: len(op.ins)]]
    out = r[f"{op.name}:o"]
    expected = np.vectorize(fn, otypes=[object])(*ins) if ins else None
    assert_same_bits(out, from_py(expected, out.dtype), op.name)


@pytest.mark.parametrize("kind", ["add", "sub", "mul", "bitops"])
def test_integer_wraparound(run, kind):
    r = run("arith_int")
    fns = {
        "add": lambda a, b: a + b,
        "sub": lambda a, b: a - b,
        "mul": lambda a, b: a * b,
        "bitops": None,
    }
    for op in _ops(ARITH_INT, kind + "_"):
        if kind == "bitops":
            signed = parse_type(op.out)[0](0).dtype.kind == "i" and op.out in ("int", "long")
            _check_int(
                r,
                op,
                (lambda a, b: (a & b) ^ (a | ~b))
                if signed
                else (lambda a, b: ((a & b) ^ (a | ~b)) + 1),
            )
        else:
            _check_int(r, op, fns[kind])


def test_integer_division_truncates(run):
    r = run("arith_int")
    for op in _ops(ARITH_INT, "div_"):
        _check_int(r, op, c_div)


def test_integer_remainder_has_dividend_sign(run):
    r = run("arith_int")
    for op in _ops(ARITH_INT, "rem_"):
        _check_int(r, op, lambda a, b: a - b * c_div(a, b))


def _width(op) -> int:
    dt, n = parse_type(op.out)
    bits = np.dtype(dt).itemsize * 8
    # Scalars shift after integer promotion (char/short -> int); vectors shift per element.
    return max(bits, 32) if n == 1 else bits


@pytest.mark.parametrize("direction", ["shl", "shr"])
def test_shift_counts_are_masked(run, direction):
    r = run("shifts")
    for op in _ops(SHIFTS, direction + "_"):
        mask = _width(op) - 1
        if direction == "shl":
            _check_int(r, op, lambda a, b, m=mask: a << (b & m))
        else:
            # >> is arithmetic on signed types (Python's >> on negative ints floors: same).
            _check_int(r, op, lambda a, b, m=mask: a >> (b & m))


def _bits_of(op) -> int:
    return np.dtype(parse_type(op.out)[0]).itemsize * 8


def _signed(op, i=0) -> bool:
    return np.dtype(parse_type(op.ins[i])[0]).kind == "i"


def _check_builtin(r, prefix, make_fn):
    ops = _ops(INT_BUILTINS, prefix)
    assert ops, prefix
    for op in ops:
        _check_int(r, op, make_fn(op))


def test_mul_hi(run):
    _check_builtin(run("int_builtins"), "mul_hi_", lambda op: lambda a, b: (a * b) >> _bits_of(op))


def test_mad_hi(run):
    _check_builtin(
        run("int_builtins"), "mad_hi_", lambda op: lambda a, b, c: ((a * b) >> _bits_of(op)) + c
    )


def test_add_sub_saturate(run):
    r = run("int_builtins")
    for prefix, fn in (
        ("add_sat_", lambda a, b: a + b),
        ("sub_sat_", lambda a, b: a - b),
        ("mad_sat_", lambda a, b, c: a * b + c),
    ):
        for op in _ops(INT_BUILTINS, prefix):
            ins = [as_py(r[f"{op.name}:{x}"]) for x in "abc"[: len(op.ins)]]
            exact = np.vectorize(fn, otypes=[object])(*ins)
            assert_same_bits(r[f"{op.name}:o"], saturate(exact, r[f"{op.name}:o"].dtype), op.name)


def test_hadd_rhadd_do_not_overflow(run):
    r = run("int_builtins")
    _check_builtin(r, "hadd_", lambda op: lambda a, b: (a + b) >> 1)
    _check_builtin(r, "rhadd_", lambda op: lambda a, b: (a + b + 1) >> 1)


def test_min_max_clamp_integer(run):
    r = run("int_builtins")
    _check_builtin(r, "min_", lambda op: min)
    _check_builtin(r, "max_", lambda op: max)
    _check_builtin(r, "clamp_", lambda op: lambda a, b, c: min(max(a, min(b, c)), max(b, c)))


def test_clz_ctz_popcount(run):
    r = run("int_builtins")

    def clz(op):
        n = _bits_of(op)
        return lambda a: n - (a % (1 << n)).bit_length()

    def ctz(op):
        n = _bits_of(op)
        return lambda a: n if a == 0 else ((a & -a).bit_length() - 1)

    _check_builtin(r, "clz_", clz)
    _check_builtin(r, "ctz_", ctz)

    def popcount(op):
        n = _bits_of(op)
        return lambda a: bin(a % (1 << n)).count("1")

    _check_builtin(r, "popcount_", popcount)


def test_rotate(run):
    def rot(op):
        n = _bits_of(op)
        return lambda a, b: ((a % (1 << n)) << (b % n)) | ((a % (1 << n)) >> (n - b % n))

    _check_builtin(run("int_builtins"), "rotate_", rot)


def test_abs_and_abs_diff_are_unsigned(run):
    r = run("int_builtins")
    _check_builtin(r, "abs_diff_", lambda op: lambda a, b: abs(a - b))
    for op in _ops(INT_BUILTINS, "abs_"):
        if not op.name.startswith("abs_diff_"):
            _check_int(r, op, abs)


def test_mul24_mad24(run):
    r = run("int_builtins")
    _check_builtin(r, "mul24_", lambda op: lambda a, b: a * b)
    _check_builtin(r, "mad24_", lambda op: lambda a, b, c: a * b + c)


def test_upsample(run):
    def up(op):
        n = np.dtype(parse_type(op.ins[1])[0]).itemsize * 8
        return lambda a, b: (a << n) | b

    _check_builtin(run("int_builtins"), "upsample_", up)


# --- floating point: + - * / are correctly rounded, so comparisons are exact -----------------


def _exact_float(op, fn, ins):
    dt = parse_type(op.out)[0]
    exact = np.vectorize(lambda *xs: fn(*[Fraction(float(x)) for x in xs]), otypes=[object])(*ins)
    return round_array(exact, dt)


@pytest.mark.parametrize("kind", ["add", "sub", "mul", "div"])
def test_float_basic_ops_correctly_rounded(run, kind):
    r = run("arith_float")
    fns = {
        "add": lambda a, b: a + b,
        "sub": lambda a, b: a - b,
        "mul": lambda a, b: a * b,
        "div": lambda a, b: a / b,
    }
    for op in _ops(FLOAT_ARITH, kind + "_"):
        a, b, o = r[f"{op.name}:a"], r[f"{op.name}:b"], r[f"{op.name}:o"]
        # NumPy's float32/float64 + - * / are IEEE correctly rounded; keep signed zeros exact.
        with np.errstate(divide="ignore", invalid="ignore"):
            expected = {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}[kind]
        assert_same_bits(o, expected, op.name)
        finite = np.isfinite(expected) & (expected != 0)
        assert_same_bits(
            o[finite],
            _exact_float(op, fns[kind], [a[finite], b[finite]]),
            op.name + " (exact reference)",
        )


def test_float_negate_and_unfused_multiply_add(run):
    r = run("arith_float")
    for t in ("float", "double"):
        assert_same_bits(r[f"neg_{t}:o"], -r[f"neg_{t}:a"], f"neg_{t}")
        a, b, c = (r[f"muladd_{t}:{x}"] for x in "abc")
        # FP_CONTRACT OFF: product rounded, then sum rounded (NumPy does the same).
        assert_same_bits(r[f"muladd_{t}:o"], a * b + c, f"muladd_{t}")


def test_half_arithmetic(run):
    r = run("arith_half")
    for op in HALF_ARITH:
        a, b = (r[f"{op.name}:{x}"].astype(np.float16) for x in "ab")
        # float16 + - * / in NumPy round once from float32, which has >= 2*11+2 bits: exact.
        expected = {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}[op.name.split("_")[0]]
        assert_same_bits(r[f"{op.name}:o"], expected.astype(np.float32), op.name)
