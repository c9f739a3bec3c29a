"""Structs passed by value to a kernel are placed with their alignment.

The kernel reads a by-value struct through a pointer to the bytes the host packed, with the
alignment the producer declared: clang-22 writes ``Aligned 64`` on the load of a ``long8``
member, and LLVM turns it into aligned 32-byte vector loads (``vmovdqa``). The packer put
the bytes in a ctypes array, which malloc aligns to 16 only: a kernel reading every field
of ``{ double; char; int; long8; uint }`` across a barrier died of SIGSEGV on every launch
(found by the differential tester's struct arguments: seed 25618 kernel 2, both producers'
worker processes died).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import spirvjit
from spirvjit.arguments import ArgumentPacker
from spirvjit.translate.signature import KernelArg, KernelSignature

SRC = r"""
typedef struct { double f0; char f1; int f2; long8 f3; uint f4; } S;
__kernel void k(__global ulong *out, S s) {
    uint i = get_global_id(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    out[i * 4 + 0] = as_ulong(s.f0);
    out[i * 4 + 1] = s.f1;
    out[i * 4 + 2] = s.f2;
    out[i * 4 + 3] = s.f3.s7 + s.f3.s0 + s.f4;
}
"""

# the same layout as OpenCL C's: long8 is 64-byte aligned, the struct 192 bytes
DTYPE = np.dtype(
    {
        "names": ["f0", "f1", "f2", "f3", "f4"],
        "formats": ["<f8", "i1", "<i4", ("<i8", 8), "<u4"],
        "offsets": [0, 8, 12, 64, 128],
        "itemsize": 192,
    }
)


def test_packed_struct_bytes_have_the_struct_alignment():
    """Fails before the fix with a probability of 1 - 4^-40 (16-byte aligned storage)."""
    for align in (1, 16, 64, 128):
        arg = KernelArg(0, "s", "struct", 192, align)
        packer = ArgumentPacker(KernelSignature("k", (arg,)))
        data = bytes(range(192))
        for _ in range(40):
            slots, keep, _ = packer.pack([data])
            assert slots[0] % max(align, 128) == 0
            assert bytes(keep[0]) == data


RUN = textwrap.dedent(
    """
    import sys
    import numpy as np
    import spirvjit
    from tests.kernels.test_struct_arg_alignment import DTYPE, SRC
    prog = spirvjit.compile_opencl(SRC, ["-cl-std=CL3.0"], producer=sys.argv[1])
    rng = np.random.default_rng(1)
    for _ in range(10):
        s = np.zeros((), DTYPE)
        s["f0"], s["f1"], s["f2"] = rng.normal(), rng.integers(-128, 128), rng.integers(-9, 9)
        s["f3"] = rng.integers(-(2**40), 2**40, 8)
        s["f4"] = rng.integers(0, 2**32)
        out = np.zeros(4 * 8, np.uint64)
        prog.kernel("k")(out, s, global_size=(8,), local_size=(8,))
        want = [s["f0"].view(np.uint64), np.int64(s["f1"]), np.int64(s["f2"]),
                np.int64(s["f3"][7] + s["f3"][0] + np.int64(s["f4"]))]
        want = np.array(want, dtype=np.int64).view(np.uint64)
        assert (out.reshape(8, 4) == want).all(), (out.reshape(8, 4), want)
    print("ok")
    """
)


@pytest.mark.parametrize("producer", ["clang", "translator"])
def test_struct_with_a_long8_member_across_a_barrier(producer):
    """In a subprocess: before the fix the clang build's launch died of SIGSEGV."""
    proc = subprocess.run(
        [sys.executable, "-c", RUN, producer],
        capture_output=True,
        text=True,
        timeout=600,
        env={**__import__("os").environ, "SPIRVJIT_CACHE": "0"},
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


def test_struct_layout_matches_the_host_dtype():
    """The test's NumPy layout is the kernel's (a wrong DTYPE would test nothing)."""
    prog = spirvjit.compile_opencl(SRC, ["-cl-std=CL3.0"])
    (_, spec) = prog.kernel("k").signature.args
    assert (spec.kind, spec.size) == ("struct", DTYPE.itemsize)
