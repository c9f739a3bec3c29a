"""Branches, switches, phis, returns and function calls; barriers and fences."""

from __future__ import annotations

from llvmlite import ir

from ..spirv.grammar import MemorySemantics, Scope
from ..spirv.module import Instruction
from .constants import function_pointer_message
from .function import FunctionTranslator, handles
from .imports import call_imported


@handles("OpBranch")
def branch(t: FunctionTranslator, inst: Instruction) -> None:
    t.b.branch(target(t, inst.operands[0]))


def target(t: FunctionTranslator, label: int) -> ir.Block:
    block = t.blocks.get(label)
    if block is None:
        raise t.error(f"branch to %{label}, which is not a block of this function")
    return block


@handles("OpBranchConditional")
def branch_conditional(t: FunctionTranslator, inst: Instruction) -> None:
    cond, then, otherwise = inst.operands[:3]
    t.b.cbranch(t.value(cond), target(t, then), target(t, otherwise))


@handles("OpSwitch")
def switch(t: FunctionTranslator, inst: Instruction) -> None:
    selector = t.value(inst.operands[0])
    sw = t.b.switch(selector, target(t, inst.operands[1]))
    mask = (1 << selector.type.width) - 1
    for literal, label in zip(inst.operands[2::2], inst.operands[3::2], strict=True):
        sw.add_case(ir.Constant(selector.type, literal & mask), target(t, label))


@handles("OpReturn")
def ret(t: FunctionTranslator, inst: Instruction) -> None:
    if t.stepped is not None:
        t.b.ret(ir.Constant(ir.IntType(32), FINISHED))
    else:
        t.b.ret_void()


@handles("OpReturnValue")
def ret_value(t: FunctionTranslator, inst: Instruction) -> None:
    t.b.ret(t.value(inst.operands[0]))


@handles("OpUnreachable")
def unreachable(t: FunctionTranslator, inst: Instruction) -> None:
    t.b.unreachable()


@handles("OpPhi")
def phi(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    node = t.b.phi(t.llvm_type(inst.result_type))
    t.phis.append((node, inst))
    return node


@handles("OpFunctionPointerCallINTEL")
def call_through_pointer(t: FunctionTranslator, inst: Instruction) -> ir.Value | None:
    raise t.error(function_pointer_message(t.module, None))


@handles("OpFunctionCall")
def call(t: FunctionTranslator, inst: Instruction) -> ir.Value | None:
    callee_id, args = inst.operands[0], inst.operands[1:]
    callee = t.mt.functions.get(callee_id)
    if callee is None:
        return call_imported(t, inst, t.mt.import_name(callee_id), args)
    values = [t.value(a) for a in args] + t.hidden
    result = t.b.call(callee, values)
    return None if isinstance(result.type, ir.VoidType) else result


def fence_ordering(semantics: int) -> str | None:
    """The LLVM fence ordering of SPIR-V memory semantics (None: no fence needed)."""
    if semantics & MemorySemantics.SequentiallyConsistent:
        return "seq_cst"
    if semantics & MemorySemantics.AcquireRelease or (
        semantics & MemorySemantics.Acquire and semantics & MemorySemantics.Release
    ):
        return "acq_rel"
    if semantics & MemorySemantics.Acquire:
        return "acquire"
    if semantics & MemorySemantics.Release:
        return "release"
    return None


@handles("OpMemoryBarrier")
def memory_barrier(t: FunctionTranslator, inst: Instruction) -> None:
    scope, semantics = (t.mt.constants.int_value(i) for i in inst.operands)
    ordering = fence_ordering(semantics)
    if ordering:
        t.b.fence(ordering, t.mt.abi.sync_scope(scope))


# The state a step function returns when its work-item has finished.
FINISHED = -1


@handles("OpControlBarrier")
def control_barrier(t: FunctionTranslator, inst: Instruction) -> None:
    execution, memory, semantics = (t.mt.constants.int_value(i) for i in inst.operands)
    if execution == Scope.Subgroup:
        # A sub-group is one work-item (spirv/capabilities.py): only the memory order
        # matters. On the CPU program order on one thread gives it; a GPU fences.
        ordering = fence_ordering(semantics)
        if t.mt.abi.native_barriers and ordering:
            t.b.fence(ordering, t.mt.abi.sync_scope(memory))
        return
    if t.mt.abi.native_barriers:
        scope = t.mt.abi.sync_scope(memory)
        t.mt.abi.control_barrier(t.b, scope, fence_ordering(semantics), semantics)
        return
    if t.stepped is None:
        raise t.error("a barrier outside a kernel's step function (a spirvjit bug)")
    # All work-items of the group run on this thread, one region at a time: returning
    # here and resuming after every work-item got here is the barrier. Memory order is
    # program order within the thread, so no fence is needed.
    resume = t.stepped.continuations[t.current_label]
    t.b.ret(ir.Constant(ir.IntType(32), t.stepped.states[resume]))
