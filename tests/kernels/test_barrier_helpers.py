"""Barriers inside helper functions: a helper called from several call sites (every HIP
``__syncthreads()`` is such a call), helpers called inside loops, and nested helpers.

The barrier splitting used to key each barrier's resume point by the barrier's SPIR-V word
offset; the inlined copies of a helper share that offset, so every call site resumed at the
same place (wrong values, or a hang). Each kernel runs from both producers and is checked
against NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import build

SOURCE = r"""
__attribute__((noinline)) void sync(void) { barrier(CLK_LOCAL_MEM_FENCE); }

/* The issue's reduction: three call sites of one noinline barrier helper. */
kernel void reduce3(global const int* in, global int* out) {
    local int s[8];
    size_t l = get_local_id(0);
    s[l] = in[get_global_id(0)];
    sync();
    if (l < 4) s[l] += s[l + 4];
    sync();
    if (l < 2) s[l] += s[l + 2];
    sync();
    if (l == 0) out[get_group_id(0)] = s[0] + s[1];
}

/* A helper with a barrier called inside a loop, and from a second helper (nested). */
__attribute__((noinline)) int exchange(local int* t, int v, uint l, uint n, uint shift) {
    t[l] = v;
    sync();
    int got = t[(l + shift) % n];
    sync();
    return got;
}

__attribute__((noinline)) int twice(local int* t, int v, uint l, uint n) {
    int a = exchange(t, v, l, n, 1);
    return a + exchange(t, a, l, n, 2);
}

kernel void loop_and_nested(global int* data, int rounds) {
    local int t[32];
    uint l = get_local_id(0), n = get_local_size(0);
    int v = data[get_global_id(0)];
    for (int r = 0; r < rounds; ++r)
        v = exchange(t, v + r, l, n, 1);
    v = twice(t, v, l, n);
    data[get_global_id(0)] = v;
}
"""

# In the style of a HIP program: __syncthreads() is a call to one function, used at many
# points, in loops and in a device function; shared-memory scan + histogram + transpose.
HIP_STYLE = r"""
__attribute__((noinline)) void __syncthreads(void) { barrier(CLK_LOCAL_MEM_FENCE); }

__attribute__((noinline)) void block_scan(local int* s, uint l, uint n) {
    /* Hillis-Steele inclusive scan. */
    for (uint off = 1; off < n; off <<= 1) {
        int add = l >= off ? s[l - off] : 0;
        __syncthreads();
        s[l] += add;
        __syncthreads();
    }
}

kernel void hip_like(global const int* in, global int* scan, global int* hist,
                     global int* transposed) {
    local int s[64];
    local int h[8];
    local int tile[8][9];
    uint l = get_local_id(0), n = get_local_size(0), g = get_global_id(0);
    if (l < 8) h[l] = 0;
    s[l] = in[g];
    __syncthreads();
    block_scan(s, l, n);
    scan[g] = s[l];
    __syncthreads();
    atomic_add(&h[in[g] & 7], 1);
    __syncthreads();
    if (l < 8) hist[get_group_id(0) * 8 + l] = h[l];
    tile[l / 8][l % 8] = in[g];
    __syncthreads();
    transposed[g] = tile[l % 8][l / 8];
    __syncthreads();
    block_scan(s, l, n);
    __syncthreads();
    scan[get_global_size(0) + g] = s[l];
}
"""


@pytest.fixture
def prog(producer):
    return build(SOURCE, producer=producer)


def test_barrier_helper_called_three_times(prog):
    x = np.arange(64, dtype=np.int32)[::-1].copy()
    out = np.zeros(8, np.int32)
    prog.kernel("reduce3")(x, out, global_size=64, local_size=8)
    np.testing.assert_array_equal(out, x.reshape(8, 8).sum(1))


def _exchange(v: np.ndarray, shift: int) -> np.ndarray:
    return np.roll(v, -shift, axis=1)


@pytest.mark.parametrize("rounds", [0, 1, 3])
def test_barrier_helper_in_loop_and_nested(prog, rounds):
    rng = np.random.default_rng(rounds)
    data = rng.integers(-1000, 1000, 4 * 32).astype(np.int32)
    v = data.reshape(4, 32).astype(np.int64)
    for r in range(rounds):
        v = _exchange(v + r, 1)
    a = _exchange(v, 1)
    v = a + _exchange(a, 2)
    prog.kernel("loop_and_nested")(data, np.int32(rounds), global_size=128, local_size=32)
    np.testing.assert_array_equal(data, v.astype(np.int32).ravel())


def test_hip_style_syncthreads_program(producer):
    prog = build(HIP_STYLE, producer=producer)
    groups, n = 3, 64
    x = np.random.default_rng(7).integers(0, 100, groups * n).astype(np.int32)
    scan = np.zeros(2 * groups * n, np.int32)
    hist = np.zeros(groups * 8, np.int32)
    transposed = np.zeros(groups * n, np.int32)
    prog.kernel("hip_like")(x, scan, hist, transposed, global_size=groups * n, local_size=n)
    g = x.reshape(groups, n)
    once = np.cumsum(g, axis=1)
    np.testing.assert_array_equal(scan[: groups * n].reshape(groups, n), once)
    np.testing.assert_array_equal(scan[groups * n :].reshape(groups, n), np.cumsum(once, axis=1))
    expected_hist = np.stack([np.bincount(row & 7, minlength=8) for row in g])
    np.testing.assert_array_equal(hist.reshape(groups, 8), expected_hist)
    tiles = g.reshape(groups, 8, 8)
    np.testing.assert_array_equal(transposed.reshape(groups, 8, 8), tiles.transpose(0, 2, 1))


HIP_SYNCTHREADS = r"""
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __device__ __attribute__((device))
__device__ __attribute__((noinline)) void __syncthreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
// Tree reduction of 64 values per block: __syncthreads() called at several sites.
extern "C" __global__ void block_sum(int* out, const int* in) {
  __shared__ int s[64];
  int l = __builtin_amdgcn_workitem_id_x();
  s[l] = in[__builtin_amdgcn_workgroup_id_x() * 64 + l];
  __syncthreads();
  for (int k = 32; k > 0; k >>= 1) {
    if (l < k) s[l] += s[l + k];
    __syncthreads();
  }
  int total = s[0];
  __syncthreads();
  s[l] = total - l;
  __syncthreads();
  out[__builtin_amdgcn_workgroup_id_x() * 64 + l] = s[63 - l];
}
"""


def test_hip_syncthreads_at_several_sites():
    """A real HIP program: its __syncthreads() is one function called at four sites."""
    from harness import _tool

    from spirvjit.frontend.hip import hip_to_spirv

    if _tool("clang-offload-bundler", "clang-offload-bundler-22") is None:
        pytest.skip("clang-offload-bundler-22 is not installed")
    import spirvjit.program as program

    prog = program.Program(hip_to_spirv(HIP_SYNCTHREADS, filename="sync.hip"))
    x = np.random.default_rng(9).integers(-50, 50, 4 * 64).astype(np.int32)
    out = np.zeros_like(x)
    prog.kernel("block_sum")(out, x, global_size=x.size, local_size=64)
    totals = x.reshape(4, 64).sum(axis=1)
    expected = totals[:, None] - (63 - np.arange(64))[None, :]
    np.testing.assert_array_equal(out.reshape(4, 64), expected)
