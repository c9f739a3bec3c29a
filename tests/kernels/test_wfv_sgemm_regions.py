"""Tiled SGEMM through the vectorized barrier regions (backends/cpu/vectorize.py,
``_RegionVectorizer``; issue 19's SGEMM goal).

What the region clones must do for the classic two-tile kernel (benchmarks/kernels/sgemm.cl):
the accumulator lives across the barriers, so it is saved in the work-item frames, which
lie in the same local memory block as the tiles. The clones' accesses (and the scalar
step function's) carry scoped alias metadata (``frame_alias_scopes``) so that LLVM keeps
the accumulator in a register through the ``k`` loop and stores it once, not after every
tile load and FMA.

The results are checked against NumPy (float64) and, bit for bit, against the scalar
work-item loop (SPIRVJIT_WFV=0), for square and rectangular matrices whose sizes are not
multiples of the tile (edge tiles padded with zeros) and local sizes that leave vector
remainders and scalar work-items in each row.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import spirvjit
from spirvjit.arguments import LocalMemory

ROOT = Path(__file__).resolve().parents[2]
SGEMM = (ROOT / "benchmarks" / "kernels" / "sgemm.cl").read_text()

# A guarded tiled SGEMM for any m x k times k x n and any square tile (the local size):
# work-items past the edge load zeros into the tiles and store nothing.
EDGES = r"""
kernel void sgemm_edges(global const float *a, global const float *b, global float *c,
                        int m, int n, int k, local float *ta, local float *tb)
{
    int tile = get_local_size(0);
    int lx = get_local_id(0), ly = get_local_id(1);
    int col = get_global_id(0), row = get_global_id(1);
    float acc = 0.0f;
    for (int t = 0; t < k; t += tile) {
        ta[ly * tile + lx] = (row < m && t + lx < k) ? a[row * k + t + lx] : 0.0f;
        tb[ly * tile + lx] = (t + ly < k && col < n) ? b[(t + ly) * n + col] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int j = 0; j < tile; j++)
            acc += ta[ly * tile + j] * tb[j * tile + lx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row < m && col < n)
        c[row * n + col] = acc;
}
"""


def _program(monkeypatch, source: str, wfv: bool) -> spirvjit.Program:
    monkeypatch.setenv("SPIRVJIT_WFV", "all" if wfv else "0")
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    program = spirvjit.compile_opencl(source)
    program.translation()  # now, under this setting
    return program


def _matrices(m: int, k: int, n: int):
    rng = np.random.default_rng(1919)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    return a, b


def _rounded(size: int, tile: int) -> int:
    return -(-size // tile) * tile


def _frame_scopes(ir_text: str, clone: str) -> tuple[set[str], set[str]]:
    """The alias.scope and noalias lists on the accesses of ``clone`` in ``ir_text``."""
    body = ir_text[ir_text.index(f'define internal i32 @"{clone}"') :]
    body = body[: body.index("\n}")]
    scopes = set(re.findall(r"!alias\.scope !(\d+)", body))
    noalias = set(re.findall(r"!noalias !(\d+)", body))
    return scopes, noalias


def test_sgemm_k_loop_keeps_the_accumulator_in_a_register(monkeypatch, tmp_path):
    """The benchmark's kernel: in the optimized code, the blocks of the ``k`` loop (the
    blocks with the vector FMA) store a vector of floats at most once per 16 FMAs (the
    accumulator, once per chunk); before the frame scopes, the accumulator was stored to
    its frame after every FMA."""
    monkeypatch.setenv("SPIRVJIT_DUMP", str(tmp_path))
    program = _program(monkeypatch, SGEMM, True)
    note = program.translation().kernel_functions["sgemm"].wfv_note
    assert note.startswith("vectorized across work-items"), note
    n = 32
    a, b = _matrices(n, n, n)
    c = np.zeros((n, n), np.float32)
    program.kernel("sgemm")(a, b, c, np.int32(n), global_size=(n, n), local_size=(16, 16))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)

    (before,) = [p for p in tmp_path.glob("sgemm.*.ll") if not p.name.endswith(".opt.ll")]
    text = before.read_text()
    region = re.search(r'define internal i32 @"(spv\.step\.sgemm[^"]*\.wfv\.r1)"', text)
    assert region, "no vector clone of the k loop's region"
    scopes, noalias = _frame_scopes(text, region.group(1))
    # Two scopes (the frames, the kernel's memory), each access in one and not the other.
    assert len(scopes) == 2 and scopes == noalias, (scopes, noalias)
    # The scalar step function (the rest of a row, regions left scalar): the same two.
    step = region.group(1).removesuffix(".wfv.r1")
    assert _frame_scopes(text, step) == (scopes, noalias)

    (optimized,) = tmp_path.glob("sgemm.*.opt.ll")
    blocks = re.split(r"\n(?=[\w.\"]+:)", optimized.read_text())
    fma_blocks = [blk for blk in blocks if re.search(r"@llvm\.fma\.v\d+f32", blk)]
    assert fma_blocks, "the k loop was not vectorized"
    for block in fma_blocks:
        # At most one store per k loop (16 FMAs): with the B tile read as plain vector
        # loads, the k loop is unrolled into the chunk loop's block, whose one store
        # per chunk is the accumulator's after the k loop.
        stores = len(re.findall(r"store <\d+ x float>", block))
        assert stores * 16 <= len(re.findall(r"@llvm\.fma\.v\d+f32", block)), block


@pytest.mark.parametrize(
    ("m", "k", "n", "tile"),
    [
        (37, 29, 45, 16),  # odd sizes: edge tiles, 16-wide rows
        (33, 50, 27, 12),  # a vector chunk and 4 scalar work-items per row
        (40, 24, 40, 24),  # 24-wide rows: chunks of 8 (16 + 8 with wider clones)
        (9, 7, 11, 4),  # narrower than a vector: all scalar
    ],
)
def test_sgemm_edges_against_numpy(monkeypatch, m, k, n, tile):
    a, b = _matrices(m, k, n)
    outputs = []
    for wfv in (True, False):
        program = _program(monkeypatch, EDGES, wfv)
        c = np.full((m, n), np.nan, np.float32)
        local = LocalMemory(4 * tile * tile)
        program.kernel("sgemm_edges")(
            a, b, c, np.int32(m), np.int32(n), np.int32(k), local, LocalMemory(4 * tile * tile),
            global_size=(_rounded(n, tile), _rounded(m, tile)), local_size=(tile, tile),
        )  # fmt: skip
        outputs.append(c)
    np.testing.assert_array_equal(outputs[0].view(np.uint32), outputs[1].view(np.uint32))
    np.testing.assert_allclose(outputs[0], a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def test_sgemm_benchmark_kernel_against_numpy(monkeypatch):
    """The benchmark's kernel at 48 x 48 (three tiles a side), vector and scalar."""
    n = 48
    a, b = _matrices(n, n, n)
    outputs = []
    for wfv in (True, False):
        c = np.zeros((n, n), np.float32)
        _program(monkeypatch, SGEMM, wfv).kernel("sgemm")(
            a, b, c, np.int32(n), global_size=(n, n), local_size=(16, 16)
        )
        outputs.append(c)
    np.testing.assert_array_equal(outputs[0].view(np.uint32), outputs[1].view(np.uint32))
    np.testing.assert_allclose(outputs[0], a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
