"""Indices computed in 32-bit (or narrower) integer arithmetic without ``nsw``: the CPU
vectorizer's one-compare check (backends/cpu/vectorize.py, ``_extension_check``; issue 19).

``a[row * n + t + lx]`` with ``int`` operands reaches the address as the sign extension of
an ``i32`` whose lanes are lane 0's + i modulo 2**32. The extended lanes are consecutive
exactly when lane 0's value + (W - 1) does not pass INT_MAX, so the vector body checks
that one scalar (``icmp sle i32 lane0, INT_MAX - (W - 1)``) where it used to extend,
compare and reduce the W lanes, and computes the base address with scalar instructions.
The same holds for ``uint`` (zero extension, UINT_MAX), ``short``/``ushort``/``char``
indices and the forms LLVM gives them (``ashr(shl(x, 48), 46)``, ``and x, 65535``).

The kernels: two public-sample shapes written for other projects (C. Nugteren's tiled
SGEMM tutorial kernel "myGEMM2", column-major with ``int`` indices; the NVIDIA OpenCL SDK's
local-memory transpose with ``unsigned int`` indices), and narrow indices that wrap inside
a chunk (the check must fail there and the gather give the scalar loop's answer).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import spirvjit
from spirvjit.arguments import LocalMemory

# Cedric Nugteren, "Tutorial: OpenCL SGEMM tuning for Kepler", kernel 2 (tiling in local
# memory); column-major A (M x K), B (K x N), C (M x N).
MYGEMM2 = r"""
#define TS 16
__kernel void myGEMM2(const int M, const int N, const int K,
                      const __global float* A,
                      const __global float* B,
                      __global float* C) {
    const int row = get_local_id(0);
    const int col = get_local_id(1);
    const int globalRow = TS*get_group_id(0) + row;
    const int globalCol = TS*get_group_id(1) + col;
    __local float Asub[TS][TS];
    __local float Bsub[TS][TS];
    float acc = 0.0f;
    const int numTiles = K/TS;
    for (int t=0; t<numTiles; t++) {
        const int tiledRow = TS*t + row;
        const int tiledCol = TS*t + col;
        Asub[col][row] = A[tiledCol*M + globalRow];
        Bsub[col][row] = B[globalCol*K + tiledRow];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k=0; k<TS; k++) {
            acc += Asub[k][row] * Bsub[col][k];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    C[globalCol*M + globalRow] = acc;
}
"""

# The NVIDIA GPU Computing SDK's oclTranspose kernel "transpose" (local tile padded by one
# column against bank conflicts), unsigned int indices.
TRANSPOSE = r"""
#define BLOCK_DIM 16
__kernel void transpose(__global float *odata, __global float *idata, int offset, int width,
                        int height, __local float* block)
{
    unsigned int xIndex = get_global_id(0);
    unsigned int yIndex = get_global_id(1);

    if((xIndex + offset < width) && (yIndex < height))
    {
        unsigned int index_in = yIndex * width + xIndex + offset;
        block[get_local_id(1)*(BLOCK_DIM+1)+get_local_id(0)] = idata[index_in];
    }

    barrier(CLK_LOCAL_MEM_FENCE);

    xIndex = get_group_id(1) * BLOCK_DIM + get_local_id(0);
    yIndex = get_group_id(0) * BLOCK_DIM + get_local_id(1);
    if((xIndex < height) && (yIndex + offset < width))
    {
        unsigned int index_out = yIndex * height + xIndex;
        odata[index_out] = block[get_local_id(0)*(BLOCK_DIM+1)+get_local_id(1)];
    }
}
"""

# Narrow indices whose lanes wrap inside a chunk for some offsets (SPIRVJIT_WFV=all: LLVM
# unrolls the loop, and loop-free kernels are left to its loop vectorizer by default).
NARROW = r"""
kernel void short_index(global const float *src, global float *dst, int off)
{
    global const float *mid = src + 32768;
    float acc = 0.0f;
    for (int r = 0; r < 2; r++)
        acc += mid[(short)(off + get_local_id(0))] * (float)(r + 1);
    dst[get_global_id(0)] = acc;
}

kernel void ushort_index(global const float *src, global float *dst, int off)
{
    float acc = 0.0f;
    for (int r = 0; r < 2; r++)
        acc += src[(ushort)(off + get_local_id(0))] * (float)(r + 1);
    dst[get_global_id(0)] = acc;
}

kernel void char_index(global const float *src, global float *dst, int off)
{
    global const float *mid = src + 128;
    float acc = 0.0f;
    for (int r = 0; r < 2; r++)
        acc += mid[(char)(off + get_global_id(0))] * (float)(r + 1);
    dst[get_global_id(0)] = acc;
}
"""

# (bits, signed) -> what the one-compare check is written as, for W in 4, 8, 16.
_LIMITS = {
    (32, True): {(1 << 31) - w for w in (4, 8, 16)},
    (32, False): {(1 << 32) - w for w in (4, 8, 16)},
    (16, True): {(1 << 15) - w for w in (4, 8, 16)},
    (16, False): {(1 << 16) - w for w in (4, 8, 16)},
    (8, True): {(1 << 7) - w for w in (4, 8, 16)},
}


def _program(monkeypatch, tmp_path: Path, source: str, wfv: str) -> spirvjit.Program:
    monkeypatch.setenv("SPIRVJIT_WFV", wfv)
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    monkeypatch.setenv("SPIRVJIT_DUMP", str(tmp_path))
    return spirvjit.compile_opencl(source)


def _checks(tmp_path: Path) -> list[tuple[int, bool, int]]:
    """(bits, signed, limit) of every one-compare check in the unoptimized module dump."""
    (dump,) = [p for p in tmp_path.glob("*.ll") if not p.name.endswith(".opt.ll")]
    text = dump.read_text()
    # No W-lane compare of an extended index against lane 0's + i (the generic check).
    assert not re.search(r"icmp eq <\d+ x i64>", text)
    found = re.findall(r"icmp (sle|ule) i(\d+) %\"?[\w.]+\"?, (-?\d+)", text)
    return [(int(bits), kind == "sle", int(limit)) for kind, bits, limit in found]


def _clear(tmp_path: Path) -> None:
    for path in tmp_path.iterdir():
        path.unlink()


@pytest.mark.parametrize("ts", [16, 24, 8])
def test_mygemm2_int_indices(monkeypatch, tmp_path, ts):
    """TS 16: rows of 16 work-items (the 16-wide region clones on 8-lane targets); 24: a
    16-wide chunk and an 8-wide one; 8: the 8-wide clones alone."""
    m, n, k = 3 * ts, 2 * ts, 4 * ts
    rng = np.random.default_rng(192)
    a = rng.uniform(-1, 1, (k, m)).astype(np.float32)  # column-major M x K
    b = rng.uniform(-1, 1, (n, k)).astype(np.float32)  # column-major K x N
    source = MYGEMM2.replace("#define TS 16", f"#define TS {ts}")
    results = []
    for wfv in ("all", "0"):
        program = _program(monkeypatch, tmp_path, source, wfv)
        c = np.full((n, m), np.nan, np.float32)
        program.kernel("myGEMM2")(
            np.int32(m), np.int32(n), np.int32(k), a, b, c, global_size=(m, n), local_size=(ts, ts)
        )
        results.append(c)
        if wfv == "all":
            note = program.translation().kernel_functions["myGEMM2"].wfv_note
            assert note.startswith("vectorized across work-items") and "(" not in note, note
            if "8 per instruction" in note and ts > 8:  # AVX2: the k loop's FMA chain
                assert note.endswith("16 per instruction in 3 of them"), note
            if ts == 8:  # clang's IR for TS 8 reaches the tile loads through a phi of the
                _clear(tmp_path)  # guarded first tile: the generic check, as before
                continue
            checks = _checks(tmp_path)
            # The two tile loads (A and B) in the staging region: int, sign-extended.
            assert len([c for c in checks if c[:2] == (32, True)]) >= 2, checks
            assert all(limit in _LIMITS[bits, signed] for bits, signed, limit in checks)
        _clear(tmp_path)
    want = (a.T.astype(np.float64) @ b.T.astype(np.float64)).T
    np.testing.assert_allclose(results[0], want, rtol=1e-5, atol=1e-5)
    # Each work-item's sum runs in the same order either way: the same bits.
    np.testing.assert_array_equal(results[0].view(np.uint32), results[1].view(np.uint32))


@pytest.mark.parametrize(("width", "height", "offset"), [(64, 48, 0), (72, 40, 3)])
def test_sdk_transpose_unsigned_indices(monkeypatch, tmp_path, width, height, offset):
    rng = np.random.default_rng(width)
    idata = rng.uniform(-1, 1, (height, width)).astype(np.float32)
    results = []
    for wfv in ("all", "0"):
        program = _program(monkeypatch, tmp_path, TRANSPOSE, wfv)
        odata = np.full((width, height), np.nan, np.float32)
        gx, gy = -(-width // 16) * 16, -(-height // 16) * 16
        program.kernel("transpose")(
            odata,
            idata,
            np.int32(offset),
            np.int32(width),
            np.int32(height),
            LocalMemory(16 * 17 * 4),
            global_size=(gx, gy),
            local_size=(16, 16),
        )
        results.append(odata)
        if wfv == "all":
            checks = _checks(tmp_path)
            # index_in and index_out: unsigned int, zero-extended.
            assert len([c for c in checks if c[:2] == (32, False)]) >= 2, checks
            assert all(limit in _LIMITS[bits, signed] for bits, signed, limit in checks)
        _clear(tmp_path)
    want = np.full((width, height), np.nan, np.float32)
    want[: width - offset, :] = idata[:, offset:].T
    np.testing.assert_array_equal(results[0], want)
    np.testing.assert_array_equal(results[1], want)


@pytest.mark.parametrize(
    ("kernel", "off", "bits", "signed"),
    [
        ("short_index", 32764, 16, True),  # lanes 32764..32767, then -32768..: wraps
        ("short_index", 5, 16, True),
        ("ushort_index", 65532, 16, False),  # 65532..65535, then 0..
        ("ushort_index", 5, 16, False),
        ("char_index", 124, 8, True),  # 124..127, then -128..
        ("char_index", -20, 8, True),
    ],
)
def test_narrow_index_that_wraps_inside_a_chunk(monkeypatch, tmp_path, kernel, off, bits, signed):
    size, local = 64, 32
    src = np.arange(70000, dtype=np.float32) * 0.5
    lanes = off + np.arange(size) % local if kernel != "char_index" else off + np.arange(size)
    if kernel == "short_index":
        index = 32768 + (lanes + 32768) % 65536 - 32768
    elif kernel == "ushort_index":
        index = lanes % 65536
    else:
        index = 128 + (lanes + 128) % 256 - 128
    expected = src[index] * 3.0
    outputs = []
    for wfv in ("all", "0"):
        program = _program(monkeypatch, tmp_path, NARROW, wfv)
        dst = np.full(size, np.nan, np.float32)
        program.kernel(kernel)(src, dst, np.int32(off), global_size=(size,), local_size=(local,))
        outputs.append(dst)
        if wfv == "all":
            checks = _checks(tmp_path)
            assert checks and all(c[:2] == (bits, signed) for c in checks), checks
            assert all(limit in _LIMITS[bits, signed] for _, _, limit in checks)
        _clear(tmp_path)
    np.testing.assert_array_equal(outputs[0], expected)
    np.testing.assert_array_equal(outputs[0].view(np.uint32), outputs[1].view(np.uint32))
