"""Atomic instructions, lowered to LLVM atomics with the orderings their semantics ask for.

Scopes are not lowered: on the host CPU every scope is the whole system, and
sequential consistency at a wider scope is still correct at a narrower one.
"""

from __future__ import annotations

from llvmlite import ir

from ..spirv.grammar import MemorySemantics
from ..spirv.module import Instruction
from .function import FunctionTranslator, handles

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


@handles(*_RMW)
def atomic_rmw(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    ptr_id, _scope, semantics, value_id = inst.operands
    return t.b.atomic_rmw(
        _RMW[inst.opname], t.value(ptr_id), t.value(value_id), ordering(t, semantics)
    )


@handles("OpAtomicIIncrement", "OpAtomicIDecrement")
def atomic_step(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    ptr_id, _scope, semantics = inst.operands
    op = "add" if inst.opname == "OpAtomicIIncrement" else "sub"
    one = ir.Constant(t.llvm_type(inst.result_type), 1)
    return t.b.atomic_rmw(op, t.value(ptr_id), one, ordering(t, semantics))


@handles("OpAtomicLoad")
def atomic_load(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    ptr_id, _scope, semantics = inst.operands
    ty = t.llvm_type(inst.result_type)
    align = ty.get_abi_size(t.mt.target_data)
    return t.b.load_atomic(t.value(ptr_id), ordering(t, semantics, load=True), align, typ=ty)


@handles("OpAtomicStore")
def atomic_store(t: FunctionTranslator, inst: Instruction) -> None:
    ptr_id, _scope, semantics, value_id = inst.operands
    atomic_store_value(t, t.value(ptr_id), t.value(value_id), ordering(t, semantics, store=True))


def atomic_store_value(t: FunctionTranslator, ptr: ir.Value, value: ir.Value, order: str) -> None:
    # llvmlite's store_atomic needs typed pointers; an exchange whose result is unused
    # is an atomic store with the same ordering.
    t.b.atomic_rmw("xchg", ptr, value, order)


@handles("OpAtomicCompareExchange", "OpAtomicCompareExchangeWeak")
def atomic_compare_exchange(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    ptr_id, _scope, equal_sem, unequal_sem, value_id, comparator_id = inst.operands
    success = ordering(t, equal_sem)
    failure = ordering(t, unequal_sem, load=True)
    if success == "monotonic" and failure != "monotonic":
        success = failure  # the success ordering may not be weaker than the failure one
    pair = t.b.cmpxchg(t.value(ptr_id), t.value(comparator_id), t.value(value_id), success, failure)
    return t.b.extract_value(pair, 0)


@handles("OpAtomicFlagTestAndSet")
def atomic_flag_test_and_set(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    ptr_id, _scope, semantics = inst.operands
    one = ir.Constant(ir.IntType(32), 1)
    old = t.b.atomic_rmw("xchg", t.value(ptr_id), one, ordering(t, semantics))
    return t.b.icmp_unsigned("!=", old, ir.Constant(old.type, 0))


@handles("OpAtomicFlagClear")
def atomic_flag_clear(t: FunctionTranslator, inst: Instruction) -> None:
    ptr_id, _scope, semantics = inst.operands
    zero = ir.Constant(ir.IntType(32), 0)
    atomic_store_value(t, t.value(ptr_id), zero, ordering(t, semantics, store=True))
