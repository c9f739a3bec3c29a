"""Work-group barriers on the CPU: continuation-based synchronization.

A kernel that reaches OpControlBarrier (directly or through calls) is turned into
a *step function*: given the work-item's state (0 = start, k = "resume after
barrier k") it runs until the next barrier and returns where to resume, or -1
when the work-item has finished. The work-group function then runs, for the state
all work-items share, one loop over the work-items per region — the loop fission
of the architecture guide: with the state a constant in each loop, LLVM keeps
only that region's code in it.

Preparation happens on the SPIR-V, before translation:

1. Functions that contain barriers are inlined into the kernel (``inline_calls``),
   so every barrier is in the kernel's own body.
2. Blocks are split after each barrier; the block that ends with the barrier
   resumes in its continuation block (``split_at_barriers``).
3. Values that may be live across a barrier are found (``crossing_values``); the
   translator keeps them in the work-item's frame (per-work-item memory),
   together with every function-scope variable.

AMD wavefront operations (HIP's ``__ballot``, ``__shfl*``, ...) are synchronization
points too, at wavefront granularity (``wavefront.py``): each call is split twice. The
block before it ends with a *gather* (the work-item stores its operands in its lane's
slots and returns), the call itself runs alone in a block that ends with a *sync* (one
work-item computes the results of all the wavefront's lanes that gathered there, then
returns), and the code after it resumes in a third block, where every lane finds its
result in its frame.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field, replace

from ..errors import SpirvError
from ..spirv.grammar import (
    Decoration,
    LinkageType,
    Op,
    Scope,
    StorageClass,
)
from ..spirv.module import Block, Function, Instruction, Module
from .debuginfo import remap_debug_operands

_ID_KINDS = frozenset({"IdRef", "IdScope", "IdMemorySemantics"})
_BRANCHES = ("OpBranch", "OpBranchConditional", "OpSwitch")
# Synthetic instructions of a split wavefront operation (handled in wavefront.py).
# operands: the value the lane contributes and the lane it reads (if any), then the
# built-in's name
WAVE_GATHER = "SpirvjitWaveGather"
WAVE_SYNC = "SpirvjitWaveSync"
# The AMD built-ins (imported as spirv.llvm_amdgcn_<name>[_type]) that exchange values
# between the lanes of a wavefront, with the operands each lane contributes: the value,
# and the lane it reads (None: none).
WAVE_OPS = {"ballot": (0, None), "ds_bpermute": (1, 0), "readlane": (0, 1)}
WAVE_OPS |= {"readfirstlane": (0, None)}
WAVE_OPS_NO_DATA = frozenset({"wave_barrier"})
_AMDGCN_PREFIX = "spirv.llvm_amdgcn_"
# The type suffix of an overloaded LLVM intrinsic's import name: _i32, _f64, _v2i32, _p0.
_OVERLOAD = re.compile(r"_(?:v\d+)?(?:[if](?:1|8|16|32|64)|p\d+)$")


def amdgcn_base(builtin: str) -> str:
    """An AMD built-in without its overload type (``readfirstlane_i32`` -> ``readfirstlane``)."""
    return _OVERLOAD.sub("", builtin)


# State numbers of wavefront operations: the gather of the j-th operation (in block
# order) resumes at WAVE_STATE_BASE + 2j (computing the result), its sync at the next
# number. Barriers keep 1, 2, ...; the scheduler releases pending gathers lowest first.
WAVE_STATE_BASE = 1 << 20


@dataclass
class SteppedKernel:
    """A kernel prepared for step-mode translation."""

    function: Function
    # label of the block each OpControlBarrier ends -> its continuation label. (Not the
    # barrier's word offset: the inlined copies of a helper share their barrier's offset.)
    continuations: dict[int, int]
    states: dict[int, int]  # continuation label -> state number (1, 2, ...)
    crossing: set[int] = field(default_factory=set)
    # labels of the blocks that compute a wavefront operation's result (gather states)
    gathers: set[int] = field(default_factory=set)


def wave_op_imports(module: Module) -> dict[int, str]:
    """Imported AMD wavefront built-ins: function id -> built-in (``ballot_i64``)."""
    found = {}
    for fn in module.functions:
        if fn.blocks:
            continue
        for deco in module.decorations_of(fn.id, Decoration.LinkageAttributes):
            name = deco.operands[0]
            if deco.operands[-1] != LinkageType.Import or not isinstance(name, str):
                continue
            if not name.startswith(_AMDGCN_PREFIX):
                continue
            base = amdgcn_base(name[len(_AMDGCN_PREFIX) :])
            if base in WAVE_OPS or base in WAVE_OPS_NO_DATA:
                found[fn.id] = base
    return found


def _wave_gather(module: Module, call: Instruction, waves: dict[int, str]) -> Instruction:
    """The gather that precedes wavefront operation ``call``."""
    base = waves[call.operands[0]]
    args = call.operands[1:]
    operands = [args[i] for i in WAVE_OPS.get(base, ()) if i is not None]
    kinds = ("IdRef",) * len(operands)
    # The built-in's name follows the ids, for error messages (kinds do not cover it).
    return Instruction(-1, WAVE_GATHER, None, None, [*operands, base], kinds, call.offset)


def is_group_barrier(module: Module, inst: Instruction) -> bool:
    """Whether ``inst`` is an OpControlBarrier that synchronizes more than one work-item.

    A barrier whose execution scope is a sub-group (``sub_group_barrier``) synchronizes
    only the work-item itself, as every sub-group has one work-item (only its memory
    fence matters)."""
    if inst.opname != "OpControlBarrier":
        return False
    scope = module.defs.get(inst.operands[0])
    return not (
        scope is not None
        and scope.opname == "OpConstant"
        and scope.operands
        and scope.operands[0] == Scope.Subgroup
    )


def functions_with_barriers(module: Module) -> set[int]:
    """Ids of the functions that execute a work-group OpControlBarrier or an AMD
    wavefront operation, directly or through calls."""
    direct: set[int] = set()
    callers: dict[int, set[int]] = {}
    waves = wave_op_imports(module)
    for fn in module.functions:
        for block in fn.blocks:
            for inst in block.instructions:
                if is_group_barrier(module, inst):
                    direct.add(fn.id)
                elif inst.opname == "OpFunctionCall":
                    if inst.operands[0] in waves:
                        direct.add(fn.id)  # a wavefront synchronization point
                    callers.setdefault(inst.operands[0], set()).add(fn.id)
    found, pending = set(direct), list(direct)
    while pending:
        for caller in callers.get(pending.pop(), ()):
            if caller not in found:
                found.add(caller)
                pending.append(caller)
    return found


class _Ids:
    """Hands out fresh ids above the module's bound and records their definitions."""

    def __init__(self, module: Module):
        self.module = module
        self._next = itertools.count(max(module.bound, max(module.defs, default=0) + 1))

    def fresh(self, like: int | None = None) -> int:
        new = next(self._next)
        if like is not None:
            decos = self.module.decorations.get(like)
            if decos:
                self.module.decorations[new] = decos
            name = self.module.names.get(like)
            if name:
                self.module.names[new] = name
        return new

    def define(self, inst: Instruction) -> Instruction:
        if inst.result_id is not None:
            self.module.defs[inst.result_id] = inst
        return inst


def _remap(inst: Instruction, ids: dict[int, int]) -> Instruction:
    operands = [
        ids.get(op, op) if kind in _ID_KINDS else op
        for op, kind in zip(inst.operands, inst.kinds, strict=False)
    ]
    operands += inst.operands[len(inst.kinds) :]
    return replace(
        inst,
        operands=operands,
        result_type=inst.result_type,
        result_id=ids.get(inst.result_id, inst.result_id),
    )


def inline_calls(
    module: Module, fn: Function, targets: set[int], ids: _Ids, depth: int = 0
) -> Function:
    """A copy of ``fn`` with every call to a function in ``targets`` inlined (recursively)."""
    if depth > 64:
        raise SpirvError(f"function {module.name_of(fn.id)} calls itself; OpenCL forbids recursion")
    blocks: list[Block] = []
    renamed_predecessor: dict[int, int] = {}  # original label -> label holding its terminator now
    for block in fn.blocks:
        label, current = block.label_id, []
        for inst in block.instructions:
            if inst.opname != "OpFunctionCall" or inst.operands[0] not in targets:
                current.append(inst)
                continue
            callee = inline_calls(
                module, module.function(inst.operands[0]), targets, ids, depth + 1
            )
            resume = ids.fresh()
            body, returns = _instantiate(module, callee, inst.operands[1:], resume, ids)
            current.append(_branch(body[0].label_id, inst.offset))
            blocks.append(Block(label, current, block.offset))
            blocks.extend(body)
            label, current = resume, []
            if inst.result_id is not None and returns:
                phi_operands = [v for pair in returns for v in pair]
                kinds = ("IdRef",) * len(phi_operands)
                phi = Instruction(
                    Op.OpPhi,
                    "OpPhi",
                    inst.result_type,
                    inst.result_id,
                    phi_operands,
                    kinds,
                    inst.offset,
                )
                current.append(ids.define(phi))
        blocks.append(Block(label, current, block.offset))
        if label != block.label_id:
            renamed_predecessor[block.label_id] = label
    if renamed_predecessor:
        blocks = [_rename_phi_predecessors(b, renamed_predecessor) for b in blocks]
    return Function(fn.definition, fn.parameters, blocks)


def _branch(label: int, offset: int) -> Instruction:
    return Instruction(Op.OpBranch, "OpBranch", None, None, [label], ("IdRef",), offset)


def _instantiate(
    module: Module, callee: Function, args: list[int], resume: int, ids: _Ids
) -> tuple[list[Block], list[tuple[int, int]]]:
    """Fresh copies of ``callee``'s blocks for one call site.

    Parameters become the call's arguments, returns branch to ``resume``; the
    second result lists (returned value, block) pairs for the result's OpPhi.
    """
    mapping = {p.result_id: a for p, a in zip(callee.parameters, args, strict=True)}
    copies = []
    for param, arg in zip(callee.parameters, args, strict=True):
        if _copied_by_value(module, param):
            # the callee's own copy of a ByVal pointee (function.py
            # _copy_by_value_parameters does the same for a function that is not inlined)
            var = ids.fresh()
            storage = StorageClass.Function
            copies.append(
                ids.define(
                    Instruction(
                        Op.OpVariable, "OpVariable", param.result_type, var, [storage],
                        ("StorageClass",), param.offset,
                    )
                )
            )  # fmt: skip
            copies.append(
                Instruction(
                    Op.OpCopyMemory, "OpCopyMemory", None, None, [var, arg],
                    ("IdRef", "IdRef"), param.offset,
                )
            )  # fmt: skip
            mapping[param.result_id] = var
    for block in callee.blocks:
        mapping[block.label_id] = ids.fresh()
        for inst in block.instructions:
            if inst.result_id is not None:
                mapping[inst.result_id] = ids.fresh(like=inst.result_id)
    blocks, returns = [], []
    for block in callee.blocks:
        label = mapping[block.label_id]
        body, copies = copies, []  # the copies start the callee's first block
        for inst in block.instructions:
            if inst.opname == "OpReturn":
                body.append(_branch(resume, inst.offset))
            elif inst.opname == "OpReturnValue":
                returns.append((mapping.get(inst.operands[0], inst.operands[0]), label))
                body.append(_branch(resume, inst.offset))
            else:
                inst = remap_debug_operands(module, _remap(inst, mapping), mapping)
                body.append(ids.define(inst))
        blocks.append(Block(label, body, block.offset))
    return blocks, returns


def _copied_by_value(module: Module, param: Instruction) -> bool:
    """A ByVal pointer parameter the function may write (not NoWrite), of a pointer to
    Function storage (what an OpVariable can be)."""
    if not module.writable_by_value(param.result_id):
        return False
    ptr = module.defs.get(param.result_type)
    return (
        ptr is not None
        and ptr.opname == "OpTypePointer"
        and ptr.operands[0] == StorageClass.Function
    )


def _rename_phi_predecessors(block: Block, renamed: dict[int, int]) -> Block:
    changed = []
    for inst in block.instructions:
        if inst.opname == "OpPhi":
            ops = list(inst.operands)
            ops[1::2] = [renamed.get(label, label) for label in ops[1::2]]
            inst = replace(inst, operands=ops)
        changed.append(inst)
    return Block(block.label_id, changed, block.offset)


def split_at_barriers(
    module: Module, fn: Function, ids: _Ids, gathers: set[int] | None = None
) -> tuple[Function, dict[int, int]]:
    """Ends a block at each OpControlBarrier; returns the new function and, per barrier
    (by the label of the block it now ends), the label of the block that resumes after it.
    A wavefront operation becomes gather, call and sync (module docstring); the labels
    of the blocks holding the calls go to ``gathers``."""
    blocks: list[Block] = []
    continuations: dict[int, int] = {}
    renamed: dict[int, int] = {}
    waves = wave_op_imports(module)
    for block in fn.blocks:
        label, current = block.label_id, []
        for inst in block.instructions:
            if inst.opname == "OpFunctionCall" and inst.operands[0] in waves:
                current.append(_wave_gather(module, inst, waves))
                compute = ids.fresh()
                continuations[label] = compute
                blocks.append(Block(label, current, block.offset))
                sync = Instruction(-1, WAVE_SYNC, None, None, [], (), inst.offset)
                resume = ids.fresh()
                continuations[compute] = resume
                blocks.append(Block(compute, [inst, sync], block.offset))
                if gathers is not None:
                    gathers.add(compute)
                label, current = resume, []
                continue
            current.append(inst)
            if is_group_barrier(module, inst):
                resume = ids.fresh()
                continuations[label] = resume
                blocks.append(Block(label, current, block.offset))
                label, current = resume, []
        blocks.append(Block(label, current, block.offset))
        if label != block.label_id:
            renamed[block.label_id] = label
    if renamed:
        blocks = [_rename_phi_predecessors(b, renamed) for b in blocks]
    return Function(fn.definition, fn.parameters, blocks), continuations


def _successors(block: Block, continuations: dict[int, int]) -> list[int]:
    last = block.instructions[-1] if block.instructions else None
    if last is None:
        return []
    if last.opname in ("OpControlBarrier", WAVE_GATHER, WAVE_SYNC) and (
        block.label_id in continuations
    ):
        return [continuations[block.label_id]]
    if last.opname == "OpBranch":
        return [last.operands[0]]
    if last.opname == "OpBranchConditional":
        return list(last.operands[1:3])
    if last.opname == "OpSwitch":
        return [last.operands[1], *last.operands[3::2]]
    return []


def crossing_values(fn: Function, continuations: dict[int, int]) -> set[int]:
    """Ids of the values live across a barrier: live on entry to a barrier's continuation.

    Classic backward liveness on the split CFG, where a barrier block's successor
    is its continuation; a phi's operand counts as used at the end of the
    predecessor it comes from.
    """
    succ = {b.label_id: _successors(b, continuations) for b in fn.blocks}
    defined_here: set[int] = set()
    uses: dict[int, set[int]] = {}  # upward-exposed uses per block
    defs: dict[int, set[int]] = {}
    phi_defs: dict[int, set[int]] = {}
    phi_uses: dict[tuple[int, int], set[int]] = {}  # (predecessor, block) -> values
    for block in fn.blocks:
        for inst in block.instructions:
            if inst.result_id is not None:
                defined_here.add(inst.result_id)
    for block in fn.blocks:
        label = block.label_id
        used, made, phis = set(), set(), set()
        for inst in block.instructions:
            if inst.opname == "OpPhi":
                ops = inst.operands
                for value, pred in zip(ops[0::2], ops[1::2], strict=True):
                    if value in defined_here:
                        phi_uses.setdefault((pred, label), set()).add(value)
                phis.add(inst.result_id)
            else:
                for op, kind in zip(inst.operands, inst.kinds, strict=False):
                    if kind in _ID_KINDS and op in defined_here and op not in made:
                        used.add(op)
            if inst.result_id is not None:
                made.add(inst.result_id)
        uses[label], defs[label], phi_defs[label] = used, made, phis
    live_in: dict[int, set[int]] = {label: set() for label in succ}
    changed = True
    while changed:
        changed = False
        for block in reversed(fn.blocks):
            label = block.label_id
            live_out: set[int] = set()
            for nxt in succ[label]:
                live_out |= (live_in.get(nxt, set()) - phi_defs.get(nxt, set())) | phi_uses.get(
                    (label, nxt), set()
                )
            new_in = uses[label] | (live_out - defs[label])
            if new_in != live_in[label]:
                live_in[label] = new_in
                changed = True
    crossing: set[int] = set()
    for resume in continuations.values():
        crossing |= live_in.get(resume, set())
    return crossing


def _wave_order(fn: Function, continuations: dict[int, int], gathers: set[int]) -> list[int]:
    """The wavefront operations (their compute blocks) in the order the scheduler releases
    them, lowest state first, when lanes of one wavefront wait at several.

    An operation that can reach another but not be reached from it comes first: lanes
    waiting at the later one (past a loop, after an if) must wait for the lanes still
    on their way there, so that they exchange values together, as a GPU reconverges.
    Operations in one loop reach one another; block order decides among them."""
    succ = {b.label_id: _successors(b, continuations) for b in fn.blocks}
    order = [b.label_id for b in fn.blocks if b.label_id in gathers]
    reach: dict[int, set[int]] = {}
    for start in order:
        seen: set[int] = set()
        pending = list(succ[start])
        while pending:
            label = pending.pop()
            if label not in seen:
                seen.add(label)
                pending.extend(succ.get(label, ()))
        reach[start] = seen & gathers

    def before(a: int, b: int) -> bool:
        return b in reach[a] and a not in reach[b]

    ranked: list[int] = []
    left = list(order)
    while left:
        first = next(g for g in left if not any(before(h, g) for h in left if h != g))
        ranked.append(first)
        left.remove(first)
    return ranked


def prepare_stepped_kernel(module: Module, fn: Function, with_barriers: set[int]) -> SteppedKernel:
    """Inlines, splits and analyses kernel ``fn`` (which reaches a barrier) for step mode."""
    ids = _Ids(module)
    inlined = inline_calls(module, fn, with_barriers - {fn.id}, ids)
    gathers: set[int] = set()
    split, continuations = split_at_barriers(module, inlined, ids, gathers)
    states: dict[int, int] = {}
    barrier = 1
    for block, resume in continuations.items():
        if resume not in gathers and block not in gathers:
            states[resume] = barrier
            barrier += 1
    for rank, compute in enumerate(_wave_order(split, continuations, gathers)):
        states[compute] = WAVE_STATE_BASE + 2 * rank  # then its sync's continuation
        states[continuations[compute]] = WAVE_STATE_BASE + 2 * rank + 1
    crossing = crossing_values(split, continuations)
    return SteppedKernel(split, continuations, states, crossing, gathers)
