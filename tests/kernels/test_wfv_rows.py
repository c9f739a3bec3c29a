"""Blocks of y rows in the CPU back end (backends/cpu/yjam.py; abi.py ``_emit_rows``;
issue 19).

A kernel whose loop loads an element that does not depend on the y id (``b[k*n + j]`` in
gemm_naive's k loop) gets a clone that runs R consecutive y rows of the same x work-items
together: the load is done once for the R rows, everything that depends on the y id R
times. The work-group function runs it, vectorized across x, on blocks of R rows inside
the group (and inside the y guards' range); the other rows and the x items outside the
vector chunks run as before. The launcher's own local size gives y up to R rows.

Each kernel (public-sample shapes: the suite's gemm_naive, PolyBench-style gemm and
2-D convolution, a matrix-vector product per row block) runs with the vectorizer on and
off and must give the same bits (each work-item's operations are the same, in the same
order), and matches a NumPy reference. Kernels the clone must not take (a store that
reaches a shared load, a branch on the y id, no shared load) keep the plain path, with
the reason in ``rows_note``."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from harness import program_with_vectorizer, vector_and_scalar_arrays

import spirvjit
from spirvjit.backends.cpu import yjam
from spirvjit.ndrange import choose_local_size

SOURCE = r"""
/* the benchmark suite's gemm_naive: C = A B, n x n, guarded */
kernel void gemm_naive(global const float *a, global const float *b, global float *c, int n)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (j >= n || i >= n)
        return;
    float sum = 0.0f;
    for (int k = 0; k < n; k++)
        sum += a[i * n + k] * b[k * n + j];
    c[i * n + j] = sum;
}

/* non-square, no guard: C (ni x nj) = A (ni x nk) B (nk x nj) */
kernel void gemm_rect(global const float *a, global const float *b, global float *c, int nj,
                      int nk)
{
    int j = get_global_id(0), i = get_global_id(1);
    float sum = 0.0f;
    for (int k = 0; k < nk; k++)
        sum += a[i * nk + k] * b[k * nj + j];
    c[i * nj + j] = sum;
}

/* an A index that depends on x too (a skewed row): not uniform across x or y */
kernel void gemm_skew(global const float *a, global const float *b, global float *c, int n)
{
    int j = get_global_id(0), i = get_global_id(1);
    if (i < n && j < n) {
        float sum = 0.0f;
        for (int k = 0; k < n; k++)
            sum += a[i * n + (k + j) % n] * b[k * n + j];
        c[i * n + j] = sum;
    }
}

/* unsigned integers, wrapping: bit-exact; the local y id of each row */
kernel void igemm(global const uint *a, global const uint *b, global uint *c, int ni, int nj,
                  int nk)
{
    int j = get_global_id(0), i = get_global_id(1);
    if (j < nj && i < ni) {
        uint sum = 0;
        for (int k = 0; k < nk; k++)
            sum += a[i * nk + k] * b[k * nj + j];
        c[i * nj + j] = sum ^ (uint)get_local_id(1);
    }
}

/* 2-D convolution (PolyBench conv2d shape, a K x K filter): the filter is shared */
kernel void conv2d(global const float *in, global const float *f, global float *out, int w,
                   int kk)
{
    int x = get_global_id(0), y = get_global_id(1);
    float s = 0.0f;
    for (int ky = 0; ky < kk; ky++)
        for (int kx = 0; kx < kk; kx++)
            s += in[(y + ky) * (w + kk - 1) + x + kx] * f[ky * kk + kx];
    out[y * w + x] = s;
}

/* declined: the store inside the loop can reach the next iteration's shared load */
kernel void gemm_accumulate(global const float *a, global const float *b, global float *c,
                            int n)
{
    int j = get_global_id(0), i = get_global_id(1);
    c[i * n + j] = 0.0f;
    for (int k = 0; k < n; k++)
        c[i * n + j] += a[i * n + k] * b[k * n + j];
}

/* declined: a loop whose trip count depends on the y id (a triangular product) */
kernel void trmm_rows(global const float *a, global const float *b, global float *c, int n)
{
    int j = get_global_id(0), i = get_global_id(1);
    float sum = 0.0f;
    for (int k = 0; k <= i; k++)
        sum += a[i * n + k] * b[k * n + j];
    c[i * n + j] = sum;
}

/* declined: every load depends on the y id (nothing to share) */
kernel void add_rows(global const float *a, global float *c, int n, int m)
{
    int j = get_global_id(0), i = get_global_id(1);
    float s = 0.0f;
    for (int k = 0; k < m; k++)
        s += a[(i + k) * n + j];
    c[i * n + j] = s;
}
"""

_PROGRAMS: dict[bool, spirvjit.Program] = {}
JAMMED = ("gemm_naive", "gemm_rect", "gemm_skew", "igemm", "conv2d")
DECLINED = {
    "gemm_accumulate": "a store may reach a load the y rows share",
    "trmm_rows": "a branch on a value that depends on the y id",
    "add_rows": "no load in a loop that the y rows share",
}


def _build(monkeypatch, enabled: bool) -> spirvjit.Program:
    return program_with_vectorizer(monkeypatch, _PROGRAMS, SOURCE, enabled, "loops")


def _both(monkeypatch, name, make_args, **launch):
    """The kernel's arrays after a launch with the vectorizer on, checked bit for bit
    against a launch with it off (harness.vector_and_scalar_arrays)."""
    return vector_and_scalar_arrays(
        lambda on: _build(monkeypatch, on), name, make_args, bitwise=True, **launch
    )


def _note(monkeypatch, name: str) -> str:
    kernel = _build(monkeypatch, True).translation().kernel_functions[name]
    return getattr(kernel, "rows_note", "")


def test_which_kernels_take_blocks_of_rows(monkeypatch):
    for name in JAMMED:
        note = _note(monkeypatch, name)
        assert note.startswith(f"{yjam.ROWS} y rows at a time"), (name, note)
    module = _PROGRAMS[True].translation().module
    for name in JAMMED:
        assert any(f".{name}." in fn.name and ".rows" in fn.name for fn in module.functions)
    for name, reason in DECLINED.items():
        assert _note(monkeypatch, name) == f"no y-row blocking: {reason}", name
        assert not any(f".{name}." in fn.name and ".rows4" in fn.name for fn in module.functions)


def test_the_reason_is_in_the_debug_log(monkeypatch, caplog):
    monkeypatch.setenv("SPIRVJIT_DEBUG", "1")
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    monkeypatch.setenv("SPIRVJIT_WFV", "loops")
    with caplog.at_level(logging.DEBUG, logger="spirvjit"):
        spirvjit.compile_opencl(SOURCE).translation()
    text = caplog.text
    assert f"{yjam.ROWS} y rows at a time" in text
    assert "no y-row blocking: a store may reach a load the y rows share" in text


def _gemm_data(ni, nj, nk, seed=1):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((ni, nk)).astype(np.float32)
    b = rng.standard_normal((nk, nj)).astype(np.float32)
    return a, b


# Global sizes past the guard, n not a multiple of R (4) or W (8), local sizes with a y
# extent that is a multiple of R, one that is not (blocks and single rows), one below R
# (no block), and the launcher's choice.
@pytest.mark.parametrize(
    "n, glob, local",
    [
        (61, (64, 64), (32, 8)),
        (61, (64, 66), (16, 6)),
        (37, (40, 40), (40, 2)),
        (50, (50, 50), None),
    ],
)
def test_gemm_naive(monkeypatch, n, glob, local):
    a, b = _gemm_data(n, n, n)

    def args():
        return [a, b, np.full((n, n), np.nan, np.float32), np.int32(n)]

    _, _, c = _both(monkeypatch, "gemm_naive", args, global_size=glob, local_size=local)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_the_launcher_gives_y_rows():
    assert choose_local_size((1024, 1024, 1), 2, yjam.ROWS) == (256, yjam.ROWS, 1)
    assert choose_local_size((1024, 1024, 1), 2) == (256, 1, 1)
    assert choose_local_size((1024, 1, 1), 1, yjam.ROWS) == (256, 1, 1)


@pytest.mark.parametrize("local", [(24, 4), (8, 12), (40, 5), None])
def test_gemm_non_square(monkeypatch, local):
    ni, nj, nk = 20, 120, 33
    a, b = _gemm_data(ni, nj, nk, 2)

    def args():
        return [a, b, np.zeros((ni, nj), np.float32), np.int32(nj), np.int32(nk)]

    _, _, c = _both(monkeypatch, "gemm_rect", args, global_size=(nj, ni), local_size=local)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_an_index_that_depends_on_x(monkeypatch):
    n = 45
    a, b = _gemm_data(n, n, n, 3)

    def args():
        return [a, b, np.zeros((n, n), np.float32), np.int32(n)]

    _, _, c = _both(monkeypatch, "gemm_skew", args, global_size=(48, 48), local_size=(16, 8))
    k = np.arange(n)
    want = np.array(
        [[a[i, (k + j) % n].astype(np.float64) @ b[:, j] for j in range(n)] for i in range(n)]
    )
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("local", [(16, 4), (8, 7), None])
def test_integer_gemm_bit_exact(monkeypatch, local):
    ni, nj, nk = 13, 70, 29
    rng = np.random.default_rng(4)
    a = rng.integers(0, 2**32, (ni, nk), dtype=np.uint32)
    b = rng.integers(0, 2**32, (nk, nj), dtype=np.uint32)
    glob = (72, 16) if local != (8, 7) else (72, 14)
    if local is None:  # groups enough for every pool thread: the launcher gives y 16 rows
        from spirvjit.backends.cpu import launcher

        glob = (72, yjam.GROUP_ROWS * launcher.GROUPS_PER_THREAD * launcher.thread_pool().threads)

    def args():
        return [a, b, np.zeros((ni, nj), np.uint32), *map(np.int32, (ni, nj, nk))]

    _, _, c = _both(monkeypatch, "igemm", args, global_size=glob, local_size=local)
    ly = 16 if local is None else local[1]  # the launcher's choice: y gets 16 rows
    want = (a.astype(np.uint64) @ b.astype(np.uint64)).astype(np.uint32)  # modulo 2^64
    want ^= (np.arange(ni) % ly)[:, None].astype(np.uint32)
    np.testing.assert_array_equal(c, want)


@pytest.mark.parametrize("local", [(32, 4), None])
def test_conv2d(monkeypatch, local):
    h, w, kk = 22, 64, 3
    rng = np.random.default_rng(5)
    img = rng.standard_normal((h + kk - 1, w + kk - 1)).astype(np.float32)
    f = rng.standard_normal((kk, kk)).astype(np.float32)

    def args():
        return [img, f, np.zeros((h, w), np.float32), np.int32(w), np.int32(kk)]

    _, _, out = _both(monkeypatch, "conv2d", args, global_size=(w, h), local_size=local)
    want = sum(
        img[ky : ky + h, kx : kx + w].astype(np.float64) * f[ky, kx]
        for ky in range(kk)
        for kx in range(kk)
    )
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_declined_kernels_still_right(monkeypatch):
    n = 36
    a, b = _gemm_data(n, n, n, 6)
    want = a.astype(np.float64) @ b

    def args():
        return [a, b, np.zeros((n, n), np.float32), np.int32(n)]

    _, _, c = _both(monkeypatch, "gemm_accumulate", args, global_size=(n, n), local_size=(12, 6))
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)
    _, _, c = _both(monkeypatch, "trmm_rows", args, global_size=(n, n), local_size=(12, 6))
    np.testing.assert_allclose(c, np.tril(a.astype(np.float64)) @ b, rtol=1e-4, atol=1e-4)


def test_dis_names_the_outcome(monkeypatch, tmp_path, capsys):
    from spirvjit.cli import main

    monkeypatch.setenv("SPIRVJIT_WFV", "loops")
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    path = tmp_path / "k.spv"
    path.write_bytes(_build(monkeypatch, True).spirv)
    assert main(["dis", str(path), "--target", "host"]) == 0
    out = capsys.readouterr().out
    assert f"; {yjam.ROWS} y rows at a time (" in out
    assert "; no y-row blocking: a branch on a value that depends on the y id" in out


SHAPES = r"""
kernel void looped(global int *o, global const int *in, int n)
{
    int s = 0;
    for (int k = 0; k < n; k++)
        s += in[k];
    o[get_global_id(1) * get_global_size(0) + get_global_id(0)] = s + 1000 * get_local_size(1);
}
kernel void flat(global int *o)
{
    o[get_global_id(1) * get_global_size(0) + get_global_id(0)] = get_local_size(1);
}
"""


def test_rows_only_for_kernels_with_loops(monkeypatch):
    """The launcher's own local size gives y R rows where the kernel has a loop (read
    from the SPIR-V: yjam.rows_hint), and keeps (256, 1) for a loop-free kernel."""
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    program = spirvjit.compile_opencl(SHAPES)
    assert yjam.rows_hint(program.module, "looped") == yjam.GROUP_ROWS
    assert yjam.rows_hint(program.module, "flat") == 1
    out = np.zeros((256, 1024), np.int32)
    program.kernel("looped")(
        out, np.arange(5, dtype=np.int32), np.int32(5), global_size=(1024, 256)
    )
    assert (out == 10 + 1000 * yjam.GROUP_ROWS).all()
    program.kernel("flat")(out, global_size=(1024, 256))
    assert (out == 1).all()


def test_fewer_rows_where_the_groups_would_leave_threads_idle(monkeypatch):
    """A small launch keeps GROUPS_PER_THREAD groups per pool thread: its blocks have
    fewer rows (before: (256, 16) for every launch, one group for 256 x 16 items)."""
    from spirvjit.backends.cpu import launcher

    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    kernel = spirvjit.compile_opencl(SHAPES).kernel("looped")
    threads = launcher.thread_pool().threads
    for height in (16, 64, 256):
        out = np.zeros((height, 256), np.int32)
        kernel(out, np.arange(5, dtype=np.int32), np.int32(5), global_size=(256, height))
        rows = int(out[0, 0] - 10) // 1000
        assert (out == 10 + 1000 * rows).all()
        groups = height // rows
        # as many rows as the groups allow, down to one
        assert rows == 1 or groups >= launcher.GROUPS_PER_THREAD * threads, (height, rows)
        assert rows == yjam.GROUP_ROWS or groups < 2 * launcher.GROUPS_PER_THREAD * threads
