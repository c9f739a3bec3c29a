"""Whole-function vectorization of barrier kernels and __local memory
(backends/cpu/vectorize.py, ``_RegionVectorizer``): the regions of a step function run W
work-items per instruction. Every kernel runs with the vectorizer on (SPIRVJIT_WFV=all:
loop-free regions too) and off and must give the same bits, and matches a NumPy model.
The kernels are the shapes of the public OpenCL samples: tiled SGEMM, a work-group tree
reduction (a barrier in a loop), a local histogram (local atomics: that region stays
scalar), a barrier in a loop whose trip count the vectorizer cannot prove uniform, a
local-memory transpose, private arrays saved across barriers. Local sizes that are not
multiples of W (8 on AVX2) run the scalar remainder next to the vector chunks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from harness import program_with_vectorizer, vector_and_scalar_arrays

import spirvjit
from spirvjit.arguments import LocalMemory

ROOT = Path(__file__).resolve().parents[2]

SOURCE = r"""
kernel void sgemm16(global const float *a, global const float *b, global float *c, int n)
{
    local float ta[16][16];
    local float tb[16][16];
    int lx = get_local_id(0), ly = get_local_id(1);
    int col = get_global_id(0), row = get_global_id(1);
    float acc = 0.0f;
    for (int t = 0; t < n; t += 16) {
        ta[ly][lx] = a[row * n + t + lx];
        tb[ly][lx] = b[(t + ly) * n + col];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < 16; k++)
            acc += ta[ly][k] * tb[k][lx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    c[row * n + col] = acc;
}

/* The tile is the local size (12 x 12: one vector chunk and 4 scalar items per row),
   staged through __local pointer arguments. */
kernel void sgemm_any(global const float *a, global const float *b, global float *c, int n,
                      local float *ta, local float *tb)
{
    int tile = get_local_size(0);
    int lx = get_local_id(0), ly = get_local_id(1);
    int col = get_global_id(0), row = get_global_id(1);
    float acc = 0.0f;
    for (int t = 0; t < n; t += tile) {
        ta[ly * tile + lx] = a[row * n + t + lx];
        tb[ly * tile + lx] = b[(t + ly) * n + col];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < tile; k++)
            acc += ta[ly * tile + k] * tb[k * tile + lx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    c[row * n + col] = acc;
}

kernel void reduce_f(global const float *x, global float *partial, local float *scratch,
                     uint n)
{
    size_t lid = get_local_id(0);
    float sum = 0.0f;
    for (size_t i = get_global_id(0); i < n; i += get_global_size(0))
        sum += x[i];
    scratch[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t stride = get_local_size(0) / 2; stride > 0; stride /= 2) {
        if (lid < stride)
            scratch[lid] += scratch[lid + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = scratch[0];
}

kernel void reduce_i(global const int *x, global int *partial, uint n)
{
    local int scratch[64];
    int lid = get_local_id(0);
    int sum = 0;
    for (uint i = get_global_id(0); i < n; i += get_global_size(0))
        sum += x[i] * (int)(i & 7);
    scratch[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int stride = get_local_size(0) / 2; stride > 0; stride >>= 1) {
        if (lid < stride)
            scratch[lid] += scratch[lid + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = scratch[0];
}

kernel void histogram(global const uint *data, global uint *hist, uint n_words)
{
    local uint bins[256];
    uint lid = get_local_id(0);
    for (uint b = lid; b < 256; b += get_local_size(0))
        bins[b] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = get_global_id(0); i < n_words; i += get_global_size(0)) {
        uint w = data[i];
        atomic_inc(&bins[w & 0xff]);
        atomic_inc(&bins[(w >> 8) & 0xff]);
        atomic_inc(&bins[(w >> 16) & 0xff]);
        atomic_inc(&bins[w >> 24]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint b = lid; b < 256; b += get_local_size(0))
        if (bins[b])
            atomic_add(&hist[b], bins[b]);
}

/* The trip count is read from memory at an address the vectorizer sees as per-lane (the
   group's first element, gid - lid): equal in every work-item, as a barrier in a loop
   requires, but a divergent loop to the uniformity analysis. */
kernel void rounds(global const int *in, global const int *count, global int *out,
                   local int *lm)
{
    int lid = get_local_id(0), ls = get_local_size(0);
    int gid = get_global_id(0);
    int v = in[gid];
    int limit = count[gid - lid];
    for (int r = 0; r < limit; r++) {
        lm[lid] = v;
        barrier(CLK_LOCAL_MEM_FENCE);
        v = v * 3 + lm[(lid + r + 1) % ls] - (r & 1 ? lid : 0);
        if (v & 1)
            v ^= 0x5bd1e995;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    out[gid] = v;
}

#define T 8
kernel void transpose(global const float *in, global float *out, int w, int h)
{
    local float tile[T][T + 1];
    int lx = get_local_id(0), ly = get_local_id(1);
    int x = get_global_id(0), y = get_global_id(1);
    if (x < w && y < h)
        tile[ly][lx] = in[y * w + x];
    barrier(CLK_LOCAL_MEM_FENCE);
    int tx = get_group_id(1) * T + lx, ty = get_group_id(0) * T + ly;
    if (tx < h && ty < w)
        out[ty * h + tx] = tile[lx][ly];
}

/* A private array and values of each kind live across barriers (saved in the frames). */
kernel void privates(global const int *in, global long *out, local int *lm)
{
    int lid = get_local_id(0), ls = get_local_size(0);
    int p[4];
    for (int k = 0; k < 4; k++)
        p[k] = in[get_global_id(0)] * (k + 1) + lid;
    long wide = (long)p[lid & 3] << 20;
    double d = (double)p[1] * 0.5;
    lm[lid] = p[lid & 3];
    barrier(CLK_LOCAL_MEM_FENCE);
    int other = lm[ls - 1 - lid];
    p[(lid + 1) & 3] += other;
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = wide + p[0] + p[1] + p[2] + p[3] + (long)d;
}

/* Local memory without barriers: each work-item uses its own slots. */
kernel void scratchpad(global const int *in, global int *out, local int *tmp, int n)
{
    int lid = get_local_id(0);
    int acc = 0;
    for (int k = 0; k < n; k++) {
        tmp[lid] = in[get_global_id(0)] + k;
        acc += tmp[lid] * k;
    }
    out[get_global_id(0)] = acc;
}
"""

_PROGRAMS: dict[bool, spirvjit.Program] = {}


def _build(monkeypatch, enabled: bool) -> spirvjit.Program:
    return program_with_vectorizer(monkeypatch, _PROGRAMS, SOURCE, enabled, "all")


def _both(monkeypatch, name, make_args, **launch):
    """The kernel's arrays after a launch with the vectorizer on, checked against a launch
    with it off (harness.vector_and_scalar_arrays)."""
    return vector_and_scalar_arrays(
        lambda on: _build(monkeypatch, on), name, make_args, bitwise=True, **launch
    )


def _note(monkeypatch, name: str) -> str:
    return _build(monkeypatch, True).translation().kernel_functions[name].wfv_note


@pytest.mark.parametrize("name", ["sgemm16", "reduce_f", "rounds", "transpose", "privates"])
def test_every_region_is_vectorized(monkeypatch, name):
    note = _note(monkeypatch, name)
    assert note.startswith("vectorized across work-items"), note
    assert "(" not in note, note  # no region declined


def test_local_atomics_keep_their_region_scalar(monkeypatch):
    note = _note(monkeypatch, "histogram")
    assert note.startswith("vectorized across work-items"), note
    assert "region 1: atomic on local memory" in note, note


def test_local_memory_without_barriers(monkeypatch):
    assert _note(monkeypatch, "scratchpad").startswith("vectorized"), _note(
        monkeypatch, "scratchpad"
    )
    n, k = 45, 6
    a = np.arange(n, dtype=np.int32) * 7 - 100

    def args():
        return [a.copy(), np.zeros(n, np.int32), LocalMemory(4 * 15), np.int32(k)]

    (_, out) = _both(monkeypatch, "scratchpad", args, global_size=n, local_size=15)
    want = sum((a + j) * j for j in range(k))
    np.testing.assert_array_equal(out, want.astype(np.int32))


def _matrices(n: int):
    rng = np.random.default_rng(19)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    return a, b


def test_tiled_sgemm_16(monkeypatch):
    n = 48
    a, b = _matrices(n)

    def args():
        return [a.copy(), b.copy(), np.zeros((n, n), np.float32), np.int32(n)]

    (_, _, c) = _both(monkeypatch, "sgemm16", args, global_size=(n, n), local_size=(16, 16))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("tile", [12, 4])
def test_tiled_sgemm_remainder(monkeypatch, tile):
    """12 x 12 groups: a vector chunk and 4 scalar work-items per row; 4 x 4: all scalar."""
    n = 3 * tile
    a, b = _matrices(n)

    def args():
        c = np.zeros((n, n), np.float32)
        local = LocalMemory(4 * tile * tile)
        return [a.copy(), b.copy(), c, np.int32(n), local, LocalMemory(4 * tile * tile)]

    (_, _, c) = _both(monkeypatch, "sgemm_any", args, global_size=(n, n), local_size=(tile, tile))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("local", [64, 4])
def test_tree_reduction_float(monkeypatch, local):
    n, groups = 4096, 8
    x = np.random.default_rng(3).uniform(0, 1, n).astype(np.float32)

    def args():
        return [x.copy(), np.zeros(groups, np.float32), LocalMemory(4 * local), np.uint32(n)]

    (_, partial) = _both(
        monkeypatch, "reduce_f", args, global_size=groups * local, local_size=local
    )
    np.testing.assert_allclose(partial.sum(dtype=np.float64), x.sum(dtype=np.float64), rtol=1e-5)


def test_tree_reduction_int_exact(monkeypatch):
    n, groups, local = 5000, 6, 64
    x = np.random.default_rng(4).integers(-(2**20), 2**20, n).astype(np.int32)

    def args():
        return [x.copy(), np.zeros(groups, np.int32), np.uint32(n)]

    (_, partial) = _both(
        monkeypatch, "reduce_i", args, global_size=groups * local, local_size=local
    )
    i = np.arange(n)
    gid = i % (groups * local)
    weighted = x.astype(np.int64) * (i & 7)
    want = np.zeros(groups, np.int64)
    np.add.at(want, gid // local, weighted)
    np.testing.assert_array_equal(partial, want.astype(np.int32))


@pytest.mark.parametrize("local", [256, 40])
def test_local_histogram(monkeypatch, local):
    n_bytes = 1 << 14
    data = np.minimum(np.random.default_rng(5).exponential(48.0, n_bytes), 255).astype(np.uint8)

    def args():
        return [data.view(np.uint32).copy(), np.zeros(256, np.uint32), np.uint32(n_bytes // 4)]

    (_, hist) = _both(monkeypatch, "histogram", args, global_size=4 * local, local_size=local)
    np.testing.assert_array_equal(hist, np.bincount(data, minlength=256))


def _rounds_model(values: np.ndarray, limit: int, local: int) -> np.ndarray:
    v = values.astype(np.int64).reshape(-1, local)
    lid = np.arange(local)
    for r in range(limit):
        lm = v.copy()
        v = v * 3 + lm[:, (lid + r + 1) % local] - (lid if r & 1 else 0)
        v = (v + 2**31) % 2**32 - 2**31  # int wraps
        v = np.where(v & 1, v ^ 0x5BD1E995, v)
        v = (v + 2**31) % 2**32 - 2**31
    return v.ravel().astype(np.int32)


@pytest.mark.parametrize("local", [16, 12])
def test_barrier_in_a_loop_with_a_per_lane_trip_count(monkeypatch, local):
    groups = 3
    n = groups * local
    values = (np.arange(n, dtype=np.int32) * 2654435) ^ 0x1234
    limits = [3, 0, 5]
    count = np.repeat(np.array(limits, np.int32), local)

    def args():
        return [values.copy(), count.copy(), np.zeros(n, np.int32), LocalMemory(4 * local)]

    (_, _, out, *_) = _both(monkeypatch, "rounds", args, global_size=n, local_size=local)
    for g, limit in enumerate(limits):
        part = slice(g * local, (g + 1) * local)
        np.testing.assert_array_equal(out[part], _rounds_model(values[part], limit, local))


def test_local_memory_transpose(monkeypatch):
    w, h = 21, 13  # partial tiles on both edges
    x = np.random.default_rng(6).standard_normal((h, w)).astype(np.float32)

    def args():
        return [x.copy(), np.zeros((w, h), np.float32), np.int32(w), np.int32(h)]

    (_, out) = _both(monkeypatch, "transpose", args, global_size=(24, 16), local_size=(8, 8))
    np.testing.assert_array_equal(out, x.T)


def test_private_arrays_across_barriers(monkeypatch):
    local, groups = 20, 2
    n = local * groups
    a = np.arange(n, dtype=np.int32) * 11 - 50

    def args():
        return [a.copy(), np.zeros(n, np.int64), LocalMemory(4 * local)]

    (_, out) = _both(monkeypatch, "privates", args, global_size=n, local_size=local)
    lid = np.arange(n) % local
    p = np.stack([a * (k + 1) + lid for k in range(4)], axis=1).astype(np.int64)
    mine = p[np.arange(n), lid & 3]
    wide = mine << 20
    d = np.trunc(p[:, 1] * 0.5).astype(np.int64)
    base = np.arange(n) - lid
    other = mine[base + local - 1 - lid]
    p[np.arange(n), (lid + 1) & 3] += other
    np.testing.assert_array_equal(out, wide + p.sum(axis=1) + d)


BITONIC = r"""
kernel void bitonic(global int *data)
{
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
"""


@pytest.mark.parametrize("producer", ["clang", "translator"])
def test_bool_saved_across_barriers(monkeypatch, producer):
    """clang-15 + llvm-spirv keeps bitonic sort's ``up`` live across a barrier as an i1 in
    the frames: a byte per work-item, but a bit per lane in <8 x i1>, so a chunk saves and
    reloads it as bytes (was: one packed byte stored for 8 work-items, unsorted output)."""
    from harness import translator_missing

    if producer == "translator" and translator_missing():
        pytest.skip(translator_missing())
    data = np.random.default_rng(2).integers(-1000, 1000, 4 * 128).astype(np.int32)
    results = []
    for enabled in (True, False):
        monkeypatch.setenv("SPIRVJIT_WFV", "all" if enabled else "0")
        monkeypatch.setenv("SPIRVJIT_CACHE", "0")
        program = spirvjit.compile_opencl(BITONIC, producer=producer)
        out = data.copy()
        program.kernel("bitonic")(out, global_size=out.size, local_size=128)
        results.append(out)
        note = program.translation().kernel_functions["bitonic"].wfv_note
        assert note.startswith("vectorized" if enabled else "not vectorized"), note
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0].reshape(4, 128), np.sort(data.reshape(4, 128), 1))


NBODY = (ROOT / "benchmarks" / "kernels" / "nbody.cl").read_text()


@pytest.mark.parametrize("producer", ["clang", "translator"])
def test_float4_values_saved_across_barriers(monkeypatch, producer):
    """The benchmark's tiled n-body keeps float4 and float3 values live across its
    barriers: the regions' frame accesses are consecutive by construction, so their
    vector loads and stores take no run-time check (was: a branch on a missing check,
    and the kernel did not compile at all once vector values were vectorized)."""
    from harness import translator_missing

    if producer == "translator" and translator_missing():
        pytest.skip(translator_missing())
    rng = np.random.default_rng(4)
    n, local = 96, 32
    pos = rng.uniform(-1, 1, (n, 4)).astype(np.float32)
    pos[:, 3] = rng.uniform(0.5, 1.5, n)
    vel = rng.uniform(-0.1, 0.1, (n, 4)).astype(np.float32)
    dt, eps2 = np.float32(0.01), np.float32(0.01)
    results = []
    for enabled in (True, False):
        monkeypatch.setenv("SPIRVJIT_WFV", "all" if enabled else "0")
        monkeypatch.setenv("SPIRVJIT_CACHE", "0")
        program = spirvjit.compile_opencl(NBODY, producer=producer)
        new_pos, new_vel = np.zeros_like(pos), np.zeros_like(vel)
        program.kernel("nbody")(
            pos,
            vel,
            new_pos,
            new_vel,
            LocalMemory(16 * local),
            np.int32(n),
            dt,
            eps2,
            global_size=n,
            local_size=local,
        )
        results.append((new_pos, new_vel))
        note = program.translation().kernel_functions["nbody"].wfv_note
        assert note.startswith("vectorized" if enabled else "not vectorized"), note
    for on, off in zip(*results, strict=True):
        np.testing.assert_array_equal(on.view(np.uint8), off.view(np.uint8))
    d = pos[None, :, :3].astype(np.float64) - pos[:, None, :3]
    inv = 1 / np.sqrt((d * d).sum(axis=2) + eps2)
    acc = (d * (pos[None, :, 3] * inv**3)[:, :, None]).sum(axis=1)
    v = vel[:, :3] + acc * dt
    np.testing.assert_allclose(results[0][1][:, :3], v, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(results[0][0][:, :3], pos[:, :3] + v * dt, rtol=1e-4, atol=1e-5)


CONSTANT_SWITCH = r"""
kernel void constant_switch(global uint *gat)
{
    uint gid = get_global_id(0), lid = get_local_id(0);
    local uint lm[16];
    switch (2147483648U ^ convert_uint_rtn(7U)) {  /* no case matches, no default */
    case 0U:
    case 7U:
        atomic_add(&gat[0], 1U);
        break;
    case 30U:
        atomic_add(&gat[1], 1U);
        break;
    case 4294967294U:
        atomic_add(&gat[2], 1U);
    }
    lm[lid] = gid;
    barrier(CLK_LOCAL_MEM_FENCE);
    gat[4 + gid] = lm[15 - lid];
}
"""


@pytest.mark.parametrize("producer", ["clang", "translator"])
def test_switch_on_a_constant_runs_no_case(monkeypatch, producer):
    """Differential-tester finding (seed 23405, kernel 4): clang-15 + llvm-spirv leave
    ``switch (C ^ convert_uint_rtn(7))`` with a condition the vectorizer folds to a
    constant. Every edge of a constant switch had the block's own (full) kind, so each
    case ran for every lane; now only the edge the constant takes is kept."""
    from harness import translator_missing

    if producer == "translator" and translator_missing():
        pytest.skip(translator_missing())
    monkeypatch.setenv("SPIRVJIT_WFV", "all")
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    program = spirvjit.compile_opencl(CONSTANT_SWITCH, producer=producer)
    gat = np.zeros(4 + 32, np.uint32)
    program.kernel("constant_switch")(gat, global_size=32, local_size=16)
    note = program.translation().kernel_functions["constant_switch"].wfv_note
    assert note.startswith("vectorized"), note
    np.testing.assert_array_equal(gat[:4], 0)
    np.testing.assert_array_equal(gat[4:], np.arange(32) // 16 * 16 + 15 - np.arange(32) % 16)
