"""Whole-function vectorization of values that are not one scalar per work-item
(backends/cpu/wfv_values.py): float4/int4 values, vload/vstore and float4 pointers,
private arrays, compare-exchange and atomic loads/stores, calls that were not inlined.
Each kernel runs with the vectorizer on (SPIRVJIT_WFV=all) and off and must give the
same bits, and is checked against NumPy. These kernels all declined before."""

from __future__ import annotations

import numpy as np
import pytest
from harness import program_with_vectorizer, vector_and_scalar_arrays

import spirvjit

SOURCE = r"""
#pragma OPENCL FP_CONTRACT OFF

/* n-body step in the style of the public samples: float4 positions (w = mass). */
kernel void nbody_step(global const float4 *pos, global const float4 *vel,
                       global float4 *pos_out, global float4 *vel_out,
                       int n, float dt, float eps2)
{
    int i = get_global_id(0);
    float4 p = pos[i];
    float4 a = (float4)(0.0f);
    for (int j = 0; j < n; j++) {
        float4 q = pos[j];
        float4 d = q - p;
        d.w = 0.0f;
        float r2 = dot(d, d) + eps2;
        float inv = 1.0f / sqrt(r2);
        float s = q.w * inv * inv * inv;
        a += s * d;
    }
    float4 v = vel[i] + dt * a;
    float4 np = p + dt * v;
    np.w = p.w;
    pos_out[i] = np;
    vel_out[i] = v;
}

/* vload4/vstore4: consecutive, gathered (index table) and unaligned (offset by one). */
kernel void vloads(global const float *x, global const int *idx, global float *out,
                   global float *shifted, float s)
{
    int i = get_global_id(0);
    float4 a = vload4(i, x);
    float4 b = vload4(idx[i], x);
    float4 r = a * s + b.wzyx;
    if (a.x > 0.0f)                      /* under a divergent mask */
        r.yz = b.xy - a.zw;
    vstore4(r, i, out);
    vstore4(vload4(0, x + i) + 1.0f, 0, shifted + 5 * i);  /* 4-byte stride: a gather */
}

/* int4: shifts, compares as masks, select, any/all, a component picked at run time. */
kernel void int4_ops(global const int4 *a, global const int4 *b, global int4 *out,
                     global int *flags)
{
    int i = get_global_id(0);
    int4 x = a[i], y = b[i];
    int4 lt = x < y;
    int4 r = select(x ^ (y << 3), (x >> 2) + y, lt);
    r += (int4)(x.w, y.z, i, r.x) * (int4)(3, -1, 2, 1);
    r.s1 = r[i & 3];
    out[i] = r;
    flags[i] = any(lt) + 2 * all(lt) + 4 * (convert_int4(abs(x) > 7).z != 0);
}

/* float4 with loops (the default mode vectorizes kernels with loops): a polynomial per
   component, a run-time component index and a loop-carried float4. */
kernel void float4_loop(global const float4 *in, global float4 *out, int steps)
{
    int i = get_global_id(0);
    float4 v = in[i], acc = (float4)(0.0f, 1.0f, 2.0f, 3.0f);
    for (int k = 0; k < steps + (i & 3); k++) {    /* divergent trip count */
        acc = acc * 0.5f + v;
        v.yzwx = v * 0.25f - acc.x;
        if (acc[k & 3] > 10.0f) break;
    }
    out[i] = fabs(acc) + (float4)(v.x, v.y, 0.0f, 1.0f);
}

/* A sorting network on a private array (uniform indices) and a small histogram per
   work-item (indices that differ per lane). */
kernel void sort8(global const int *in, global int *out)
{
    int i = get_global_id(0);
    int v[8];
    for (int k = 0; k < 8; k++) v[k] = in[8 * i + k];
    for (int p = 1; p < 8; p <<= 1)
        for (int q = p; q > 0; q >>= 1)
            for (int k = 0; k < 8; k++) {
                int l = k ^ q;
                if (l > k) {
                    bool up = ((k & (p << 1)) == 0);
                    int a = v[k], b = v[l];
                    if ((a > b) == up) { v[k] = b; v[l] = a; }
                }
            }
    for (int k = 0; k < 8; k++) out[8 * i + k] = v[k];
}

kernel void histogram_private(global const uchar *data, global int *out, int per_item)
{
    int i = get_global_id(0);
    int h[8];
    for (int k = 0; k < 8; k++) h[k] = 0;
    for (int k = 0; k < per_item; k++) h[data[i * per_item + k] & 7]++;
    int best = 0;
    for (int k = 1; k < 8; k++) if (h[k] > h[best]) best = k;
    out[i] = best * 1000 + h[best];
}

/* Whole-array copies (clang makes memset/memmove of them): zeroed, filled from a row
   under a divergent mask, one element at a per-lane index, copied out to a row of a
   permuted place (not side by side) and to its own row. */
kernel void private_copies(global const float *in, global float *out,
                           global float *out2, global const int *perm)
{
    int i = get_global_id(0);
    float v[8] = {0};
    if (i % 3 != 0)
        for (int k = 0; k < 8; k++) v[k] = in[8 * i + k];
    v[i & 7] += 1.0f;
    for (int k = 0; k < 8; k++) out[8 * perm[i] + k] = v[k];
    for (int k = 0; k < 8; k++) out2[8 * i + k] = v[k] * 2.0f;
}

/* A private array of float4 (each lane's own copy: vector loads and stores gather and
   scatter) and of a struct, passed to nothing, indexed per lane. */
typedef struct { int key; float weight; } Pair;
kernel void private_vectors(global const float4 *in, global float4 *out, global float *w)
{
    int i = get_global_id(0);
    float4 pts[4];
    Pair pairs[3];
    for (int k = 0; k < 4; k++) pts[k] = in[(i + k) % 64] * (float)(k + 1);
    for (int k = 0; k < 3; k++) { pairs[k].key = (i * 7 + k) % 3; pairs[k].weight = k + 0.5f; }
    if (i & 1) pts[i & 3].yz = (float2)(-1.0f, (float)i);
    out[i] = pts[(i >> 1) & 3] + pts[3 - (i & 3)].wzyx;
    w[i] = pairs[pairs[i % 3].key].weight;
}

/* compare-exchange without spinning on other work-items: claim the first free slot of a
   small table (one work-group: its work-items run in order on one thread), an atomic
   float add by a compare-exchange loop, atomic loads and stores. */
kernel void claim(global int *slots, global int *where, volatile global float *sum,
                  global const float *x, global int *seen)
{
    int i = get_global_id(0);
    int got = -1;
    for (int s = 0; s < 8 && got < 0; s++)
        if (atomic_cmpxchg(&slots[(i + s) & 7], -1, i) == -1) got = (i + s) & 7;
    where[i] = got;
    if (x[i] > 0.0f) {
        float old = *sum, prev;
        do {
            prev = old;
            old = as_float(atomic_cmpxchg((volatile global int *)sum, as_int(prev),
                                          as_int(prev + x[i])));
        } while (as_int(old) != as_int(prev));
    }
}

kernel void atomic_ls(global atomic_int *c, global int *out, int n)
{
    /* Each work-item's own slot (no races: the result does not depend on the order the
       work-items run in) and one slot nobody writes. */
    int i = get_global_id(0);
    if (i & 1)
        atomic_store_explicit(&c[i], 3 * i, memory_order_release, memory_scope_device);
    int mine = atomic_load_explicit(&c[i], memory_order_acquire, memory_scope_device);
    int fixed = atomic_load_explicit(&c[n], memory_order_relaxed, memory_scope_device);
    int expected = 3 * i;
    bool won = atomic_compare_exchange_strong(&c[i], &expected, -i);
    out[i] = mine + fixed + 1000 * expected + (won ? 7 : 0);
}

/* Helpers that were not inlined: one reads the work-item id, one takes a private array,
   one takes and returns float4; one is called under a divergent condition. */
__attribute__((noinline)) int item_hash(int salt)
{
    return (int)get_global_id(0) * 2654435761u ^ salt;
}
__attribute__((noinline)) void fill(int *p, int n, int seed)
{
    for (int k = 0; k < n; k++) p[k] = seed * (k + 1);
}
__attribute__((noinline)) float4 scale4(float4 v, float s) { return v * s + (float4)(s); }

kernel void helpers(global int *out, global float4 *f, int salt)
{
    int i = get_global_id(0);
    int tmp[4];
    fill(tmp, 4, i);
    int h = 0;
    if (i % 3 == 1)
        h = item_hash(salt);
    f[i] = scale4(f[i], (float)i);
    out[i] = h + tmp[0] + tmp[3];
}
"""

_PROGRAMS: dict[bool, spirvjit.Program] = {}


def _build(monkeypatch, enabled: bool) -> spirvjit.Program:
    return program_with_vectorizer(
        monkeypatch, _PROGRAMS, SOURCE, enabled, "all", ["-cl-std=CL2.0"]
    )


def _both(monkeypatch, name, make_args, **launch):
    """The kernel's arrays after a launch with the vectorizer on, checked against a launch
    with it off (harness.vector_and_scalar_arrays)."""
    return vector_and_scalar_arrays(
        lambda on: _build(monkeypatch, on), name, make_args, bitwise=True, **launch
    )


NAMES = (
    "nbody_step", "vloads", "int4_ops", "float4_loop", "sort8", "histogram_private",
    "private_copies", "private_vectors",
    "claim", "atomic_ls", "helpers",
)  # fmt: skip


def test_all_vectorized(monkeypatch):
    notes = {
        name: fn.wfv_note
        for name, fn in _build(monkeypatch, True).translation().kernel_functions.items()
    }
    for name in NAMES:
        assert notes[name].startswith("vectorized"), (name, notes[name])


@pytest.mark.parametrize("local", [None, (20,)])
def test_nbody_float4(monkeypatch, local):
    n = 100
    rng = np.random.default_rng(3)
    pos = rng.standard_normal((n, 4)).astype(np.float32)
    pos[:, 3] = rng.uniform(0.5, 2, n)
    vel = rng.standard_normal((n, 4)).astype(np.float32) * 0.1

    def args():
        return [pos.copy(), vel.copy(), np.zeros_like(pos), np.zeros_like(vel), np.int32(n),
                np.float32(0.01), np.float32(0.05)]  # fmt: skip

    (_, _, p_out, v_out) = _both(monkeypatch, "nbody_step", args, global_size=n, local_size=local)
    p64 = pos.astype(np.float64)
    d = p64[None, :, :3] - p64[:, None, :3]
    r2 = (d**2).sum(-1) + 0.05
    acc = (p64[None, :, 3, None] * d / r2[..., None] ** 1.5).sum(1)
    v = vel[:, :3] + 0.01 * acc
    np.testing.assert_allclose(v_out[:, :3], v, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(p_out[:, :3], pos[:, :3] + 0.01 * v, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(p_out[:, 3], pos[:, 3])


def test_vload_vstore(monkeypatch):
    n = 61
    rng = np.random.default_rng(4)
    x = rng.standard_normal(4 * n + 8).astype(np.float32)
    idx = rng.integers(0, n, n).astype(np.int32)

    def args():
        return [x.copy(), idx.copy(), np.zeros(4 * n, np.float32),
                np.zeros(5 * n, np.float32), np.float32(1.5)]  # fmt: skip

    (_, _, out, shifted) = _both(monkeypatch, "vloads", args, global_size=n)
    a = x[: 4 * n].reshape(n, 4)
    b = x[(idx[:, None] * 4 + np.arange(4))]
    r = a * np.float32(1.5) + b[:, ::-1]
    pos = a[:, 0] > 0
    r[pos, 1:3] = b[pos, 0:2] - a[pos, 2:4]
    np.testing.assert_array_equal(out.reshape(n, 4), r)
    windows = x[np.arange(n)[:, None] + np.arange(4)] + np.float32(1)
    np.testing.assert_array_equal(shifted.reshape(n, 5)[:, :4], windows)
    assert (shifted.reshape(n, 5)[:, 4] == 0).all()


def test_int4_ops(monkeypatch):
    n = 75
    rng = np.random.default_rng(5)
    a = rng.integers(-100, 100, (n, 4)).astype(np.int32)
    b = rng.integers(-100, 100, (n, 4)).astype(np.int32)

    def args():
        return [a.copy(), b.copy(), np.zeros((n, 4), np.int32), np.zeros(n, np.int32)]

    (_, _, out, flags) = _both(monkeypatch, "int4_ops", args, global_size=n)
    lt = a < b
    r = np.where(lt, (a >> 2) + b, a ^ (b << 3))
    i = np.arange(n, dtype=np.int32)
    r = r + np.stack([a[:, 3], b[:, 2], i, r[:, 0]], 1) * np.array([3, -1, 2, 1], np.int32)
    r[:, 1] = r[i, i & 3]
    np.testing.assert_array_equal(out, r)
    expected = lt.any(1) + 2 * lt.all(1) + 4 * (np.abs(a[:, 2]) > 7)
    np.testing.assert_array_equal(flags, expected)


def test_float4_divergent_loop(monkeypatch):
    n = 90
    x = np.random.default_rng(6).uniform(-2, 3, (n, 4)).astype(np.float32)

    def args():
        return [x.copy(), np.zeros_like(x), np.int32(9)]

    (_, out) = _both(monkeypatch, "float4_loop", args, global_size=n, local_size=(30,))
    f = np.float32
    for i in range(n):
        v, acc = x[i].copy(), np.array([0, 1, 2, 3], f)
        for k in range(9 + (i & 3)):
            acc = acc * f(0.5) + v
            v = np.roll(v * f(0.25) - acc[0], 1)  # v.yzwx = ...: component c+1 gets c
            if acc[k & 3] > 10:
                break
        np.testing.assert_array_equal(out[i], np.abs(acc) + np.array([v[0], v[1], 0, 1], f))


def test_private_sorting_network(monkeypatch):
    n = 53
    data = np.random.default_rng(7).integers(-1000, 1000, 8 * n).astype(np.int32)

    def args():
        return [data.copy(), np.zeros_like(data)]

    (_, out) = _both(monkeypatch, "sort8", args, global_size=n)
    np.testing.assert_array_equal(out.reshape(n, 8), np.sort(data.reshape(n, 8), axis=1))


def test_private_histogram(monkeypatch):
    n, per = 70, 23
    data = np.random.default_rng(8).integers(0, 256, n * per).astype(np.uint8)

    def args():
        return [data.copy(), np.zeros(n, np.int32), np.int32(per)]

    (_, out) = _both(monkeypatch, "histogram_private", args, global_size=n)
    counts = np.stack([np.bincount(row & 7, minlength=8) for row in data.reshape(n, per)])
    best = counts.argmax(1)  # the first of equal counts, as the kernel's strict >
    np.testing.assert_array_equal(out, best * 1000 + counts.max(1))


def test_private_array_copies(monkeypatch):
    n = 45
    rng = np.random.default_rng(10)
    x = rng.standard_normal(8 * n).astype(np.float32)
    perm = rng.permutation(n).astype(np.int32)

    def args():
        return [x.copy(), np.zeros(8 * n, np.float32), np.zeros(8 * n, np.float32), perm.copy()]

    (_, out, out2, _) = _both(monkeypatch, "private_copies", args, global_size=n)
    i = np.arange(n)
    v = np.where((i % 3 != 0)[:, None], x.reshape(n, 8), np.float32(0))
    v[i, i & 7] += np.float32(1)
    expected = np.zeros((n, 8), np.float32)
    expected[perm] = v
    np.testing.assert_array_equal(out.reshape(n, 8), expected)
    np.testing.assert_array_equal(out2.reshape(n, 8), v * np.float32(2))


def test_private_vectors_and_structs(monkeypatch):
    n = 64
    x = np.random.default_rng(11).standard_normal((n, 4)).astype(np.float32)

    def args():
        return [x.copy(), np.zeros((n, 4), np.float32), np.zeros(n, np.float32)]

    (_, out, w) = _both(monkeypatch, "private_vectors", args, global_size=n, local_size=(16,))
    for i in range(n):
        pts = [x[(i + k) % 64] * np.float32(k + 1) for k in range(4)]
        if i & 1:
            pts[i & 3] = pts[i & 3].copy()
            pts[i & 3][1:3] = [-1, i]
        np.testing.assert_array_equal(out[i], pts[(i >> 1) & 3] + pts[3 - (i & 3)][::-1])
        keys = [(i * 7 + k) % 3 for k in range(3)]
        assert w[i] == keys[i % 3] + 0.5


def test_cmpxchg_lane_by_lane(monkeypatch):
    n = 6
    x = np.array([0.5, -1, 0.25, 2, -3, 0.125], np.float32)

    def args():
        return [np.full(8, -1, np.int32), np.zeros(n, np.int32), np.zeros(1, np.float32),
                x.copy(), np.zeros(1, np.int32)]  # fmt: skip

    # One work-group: its work-items run in x order on one thread, so the result is fixed.
    (slots, where, total, _, _) = _both(monkeypatch, "claim", args, global_size=n, local_size=n)
    # Work-item i tries slots i, i+1, ...: each finds its own slot free (i < 8).
    np.testing.assert_array_equal(where, np.arange(n))
    np.testing.assert_array_equal(slots[:n], np.arange(n))
    acc = np.float32(0)
    for v in x[x > 0]:
        acc = np.float32(acc + v)
    assert total[0] == acc


def test_atomic_load_store(monkeypatch):
    n = 37

    def args():
        return [np.arange(100, 101 + n, dtype=np.int32), np.zeros(n, np.int32), np.int32(n)]

    (c, out) = _both(monkeypatch, "atomic_ls", args, global_size=n, local_size=(20,))
    i = np.arange(n)
    odd = (i & 1) == 1
    mine = np.where(odd, 3 * i, 100 + i)
    expected = mine  # the compare-exchange fails only where it reads 100 + i: then expected
    won = odd | (mine == 3 * i)
    np.testing.assert_array_equal(out, mine + 100 + n + 1000 * expected + 7 * won)
    np.testing.assert_array_equal(c[:n], np.where(won, -i, mine))
    assert c[n] == 100 + n


def test_calls_not_inlined(monkeypatch):
    n = 45
    f = np.random.default_rng(9).standard_normal((n, 4)).astype(np.float32)

    def args():
        return [np.zeros(n, np.int32), f.copy(), np.int32(77)]

    (out, f_out) = _both(monkeypatch, "helpers", args, global_size=n, local_size=(15,))
    i = np.arange(n, dtype=np.int64)
    h = ((i * 2654435761) & 0xFFFFFFFF).astype(np.uint32).view(np.int32) ^ np.int32(77)
    expected = np.where(i % 3 == 1, h, 0) + i + 4 * i
    np.testing.assert_array_equal(out, expected.astype(np.int32))
    fi = np.arange(n, dtype=np.float32)[:, None]
    np.testing.assert_array_equal(f_out, f * fi + fi)


def test_default_mode_takes_the_loop_kernels(monkeypatch):
    """Without SPIRVJIT_WFV the kernels with loops are vectorized (vector values and
    private arrays no longer decline)."""
    monkeypatch.delenv("SPIRVJIT_WFV", raising=False)
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    program = spirvjit.compile_opencl(SOURCE, ["-cl-std=CL2.0"])
    notes = {name: fn.wfv_note for name, fn in program.translation().kernel_functions.items()}
    for name in ("nbody_step", "float4_loop", "sort8", "histogram_private", "claim"):
        assert notes[name].startswith("vectorized"), (name, notes[name])


def test_printf_lane_by_lane_in_order(monkeypatch, capfd):
    """printf (not inlined) runs once per active lane, in work-item order within a group:
    the output is the scalar loop's, line for line."""
    source = (
        "kernel void k(global const int *a, int n) { int i = get_global_id(0); int s = 0;"
        " for (int j = 0; j < n; j++) s += a[i] * j;"
        ' if (s % 3) printf("item %d sum %d %v4d\\n", i, s, (int4)(i, s, -i, 7)); }'
    )
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    outputs = []
    for setting in ("all", "0"):
        monkeypatch.setenv("SPIRVJIT_WFV", setting)
        program = spirvjit.compile_opencl(source)
        capfd.readouterr()
        args = (np.arange(37, dtype=np.int32), np.int32(5))
        program.kernel("k")(*args, global_size=37, local_size=37)  # one group: in order
        outputs.append(capfd.readouterr().out.splitlines())
        note = program.translation().kernel_functions["k"].wfv_note
        assert note.startswith("vectorized" if setting == "all" else "not"), note
    expected = [f"item {i} sum {10 * i} {i},{10 * i},{-i},7" for i in range(37) if (10 * i) % 3]
    assert outputs[0] == outputs[1] == expected
