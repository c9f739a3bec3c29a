"""The code the GPU backends make, checked in their assembly (no GPU needed): what
clang's native build of the same OpenCL C makes, where spirvjit used to do worse
(benchmarks/gpu_codegen.py measures the whole benchmark suite)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import spirvjit
from spirvjit.backends.gpu.abi import launch_specialization
from spirvjit.toolchain import find_tool

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks" / "kernels"

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


HISTOGRAM = """
kernel void histogram(global const uint *data, global uint *hist, uint n_words) {
    local uint bins[256];
    uint lid = get_local_id(0);
    bins[lid] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = get_global_id(0); i < n_words; i += get_global_size(0)) {
        uint w = data[i];
        atomic_inc(&bins[w & 0xff]);
        atom_inc(&bins[(w >> 8) & 0xff]);
        atomic_add(&bins[(w >> 16) & 0xff], 1u);
        atomic_inc(&bins[w >> 24]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (bins[lid])
        atomic_add(&hist[lid], bins[lid]);
}
"""


def _atomics_ir(source: str, target: str) -> list[str]:
    program = spirvjit.compile_opencl(source).for_target(spirvjit.parse_target(target))
    module = str(program.translation().kernel_functions["histogram"])
    return [line.strip() for line in module.splitlines() if "atomicrmw" in line]


@pytest.mark.parametrize("target", ["gfx942", "sm_90"])
def test_opencl_1x_atomics_are_relaxed_at_their_memorys_scope(target):
    # OpenCL 1.x atomics are relaxed; they were seq_cst (atomic_inc, imported calls), and
    # atomic_add on __global memory came at SPIR-V Workgroup scope from clang-22.
    local, device = ("workgroup", "agent") if target.startswith("gfx") else ("block", "device")
    found = _atomics_ir(HISTOGRAM, target)
    assert len(found) == 5
    on_local = [line for line in found if "addrspace(3)" in line]
    on_global = [line for line in found if "addrspace(1)" in line]
    assert len(on_local) == 4 and len(on_global) == 1
    assert all(line.endswith(f'syncscope("{local}") monotonic') for line in on_local)
    assert on_global[0].endswith(f'syncscope("{device}") monotonic')


def test_amd_local_histogram_issues_its_atomics_back_to_back():
    gcn = _asm(HISTOGRAM, "histogram", "gfx942")
    mnemonics = [
        line.split()[0]
        for line in gcn.splitlines()
        if line.startswith("\t") and not line.startswith("\t.")
    ]
    memory = [m for m in mnemonics if m.startswith(("ds_add", "ds_inc", "s_waitcnt"))]
    # Was ds_add_u32, s_waitcnt lgkmcnt(0), ds_add_u32, ... (a wait after every atomic).
    first = next(i for i, m in enumerate(memory) if m.startswith(("ds_add", "ds_inc")))
    assert all(m.startswith(("ds_add", "ds_inc")) for m in memory[first : first + 4])


def test_c11_atomics_keep_their_order():
    source = """
    kernel void histogram(global atomic_uint *counter) {
        atomic_fetch_add_explicit(counter, 1u, memory_order_seq_cst, memory_scope_work_group);
    }
    """
    program = spirvjit.compile_opencl(source, ["-cl-std=CL2.0"])
    module = str(program.for_target(spirvjit.parse_target("gfx942")).translation().module)
    found = [line.strip() for line in module.splitlines() if "atomicrmw" in line]
    # Work-group scope on memory that is not __local is widened: it may be global.
    assert found and all(line.endswith('syncscope("agent") seq_cst') for line in found)


SAXPY = """
kernel void saxpy(global float* y, global const float* x, float a) {
    size_t i = get_global_id(0);
    y[i] = a * x[i] + y[i];
}
"""
FAST_LAUNCH = launch_specialization(("ids32", "uniform", "zero_offset"))
PTX_64BIT = r"^(add|sub|mul|mad|shl|shr|and|or|xor)(\.lo|\.wide)?\.(s64|u64|b64)$"


def _ptx_counts(ptx: str) -> tuple[int, int]:
    mnemonics = [
        line.split()[0]
        for line in ptx.splitlines()
        if line.startswith("\t") and not line.startswith(("\t.", "\t//"))
    ]
    wide = sum(bool(re.match(PTX_64BIT, m)) for m in mnemonics)
    return wide, sum(m.startswith("cvt") for m in mnemonics)


@pytest.mark.parametrize("source, kernel", [(SAXPY, "saxpy"), (None, "sgemm")])
def test_nvidia_launch_facts_narrow_the_index_arithmetic(source, kernel):
    # The generic variant adds the 64-bit global offset to every id and computes the id
    # in 64 bits; a uniform, zero-offset launch with 32-bit ids needs neither.
    if source is None:
        source = (BENCHMARKS / f"{kernel}.cl").read_text()
    program = spirvjit.compile_opencl(source).for_target(spirvjit.parse_target("sm_90"))
    generic = program.assembly(kernel)
    fast = program.assembly(kernel, FAST_LAUNCH)
    (wide, cvt), (fast_wide, fast_cvt) = _ptx_counts(generic), _ptx_counts(fast)
    assert fast_wide <= wide and fast_cvt <= cvt
    if kernel == "saxpy":  # size_t i: the generic id is 64-bit (the offset is)
        assert fast_wide < wide and fast_cvt < cvt
    # No conversions at all: sgemm's int loop counter stays 32-bit (clang's -O2 for
    # spirv64 used to widen it to i64, with a trunc and a sext per index in the loop).
    assert fast_cvt == 0
    # The global offset x is the first parameter after the kernel's own: every variant
    # has it (one ABI), only the generic one reads it.
    # (sgemm's ids are ints: the low half of the offset is all it reads.)
    offset_x = rf"ld\.param\.b(32|64)\s+%\w+, \[{kernel}_param_{3 if kernel == 'saxpy' else 4}\]"
    assert re.search(offset_x, generic) and not re.search(offset_x, fast)


STENCIL = Path(__file__).resolve().parents[2] / "examples" / "kernels" / "stencil.cl"


def test_generic_ids_are_32_bit_below_the_global_offset():
    # group * size + local is below the global size, which the launchers keep below
    # 2**32: the generic variant computes it in 32 bits and adds the 64-bit offset.
    # stencil keeps its ids in ints, so the whole id is 32-bit, as in clang's native
    # build; the x id was a 64-bit mad, an add and a cvt.u32.u64 (and 59 PTX
    # instructions against clang's 50).
    program = spirvjit.compile_opencl(STENCIL.read_text())
    ptx = program.for_target(spirvjit.parse_target("sm_90")).assembly("stencil")
    ids = ptx.split("{", 1)[1].split("bra")[0]  # the body up to the bounds check
    assert not re.search(r"mad\.lo\.s64|cvt\.u32\.u64|\.s64|\.u64", ids)
    assert len(re.findall(r"mad\.lo\.s32\s+%r\d+, %r\d+, %r\d+, %r\d+;", ids)) == 2
    # ... with both offsets still added (their low halves are all an int id needs).
    assert re.search(r"ld\.param\.b32\s+%r\d+, \[stencil_param_4\]", ptx)
    assert re.search(r"ld\.param\.b32\s+%r\d+, \[stencil_param_5\]", ptx)
    # A size_t id keeps the whole 64-bit offset: 32-bit core, widened, then add.s64.
    saxpy = spirvjit.compile_opencl(SAXPY).for_target(spirvjit.parse_target("sm_90"))
    generic = saxpy.assembly("saxpy")
    offset = re.search(r"ld\.param\.b64\s+(%rd\d+), \[saxpy_param_3\]", generic)
    assert offset and re.search(rf"add\.s64\s+%rd\d+, (%rd\d+, )?{offset[1]}\b", generic)
    assert "mul.wide.u32" not in generic.split(offset[0])[1].split("ld.global")[0]

    # AMD: the y id was a 64-bit v_mad_u64_u32 and v_lshl_add_u64 with the offset; now
    # both ids are s_mul_i32, s_add_i32 (offset) and v_add_u32, as clang's build.
    gcn = program.for_target(spirvjit.parse_target("gfx942")).assembly("stencil")
    ids = gcn.split("s_cbranch_execz")[0]
    assert not re.search(r"v_\w*_(u64|i64|b64)", ids)
    assert len(re.findall(r"v_add_u32_e32", ids)) == 2


def test_launchers_refuse_global_sizes_the_32_bit_ids_cannot_hold():
    # What the 32-bit id arithmetic above relies on, for every launch.
    from spirvjit.backends.gpu.driver import GpuDriverError, check_sizes

    check_sizes((2**32 - 1, 1, 1), (1, 1, 1))
    for size in ((2**32, 1, 1), (1, 2**32, 1), (1, 1, 2**32)):
        with pytest.raises(GpuDriverError, match=r"below 2\*\*32"):
            check_sizes(size, (1, 1, 1))


def test_amd_uniform_launches_skip_the_partial_group_size():
    source = "kernel void k(global uint* out) { out[get_global_id(0)] = get_local_size(0); }"
    program = spirvjit.compile_opencl(source).for_target(spirvjit.parse_target("gfx942"))
    generic = program.assembly("k")
    uniform = program.assembly("k", launch_specialization(("uniform",)))
    # Generic: the last group holds what is left of the grid (the grid size from the
    # dispatch packet, offset 12, minus the group's start, the smaller of it and the
    # group size), in 32-bit scalar arithmetic (the packet's sizes are 32-bit): one
    # s_min_u32, where 64-bit arithmetic took a v_cmp_lt_u64 and selects.
    grid_size = re.compile(r"s_load_dword s\d+, s\[0:1\], 0xc")
    assert grid_size.search(generic) and "s_min_u32" in generic
    assert "v_cmp_lt_u64" not in generic and "s_mul_hi_u32" not in generic
    assert not grid_size.search(uniform) and "s_min_u32" not in uniform


@pytest.mark.parametrize("target", ["gfx942", "sm_90"])
def test_math_links_the_device_library_in_the_kernels_context(target):
    # Kernels are parsed into LLVM contexts of their own; the device library parsed in
    # another one made LLVM abort the process ("replaceAllUses ... different type").
    source = "kernel void f(global float* a) { size_t i = get_global_id(0); a[i] = sin(a[i]); }"
    program = spirvjit.compile_opencl(source).for_target(spirvjit.parse_target(target))
    assert program.object_code("f")[0]


RSQRT_DOT = """
kernel void gravity(global const float4* p, global float* out, float eps2) {
    size_t i = get_global_id(0);
    float4 d = p[i] - p[0];
    out[i] = rsqrt(dot(d, d) + eps2);
}
"""


def test_nvidia_rsqrt_is_one_instruction_and_dot_is_fused():
    # rsqrt was sqrt.rn + rcp.rn (two slow-path sequences, 31 registers in n-body against
    # clang's 22); dot was 4 mul + 3 add where clang (FP_CONTRACT on) fuses them.
    ptx = _asm(RSQRT_DOT, "gravity", "sm_90")
    assert "rsqrt.approx.f32" in ptx
    assert not re.search(r"\b(sqrt|rcp)\.rn\.f32", ptx)
    assert len(re.findall(r"\bfma\.rn\.f32", ptx)) >= 3
    # Correctly rounded division and sqrt asked for: no approximate rsqrt either.
    exact = _asm(RSQRT_DOT, "gravity", "sm_90", [CORRECTLY_ROUNDED])
    assert "rsqrt.approx" not in exact and "sqrt.rn.f32" in exact


def test_only_gpu_dots_are_contracted():
    # The GPU ABIs fuse dot's products and sums; the host CPU keeps separate roundings.
    program = spirvjit.compile_opencl(RSQRT_DOT)
    host = str(program.translation().module)
    gpu = str(program.for_target(spirvjit.parse_target("sm_90")).translation().module)
    assert len(re.findall(r"call float @\"?llvm\.fmuladd\.f32", gpu)) >= 3
    assert re.search(r"fmul <4 x float>", host) and "contract" not in host
    assert "fmuladd" not in host


@pytest.mark.parametrize("target", ["gfx90a", "gfx942"])
def test_amd_dot_is_one_multiply_and_fmas_as_libclcs(target):
    # A vector fmul whose lanes were then added stayed vector on AMD's packed fp32: two
    # v_pk_mul_f32 and three adds, four products live at once. Per lane, as libclc's
    # dot: one multiply and three FMAs (n-body: 22 VGPRs on gfx90a/gfx942, now 18;
    # clang's native build has 37).
    gcn = _asm(RSQRT_DOT, "gravity", target)
    assert not re.search(r"\bv_pk_mul_f32", gcn)
    assert len(re.findall(r"\bv_(fma|fmac)_f32", gcn)) >= 3


@pytest.mark.parametrize("target", ["gfx90a", "gfx942"])
def test_amd_packed_fp32_from_the_slp_vectorizer(target):
    # clang's -O3 runs the SLP vectorizer, which packs independent float lanes into
    # <2 x float> operations: gfx90a/gfx942 run them as v_pk_fma/mul/add_f32. Without it
    # vec4_math had 10 packed operations against clang's 32.
    source = Path(__file__).resolve().parents[2] / "examples" / "kernels" / "vec4_math.cl"
    gcn = _asm(source.read_text(), "vec4_math", target)
    assert len(re.findall(r"\bv_pk_(fma|mul|add)_f32", gcn)) >= 32


def _benchmark_tool():
    """benchmarks/gpu_codegen.py as a module: its native builds and ptxas/objdump readers."""
    import importlib.util
    import sys

    if "gpu_codegen" not in sys.modules:
        path = BENCHMARKS.parent / "gpu_codegen.py"
        spec = importlib.util.spec_from_file_location("gpu_codegen", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["gpu_codegen"] = module  # its dataclasses look themselves up there
        spec.loader.exec_module(module)
    return sys.modules["gpu_codegen"]


def _nvidia_against_native(kernel: str, target: str, tmp_path: Path, file: Path | None = None):
    """(native, spirvjit launch-specialised) ``Code`` of a benchmark kernel, from ptxas -v."""
    tool = _benchmark_tool()
    if find_tool("ptxas") is None or not tool.LIBCLC_NVPTX.exists():
        pytest.skip("needs ptxas (CUDA toolkit) and libclc's nvptx64--nvidiacl.bc")
    path = file or BENCHMARKS / f"{kernel}.cl"
    native = tool.nvidia_native(path, target, tmp_path)
    ours = spirvjit.compile_opencl(path.read_text()).for_target(spirvjit.parse_target(target))
    mine = ours.assembly(kernel, FAST_LAUNCH)
    return (
        tool.nvidia_analyse(native, kernel, target, tmp_path),
        tool.nvidia_analyse(mine, kernel, target, tmp_path),
        mine,
    )


def test_nvidia_loops_are_not_unrolled_again_by_ptxas():
    # LLVM's unroller has decided; ptxas unrolled spirvjit's loops (a conditional branch
    # back to the header) a second time but not clang's (exit branch, then bra.uni back).
    ptx = _asm((BENCHMARKS / "nbody.cl").read_text(), "nbody", "sm_90")
    assert re.search(r'^\.address_size 64\n\.pragma "nounroll";$', ptx, re.M)


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_nvidia_nbody_registers_as_native(target, tmp_path):
    # Was 32 registers against clang's 22: ptxas unrolled the inner loop 4 times.
    native, mine, _ = _nvidia_against_native("nbody", target, tmp_path)
    assert native.registers and mine.registers <= native.registers
    assert mine.spills == native.spills == 0


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_nvidia_pointer_walking_loops_unroll_as_their_index_form(target, tmp_path):
    # The SPIR-V producer's strength reduction makes gemm_naive's k loop walk two
    # pointers: NVPTX unrolled it 8 times (32 registers, clang's native build 28-30 with
    # 4). It now gets the count LLVM gives the index form (backends/nvptx/pointer_loops.py).
    native, mine, ptx = _nvidia_against_native("gemm_naive", target, tmp_path)
    # Two loads an iteration: four iterations in the loop, one in the remainder's.
    assert len(re.findall(r"^\s*ld\.global", ptx, re.M)) == 2 * 4 + 2
    assert native.registers and mine.registers <= native.registers
    assert mine.instructions <= native.instructions
    # The generic variant too (it reads the global offsets, which native ignores).
    source = (BENCHMARKS / "gemm_naive.cl").read_text()
    generic = _asm(source, "gemm_naive", target)
    assert len(re.findall(r"^\s*ld\.global", generic, re.M)) == 2 * 4 + 2


TWO_LOCALS = """
kernel void two(global float* out, local float* a, local float* b) {
    size_t l = get_local_id(0);
    a[l] = out[l];
    b[l] = 2.0f * out[l];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[l] = a[l ^ 1] + b[l ^ 1];
}
"""


def test_first_local_argument_is_the_dynamic_shared_base():
    # The launcher places the first __local argument at offset 0 of the dynamic shared
    # memory when no extern __shared__ array is there: its offset parameter is not
    # read (was ld.param + add per __local argument; reduction had 61 PTX
    # instructions against clang's 58). The second one is still base + offset.
    ptx = _asm(TWO_LOCALS, "two", "sm_90")
    assert not re.search(r"ld\.param\.\w+\s+%\w+, \[two_param_1\]", ptx)
    assert re.search(r"ld\.param\.\w+\s+%\w+, \[two_param_2\]", ptx)
    gcn = _asm(TWO_LOCALS, "two", "gfx942")
    # kernel arguments: out at 0 (8 bytes), a at 8, b at 12: only b's offset is loaded
    assert not re.search(r"s_load_dword s\d+, s\[\d+:\d+\], 0x8\b", gcn)
    assert re.search(r"s_load_dword s\d+, s\[\d+:\d+\], 0xc\b", gcn)


def test_ids32_tells_llvm_the_int_id_is_non_negative():
    # matvec's `(size_t)i * cols` (int i = get_global_id(0)) was a sign extension and two
    # 64-bit multiply-adds (8 VGPRs on gfx942 against clang's 6); with ids32 the id is
    # known non-negative: one 32x32->64 multiply-add.
    source = (BENCHMARKS / "matvec.cl").read_text()
    program = spirvjit.compile_opencl(source).for_target(spirvjit.parse_target("gfx942"))
    fast = program.assembly("matvec", FAST_LAUNCH)
    assert len(re.findall(r"\bv_mad_u64_u32\b", fast)) == 1
    assert "v_ashrrev_i32" not in fast
    # The generic variant promises nothing: the id's sign is still extended there.
    generic = program.assembly("matvec")
    assert "v_ashrrev_i32" in generic or "v_mad_i64_i32" in generic


@pytest.mark.parametrize(
    "target, invalidate", [("gfx1100", "buffer_gl0_inv"), ("gfx1201", "global_inv")]
)
def test_amd_local_barriers_do_not_invalidate_the_global_caches(target, invalidate):
    # barrier(CLK_LOCAL_MEM_FENCE) orders __local memory only (OpenCL): its fences carry
    # clang's MMRA "amdgpu-synchronize-as"="local", so gfx10+ no longer invalidates the
    # vector L0 cache after every barrier of the reduction tree.
    source = (BENCHMARKS / "reduction.cl").read_text()
    local = _asm(source, "reduction", target)
    assert "s_barrier" in local and invalidate not in local
    # A global-memory barrier still does.
    both = _asm(source.replace("CLK_LOCAL_MEM_FENCE", "CLK_GLOBAL_MEM_FENCE"), "reduction", target)
    assert invalidate in both


def test_amd_row_offset_of_an_int_id_is_one_signed_multiply():
    # matvec's `a + (size_t)i * cols` with int i and cols: the SPIR-V computes it after the
    # `cols > 0` loop guard, where O3 writes `sext cols` as `zext nneg cols`, and AMDGPU
    # multiplied 64x64 (two v_mad_u64_u32): 8 VGPRs on gfx942 in the generic variant,
    # clang's native build 6.
    source = (BENCHMARKS / "matvec.cl").read_text()
    gcn = _asm(source, "matvec", "gfx942")
    assert "v_mad_i64_i32" in gcn and "v_mad_u64_u32" not in gcn
    assert int(re.search(r"\.vgpr_count:\s+(\d+)", gcn)[1]) <= 6


def test_only_multiplies_by_signed_values_get_sign_extensions():
    from spirvjit.backends.amdgpu.multiply import sign_extend_multiplies

    ir = """
  %s = ashr exact i64 %x, 32
  %t = sext i32 %y to i64
  %a = zext nneg i32 %n to i64
  %m = mul nsw i64 %s, %a
  %b = zext nneg i32 %k to i64
  %m2 = mul i64 %b, %t
  %g = getelementptr float, ptr addrspace(1) %p, i64 %b
  %c = zext nneg i32 %j to i64
  %u = zext i32 %w to i64
  %m3 = mul i64 %c, %u
"""
    text, changed = sign_extend_multiplies(ir)
    assert changed == 1
    assert "%a = sext i32 %n to i64" in text
    # %b also indexes a pointer, %c multiplies a zero-extended value: both stay.
    assert "%b = zext nneg i32 %k to i64" in text and "%c = zext nneg i32 %j to i64" in text


def test_generic_int_ids_are_32_bit_sums_with_the_offset():
    # The generic variant's id is offset + zext(group * size + local), 64-bit; an int id
    # that is sign-extended again (mandelbrot's `py * get_global_size(0) + px`) kept the
    # 64-bit sum alive: a widening, a 64-bit add and a narrowing per id on NVIDIA (61 PTX
    # instructions, clang's native build 58). Its low half is core + (int)offset.
    source = (BENCHMARKS.parents[1] / "examples" / "kernels" / "mandelbrot.cl").read_text()
    ptx = _asm(source, "mandelbrot", "sm_90")
    assert "cvt.u32.u64" not in ptx
    for offset in ("mandelbrot_param_6", "mandelbrot_param_7"):  # global offset x, y
        assert re.search(rf"ld\.param\.b32\s+%r\d+, \[{offset}\]", ptx)
        assert not re.search(rf"ld\.param\.b64\s+%rd\d+, \[{offset}\]", ptx)


NARROWABLE = """
define i64 @f(i64 %off, i32 %c) {
  %z = zext i32 %c to i64
  %s = add i64 %off, %z
  %t = trunc i64 %s to i32
  %a = shl i64 %s, 32
  %b = ashr exact i64 %a, 30
  %tz = zext i32 %t to i64
  %r = xor i64 %b, %tz
  ret i64 %r
}
"""


def test_narrowed_ids_compute_the_same_values():
    # The rewrite in the IR the GPU back ends get, checked by running both versions of a
    # function with its patterns on the host (ids near 2**31 and 2**32, offsets that carry).
    import ctypes

    import llvmlite.binding as llvm

    from spirvjit.backends.nvptx.narrow_ids import narrow_truncated_sums

    narrowed, changed = narrow_truncated_sums(NARROWABLE)
    assert changed == 1 and "trunc i64 %s" not in narrowed and "shl i64 %s," not in narrowed
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    signature = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_int32)
    engines, functions = [], []
    for text in (NARROWABLE, narrowed):
        # An engine owns its target machine: one each.
        machine = llvm.Target.from_default_triple().create_target_machine()
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(text), machine)
        engine.finalize_object()
        engines.append(engine)
        functions.append(signature(engine.get_function_address("f")))
    values = [0, 1, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**40 + 2**31 + 5, -1, -(2**33)]
    for off in values:
        for c in (0, 1, 2**31 - 1, -(2**31), -1, 12345):
            assert functions[0](off, c) == functions[1](off, c), (off, c)


def test_ids_with_a_64_bit_use_stay_64_bit():
    from spirvjit.backends.nvptx.narrow_ids import narrow_truncated_sums

    wide = NARROWABLE.replace("%r = xor i64 %b, %tz", "%r = xor i64 %b, %s")
    assert narrow_truncated_sums(wide) == (wide, 0)


def _conditional_then_uni(ptx: str) -> list[str]:
    """Conditional branches followed at once by an unconditional one: NVPTX's form of a
    branch whose taken block block placement moved up."""
    return re.findall(r"^\s*@%p\d+ bra\s+\S+;\n\s*bra\.uni", ptx, re.M)


@pytest.mark.parametrize("file, kernel", [("stencil.cl", "stencil"), (None, "stencil3d")])
def test_nvidia_if_blocks_are_laid_out_as_clangs(file, kernel):
    # The SPIR-V puts stencil's interior (else) block before its boundary (then) block;
    # block placement moved the then-block up and NVPTX branched to it and then, with
    # bra.uni, to the other: one instruction more than clang's native build (50/51).
    path = BENCHMARKS.parents[1] / "examples" / "kernels" / file if file else None
    source = (path or BENCHMARKS / f"{kernel}.cl").read_text()
    program = spirvjit.compile_opencl(source).for_target(spirvjit.parse_target("sm_90"))
    for variant in ((), FAST_LAUNCH):
        assert not _conditional_then_uni(program.assembly(kernel, variant))


BRANCHY = """
define i32 @f(i32 %a, i32 %b) {
entry:
  %c = icmp sgt i32 %a, %b
  br i1 %c, label %then, label %else

else:                                             ; preds = %entry
  %d = sub i32 %b, %a
  br label %join

then:                                             ; preds = %entry
  %e = sub i32 %a, %b
  br label %join

join:                                             ; preds = %then, %else
  %r = phi i32 [ %e, %then ], [ %d, %else ]
  ret i32 %r
}
"""


def test_taken_blocks_move_up_only_where_clang_would_have_them():
    import llvmlite.binding as llvm

    from spirvjit.backends.nvptx.block_order import taken_blocks_after_branches

    moved, count = taken_blocks_after_branches(BRANCHY)
    assert count == 1
    assert moved.index("\nthen:") < moved.index("\nelse:") < moved.index("\njoin:")
    llvm.parse_assembly(moved).verify()  # the same function, blocks in another order
    # A block that a later block also branches to stays where it is.
    later = BRANCHY.replace("  %d = sub i32 %b, %a\n  br label %join", "  br label %then")
    later = later.replace(", [ %d, %else ]", "").replace("%then, %else", "%then")
    llvm.parse_assembly(later).verify()
    assert taken_blocks_after_branches(later) == (later, 0)
    # Numbered values must stay in order: no move takes one past another.
    numbered = BRANCHY.replace("%d", "%0").replace("%e", "%1")
    assert taken_blocks_after_branches(numbered) == (numbered, 0)
