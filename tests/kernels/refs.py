"""NumPy reference helpers shared by the kernel tests."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

INT_BITS = {
    np.int8: 8,
    np.uint8: 8,
    np.int16: 16,
    np.uint16: 16,
    np.int32: 32,
    np.uint32: 32,
    np.int64: 64,
    np.uint64: 64,
}


def as_py(arr: np.ndarray) -> np.ndarray:
    """Elements as Python ints/floats (object array): exact, unbounded arithmetic."""
    return np.asarray(arr).astype(object)


def from_py(values, dtype, wrap: bool = True) -> np.ndarray:
    """Python ints -> dtype, wrapping modulo 2**bits (C conversion to a narrower type)."""
    dt = np.dtype(dtype)
    bits = dt.itemsize * 8
    flat = [int(v) % (1 << bits) for v in np.ravel(values)]
    out = np.array(flat, dtype=np.uint64).astype(dt.str.replace("i", "u")).view(dt)
    return out.reshape(np.shape(values))


def saturate(values, dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    flat = [min(max(int(v), int(info.min)), int(info.max)) for v in np.ravel(values)]
    return np.array(flat, dtype=object).astype(dtype).reshape(np.shape(values))


def c_div(a: int, b: int) -> int:
    """C integer division: truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def round_int(x: Fraction, mode: str) -> int:
    """Round an exact rational to an integer: rte (half to even), rtz, rtp, rtn."""
    if mode == "rte":
        return round(x)  # Fraction.__round__ rounds half to even
    if mode == "rtz":
        return math.trunc(x)
    if mode == "rtp":
        return math.ceil(x)
    return math.floor(x)


def round_float(x: Fraction, dtype, mode: str = "rte"):
    """Round an exact rational to the float type ``dtype`` with rounding ``mode``.

    Candidates are the nearest float (by float64) and its neighbours; picking among
    them against the exact value avoids double rounding.
    """
    dt = np.dtype(dtype).type
    with np.errstate(over="ignore"):
        near = dt(float(x))
    cands = {near, np.nextafter(near, dt(-np.inf)), np.nextafter(near, dt(np.inf))}
    finite = [c for c in cands if np.isfinite(c)]
    below = [c for c in finite if Fraction(float(c)) <= x]
    above = [c for c in finite if Fraction(float(c)) >= x]
    lo = max(below, key=lambda c: Fraction(float(c))) if below else dt(-np.inf)
    hi = min(above, key=lambda c: Fraction(float(c))) if above else dt(np.inf)
    if lo == hi:
        return lo
    if mode == "rtz":
        return lo if x > 0 else hi
    if mode == "rtp":
        return hi
    if mode == "rtn":
        return lo
    if not np.isfinite(hi) or not np.isfinite(lo):
        # Beyond the largest finite value: rte rounds to infinity past the halfway point.
        big = hi if np.isfinite(hi) else lo
        # np.spacing(max finite) is inf; the step below it is the same size.
        step = Fraction(float(abs(np.spacing(np.nextafter(big, dt(0))))))
        limit = Fraction(float(big)) + step / 2 * (1 if x > 0 else -1)
        return (hi if x > 0 else lo) if abs(x) >= abs(limit) else big
    dlo, dhi = x - Fraction(float(lo)), Fraction(float(hi)) - x
    if dlo != dhi:
        return lo if dlo < dhi else hi
    mant = np.frombuffer(np.array(lo, dt).tobytes(), dtype=f"u{np.dtype(dt).itemsize}")[0]
    return lo if mant % 2 == 0 else hi


def round_array(values, dtype, mode: str = "rte") -> np.ndarray:
    exact = [Fraction(v) if isinstance(v, int) else Fraction(float(v)) for v in np.ravel(values)]
    return np.array([round_float(x, dtype, mode) for x in exact], dtype=dtype).reshape(
        np.shape(values)
    )


def bits(arr: np.ndarray) -> np.ndarray:
    arr = np.ascontiguousarray(arr)
    return arr.view(f"u{arr.dtype.itemsize}")


def assert_same_bits(actual: np.ndarray, expected: np.ndarray, what: str = "") -> None:
    """Bit-exact equality; for floats any NaN matches any NaN (payloads aren't specified)."""
    actual = np.asarray(actual)
    expected = np.asarray(expected, dtype=actual.dtype)
    assert actual.shape == expected.shape, what
    ok = bits(actual) == bits(expected)
    if actual.dtype.kind == "f":
        ok |= np.isnan(actual) & np.isnan(expected)
    if not ok.all():
        idx = np.argwhere(~ok)[:8]
        rows = [
            f"  at {tuple(i)}: got {actual[tuple(i)]!r} expected {expected[tuple(i)]!r}"
            for i in idx
        ]
        raise AssertionError(f"{what}: {int((~ok).sum())} mismatches\n" + "\n".join(rows))


def ulp_error(actual: np.ndarray, expected) -> np.ndarray:
    """|actual - expected| in units of the last place of ``expected`` in actual's type."""
    actual = np.asarray(actual)
    dt = actual.dtype
    exp64 = np.asarray(expected, dtype=np.float64)
    exp_t = exp64.astype(dt)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(actual.astype(np.float64) - exp64) / np.spacing(np.abs(exp_t)).astype(
            np.float64
        )
    same_special = (np.isnan(actual) & np.isnan(exp64)) | (actual.astype(np.float64) == exp64)
    return np.where(same_special, 0.0, err)


def assert_ulp(actual, expected, ulps: float, what: str = "") -> None:
    err = ulp_error(actual, expected)
    bad = ~(err <= ulps)
    if bad.any():
        idx = np.argwhere(bad)[:8]
        rows = [
            f"  at {tuple(i)}: got {np.asarray(actual)[tuple(i)]!r} expected "
            f"{np.asarray(expected, dtype=np.float64)[tuple(i)]!r} ({err[tuple(i)]:.1f} ulp)"
            for i in idx
        ]
        raise AssertionError(f"{what}: {int(bad.sum())} beyond {ulps} ulp\n" + "\n".join(rows))
