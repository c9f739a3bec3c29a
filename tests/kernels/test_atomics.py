"""Atomics on global and local memory, 32 and 64 bit, OpenCL 1.x and 2.0 spellings.

Every work-item updates the same few locations, from all threads of the CPU
device: a lost update shows up as a wrong count.
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import build

N = 1 << 16

SOURCE = r"""
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable

kernel void legacy32(global int* c, global uint* u) {
    int i = (int)get_global_id(0);
    atomic_add(&c[0], 2);
    atomic_sub(&c[1], 1);
    atomic_inc(&c[2]);
    atomic_dec(&c[3]);
    atomic_min(&c[4], i - 5);
    atomic_max(&c[5], i);
    atomic_and(&u[0], ~(1u << (i % 32)));
    atomic_or(&u[1], 1u << (i % 32));
    atomic_xor(&u[2], 1u << (i % 3));
    atomic_min(&u[3], (uint)i + 7u);
    atomic_max(&u[4], (uint)i);
    atomic_xchg(&c[6], 7);
    atomic_cmpxchg(&c[7], 0, i + 1);  /* only the first wins */
}

kernel void legacy64(global long* c, global ulong* u) {
    long i = (long)get_global_id(0);
    atom_add(&c[0], 1L << 33);
    atom_sub(&c[1], 3L);
    atom_inc(&c[2]);
    atom_min(&c[3], -i);
    atom_max(&c[4], i);
    atom_or(&u[0], 1UL << (i % 64));
    atom_xchg(&c[5], 9L);
    atom_cmpxchg(&c[6], 0L, i + 1);
}

kernel void explicit20(global atomic_int* c, global atomic_long* l, global int* out) {
    int i = (int)get_global_id(0);
    atomic_fetch_add_explicit(&c[0], 1, memory_order_relaxed, memory_scope_device);
    atomic_fetch_sub_explicit(&c[1], 1, memory_order_acq_rel, memory_scope_device);
    atomic_fetch_or_explicit(&c[2], 1 << (i % 8), memory_order_seq_cst, memory_scope_device);
    atomic_fetch_max_explicit(&c[3], i, memory_order_release, memory_scope_device);
    atomic_fetch_add_explicit(&l[0], 5L, memory_order_relaxed, memory_scope_device);
    int expected = 0;
    atomic_compare_exchange_strong_explicit(&c[4], &expected, 1, memory_order_acq_rel,
                                            memory_order_acquire, memory_scope_device);
    out[i] = atomic_load_explicit(&c[5], memory_order_acquire, memory_scope_device);
    if (i == 0) atomic_store_explicit(&c[6], 42, memory_order_release, memory_scope_device);
}

kernel void local_histogram(global const uchar* data, global uint* hist) {
    local uint bins[256];
    size_t l = get_local_id(0);
    for (size_t b = l; b < 256; b += get_local_size(0)) bins[b] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    atomic_inc(&bins[data[get_global_id(0)]]);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t b = l; b < 256; b += get_local_size(0)) atomic_add(&hist[b], bins[b]);
}

kernel void flag(global atomic_flag* f, global int* wins) {
    if (!atomic_flag_test_and_set_explicit(&f[0], memory_order_acq_rel, memory_scope_device))
        atomic_inc(&wins[0]);
}
"""


@pytest.fixture
def prog(producer):
    return build(SOURCE, producer=producer)


def test_opencl1_atomics_32bit(prog):
    c = np.array([0, 0, 0, 0, 1 << 30, -1, 0, 0], np.int32)
    u = np.array([0xFFFFFFFF, 0, 0, 0xFFFFFFFF, 0], np.uint32)
    prog.kernel("legacy32")(c, u, global_size=N)
    assert list(c[:6]) == [2 * N, -N, N, -N, -5, N - 1]
    assert c[6] == 7 and 1 <= c[7] <= N
    # xor: residue 0 flips bit 0 an even number of times (21846), residues 1 and 2 odd.
    assert list(u) == [0, 0xFFFFFFFF, 0b110, 7, N - 1]


def test_opencl1_atomics_64bit(prog):
    c = np.zeros(7, np.int64)
    u = np.zeros(1, np.uint64)
    prog.kernel("legacy64")(c, u, global_size=N)
    assert list(c[:5]) == [N << 33, -3 * N, N, -(N - 1), N - 1]
    assert u[0] == np.uint64(0xFFFFFFFFFFFFFFFF)
    assert c[5] == 9 and 1 <= c[6] <= N


def test_opencl2_explicit_atomics(prog):
    c = np.array([0, 0, 0, -1, 0, 17, 0], np.int32)
    long_counter = np.zeros(1, np.int64)
    out = np.zeros(N, np.int32)
    prog.kernel("explicit20")(c, long_counter, out, global_size=N)
    assert list(c) == [N, -N, 0xFF, N - 1, 1, 17, 42]
    assert long_counter[0] == 5 * N
    assert (out == 17).all()


def test_local_atomics_histogram(prog):
    data = np.random.default_rng(5).integers(0, 256, 1 << 18).astype(np.uint8)
    hist = np.zeros(256, np.uint32)
    prog.kernel("local_histogram")(data, hist, global_size=data.size, local_size=128)
    assert (hist == np.bincount(data, minlength=256)).all()


def test_atomic_flag_has_one_winner(prog):
    f = np.zeros(1, np.int32)
    wins = np.zeros(1, np.int32)
    prog.kernel("flag")(f, wins, global_size=N)
    assert wins[0] == 1


def test_float_atomic_add_min_max(producer):
    if producer == "translator":
        pytest.skip("clang-15 has no cl_ext_float_atomics built-ins")
    prog = build(
        r"""
        kernel void f(global atomic_float* acc) {
            float x = (float)get_global_id(0);
            atomic_fetch_add_explicit(&acc[0], 0.5f, memory_order_relaxed, memory_scope_device);
            atomic_fetch_max_explicit(&acc[1], x, memory_order_relaxed, memory_scope_device);
            atomic_fetch_min_explicit(&acc[2], -x, memory_order_relaxed, memory_scope_device);
        }
        """,
        producer=producer,
    )
    acc = np.zeros(3, np.float32)
    prog.kernel("f")(acc, global_size=N)
    assert list(acc) == [0.5 * N, N - 1, -(N - 1)]
