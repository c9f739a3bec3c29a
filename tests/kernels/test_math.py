"""OpenCL.std math functions in float and double. IEEE-exact functions are compared bit for
bit; the rest within a generous ULP bound (the conformant library comes later)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from refs import assert_same_bits, assert_ulp
from sources import MATH_BINARY, MATH_UNARY
from ulp_refs import fract_reference

EXACT_UNARY = {
    "sqrt": np.sqrt,
    "fabs": np.fabs,
    "floor": np.floor,
    "ceil": np.ceil,
    # round: halfway cases away from zero; x - trunc(x) is exact, x + 0.5 would not be.
    "round": lambda x: np.where(
        np.abs(x - np.trunc(x)) >= 0.5, np.trunc(x) + np.sign(x), np.trunc(x)
    ),
    "rint": np.rint,
    "trunc": np.trunc,
    "logb": lambda x: np.floor(np.log2(x.astype(np.float64))),
}
ULP_UNARY = {
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "cbrt": np.cbrt,
    "erf": np.vectorize(math.erf),
    "radians": np.radians,
    "degrees": np.degrees,
    "sign": np.sign,
}
LOOSE_UNARY = {
    "tgamma": np.vectorize(lambda x: math.gamma(x) if x < 171 else math.inf),
    "lgamma": np.vectorize(math.lgamma),
}
EXACT_BINARY = {
    "fmin": np.fmin,
    "fmax": np.fmax,
    "fmod": np.fmod,
    "copysign": np.copysign,
    "nextafter": np.nextafter,
    "remainder": np.vectorize(math.remainder),
    "step": lambda a, b: np.where(b < a, 0.0, 1.0),
}
ULP_BINARY = {"pow": np.power, "hypot": np.hypot, "atan2": np.arctan2}
TYPES = ["float", "double"]
assert set(MATH_UNARY) == set(EXACT_UNARY) | set(ULP_UNARY) | set(LOOSE_UNARY)
assert set(MATH_BINARY) == set(EXACT_BINARY) | set(ULP_BINARY)


def _args(r, name, k):
    return [r[f"{name}:{x}"] for x in "abc"[:k]], r[f"{name}:o"]


@pytest.mark.parametrize("t", TYPES)
def test_exact_math_functions(run, t):
    r = run("math")
    for f, fn in EXACT_UNARY.items():
        (a,), o = _args(r, f"{f}_{t}", 1)
        assert_same_bits(o, fn(a).astype(o.dtype), f)
    for f, fn in EXACT_BINARY.items():
        (a, b), o = _args(r, f"{f}_{t}", 2)
        expected = fn(a.astype(np.float64), b.astype(np.float64)) if f == "remainder" else fn(a, b)
        # fmin/fmax may order -0 and +0 either way: compare by value there.
        assert_ulp(o, np.asarray(expected, o.dtype), 0, f) if f in (
            "fmin",
            "fmax",
        ) else assert_same_bits(o, np.asarray(expected, o.dtype), f)


@pytest.mark.parametrize("t", TYPES)
def test_fma_is_single_rounding(run, t):
    from refs import round_array

    (a, b, c), o = _args(run("math"), f"fma_{t}", 3)
    exact = [
        Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
        for x, y, z in zip(a, b, c, strict=True)
    ]
    assert_same_bits(o, round_array(np.array(exact, dtype=object), o.dtype), "fma")


@pytest.mark.parametrize("t", TYPES)
def test_transcendental_functions_within_ulps(run, t):
    r = run("math")
    for f, fn in ULP_UNARY.items():
        (a,), o = _args(r, f"{f}_{t}", 1)
        assert_ulp(o, fn(a.astype(np.float64)), 4, f)
    for f, fn in ULP_BINARY.items():
        (a, b), o = _args(r, f"{f}_{t}", 2)
        assert_ulp(o, fn(a.astype(np.float64), b.astype(np.float64)), 4, f)
    for f, fn in LOOSE_UNARY.items():
        (a,), o = _args(r, f"{f}_{t}", 1)
        # ULPs blow up near lgamma's zeros and tgamma's overflow: relative tolerance instead.
        rtol = 1e-5 if t == "float" else 1e-12
        expected = fn(a.astype(np.float64)).astype(o.dtype)  # float overflow -> inf
        np.testing.assert_allclose(o, expected, rtol=rtol, atol=rtol, err_msg=f)
    (a, b), o = _args(r, f"pown_{t}", 2)
    assert_ulp(o, np.power(a.astype(np.float64), np.fmod(b, 9).astype(np.float64)), 4, "pown")


@pytest.mark.parametrize("t", TYPES)
def test_exponent_functions(run, t):
    r = run("math")
    (a, b), o = _args(r, f"ldexp_{t}", 2)
    assert_same_bits(o, np.ldexp(a, np.fmod(b, 50)).astype(o.dtype), "ldexp")
    (a,), o = _args(r, f"ilogb_{t}", 1)
    assert_same_bits(o, np.floor(np.log2(a.astype(np.float64))).astype(np.int32), "ilogb")
    (a,), o = _args(r, f"frexp_{t}", 1)
    mant, exp = np.frexp(a)
    assert_same_bits(o, mant, "frexp mantissa")
    assert_same_bits(r[f"frexp_{t}:o2"], exp.astype(np.int32), "frexp exponent")


@pytest.mark.parametrize("t", TYPES)
def test_modf_fract_remquo(run, t):
    r = run("math")
    (a,), o = _args(r, f"modf_{t}", 1)
    frac, whole = np.modf(a)
    assert_same_bits(o, frac, "modf")
    assert_same_bits(r[f"modf_{t}:o2"], whole, "modf integral part")
    (a,), o = _args(r, f"fract_{t}", 1)
    fl = np.floor(a)
    assert_same_bits(o, fract_reference(a), "fract")
    assert_same_bits(r[f"fract_{t}:o2"], fl, "fract floor")
    (a, b), o = _args(r, f"remquo_{t}", 2)
    assert_same_bits(
        o, np.array([math.remainder(x, y) for x, y in zip(a, b, strict=True)], o.dtype)
    )
    q = np.array(
        [round(Fraction(float(x)) / Fraction(float(y))) for x, y in zip(a, b, strict=True)]
    )
    got = r[f"remquo_{t}:o2"].astype(np.int64)
    # Only the sign and at least the 3 low bits of the quotient are specified.
    assert ((np.abs(got) % 8) == (np.abs(q) % 8)).all()
    assert ((np.sign(got) == np.sign(q)) | (q == 0) | (got == 0)).all()


def test_vector_math_and_nan(run):
    r = run("math")
    (a,), o = _args(r, "sqrt_float4", 1)
    assert_same_bits(o, np.sqrt(a))
    assert np.isnan(r["nan_float:o"]).all()
