"""Accesses the CPU vectorizer proves consecutive without a run-time check
(backends/cpu/vectorize.py, ``_Vectorizer._affine`` / ``_no_signed_wrap``; issue 19).

An index built from the x local id in 32-bit ``int`` arithmetic reaches the address as a
sign extension to 64 bits. The extension is consecutive across a chunk's lanes only when
the 32-bit value does not wrap between the first and the last lane: always for the local
id itself (below the work-group size, which the launcher caps far below 2**31), and for a
uniform offset plus the id when the IR marks the ``add`` ``nsw`` (signed overflow is
undefined in OpenCL C). Then the access is one plain vector load from a scalar pointer;
otherwise (no ``nsw``, a narrower type that wraps) it stays checked at run time with a
gather for the lanes that are not consecutive, and gives the scalar loop's answer.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import spirvjit

ROOT = Path(__file__).resolve().parents[2]
SGEMM = (ROOT / "benchmarks" / "kernels" / "sgemm.cl").read_text()

# clang's SPIR-V back end writes NoSignedWrap decorations only with this extension on
# (translate/ops_arith.py turns them into ``nsw``); the front end does not enable it by
# default, so the tests that need ``nsw`` in the IR ask for it.
NSW = [
    "-mllvm",
    "--spirv-ext=+SPV_EXT_shader_atomic_float_add,+SPV_EXT_shader_atomic_float_min_max,"
    "+SPV_KHR_no_integer_wrap_decoration",
]

# One read per work-item at ``off + lx`` of a row: signed (``add nsw``) and unsigned
# (``add`` that may wrap, then reinterpreted as int) index arithmetic, and a short that
# wraps inside the chunk (lanes 32767 -> -32768).
SHIFTED = r"""
kernel void signed_shift(global const float *src, global float *dst, int off)
{
    int lx = get_local_id(0);
    float acc = 0.0f;
    for (int r = 0; r < 2; r++)
        acc += src[off + lx] * (float)(r + 1);
    dst[get_global_id(0)] = acc;
}

kernel void unsigned_shift(global const float *src, global float *dst, int off)
{
    int lx = get_local_id(0);
    float acc = 0.0f;
    for (int r = 0; r < 2; r++)
        acc += src[(int)((uint)off + (uint)lx)] * (float)(r + 1);
    dst[get_global_id(0)] = acc;
}

kernel void short_wrap(global const float *src, global float *dst, int off)
{
    int lx = get_local_id(0);
    float acc = 0.0f;
    for (int r = 0; r < 2; r++)
        acc += src[(short)(off + lx) + 32768] * (float)(r + 1);
    dst[get_global_id(0)] = acc;
}
"""


def _program(monkeypatch, tmp_path, source: str, wfv: bool, options=()) -> spirvjit.Program:
    monkeypatch.setenv("SPIRVJIT_WFV", "all" if wfv else "0")
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    monkeypatch.setenv("SPIRVJIT_DUMP", str(tmp_path))
    program = spirvjit.compile_opencl(source, options=list(options))
    program.translation()  # now, under these settings
    return program


def _clone(text: str, kernel: str) -> str:
    """The body of ``kernel``'s vector clone in the (unoptimized) module dump."""
    match = re.search(rf'define internal void @"([^"]*{kernel}[^"]*\.wfv)"', text)
    assert match, f"no vector clone of {kernel}"
    body = text[match.start() :]
    return body[: body.index("\n}")]


def _dump(tmp_path: Path, optimized: bool) -> str:
    files = [p for p in tmp_path.glob("*.ll") if p.name.endswith(".opt.ll") == optimized]
    assert len(files) == 1, files
    return files[0].read_text()


def test_sgemm_b_tile_read_is_one_vector_load(monkeypatch, tmp_path):
    """``tb[k][lx]`` in the k loop: the index is ``sext(trunc(lx))``, which cannot wrap,
    so in the optimized code the FMA blocks load the tile with plain ``<W x float>``
    loads from scalar pointers: no vector of pointers, no gather (before: a pointer
    vector stepped by 64 bytes per k and a branch to a gather on every step)."""
    program = _program(monkeypatch, tmp_path, SGEMM, True)
    n = 32
    rng = np.random.default_rng(19)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    c = np.zeros((n, n), np.float32)
    program.kernel("sgemm")(a, b, c, np.int32(n), global_size=(n, n), local_size=(16, 16))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)

    blocks = re.split(r"\n(?=[\w.\"]+:)", _dump(tmp_path, optimized=True))
    fma_blocks = [blk for blk in blocks if re.search(r"@llvm\.fma\.v\d+f32", blk)]
    assert fma_blocks, "the k loop was not vectorized"
    loads = 0
    for block in fma_blocks:
        assert not re.search(r"x ptr>", block), block
        assert "masked.gather" not in block, block
        loads += len(re.findall(r"load <\d+ x float>, ptr", block))
    assert loads >= 16, "the B tile is not read with vector loads"


@pytest.mark.parametrize(
    ("kernel", "options", "proven"),
    [
        ("signed_shift", NSW, True),  # add nsw: no wrap, proven
        ("signed_shift", (), False),  # the same add without nsw in the IR: checked
        ("unsigned_shift", NSW, False),  # unsigned add: may wrap, checked
        ("short_wrap", NSW, False),  # wraps at 2**15 inside the chunk
    ],
)
def test_shifted_local_id_reads(monkeypatch, tmp_path, kernel, options, proven):
    size, local = 64, 32
    # short_wrap: off + lx runs 32752..32815, so (short) wraps to -32768 mid-group.
    off = 32752 if kernel == "short_wrap" else 5
    src = np.arange(70000, dtype=np.float32) * 0.5
    expected_index = off + np.arange(size) % local
    if kernel == "short_wrap":
        expected_index = (expected_index + 32768) % 65536
    expected = src[expected_index] * 3.0

    outputs = []
    for wfv in (True, False):
        program = _program(monkeypatch, tmp_path, SHIFTED, wfv, options)
        dst = np.full(size, np.nan, np.float32)
        program.kernel(kernel)(src, dst, np.int32(off), global_size=(size,), local_size=(local,))
        outputs.append(dst)
        if wfv:
            note = program.translation().kernel_functions[kernel].wfv_note
            assert note.startswith("vectorized across work-items"), note
            body = _clone(_dump(tmp_path, optimized=False), kernel)
            # A checked access: a gather for when the run-time test fails.
            assert ("masked.gather" not in body) == proven, body
            if proven:
                assert re.search(r"load <\d+ x float>, ptr", body), body
            for path in tmp_path.iterdir():
                path.unlink()
    np.testing.assert_array_equal(outputs[0], expected)
    np.testing.assert_array_equal(outputs[0].view(np.uint32), outputs[1].view(np.uint32))


# Grid-stride loops (a size_t counter from the global id, advanced by the global size):
# the counter is an induction whose entry value is affine, so x[i] is consecutive in every
# iteration by construction, with no per-iteration check of the W addresses.
GRID_STRIDE = r"""
kernel void grid_sum(global const float *x, global float *out, ulong n)
{
    float acc = 0.0f;
    for (size_t i = get_global_id(0); i < n; i += get_global_size(0))
        acc = acc * 0.75f + x[i];
    out[get_global_id(0)] = acc;
}

kernel void grid_scale(global const int *x, global int *y, int n, int k)
{
    for (size_t i = get_global_id(0); i < (size_t)n; i += get_global_size(0))
        y[i] = x[i] * k - (int)i;
}

/* a counter used after a loop that lanes leave at different iterations: its values there
   are each lane's last, not lane 0's + lane */
kernel void hop_then_store(global float *x, global const int *marks, ulong step)
{
    size_t i = get_global_id(0);
    do {
        i += step;
    } while (marks[i] == 0);
    x[i] = (float)get_global_id(0);
}
"""


@pytest.mark.parametrize("kernel", ["grid_sum", "grid_scale"])
def test_grid_stride_counter_is_consecutive_by_construction(monkeypatch, tmp_path, kernel):
    n, size, local = 1003, 96, 48  # lanes leave the loop at different iterations
    rng = np.random.default_rng(23)
    floats = rng.standard_normal(n).astype(np.float32)
    ints = rng.integers(-1000, 1000, n).astype(np.int32)
    outputs = []
    for wfv in (True, False):
        program = _program(monkeypatch, tmp_path, GRID_STRIDE, wfv)
        if kernel == "grid_sum":
            out = np.zeros(size, np.float32)
            args = [floats, out, np.uint64(n)]
        else:
            out = np.zeros(n, np.int32)
            args = [ints, out, np.int32(n), np.int32(-7)]
        program.kernel(kernel)(*args, global_size=(size,), local_size=(local,))
        outputs.append(out)
        if wfv:
            body = _clone(_dump(tmp_path, optimized=False), kernel)
            # The run-time test compares the W addresses (as i64) with lane 0's + i * 4.
            assert not re.search(r"icmp eq <\d+ x i64>", body), body
            assert re.search(r"load <\d+ x (float|i32)>, ptr", body), body
            for path in tmp_path.iterdir():
                path.unlink()
    np.testing.assert_array_equal(outputs[0], outputs[1])
    if kernel == "grid_scale":
        np.testing.assert_array_equal(outputs[0], ints * -7 - np.arange(n))


def test_counter_used_after_a_divergent_loop_stays_checked(monkeypatch, tmp_path):
    outputs = []
    hops = np.arange(32) % 3 + 1  # work-item g stops after hops[g] steps
    marks = np.zeros(32 * 4, np.int32)
    marks[np.arange(32) + 32 * hops] = 1
    for wfv in (True, False):
        program = _program(monkeypatch, tmp_path, GRID_STRIDE, wfv)
        x = np.full(32 * 4, -1.0, np.float32)
        program.kernel("hop_then_store")(x, marks, np.uint64(32), global_size=(32,))
        outputs.append(x)
    want = np.full(32 * 4, -1.0, np.float32)
    want[np.arange(32) + 32 * hops] = np.arange(32)
    np.testing.assert_array_equal(outputs[1], want)
    np.testing.assert_array_equal(outputs[0], want)
