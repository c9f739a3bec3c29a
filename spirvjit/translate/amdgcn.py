"""AMDGCN built-ins in AMD-flavoured SPIR-V (``clang --offload-arch=amdgcnspirv``).

clang keeps each ``__builtin_amdgcn_*`` it cannot express in SPIR-V as a call to an
imported function named after the LLVM intrinsic, dots spelled as underscores:
``llvm.amdgcn.workitem.id.x`` becomes ``spirv.llvm_amdgcn_workitem_id_x``. For AMD
targets the call goes back to the intrinsic. For other targets the common ones are
emulated: work-item and work-group ids, the HSA dispatch packet and the code object
v5 implicit arguments (sizes read from them), and ``s_barrier`` where the target has
barriers. A kernel that calls anything else fails to compile, naming the built-in.
"""

from __future__ import annotations

from llvmlite import ir

from ..errors import CompileError
from ..spirv.module import Instruction
from .function import FunctionTranslator, private_alloca

PREFIX = "spirv.llvm_amdgcn_"
UNSUPPORTED = "spirvjit.unsupported.amdgcn."
I8, I16, I32, I64 = (ir.IntType(n) for n in (8, 16, 32, 64))
# Intrinsics returning a pointer into the constant address space (4); SPIR-V has no
# such space, so clang declares them returning a generic pointer.
_CONSTANT_POINTERS = ("dispatch_ptr", "implicitarg_ptr", "queue_ptr", "kernarg_segment_ptr")
_XYZ = "xyz"


def is_amdgcn_builtin(name: str) -> bool:
    return name.startswith(PREFIX)


def call_amdgcn(t: FunctionTranslator, inst: Instruction, name: str, args: list[int]) -> ir.Value:
    builtin = name[len(PREFIX) :]
    void = t.types.spv(inst.result_type).kind == "void"
    ty = ir.VoidType() if void else t.llvm_type(inst.result_type)
    if t.mt.abi.triple.startswith("amdgcn"):
        return _intrinsic(t, builtin, ty, [t.value(a) for a in args])
    return _emulate(t, builtin, ty)


def _intrinsic(t: FunctionTranslator, builtin: str, ty: ir.Type, values: list[ir.Value]):
    intrinsic = "llvm.amdgcn." + builtin.replace("_", ".")
    if builtin in _CONSTANT_POINTERS:
        pointer = t.intrinsic(intrinsic, ir.PointerType(addrspace=4), [])
        return t.b.addrspacecast(pointer, ty)
    return t.intrinsic(intrinsic, ty, values)


def _emulate(t: FunctionTranslator, builtin: str, ty: ir.Type) -> ir.Value:
    b = t.b
    for query, stem in (("local_id", "workitem_id_"), ("group_id", "workgroup_id_")):
        if builtin.startswith(stem) and builtin[len(stem) :] in _XYZ:
            value = t.workitem.query(query, _XYZ.index(builtin[len(stem) :]))
            return b.trunc(value, ty)
    if builtin == "s_barrier" and t.mt.abi.native_barriers:
        t.mt.abi.control_barrier(b, None, None)
        return None
    if builtin == "dispatch_ptr":
        return _buffer(t, ty, _dispatch_packet(t))
    if builtin == "implicitarg_ptr":
        return _buffer(t, ty, _implicit_arguments(t))
    # Only kernels that reach the call fail, when they are compiled (unsupported_call).
    stub = t.mt.declare(UNSUPPORTED + builtin, ir.FunctionType(ty, []))
    return b.call(stub, [])


def unsupported_call(ir_text: str, kernel: str, target: str) -> CompileError | None:
    """The error for a kernel whose IR calls an AMD built-in ``target`` cannot emulate."""
    start = ir_text.find(f'@"{UNSUPPORTED}')
    if start < 0:
        return None
    builtin = ir_text[start + 2 + len(UNSUPPORTED) :].split('"', 1)[0]
    return CompileError(
        f"kernel {kernel} calls the AMD GPU built-in __builtin_amdgcn_{builtin} "
        f"(imported as '{PREFIX}{builtin}'), which spirvjit emulates only on AMD targets, "
        f"not on {target}; compile for a gfx target or avoid the built-in"
    )


def _sizes(t: FunctionTranslator, query: str) -> list[ir.Value]:
    return [t.workitem.query(query, d) for d in range(3)]


def _dispatch_packet(t: FunctionTranslator) -> list[tuple[int, ir.Value]]:
    """The fields of hsa_kernel_dispatch_packet_t that kernels read: dimensions,
    work-group size (u16) and grid size in work-items (u32)."""
    b = t.b
    fields = [(2, b.trunc(t.workitem.query("work_dim", 0), I16))]
    fields += [(4 + 2 * d, b.trunc(v, I16)) for d, v in enumerate(_sizes(t, "enqueued_local_size"))]
    fields += [(12 + 4 * d, b.trunc(v, I32)) for d, v in enumerate(_sizes(t, "global_size"))]
    return fields


def _implicit_arguments(t: FunctionTranslator) -> list[tuple[int, ir.Value]]:
    """Code object v5 implicit arguments: block counts (full groups, u32), group sizes and
    remainders (u16), global offsets (u64) and grid dimensions (u16)."""
    b = t.b
    fields = []
    for d, (size, group) in enumerate(
        zip(_sizes(t, "global_size"), _sizes(t, "enqueued_local_size"), strict=True)
    ):
        fields.append((4 * d, b.trunc(b.udiv(size, group), I32)))
        fields.append((12 + 2 * d, b.trunc(group, I16)))
        fields.append((18 + 2 * d, b.trunc(b.urem(size, group), I16)))
        fields.append((40 + 8 * d, t.workitem.query("global_offset", d)))
    fields.append((64, b.trunc(t.workitem.query("work_dim", 0), I16)))
    return fields


def _buffer(t: FunctionTranslator, ty: ir.Type, fields: list[tuple[int, ir.Value]]) -> ir.Value:
    """A zeroed private 256-byte block holding ``fields`` at their byte offsets."""
    b = t.b
    block = private_alloca(t.alloca_builder, ir.ArrayType(I8, 256), t.mt.private_space)
    block.align = 8
    b.store(ir.Constant(ir.ArrayType(I8, 256), None), block)
    for offset, value in fields:
        b.store(value, b.gep(block, [ir.Constant(I64, offset)], source_etype=I8))
    return block if block.type == ty else b.addrspacecast(block, ty)
