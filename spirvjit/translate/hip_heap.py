"""HIP's device-side heap: ``malloc`` and ``free`` called in device code.

spirvjit's HIP header (``frontend/include/hip/spirvjit_device.h``) defines the device
``malloc``/``free`` as calls to the imports ``__spirvjit_malloc`` and ``__spirvjit_free``,
as ROCm's header does with ``__hip_malloc``/``__hip_free``. On the host CPU they are the C
library's own (thread-safe; memory a kernel does not free stays allocated, as on a GPU's
heap). GPU targets have no heap here: a kernel that reaches a call fails to compile with
an error that names ``malloc`` (``translate/amdgcn.py`` ``unsupported_call``).
"""

from __future__ import annotations

from llvmlite import ir

from ..spirv.module import Instruction
from .amdgcn import UNSUPPORTED
from .function import FunctionTranslator

IMPORTS = {"__spirvjit_malloc": "malloc", "__spirvjit_free": "free"}
I64 = ir.IntType(64)


def is_hip_heap(name: str) -> bool:
    return name in IMPORTS


def call_hip_heap(
    t: FunctionTranslator, inst: Instruction, name: str, args: list[int]
) -> ir.Value | None:
    ty = t.llvm_type(inst.result_type)
    if not t.mt.abi.host_libc:
        # Only kernels that reach the call fail, when they are compiled.
        stub = t.mt.declare(UNSUPPORTED + IMPORTS[name], ir.FunctionType(ty, []))
        call = t.b.call(stub, [])
        return None if isinstance(ty, ir.VoidType) else call
    b = t.b
    value = t.value(args[0])
    if name == "__spirvjit_malloc":
        malloc = t.mt.declare("malloc", ir.FunctionType(ir.PointerType(), [I64]))
        size = b.zext(value, I64) if value.type.width < 64 else value
        pointer = b.call(malloc, [size])
        return pointer if pointer.type == ty else b.addrspacecast(pointer, ty)
    free = t.mt.declare("free", ir.FunctionType(ir.VoidType(), [ir.PointerType()]))
    if value.type != ir.PointerType():
        value = b.addrspacecast(value, ir.PointerType())
    b.call(free, [value])
    return None
