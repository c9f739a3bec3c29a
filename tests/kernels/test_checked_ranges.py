"""Checked mode's hoisted range checks (translate/checks.py): an access whose index is an
affine function of the work-item ids (through loop counters and pointer inductions) is
checked once per work-group; a group whose range check fails runs the per-item checks,
so a violation is reported exactly as before: the first violating work-item, the
argument, the element index, the array's size."""

from __future__ import annotations

import numpy as np
import pytest

import spirvjit

KERNELS = r"""
__kernel void copy_shifted(__global const float *a, __global float *b, int n) {
    int i = get_global_id(0);
    b[i + n] = a[i];
}
// A zero extension after a subtraction that wraps for i < n: the index is 2^32 + i
// there, although i - n + n = i in 64-bit arithmetic.
__kernel void wrapped(__global float *out, uint n) {
    uint i = get_global_id(0);
    out[(ulong)(i - n) + n] = 1.0f;
}
// A 32-bit product that overflows: only the kernel's own arithmetic is trusted.
__kernel void overflow(__global float *out, int m) {
    int i = get_global_id(0);
    out[i * m] = 1.0f;
}
// Row sums: a pointer induction with a trip count from an argument.
__kernel void row_sums(__global const float *a, __global float *sums, int cols) {
    int r = get_global_id(0);
    __global const float *row = a + (size_t)r * cols;
    float s = 0.0f;
    for (int j = 0; j < cols; j++)
        s += row[j];
    sums[r] = s;
}
// Tiles in local memory with a strided loop counter (the SGEMM shape).
__kernel void tiled(__global const float *a, __global float *out, int n) {
    __local float tile[16];
    int l = get_local_id(0), g = get_global_id(0);
    float s = 0.0f;
    for (int t = 0; t < n; t += 16) {
        tile[l] = a[t + l];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < 16; k++)
            s += tile[k];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    out[g] = s;
}
"""


@pytest.fixture(scope="module")
def prog():
    return spirvjit.compile_opencl(KERNELS)


def _error(call) -> str:
    with pytest.raises(spirvjit.LaunchError) as info:
        call()
    return str(info.value)


def test_violation_in_one_group_names_its_first_violating_work_item(prog):
    # 4 groups of 16: the first three pass their range check (no per-item checks), the
    # last one fails it and reports its first violating item, 60.
    memory = np.full(64, -1.0, np.float32)
    b, neighbour = memory[:60], memory[60:]
    a = np.arange(64, dtype=np.float32)
    message = _error(lambda: prog.copy_shifted(a, b, 0, global_size=64, local_size=16, check=True))
    assert (
        "out-of-bounds write of 4 bytes by work-item global id (60, 0, 0), local id (12, 0, 0): "
        "argument 1 'b', element index 60 (byte offset 240), the array has 60 elements "
        "(240 bytes)"
    ) in message
    np.testing.assert_array_equal(b, a[:60])  # the in-bounds items all ran
    assert (neighbour == -1.0).all()
    # Negative shift: the first group fails (item 0 reads b[-2]); the others do not.
    message = _error(
        lambda: prog.copy_shifted(a[:60], b, -2, global_size=60, local_size=12, check=True)
    )
    assert "global id (0, 0, 0), local id (0, 0, 0): argument 1 'b', element index -2" in message


def test_in_bounds_launches_give_the_unchecked_results(prog):
    a = np.arange(64, dtype=np.float32)
    b = np.zeros(64, np.float32)
    prog.copy_shifted(a, b, 0, global_size=64, local_size=16, check=True)
    np.testing.assert_array_equal(b, a)
    rng = np.random.default_rng(15)
    m = rng.random((37, 29), dtype=np.float32)
    sums = np.zeros(37, np.float32)
    prog.row_sums(m, sums, 29, global_size=37, check=True)
    np.testing.assert_allclose(sums, m.sum(axis=1), rtol=1e-5)
    out = np.zeros(32, np.float32)
    x = rng.random(64, dtype=np.float32)
    prog.tiled(x, out, 64, global_size=32, local_size=16, check=True)
    np.testing.assert_allclose(out, np.full(32, x.reshape(4, 16).sum()), rtol=1e-5)


def test_wrapping_index_arithmetic_is_not_trusted(prog):
    # In 64-bit arithmetic the index is i (in bounds); the kernel's is 2^32 + i for i < n.
    out = np.zeros(8, np.float32)
    message = _error(lambda: prog.wrapped(out, 2, global_size=8, check=True))
    assert "global id (0, 0, 0)" in message
    assert f"element index {2**32}" in message
    prog.wrapped(out, 0, global_size=8, check=True)  # n = 0: no wrap, in bounds
    assert (out == 1.0).all()


def test_overflowing_product_is_reported(prog):
    # i * m wraps for i >= 2 (2^30 * 2 = -2^31): the kernel writes out[-2^31].
    out = np.zeros(4, np.float32)
    message = _error(lambda: prog.overflow(out, 2**30, global_size=4, check=True))
    assert "global id (1, 0, 0)" in message  # 2^30: past the end already
    assert f"element index {2**30}" in message


def test_row_pointer_induction_past_the_end(prog):
    # cols too large for the last rows: reported at the first row that reaches past.
    m = np.zeros((4, 8), np.float32)
    sums = np.zeros(4, np.float32)
    message = _error(lambda: prog.row_sums(m, sums, 10, global_size=4, check=True))
    # The per-item check of a pointer induction (a phi) knows no origin: the report
    # names the nearest array, as before hoisting.
    assert "out-of-bounds read of 4 bytes" in message
    assert "global id (3, 0, 0)" in message  # row 3 starts at 30 and reaches 32
    assert "(nearest: argument 0, element index 32 of 32)" in message


def test_strided_tile_loop_reads_past_the_input(prog):
    # n = 40: the last tile (t = 32) reads a[32 + l] for l up to 15, past a's 40 (t is
    # a loop phi: the per-item report names the nearest array, as before hoisting).
    x = np.ones(40, np.float32)
    out = np.zeros(16, np.float32)
    message = _error(lambda: prog.tiled(x, out, 40, global_size=16, local_size=16, check=True))
    assert "global id (8, 0, 0), local id (8, 0, 0)" in message
    assert "(nearest: argument 0, element index 40 of 40)" in message


def test_checked_code_vectorizes_where_the_unchecked_code_does(tmp_path, monkeypatch):
    # The point of hoisting: no per-item branch is left in the group's loop, so the loop
    # vectorizer handles the checked kernel as it does the unchecked one.
    source = KERNELS.split("// A zero extension")[0].replace("copy_shifted", "copy_vec")
    monkeypatch.setenv("SPIRVJIT_DUMP", str(tmp_path))
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    p = spirvjit.compile_opencl(source)
    a, b = np.ones(1024, np.float32), np.zeros(1024, np.float32)
    p.copy_vec(a, b, 0, global_size=1024, local_size=64)
    p.copy_vec(a, b, 0, global_size=1024, local_size=64, check=True)
    plain = next(f for f in tmp_path.glob("copy_vec.*.opt.ll") if "check" not in f.name)
    checked = next(tmp_path.glob("copy_vec.*check-1.opt.ll"))
    assert "x float>" in plain.read_text()  # the unchecked loop is vectorized
    assert "x float>" in checked.read_text()
    assert ".chk.ranges" in next(tmp_path.glob("copy_vec.*check-1.ll")).read_text()
