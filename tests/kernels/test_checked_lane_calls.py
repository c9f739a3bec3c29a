"""Checked mode with the whole-function vectorizer: a call it runs lane by lane gets a
copy of the work-item context per lane. Found by the differential tester (seed 24350
kernel 1, ``SPIRVJIT_CHECK=1 SPIRVJIT_WFV=all``, translator producer): its checked code
loaded the check table's address from the context as an invariant load, LLVM moved that
load of the copy above the copy once it inlined the call, and the launch crashed on a
null table (SIGSEGV)."""

from __future__ import annotations

import numpy as np
import pytest

import spirvjit
from spirvjit.toolchain import find_tool

# llvm-spirv-15 puts the kernel's body in a function the entry point calls, so the
# vector body calls it lane by lane (clang-22 inlines it up front).
SOURCE = """
__kernel __attribute__((reqd_work_group_size(16, 1, 1)))
void k(__global ulong *out, __global uint *gat)
{
    const uint gid = get_global_id(0), grp = get_group_id(0);
    atomic_add(&gat[grp * 4U], 5U);
    out[gid] = gid * 3UL;
}
"""


@pytest.mark.parametrize("wfv", ["all", "loops"])
def test_checked_lane_by_lane_call_runs_as_unchecked(wfv, monkeypatch):
    for tool in ("clang15", "llvm-spirv"):
        if not find_tool(tool):
            pytest.skip(f"{tool} not installed")
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    monkeypatch.setenv("SPIRVJIT_WFV", wfv)
    prog = spirvjit.compile_opencl(SOURCE, producer="translator")
    results = []
    for check in (False, True):
        out = np.zeros(48, np.uint64)
        gat = np.zeros(12, np.uint32)
        prog.kernel("k")(out, gat, global_size=48, local_size=16, check=check)
        results.append((out, gat))
    for out, gat in results:
        assert out.tolist() == [3 * i for i in range(48)]
        assert gat.tolist() == [80, 0, 0, 0] * 3
