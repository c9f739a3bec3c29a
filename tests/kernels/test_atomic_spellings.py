"""Every OpenCL 1.x / 2.0 atomic built-in spelling, as each producer emits it, runs and
returns the right old values.

clang-22 lowers some atomic built-ins to instructions and leaves others as imported
calls (``_Z11atomic_xchgPU3AS1Vff``, ``_Z10atomic_incPU3AS3Vi``,
``_Z16atomic_fetch_maxPU3AS4VU7_Atomicjj``, ...; translate/imports.py lowers them).
Each work-item's returned old value is checked, not only the final memory: the old
values of an exchange chain or of atomic_inc must be a permutation of what was stored.
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import build

GROUPS, LOCAL = 16, 64
N = GROUPS * LOCAL

SOURCE = r"""
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable

/* Exchanges and counters, returned values kept: global and local, 32 and 64 bit. */
kernel void spellings1(global float* gf, global int* gi, global uint* gu, global long* gl,
                       global ulong* gul, global float* f_old, global int* i_old,
                       global long* l_old, global float* lf_out, global int* li_out) {
    local float lf;
    local int li[4];
    size_t i = get_global_id(0), l = get_local_id(0), g = get_group_id(0), n = get_global_size(0);
    if (l == 0) { lf = -1.0f; li[0] = 0; li[1] = 1000; li[2] = 0; li[3] = 0; }
    barrier(CLK_LOCAL_MEM_FENCE);
    f_old[i] = atomic_xchg(gf, (float)i + 0.5f);                 /* float, global */
    f_old[n + i] = atomic_xchg(&lf, (float)l + 0.25f);           /* float, local */
    i_old[i] = atomic_inc(&gi[0]);
    i_old[n + i] = (int)atomic_dec(&gu[0]);
    i_old[2 * n + i] = atomic_inc(&li[0]);                       /* local */
    i_old[3 * n + i] = atomic_dec(&li[1]);
    i_old[4 * n + i] = atomic_xchg(&gi[1], (int)i);
    i_old[5 * n + i] = (int)atomic_xchg(&gu[1], (uint)i);
    i_old[6 * n + i] = atomic_xchg(&li[2], (int)l);
    i_old[7 * n + i] = atom_inc(&gi[2]);
    i_old[8 * n + i] = atom_xchg(&gi[3], (int)i);
    l_old[i] = atom_inc(&gl[0]);
    l_old[n + i] = (long)atom_dec(&gul[0]);
    l_old[2 * n + i] = atom_xchg(&gl[1], (long)i);
    atomic_min(&li[3], -(int)l);
    atomic_max(&gi[4], (int)i);
    atomic_min(&gu[2], (uint)i + 3u);
    atomic_max(&gu[3], (uint)i);
    atom_min(&gl[2], -(long)i);
    atom_max(&gul[1], (ulong)i << 33);
    atom_and(&gl[3], ~(1L << (i % 64)));
    atom_or(&gul[2], 1UL << (i % 64));
    atom_xor(&gl[4], 1L << (i % 3));
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l == 0) {
        lf_out[g] = lf;
        for (int k = 0; k < 4; ++k) li_out[4 * g + k] = li[k];
    }
}

/* OpenCL 2.0 generic-pointer spellings. */
kernel void spellings2(global atomic_int* ai, global atomic_uint* au, global atomic_float* af,
                       global atomic_long* al, global atomic_flag* flag, global int* i_old,
                       global float* f_old, global long* l_old) {
    local atomic_int lai;
    size_t i = get_global_id(0), l = get_local_id(0), n = get_global_size(0);
    if (l == 0) atomic_init(&lai, 0);
    barrier(CLK_LOCAL_MEM_FENCE);
    i_old[i] = atomic_fetch_add(&ai[0], 1);
    i_old[n + i] = atomic_exchange(&ai[1], (int)i);
    i_old[2 * n + i] = atomic_exchange_explicit(&ai[2], (int)i, memory_order_relaxed);
    i_old[3 * n + i] = atomic_fetch_min(&ai[3], -(int)i);
    i_old[4 * n + i] = atomic_fetch_max(&ai[4], (int)i);
    i_old[5 * n + i] = (int)atomic_fetch_min(&au[0], (uint)i + 1u);
    i_old[6 * n + i] = (int)atomic_fetch_max_explicit(&au[1], (uint)i, memory_order_relaxed,
                                                       memory_scope_device);
    i_old[7 * n + i] = atomic_fetch_add(&lai, 1);                 /* local, generic */
    i_old[8 * n + i] = atomic_flag_test_and_set(&flag[0]);
    int expected = 0;
    i_old[9 * n + i] = atomic_compare_exchange_strong(&ai[5], &expected, (int)i + 1);
    expected = 0;
    i_old[10 * n + i] = atomic_compare_exchange_weak_explicit(
        &ai[6], &expected, 7, memory_order_seq_cst, memory_order_relaxed, memory_scope_device)
        ? -1 : expected;
    f_old[i] = atomic_exchange(&af[0], (float)i + 0.5f);
    l_old[i] = atomic_fetch_add_explicit(&al[0], 3L, memory_order_relaxed);
    l_old[n + i] = atomic_exchange(&al[1], (long)i);
    atomic_store_explicit(&ai[7], 11, memory_order_release, memory_scope_device);
    i_old[11 * n + i] = atomic_load_explicit(&ai[7], memory_order_acquire, memory_scope_device);
}
"""


@pytest.fixture
def prog(producer):
    return build(SOURCE, producer=producer)


def _chain(old: np.ndarray, final, initial, stored: np.ndarray) -> None:
    """An exchange chain: the old values plus the final one are the initial value plus
    everything stored, each exactly once."""
    got = np.sort(np.append(old, final))
    np.testing.assert_array_equal(got, np.sort(np.append(stored, initial)).astype(got.dtype))


def test_opencl1_spellings_return_old_values(prog):
    gf = np.array([-2.0], np.float32)
    gi = np.array([0, -7, 5, -3, -(2**31)], np.int32)
    gu = np.array([N, 9, 0xFFFFFFFF, 0], np.uint32)
    gl = np.array([1 << 40, -1, 0, -1, 0], np.int64)
    gul = np.array([N + (1 << 35), 0, 0], np.uint64)
    f_old = np.zeros(2 * N, np.float32)
    i_old = np.zeros(9 * N, np.int32)
    l_old = np.zeros(3 * N, np.int64)
    lf_out = np.zeros(GROUPS, np.float32)
    li_out = np.zeros(4 * GROUPS, np.int32)
    prog.kernel("spellings1")(
        gf, gi, gu, gl, gul, f_old, i_old, l_old, lf_out, li_out,
        global_size=N, local_size=LOCAL,
    )  # fmt: skip
    i = np.arange(N)
    lane = np.arange(LOCAL)
    _chain(f_old[:N], gf[0], -2.0, i + 0.5)
    for g in range(GROUPS):
        part = slice(N + g * LOCAL, N + (g + 1) * LOCAL)
        _chain(f_old[part], lf_out[g], -1.0, lane + 0.25)
        np.testing.assert_array_equal(np.sort(i_old.reshape(9, N)[2, g * LOCAL :][:LOCAL]), lane)
        np.testing.assert_array_equal(
            np.sort(i_old.reshape(9, N)[3, g * LOCAL :][:LOCAL]), 1000 - LOCAL + 1 + lane
        )
        _chain(i_old.reshape(9, N)[6, g * LOCAL :][:LOCAL], li_out[4 * g + 2], 0, lane)
    io = i_old.reshape(9, N)
    np.testing.assert_array_equal(np.sort(io[0]), i)  # atomic_inc: 0 .. N-1 once each
    np.testing.assert_array_equal(np.sort(io[1]), i + 1)  # atomic_dec from N
    _chain(io[4], gi[1], -7, i)
    _chain(io[5], gu[1], 9, i)
    np.testing.assert_array_equal(np.sort(io[7]), i + 5)
    _chain(io[8], gi[3], -3, i)
    lo = l_old.reshape(3, N)
    np.testing.assert_array_equal(np.sort(lo[0]), i + (1 << 40))
    np.testing.assert_array_equal(np.sort(lo[1]), i + 1 + (1 << 35))
    _chain(lo[2], gl[1], -1, i)
    assert gi[0] == N and gu[0] == 0 and gi[2] == N + 5
    np.testing.assert_array_equal(
        li_out.reshape(GROUPS, 4)[:, :2], [[LOCAL, 1000 - LOCAL]] * GROUPS
    )
    np.testing.assert_array_equal(li_out.reshape(GROUPS, 4)[:, 3], -(LOCAL - 1))
    assert gi[4] == N - 1 and gu[2] == 3 and gu[3] == N - 1
    assert gl[0] == (1 << 40) + N and gul[0] == 1 << 35
    assert gl[2] == -(N - 1) and gul[1] == (N - 1) << 33
    assert gl[3] == 0 and gul[2] == np.uint64(0xFFFFFFFFFFFFFFFF)
    # Each bit 1 << (i % 3) flipped once per work-item with that remainder.
    assert gl[4] == sum(1 << r for r in range(3) if (i % 3 == r).sum() % 2)


def test_opencl2_spellings_return_old_values(prog):
    ai = np.array([0, -1, -2, 0, -5, 0, 0, 0], np.int32)
    au = np.array([0xFFFFFFFF, 0], np.uint32)
    af = np.array([-3.0], np.float32)
    al = np.array([7, -9], np.int64)
    flag = np.zeros(1, np.int32)
    i_old = np.zeros(12 * N, np.int32)
    f_old = np.zeros(N, np.float32)
    l_old = np.zeros(2 * N, np.int64)
    prog.kernel("spellings2")(
        ai, au, af, al, flag, i_old, f_old, l_old, global_size=N, local_size=LOCAL
    )
    i = np.arange(N)
    io = i_old.reshape(12, N)
    np.testing.assert_array_equal(np.sort(io[0]), i)
    _chain(io[1], ai[1], -1, i)
    _chain(io[2], ai[2], -2, i)
    assert ai[3] == -(N - 1) and ai[4] == N - 1 and au[0] == 1 and au[1] == N - 1
    # fetch_min/max return the old value, which never passes the final extreme.
    assert io[3].max() == 0 and io[3].min() > -(N - 1) and io[4].min() == -5
    assert io[5].astype(np.uint32).max() == 0xFFFFFFFF and io[6].max() <= N - 1
    for g in range(GROUPS):
        np.testing.assert_array_equal(np.sort(io[7, g * LOCAL : (g + 1) * LOCAL]), np.arange(LOCAL))
    assert (io[8] == 0).sum() == 1 and (io[8] == 1).sum() == N - 1  # one test_and_set wins
    assert io[9].sum() == 1 and ai[5] == np.flatnonzero(io[9])[0] + 1  # one strong CAS wins
    assert (io[10] == -1).sum() == 1 and (io[10][io[10] != -1] == 7).all() and ai[6] == 7
    _chain(f_old, af[0], -3.0, i + 0.5)
    np.testing.assert_array_equal(np.sort(l_old[:N]), 7 + 3 * i)
    _chain(l_old[N:], al[1], -9, i)
    assert (io[11] == 11).all()
