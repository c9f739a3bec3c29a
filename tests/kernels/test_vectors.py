"""Vectors: construction, swizzles, lo/hi/even/odd, dynamic extract/insert, shuffles,
comparisons (-1/0 lanes), select and any/all."""

from __future__ import annotations

import numpy as np
from refs import assert_same_bits


def _io(r, name, k=1):
    return [r[f"{name}:{x}"] for x in "abc"[:k]] + [r[f"{name}:o"]]


def test_vector_construction(run):
    r = run("vectors")
    a, b, o = _io(r, "construct_int4", 2)
    assert_same_bits(o, np.stack([a[:, 0], b[:, 1], a[:, 2], b[:, 3]], axis=1))
    a, b, o = _io(r, "construct_float8", 2)
    assert_same_bits(o, np.concatenate([b, a[:, :1], np.repeat(a[:, 1:2], 3, axis=1)], axis=1))
    a, o = _io(r, "construct_splat_short16")
    assert_same_bits(o, np.repeat(a[:, None], 16, axis=1))
    a, b, o = _io(r, "construct_uchar3", 2)
    assert_same_bits(o, np.stack([a, b, a ^ b], axis=1))


def test_swizzles(run):
    r = run("vectors")
    a, o = _io(r, "swizzle_wzyx_int4")
    assert_same_bits(o, a[:, ::-1])
    a, o = _io(r, "swizzle_s_float8")
    assert_same_bits(o, a[:, [7, 0, 6, 1, 5, 2, 4, 3]])
    a, o = _io(r, "swizzle_hex_uchar16")
    assert_same_bits(o, a[:, ::-1])
    a, o = _io(r, "swizzle_repeat_long4")
    assert_same_bits(o, a[:, [0, 0, 1, 0]])
    a, o = _io(r, "swizzle_int3")
    assert_same_bits(o, a[:, [2, 0, 1]])


def test_swizzle_assignment(run):
    r = run("vectors")
    a, b, o = _io(r, "swizzle_write_int4", 2)
    expected = a.copy()
    expected[:, 2], expected[:, 0], expected[:, 1] = b[:, 1], b[:, 3], 5
    assert_same_bits(o, expected)
    a, b, o = _io(r, "lohi_write_ulong4", 2)
    expected = a.copy()
    expected[:, 2:] = b
    expected[:, ::2] += np.uint64(1)
    assert_same_bits(o, expected)


def test_lo_hi_even_odd(run):
    r = run("vectors")
    a, o = _io(r, "lohi_int8")
    assert_same_bits(o, np.concatenate([a[:, 4:], a[:, :4]], axis=1))
    a, o = _io(r, "evenodd_short16")
    assert_same_bits(o, np.concatenate([a[:, 1::2], a[:, ::2]], axis=1))
    # For 3-component vectors .lo is (x, y) and .even is (x, z).
    a, o = _io(r, "lohi_float3")
    assert_same_bits(o, a[:, [0, 1, 0, 2]])


def test_dynamic_extract_insert(run):
    r = run("vectors")
    a, b, o = _io(r, "extract_dyn_float4", 2)
    assert_same_bits(o, a[np.arange(len(a)), b & 3])
    a, b, o = _io(r, "insert_dyn_int8", 2)
    expected = a.copy()
    expected[np.arange(len(a)), b & 7] = -1
    assert_same_bits(o, expected)


def _mask_bits(m: int) -> int:
    # shuffle/shuffle2 use only the ilogb(2m - 1) + 1 low bits of each mask component.
    return (1 << int(np.floor(np.log2(2 * m - 1)) + 1)) - 1


def test_shuffle(run):
    r = run("vectors")
    for name in ("shuffle_uint4", "shuffle_float8_to4"):
        a, m, o = _io(r, name, 2)
        idx = (m & _mask_bits(a.shape[1])) % a.shape[1]
        assert_same_bits(o, np.take_along_axis(a, idx.astype(np.intp), axis=1), name)


def test_shuffle2(run):
    r = run("vectors")
    for name in ("shuffle2_char16", "shuffle2_int4_to8"):
        a, b, m, o = _io(r, name, 3)
        both = np.concatenate([a, b], axis=1)
        idx = (m & _mask_bits(a.shape[1])) % both.shape[1]
        assert_same_bits(o, np.take_along_axis(both, idx.astype(np.intp), axis=1), name)


def _mask(cond, dtype):
    return np.where(cond, -1, 0).astype(dtype)


def test_vector_comparisons_give_minus_one(run):
    r = run("vectors")
    a, b, o = _io(r, "cmp_lt_int4", 2)
    assert_same_bits(o, _mask(a < b, np.int32))
    a, b, o = _io(r, "cmp_ge_uchar16", 2)
    assert_same_bits(o, _mask(a >= b, np.int8))
    a, b, o = _io(r, "cmp_eq_short3", 2)
    assert_same_bits(o, _mask(a == np.stack([b[:, 0], a[:, 1], b[:, 2]], axis=1), np.int16))
    a, b, o = _io(r, "cmp_ne_float4", 2)
    other = np.stack([b[:, 0], a[:, 1], b[:, 2], a[:, 3]], axis=1)
    assert_same_bits(o, _mask(a != other, np.int32))
    a, b, o = _io(r, "cmp_gt_double2", 2)
    assert_same_bits(o, _mask(a > b, np.int64))
    a, b, o = _io(r, "cmp_le_ulong8", 2)
    assert_same_bits(o, _mask(a <= b, np.int64))


def test_vector_logical_operators(run):
    r = run("vectors")
    a, b, o = _io(r, "logic_and_int4", 2)
    assert_same_bits(o, _mask((a > 0) & (b > 0), np.int32))
    a, o = _io(r, "logic_not_int4")
    assert_same_bits(o, _mask(a == 0, np.int32))
    # Scalar relational operators give 1/0, not -1/0.
    a, b, o = _io(r, "scalar_cmp", 2)
    assert_same_bits(o, (a < b).astype(np.int32) + 2 * (a == b).astype(np.int32))


def test_select(run):
    r = run("vectors")
    a, b, c, o = _io(r, "select_int4", 3)
    assert_same_bits(o, np.where(c < 0, b, a))  # vector: MSB of each mask lane
    a, b, c, o = _io(r, "select_float4", 3)
    assert_same_bits(o, np.where(c >= 2**31, b, a))
    a, b, o = _io(r, "select_cmp_double2", 2)
    assert_same_bits(o, np.where(a < b, b, a))
    a, b, c, o = _io(r, "select_scalar", 3)
    assert_same_bits(o, np.where(c != 0, b, a))  # scalar: any non-zero mask
    a, b, o = _io(r, "ternary_vec_int4", 2)
    assert_same_bits(o, np.where(a > b, a, b))


def test_any_all(run):
    r = run("vectors")
    for name, fn in (
        ("any_int4", np.any),
        ("all_int4", np.all),
        ("any_char16", np.any),
        ("all_long2", np.all),
    ):
        a, o = _io(r, name)
        assert_same_bits(o, fn(a < 0, axis=1).astype(np.int32), name)
    a, b, o = _io(r, "anyall_cmp_float8", 2)
    lt = a < b
    assert_same_bits(o, (lt.any(axis=1) + 2 * lt.all(axis=1)).astype(np.int32))
