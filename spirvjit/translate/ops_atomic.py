"""Atomic instructions, lowered to LLVM atomics with the orderings their semantics ask for.

Scopes become LLVM ``syncscope``s where the backend has narrower ones (GPUs: an
atomic on work-group scope need not be visible to the whole device); on the host CPU
every scope is the whole system, which is correct for every narrower scope too.

Where the backend runs each work-group's work-items one after another on one
thread (the CPU), nobody else can touch a group's local memory while it runs, so
atomics on ``__local`` memory become plain read-modify-write sequences: a locked
instruction costs several nanoseconds, a plain add one cycle.
"""

from __future__ import annotations

from llvmlite import ir

from ..spirv.grammar import MemorySemantics, Scope, StorageClass
from ..spirv.module import Instruction
from .function import FunctionTranslator, handles, overload_suffix

I1 = ir.IntType(1)

_RMW = {
    "OpAtomicExchange": "xchg",
    "OpAtomicIAdd": "add",
    "OpAtomicISub": "sub",
    "OpAtomicSMin": "min",
    "OpAtomicUMin": "umin",
    "OpAtomicSMax": "max",
    "OpAtomicUMax": "umax",
    "OpAtomicAnd": "and",
    "OpAtomicOr": "or",
    "OpAtomicXor": "xor",
    "OpAtomicFAddEXT": "fadd",
    "OpAtomicFMinEXT": "fmin",
    "OpAtomicFMaxEXT": "fmax",
}


def ordering(
    t: FunctionTranslator, semantics_id: int, *, load: bool = False, store: bool = False
) -> str:
    """The LLVM ordering for SPIR-V memory semantics (an id of a constant)."""
    semantics = t.mt.constants.int_value(semantics_id)
    if semantics & MemorySemantics.SequentiallyConsistent:
        return "seq_cst"
    acquire = bool(semantics & (MemorySemantics.Acquire | MemorySemantics.AcquireRelease))
    release = bool(semantics & (MemorySemantics.Release | MemorySemantics.AcquireRelease))
    # LLVM forbids release loads and acquire stores; keep the part that applies.
    if load:
        release = False
    if store:
        acquire = False
    if acquire and release:
        return "acq_rel"
    if acquire:
        return "acquire"
    if release:
        return "release"
    return "monotonic"


def scoped(t: FunctionTranslator, ptr_id: int, scope_id: int, order: str) -> str:
    """``order`` at the backend's syncscope for SPIR-V Scope ``scope_id`` (an id of a
    constant) of an atomic on ``ptr_id``. llvmlite prints the ordering where LLVM
    expects ``syncscope("x") order``."""
    value = t.mt.constants.int_value(scope_id)
    if value == Scope.Workgroup and not _on_workgroup_memory(t, ptr_id):
        # clang-22 and llvm-spirv give OpenCL 1.x atomics (atomic_add, atomic_inc) on
        # __global memory Workgroup scope, but other groups update the same counters:
        # on a GPU a work-group-scope atomic need not be atomic for them (AMD: the L2 of
        # one XCD; PTX: atom.cta). The device scope is right for every global atomic.
        value = Scope.Device
    scope = t.mt.abi.sync_scope(value)
    return f'syncscope("{scope}") {order}' if scope else order


def _on_workgroup_memory(t: FunctionTranslator, ptr_id: int) -> bool:
    ptr_type = t.types.spv(t.type_of(ptr_id))
    return ptr_type.kind == "pointer" and ptr_type.storage == StorageClass.Workgroup


def group_private(t: FunctionTranslator, ptr_id: int) -> bool:
    """Whether ``ptr_id`` points to local memory that only this thread can touch now."""
    if not getattr(t.mt.abi, "sequential_workgroups", False):
        return False
    ptr_type = t.types.spv(t.type_of(ptr_id))
    return ptr_type.kind == "pointer" and ptr_type.storage == StorageClass.Workgroup


def read_modify_write(
    t: FunctionTranslator, op: str, ptr: ir.Value, value: ir.Value, order: str, plain: bool
) -> ir.Value:
    """``atomicrmw op``, or with ``plain`` the same as a load, an operation and a store."""
    if not plain:
        return t.b.atomic_rmw(op, ptr, value, order)
    old = t.b.load(ptr, typ=value.type)
    _mark_plain_atomic(t, old, t.b.store(_combine(t, op, old, value), ptr))
    return old


# Metadata on the load and store of a plain (local-memory) atomic: work-items must not
# interleave them, so whole-function vectorization keeps such code lane by lane.
PLAIN_ATOMIC = "spirvjit.plain_atomic"


def _mark_plain_atomic(t: FunctionTranslator, *instructions: ir.Instruction) -> None:
    node = t.b.module.add_metadata([])
    for inst in instructions:
        inst.set_metadata(PLAIN_ATOMIC, node)


def _combine(t: FunctionTranslator, op: str, old: ir.Value, value: ir.Value) -> ir.Value:
    b = t.b
    if op in ("min", "max", "umin", "umax"):
        cmp = b.icmp_unsigned if op.startswith("u") else b.icmp_signed
        keep_old = cmp("<" if op.endswith("min") else ">", old, value)
        return b.select(keep_old, old, value)
    if op in ("fmin", "fmax"):
        name = "minnum" if op == "fmin" else "maxnum"
        return t.intrinsic(f"llvm.{name}.{overload_suffix(old.type)}", old.type, [old, value])
    combine = {
        "xchg": lambda: value,
        "add": lambda: b.add(old, value),
        "sub": lambda: b.sub(old, value),
        "and": lambda: b.and_(old, value),
        "or": lambda: b.or_(old, value),
        "xor": lambda: b.xor(old, value),
        "fadd": lambda: b.fadd(old, value),
        "fsub": lambda: b.fsub(old, value),
    }
    return combine[op]()


def compare_exchange(
    t: FunctionTranslator, ptr: ir.Value, expected: ir.Value, value: ir.Value, orders, plain: bool
) -> ir.Value:
    """The old value at ``ptr``; ``value`` is stored there if the old value was ``expected``."""
    if not plain:
        return t.b.extract_value(t.b.cmpxchg(ptr, expected, value, *orders), 0)
    old = t.b.load(ptr, typ=value.type)
    new = t.b.select(t.b.icmp_unsigned("==", old, expected), value, old)
    _mark_plain_atomic(t, old, t.b.store(new, ptr))
    return old


@handles(*_RMW)
def atomic_rmw(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    ptr_id, scope, semantics, value_id = inst.operands
    return read_modify_write(
        t,
        _RMW[inst.opname],
        t.value(ptr_id),
        t.value(value_id),
        scoped(t, ptr_id, scope, ordering(t, semantics)),
        group_private(t, ptr_id),
    )


@handles("OpAtomicIIncrement", "OpAtomicIDecrement")
def atomic_step(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    ptr_id, scope, semantics = inst.operands
    op = "add" if inst.opname == "OpAtomicIIncrement" else "sub"
    one = ir.Constant(t.llvm_type(inst.result_type), 1)
    order = scoped(t, ptr_id, scope, ordering(t, semantics))
    return read_modify_write(t, op, t.value(ptr_id), one, order, group_private(t, ptr_id))


@handles("OpAtomicLoad")
def atomic_load(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    ptr_id, scope, semantics = inst.operands
    ty = t.llvm_type(inst.result_type)
    if group_private(t, ptr_id):
        return t.b.load(t.value(ptr_id), typ=ty)
    align = ty.get_abi_size(t.mt.target_data)
    order = scoped(t, ptr_id, scope, ordering(t, semantics, load=True))
    return t.b.load_atomic(t.value(ptr_id), order, align, typ=ty)


@handles("OpAtomicStore")
def atomic_store(t: FunctionTranslator, inst: Instruction) -> None:
    ptr_id, scope, semantics, value_id = inst.operands
    if group_private(t, ptr_id):
        t.b.store(t.value(value_id), t.value(ptr_id))
        return
    order = scoped(t, ptr_id, scope, ordering(t, semantics, store=True))
    atomic_store_value(t, t.value(ptr_id), t.value(value_id), order)


def atomic_store_value(t: FunctionTranslator, ptr: ir.Value, value: ir.Value, order: str) -> None:
    # llvmlite's store_atomic needs typed pointers; an exchange whose result is unused
    # is an atomic store with the same ordering.
    t.b.atomic_rmw("xchg", ptr, value, order)


@handles("OpAtomicCompareExchange", "OpAtomicCompareExchangeWeak")
def atomic_compare_exchange(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    ptr_id, scope, equal_sem, unequal_sem, value_id, comparator_id = inst.operands
    success = ordering(t, equal_sem)
    failure = ordering(t, unequal_sem, load=True)
    if success == "monotonic" and failure != "monotonic":
        success = failure  # the success ordering may not be weaker than the failure one
    success = scoped(t, ptr_id, scope, success)  # one syncscope, before both orderings
    ptr, value, expected = t.value(ptr_id), t.value(value_id), t.value(comparator_id)
    plain = group_private(t, ptr_id)
    return compare_exchange(t, ptr, expected, value, (success, failure), plain)


@handles("OpAtomicFlagTestAndSet")
def atomic_flag_test_and_set(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    ptr_id, scope, semantics = inst.operands
    one = ir.Constant(ir.IntType(32), 1)
    order = scoped(t, ptr_id, scope, ordering(t, semantics))
    old = t.b.atomic_rmw("xchg", t.value(ptr_id), one, order)
    return t.b.icmp_unsigned("!=", old, ir.Constant(old.type, 0))


@handles("OpAtomicFlagClear")
def atomic_flag_clear(t: FunctionTranslator, inst: Instruction) -> None:
    ptr_id, scope, semantics = inst.operands
    zero = ir.Constant(ir.IntType(32), 0)
    order = scoped(t, ptr_id, scope, ordering(t, semantics, store=True))
    atomic_store_value(t, t.value(ptr_id), zero, order)
