"""Checked mode and whole-function vectorization (backends/cpu/vectorize.py): a group
whose hoisted bounds checks held runs the vector body, which has no checks left; the
other groups run the per-item checked loop. Results equal unchecked mode's bit for bit and
every violation is reported as with the vectorizer off (SPIRVJIT_WFV=0)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import spirvjit

ROOT = Path(__file__).resolve().parents[2]
_VECTOR_CALL = re.compile(r'call void @"[^"]*\.wfv"')


def _source(name: str) -> str:
    for folder in ("benchmarks/kernels", "examples/kernels"):
        path = ROOT / folder / f"{name}.cl"
        if path.exists():
            return path.read_text()
    raise FileNotFoundError(name)


def _launch(name: str):
    """(arguments, outputs, global size, local size) of a small launch of a benchmark
    kernel, on fixed random data."""
    rng = np.random.default_rng(15)
    if name == "gemm_naive":
        n = 40  # not a multiple of the vector width: the remainder runs scalar
        a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        c = np.zeros((n, n), np.float32)
        return [a, b, c, np.int32(n)], [c], (n, n), (20, 4)
    if name == "colmean":
        rows, cols = 37, 100
        data = rng.uniform(-1, 1, (rows, cols)).astype(np.float32)
        mean = np.zeros(cols, np.float32)
        return [data, mean, np.int32(rows), np.int32(cols)], [mean], (112,), (16,)
    n = 48
    out = np.zeros((n, n), np.int32)
    view = [np.float32(-2.0), np.float32(-1.25), np.float32(3.0 / n), np.float32(2.5 / n)]
    return [out, *view, np.int32(64)], [out], (n, n), (16, 4)


@pytest.mark.parametrize("name", ["gemm_naive", "colmean", "mandelbrot"])
def test_checked_build_runs_the_vector_body_with_unchecked_results(name, tmp_path, monkeypatch):
    # Failed before: checked builds never used the vectorizer (5-7x slower than unchecked
    # on these kernels, benchmarks/checked_overhead.py).
    monkeypatch.setenv("SPIRVJIT_DUMP", str(tmp_path))
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    monkeypatch.delenv("SPIRVJIT_WFV", raising=False)
    prog = spirvjit.compile_opencl(_source(name))
    results = []
    for check in (False, True):
        args, outputs, global_size, local_size = _launch(name)
        prog.kernel(name)(*args, global_size=global_size, local_size=local_size, check=check)
        results.append(outputs)
    for plain, checked in zip(*results, strict=True):
        assert plain.tobytes() == checked.tobytes()
    checked_ir = next(tmp_path.glob(f"{name}.*check-1.ll")).read_text()
    assert _VECTOR_CALL.search(checked_ir), "the checked build does not call the vector body"


def _report(monkeypatch, wfv: str, source: str, name: str, args, **launch) -> str:
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    monkeypatch.setenv("SPIRVJIT_WFV", wfv)
    prog = spirvjit.compile_opencl(source)
    with pytest.raises(spirvjit.LaunchError) as info:
        prog.kernel(name)(*[a.copy() if isinstance(a, np.ndarray) else a for a in args], **launch)
    return str(info.value)


def test_overflow_in_the_last_group_is_reported_as_without_the_vectorizer(monkeypatch):
    # Every group but the last holds its range (the vector body runs there); the last
    # group's last work-item writes one element past c.
    n = 24
    a = np.ones((n, n), np.float32)
    c = np.zeros(n * n - 1, np.float32)
    args = [a, a, c, np.int32(n)]
    launch = dict(global_size=(n, n), local_size=(8, 8), check=True)
    source = _source("gemm_naive")
    vector = _report(monkeypatch, "loops", source, "gemm_naive", args, **launch)
    scalar = _report(monkeypatch, "0", source, "gemm_naive", args, **launch)
    assert vector == scalar
    assert "out-of-bounds write of 4 bytes by work-item global id (23, 23, 0)" in vector
    assert "argument 2 'c', element index 575" in vector


def test_read_past_the_rows_is_reported_as_without_the_vectorizer(monkeypatch):
    rows, cols = 6, 16
    data = np.ones((rows, cols), np.float32)
    mean = np.zeros(cols, np.float32)
    args = [data, mean, np.int32(rows + 1), np.int32(cols)]
    launch = dict(global_size=cols, local_size=cols, check=True)
    source = _source("colmean")
    vector = _report(monkeypatch, "loops", source, "colmean", args, **launch)
    scalar = _report(monkeypatch, "0", source, "colmean", args, **launch)
    assert vector == scalar
    assert "out-of-bounds read of 4 bytes by work-item global id (0, 0, 0)" in vector
    assert f"element index {rows * cols}" in vector


GATHER = r"""
// x[idx[...]]: an index loaded from memory, checked per work-item even where the group's
// hoisted checks (idx, out) held; such a kernel keeps the scalar checked loop.
kernel void gather_sum(global const int *idx, global const float *x, global float *out,
                       int m) {
    int i = get_global_id(0);
    float s = 0.0f;
    for (int k = 0; k < m; k++)
        s += x[idx[i * m + k]];
    out[i] = s;
}
"""


def test_access_checked_per_item_keeps_its_report(monkeypatch):
    m, items = 3, 32
    idx = (np.arange(items * m, dtype=np.int32) * 7) % 50
    idx[13 * m + 2] = 50  # work-item 13 reads x[50], one past the end
    x = np.arange(50, dtype=np.float32)
    out = np.zeros(items, np.float32)
    args = [idx, x, out, np.int32(m)]
    launch = dict(global_size=items, local_size=items, check=True)
    vector = _report(monkeypatch, "loops", GATHER, "gather_sum", args, **launch)
    scalar = _report(monkeypatch, "0", GATHER, "gather_sum", args, **launch)
    assert vector == scalar
    assert "global id (13, 0, 0)" in vector
    assert "argument 1 'x', element index 50" in vector
