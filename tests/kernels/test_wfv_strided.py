"""Row-per-work-item walks in the CPU vectorizer (backends/cpu/vectorize.py,
``_Vectorizer._strided_load``; issue 19).

A work-item that walks its own row (``row = a + i * cols; ... row[k]`` in a loop over
``k``) reads, per step, one element from each of W rows ``cols`` elements apart: a pointer
induction whose lanes are evenly spaced by a run-time distance. Where the spacing checked
once before the loop holds and every lane is active the load is W scalar loads at lane
0's address plus multiples of it (no vector of addresses to take apart every step, which
a scalarized gather costs); elsewhere (rows at uneven places, lanes masked off) it stays
a gather. Each kernel, written in the shape of public samples (matrix-vector products,
PolyBench's atax and mvt row loops, a row-wise integer hash, a permuted-row walk), runs
with the vectorizer on and off and must give the same bits, and matches NumPy."""

from __future__ import annotations

import re

import numpy as np
import pytest
from harness import vector_and_scalar_arrays

import spirvjit

SOURCE = r"""
#pragma OPENCL FP_CONTRACT OFF
/* y = A x, one row per work-item */
kernel void row_gemv(global const float *a, global const float *x, global float *y, int rows,
                     int cols)
{
    int i = get_global_id(0);
    if (i >= rows) return;
    global const float *row = a + (size_t)i * cols;
    float s = 0.0f;
    for (int k = 0; k < cols; k++)
        s += row[k] * x[k];
    y[i] = s;
}

/* atax, first half: tmp = A x, accumulated in the output array */
kernel void atax_rows(global const float *a, global const float *x, global float *tmp, int nx,
                      int ny)
{
    int i = get_global_id(0);
    if (i < nx) {
        tmp[i] = 0.0f;
        for (int j = 0; j < ny; j++)
            tmp[i] += a[i * ny + j] * x[j];
    }
}

/* mvt: x1 = x1 + A y1 and x2 = x2 + A^T y2 in one kernel (a row walk and a column walk) */
kernel void mvt_both(global const float *a, global float *x1, global float *x2,
                     global const float *y1, global const float *y2, int n)
{
    int i = get_global_id(0);
    if (i < n) {
        for (int j = 0; j < n; j++) {
            x1[i] += a[i * n + j] * y1[j];
            x2[i] += a[j * n + i] * y2[j];
        }
    }
}

/* a row-wise integer hash over a ushort matrix: bit-exact */
kernel void row_hash(global const ushort *m, global uint *out, uint cols)
{
    size_t i = get_global_id(0);
    global const ushort *row = m + i * cols;
    uint h = 0x9e3779b9u;
    for (uint k = 0; k < cols; k++)
        h = (h << 5 | h >> 27) ^ (uint)row[k];
    out[i] = h;
}

/* rows in a permuted order: the lanes' rows are not evenly spaced */
kernel void perm_rows(global const float *a, global const int *perm, global float *out,
                      int cols)
{
    int i = get_global_id(0);
    global const float *row = a + perm[i] * cols;
    float s = 0.0f;
    for (int k = 0; k < cols; k++)
        s = s * 0.5f + row[k];
    out[i] = s;
}

/* the walk under a condition that differs per lane: masked lanes */
kernel void some_rows(global const float *a, global float *out, int cols)
{
    int i = get_global_id(0);
    float s = -1.0f;
    if (i % 3 != 1) {
        global const float *row = a + i * cols;
        s = 0.0f;
        for (int k = 0; k < cols; k++)
            s += row[k] * (float)(k + 1);
    }
    out[i] = s;
}
"""

_PROGRAMS: dict[bool, spirvjit.Program] = {}


def _build(monkeypatch, enabled: bool, dump=None) -> spirvjit.Program:
    monkeypatch.setenv("SPIRVJIT_WFV", "loops" if enabled else "0")
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    if dump is not None:
        monkeypatch.setenv("SPIRVJIT_DUMP", str(dump))
    if enabled not in _PROGRAMS or dump is not None:
        program = spirvjit.compile_opencl(SOURCE)
        program.translation()  # now, under this setting
        _PROGRAMS[enabled] = program
    return _PROGRAMS[enabled]


def _both(monkeypatch, name, make_args, **launch):
    """The kernel's arrays after a launch with the vectorizer on, checked against a launch
    with it off (harness.vector_and_scalar_arrays)."""
    return vector_and_scalar_arrays(lambda on: _build(monkeypatch, on), name, make_args, **launch)


def test_row_walks_load_lane_by_lane_not_gather(monkeypatch, tmp_path):
    """The clones of the row walks load each lane's element from a scalar address; the
    gather stays only as the path for rows that are not evenly spaced."""
    names = ("row_gemv", "atax_rows", "mvt_both", "row_hash", "perm_rows", "some_rows")
    program = _build(monkeypatch, True, dump=tmp_path)
    for name in names:
        program.kernel(name).compile()  # writes the module dumps
    text = "\n".join(p.read_text() for p in tmp_path.glob("*.ll") if ".opt." not in p.name)
    for name in names:
        match = re.search(
            rf'define internal void @"([^"]*\.{name}\.[^"]*\.wfv)"\(.*?\n}}', text, re.S
        )
        assert match, name
        body = match.group(0)
        # W scalar loads of the row's element type from one base: lane 0's plus i * d.
        scalar = re.findall(r"= load (float|i16), ptr %\S+, align", body)
        assert len(scalar) >= 8, (name, len(scalar))
        assert "llvm.masked.gather" in body, name  # the fallback


LOCALS = [(24,), (8,), (13,), None]


@pytest.mark.parametrize("local", LOCALS)
def test_gemv_and_atax_rows(monkeypatch, local):
    rng = np.random.default_rng(11)
    rows, cols = 45, 67
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    x = rng.standard_normal(cols).astype(np.float32)
    glob = 48 if local is None else -(-rows // local[0]) * local[0]

    def args():
        return [a, x, np.zeros(rows, np.float32), np.int32(rows), np.int32(cols)]

    _, _, y = _both(monkeypatch, "row_gemv", args, global_size=glob, local_size=local)
    np.testing.assert_allclose(y, a.astype(np.float64) @ x, rtol=1e-4, atol=1e-5)
    _, _, tmp = _both(monkeypatch, "atax_rows", args, global_size=glob, local_size=local)
    np.testing.assert_array_equal(tmp, y)  # the same sums in the same order


def test_mvt_row_and_column_walks(monkeypatch):
    rng = np.random.default_rng(12)
    n = 41
    a = rng.standard_normal((n, n)).astype(np.float32)
    y1, y2 = rng.standard_normal((2, n)).astype(np.float32)
    x1, x2 = rng.standard_normal((2, n)).astype(np.float32)

    def args():
        return [a, x1.copy(), x2.copy(), y1, y2, np.int32(n)]

    _, g1, g2, _, _ = _both(monkeypatch, "mvt_both", args, global_size=48, local_size=(16,))
    a64 = a.astype(np.float64)
    np.testing.assert_allclose(g1, x1 + a64 @ y1, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(g2, x2 + a64.T @ y2, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("local", [(16,), (40,)])
def test_row_hash_bit_exact(monkeypatch, local):
    rng = np.random.default_rng(13)
    rows, cols = 80, 29
    m = rng.integers(0, 2**16, (rows, cols), dtype=np.uint16)

    def args():
        return [m, np.zeros(rows, np.uint32), np.uint32(cols)]

    _, out = _both(monkeypatch, "row_hash", args, global_size=rows, local_size=local)
    h = np.full(rows, 0x9E3779B9, np.uint64)
    for k in range(cols):
        h = (((h << 5) | (h >> 27)) & 0xFFFFFFFF) ^ m[:, k]
    np.testing.assert_array_equal(out, h.astype(np.uint32))


def test_uneven_rows_and_masked_lanes_gather(monkeypatch):
    rng = np.random.default_rng(14)
    rows, cols = 64, 19
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    perm = rng.permutation(rows).astype(np.int32)
    perm[8:16] = np.arange(8, 16)  # one chunk evenly spaced, the others not

    def args():
        return [a, perm, np.zeros(rows, np.float32), np.int32(cols)]

    _, _, out = _both(monkeypatch, "perm_rows", args, global_size=rows, local_size=(32,))
    want = np.zeros(rows, np.float32)
    for k in range(cols):  # the kernel's float32 operations in its order: the same bits
        want = want * np.float32(0.5) + a[perm, k]
    np.testing.assert_array_equal(out, want)

    def args2():
        return [a, np.zeros(rows, np.float32), np.int32(cols)]

    _, out = _both(monkeypatch, "some_rows", args2, global_size=rows, local_size=(64,))
    weights = np.arange(1, cols + 1, dtype=np.float64)
    want = np.where(np.arange(rows) % 3 != 1, a.astype(np.float64) @ weights, -1.0)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
