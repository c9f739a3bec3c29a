"""OpenCL.std common, geometric and relational functions (integer functions: test_arith.py)."""

from __future__ import annotations

import numpy as np
from refs import assert_same_bits, assert_ulp


def _io(r, name, k=1):
    return [r[f"{name}:{x}"] for x in "abc"[:k]] + [r[f"{name}:o"]]


def _close(actual, expected, magnitude, ulps=4):
    eps = np.finfo(actual.dtype).eps
    err = np.abs(actual.astype(np.float64) - expected)
    assert (err <= ulps * eps * magnitude + np.finfo(actual.dtype).tiny).all(), (
        f"max error {err.max()} vs bound {(ulps * eps * magnitude).max()}"
    )


def test_common_functions(run):
    r = run("common_geometric_relational")
    # fmin/fmax may return either zero when comparing -0 with +0 (OpenCL C 6.15.4):
    # adding +0 maps -0 to +0 on both sides so only the zero's sign may differ.
    a, b, o = _io(r, "clamp_float", 2)
    assert_same_bits(o + 0, np.minimum(np.maximum(a, -np.abs(b)), np.abs(b)) + 0)
    a, b, o = _io(r, "clamp_double4", 2)
    assert_same_bits(o + 0, np.minimum(np.maximum(a, -np.abs(b)), np.abs(b)) + 0)
    a, b, c, o = _io(r, "mix_float", 3)
    # mix = a + (b - a) * c rounds intermediates: bound the error by the operands' size.
    _close(
        o,
        a.astype(np.float64) + (b.astype(np.float64) - a) * c,
        np.abs(a) + np.abs(b - a.astype(np.float64)) * np.abs(c),
    )
    a, o = _io(r, "smoothstep_float")
    t = np.clip((a.astype(np.float64) + 1) / 3, 0, 1)
    assert_ulp(o, t * t * (3 - 2 * t), 4, "smoothstep")
    a, b, o = _io(r, "min_max_float4", 2)
    assert_same_bits(o + 0, np.minimum(a, b) * np.float32(2) + np.maximum(a, b) + 0)


def test_geometric_functions(run):
    r = run("common_geometric_relational")
    a, b, o = _io(r, "dot_float4", 2)
    # Sums of products cancel: bound the error by the sum of |products|, not the result.
    _close(o, (a.astype(np.float64) * b).sum(axis=1), np.abs(a.astype(np.float64) * b).sum(1))
    a, b, o = _io(r, "dot_double3", 2)
    _close(o, (a[:, :3] * b[:, :3]).sum(axis=1), np.abs(a[:, :3] * b[:, :3]).sum(axis=1))
    a, b, o = _io(r, "cross_float3", 2)
    a3, b3 = a[:, :3].astype(np.float64), b[:, :3].astype(np.float64)
    _close(
        o,
        np.cross(a3, b3),
        np.abs(a3)[:, [1, 2, 0]] * np.abs(b3)[:, [2, 0, 1]]
        + np.abs(a3)[:, [2, 0, 1]] * np.abs(b3)[:, [1, 2, 0]],
    )
    a, o = _io(r, "length_float4")
    assert_ulp(o, np.linalg.norm(a.astype(np.float64), axis=1), 4, "length")
    a, b, o = _io(r, "distance_float2", 2)
    assert_ulp(o, np.linalg.norm(a.astype(np.float64) - b, axis=1), 4, "distance")
    a, o = _io(r, "normalize_float3")
    v = a[:, :3].astype(np.float64)
    assert_ulp(o, v / np.linalg.norm(v, axis=1)[:, None], 4, "normalize")
    # fast_* have implementation-defined accuracy: a loose relative bound.
    a, o = _io(r, "fast_length_float4")
    np.testing.assert_allclose(o, np.linalg.norm(a.astype(np.float64), axis=1), rtol=1e-3)
    a, o = _io(r, "fast_normalize_float2")
    np.testing.assert_allclose(
        o, a / np.linalg.norm(a.astype(np.float64), axis=1)[:, None], rtol=1e-3, atol=1e-6
    )


def test_relational_functions(run):
    r = run("common_geometric_relational")
    a, b, o = _io(r, "isequal_float4", 2)
    other = np.stack([a[:, 0], b[:, 1], a[:, 2], b[:, 3]], axis=1)
    # Vector relational functions give -1/0 lanes; scalar ones 1/0.
    assert_same_bits(o, np.where(a == other, -1, 0).astype(np.int32))
    a, o = _io(r, "isnan_float4")
    assert_same_bits(o, np.where(np.isnan(a), -1, 0).astype(np.int32))
    a, o = _io(r, "isinf_double")
    assert_same_bits(o, np.isinf(a).astype(np.int32))
    a, o = _io(r, "isfinite_float")
    assert_same_bits(o, np.isfinite(a).astype(np.int32))
    a, o = _io(r, "signbit_float4")
    assert_same_bits(o, np.where(np.signbit(a), -1, 0).astype(np.int32))
    a, b, c, o = _io(r, "bitselect_uint4", 3)
    assert_same_bits(o, (a & ~c) | (b & c))
    a, b, c, o = _io(r, "bitselect_float", 3)
    ai, bi = a.view(np.uint32), b.view(np.uint32)
    assert_same_bits(o, ((ai & ~c) | (bi & c)).view(np.float32))
