"""GPU targets: every kernel of the suite compiles for AMD and NVIDIA GPUs, and the real
tools accept the products (ld.lld links the AMD objects, llvm-readelf shows their HSA
metadata, llvm-objdump disassembles them; ptxas assembles the PTX). Kernels run on a
GPU only where one is present (test_gpu_runtime.py)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from harness import build
from sources import CASES

import spirvjit
from spirvjit.backends import backend
from spirvjit.errors import CompileError
from spirvjit.program import Program
from spirvjit.target import parse_target
from spirvjit.toolchain import find_tool

AMD_TARGETS = ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201")
NVIDIA_TARGETS = ("sm_80", "sm_90")
# CI compiles the whole suite for one AMD and one NVIDIA target; the others run with
# `-m slow` (each is a few minutes on 2 cores).
CI_TARGETS = ("gfx942", "sm_90")


def _targets(names: tuple[str, ...]) -> list:
    return [pytest.param(n, marks=() if n in CI_TARGETS else pytest.mark.slow) for n in names]


WAVEFRONT = {"gfx90a": 64, "gfx942": 64, "gfx950": 64, "gfx1100": 32, "gfx1201": 32}
HIP_SOURCE = Path(__file__).parent.parent / "data" / "hip" / "builtins.hip"


def suite_objects(target_name: str) -> dict[str, bytes]:
    """Every kernel of every case, compiled for ``target_name``: "case/kernel" -> product."""
    target = parse_target(target_name)
    objects = {}
    for name, case in CASES.items():
        program = build(case.source, case.options).for_target(target)
        for kernel in program.kernel_names:
            objects[f"{name}/{kernel}"] = program.object_code(kernel)[0]
    return objects


def _tool(name: str) -> str:
    path = find_tool(name)
    if path is None:
        pytest.skip(f"{name} is not installed")
    return path


def _write_all(objects: dict[str, bytes], directory: Path, suffix: str) -> dict[str, Path]:
    paths = {}
    for i, (name, data) in enumerate(objects.items()):
        paths[name] = directory / f"{i}.{suffix}"
        paths[name].write_bytes(data)
    return paths


@pytest.mark.parametrize("target_name", _targets(AMD_TARGETS))
def test_suite_compiles_for_amd(target_name: str, tmp_path: Path):
    objects = suite_objects(target_name)
    assert len(objects) > 700
    paths = _write_all(objects, tmp_path, "hsaco")
    files = [str(p) for p in paths.values()]
    notes = subprocess.run(
        [_tool("llvm-readelf"), "--notes", *files], capture_output=True, text=True, check=True
    ).stdout
    # One AMDGPU metadata note per code object, naming its kernel with the numbers the
    # HIP runtime launches it by.
    assert notes.count(f"amdhsa.target:   amdgcn-amd-amdhsa--{target_name}") == len(files)
    for field in (".kernarg_segment_size", ".group_segment_fixed_size", ".sgpr_count"):
        assert notes.count(field) == len(files), field
    wavefronts = re.findall(r"\.wavefront_size:\s+(\d+)", notes)
    assert set(wavefronts) == {str(WAVEFRONT[target_name])}
    disassembly = subprocess.run(
        [_tool("llvm-objdump"), "-d", f"--mcpu={target_name}", *files[:50]],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "s_endpgm" in disassembly


@pytest.mark.parametrize("target_name", _targets(NVIDIA_TARGETS))
def test_suite_compiles_for_nvidia(target_name: str):
    if find_tool("ptxas") is None or backend("nvptx").device_library() is None:
        pytest.skip("the CUDA toolkit (ptxas, libdevice) is not installed")
    objects = suite_objects(target_name)
    assert len(objects) > 700
    for name, cubin in objects.items():
        # ptxas wrote it: an ELF for the CUDA machine (EM_CUDA = 190) with the kernel in it
        assert cubin[:4] == b"\x7fELF" and int.from_bytes(cubin[18:20], "little") == 190, name
        assert name.split("/")[1].encode() in cubin, name


BARRIER_KERNEL = """
kernel void reverse(global int* data, local int* tmp) {
    int l = get_local_id(0), n = get_local_size(0);
    tmp[l] = data[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    data[get_global_id(0)] = tmp[n - 1 - l];
    atomic_inc((local int*)tmp);
}
"""


def _assembly(target_name: str, source: str, kernel: str, tmp_path: Path) -> str:
    os.environ["SPIRVJIT_DUMP"] = str(tmp_path)
    try:
        program = build(source).for_target(parse_target(target_name))
        # A fresh Program: the dump comes from compiling, never from the cache.
        Program(program.spirv, target=program.target).object_code(kernel)
    finally:
        del os.environ["SPIRVJIT_DUMP"]
    # Dumps are named <kernel>.<program digest>.<target>.<stage>.
    (dumped,) = tmp_path.glob(f"{kernel}.*.{target_name}.s")
    return dumped.read_text()


def test_amd_barrier_and_local_memory(tmp_path: Path):
    asm = _assembly("gfx942", BARRIER_KERNEL, "reverse", tmp_path)
    assert "s_barrier" in asm
    assert "ds_write" in asm or "ds_store" in asm  # __local is LDS
    assert "ds_add" in asm  # local atomics are LDS atomics at work-group scope
    assert ".amdhsa_next_free_vgpr" in asm


def test_nvidia_barrier_and_shared_memory(tmp_path: Path):
    asm = _assembly("sm_90", BARRIER_KERNEL, "reverse", tmp_path)
    assert "bar.sync" in asm
    assert "st.shared" in asm and ".extern .shared" in asm
    assert "atom.shared" in asm


def test_printf_on_a_gpu_names_the_problem():
    program = build('kernel void hello() { printf("hi\\n"); }')
    with pytest.raises(spirvjit.SpirvError, match="printf is not supported on GPU"):
        program.for_target(parse_target("gfx942")).object_code("hello")


# --- AMD-flavoured SPIR-V from HIP --------------------------------------------------------


@pytest.fixture(scope="module")
def hip_program() -> Program:
    from spirvjit.frontend.hip import hip_to_spirv

    if find_tool("clang-offload-bundler") is None:
        pytest.skip("clang-offload-bundler-22 is not installed")
    return Program(hip_to_spirv(HIP_SOURCE.read_text(), filename="builtins.hip"))


def test_hip_builtins_become_amdgcn_intrinsics(hip_program: Program, tmp_path: Path):
    program = hip_program.for_target(parse_target("gfx942"))
    for kernel in ("vadd", "red", "sizes"):
        obj, _ = program.object_code(kernel)
        path = tmp_path / f"{kernel}.hsaco"
        path.write_bytes(obj)
        notes = subprocess.run(
            [_tool("llvm-readelf"), "--notes", str(path)], capture_output=True, text=True
        ).stdout
        assert f".name:           {kernel}" in notes
    red = tmp_path / "red.hsaco"
    asm = subprocess.run(
        [_tool("llvm-objdump"), "-d", "--mcpu=gfx942", str(red)], capture_output=True, text=True
    ).stdout
    assert "s_barrier" in asm


def test_hip_kernels_run_on_the_host_with_emulated_builtins(hip_program: Program):
    n = 1000
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 0.5, dtype=np.float32)
    out = np.zeros(n, dtype=np.float32)
    hip_program.vadd(out, a, b, np.int32(n), global_size=1024, local_size=64)
    np.testing.assert_array_equal(out, a + b)
    # Sizes read from the emulated dispatch packet: work-group size, grid size, y size.
    sizes = np.zeros((128, 4), dtype=np.int32)
    hip_program.sizes(sizes, global_size=100, local_size=32)
    assert (sizes[:100] == [32, 100, 1, 0]).all() and (sizes[100:] == 0).all()


def test_hip_s_barrier_is_a_workgroup_barrier_on_the_host(hip_program: Program):
    # Failed before: "__builtin_amdgcn_s_barrier ... emulates only on AMD targets".
    a = np.arange(1024, dtype=np.float32)
    out = np.zeros(1, dtype=np.float32)
    hip_program.red(out, a, global_size=1024, local_size=256)
    assert out[0] == a.sum()


def test_hip_builtin_without_emulation_fails_naming_it(hip_program: Program):
    with pytest.raises(CompileError, match=r"__builtin_amdgcn_ds_swizzle \(HIP's __shfl_xor"):
        hip_program.kernel("swizzle").compile()


def test_hip_kernels_compile_for_nvidia(hip_program: Program):
    program = hip_program.for_target(parse_target("sm_90"))
    for kernel in ("vadd", "red", "sizes"):
        assert program.object_code(kernel)[0]
    with pytest.raises(CompileError, match="__builtin_amdgcn_ds_swizzle"):
        program.object_code("swizzle")
