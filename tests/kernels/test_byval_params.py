"""A struct parameter passed by value is the callee's own copy.

In SPIR-V a by-value struct is a pointer parameter decorated ``FuncParamAttr ByVal``: the
callee may write the pointee, and the caller's object must not change. Optimizers pass
the caller's object itself when the copy the source made looks redundant (LLVM's byval
argument forwarding): llvm-spirv-15 passes a kernel's struct argument straight to a
helper that rewrites its copy, or to the kernel body it wraps. spirvjit used the pointer
as it came, so every work-item's helper wrote into the one struct argument all
work-items share. Found by the differential tester (seed 25103 kernel 2, translator
producer: both segments' hashes of the kernel's struct argument differed from PoCL's).
spirvjit now copies a ByVal pointee on entry (``FunctionTranslator._copy_by_value_
parameters``), and where a function with barriers is inlined into a step function
(``barriers._instantiate``), unless the parameter is also NoWrite.
"""

from __future__ import annotations

import numpy as np
import pytest

import spirvjit

PRODUCERS = ["clang", "translator"]

STRUCT = "typedef struct { uchar f0; uint f1; int f2; ulong f3; } S;\n"

# The reduced seed-25103 kernel: `st = sarg` and the call by value became one call
# with the kernel argument's own pointer (translator producer).
HELPER = (
    STRUCT
    + r"""
static __attribute__((noinline)) S smix(S s, uint k) { s.f1 ^= k; return s; }
__kernel void k(__global ulong *out, S sarg) {
    uint gid = get_global_id(0);
    S st = sarg;
    st = smix(st, gid + 1);
    out[gid * 2] = st.f1;
    out[gid * 2 + 1] = sarg.f1;
}
"""
)

# The kernel writes its own copy through a pointer (llvm-spirv's kernel wrapper passes the
# argument to the body, a function with a ByVal parameter); with a barrier, the body is
# inlined into the step function.
THROUGH_POINTER = (
    STRUCT
    + r"""
static __attribute__((noinline)) void bump(S *p, uint k) { p->f1 += k; }
__kernel void k(__global ulong *out, S sarg) {
    uint gid = get_global_id(0);
    bump(&sarg, gid + 1);
    BARRIER
    out[gid * 2] = sarg.f1;
    out[gid * 2 + 1] = sarg.f3;
}
"""
)

# A helper with a barrier (inlined into the step function) that rewrites its by-value copy.
BARRIER_HELPER = (
    STRUCT
    + r"""
static __attribute__((noinline)) uint sync_mix(S s, uint k, __local uint *lm) {
    s.f1 += k;
    lm[k - 1] = s.f1;
    barrier(CLK_LOCAL_MEM_FENCE);
    return lm[(k & 3)] + s.f1;
}
__kernel void k(__global ulong *out, S sarg) {
    __local uint lm[4];
    uint gid = get_global_id(0);
    uint r = sync_mix(sarg, gid + 1, lm);
    out[gid * 2] = r;
    out[gid * 2 + 1] = sarg.f1;
}
"""
)


def _run(src: str, producer: str, f1: int = 7) -> list[list[int]]:
    data = np.zeros(
        (), np.dtype({"names": ["f1"], "formats": ["<u4"], "offsets": [4], "itemsize": 24})
    )
    data["f1"] = f1
    out = np.zeros(8, np.uint64)
    prog = spirvjit.compile_opencl(src, ["-cl-std=CL3.0"], producer=producer)
    prog.kernel("k")(out, data.tobytes(), global_size=(4,), local_size=(4,))
    return out.reshape(4, 2).tolist()


@pytest.mark.parametrize("producer", PRODUCERS)
def test_helper_rewrites_its_copy_not_the_kernel_argument(producer):
    # translator before the fix: [[6, 6], [4, 4], ...]: each helper wrote the argument
    assert _run(HELPER, producer) == [[7 ^ (g + 1), 7] for g in range(4)]


@pytest.mark.parametrize("barrier", ["", "barrier(CLK_LOCAL_MEM_FENCE);"])
@pytest.mark.parametrize("producer", PRODUCERS)
def test_kernel_writes_its_own_copy_of_a_struct_argument(producer, barrier):
    # translator before the fix: [[8, 0], [10, 0], ..., [17, 0]] (no barrier) and
    # [[17, 0]] * 4 (barrier): every work-item added to the one shared argument
    got = _run(THROUGH_POINTER.replace("BARRIER", barrier), producer)
    assert got == [[7 + g + 1, 0] for g in range(4)]


@pytest.mark.parametrize("producer", PRODUCERS)
def test_barrier_helper_rewrites_its_copy(producer):
    # (passed before the fix too: both producers copy the argument for this call)
    want = [[(7 + ((g + 1) & 3) + 1) + 7 + g + 1, 7] for g in range(4)]
    assert _run(BARRIER_HELPER, producer) == want
