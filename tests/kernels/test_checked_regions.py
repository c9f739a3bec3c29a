"""Checked mode in barrier kernels: the divergent-barrier check runs once per region over
the group's work-items, and a region that begins with the group's local memory all written
skips its unset-read checks, so that the region's loop has no branch per work-item and
vectorizes as the unchecked one does; the reports stay those of per-item checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import spirvjit

ROOT = Path(__file__).resolve().parents[2]

KERNELS = r"""
// Work-item 2 waits at another barrier than 0 and 1; work-item 4 (later, same region)
// writes out[16], past the end of a 16-element array.
__kernel void diverge_then_overflow(__global int *out) {
    int l = get_local_id(0);
    if (l == 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
    } else {
        out[l * 4] = l;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    out[l] = 0;
}
// Work-item 1 writes out[16] before work-item 2 diverges.
__kernel void overflow_then_diverge(__global int *out) {
    int l = get_local_id(0);
    if (l == 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
    } else {
        out[l * 16] = l;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    out[l] = 0;
}
// The whole tile is written before the barrier (the region after it begins with the local
// memory all written), unless work-item ``skip`` skips its element.
__kernel void tile_rounds(__global const float *x, __global float *out, int skip) {
    __local float tile[8];
    int l = get_local_id(0);
    if (l != skip)
        tile[l] = x[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    float s = tile[7 - l];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = s;
}
"""


@pytest.fixture(scope="module")
def prog():
    return spirvjit.compile_opencl(KERNELS)


def _error(call) -> str:
    with pytest.raises(spirvjit.LaunchError) as info:
        call()
    return str(info.value)


def test_divergent_barrier_before_a_later_items_overflow_is_reported(prog):
    out = np.zeros(16, np.int32)
    message = _error(
        lambda: prog.diverge_then_overflow(out, global_size=8, local_size=8, check=True)
    )
    assert "divergent barrier" in message
    assert "global id (2, 0, 0), local id (2, 0, 0)" in message


def test_an_earlier_items_overflow_is_reported_before_a_divergent_barrier(prog):
    out = np.zeros(16, np.int32)
    message = _error(
        lambda: prog.overflow_then_diverge(out, global_size=8, local_size=8, check=True)
    )
    assert "out-of-bounds" in message
    assert "global id (1, 0, 0), local id (1, 0, 0)" in message
    assert "element index 16" in message


def test_divergence_in_a_later_group_names_its_work_item(prog):
    out = np.zeros(64, np.int32)
    # 64 elements: no overflow; the divergence is found in group 0 first.
    message = _error(
        lambda: prog.diverge_then_overflow(out, global_size=16, local_size=8, check=True)
    )
    assert "divergent barrier" in message
    assert "local id (2, 0, 0)" in message


def test_tile_read_after_a_full_write_is_not_flagged(prog):
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    prog.tile_rounds(x, out, -1, global_size=16, local_size=8, check=True)
    want = x.reshape(2, 8)[:, ::-1].ravel()
    np.testing.assert_array_equal(out, want)


def test_tile_read_after_a_partial_write_is_reported(prog):
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    message = _error(lambda: prog.tile_rounds(x, out, 3, global_size=16, local_size=8, check=True))
    assert "read of __local memory never written" in message
    assert "global id (4, 0, 0), local id (4, 0, 0)" in message  # reads tile[3]
    assert "element index 3" in message


def test_checked_sgemm_inner_loop_vectorizes_like_the_unchecked_one(tmp_path, monkeypatch):
    # Failed before: a branch per work-item (the divergent-barrier check and the unset-read
    # check of each tile load) kept the checked copy's work-item loop scalar.
    monkeypatch.setenv("SPIRVJIT_DUMP", str(tmp_path))
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    p = spirvjit.compile_opencl((ROOT / "benchmarks/kernels/sgemm.cl").read_text())
    n = 32
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    c = np.zeros((n, n), np.float32)
    p.sgemm(a, b, c, np.int32(n), global_size=(n, n), local_size=(16, 16))
    p.sgemm(a, b, c, np.int32(n), global_size=(n, n), local_size=(16, 16), check=True)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    plain = next(f for f in tmp_path.glob("sgemm.*.opt.ll") if "check" not in f.name)
    checked = next(tmp_path.glob("sgemm.*check-1.opt.ll"))
    assert "x float>" in plain.read_text()
    assert "x float>" in checked.read_text()
