"""SPIR-V features the OpenCL-CTS spirv_new tests use and a CPU device can honour
(OpExpectKHR / OpAssumeTrueKHR, LinkOnceODR linkage, sub-group operations with the
documented sub-group size of 1), and capabilities no spirvjit device can honour, which
load_spirv refuses with a SpirvError naming them."""

from __future__ import annotations

import numpy as np
import pytest
from harness import build

import spirvjit
from spirvjit.spirv import capabilities

HEADER = """
OpCapability Addresses
OpCapability Kernel
OpCapability Int64
OpCapability Linkage
{capabilities}
{extensions}
OpMemoryModel Physical64 OpenCL
"""
TYPES = """
%void = OpTypeVoid
%bool = OpTypeBool
%uint = OpTypeInt 32 0
%ulong = OpTypeInt 64 0
%p_uint = OpTypePointer CrossWorkgroup %uint
%uint_0 = OpConstant %uint 0
%uint_1 = OpConstant %uint 1
%uint_3 = OpConstant %uint 3
%ulong_0 = OpConstant %ulong 0
%ulong_1 = OpConstant %ulong 1
%kernel_t = OpTypeFunction %void %p_uint
"""


def _module(body: str, caps: str = "", exts: str = "", decorations: str = "") -> str:
    head = HEADER.format(capabilities=caps, extensions=exts)
    return head + 'OpEntryPoint Kernel %main "main"\n' + decorations + TYPES + body


def test_expect_and_assume_are_hints(assemble):
    body = """
%main = OpFunction %void None %kernel_t
%o = OpFunctionParameter %p_uint
%entry = OpLabel
%v = OpLoad %uint %o Aligned 4
%e = OpExpectKHR %uint %v %uint_1
%positive = OpUGreaterThan %bool %e %uint_0
OpAssumeTrueKHR %positive
%w = OpIAdd %uint %e %uint_3
OpStore %o %w Aligned 4
OpReturn
OpFunctionEnd
"""
    spv = assemble(
        _module(body, "OpCapability ExpectAssumeKHR", 'OpExtension "SPV_KHR_expect_assume"'),
        "spv1.2",
    )
    out = np.array([5], np.uint32)
    spirvjit.load_spirv(spv).kernel("main")(out, global_size=1)
    assert out[0] == 8


def test_link_once_odr_function(assemble):
    decorations = 'OpDecorate %helper LinkageAttributes "helper" LinkOnceODR\n'
    body = """
%helper_t = OpTypeFunction %uint %uint
%helper = OpFunction %uint None %helper_t
%x = OpFunctionParameter %uint
%hl = OpLabel
%y = OpIMul %uint %x %uint_3
OpReturnValue %y
OpFunctionEnd
%main = OpFunction %void None %kernel_t
%o = OpFunctionParameter %p_uint
%entry = OpLabel
%v = OpLoad %uint %o Aligned 4
%r = OpFunctionCall %uint %helper %v
OpStore %o %r Aligned 4
OpReturn
OpFunctionEnd
"""
    spv = assemble(
        _module(body, exts='OpExtension "SPV_KHR_linkonce_odr"', decorations=decorations),
        "spv1.2",
    )
    out = np.array([7], np.uint32)
    spirvjit.load_spirv(spv).kernel("main")(out, global_size=1)
    assert out[0] == 21


def test_subgroup_rotate_by_zero(assemble):
    # clang-22 and llvm-spirv-15 need SPV_KHR_subgroup_rotate enabled to emit it; other
    # producers do. With one work-item per sub-group, a rotation returns the value.
    body = """
%main = OpFunction %void None %kernel_t
%o = OpFunctionParameter %p_uint
%entry = OpLabel
%v = OpLoad %uint %o Aligned 4
%r = OpGroupNonUniformRotateKHR %uint %uint_3 %v %uint_0
%w = OpIAdd %uint %r %uint_1
OpStore %o %w Aligned 4
OpReturn
OpFunctionEnd
"""
    caps = "OpCapability GroupNonUniform\nOpCapability GroupNonUniformRotateKHR"
    spv = assemble(_module(body, caps, 'OpExtension "SPV_KHR_subgroup_rotate"'), "spv1.3")
    out = np.array([41], np.uint32)
    spirvjit.load_spirv(spv).kernel("main")(out, global_size=1)
    assert out[0] == 42


@pytest.mark.parametrize(
    "capability",
    ["Shader", "Geometry", "Tessellation", "Pipes", "DeviceEnqueue", "ImageBasic",
     "LiteralSampler", "GroupNonUniformQuad"],
)  # fmt: skip
def test_unhonourable_capability_refused_at_load(assemble, capability):
    body = """
%main = OpFunction %void None %kernel_t
%o = OpFunctionParameter %p_uint
%entry = OpLabel
OpReturn
OpFunctionEnd
"""
    spv = assemble(_module(body, f"OpCapability {capability}"), "spv1.3")
    with pytest.raises(spirvjit.SpirvError, match=f"capability {capability}\\b"):
        spirvjit.load_spirv(spv)


def test_capability_tables_for_the_device_api():
    assert capabilities.supports("Float64") and capabilities.supports("GroupNonUniformBallot")
    assert capabilities.supports("SPV_KHR_expect_assume")
    assert capabilities.supports("cl_khr_subgroups")
    assert not capabilities.supports("Shader") and not capabilities.supports("ImageBasic")
    assert not capabilities.supports("cl_khr_gl_sharing")
    assert capabilities.cpu_sub_group_sizes() == (1,)
    assert "cl_khr_subgroup_ballot" in capabilities.cpu_opencl_extensions()
    refused = set(capabilities.REFUSED_CAPABILITIES)
    assert not refused & set(capabilities.supported_capabilities())


SUB_GROUPS = r"""
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
kernel void sub_groups(global const int* a, global const float* f, global int* o,
                       global float* fo) {
    size_t i = get_global_id(0), n = get_global_size(0);
    int x = a[i];
    float y = f[i];
    int k = 0;
    o[k++ * n + i] = get_sub_group_size();
    o[k++ * n + i] = get_max_sub_group_size();
    o[k++ * n + i] = get_sub_group_local_id();
    o[k++ * n + i] = get_sub_group_id();
    o[k++ * n + i] = get_num_sub_groups();
    o[k++ * n + i] = sub_group_reduce_add(x);
    o[k++ * n + i] = sub_group_reduce_max(x);
    o[k++ * n + i] = sub_group_scan_inclusive_min(x);
    o[k++ * n + i] = sub_group_scan_exclusive_add(x);
    o[k++ * n + i] = sub_group_scan_exclusive_max(x);
    o[k++ * n + i] = sub_group_scan_exclusive_min(x);
    o[k++ * n + i] = sub_group_broadcast(x, 0);
    o[k++ * n + i] = sub_group_all(x > 0);
    o[k++ * n + i] = sub_group_any(x < 0);
    o[k++ * n + i] = sub_group_elect();
    o[k++ * n + i] = sub_group_non_uniform_reduce_add(x);
    o[k++ * n + i] = sub_group_non_uniform_reduce_mul(x);
    o[k++ * n + i] = sub_group_non_uniform_scan_exclusive_mul(x);
    o[k++ * n + i] = sub_group_non_uniform_reduce_and(x);
    o[k++ * n + i] = sub_group_non_uniform_scan_exclusive_and(x);
    o[k++ * n + i] = sub_group_non_uniform_reduce_logical_xor(x > 2);
    o[k++ * n + i] = sub_group_non_uniform_broadcast(x, 0);
    o[k++ * n + i] = sub_group_broadcast_first(x);
    o[k++ * n + i] = sub_group_non_uniform_all_equal(x);
    uint4 b = sub_group_ballot(x > 3);
    o[k++ * n + i] = b.x + b.y + b.z + b.w;
    o[k++ * n + i] = sub_group_ballot_bit_count(b);
    o[k++ * n + i] = sub_group_ballot_exclusive_scan(b);
    o[k++ * n + i] = sub_group_ballot_inclusive_scan(b);
    o[k++ * n + i] = sub_group_inverse_ballot(b);
    o[k++ * n + i] = sub_group_ballot_bit_extract(b, 0);
    o[k++ * n + i] = sub_group_ballot_bit_extract((uint4)(0, 1u << 5, 0, 0), 37);
    o[k++ * n + i] = sub_group_shuffle(x, 0);
    o[k++ * n + i] = sub_group_shuffle_xor(x, 0);
    o[k++ * n + i] = sub_group_shuffle_up(x, 0);
    o[k++ * n + i] = sub_group_shuffle_down(x, 0);
    o[k++ * n + i] = sub_group_clustered_reduce_add(x, 1);
    sub_group_barrier(CLK_GLOBAL_MEM_FENCE);
    if (x > 0) sub_group_barrier(CLK_LOCAL_MEM_FENCE);  /* divergent: fine per sub-group */
    o[k++ * n + i] = x;
    fo[0 * n + i] = sub_group_reduce_min(y);
    fo[1 * n + i] = sub_group_scan_exclusive_min(y);
    fo[2 * n + i] = sub_group_scan_exclusive_max(y);
    fo[3 * n + i] = sub_group_non_uniform_scan_exclusive_mul(y);
}
"""

INT_MIN, INT_MAX = -(2**31), 2**31 - 1


def test_sub_group_operations_with_one_work_item_per_sub_group(producer):
    prog = build(SUB_GROUPS, producer=producer)
    n, local = 32, 8
    x = np.arange(-10, 22, dtype=np.int32)
    f = x.astype(np.float32) * 0.5
    o = np.zeros((37, n), np.int32)
    fo = np.zeros((4, n), np.float32)
    prog.kernel("sub_groups")(x, f, o, fo, global_size=n, local_size=local)
    lid = np.arange(n) % local
    big = x > 3
    expected = [
        np.ones(n), np.ones(n), np.zeros(n), lid, np.full(n, local),  # sizes and ids
        x, x, x, np.zeros(n), np.full(n, INT_MIN), np.full(n, INT_MAX),  # reduce / scans
        x, x > 0, x < 0, np.ones(n),  # broadcast, all, any, elect
        x, x, np.ones(n), x, np.full(n, -1), x > 2,  # non-uniform arithmetic
        x, x, np.ones(n),  # non-uniform broadcast, broadcast_first, all_equal
        big, big, np.zeros(n), big, big, big, np.ones(n),  # ballot family
        x, x, x, x, x,  # shuffles, clustered reduce
        x,  # after the sub-group barrier
    ]  # fmt: skip
    assert len(expected) == o.shape[0]
    for k, want in enumerate(expected):
        np.testing.assert_array_equal(o[k], np.asarray(want).astype(np.int32), f"row {k}")
    np.testing.assert_array_equal(fo[0], f)
    np.testing.assert_array_equal(fo[1], np.full(n, np.inf, np.float32))
    np.testing.assert_array_equal(fo[2], np.full(n, -np.inf, np.float32))
    np.testing.assert_array_equal(fo[3], np.ones(n, np.float32))


def test_work_group_collective_is_refused_by_name(producer):
    prog = build(
        "kernel void wg(global int* a) { a[get_global_id(0)] = work_group_reduce_add(a[0]); }",
        producer=producer,
    )
    with pytest.raises(spirvjit.SpirvError, match="Workgroup scope"):
        prog.kernel("wg")(np.zeros(4, np.int32), global_size=4)


def test_devices_report_what_they_support():
    host = spirvjit.devices()[0]
    assert host.sub_group_sizes == (1,)
    assert "cl_khr_fp64" in host.extensions and host.supports("cl_khr_fp64")
    assert host.supports("Float64") and host.supports("SPV_KHR_expect_assume")
    assert not host.supports("Shader") and not host.supports("cl_khr_gl_sharing")


MEM_FENCES = r"""
kernel void mem_fences(global int *a, local int *t)
{
    size_t l = get_local_id(0), n = get_local_size(0);
    t[l] = a[get_global_id(0)];
    mem_fence(CLK_LOCAL_MEM_FENCE);
    write_mem_fence(CLK_GLOBAL_MEM_FENCE);
    read_mem_fence(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    barrier(CLK_LOCAL_MEM_FENCE);
    a[get_global_id(0)] = t[(l + 1) % n] + t[l];
}
"""


@pytest.mark.parametrize("std", ["CL1.2", "CL3.0"])
def test_opencl_1_memory_fences(producer, std):
    """mem_fence, read_mem_fence, write_mem_fence: clang-22 leaves them imported (at every
    -cl-std), and the launch failed with "calls '_Z9mem_fencej', which the module imports
    but does not define"."""
    prog = build(MEM_FENCES, options=(f"-cl-std={std}",), producer=producer)
    a = np.arange(32, dtype=np.int32)
    expected = (np.roll(a.reshape(4, 8), -1, 1) + a.reshape(4, 8)).ravel()
    prog.kernel("mem_fences")(a, spirvjit.LocalMemory(32), global_size=32, local_size=8)
    np.testing.assert_array_equal(a, expected)
