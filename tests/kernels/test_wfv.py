"""Whole-function vectorization (backends/cpu/vectorize.py): each kernel runs with the
vectorizer on and off (SPIRVJIT_WFV=0) and must give the same bits, and a NumPy reference
where one is simple. Local sizes that are not multiples of W exercise the scalar
remainder next to the vector chunks."""

from __future__ import annotations

import numpy as np
import pytest
from harness import program_with_vectorizer, vector_and_scalar_arrays

import spirvjit
from spirvjit.backends.cpu import vectorize

SOURCE = r"""
#pragma OPENCL FP_CONTRACT OFF
kernel void mandel(global int *out, float x0, float y0, float dx, float dy, int max_iter)
{
    int px = get_global_id(0), py = get_global_id(1);
    float cr = x0 + (float)px * dx, ci = y0 + (float)py * dy;
    float zr = 0.0f, zi = 0.0f;
    int n = 0;
    while (n < max_iter && zr * zr + zi * zi <= 4.0f) {
        float t = zr * zr - zi * zi + cr;
        zi = 2.0f * zr * zi + ci;
        zr = t;
        n++;
    }
    out[py * get_global_size(0) + px] = n;
}

kernel void branchy(global const int *a, global int *out, int n, int d)
{
    int i = get_global_id(0);
    if (i >= n) return;
    int v = a[i];
    int r;
    if (v % 3 == 0) r = v * 2;
    else if (v % 3 == 1) r = 100 / (v - 1 + d);  /* v - 1 + d may be 0 in other lanes */
    else r = -v;
    switch (v & 7) {
    case 0: r += 1; break;
    case 3: r ^= 0x55; break;
    case 5: case 6: r -= 7; break;
    default: break;
    }
    out[i] = r;
}

kernel void loops(global const int *a, global int *out, int n)
{
    int i = get_global_id(0);
    int acc = 0, k = 0;
    for (int j = 0; j < n; j++) {          /* uniform loop */
        int x = a[(i * 7 + j) % 64];       /* gather */
        if (x < 0) continue;
        for (k = 0; k < (x & 15); k++) {   /* divergent inner loop */
            acc += x ^ k;
            if (acc > 5000 + i) break;     /* divergent exit */
        }
    }
    out[i * 2] = acc;                      /* strided store */
    out[i * 2 + 1] = k;
}

kernel void gemm(global const float *a, global const float *b, global float *c, int n)
{
    int j = get_global_id(0), i = get_global_id(1);
    if (j >= n || i >= n) return;
    float sum = 0.0f;
    for (int k = 0; k < n; k++) sum += a[i * n + k] * b[k * n + j];
    c[i * n + j] = sum;
}

kernel void mathy(global const float *x, global float *out)
{
    int i = get_global_id(0);
    float v = x[i];
    out[i] = v > 0.0f ? sqrt(v) + fabs(v - 2.0f) : floor(v) * fmin(v, -1.5f);
}

kernel void atomics(global const int *a, global int *bins, global int *ticket, global int *old)
{
    int i = get_global_id(0);
    if (a[i] % 3 != 0)                          /* under a divergent mask */
        atomic_add(&bins[a[i] & 7], 1);
    old[i] = atomic_inc(ticket);                /* the same address from every lane */
}

kernel void scatter_last(global int *out, global int *idx)
{
    int i = get_global_id(0);
    out[idx[i]] = i;      /* a permutation: a scatter */
    if (i == 0) out[64] = 1;
}
"""


_PROGRAMS: dict[bool, spirvjit.Program] = {}


def _build(monkeypatch, enabled: bool) -> spirvjit.Program:
    return program_with_vectorizer(monkeypatch, _PROGRAMS, SOURCE, enabled, "all")


def _both(monkeypatch, name, make_args, **launch):
    """The kernel's arrays after a launch with the vectorizer on, checked against a launch
    with it off (harness.vector_and_scalar_arrays)."""
    return vector_and_scalar_arrays(lambda on: _build(monkeypatch, on), name, make_args, **launch)


def _vectorized(monkeypatch, name: str) -> bool:
    program = _build(monkeypatch, True)
    module = program.translation().module
    return any(fn.name.endswith(".wfv") and f".{name}." in fn.name for fn in module.functions)


def test_kernels_are_vectorized(monkeypatch):
    for name in ("mandel", "branchy", "loops", "gemm", "mathy", "atomics", "scatter_last"):
        assert _vectorized(monkeypatch, name), name


def test_switch_off(monkeypatch):
    program = _build(monkeypatch, False)
    assert not vectorize.enabled()
    assert not any(fn.name.endswith(".wfv") for fn in program.translation().module.functions)


@pytest.mark.parametrize("local", [None, (13, 3)])
def test_mandelbrot_divergent_loop(monkeypatch, local):
    w, h = 91, 33

    def args():
        out = np.zeros(w * h, np.int32)
        return out, np.float32(-2), np.float32(-1), np.float32(3 / w), np.float32(2 / h), 200

    (out,) = _both(
        monkeypatch, "mandel", lambda: list(args()), global_size=(w, h), local_size=local
    )
    # NumPy model of the same float32 iteration.
    px, py = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    cr = np.float32(-2) + px * np.float32(3 / w)
    ci = np.float32(-1) + py * np.float32(2 / h)
    zr, zi = np.zeros_like(cr), np.zeros_like(ci)
    n = np.zeros(cr.shape, np.int32)
    active = np.ones(cr.shape, bool)
    for _ in range(200):
        active &= zr * zr + zi * zi <= np.float32(4)
        t = zr * zr - zi * zi + cr
        zi = np.where(active, np.float32(2) * zr * zi + ci, zi)
        zr = np.where(active, t, zr)
        n += active
    np.testing.assert_array_equal(out.reshape(h, w), n)


def test_divergent_if_switch_and_masked_division(monkeypatch):
    n = 203
    a = np.arange(-50, n - 50, dtype=np.int32)

    def args():
        return [a.copy(), np.zeros(n + 5, np.int32), np.int32(n), np.int32(0)]

    (_, out, *_) = _both(monkeypatch, "branchy", args, global_size=n + 5, local_size=n + 5)
    assert (out[n:] == 0).all()  # lanes past the guard stored nothing


def test_uniform_and_divergent_loops_gather_strided(monkeypatch):
    a = ((np.arange(64) * 37) % 101 - 20).astype(np.int32)

    def args():
        return [a.copy(), np.zeros(2 * 100, np.int32), np.int32(9)]

    _both(monkeypatch, "loops", args, global_size=100, local_size=(20,))


def test_gemm_inner_loop(monkeypatch):
    n = 37
    rng = np.random.default_rng(5)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)

    def args():
        return [a.copy(), b.copy(), np.zeros((n, n), np.float32), np.int32(n)]

    (_, _, c) = _both(monkeypatch, "gemm", args, global_size=(40, 40), local_size=(20, 4))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_math_intrinsics(monkeypatch):
    x = np.linspace(-5, 5, 250).astype(np.float32)

    def args():
        return [x.copy(), np.zeros_like(x)]

    _both(monkeypatch, "mathy", args, global_size=250)


def test_scatter(monkeypatch):
    perm = np.random.default_rng(1).permutation(64).astype(np.int32)

    def args():
        return [np.zeros(65, np.int32), perm.copy()]

    (out, _) = _both(monkeypatch, "scatter_last", args, global_size=64)
    np.testing.assert_array_equal(out[perm], np.arange(64))
    assert out[64] == 1


def test_atomics_lane_by_lane(monkeypatch):
    n = 100
    a = np.arange(n, dtype=np.int32) * 5 + 1

    def args():
        return [a.copy(), np.zeros(8, np.int32), np.zeros(1, np.int32), np.zeros(n, np.int32)]

    # One group: its work-items run in x order on one thread, so the tickets are determined.
    (_, bins, ticket, old) = _both(monkeypatch, "atomics", args, global_size=n, local_size=n)
    expected = np.bincount((a[a % 3 != 0] & 7), minlength=8)
    np.testing.assert_array_equal(bins, expected)
    assert ticket[0] == n
    np.testing.assert_array_equal(old, np.arange(n))


def test_local_memory_declines(monkeypatch):
    """Atomics on __local memory are plain loads and stores on the CPU: no interleaving."""
    monkeypatch.setenv("SPIRVJIT_WFV", "all")
    program = spirvjit.compile_opencl(
        "kernel void k(global int *out, local int *tmp) {"
        " if (get_local_id(0) == 0) tmp[0] = 0; atomic_inc(tmp); out[get_global_id(0)] = 1; }"
    )
    translation = program.translation()
    fn = translation.kernel_functions["k"]
    assert "local memory" in fn.wfv_note


def test_atomic_result_used_in_a_branch(monkeypatch):
    """The old value of an atomic is per lane (the atomic runs lane by lane), so a branch
    on it is divergent (this IR was rejected by LLVM once: a scalar compare of a vector)."""
    monkeypatch.setenv("SPIRVJIT_WFV", "all")
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    program = spirvjit.compile_opencl(
        "kernel void flag(global int *f, global int *wins) {"
        " if (atomic_xchg(&f[0], 1) == 0) atomic_inc(&wins[0]); }"
    )
    f, wins = np.zeros(1, np.int32), np.zeros(1, np.int32)
    program.kernel("flag")(f, wins, global_size=100)
    assert wins[0] == 1
    assert "vectorized" in program.translation().kernel_functions["flag"].wfv_note


def test_runtime_dimension(monkeypatch):
    """get_global_id(d) with a run-time d picks from the id vector at run time: a varying
    <3 x i64> (each lane's x id in component 0), picked by compares and selects. (It
    declined while varying vectors did.)"""
    monkeypatch.setenv("SPIRVJIT_WFV", "all")
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    program = spirvjit.compile_opencl(
        "kernel void k(global int *out, int d) {"
        " out[get_global_id(1) * get_global_size(0) + get_global_id(0)] = get_global_id(d); }"
    )
    for d, expected in ((0, np.arange(37)[None, :]), (1, np.arange(3)[:, None]), (5, 0)):
        out = np.full((3, 37), -1, np.int32)
        program.kernel("k")(out, np.int32(d), global_size=(37, 3))
        np.testing.assert_array_equal(out, np.broadcast_to(expected, (3, 37)))
    assert program.translation().kernel_functions["k"].wfv_note.startswith("vectorized")


def test_default_takes_kernels_with_loops(monkeypatch):
    monkeypatch.delenv("SPIRVJIT_WFV", raising=False)
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    assert vectorize.mode() == "loops"
    program = spirvjit.compile_opencl(SOURCE)
    notes = {name: fn.wfv_note for name, fn in program.translation().kernel_functions.items()}
    assert notes["mandel"].startswith("vectorized")
    assert notes["gemm"].startswith("vectorized")
    assert "no loops" in notes["mathy"]


def test_dis_names_the_outcome(monkeypatch, tmp_path, capsys):
    from spirvjit.cli import main

    monkeypatch.delenv("SPIRVJIT_WFV", raising=False)
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    source = (
        "kernel void a(global int *o, int n) { int s = 0;"
        " for (int k = 0; k < n; k++) s += k * get_global_id(0); o[get_global_id(0)] = s; }"
        'kernel void b(global int *o) { printf("%d\\n", (int)get_global_id(0)); }'
    )
    path = tmp_path / "k.spv"
    path.write_bytes(spirvjit.compile_opencl(source).spirv)
    assert main(["dis", str(path), "--target", "host"]) == 0
    out = capsys.readouterr().out
    assert "; vectorized across work-items, " in out
    assert "; not vectorized across work-items: no loops" in out  # b: loop-free
