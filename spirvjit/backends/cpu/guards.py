"""Ranges before masks: split the x work-item loop where the kernel's guards are known.

A kernel guarded by ``if (i < n)`` (or ``x >= nx || y >= ny`` -> return, or boundary
tests like ``x == 0``) compares the work-item's x global id with a value that is the same
for the whole group. Left alone, LLVM's loop vectorizer if-converts the guarded body into
masked loads and stores (``vmaskmov`` on AVX2: microcoded, slow on AMD Zen). But such a
comparison has one value on a whole range of the group's x ids, and in that range the
body is plain straight-line code.

This module finds those comparisons (``Guard``) in the translated kernel and makes each
one read ``select(main, known, icmp)``, where ``main`` is a flag in the work-item context.
The work-group function (abi.py) then runs two x loops over one inlined copy each: the
main range ``[lo, hi)``, where every guard has its known value, with the flag set (the
select folds to a constant, the branches disappear and the loop vectorizes to plain
vector code), and the rest of the group with the flag clear (the original code).

A comparison qualifies when one side is the x global id, possibly truncated or extended,
and the other is built from kernel arguments and constants (add/sub/mul, casts), and the
predicate is an ordering or (in)equality. The wrapper evaluates the bound per group and
only trusts the split when every x global id of the group is below 2^31, so the id keeps
its value through any cast to a type of 32 bits or more.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

I1 = ir.IntType(1)
I64 = ir.IntType(64)
MAX_GUARDS = 8  # each guard narrows the main range; beyond a few there is little left
_SWAPPED = {"slt": "sgt", "sgt": "slt", "sle": "sge", "sge": "sle", "ult": "ugt", "ugt": "ult"}
_SWAPPED |= {"ule": "uge", "uge": "ule", "eq": "eq", "ne": "ne"}
_UNIFORM_OPS = ("add", "sub", "mul")
_CASTS = ("trunc", "zext", "sext")


@dataclass
class Guard:
    """``icmp`` comparing the x global id (left, after canonicalizing) with a bound."""

    icmp: ir.Instruction
    pred: str  # with the id on the left
    bound: ir.Value  # in the kernel; re-built in the work-group function
    constant_bound: bool  # a literal: a lower boundary such as ``x > 0`` or ``x == 0``


def _global_id_dim(value: ir.Value, ctx: ir.Argument, slot_of) -> int | None:
    """The dimension d if ``value`` is get_global_id(d) as the translator loads it."""
    seen = 0
    while isinstance(value, ir.Instruction) and seen < 8:
        seen += 1
        if value.opname == "extractelement":
            vector, index = value.operands
            if not isinstance(index, ir.Constant):
                return None
            while isinstance(vector, ir.Instruction) and vector.opname == "insertelement":
                if isinstance(vector.operands[2], ir.Constant) and (
                    vector.operands[2].constant == index.constant
                ):
                    break
                vector = vector.operands[0]
            else:
                return None
            value = vector.operands[1]
            continue
        if value.opname == "load":
            return slot_of(value.operands[0], ctx)
        return None
    return None


def _strip_casts(value: ir.Value) -> tuple[ir.Value, bool]:
    """Removes trunc/zext/sext; False when a trunc goes below 32 bits."""
    while isinstance(value, ir.CastInstr) and value.opname in _CASTS:
        if value.opname == "trunc" and value.type.width < 32:
            return value, False
        value = value.operands[0]
    return value, True


def _uniform(value: ir.Value, ctx: ir.Argument, depth: int = 0) -> bool:
    """Built only from kernel arguments (not the context) and constants."""
    if depth > 6:
        return False
    if isinstance(value, ir.Constant):
        return isinstance(value.type, ir.IntType)
    if isinstance(value, ir.Argument):
        return value is not ctx and isinstance(value.type, ir.IntType)
    if isinstance(value, ir.CastInstr) and value.opname in _CASTS:
        return _uniform(value.operands[0], ctx, depth + 1)
    if isinstance(value, ir.Instruction) and value.opname in _UNIFORM_OPS:
        return all(_uniform(op, ctx, depth + 1) for op in value.operands)
    return False


def find_guards(kernel: ir.Function, slot_of, dim: int = 0) -> list[Guard]:
    """The comparisons of the x global id (``dim`` 1: the y id, yjam.py) with
    group-uniform bounds in ``kernel``.

    ``slot_of(pointer, ctx)`` names the context's global-id dimension a load reads.
    """
    ctx = kernel.args[-1]
    guards: list[Guard] = []
    for block in kernel.blocks:
        for inst in block.instructions:
            if not isinstance(inst, ir.ICMPInstr) or not isinstance(inst.type, ir.IntType):
                continue
            if not isinstance(inst.operands[0].type, ir.IntType):
                continue
            for side in (0, 1):
                idv, ok = _strip_casts(inst.operands[side])
                if not ok or _global_id_dim(idv, ctx, slot_of) != dim:
                    continue
                if inst.operands[side].type.width < 32:
                    continue
                bound = inst.operands[1 - side]
                if not _uniform(bound, ctx):
                    continue
                pred = inst.op if side == 0 else _SWAPPED.get(inst.op)
                if pred not in _SWAPPED:
                    continue
                guards.append(Guard(inst, pred, bound, isinstance(bound, ir.Constant)))
                break
            if len(guards) >= MAX_GUARDS:
                return guards
    return guards


def known_value(guard: Guard) -> bool:
    """The guard's value on the main range (see ``main_range``)."""
    if guard.pred in ("eq", "ne"):
        return guard.pred == "ne"
    less = guard.pred[1:] in ("lt", "le")
    # Upper bounds (``i < n``): the main range lies below; literals (``x > 0``): above.
    return less != guard.constant_bound


def fold_guards(kernel: ir.Function, guards: list[Guard], read_flag) -> None:
    """Makes every use of a guard read ``select(flag, known value, icmp)``.

    ``read_flag(builder)`` loads the main-range flag (an i1) from the context.
    """
    users = [
        inst
        for block in kernel.blocks
        for inst in block.instructions
        if isinstance(inst, ir.SelectInstr | ir.CastInstr | ir.ConditionalBranch)
        or (isinstance(inst, ir.Instruction) and inst.opname in ("and", "or", "xor"))
    ]
    for guard in guards:
        b = ir.IRBuilder(guard.icmp.parent)
        b.position_after(guard.icmp)
        known = ir.Constant(I1, int(known_value(guard)))
        folded = b.select(read_flag(b), known, guard.icmp, name="guard")
        for user in users:
            user.replace_usage(guard.icmp, folded)


def rebuild(b: ir.IRBuilder, value: ir.Value, kernel: ir.Function, kernel_args: list) -> ir.Value:
    """``value`` (uniform, see ``_uniform``) computed in the work-group function."""
    if isinstance(value, ir.Constant):
        return value
    if isinstance(value, ir.Argument):
        return kernel_args[list(kernel.args).index(value)]
    ops = [rebuild(b, op, kernel, kernel_args) for op in value.operands]
    if value.opname in _CASTS:
        return getattr(b, value.opname)(ops[0], value.type)
    return getattr(b, value.opname)(*ops)


def main_range(
    b: ir.IRBuilder,
    guards: list[Guard],
    kernel: ir.Function,
    kernel_args: list,
    start: ir.Value,
    local_size: ir.Value,
) -> tuple[ir.Value, ir.Value]:
    """[lo, hi) of x local ids where every guard has its ``known_value``; lo <= hi.

    ``start`` is the group's first x global id (offset included). Empty unless every
    global id of the group is below 2^31 (then casts keep the id's value).
    """
    zero = ir.Constant(I64, 0)

    def smax(x, y):
        return b.select(b.icmp_signed(">", x, y), x, y)

    def smin(x, y):
        return b.select(b.icmp_signed("<", x, y), x, y)

    lo, hi = zero, local_size
    fits = b.icmp_unsigned("<=", b.add(start, local_size), ir.Constant(I64, 2**31 - 1))
    for guard in guards:
        bound = rebuild(b, guard.bound, kernel, kernel_args)
        signed = guard.pred[0] == "s"
        wide = (b.sext if signed else b.zext)(bound, I64) if bound.type.width < 64 else bound
        if not signed and bound.type.width >= 64:  # above 2^63: no split (i64 math below)
            fits = b.and_(fits, b.icmp_signed(">=", wide, ir.Constant(I64, 0)))
        # The comparison in i64, signed: id < limit (ordering) or id == limit.
        pred = guard.pred if guard.pred in ("eq", "ne") else guard.pred[1:]
        one = ir.Constant(I64, 1)
        limit = b.add(wide, one) if pred in ("le", "gt") else wide  # id <= w: id < w + 1
        at = b.sub(limit, start)  # the local id where the guard changes
        if pred in ("eq", "ne"):
            if guard.constant_bound:
                lo = smax(lo, b.add(at, one))
            else:
                hi = b.select(b.icmp_signed("<", at, zero), hi, smin(hi, at))
        elif known_value(guard) == (pred in ("lt", "le")):
            hi = smin(hi, smax(at, zero))  # main range below the change
        else:
            lo = smax(lo, at)  # main range above it
    lo = smin(lo, hi)
    # Only where every id of the group fits in 31 bits (ids are unsigned, so a start
    # near 2^64 wraps the sum: also below).
    fits = b.and_(fits, b.icmp_unsigned("<", start, ir.Constant(I64, 2**31)))
    return b.select(fits, lo, zero), b.select(fits, hi, zero)


def rest_copy(kernel: ir.Function) -> None:
    """Marks ``kernel`` for the out-of-line call of the rest range: its own body is then
    optimized for size (no vectorizing, no unrolling: it runs a few boundary work-items
    per row). The inlined copy of the main range follows its caller's attributes."""
    kernel.attributes.add("minsize")
    kernel.attributes.add("optsize")


def has_loop(fn: ir.Function) -> bool:
    """Whether ``fn`` has a loop: a branch back to its own block or an earlier one (the
    translator appends blocks in SPIR-V order, where a loop's header precedes its body)."""
    order = {block.name: i for i, block in enumerate(fn.blocks)}
    for i, block in enumerate(fn.blocks):
        term = block.terminator
        targets = [
            op for op in (term.operands if term is not None else []) if isinstance(op, ir.Block)
        ]
        if any(order.get(t.name, i + 1) <= i for t in targets):
            return True
    return False
