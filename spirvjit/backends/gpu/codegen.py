"""SPIR-V translation for GPUs → optimized IR → AMD HSA code objects, NVIDIA PTX/cubin.

One kernel per code object, as on the CPU: a first launch pays only for its kernel,
and the unified binary stores native code per kernel.

* AMD: LLVM's AMDGPU back end writes a relocatable ELF with the HSA metadata note
  (kernarg and group segment sizes, wavefront size, register counts; code object v5);
  ld.lld links it into the shared object the HIP runtime loads.
* NVIDIA: LLVM's NVPTX back end writes PTX for the sm target; ptxas, where the CUDA
  toolkit is installed, assembles it into a cubin. Without ptxas the PTX itself is the
  product: the CUDA driver compiles it at load.
"""

from __future__ import annotations

import functools

import llvmlite.binding as llvm

from ...spirv.module import Module
from ...target import Target
from ...toolchain import find_tool, require_tool, run_on_bytes
from ...translate.module import Translation, translate
from ..cpu.codegen import kernel_ir
from . import devicelib
from .abi import GpuABI, gpu_abi
from .entry import DYNAMIC_SHARED, emit_entry

# The tools read what spirvjit generated: a failure is spirvjit's bug, not the user's.
_OURS = "; this is a spirvjit bug"
_MODULE_FLAGS = {
    # HSA code object v5: what ROCm 6 loads and LLVM 22 writes by default for amdhsa.
    "amdgpu": '!{i32 1, !"amdhsa_code_object_version", i32 500}',
    # libdevice asks NVVMReflect whether to flush denormals; OpenCL keeps them.
    "nvptx": '!{i32 4, !"nvvm-reflect-ftz", i32 0}',
}


@functools.cache
def target_machine(target: Target) -> llvm.TargetMachine:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm.Target.from_triple(target.triple).create_target_machine(
        cpu=target.arch, features=target.features, opt=3, reloc="pic", codemodel="default"
    )


def abi(target: Target) -> GpuABI:
    return gpu_abi(target.kind, target.triple, str(target_machine(target).target_data))


def device_library(target: Target) -> devicelib.DeviceLibrary | None:
    return devicelib.find_library(target.kind)


def translate_program(
    module: Module, target: Target, spec_constants: dict, prefix: str
) -> Translation:
    """Translates the module for ``target``, binds its math calls to the device library
    and adds an entry point per kernel."""
    gpu = abi(target)
    translation = translate(module, gpu, spec_constants, prefix)
    devicelib.bind(translation.module, device_library(target), target.name)
    for name, fn in translation.kernel_functions.items():
        emit_entry(translation.module, gpu, fn, translation.kernels[name])
    return translation


def kernel_module(translation: Translation, target: Target, name: str) -> str:
    """IR text of kernel ``name``'s entry point and what it reaches. Program-scope
    variables become part of each kernel's code object (not shared between kernels)."""
    text = kernel_ir(translation.module, name, [])
    return f"{text}!llvm.module.flags = !{{!0}}\n!0 = {_MODULE_FLAGS[target.kind]}\n"


def optimize(module: llvm.ModuleRef, target: Target, entry: str) -> None:
    """Links the device library if the kernel calls it, then runs O3 with only the entry
    point visible."""
    missing = [
        fn.name
        for fn in module.functions
        if fn.is_declaration and not fn.name.startswith("llvm.") and fn.name != entry
    ]
    library = device_library(target)
    if missing:
        if library is None:
            raise devicelib.missing_library(missing[0], target.name)
        module.link_in(devicelib.library_module(library, target.triple, module.data_layout))
    for fn in module.functions:
        if not fn.is_declaration and fn.name != entry:
            fn.linkage = "internal"
    for gv in module.global_variables:
        if not gv.is_declaration and gv.name != DYNAMIC_SHARED:
            gv.linkage = "internal"
    tm = target_machine(target)
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=3))
    pb.getModulePassManager().run(module, pb)


def emit(module: llvm.ModuleRef, target: Target, what: str) -> bytes:
    """The native product: an AMD code object, or an NVIDIA cubin (PTX without ptxas)."""
    tm = target_machine(target)
    if target.kind == "amdgpu":
        return link_code_object(tm.emit_object(module), target, what)
    ptx = tm.emit_assembly(module)
    if find_tool("ptxas") is None:
        return ptx.encode()
    return assemble_ptx(ptx, target, what)


def assembly(module: llvm.ModuleRef, target: Target) -> str:
    """What a human reads: AMD GCN assembly or PTX."""
    return target_machine(target).emit_assembly(module)


def link_code_object(obj: bytes, target: Target, what: str) -> bytes:
    lld = require_tool("ld.lld", f"linking the AMD code object of {what}")
    return run_on_bytes([lld, "-shared", "--no-undefined"], obj, "in.o", "hsaco", what, _OURS)


def assemble_ptx(ptx: str, target: Target, what: str) -> bytes:
    ptxas = require_tool("ptxas", f"assembling the PTX of {what} for {target.arch}")
    cmd = [ptxas, f"-arch={target.arch}", "-O3"]
    return run_on_bytes(cmd, ptx.encode(), "in.ptx", "cubin", what, _OURS)
