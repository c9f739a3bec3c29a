"""AMDGCN built-ins in AMD-flavoured SPIR-V (``clang --offload-arch=amdgcnspirv``).

clang keeps each ``__builtin_amdgcn_*`` it cannot express in SPIR-V as a call to an
imported function named after the LLVM intrinsic, dots spelled as underscores:
``llvm.amdgcn.workitem.id.x`` becomes ``spirv.llvm_amdgcn_workitem_id_x``. For AMD
targets the call goes back to the intrinsic. For other targets the common ones are
emulated: work-item and work-group ids, the HSA dispatch packet and the code object
v5 implicit arguments (sizes read from them), ``s_barrier`` (``amdgcn_barriers.py``
turns it into OpControlBarrier first), the bit-field built-ins (``ubfe``, ``sbfe``,
``alignbit``) and the wavefront built-ins (``ballot``, ``ds_bpermute``, ``readlane``,
``readfirstlane``, ``mbcnt``, ``wavefrontsize``, ``wave_barrier``: ``wavefront.py``:
all on NVIDIA as warp instructions, on the host CPU by running a wavefront's lanes in
lock step). A kernel that calls anything else (``ds_swizzle``, DPP, ...) fails to
compile, naming the HIP-level built-in.
"""

from __future__ import annotations

from llvmlite import ir

from ..errors import CompileError
from ..spirv.module import Instruction
from . import wavefront
from .barriers import amdgcn_base
from .function import FunctionTranslator, private_alloca

PREFIX = "spirv.llvm_amdgcn_"
UNSUPPORTED = "spirvjit.unsupported.amdgcn."
I8, I16, I32, I64 = (ir.IntType(n) for n in (8, 16, 32, 64))
# Intrinsics returning a pointer into the constant address space (4); SPIR-V has no
# such space, so clang declares them returning a generic pointer.
_CONSTANT_POINTERS = ("dispatch_ptr", "implicitarg_ptr", "queue_ptr", "kernarg_segment_ptr")
_XYZ = "xyz"
# HIP functions built on each cross-lane built-in, for error messages.
_HIP_USERS = {
    "ballot_w64": "__ballot, __any, __all, __activemask",
    "ballot_w32": "__ballot, __any, __all, __activemask",
    "ds_bpermute": "__shfl, __shfl_up, __shfl_down, __shfl_xor",
    "readfirstlane": "__shfl with a uniform lane",
    "readlane": "__shfl with a uniform lane",
    "wave_barrier": "__syncwarp",
    "ds_swizzle": "__shfl_xor on some HIP versions",
    "mov_dpp": "DPP reductions",
    "update_dpp": "DPP reductions",
}


def is_amdgcn_builtin(name: str) -> bool:
    return name.startswith(PREFIX)


def call_amdgcn(t: FunctionTranslator, inst: Instruction, name: str, args: list[int]) -> ir.Value:
    builtin = name[len(PREFIX) :]
    void = t.types.spv(inst.result_type).kind == "void"
    ty = ir.VoidType() if void else t.llvm_type(inst.result_type)
    values = [t.value(a) for a in args]
    if t.mt.abi.triple.startswith("amdgcn"):
        return _intrinsic(t, builtin, ty, values)
    return _emulate(t, builtin, ty, values)


def hip_builtin_name(builtin: str) -> str:
    """The clang built-in a HIP source calls: ``ballot_i64`` -> ``__builtin_amdgcn_ballot_w64``."""
    base = amdgcn_base(builtin)
    if base == "ballot":
        base = "ballot_w64" if builtin.endswith("_i64") else "ballot_w32"
    return "__builtin_amdgcn_" + base


def _intrinsic(t: FunctionTranslator, builtin: str, ty: ir.Type, values: list[ir.Value]):
    intrinsic = "llvm.amdgcn." + builtin.replace("_", ".")
    if builtin in _CONSTANT_POINTERS:
        pointer = t.intrinsic(intrinsic, ir.PointerType(addrspace=4), [])
        return t.b.addrspacecast(pointer, ty)
    return t.intrinsic(intrinsic, ty, values)


def _emulate(t: FunctionTranslator, builtin: str, ty: ir.Type, values: list[ir.Value]) -> ir.Value:
    b = t.b
    base = amdgcn_base(builtin)
    if base in wavefront.CROSS_LANE:
        try:
            return wavefront.emulate(t, base, ty, values)
        except NotImplementedError:
            pass  # a cross-lane exchange on the CPU: the named error below
    if base in ("ubfe", "sbfe"):
        return _bit_field_extract(t, base == "sbfe", *values)
    if base == "alignbit":
        shift = b.and_(values[2], ir.Constant(values[2].type, 31))
        return t.intrinsic("llvm.fshr.i32", ty, [values[0], values[1], shift])
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
    if builtin in ("printf", "malloc", "free"):  # translate/hip_printf.py, hip_heap.py
        what = "printf" if builtin == "printf" else "malloc/free (HIP's device heap)"
        return CompileError(
            f"kernel {kernel} calls {what}, which spirvjit runs only on the host CPU, "
            f"not on {target}; remove it or run on the host CPU"
        )
    hip = hip_builtin_name(builtin)
    users = _HIP_USERS.get(hip[len("__builtin_amdgcn_") :])
    used_by = f" (HIP's {users} use it)" if users else ""
    return CompileError(
        f"kernel {kernel} calls the AMD GPU built-in {hip}{used_by}, imported as "
        f"'{PREFIX}{builtin}', which spirvjit emulates only on AMD targets, not on {target}; "
        "compile for a gfx target or avoid the built-in"
    )


def _bit_field_extract(
    t: FunctionTranslator, signed: bool, src: ir.Value, offset: ir.Value, width: ir.Value
) -> ir.Value:
    """ubfe/sbfe as the hardware computes them: offset and width taken modulo 32, width 0
    gives 0, and a field reaching past bit 31 is what lies above ``offset``."""
    b = t.b
    ty = src.type
    bits = ir.Constant(ty, ty.width)
    offset = b.and_(offset, ir.Constant(ty, ty.width - 1))
    width = b.and_(width, ir.Constant(ty, ty.width - 1))
    shr = b.ashr if signed else b.lshr
    end = b.add(offset, width)
    inside = b.icmp_unsigned("<", end, bits)
    # Shift amounts are kept below the width; the unused arm of each select may be garbage.
    left = b.and_(b.sub(bits, end), ir.Constant(ty, ty.width - 1))
    right = b.and_(b.sub(bits, width), ir.Constant(ty, ty.width - 1))
    field = shr(b.shl(src, left), right)
    result = b.select(inside, field, shr(src, offset))
    return b.select(b.icmp_unsigned("==", width, ir.Constant(ty, 0)), ir.Constant(ty, 0), result)


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
