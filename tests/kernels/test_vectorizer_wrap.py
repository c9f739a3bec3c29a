"""LLVM 22's loop vectorizer drops the wrap check of a narrow index (backends/cpu/
vectorizer_guard.py): ``a[(lid + 7) % 16]`` next to ``in[lid + 154u]`` in one work-item
loop read ``a[16..18]`` for work-items 9..11. Found by the differential tester as a
barrier bug (tests/fuzz/findings/barrier_helper_after_branch.cl: the words after the
group's ``__local long lm[16]`` are the barrier frames, so work-items read another
work-item's ``h``), but any kernel can hit it. Each kernel runs from both producers and
is checked against a NumPy model (the finding's model agrees with PoCL's results).
"""

from __future__ import annotations

from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest
from harness import build

from spirvjit.backends.cpu.vectorizer_guard import suspect_wrap_predicate

FINDING = Path(__file__).parents[1] / "fuzz" / "findings" / "barrier_helper_after_branch.cl"
GROUP = 16
# in[i] = i * 2654435761 (uint32 wrap), as the differential tester fills it.
IN = (np.arange(256, dtype=np.uint64) * 2654435761 % 2**32).astype(np.uint32)


def _groups(values: np.ndarray) -> np.ndarray:
    return values.reshape(-1, GROUP)


def _exchange(per_item: np.ndarray, off: int) -> np.ndarray:
    """What each work-item reads at lm[(lid + off) % 16] after all stored ``per_item``."""
    return np.roll(_groups(per_item), -off, axis=1).ravel()


def _h(n: int, branch: bool = True) -> np.ndarray:
    if not branch:
        return np.ones(n, np.uint64)
    return np.where(IN[np.arange(n) & 255] % 3 == 0, 7, 5).astype(np.uint64)


def _second(n: int) -> np.ndarray:
    """x40: in[lid + 154] as stored by each work-item, read at lid + 5."""
    lid = np.arange(n) % GROUP
    return _exchange(IN[lid + 154].astype(np.uint64), 5)


def _run(source: str, producer: str, n: int = 64, outputs: int = 2) -> np.ndarray:
    prog = build(source, producer=producer)
    out = np.zeros(outputs * n, np.uint64)
    gat = np.zeros(n, np.uint32)
    prog.kernel("k3")(out, IN, gat, global_size=n, local_size=GROUP)
    return out.reshape(n, outputs)


def test_finding_two_barrier_helper_after_branch(producer):
    """The finding as filed: x39 is 91 in every work-item (was 7, 5, 5 in 9..11)."""
    out = _run(FINDING.read_text(), producer)
    np.testing.assert_array_equal(out[:, 0], np.full(64, 91, np.uint64))
    np.testing.assert_array_equal(out[:, 1], _h(64) + _second(64))


HELPER2 = r"""
static __attribute__((noinline)) long sync24(__local long *lm, long v, uint lid, uint off)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    lm[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    return lm[(lid + off) % 16U];
}
"""
PROLOGUE = r"""
__kernel __attribute__((reqd_work_group_size(16, 1, 1)))
void k3(__global ulong *out, __global const uint *in, __global uint *gat)
{
    const uint gid = get_global_id(0), lid = get_local_id(0);
    __local long lm[16];
"""
BRANCH = """    ulong h = 1;
    if (in[gid & 255U] % 3U == 0U) { h = 7; } else { h = 5; }
"""


def test_three_calls(producer):
    source = (
        HELPER2
        + PROLOGUE
        + BRANCH
        + r"""
    long x39 = sync24(lm, 91L, lid, 7U);
    long x40 = sync24(lm, (long)in[lid + 154U], lid, 5U);
    long x41 = sync24(lm, x40 + (long)h, lid, 3U);
    out[gid * 3U] = x39;
    out[gid * 3U + 1U] = h + x40;
    out[gid * 3U + 2U] = x41;
}
"""
    )
    out = _run(source, producer, outputs=3)
    h, x40 = _h(64), _second(64)
    np.testing.assert_array_equal(out[:, 0], np.full(64, 91, np.uint64))
    np.testing.assert_array_equal(out[:, 1], h + x40)
    np.testing.assert_array_equal(out[:, 2], _exchange(x40 + h, 3))


def test_without_branch(producer):
    source = (
        HELPER2
        + PROLOGUE
        + r"""
    ulong h = 1;
    long x39 = sync24(lm, 91L, lid, 7U);
    long x40 = sync24(lm, (long)in[lid + 154U], lid, 5U);
    out[gid * 2U] = x39;
    out[gid * 2U + 1U] = h + x40;
}
"""
    )
    out = _run(source, producer)
    np.testing.assert_array_equal(out[:, 0], np.full(64, 91, np.uint64))
    np.testing.assert_array_equal(out[:, 1], _h(64, branch=False) + _second(64))


def test_one_barrier_helper(producer):
    source = (
        r"""
static __attribute__((noinline)) long sync1(__local long *lm, long v, uint lid, uint off)
{
    lm[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    return lm[(lid + off) % 16U];
}
"""
        + PROLOGUE
        + BRANCH
        + r"""
    long x39 = sync1(lm, (long)gid * 3L, lid, 7U);
    out[gid * 2U] = x39;
    out[gid * 2U + 1U] = h + in[lid + 154U];
}
"""
    )
    out = _run(source, producer)
    gid = np.arange(64, dtype=np.uint64)
    np.testing.assert_array_equal(out[:, 0], _exchange(gid * 3, 7))
    np.testing.assert_array_equal(out[:, 1], _h(64) + IN[gid % GROUP + 154])


def test_kernel_without_barrier(producer):
    """No barrier and no helper: the same two accesses in the work-item loop."""
    source = r"""
__kernel void k3(__global ulong *out, __global const uint *in, __global const long *a) {
    uint lid = get_local_id(0);
    out[get_global_id(0)] = a[(lid + 7U) % 16U] + in[lid + 154U];
}
"""
    prog = build(source, producer=producer)
    a = np.arange(100, 132, dtype=np.int64)  # a[16..31] must never be read
    out = np.zeros(64, np.uint64)
    prog.kernel("k3")(out, IN, a, global_size=64, local_size=GROUP)
    lid = np.arange(64) % GROUP
    expected = a[(lid + 7) % 16].astype(np.uint64) + IN[lid + 154]
    np.testing.assert_array_equal(out, expected)


HIP = r"""
#include <hip/hip_runtime.h>
__device__ __attribute__((noinline)) long sync24(long* lm, long v, unsigned lid, unsigned off) {
  __syncthreads();
  lm[lid] = v;
  __syncthreads();
  return lm[(lid + off) % 16u];
}
extern "C" __global__ void k3(unsigned long* out, const unsigned* in, unsigned* gat) {
  __shared__ long lm[16];
  unsigned lid = threadIdx.x, gid = blockIdx.x * blockDim.x + lid;
  unsigned long h = 1;
  if (in[gid & 255u] % 3u == 0u) { h = 7; } else { h = 5; }
  long x39 = sync24(lm, 91, lid, 7u);
  long x40 = sync24(lm, (long)in[lid + 154u], lid, 5u);
  out[gid * 2u] = x39;
  out[gid * 2u + 1u] = h + x40;
}
"""


def test_hip_syncthreads_in_device_helper():
    import spirvjit
    from spirvjit.toolchain import find_tool

    if find_tool("clang") is None or find_tool("opt") is None or find_tool("llc") is None:
        pytest.skip("clang-22, opt-22 and llc-22 are needed to compile HIP")
    prog = spirvjit.compile_hip(HIP)
    out = np.zeros(128, np.uint64)
    prog.kernel("k3")(out, IN, np.zeros(64, np.uint32), global_size=64, local_size=GROUP)
    out = out.reshape(64, 2)
    np.testing.assert_array_equal(out[:, 0], np.full(64, 91, np.uint64))
    np.testing.assert_array_equal(out[:, 1], _h(64) + _second(64))


HEADER = (
    'target triple = "x86_64-unknown-linux-gnu"\n'
    'target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128'
    '-n8:16:32:64-S128"\n'
)
# The LLVM reproducer: without the second access the vector loop keeps its 4-bit check.
REDUCED_IR = (
    HEADER
    + r"""
define void @f(ptr noalias %a, ptr noalias %b, ptr noalias %out, ptr noalias %out2, i64 %n) {
entry:
  br label %head
head:
  %i = phi i64 [0, %entry], [%inc, %body]
  %c = icmp ult i64 %i, %n
  br i1 %c, label %body, label %exit
body:
  %t = trunc i64 %i to i32
  %s = add i32 7, %t
  %m = and i32 %s, 15
  %z = zext i32 %m to i64
  %p = getelementptr inbounds i64, ptr %a, i64 %z
  %v = load i64, ptr %p, align 8
  %q = getelementptr inbounds i64, ptr %out, i64 %i
  store i64 %v, ptr %q
  %s2 = add i64 %i, 154
  %m2 = and i64 %s2, 4294967295
  %p2 = getelementptr inbounds i32, ptr %b, i64 %m2
  %v2 = load i32, ptr %p2, align 4
  %q2 = getelementptr inbounds i32, ptr %out2, i64 %i
  store i32 %v2, ptr %q2
  %inc = add nuw i64 %i, 1
  br label %head
exit:
  ret void
}
"""
)

# A loop the guard must leave to the loop vectorizer (no narrow index).
PLAIN_IR = (
    HEADER
    + r"""
define void @f(ptr noalias %a, ptr noalias %out, i64 %n) {
entry:
  br label %head
head:
  %i = phi i64 [0, %entry], [%inc, %body]
  %c = icmp ult i64 %i, %n
  br i1 %c, label %body, label %exit
body:
  %p = getelementptr inbounds i64, ptr %a, i64 %i
  %v = load i64, ptr %p, align 8
  %w = add i64 %v, 3
  %q = getelementptr inbounds i64, ptr %out, i64 %i
  store i64 %w, ptr %q
  %inc = add nuw i64 %i, 1
  br label %head
exit:
  ret void
}
"""
)


def _optimize(ir_text: str, loop_vectorization: bool = True) -> llvm.ModuleRef:
    from spirvjit.backends.cpu import codegen
    from spirvjit.target import host_target

    module = llvm.parse_assembly(ir_text)
    if loop_vectorization:
        return codegen.optimize_here(module, host_target())
    codegen._run_pipeline(module, host_target(), 3, loop_vectorization=False)
    return module


def test_guard_sees_the_reduced_miscompile():
    from spirvjit.backends.cpu import codegen
    from spirvjit.target import host_target

    module = llvm.parse_assembly(REDUCED_IR)
    codegen._run_pipeline(module, host_target(), 3, loop_vectorization=True)
    assert suspect_wrap_predicate(module) == "f"
    # optimize_here optimizes it again without the loop vectorizer.
    optimized = _optimize(REDUCED_IR)
    assert suspect_wrap_predicate(optimized) is None
    assert "vector.body" not in str(optimized)


def test_guard_keeps_plain_loops_vectorized():
    optimized = _optimize(PLAIN_IR)
    assert "vector.body" in str(optimized)
    assert suspect_wrap_predicate(optimized) is None
