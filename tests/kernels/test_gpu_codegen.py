"""The code the GPU backends make, checked in their assembly (no GPU needed): what
clang's native build of the same OpenCL C makes, where spirvjit used to do worse
(benchmarks/gpu_codegen.py measures the whole benchmark suite)."""

from __future__ import annotations

import re

import pytest

import spirvjit
from spirvjit.toolchain import find_tool

pytestmark = pytest.mark.skipif(find_tool("clang") is None, reason="needs clang-22")

FLOAT4 = """
kernel void copy4(global const float4* in, global float4* out, local float4* tmp) {
    size_t i = get_global_id(0);
    tmp[get_local_id(0)] = in[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[i] = tmp[get_local_id(0)] * 2.0f;
}
"""

DIVIDE = """
kernel void f32(global float4* a, global const float4* b) {
    size_t i = get_global_id(0);
    a[i] = a[i] / b[i] + sqrt(b[i]);
}
kernel void f64(global double* a, global const double* b) {
    size_t i = get_global_id(0);
    a[i] = a[i] / b[i];
}
"""
CORRECTLY_ROUNDED = "-cl-fp32-correctly-rounded-divide-sqrt"


def _asm(source: str, kernel: str, target: str, options=()) -> str:
    program = spirvjit.compile_opencl(source, list(options))
    return program.for_target(spirvjit.parse_target(target)).assembly(kernel)


def test_nvidia_float4_accesses_are_one_vector_access_each():
    ptx = _asm(FLOAT4, "copy4", "sm_90")
    # Was four 32-bit accesses each: the translator capped alignment at the lane's.
    assert len(re.findall(r"ld\.global\.v4\.", ptx)) == 1
    assert len(re.findall(r"st\.global\.v4\.", ptx)) == 1
    assert len(re.findall(r"ld\.shared\.v4\.", ptx)) == 1
    assert not re.findall(r"ld\.global\.(?:f32|b32)", ptx)
    assert len(re.findall(r"\.ptr \.global \.align 16", ptx)) == 2


def test_amd_float4_accesses_are_dwordx4():
    gcn = _asm(FLOAT4, "copy4", "gfx942")
    assert "global_load_dwordx4" in gcn and "global_store_dwordx4" in gcn
    assert "ds_write_b128" in gcn and "ds_read_b128" in gcn


def test_host_vector_accesses_still_assume_only_the_lane_alignment():
    # NumPy guarantees scalar alignment only: the CPU must not assume 16 bytes.
    program = spirvjit.compile_opencl(FLOAT4)
    assert "align 16" not in program.translation().kernel_functions["copy4"].__str__()


@pytest.mark.parametrize("target", ["gfx942", "gfx1100"])
def test_amd_float_division_uses_opencls_accuracy(target):
    fast = _asm(DIVIDE, "f32", target)
    exact = _asm(DIVIDE, "f32", target, [CORRECTLY_ROUNDED])
    assert "v_div_fixup_f32" not in fast and "v_div_scale_f32" not in fast
    assert "v_div_fixup_f32" in exact  # correctly rounded only when asked for
    # double division is always correctly rounded
    assert "v_div_fixup_f64" in _asm(DIVIDE, "f64", target)


def test_build_options_are_checked_and_keyed():
    spirv = spirvjit.compile_opencl(DIVIDE).spirv
    with pytest.raises(ValueError, match="unknown build option '-O7'"):
        spirvjit.load_spirv(spirv, options=["-O7"])
    plain = spirvjit.load_spirv(spirv)
    exact = spirvjit.load_spirv(spirv, options=[CORRECTLY_ROUNDED])
    assert plain.kernel_key("f32") != exact.kernel_key("f32")
    assert CORRECTLY_ROUNDED in exact.kernel_key("f32").options
