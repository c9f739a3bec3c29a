"""Barriers and work-group local memory on the host CPU, for every shape a correct kernel
may take; each kernel runs from both SPIR-V producers and is checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from harness import build

import spirvjit

SOURCE = r"""
kernel void tree_reduce(global const float* in, global float* out, local float* s) {
    size_t lid = get_local_id(0);
    s[lid] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t k = get_local_size(0) / 2; k > 0; k >>= 1) {
        if (lid < k) s[lid] += s[lid + k];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) out[get_group_id(0)] = s[0];
}

kernel void uniform_branch(global int* a, int mode) {
    local int t[64];
    size_t l = get_local_id(0);
    t[l] = a[get_global_id(0)];
    if (mode > 0) {
        barrier(CLK_LOCAL_MEM_FENCE);
        a[get_global_id(0)] = t[63 - l];
    } else {
        barrier(CLK_LOCAL_MEM_FENCE);
        a[get_global_id(0)] = t[(l + 1) % 64];
    }
}

/* Bitonic sort of one 128-element group: barriers inside nested loops. */
kernel void bitonic(global int* data) {
    local int v[128];
    uint l = get_local_id(0);
    v[l] = data[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint size = 2; size <= 128; size <<= 1) {
        for (uint stride = size / 2; stride > 0; stride >>= 1) {
            uint partner = l ^ stride;
            if (partner > l) {
                bool up = (l & size) == 0;
                int a = v[l], b = v[partner];
                if ((a > b) == up) { v[l] = b; v[partner] = a; }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    data[get_global_id(0)] = v[l];
}

/* Values of every kind live across several barriers in a row. */
kernel void live_across(global float* out, global const float* in) {
    local float t[32];
    size_t l = get_local_id(0), g = get_global_id(0);
    float scalar = in[g] * 2.0f;
    float4 vec = (float4)(in[g], 1.0f, 2.0f, 3.0f);
    float priv[4];
    for (int i = 0; i < 4; ++i) priv[i] = in[g] + i;
    t[l] = scalar;
    barrier(CLK_LOCAL_MEM_FENCE);
    float left = t[(l + 31) % 32];
    barrier(CLK_LOCAL_MEM_FENCE);
    t[l] = vec.x + vec.w;
    barrier(CLK_LOCAL_MEM_FENCE);
    out[g] = left + t[(l + 1) % 32] + scalar + priv[3] + vec.y;
}

__attribute__((noinline)) void exchange(local int* t, int value, size_t l) {
    t[l] = value;
    barrier(CLK_LOCAL_MEM_FENCE);
}

kernel void helper_barrier(global int* a) {
    local int t[16];
    size_t l = get_local_id(0);
    exchange(t, a[get_global_id(0)] + 1, l);
    a[get_global_id(0)] = t[15 - l];
}

kernel void grid3d(global int* out) {
    local int t[4][4][4];
    size_t x = get_local_id(0), y = get_local_id(1), z = get_local_id(2);
    t[z][y][x] = (int)(get_global_id(0) + 10 * get_global_id(1) + 100 * get_global_id(2));
    barrier(CLK_LOCAL_MEM_FENCE);
    size_t gx = get_global_id(0), gy = get_global_id(1), gz = get_global_id(2);
    out[(gz * get_global_size(1) + gy) * get_global_size(0) + gx] = t[3 - z][3 - y][3 - x];
}

kernel void two_locals(global int* out) {
    local int first[8];
    local int second[8];
    size_t l = get_local_id(0);
    first[l] = (int)l;
    second[l] = 100 + (int)l;
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = first[7 - l] + second[l];
}
"""


@pytest.fixture
def prog(producer):
    return build(SOURCE, producer=producer)


def test_tree_reduction_with_barrier_in_loop(prog):
    x = np.random.default_rng(1).random(64 * 256, dtype=np.float32)
    out = np.zeros(64, np.float32)
    prog.kernel("tree_reduce")(
        x, out, spirvjit.LocalMemory(256 * 4), global_size=x.size, local_size=256
    )
    np.testing.assert_allclose(out, x.reshape(64, 256).sum(1, dtype=np.float64), rtol=1e-5)


@pytest.mark.parametrize("mode", [1, -1])
def test_barrier_in_uniform_if_else(prog, mode):
    a = np.arange(128, dtype=np.int32)
    groups = a.reshape(2, 64).copy()
    prog.kernel("uniform_branch")(a, mode, global_size=128, local_size=64)
    expected = groups[:, ::-1] if mode > 0 else np.roll(groups, -1, axis=1)
    assert (a.reshape(2, 64) == expected).all()


def test_bitonic_sort_barriers_in_nested_loops(prog):
    data = np.random.default_rng(2).integers(-1000, 1000, 4 * 128).astype(np.int32)
    expected = np.sort(data.reshape(4, 128), axis=1)
    prog.kernel("bitonic")(data, global_size=data.size, local_size=128)
    assert (data.reshape(4, 128) == expected).all()


def test_scalars_vectors_private_arrays_live_across_barriers(prog):
    x = np.random.default_rng(3).random(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    prog.kernel("live_across")(out, x, global_size=64, local_size=32)
    g = x.reshape(2, 32)
    left = np.roll(g * 2, 1, axis=1)
    right = np.roll(g + 3, -1, axis=1)
    expected = left + right + g * 2 + (g + 3) + 1
    np.testing.assert_array_equal(out, expected.ravel().astype(np.float32))


def test_barrier_inside_non_inlined_helper(prog):
    a = np.arange(32, dtype=np.int32)
    prog.kernel("helper_barrier")(a, global_size=32, local_size=16)
    assert (a.reshape(2, 16) == (np.arange(32).reshape(2, 16) + 1)[:, ::-1]).all()


def test_three_dimensional_groups(prog):
    out = np.zeros((8, 8, 8), np.int32)
    prog.kernel("grid3d")(out, global_size=(8, 8, 8), local_size=(4, 4, 4))
    z, y, x = np.indices((8, 8, 8))
    src_x = (x // 4) * 4 + 3 - x % 4
    src_y = (y // 4) * 4 + 3 - y % 4
    src_z = (z // 4) * 4 + 3 - z % 4
    assert (out == src_x + 10 * src_y + 100 * src_z).all()


def test_two_static_local_arrays_are_distinct(prog):
    out = np.zeros(16, np.int32)
    prog.kernel("two_locals")(out, global_size=16, local_size=8)
    lane = np.arange(16) % 8
    assert (out == (7 - lane) + 100 + lane).all()


def test_many_groups_on_all_threads(prog):
    # Enough groups for the thread pool: each thread reuses its arena across groups.
    x = np.random.default_rng(4).random(1024 * 64, dtype=np.float32)
    out = np.zeros(1024, np.float32)
    prog.kernel("tree_reduce")(
        x, out, spirvjit.LocalMemory(64 * 4), global_size=x.size, local_size=64
    )
    np.testing.assert_allclose(out, x.reshape(1024, 64).sum(1, dtype=np.float64), rtol=1e-5)


def test_printf_scalars_strings_and_vectors(producer, capfd):
    prog = build(
        r"""
        kernel void show(global const float* x) {
            int i = (int)get_global_id(0);
            float4 v = (float4)(1.5f, 2.0f, 3.0f, 4.0f);
            printf("i=%d x=%.1f c=%c s=%s v=%v4hlf\n", i, x[i], 'a', "str", v);
        }
        """,
        producer=producer,
    )
    prog.kernel("show")(np.array([0.5, 1.5], np.float32), global_size=2, local_size=1)
    lines = sorted(capfd.readouterr().out.splitlines())
    assert lines == [
        "i=0 x=0.5 c=a s=str v=1.500000,2.000000,3.000000,4.000000",
        "i=1 x=1.5 c=a s=str v=1.500000,2.000000,3.000000,4.000000",
    ]
