"""Hand-written SPIR-V (assembled with spirv-as): specialization constants, and instructions
clang doesn't emit but other producers do (OpPhi, OpSwitch on 64-bit selectors, NoSignedWrap,
FPRoundingMode, SaturatedConversion, mangled built-ins imported with LinkageAttributes)."""

from __future__ import annotations

import numpy as np
import pytest

import spirvjit

HEADER = """
OpCapability Addresses
OpCapability Kernel
OpCapability Int64
OpCapability Float64
OpCapability Linkage
OpMemoryModel Physical64 OpenCL
"""
TYPES = """
%void = OpTypeVoid
%bool = OpTypeBool
%uint = OpTypeInt 32 0
%ulong = OpTypeInt 64 0
%float = OpTypeFloat 32
%double = OpTypeFloat 64
%v2uint = OpTypeVector %uint 2
%p_uint = OpTypePointer CrossWorkgroup %uint
%p_ulong = OpTypePointer CrossWorkgroup %ulong
%p_float = OpTypePointer CrossWorkgroup %float
%p_double = OpTypePointer CrossWorkgroup %double
%uint_0 = OpConstant %uint 0
%uint_1 = OpConstant %uint 1
%ulong_0 = OpConstant %ulong 0
%ulong_1 = OpConstant %ulong 1
%ulong_2 = OpConstant %ulong 2
%ulong_3 = OpConstant %ulong 3
%ulong_4 = OpConstant %ulong 4
%ulong_5 = OpConstant %ulong 5
"""

SPEC_ASM = (
    HEADER
    + """
OpEntryPoint Kernel %main "spec"
OpDecorate %sa SpecId 0
OpDecorate %sb SpecId 1
OpDecorate %flag SpecId 2
OpDecorate %sf SpecId 3
"""
    + TYPES
    + """
%fn = OpTypeFunction %void %p_uint %p_float
%sa = OpSpecConstant %uint 7
%sb = OpSpecConstant %uint 100
%flag = OpSpecConstantTrue %bool
%sf = OpSpecConstant %float 1.5
%sum = OpSpecConstantOp %uint IAdd %sa %sb
%comp = OpSpecConstantComposite %v2uint %sum %sb
%main = OpFunction %void None %fn
%o = OpFunctionParameter %p_uint
%f = OpFunctionParameter %p_float
%entry = OpLabel
%flagv = OpSelect %uint %flag %uint_1 %uint_0
%c0 = OpCompositeExtract %uint %comp 0
%c1 = OpCompositeExtract %uint %comp 1
%p0 = OpInBoundsPtrAccessChain %p_uint %o %ulong_0
OpStore %p0 %sa Aligned 4
%p1 = OpInBoundsPtrAccessChain %p_uint %o %ulong_1
OpStore %p1 %sb Aligned 4
%p2 = OpInBoundsPtrAccessChain %p_uint %o %ulong_2
OpStore %p2 %flagv Aligned 4
%p3 = OpInBoundsPtrAccessChain %p_uint %o %ulong_3
OpStore %p3 %c0 Aligned 4
%p4 = OpInBoundsPtrAccessChain %p_uint %o %ulong_4
OpStore %p4 %c1 Aligned 4
OpStore %f %sf Aligned 4
OpReturn
OpFunctionEnd
"""
)


def _spec(assemble, spec_constants):
    prog = spirvjit.load_spirv(assemble(SPEC_ASM), spec_constants=spec_constants)
    o = np.zeros(5, np.uint32)
    f = np.zeros(1, np.float32)
    prog.kernel("spec")(o, f, global_size=(1,))
    return o, f


def test_spec_constant_defaults(assemble):
    o, f = _spec(assemble, {})
    np.testing.assert_array_equal(o, [7, 100, 1, 107, 100])
    assert f[0] == np.float32(1.5)


def test_spec_constants_set_at_load(assemble):
    # SpecConstantOp and SpecConstantComposite follow the new values.
    o, f = _spec(assemble, {0: 1000, 1: 5, 2: False, 3: np.float32(-0.25)})
    np.testing.assert_array_equal(o, [1000, 5, 0, 1005, 5])
    assert f[0] == np.float32(-0.25)


def test_spec_constants_from_path(assemble, tmp_path):
    path = tmp_path / "spec.spv"
    path.write_bytes(assemble(SPEC_ASM))
    prog = spirvjit.load_spirv(str(path), spec_constants={1: 9})
    o, f = np.zeros(5, np.uint32), np.zeros(1, np.float32)
    prog.kernel("spec")(o, f, global_size=(1,))
    np.testing.assert_array_equal(o, [7, 9, 1, 16, 9])


HAND_ASM = (
    HEADER.replace(
        "OpMemoryModel", 'OpExtension "SPV_KHR_no_integer_wrap_decoration"\nOpMemoryModel'
    )
    + """
OpEntryPoint Kernel %main "hand"
OpDecorate %ggid LinkageAttributes "_Z13get_global_idj" Import
OpDecorate %twice NoSignedWrap
OpDecorate %narrow FPRoundingMode RTZ
OpDecorate %sv SaturatedConversion
"""
    + TYPES
    + """
%fn = OpTypeFunction %void %p_ulong %p_double %p_float %p_uint
%gidfn = OpTypeFunction %ulong %uint
%ulong_10 = OpConstant %ulong 10
%ulong_big = OpConstant %ulong 5000000000
%ggid = OpFunction %ulong None %gidfn
%dim = OpFunctionParameter %uint
OpFunctionEnd
%main = OpFunction %void None %fn
%o = OpFunctionParameter %p_ulong
%d = OpFunctionParameter %p_double
%fo = OpFunctionParameter %p_float
%so = OpFunctionParameter %p_uint
%entry = OpLabel
%id = OpFunctionCall %ulong %ggid %uint_0
%key = OpIMul %ulong %id %ulong_big
OpSelectionMerge %merge None
OpSwitch %key %default 0 %case0 5000000000 %case1
%case0 = OpLabel
OpBranch %merge
%case1 = OpLabel
OpBranch %merge
%default = OpLabel
%twice = OpIMul %ulong %id %ulong_2
OpBranch %merge
%merge = OpLabel
%res = OpPhi %ulong %ulong_10 %case0 %ulong_3 %case1 %twice %default
%po = OpInBoundsPtrAccessChain %p_ulong %o %id
OpStore %po %res Aligned 8
%pd = OpInBoundsPtrAccessChain %p_double %d %id
%dv = OpLoad %double %pd Aligned 8
%narrow = OpFConvert %float %dv
%pf = OpInBoundsPtrAccessChain %p_float %fo %id
OpStore %pf %narrow Aligned 4
%sv = OpConvertFToS %uint %dv
%ps = OpInBoundsPtrAccessChain %p_uint %so %id
OpStore %ps %sv Aligned 4
OpReturn
OpFunctionEnd
"""
)


@pytest.fixture
def hand_results(assemble):
    prog = spirvjit.load_spirv(assemble(HAND_ASM))
    n = 6
    d = np.array([1 / 3, -1 / 3, 3e9, -3e9, np.nan, 2.5], np.float64)
    o, fo, so = np.zeros(n, np.uint64), np.zeros(n, np.float32), np.zeros(n, np.uint32)
    prog.kernel("hand")(o, d, fo, so, global_size=(n,))
    return d, o, fo, so.view(np.int32)


def test_phi_and_64bit_switch_with_imported_builtin(hand_results):
    _, o, _, _ = hand_results
    # key = id * 5e9: id 0 -> case 0 (10), id 1 -> 5000000000 (3), else 2 * id.
    np.testing.assert_array_equal(o, [10, 3, 4, 6, 8, 10])


def test_fp_rounding_mode_decoration(hand_results):
    d, _, fo, _ = hand_results
    # RTZ: 1/3 rounds down in magnitude for both signs (RTE would round 1/3 up).
    assert fo[0] == np.nextafter(np.float32(1 / 3), np.float32(0))
    assert fo[1] == -np.nextafter(np.float32(1 / 3), np.float32(0))
    assert fo[5] == np.float32(2.5)


def test_saturated_conversion_decoration(hand_results):
    _, _, _, so = hand_results
    np.testing.assert_array_equal(so, [0, 0, 2**31 - 1, -(2**31), 0, 2])
