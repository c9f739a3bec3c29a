"""GPU kernel entry points: the functions the driver launches, wrapped around kernels.

A translated kernel is an internal function taking the SPIR-V parameters and the
hidden ones (``abi.HIDDEN``). Its entry point, named after the kernel, takes, in order:

* per kernel argument: a global or constant buffer as its device address (8 bytes);
  a ``__local`` buffer as its byte offset (u32) in the group's dynamic shared memory;
  a scalar or vector as itself; a struct passed by value as its bytes;
* the hidden arguments: global offset x, y, z (u64 each) and work_dim (u32).

The launcher (``gpu_launch.py``) packs exactly this list. ``__local`` arguments share one
dynamic shared-memory block (HIP/CUDA's dynamic shared memory), which the hardware
places after the kernel's static ``__local`` variables.
"""

from __future__ import annotations

from llvmlite import ir

from ...spirv.grammar import StorageClass
from ...translate.function import private_alloca
from ...translate.mathlib import StringAttributes
from ...translate.signature import KernelSignature
from .abi import HIDDEN, GpuABI

I8 = ir.IntType(8)
I32 = ir.IntType(32)
DYNAMIC_SHARED = "spirvjit_dynamic_shared"  # PTX names may not contain dots
HIDDEN_NAMES = ("global_offset_x", "global_offset_y", "global_offset_z", "work_dim")


def _dynamic_shared(module: ir.Module) -> ir.GlobalVariable:
    found = module.globals.get(DYNAMIC_SHARED)
    if found is None:
        # An external zero-sized shared array is how both back ends spell dynamic
        # shared memory (HIP/CUDA ``extern __shared__``).
        found = ir.GlobalVariable(module, ir.ArrayType(I8, 0), DYNAMIC_SHARED, addrspace=3)
        found.type = ir.PointerType(addrspace=3)
        found.linkage = "external"
        found.align = 16
    return found


def emit_entry(
    module: ir.Module,
    abi: GpuABI,
    kernel: ir.Function,
    signature: KernelSignature,
    extern_shared: bool = True,
) -> ir.Function:
    """Adds the entry point of ``kernel``, named after it, and returns it.

    ``extern_shared``: whether the module has HIP ``extern __shared__`` arrays, which
    start at the dynamic shared memory's base. Without them the launcher puts the first
    ``__local`` argument there (offset 0): its address is the base itself, and neither
    the offset parameter's load nor the addition is in the code (as in clang's native
    build, where a ``__local`` argument is one pointer parameter).
    """
    kernel.attributes.discard("noinline")
    kernel.attributes.add("alwaysinline")
    params: list[ir.Type] = []
    for arg, inner in zip(signature.args, kernel.args, strict=False):
        if arg.kind == "local":
            params.append(I32)
        elif arg.kind == "struct":
            params.append(ir.ArrayType(I8, arg.size))
        else:
            params.append(inner.type)
    entry = ir.Function(module, ir.FunctionType(ir.VoidType(), params + HIDDEN), signature.name)
    entry.calling_convention = abi.kernel_calling_convention
    entry.attributes = StringAttributes()
    for attribute in abi.entry_attributes(signature):
        entry.attributes.add(attribute)
    b = ir.IRBuilder(entry.append_basic_block("entry"))
    forwarded: list[ir.Value] = []
    first_local = not extern_shared
    for arg, value, inner in zip(signature.args, entry.args, kernel.args, strict=False):
        value.name = arg.name.lstrip("#") or f"arg{arg.index}"
        if arg.kind == "local":
            shared = _dynamic_shared(module)
            forwarded.append(shared if first_local else b.gep(shared, [value], source_etype=I8))
            first_local = False
        elif arg.kind == "struct":
            copy = private_alloca(b, value.type, abi.address_space(StorageClass.Function))
            copy.align = max(arg.align, 1)
            b.store(value, copy)
            # HIP (amdgcnspirv) passes by-value structs as UniformConstant pointers.
            forwarded.append(copy if copy.type == inner.type else b.addrspacecast(copy, inner.type))
        else:
            if arg.kind in ("global", "constant") and arg.element_kind is not None:
                # The driver's buffers are 256-byte aligned and OpenCL C aligns vector
                # types naturally: NVPTX then marks the parameter .align N.
                lanes = 4 if arg.lanes == 3 else arg.lanes
                value.attributes.align = max(1, arg.element_bits // 8 * lanes)
            forwarded.append(value)
    hidden = list(entry.args[len(signature.args) :])
    for value, name in zip(hidden, HIDDEN_NAMES, strict=True):
        value.name = name
    b.call(kernel, forwarded + hidden)
    b.ret_void()
    return entry
