"""Variables, loads, stores, access chains and memory copies."""

from __future__ import annotations

from llvmlite import ir

from ..spirv.grammar import Decoration, MemoryAccess, StorageClass
from ..spirv.module import Instruction
from . import checks
from .function import BuiltinPointer, FunctionTranslator, handles

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)


def pointee_type(t: FunctionTranslator, pointer_id: int) -> int:
    """The SPIR-V type id a pointer value points to."""
    ptr_type = t.types.spv(t.type_of(pointer_id))
    if ptr_type.kind != "pointer" or not ptr_type.element:
        raise t.error(f"%{pointer_id} is not a typed pointer")
    return ptr_type.element


def declared_alignment(t: FunctionTranslator, value_id: int) -> int | None:
    decos = t.decorated(value_id, Decoration.Alignment)
    return decos[0].operands[0] if decos else None


def memory_access(operands: list, start: int) -> tuple[int | None, bool]:
    """(alignment, volatile) from the optional Memory Access operands at ``start``.

    Volatile is reported but not yet lowered: llvmlite's builder has no volatile
    loads, and the CPU path never elides a load the kernel's order needs.
    """
    if len(operands) <= start:
        return None, False
    mask = operands[start]
    align = operands[start + 1] if mask & MemoryAccess.Aligned else None
    return align, bool(mask & MemoryAccess.Volatile)


def lane_alignment(t: FunctionTranslator, ty: ir.Type, declared: int | None) -> int | None:
    """The alignment a vector access may assume.

    On the host, at most its lane's: kernels get their buffers from NumPy, whose
    allocator guarantees the alignment of scalars, not of 16- or 32-byte vectors, and
    unaligned vector moves cost nothing extra on current CPUs when the data happens to be
    aligned. On GPUs (``natural_vector_alignment``), what the module declares, else the
    vector's natural alignment, as OpenCL C guarantees: NVPTX splits a float4 access it
    cannot prove 16-byte aligned into four.
    """
    if not isinstance(ty, ir.VectorType):
        return declared
    if t.mt.abi.natural_vector_alignment:
        return declared or ty.get_abi_alignment(t.mt.target_data)
    lane = ty.element.get_abi_alignment(t.mt.target_data)
    return min(declared, lane) if declared else lane


@handles("OpVariable")
def variable(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    storage = inst.operands[0]
    if storage != StorageClass.Function:
        raise t.error(
            f"a variable with storage class {StorageClass(storage).name} inside a function"
        )
    ty = t.llvm_type(pointee_type_of_result(t, inst))
    ptr = t.variable_storage(inst, ty, declared_alignment(t, inst.result_id))
    if len(inst.operands) > 1:
        # Initializers are constants; store them at the variable's declaration point.
        t.b.store(t.value(inst.operands[1]), ptr)
    return ptr


def pointee_type_of_result(t: FunctionTranslator, inst: Instruction) -> int:
    return t.types.spv(inst.result_type).element


@handles("OpLoad")
def load(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    ptr = t.value(inst.operands[0])
    ty = t.llvm_type(inst.result_type)
    if isinstance(ptr, BuiltinPointer):
        if ptr.lane is None:
            return t.workitem.value(ptr.builtin, ty)
        return t.workitem.fit(t.workitem.component(ptr.builtin, ptr.lane), ty)
    align, _ = memory_access(inst.operands, 1)
    return checks.guarded(
        t,
        inst.operands[0],
        ptr,
        type_size(t, ty),
        False,
        lambda: t.b.load(ptr, typ=ty, align=lane_alignment(t, ty, align)),
    )


@handles("OpStore")
def store(t: FunctionTranslator, inst: Instruction) -> None:
    ptr = t.value(inst.operands[0])
    if isinstance(ptr, BuiltinPointer):
        raise t.error("a store to a BuiltIn input variable")
    align, _ = memory_access(inst.operands, 2)
    value = t.value(inst.operands[1])

    def emit() -> None:
        t.b.store(value, ptr, align=lane_alignment(t, value.type, align))

    checks.guarded(t, inst.operands[0], ptr, type_size(t, value.type), True, emit)


def _gep_index(t: FunctionTranslator, index_id: int, struct_member: bool) -> ir.Value:
    if struct_member:
        # LLVM requires constant i32 indices into structs.
        return ir.Constant(I32, t.mt.constants.int_value(index_id))
    value = t.value(index_id)
    if value.type.width < 64:
        return t.b.sext(value, I64)
    return value


def access_chain(
    t: FunctionTranslator, base_id: int, indices: list[int], element: int | None, inbounds: bool
) -> ir.Value:
    base = t.value(base_id)
    pointee = pointee_type(t, base_id)
    if isinstance(base, BuiltinPointer):
        if element is not None and not _is_zero(t, element):
            raise t.error("pointer arithmetic on a BuiltIn variable")
        if len(indices) != 1:
            raise t.error("a BuiltIn access chain with other than one index")
        lane = (
            t.mt.constants.int_value(indices[0])
            if _is_constant(t, indices[0])
            else t.value(indices[0])
        )
        return BuiltinPointer(base.builtin, lane)
    gep = [_gep_index(t, element, False)] if element is not None else [ir.Constant(I64, 0)]
    current = pointee
    for index_id in indices:
        spv = t.types.spv(current)
        gep.append(_gep_index(t, index_id, spv.kind == "struct"))
        if spv.kind == "struct":
            current = spv.members[t.mt.constants.int_value(index_id)]
        elif spv.kind in ("array", "vector"):
            current = spv.element
        else:
            raise t.error(f"an access chain indexes into a {spv.kind}")
    return t.b.gep(base, gep, inbounds=inbounds, source_etype=t.llvm_type(pointee))


def _is_constant(t: FunctionTranslator, value_id: int) -> bool:
    inst = t.module.defs.get(value_id)
    return inst is not None and inst.opname in ("OpConstant", "OpConstantNull", "OpSpecConstant")


def _is_zero(t: FunctionTranslator, value_id: int) -> bool:
    return _is_constant(t, value_id) and t.mt.constants.int_value(value_id) == 0


@handles("OpAccessChain", "OpInBoundsAccessChain")
def op_access_chain(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    return access_chain(
        t, inst.operands[0], inst.operands[1:], None, inst.opname == "OpInBoundsAccessChain"
    )


@handles("OpPtrAccessChain", "OpInBoundsPtrAccessChain")
def op_ptr_access_chain(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    ops = inst.operands
    return access_chain(t, ops[0], ops[2:], ops[1], inst.opname == "OpInBoundsPtrAccessChain")


def type_size(t: FunctionTranslator, ty: ir.Type) -> int:
    return ty.get_abi_size(t.mt.target_data)


@handles("OpCopyMemory")
def copy_memory(t: FunctionTranslator, inst: Instruction) -> None:
    target, source = t.value(inst.operands[0]), t.value(inst.operands[1])
    size = ir.Constant(I64, type_size(t, t.llvm_type(pointee_type(t, inst.operands[0]))))
    _checked_memcpy(t, inst.operands[0], inst.operands[1], target, source, size)


@handles("OpCopyMemorySized")
def copy_memory_sized(t: FunctionTranslator, inst: Instruction) -> None:
    target, source, size = (t.value(i) for i in inst.operands[:3])
    if size.type.width < 64:
        size = t.b.zext(size, I64)
    _checked_memcpy(t, inst.operands[0], inst.operands[1], target, source, size)


def _checked_memcpy(t: FunctionTranslator, target_id, source_id, target, source, size) -> None:
    # Checked mode: both ranges are checked; the copy runs only when both are inside.
    def copy_checked_source() -> None:
        checks.guarded(t, source_id, source, size, False, lambda: memcpy(t, target, source, size))

    checks.guarded(t, target_id, target, size, True, copy_checked_source)


def memcpy(t: FunctionTranslator, target: ir.Value, source: ir.Value, size: ir.Value) -> None:
    name = f"llvm.memmove.p{target.type.addrspace}.p{source.type.addrspace}.i64"
    fn = t.mt.declare(name, ir.FunctionType(ir.VoidType(), [target.type, source.type, I64, I1]))
    t.b.call(fn, [target, source, size, ir.Constant(I1, 0)])


@handles("OpPtrEqual", "OpPtrNotEqual")
def pointer_compare(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    a, b = (t.b.ptrtoint(t.value(i), I64) for i in inst.operands)
    return t.b.icmp_unsigned("==" if inst.opname == "OpPtrEqual" else "!=", a, b)


@handles("OpPtrDiff")
def pointer_diff(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    a, b = (t.b.ptrtoint(t.value(i), I64) for i in inst.operands)
    size = type_size(t, t.llvm_type(pointee_type(t, inst.operands[0])))
    diff = t.b.sdiv(t.b.sub(a, b), ir.Constant(I64, size))
    ty = t.llvm_type(inst.result_type)
    return t.b.trunc(diff, ty) if ty.width < 64 else diff
