"""Interleaved chunks in the CPU vectorizer (backends/cpu/vectorize.py,
``_Vectorizer._interleave``; abi.py ``_emit_x_range``; issue 19).

A kernel whose loops only stream rows (every varying access consecutive across lanes,
no gathers, masks, lane-by-lane calls or libm calls in a loop) gets a second clone of
K*W lanes (32 lanes on AVX2): a column walk then reads two whole cache lines of each row
per step instead of 32 bytes, and a k loop keeps K accumulator chains. The work-group
function runs that clone on a row's full 32-chunks, the W-lane clone on the W-chunks
left and the scalar body on the rest, so every local size is covered.

Each kernel (written in the shape of public samples: PolyBench's covariance/correlation
column loops, atax, gemm with alpha and beta) runs with the vectorizer on and off and must
give the same bits (each lane runs the same operations in the same order: no float sum is
reassociated), and matches a NumPy reference. Kernels outside the rule (a row walk that
gathers, a libm call in the loop, a divergent loop) keep the W-lane clone only."""

from __future__ import annotations

import numpy as np
import pytest
from harness import program_with_vectorizer, vector_and_scalar_arrays

import spirvjit
from spirvjit.backends.cpu import vectorize

SOURCE = r"""
#pragma OPENCL FP_CONTRACT OFF
/* covariance, step 1: column means accumulated in the output array itself */
kernel void mean_cols(global float *mean, global const float *data, float float_n, int m, int n)
{
    int j = get_global_id(0);
    if (j < m) {
        mean[j] = 0.0f;
        for (int i = 0; i < n; i++)
            mean[j] += data[i * m + j];
        mean[j] /= float_n;
    }
}

/* correlation, step 2: standard deviation of each column around its mean */
kernel void std_cols(global const float *data, global const float *mean, global float *std,
                     int m, int n)
{
    int j = get_global_id(0);
    if (j >= m) return;
    float s = 0.0f, mj = mean[j];
    for (int i = 0; i < n; i++) {
        float d = data[i * m + j] - mj;
        s += d * d;
    }
    s = sqrt(s / (float)n);
    std[j] = s <= 0.005f ? 1.0f : s;
}

/* atax, second half: y = A^T t, one column of A per work-item */
kernel void atax_cols(global const float *a, global const float *t, global float *y, int nx,
                      int ny)
{
    int j = get_global_id(0);
    if (j < ny) {
        float acc = 0.0f;
        for (int i = 0; i < nx; i++)
            acc += a[i * ny + j] * t[i];
        y[j] = acc;
    }
}

/* gemm: C = alpha A B + beta C, one element per work-item, an inner k loop */
kernel void gemm_ab(global const float *a, global const float *b, global float *c, float alpha,
                    float beta, int ni, int nj, int nk)
{
    int j = get_global_id(0), i = get_global_id(1);
    if (i < ni && j < nj) {
        c[i * nj + j] *= beta;
        for (int k = 0; k < nk; k++)
            c[i * nj + j] += alpha * a[i * nk + k] * b[k * nj + j];
    }
}

/* integer column statistics: a wrapping hash and the maximum, bit-exact */
kernel void hash_cols(global const uint *data, global uint *hash, global uint *top, uint rows,
                      uint cols)
{
    size_t j = get_global_id(0);
    uint h = 2166136261u, t = 0;
    for (uint i = 0; i < rows; i++) {
        uint v = data[i * (size_t)cols + j];
        h = (h ^ v) * 16777619u;
        t = max(t, v);
    }
    hash[j] = h;
    top[j] = t;
}

/* double-precision column sums */
kernel void dsum_cols(global const double *data, global double *out, int rows, int cols)
{
    int j = get_global_id(0);
    double s = 0.0;
    for (int i = 0; i < rows; i++)
        s += data[(size_t)i * cols + j];
    out[j] = s;
}

/* not interleaved: a row per work-item (the row walk gathers across lanes) */
kernel void row_dot(global const float *a, global const float *x, global float *y, int cols)
{
    int i = get_global_id(0);
    float s = 0.0f;
    for (int k = 0; k < cols; k++)
        s += a[i * cols + k] * x[k];
    y[i] = s;
}

/* not interleaved: a libm call in the loop (libmvec has no 32-lane variant) */
kernel void exp_cols(global const float *data, global float *out, int rows, int cols)
{
    int j = get_global_id(0);
    float s = 0.0f;
    for (int i = 0; i < rows; i++)
        s += exp(data[i * cols + j]);
    out[j] = s;
}

/* not interleaved: a loop whose trip count differs per lane */
kernel void ragged_cols(global const float *data, global const int *len, global float *out,
                        int cols)
{
    int j = get_global_id(0);
    float s = 0.0f;
    for (int i = 0; i < len[j]; i++)
        s += data[i * cols + j];
    out[j] = s;
}
"""

_PROGRAMS: dict[bool, spirvjit.Program] = {}
INTERLEAVED = ("mean_cols", "std_cols", "atax_cols", "gemm_ab", "hash_cols", "dsum_cols")
NOT_INTERLEAVED = ("row_dot", "exp_cols", "ragged_cols")


def _build(monkeypatch, enabled: bool) -> spirvjit.Program:
    return program_with_vectorizer(monkeypatch, _PROGRAMS, SOURCE, enabled, "loops")


def _both(monkeypatch, name, make_args, **launch):
    """The kernel's arrays after a launch with the vectorizer on, checked against a launch
    with it off (harness.vector_and_scalar_arrays)."""
    return vector_and_scalar_arrays(lambda on: _build(monkeypatch, on), name, make_args, **launch)


def _note(monkeypatch, name: str) -> str:
    return _build(monkeypatch, True).translation().kernel_functions[name].wfv_note


def _wide(name: str) -> bool:
    """Whether the vectorized module has a K*W-lane clone of ``name``."""
    module = _PROGRAMS[True].translation().module
    return any(f".{name}." in fn.name and ".wfv.x" in fn.name for fn in module.functions)


@pytest.fixture(scope="module")
def native_width() -> int:
    from spirvjit.target import host_target

    return vectorize.width_for(host_target().features)


def test_which_kernels_interleave(monkeypatch, native_width):
    """K*W: 32 lanes, fewer where the loops' varying phis would fill the vector registers
    (hash_cols: two 32-bit accumulators and a pointer induction -> 16 lanes on AVX2)."""
    for name in INTERLEAVED:
        note = _note(monkeypatch, name)
        assert note.startswith("vectorized"), (name, note)
        if native_width < 32:
            assert " at a time" in note and _wide(name), (name, note)
            lanes = int(note.split(" at a time")[0].split()[-1])
            assert lanes % native_width == 0 and native_width < lanes <= 32, (name, note)
    for name in NOT_INTERLEAVED:
        note = _note(monkeypatch, name)
        assert note.startswith("vectorized") and "at a time" not in note, (name, note)
        assert not _wide(name), name


# Local sizes: one 32-chunk plus W-chunks and a scalar rest, no 32-chunk at all, several
# 32-chunks, and the launcher's choice; global sizes past the guard (j < m).
LOCALS = [(60,), (16,), (100,), None]


@pytest.mark.parametrize("local", LOCALS)
def test_covariance_and_correlation_columns(monkeypatch, local):
    rng = np.random.default_rng(1)
    n, m = 37, 190
    data = rng.random((n, m), dtype=np.float32)
    glob = 200 if local is None else -(-m // local[0]) * local[0]

    def args():
        return [np.full(m, np.nan, np.float32), data, np.float32(n), np.int32(m), np.int32(n)]

    mean, _ = _both(monkeypatch, "mean_cols", args, global_size=glob, local_size=local)
    np.testing.assert_allclose(mean, data.astype(np.float64).mean(axis=0), rtol=1e-5)

    def args2():
        return [data, mean, np.zeros(m, np.float32), np.int32(m), np.int32(n)]

    _, _, std = _both(monkeypatch, "std_cols", args2, global_size=glob, local_size=local)
    np.testing.assert_allclose(std, data.astype(np.float64).std(axis=0), rtol=1e-4)


@pytest.mark.parametrize("local", LOCALS)
def test_atax_columns(monkeypatch, local):
    rng = np.random.default_rng(2)
    nx, ny = 29, 131
    a = rng.standard_normal((nx, ny)).astype(np.float32)
    t = rng.standard_normal(nx).astype(np.float32)
    glob = 160 if local is None else -(-ny // local[0]) * local[0]

    def args():
        return [a, t, np.zeros(ny, np.float32), np.int32(nx), np.int32(ny)]

    _, _, y = _both(monkeypatch, "atax_cols", args, global_size=glob, local_size=local)
    np.testing.assert_allclose(y, a.T.astype(np.float64) @ t, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("local", [(48, 2), (8, 4), (36, 1), None])
def test_gemm_alpha_beta(monkeypatch, local):
    rng = np.random.default_rng(3)
    ni, nj, nk = 9, 70, 23
    a = rng.standard_normal((ni, nk)).astype(np.float32)
    b = rng.standard_normal((nk, nj)).astype(np.float32)
    c = rng.standard_normal((ni, nj)).astype(np.float32)
    glob = (96, 10) if local is None else (-(-nj // local[0]) * local[0], 12)

    def args():
        return [a, b, c.copy(), np.float32(1.5), np.float32(-0.5), *map(np.int32, (ni, nj, nk))]

    _, _, got = _both(monkeypatch, "gemm_ab", args, global_size=glob, local_size=local)
    want = 1.5 * (a.astype(np.float64) @ b) - 0.5 * c
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("local", [(40,), (64,), (8,)])
def test_integer_columns_bit_exact(monkeypatch, local):
    rng = np.random.default_rng(4)
    rows, cols = 21, 320
    data = rng.integers(0, 2**32, (rows, cols), dtype=np.uint32)

    def args():
        return [data, np.zeros(cols, np.uint32), np.zeros(cols, np.uint32)]

    _, h, top = _both(
        monkeypatch, "hash_cols", lambda: [*args(), np.uint32(rows), np.uint32(cols)],
        global_size=cols, local_size=local,
    )  # fmt: skip
    want = np.full(cols, 2166136261, np.uint64)
    for i in range(rows):
        want = ((want ^ data[i]) * 16777619) & 0xFFFFFFFF
    np.testing.assert_array_equal(h, want.astype(np.uint32))
    np.testing.assert_array_equal(top, data.max(axis=0))


def test_double_columns(monkeypatch):
    rng = np.random.default_rng(5)
    rows, cols = 33, 96
    data = rng.standard_normal((rows, cols))

    def args():
        return [data, np.zeros(cols), np.int32(rows), np.int32(cols)]

    _, out = _both(monkeypatch, "dsum_cols", args, global_size=cols, local_size=(48,))
    want = np.zeros(cols)
    for i in range(rows):  # in the kernel's order: the same bits
        want = want + data[i]
    np.testing.assert_array_equal(out, want)


def test_kernels_left_at_w_lanes_still_agree(monkeypatch):
    rng = np.random.default_rng(6)
    rows, cols = 40, 24
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    x = rng.standard_normal(cols).astype(np.float32)
    _, _, y = _both(
        monkeypatch, "row_dot", lambda: [a, x, np.zeros(rows, np.float32), np.int32(cols)],
        global_size=rows, local_size=(40,),
    )  # fmt: skip
    np.testing.assert_allclose(y, a.astype(np.float64) @ x, rtol=1e-4, atol=1e-5)
    small = (a[:, :cols] * 0.1).astype(np.float32)
    _both(
        monkeypatch, "exp_cols", lambda: [small, np.zeros(cols, np.float32), np.int32(rows),
                                          np.int32(cols)],
        global_size=cols, local_size=(24,),
    )  # fmt: skip
    lengths = rng.integers(0, rows, cols).astype(np.int32)
    _, _, out = _both(
        monkeypatch, "ragged_cols", lambda: [a, lengths, np.zeros(cols, np.float32),
                                             np.int32(cols)],
        global_size=cols, local_size=(24,),
    )  # fmt: skip
    want = [a[: lengths[j], j].astype(np.float64).sum() for j in range(cols)]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_column_walk_steps_one_scalar_pointer(monkeypatch, tmp_path):
    """In the optimized code the loop that adds a column chunk per row carries lane 0's
    address as a scalar (``_Vectorizer._lane0_pointer``): no vector of pointers stepped
    along beside it (before: eight <4 x i64> adds per row at 32 lanes, for the gather path
    that the loop LLVM unswitches on the pointer check never takes)."""
    import re

    monkeypatch.setenv("SPIRVJIT_DUMP", str(tmp_path))
    monkeypatch.setenv("SPIRVJIT_WFV", "loops")
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    program = spirvjit.compile_opencl(SOURCE)
    rng = np.random.default_rng(7)
    nx, ny = 12, 64
    a = rng.standard_normal((nx, ny)).astype(np.float32)
    t = rng.standard_normal(nx).astype(np.float32)
    y = np.zeros(ny, np.float32)
    program.kernel("atax_cols")(a, t, y, np.int32(nx), np.int32(ny), global_size=ny)
    np.testing.assert_allclose(y, a.T.astype(np.float64) @ t, rtol=1e-4, atol=1e-4)
    (dump,) = [p for p in tmp_path.glob("atax_cols*.opt.ll")]
    blocks = re.split(r"\n(?=[\w.\"]+:)", dump.read_text())
    # The loops whose column loads are plain vector loads (the other copy, for when the
    # check fails, gathers from its vector of pointers).
    hot = [blk for blk in blocks if re.search(r"load <\d+ x float>", blk) and "phi" in blk]
    assert hot, "no plain vector loop"
    for block in hot:
        assert not re.search(r"x ptr>|<\d+ x i64>", block), block
