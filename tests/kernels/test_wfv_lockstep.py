"""Lockstep counters and unguarded cheap blocks in the CPU vectorizer
(backends/cpu/vectorize.py: ``_header_phi_varying``, ``_escaping_lockstep``, ``_cheap``;
issue 19, Mandelbrot).

In a divergent loop the lanes still looping have all run the same iterations, so a
counter that starts at one uniform value and steps by one uniform amount every iteration
is one scalar among them (Mandelbrot's ``n``): one scalar add and compare per iteration,
each lane's value captured when it leaves. It must stay a vector where lanes can differ:
a counter stepped only under a divergent ``if``, one whose start or step differs per lane.
Every kernel runs with the vectorizer on and off and must give the same bits, and the
reference computed here in Python/NumPy.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from harness import vector_and_scalar_arrays

import spirvjit

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

/* Collatz steps of start[i], at most max: the counter is lockstep. */
kernel void steps(global const uint *start, global int *out, global uint *last, int max)
{
    int i = get_global_id(0);
    uint x = start[i];
    int n = 0;
    while (x != 1u && n < max) {
        x = (x & 1u) ? 3u * x + 1u : x >> 1;
        n++;
    }
    out[i] = n;
    last[i] = x;
}

/* The counter's value after the loop is an address: it must not be taken as one
   scalar for every lane there (each lane left with its own). */
kernel void steps_address(global const uint *start, global int *grid, int max)
{
    int i = get_global_id(0);
    uint x = start[i];
    int n = 0;
    do {
        x = (x & 1u) ? 3u * x + 1u : x >> 1;
        n++;
    } while (x != 1u && n < max);
    grid[get_global_id(0) + (long)n] = i + 1;  /* i64 arithmetic: "consecutive" */
}

/* Stepped only under a divergent if: the odd steps. */
kernel void odd_steps(global const uint *start, global int *out, int max)
{
    int i = get_global_id(0);
    uint x = start[i];
    int odd = 0, guard = 0;
    while (x != 1u && guard < max) {
        if (x & 1u) { x = 3u * x + 1u; odd++; }
        else x >>= 1;
        guard = guard + 1 + (int)(x & 0u);
    }
    out[i] = odd;
}

/* Starts at a per-lane value. */
kernel void lane_start(global const uint *start, global int *out, int max)
{
    int i = get_global_id(0);
    uint x = start[i];
    int n = i & 3;
    while (x != 1u && n < max) {
        x = (x & 1u) ? 3u * x + 1u : x >> 1;
        n++;
    }
    out[i] = n;
}

/* Steps by a per-lane amount. */
kernel void lane_step(global const uint *start, global int *out, int max)
{
    int i = get_global_id(0);
    uint x = start[i];
    int n = 0;
    while (x != 1u && n < max) {
        x = (x & 1u) ? 3u * x + 1u : x >> 1;
        n += 1 + (i & 1);
    }
    out[i] = n;
}

/* A loop entered under a divergent if: its counter starts at 0 in every lane that enters. */
kernel void guarded_loop(global const int *len, global int *out)
{
    int i = get_global_id(0);
    int acc = 0;
    if (i % 3 != 0) {
        for (int k = 0; k < len[i]; k++)
            acc = acc * 3 + (k ^ i);
    }
    out[i] = acc;
}

/* A uniform condition (a value loaded once for the chunk) on edges whose mask varies:
   chunks where no lane passes the first test skip the load, and the condition is
   undefined there. */
kernel void uniform_under_varying(global const int *a, global const int *cfg, global int *out,
                                  int n)
{
    int i = get_global_id(0);
    int r = -1;
    if (a[i] < n) {
        int c = cfg[get_group_id(0)];
        if (c > 3) r = a[i] * c;
        else if (c == 2) r = a[i] - c;
        else r = 7;
    }
    out[i] = r;
}

/* Shifts that are out of range (poison) in the lanes the if does not run. */
kernel void masked_shift(global const int *v, global const int *s, global int *out)
{
    int i = get_global_id(0);
    int r = v[i];
    int k = s[i];
    for (int j = 0; j < (i & 3); j++) {
        if (k < 31) r = (r << k) ^ (r >> (31 - k));
        else r = r + j;
    }
    out[i] = r;
}
"""


def _program(monkeypatch, tmp_path: Path, wfv: bool) -> spirvjit.Program:
    monkeypatch.setenv("SPIRVJIT_WFV", "all" if wfv else "0")
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    monkeypatch.setenv("SPIRVJIT_DUMP", str(tmp_path))
    program = spirvjit.compile_opencl(SOURCE)
    program.translation()  # now, under these settings
    return program


def _both(monkeypatch, tmp_path: Path, name: str, make_args, **launch):
    """The kernel's arrays after a launch with the vectorizer on, checked against a launch
    with it off (harness.vector_and_scalar_arrays)."""
    return vector_and_scalar_arrays(
        lambda on: _program(monkeypatch, tmp_path / str(on), on), name, make_args, **launch
    )


def _loop_phis(tmp_path: Path, kernel: str) -> list[str]:
    """The types of the phis of the loop headers of ``kernel``'s vector clone (the
    unoptimized module dump)."""
    files = [p for p in (tmp_path / "True").glob("*.ll") if not p.name.endswith(".opt.ll")]
    text = files[0].read_text()
    match = re.search(rf'define internal void @"([^"]*\.{kernel}\.[^"]*\.wfv)"', text)
    assert match, f"no vector clone of {kernel}"
    body = text[match.start() :]
    body = body[: body.index("\n}")]
    types = []
    for block in re.split(r"\n(?=[\w.\"]+:)", body):
        if re.match(r'"?[\w.]+\.loop"?:', block):
            types += re.findall(r"= phi\s+(<\d+ x i32>|i32) ", block)
    return types


def _collatz(start: np.ndarray, cap: int, only_odd: bool = False, first=None, step=None):
    out, last = [], []
    for i, x in enumerate(start.tolist()):
        n = 0 if first is None else first(i)
        guard = 0
        while x != 1 and (guard if only_odd else n) < cap:
            if x & 1:
                x = (3 * x + 1) & 0xFFFFFFFF
                n += 1 if only_odd else 0
            else:
                x >>= 1
            if only_odd:
                guard += 1
            else:
                n += 1 if step is None else step(i)
        out.append(n)
        last.append(x)
    return np.array(out, np.int32), np.array(last, np.uint32)


def _starts(n: int, seed: int = 19) -> np.ndarray:
    rng = np.random.default_rng(seed)
    start = rng.integers(1, 3000, n).astype(np.uint32)
    start[::7] = 1  # lanes that never enter the loop
    start[3::11] = 27  # 111 steps: past max, the uniform exit
    return start


def test_mandelbrot_counter_is_one_scalar(monkeypatch, tmp_path):
    """Mandelbrot's ``n`` is one scalar i32 in the vector loop (a vector before), and the
    counts are the NumPy reference's, bit for bit, with lanes that leave by either exit
    (the escape test or ``max_iter``) in the same chunk."""
    w, h, iters = 40, 24, 60
    x0, y0 = np.float32(-2.0), np.float32(-1.25)
    dx, dy = np.float32(3.0 / w), np.float32(2.5 / h)

    def args():
        return [np.zeros((h, w), np.int32), x0, y0, dx, dy, np.int32(iters)]

    (got,) = _both(monkeypatch, tmp_path, "mandel", args, global_size=(w, h), local_size=(20, 4))
    cr = np.broadcast_to(x0 + np.arange(w, dtype=np.float32) * dx, (h, w))
    ci = np.broadcast_to((y0 + np.arange(h, dtype=np.float32) * dy)[:, None], (h, w))
    zr = np.zeros((h, w), np.float32)
    zi = np.zeros((h, w), np.float32)
    want = np.zeros((h, w), np.int32)
    for _ in range(iters):
        live = zr * zr + zi * zi <= np.float32(4.0)
        t = zr * zr - zi * zi + cr
        zi = np.where(live, np.float32(2.0) * zr * zi + ci, zi)
        zr = np.where(live, t, zr)
        want += live
    np.testing.assert_array_equal(got, want)
    assert 0 < got.min() < iters == got.max()  # both exits taken
    assert "i32" in _loop_phis(tmp_path, "mandel")


def test_mandelbrot_loop_is_one_block(monkeypatch, tmp_path):
    """The blocks of Mandelbrot's loop are cheap (arithmetic and compares): they run
    without an any-lane test: no ``.run`` block between the loop's head and its exit, and
    the loop is one block after optimization."""
    program = _program(monkeypatch, tmp_path / "True", True)
    out = np.zeros((8, 16), np.int32)
    program.kernel("mandel")(
        out, np.float32(-2), np.float32(-1), np.float32(0.2), np.float32(0.25), np.int32(30),
        global_size=(16, 8),
    )  # fmt: skip
    files = list((tmp_path / "True").glob("*.ll"))
    text = next(p for p in files if not p.name.endswith(".opt.ll")).read_text()
    clone = text[re.search(r'define internal void @"[^"]*\.mandel\.[^"]*\.wfv"', text).start() :]
    clone = clone[: clone.index("\n}")]
    loop = clone[re.search(r"\.loop\"?:", clone).start() : re.search(r"\.exit\"?:", clone).start()]
    assert not re.search(r"\.run\"?:", loop), "a masked block kept its any-lane test"


def test_counter_with_a_uniform_exit(monkeypatch, tmp_path):
    start = _starts(100)
    cap = 90

    def args():
        return [start.copy(), np.zeros(100, np.int32), np.zeros(100, np.uint32), np.int32(cap)]

    _, out, last = _both(monkeypatch, tmp_path, "steps", args, global_size=100, local_size=20)
    want_out, want_last = _collatz(start, cap)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(last, want_last)
    assert "i32" in _loop_phis(tmp_path, "steps")


def test_counter_used_as_an_address_after_the_loop(monkeypatch, tmp_path):
    """Each lane stores at its own count: the counter is not a scalar there, whatever it
    is in the loop (a store at one address for the whole chunk before
    ``_escaping_lockstep``)."""
    start = _starts(64, seed=5)
    cap = 40

    def args():
        return [start.copy(), np.zeros(64 + cap + 1, np.int32), np.int32(cap)]

    _, grid = _both(monkeypatch, tmp_path, "steps_address", args, global_size=64, local_size=16)
    want = np.zeros(64 + cap + 1, np.int32)
    for i, x in enumerate(start.tolist()):
        n = 0
        while True:
            x = (3 * x + 1) & 0xFFFFFFFF if x & 1 else x >> 1
            n += 1
            if x == 1 or n >= cap:
                break
        want[i + n] = i + 1  # work-items in order: the last one's store stays
    np.testing.assert_array_equal(grid, want)


@pytest.mark.parametrize(
    ("name", "scalars"),
    [("odd_steps", 1), ("lane_start", 0), ("lane_step", 0)],  # odd_steps: ``guard`` is one
)
def test_counters_that_differ_between_lanes_stay_vectors(monkeypatch, tmp_path, name, scalars):
    start = _starts(100, seed=7)
    cap = 70

    def args():
        return [start.copy(), np.zeros(100, np.int32), np.int32(cap)]

    _, out = _both(monkeypatch, tmp_path, name, args, global_size=100, local_size=20)
    if name == "odd_steps":
        want, _ = _collatz(start, cap, only_odd=True)
    elif name == "lane_start":
        want, _ = _collatz(start, cap, first=lambda i: i & 3)
    else:
        want, _ = _collatz(start, cap, step=lambda i: 1 + (i & 1))
    np.testing.assert_array_equal(out, want)
    phis = _loop_phis(tmp_path, name)
    assert phis.count("i32") == scalars, phis


def test_loop_entered_under_a_divergent_if(monkeypatch, tmp_path):
    n = 90
    length = np.random.default_rng(3).integers(0, 20, n).astype(np.int32)

    def args():
        return [length.copy(), np.zeros(n, np.int32)]

    _, out = _both(monkeypatch, tmp_path, "guarded_loop", args, global_size=n, local_size=30)
    want = []
    for i in range(n):
        acc = 0
        for k in range(length[i] if i % 3 else 0):
            acc = (acc * 3 + (k ^ i)) & 0xFFFFFFFF
        want.append(acc)
    want = np.array(want, np.uint32).view(np.int32)
    np.testing.assert_array_equal(out, want)
    assert "i32" in _loop_phis(tmp_path, "guarded_loop")


def test_masked_shift_out_of_range(monkeypatch, tmp_path):
    """The if's blocks are cheap and run for every lane: lanes with k >= 31 compute shifts
    past the width there (poison), which must not reach their results."""
    n = 64
    rng = np.random.default_rng(11)
    v = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    s = rng.integers(0, 64, n).astype(np.int32)

    def args():
        return [v.copy(), s.copy(), np.zeros(n, np.int32)]

    _, _, out = _both(monkeypatch, tmp_path, "masked_shift", args, global_size=n, local_size=16)
    want = []
    for i in range(n):
        r, k = int(v[i]), int(s[i])
        for j in range(i & 3):
            if k < 31:
                left = (r << k) & 0xFFFFFFFF
                r = np.int32(np.uint32(left) ^ np.uint32((r >> (31 - k)) & 0xFFFFFFFF))
                r = int(r)
            else:
                r = int(np.int32(r + j))
        want.append(r)
    np.testing.assert_array_equal(out, np.array(want, np.int32))


@pytest.mark.parametrize(("level", "width"), [("x86-64", 4), ("x86-64-v4", 16)])
def test_other_x86_levels_vectorize(monkeypatch, tmp_path, capsys, level, width):
    """The masks are 32-bit lanes without mask registers (SSE here: W = 4) and vectors of
    i1 with AVX-512 (W = 16): every kernel here is still vectorized for both (compiled
    only: this host may not run them)."""
    from spirvjit.cli import main

    monkeypatch.setenv("SPIRVJIT_WFV", "all")
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    path = tmp_path / "k.spv"
    path.write_bytes(spirvjit.compile_opencl(SOURCE).spirv)
    assert main(["dis", str(path), "--target", level]) == 0
    notes = re.findall(
        r"^; ((?:not )?vectorized across work-items.*)$", capsys.readouterr().out, re.M
    )
    kernels = len(re.findall(r"^kernel void", SOURCE, re.M))
    assert notes == [f"vectorized across work-items, {width} per instruction"] * kernels, notes


def test_uniform_condition_under_a_varying_mask(monkeypatch, tmp_path):
    groups, size = 6, 16
    rng = np.random.default_rng(23)
    a = rng.integers(0, 100, groups * size).astype(np.int32)
    a[size : 2 * size] = 1000  # a group where no lane passes a[i] < n
    cfg = np.array([5, 2, 1, 9, 2, 0], np.int32)

    def args():
        return [a.copy(), cfg.copy(), np.zeros(groups * size, np.int32), np.int32(60)]

    _, _, out = _both(
        monkeypatch, tmp_path, "uniform_under_varying", args, global_size=groups * size,
        local_size=size,
    )  # fmt: skip
    c = np.repeat(cfg, size)
    inner = np.where(c > 3, a * c, np.where(c == 2, a - c, 7))
    np.testing.assert_array_equal(out, np.where(a < 60, inner, -1).astype(np.int32))
