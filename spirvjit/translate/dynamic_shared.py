"""Dynamic shared memory: HIP's ``extern __shared__ T name[];``.

clang declares such an array as a Workgroup OpVariable of ``T[0xFFFFFFFF]`` imported by
name (LinkageAttributes Import): nothing in the module gives its size, which the
launch does (``shared_mem=``). Every such array starts at the same address, the start
of the group's dynamic shared memory, as on AMD and NVIDIA GPUs, so several of them
alias one another.

- CPU: the dynamic region follows the static ``__shared__`` variables in the group's
  local memory, at ``dynamic_offset(static_bytes)``; the launch adds ``shared_mem``
  bytes to the group's local memory (``hip_launch.py``).
- GPUs: one external, zero-sized ``addrspace(3)`` global, which the AMDGPU and NVPTX
  back ends place after the kernel's static shared memory; the launch passes the
  dynamic size to the driver.
"""

from __future__ import annotations

from llvmlite import ir

from ..spirv.grammar import Decoration, LinkageType, StorageClass
from ..spirv.module import Instruction, Module

DYNAMIC_ALIGN = 16
GPU_SYMBOL = "spirvjit_dynamic_shared"  # PTX names have no dots


def is_dynamic_shared(module: Module, inst: Instruction) -> bool:
    """Whether ``inst`` is an ``extern __shared__`` array (an imported Workgroup variable)."""
    if inst.opname != "OpVariable" or inst.operands[0] != StorageClass.Workgroup:
        return False
    return any(
        d.operands[-1] == LinkageType.Import
        for d in module.decorations_of(inst.result_id, Decoration.LinkageAttributes)
    )


def dynamic_offset(static_bytes: int) -> int:
    """Where dynamic shared memory starts in a CPU work-group's local memory."""
    return (static_bytes + DYNAMIC_ALIGN - 1) // DYNAMIC_ALIGN * DYNAMIC_ALIGN


def gpu_dynamic_shared(module: ir.Module) -> ir.GlobalVariable:
    """The GPU kernel's dynamic shared memory (declared once per LLVM module)."""
    found = module.globals.get(GPU_SYMBOL)
    if found is None:
        found = ir.GlobalVariable(module, ir.ArrayType(ir.IntType(8), 0), GPU_SYMBOL, addrspace=3)
        found.type = ir.PointerType(addrspace=3)  # opaque pointers
        found.linkage = "external"
        found.align = DYNAMIC_ALIGN
    return found
