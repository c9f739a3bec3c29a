"""Geometric functions without overflow or underflow (OpenCL C 3.0 §6.15.6 and the
edge-case rules of §7.5): length, distance, normalize and their fast_ forms on vectors
whose sums of squares overflow or underflow although the result is representable, zero,
tiny, huge, infinite and NaN vectors; float and double; checked against Python's
``math.hypot`` (correctly scaled) within the spec's ULP bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from harness import build
from refs import assert_same_bits, assert_ulp

SOURCE = r"""
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define GEOMETRIC(T, T4, FL, FN, FD)                                                       \
kernel void geo_##T(global const T4* v, global const T4* w, global T* len, global T4* nrm, \
                    global T* flen, global T4* fnrm, global T* dist, global T* fdist,     \
                    global T* len2, global T* len3, global T* len1) {                      \
    size_t i = get_global_id(0);                                                           \
    len[i] = length(v[i]);                                                                 \
    nrm[i] = normalize(v[i]);                                                              \
    flen[i] = FL(v[i]);                                                                    \
    fnrm[i] = FN(v[i]);                                                                    \
    dist[i] = distance(v[i], w[i]);                                                        \
    fdist[i] = FD(v[i], w[i]);                                                             \
    len2[i] = length(v[i].xy);                                                             \
    len3[i] = length(v[i].xyz);                                                            \
    len1[i] = length(v[i].x);                                                              \
}
GEOMETRIC(float, float4, fast_length, fast_normalize, fast_distance)
"""
# fast_ forms exist for float only.
DOUBLE = "GEOMETRIC(double, double4, length, normalize, distance)\n"


def _inputs(dtype) -> tuple[np.ndarray, np.ndarray]:
    info = np.finfo(dtype)
    big, tiny = float(info.max) / 4, float(info.smallest_subnormal)
    rows = [
        [3e30, 4e30, 0, 0] if dtype == np.float32 else [3e300, 4e300, 0, 0],
        [1e-30, 0, 0, 0] if dtype == np.float32 else [1e-300, 0, 0, 0],
        [0, 0, 0, 0],
        [-0.0, 0.0, -0.0, 0.0],
        [tiny, tiny, -tiny, 0],
        [big, big, big, -big],  # the length is finite, the sum of squares is not
        [info.max, info.max, 0, 0],  # the length overflows: inf
        [math.inf, 1, -math.inf, 2],
        [math.inf, math.nan, 0, 0],
        [math.nan, 1, 2, 3],
        [1, 2, 3, 4],
        [float(info.tiny), -float(info.tiny), 0, float(info.tiny)],
        [1e-20, 3e-20, 0, 0] if dtype == np.float32 else [1e-160, 3e-160, 0, 0],
        [1e19, -1e19, 3e19, 0] if dtype == np.float32 else [1e155, -1e155, 3e155, 0],
    ]
    rng = np.random.default_rng(12)
    exps = rng.integers(info.minexp - info.nmant, info.maxexp - 2, (64, 1))
    spread = rng.integers(-8, 1, (64, 4))  # lanes of one vector within 2^8 of each other
    values = rng.uniform(-2, 2, (64, 4)) * np.exp2((exps + spread).astype(np.float64))
    v = np.vstack([np.array(rows, np.float64), values]).astype(dtype)
    w = np.vstack([-v[: len(rows)], np.roll(v[len(rows) :], 1, axis=1) / 3]).astype(dtype)
    return v, w


def _length(row) -> float:
    return math.hypot(*(float(x) for x in row))


def _rounded(expected: np.ndarray, dtype) -> np.ndarray:
    """The reference, with results beyond the type's range overflowed to inf."""
    with np.errstate(over="ignore"):
        return np.where(np.isinf(expected.astype(dtype)), expected.astype(dtype), expected)


def _normalize(row, dtype) -> np.ndarray:
    row = [float(x) for x in row]
    if any(math.isnan(x) for x in row):
        return np.full(len(row), np.nan)
    if any(math.isinf(x) for x in row):
        row = [math.copysign(1.0 if math.isinf(x) else 0.0, x) for x in row]
    if not any(row):
        return np.array(row)
    # Scale by a power of two first (exact) so that hypot neither overflows nor rounds
    # in the subnormal range.
    e = math.frexp(max(abs(x) for x in row))[1]
    row = [math.ldexp(x, -e) for x in row]
    n = math.hypot(*row)
    return np.array([x / n for x in row])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_geometric_functions_scale(producer, dtype):
    source = SOURCE + (DOUBLE if dtype == np.float64 else "")
    prog = build(source, producer=producer)
    name = "geo_float" if dtype == np.float32 else "geo_double"
    v, w = _inputs(dtype)
    n = len(v)
    outs = [np.zeros(n, dtype), np.zeros((n, 4), dtype), np.zeros(n, dtype)]
    outs += [np.zeros((n, 4), dtype), np.zeros(n, dtype), np.zeros(n, dtype)]
    outs += [np.zeros(n, dtype) for _ in range(3)]
    prog.kernel(name)(v, w, *outs, global_size=n)
    length, nrm, flen, fnrm, dist, fdist, len2, len3, len1 = outs
    # Full profile bounds: sqrt-based, within a few ulp; the fast forms are allowed 8192 ulp
    # but are computed the same way here, so they get the same bound.
    expected = _rounded(np.array([_length(r) for r in v]), dtype)
    assert_ulp(length, expected, 3, "length")
    assert_ulp(flen, expected, 3, "fast_length")
    assert_ulp(len2, _rounded(np.array([_length(r[:2]) for r in v]), dtype), 3, "2 lanes")
    assert_ulp(len3, _rounded(np.array([_length(r[:3]) for r in v]), dtype), 3, "3 lanes")
    assert_same_bits(len1, np.abs(v[:, 0]), "length of a scalar is fabs")
    with np.errstate(over="ignore", invalid="ignore"):
        d = [_length(a.astype(np.float64) - b) for a, b in zip(v, w, strict=True)]
    d = _rounded(np.array(d), dtype)
    assert_ulp(dist, d, 3, "distance")
    assert_ulp(fdist, d, 3, "fast_distance")
    expected_n = np.array([_normalize(r, dtype) for r in v])
    assert_ulp(nrm, expected_n, 3, "normalize")
    assert_ulp(fnrm, expected_n, 3, "fast_normalize")
    # normalize(0) is the argument itself, signed zeros included.
    assert_same_bits(nrm[3], v[3], "normalize of signed zeros")


HALF_SOURCE = r"""
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
kernel void geo_half(global const half* v, global half* len, global half* nrm) {
    size_t i = get_global_id(0);
    half4 x = vload4(i, v);
    len[i] = length(x);
    vstore4(normalize(x), i, nrm);
}
"""


def test_half_geometric_functions_compute_wider(producer):
    # 300**2 + 400**2 overflows half (max 65504); 0.001**2 underflows to a subnormal.
    prog = build(HALF_SOURCE, producer=producer)
    v = np.array([[300, 400, 0, 0], [0.001, 0, 0, 0], [-0.0, 0, 0, 0], [1, 2, 2, 4]], np.float16)
    length, nrm = np.zeros(4, np.float16), np.zeros((4, 4), np.float16)
    prog.kernel("geo_half")(v.ravel(), length, nrm.ravel(), global_size=4)
    assert_ulp(length, np.array([_length(r) for r in v]), 1, "half length")
    assert_ulp(nrm, np.array([_normalize(r, np.float16) for r in v]), 2, "half normalize")
    assert_same_bits(nrm[2], v[2], "normalize of a zero half vector")
