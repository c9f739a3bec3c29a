"""clang-22's SPIR-V back end writes LLVM's ``<1 x T>`` as an OpTypeVector of one component
(SPIR-V allows that only with SPV_EXT_long_vector; llvm-project issue 171175, fixed by pull
request 180735 for LLVM 23). clang-22 -O2 makes one for a splat of a private array element,
``vstore4((long4)(a[0]), 0, a)``: the differential tester's seed 29103 kernel 6 failed to
load with "OpTypeVector: vector of 1 components". spirvjit reads it as LLVM's ``<1 x T>``
(spirv/validate.py ``VECTOR_SIZES``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from harness import build

import spirvjit

FINDING = Path(__file__).resolve().parents[1] / "fuzz" / "findings" / "clang_one_lane_vector.cl"


# The finding's kernel (`k`, a splat of a long), then the same for ints and floats: each
# writes a splat of a private array's element 0 over the array with vstoreN, then reads it.
SPLATS = (
    FINDING.read_text()
    + r"""
__kernel void splat_int(__global uint *out, __global const uint *in)
{
    uint gid = get_global_id(0);
    uint a[8];
    for (int q = 0; q < 8; q++)
        a[q] = in[gid * 8 + q];
    vstore8((uint8)(a[0]), 0, a);
    out[gid] = a[0] ^ (a[3] << 1) ^ (a[7] << 2);
}

__kernel void splat_float(__global float *out, __global const float *in)
{
    uint gid = get_global_id(0);
    float a[4];
    for (int q = 0; q < 4; q++)
        a[q] = in[gid * 4 + q];
    vstore2((float2)(a[0]), 1, a);
    out[gid] = a[0] + a[1] * 2.0f + a[2] * 4.0f + a[3] * 8.0f;
}
"""
)


def _inputs(n: int, dtype, lanes: int) -> np.ndarray:
    rng = np.random.default_rng(29103)
    if np.dtype(dtype).kind == "f":
        return rng.integers(-1000, 1000, n * lanes).astype(dtype) / 8
    return rng.integers(-(2**30), 2**30, n * lanes).astype(dtype)


@pytest.mark.parametrize("producer", ["clang", "translator"])
def test_splats_of_private_array_elements(producer):
    # Before: SpirvError "OpTypeVector: vector of 1 components" for producer="clang".
    prog = build(SPLATS, ("-cl-std=CL3.0",), producer)
    n = 32
    x = _inputs(n, np.int64, 4)
    out = np.zeros(n, np.int64)
    prog.kernel("k")(out, x, global_size=(n,), local_size=(8,))
    a = x.reshape(n, 4)[:, 0]
    np.testing.assert_array_equal(out, a * (1 + 3 + 5 + 7))

    x = _inputs(n, np.int64, 8).astype(np.uint32)
    out = np.zeros(n, np.uint32)
    prog.kernel("splat_int")(out, x, global_size=(n,), local_size=(8,))
    a = x.reshape(n, 8)[:, 0]
    np.testing.assert_array_equal(out, a ^ (a << 1) ^ (a << 2))

    x = _inputs(n, np.float32, 4)
    out = np.zeros(n, np.float32)
    prog.kernel("splat_float")(out, x, global_size=(n,), local_size=(8,))
    a = x.reshape(n, 4)
    want = a[:, 0] + a[:, 1] * 2 + a[:, 0] * 4 + a[:, 0] * 8
    np.testing.assert_array_equal(out, want.astype(np.float32))


# One-lane vectors as values, not only as pointee types: a load, arithmetic, a shuffle to
# four lanes and back, construct and extract (what a producer that keeps <1 x T> writes).
ONE_LANE_ASM = """
OpCapability Addresses
OpCapability Kernel
OpCapability Int64
OpCapability Linkage
OpMemoryModel Physical64 OpenCL
OpEntryPoint Kernel %main "one_lane" %gid_var
OpDecorate %gid_var BuiltIn GlobalInvocationId
OpDecorate %gid_var Constant
OpDecorate %gid_var LinkageAttributes "__spirv_BuiltInGlobalInvocationId" Import
%void = OpTypeVoid
%uint = OpTypeInt 32 0
%ulong = OpTypeInt 64 0
%v1uint = OpTypeVector %uint 1
%v4uint = OpTypeVector %uint 4
%v3ulong = OpTypeVector %ulong 3
%p_gid = OpTypePointer Input %v3ulong
%p_uint = OpTypePointer CrossWorkgroup %uint
%p_v1uint = OpTypePointer CrossWorkgroup %v1uint
%p_v4uint = OpTypePointer CrossWorkgroup %v4uint
%uint_3 = OpConstant %uint 3
%ulong_4 = OpConstant %ulong 4
%ulong_5 = OpConstant %ulong 5
%c3 = OpConstantComposite %v1uint %uint_3
%gid_var = OpVariable %p_gid Input
%fn = OpTypeFunction %void %p_uint %p_uint
%main = OpFunction %void None %fn
%in = OpFunctionParameter %p_uint
%out = OpFunctionParameter %p_uint
%entry = OpLabel
%ids = OpLoad %v3ulong %gid_var Aligned 32
%gid = OpCompositeExtract %ulong %ids 0
%in1 = OpBitcast %p_v1uint %in
%at = OpInBoundsPtrAccessChain %p_v1uint %in1 %gid
%x = OpLoad %v1uint %at Aligned 4
%y = OpIMul %v1uint %x %c3
%s = OpCompositeExtract %uint %y 0
%z = OpCompositeConstruct %v1uint %s
%w = OpIAdd %v1uint %z %x
%four = OpVectorShuffle %v4uint %w %x 0 1 0 1
%back = OpVectorShuffle %v1uint %four %four 3
%base = OpIMul %ulong %gid %ulong_5
%o0 = OpInBoundsPtrAccessChain %p_uint %out %base
%out4 = OpBitcast %p_v4uint %o0
OpStore %out4 %four Aligned 4
%o4 = OpInBoundsPtrAccessChain %p_uint %o0 %ulong_4
%o4v = OpBitcast %p_v1uint %o4
OpStore %o4v %back Aligned 4
OpReturn
OpFunctionEnd
"""


def test_one_lane_vector_values(assemble):
    prog = spirvjit.load_spirv(assemble(ONE_LANE_ASM))
    n = 37  # a remainder for the vectorizer's lanes
    x = np.arange(n, dtype=np.uint32) * 1000003 + 7
    # w = x * 3 + x; four = (w, x, w, x); back = four.w = x
    w = x * 3 + x
    kernel = prog.kernel("one_lane")
    for _ in range(2):  # with SPIRVJIT_TIERED=1: the quick tier, then the optimized one
        out = np.zeros(n * 5, np.uint32)
        kernel(x, out, global_size=(n,))
        np.testing.assert_array_equal(out.reshape(n, 5), np.stack([w, x, w, x, x], axis=1))
        assert kernel.wait_optimized(120)
