"""Lock-step wavefronts on the host CPU (translate/wavefront.py, docs/hip.md): which lanes
exchange values at a cross-lane call when the lanes of a wavefront diverge.

The HIP corpus (test_hip_corpus.py, sample ``wavefront``) covers the common idioms; this
file covers the scheduler's order of release, on SPIR-V whose blocks come in an order
clang does not emit but SPIR-V allows."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import spirvjit
from spirvjit.frontend.hip import hip_to_spirv
from spirvjit.toolchain import find_tool

pytestmark = pytest.mark.skipif(
    find_tool("clang") is None or find_tool("opt") is None or find_tool("llc") is None,
    reason="clang-22, opt-22 and llc-22 are needed to compile HIP",
)

# Lanes 4k+1..4k+3 shuffle in a loop of tid % 4 iterations; then every lane shuffles
# again after the loop. The second shuffle must wait for the lanes still in the loop.
LOOP_THEN_SHUFFLE = r"""
#include <hip/hip_runtime.h>
__global__ void loop_then_shuffle(const int* in, int* out) {
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  int v = in[i];
  for (int k = 0; k < tid % 4; ++k) v += __shfl_xor(v, 1);
  out[i] = __shfl_xor(v, 2);
}
"""
_OP_LABEL, _OP_FUNCTION_END, _OP_FUNCTION_CALL = 248, 56, 57


def _expected(x: np.ndarray) -> np.ndarray:
    """AMD's result: in the loop, lanes 4k+2 and 4k+3 add each other's value twice; lane
    4k+1's one shuffle reads lane 4k, which is not in the loop (inactive): 0. After it,
    every lane reads lane tid ^ 2."""
    quad = x.reshape(-1, 4)
    v = quad.copy()
    v[:, 2] = v[:, 3] = 2 * (quad[:, 2] + quad[:, 3])
    return v[:, [2, 3, 0, 1]].ravel()


def _blocks_reordered(spirv: bytes) -> bytes:
    """The module with the kernel's blocks after the loop moved before it (the entry
    block still dominates them, so the order stays valid SPIR-V)."""
    words = list(struct.unpack(f"<{len(spirv) // 4}I", spirv))
    starts, i = [], 5
    while i < len(words):
        count, opcode = words[i] >> 16, words[i] & 0xFFFF
        if opcode == _OP_LABEL or opcode == _OP_FUNCTION_END and starts:
            starts.append(i)
            if opcode == _OP_FUNCTION_END:
                break  # the kernel is the module's only function with a body
        i += count
    assert len(starts) == 6, "expected entry, preheader, loop, 2 exit blocks, end"
    blocks = [words[a:b] for a, b in zip(starts, starts[1:], strict=False)]
    entry, preheader, loop, edge, exit_block = blocks
    assert any(w & 0xFFFF == _OP_FUNCTION_CALL for w in exit_block)
    body = entry + edge + exit_block + preheader + loop
    moved = words[: starts[0]] + body + words[starts[-1] :]
    return struct.pack(f"<{len(moved)}I", *moved)


@pytest.mark.parametrize("reorder", [False, True], ids=["clang_order", "exit_first"])
def test_shuffle_after_a_divergent_loop_waits_for_the_loop(reorder: bool):
    # Failed before (exit_first): the scheduler released the shuffle that comes first in
    # block order, so lanes 4k skipped ahead and exchanged with inactive lanes.
    spirv = hip_to_spirv(LOOP_THEN_SHUFFLE)
    program = spirvjit.Program(_blocks_reordered(spirv) if reorder else spirv)
    x = np.random.default_rng(3).integers(-1000, 1000, 256).astype(np.int32)
    out = np.zeros_like(x)
    program.kernel("loop_then_shuffle")(x, out, grid=2, block=128)
    np.testing.assert_array_equal(out, _expected(x))


# Lanes below 64 and the others wait at two different __syncthreads(): undefined in HIP.
DIVERGENT_BARRIER = r"""
#include <hip/hip_runtime.h>
__global__ void divergent_barrier(int* out) {
  int tid = threadIdx.x;
  int v = __shfl_xor(tid, 1);
  if (tid < 64) {
    out[tid] = v;
    __syncthreads();
  } else {
    __syncthreads();
    out[tid] = -v;
  }
}
__global__ void early_exit(const int* in, int* out, int n) {
  int tid = threadIdx.x;
  if (tid >= n) return;
  __shared__ int tile[256];
  tile[tid] = __shfl_xor(in[tid], 1);
  __syncthreads();
  out[tid] = tile[(tid + 1) % n];
}
"""


@pytest.fixture(scope="module")
def barriers() -> spirvjit.Program:
    return spirvjit.compile_hip(DIVERGENT_BARRIER)


def test_checked_mode_reports_divergent_barriers_in_wavefront_kernels(barriers):
    out = np.zeros(128, np.int32)
    with pytest.raises(spirvjit.LaunchError, match="divergent barrier: work-item"):
        barriers.divergent_barrier(out, grid=1, block=128, check=True)


def test_finished_work_items_do_not_wait_at_barriers(barriers):
    # As on AMD GPUs, where an ended wavefront no longer counts at s_barrier; checked mode
    # accepts it too. Lanes from n on are inactive: lane n - 1 (even) reads lane n, 0.
    n = 99
    x = np.arange(1, 129, dtype=np.int32)
    partner = np.arange(n) ^ 1
    swapped = np.where(partner < n, x[np.minimum(partner, n - 1)], 0)
    for check in (False, True):
        out = np.zeros(128, np.int32)
        barriers.early_exit(x, out, np.int32(n), grid=1, block=128, check=check)
        np.testing.assert_array_equal(out[:n], np.roll(swapped, -1))
        assert (out[n:] == 0).all()


# The classic last-warp reduction in shared memory, made safe for independent thread
# scheduling with __syncwarp between each step's reads and writes.
SYNCWARP_REDUCTION = r"""
#include <hip/hip_runtime.h>
__global__ void last_warp_reduce(const int* in, int* out) {
  __shared__ int sdata[64];
  int tid = threadIdx.x;
  sdata[tid] = in[blockIdx.x * 64 + tid];
  __syncthreads();
  if (tid < 32) {
    for (int s = 32; s > 0; s /= 2) {
      int v = sdata[tid] + sdata[tid + s];
      __syncwarp();
      sdata[tid] = v;
      __syncwarp();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
  }
}
"""


def test_syncwarp_orders_a_shared_memory_warp_reduction():
    program = spirvjit.compile_hip(SYNCWARP_REDUCTION)
    x = np.random.default_rng(0).integers(-100, 100, 64 * 8).astype(np.int32)
    out = np.zeros(8, np.int32)
    program.last_warp_reduce(x, out, grid=8, block=64)
    np.testing.assert_array_equal(out, x.reshape(8, 64).sum(1))
