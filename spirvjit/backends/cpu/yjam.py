"""Register blocking across y: R consecutive y work-items in one clone (unroll-and-jam).

The whole-function vectorizer (vectorize.py) runs W consecutive x work-items per SIMD
instruction. In a kernel like ``gemm_naive`` (work-item (j, i): ``sum += a[i*n + k] *
b[k*n + j]`` over k) each step then loads W elements of B's row k and one element of A,
and does W multiply-adds: one FMA per load, and B's whole column block is read again for
every y row. The address ``b[k*n + j]`` does not depend on the y id, so R work-items of
consecutive y rows (same x) load the same element: run together, one load of B feeds R
FMAs, and A's ``a[(i + r)*n + k]`` is R scalars (uniform across x: broadcasts).

``jam(kernel, rows, y_guards)`` builds that clone, ``<kernel>.rows<R>``, with the kernel's
parameters: it runs the work-items whose y ids are the context's and the R - 1 after it.
Each instruction that depends on the y id (through its operands; the y global and local
ids are the roots) is copied R times, with copy r's y ids + r; everything else (B's
address and load, the loop counters, the branches) is computed once. The work-group
function (abi.py) vectorizes the clone across x like the kernel and runs it on blocks of
R rows of the group's y range where every row is in range; the other rows, and a row's x
items outside the vector chunks, run as before.

Running R work-items in lockstep is one more interleaving of work-items (no barriers),
and each copy does its own operations in the kernel's order, so results are the scalar
path's bits. Sharing one load among the R copies is the same as R loads in a row unless a
store of one copy could come between them, so the clone is declined where any store can
reach a load it shares (a kernel that writes B-like memory inside the loop). Also declined,
with the reason in the SPIRVJIT_DEBUG log: a branch or switch on a value that depends on
the y id (other than the y guards, ``i < n``, whose value the caller fixes by running the
clone only inside their range), private arrays, calls other than pure LLVM intrinsics,
atomics and fences, the context passed on or stored, no loop, or no load the rows share
in a loop (nothing to gain).
"""

from __future__ import annotations

import copy
import logging

from llvmlite import ir

from . import guards as guard_split
from . import vectorize as wfv

log = logging.getLogger("spirvjit")

ROWS = 4  # R: 4 rows x 16 lanes (2 YMM) is 8 accumulators, B's 2 vectors, A's broadcasts
# The y rows the launcher's own local size gives a kernel with a loop (rows_hint): 4
# blocks of R, which the work-group function runs chunk by chunk (abi._rows_function):
# gemm_naive 1024^2 in groups of 256 x 16 took ~25% less one-thread CPU time than 256 x 4.
GROUP_ROWS = 16
_GLOBAL_ID_Y, _LOCAL_ID_Y = 1, 4  # abi._QUERY_BASE["global_id" / "local_id"] + 1
# Pure intrinsics a copy may call (element-wise math, no memory).
_MEMORY_INTRINSICS = ("llvm.mem", "llvm.lifetime", "llvm.prefetch", "llvm.masked", "llvm.va")


class NotJammed(Exception):
    """Why the kernel gets no R-row clone."""


def _resolve(value: ir.Value) -> ir.Value:
    """The scalar an ``extractelement`` of a constant lane takes out of an
    ``insertelement`` chain (the translator's id vectors), else ``value``."""
    while isinstance(value, ir.Instruction) and value.opname == "extractelement":
        vector, index = value.operands
        if not isinstance(index, ir.Constant):
            return value
        while isinstance(vector, ir.Instruction) and vector.opname == "insertelement":
            at = vector.operands[2]
            if isinstance(at, ir.Constant) and at.constant == index.constant:
                break
            vector = vector.operands[0]
        else:
            return value
        value = vector.operands[1]
    return value


def _successors(block: ir.Block) -> list[ir.Block]:
    return wfv._successors(block, NotJammed)


def _rpo(fn: ir.Function) -> list[ir.Block]:
    seen, order = set(), []

    def visit(block: ir.Block) -> None:  # kernels are small: recursion depth is fine
        seen.add(block)
        for nxt in _successors(block):
            if nxt not in seen:
                visit(nxt)
        order.append(block)

    visit(fn.blocks[0])
    return order[::-1]


class _Analysis:
    """Which values of ``kernel`` depend on the y id (``varying``) and whether the R-row
    clone is legal and worth it (raises NotJammed)."""

    def __init__(self, kernel: ir.Function, y_guards: list):
        self.kernel = kernel
        self.ctx = kernel.args[-1]
        self.known = {
            g.icmp: ir.Constant(g.icmp.type, int(guard_split.known_value(g))) for g in y_guards
        }
        self.rpo = _rpo(kernel)
        self.roots: set = set()
        self.varying: set = set()
        self._check()
        self._propagate()
        self._legal()

    def _check(self) -> None:
        for block in self.rpo:
            for inst in block.instructions:
                if isinstance(inst, ir.AllocaInstr):
                    raise NotJammed("private memory (alloca)")
                if isinstance(
                    inst,
                    ir.AtomicRMW | ir.CmpXchg | ir.LoadAtomicInstr | ir.StoreAtomicInstr | ir.Fence,
                ):
                    raise NotJammed(f"{inst.opname}")
                if isinstance(inst, ir.CallInstr):
                    name = getattr(inst.callee, "name", "")
                    if not name.startswith("llvm.") or name.startswith(_MEMORY_INTRINSICS):
                        raise NotJammed(f"call to {name or 'a pointer'}")
                for n, op in enumerate(inst.operands):
                    if op is not self.ctx:
                        continue
                    if not (isinstance(inst, ir.GEPInstr) and n == 0):
                        raise NotJammed("the work-item context is passed on")
                if isinstance(inst, ir.LoadInstr):
                    slot = wfv.context_slot(inst.operands[0], self.ctx)
                    if slot in (_GLOBAL_ID_Y, _LOCAL_ID_Y):
                        self.roots.add(inst)
                if isinstance(inst, ir.GEPInstr) and inst.pointer is self.ctx:
                    for user in self._users(inst):
                        if not isinstance(user, ir.LoadInstr):
                            raise NotJammed("the work-item context is written")
        if not self.roots:
            raise NotJammed("no y id read")

    def _users(self, value) -> list:
        return [
            inst
            for block in self.kernel.blocks
            for inst in block.instructions
            if value in inst.operands
            or (isinstance(inst, ir.PhiInstr) and any(v is value for v, _ in inst.incomings))
        ]

    def operand_varying(self, op) -> bool:
        if op in self.known:
            return False
        return _resolve(op) in self.varying

    def _propagate(self) -> None:
        self.varying = set(self.roots)
        changed = True
        while changed:
            changed = False
            for block in self.rpo:
                for inst in block.instructions:
                    if inst in self.varying or inst in self.known:
                        continue
                    if isinstance(inst, ir.PhiInstr):
                        ops = [v for v, _ in inst.incomings]
                    elif inst.opname == "extractelement" and _resolve(inst) is not inst:
                        ops = [_resolve(inst)]
                    else:
                        ops = [op for op in inst.operands if not isinstance(op, ir.Block)]
                    if any(self.operand_varying(op) for op in ops):
                        self.varying.add(inst)
                        changed = True

    def _legal(self) -> None:
        shared_loop_load = False
        loop_blocks = self._loop_blocks()
        if not loop_blocks:
            raise NotJammed("no loop")
        shared_loads = []
        for block in self.rpo:
            term = block.terminator
            conditional = isinstance(term, ir.ConditionalBranch | ir.SwitchInstr)
            if conditional and self.operand_varying(term.operands[0]):
                raise NotJammed("a branch on a value that depends on the y id")
            for inst in block.instructions:
                pointer = inst.operands[0] if isinstance(inst, ir.LoadInstr) else None
                context = isinstance(pointer, ir.GEPInstr) and pointer.pointer is self.ctx
                if pointer is not None and inst not in self.varying and not context:
                    shared_loads.append(inst)
                    shared_loop_load = shared_loop_load or block in loop_blocks
        if not shared_loop_load:
            raise NotJammed("no load in a loop that the y rows share")
        # A store that can reach a shared load: R copies of the store would come between
        # the copies of the load, which read once would miss them.
        after = self._reachable_after()
        for block in self.rpo:
            for i, inst in enumerate(block.instructions):
                if not isinstance(inst, ir.StoreInstr):
                    continue
                later = set(block.instructions[i + 1 :])
                for load in shared_loads:
                    if load in later or load.parent in after[block]:
                        raise NotJammed("a store may reach a load the y rows share")

    def _reachable_after(self) -> dict:
        """For each block, the blocks reachable from its end (itself if in a cycle)."""
        out = {}
        for block in self.rpo:
            seen, todo = set(), list(_successors(block))
            while todo:
                b = todo.pop()
                if b in seen:
                    continue
                seen.add(b)
                todo.extend(_successors(b))
            out[block] = seen
        return out

    def _loop_blocks(self) -> set:
        reach = self._reachable_after()
        return {b for b in self.rpo if b in reach[b]}


def _clone(inst: ir.Instruction, block: ir.Block, value, target, name: str) -> ir.Instruction:
    """A copy of ``inst`` appended to ``block``, its operands mapped by ``value`` and its
    block operands by ``target``."""
    new = copy.copy(inst)
    for attr in ("_StrCaching__cached_str", "_StringReferenceCaching__cached_refstr"):
        new.__dict__.pop(attr, None)
    new.parent = block
    new._set_name(name if not isinstance(inst.type, ir.VoidType) else "")
    new.flags = list(inst.flags)
    new.metadata = dict(inst.metadata)

    def mapped(op):
        return target(op) if isinstance(op, ir.Block) else value(op)

    if isinstance(inst, ir.CallInstr):
        new.operands = [inst.operands[0], *(value(op) for op in inst.operands[1:])]
        new.arg_attributes = dict(inst.arg_attributes)
    else:
        new.operands = [mapped(op) for op in inst.operands]
    if isinstance(inst, ir.GEPInstr):
        new.pointer, new.indices = new.operands[0], list(new.operands[1:])
    if isinstance(inst, ir.PhiInstr):
        new.incomings = []  # filled in once every block exists
    if isinstance(inst, ir.SwitchInstr):
        new.default = target(inst.default)
        new.cases = [(val, target(blk)) for val, blk in inst.cases]
    if isinstance(inst, ir.ExtractValue | ir.InsertValue):
        new.aggregate = new.operands[0]
        if isinstance(inst, ir.InsertValue):
            new.value = new.operands[1]
    block.instructions.append(new)
    if isinstance(inst, ir.Terminator):
        block.terminator = new
    return new


def jam(kernel: ir.Function, rows: int, y_guards: list) -> ir.Function:
    """The R-row clone of ``kernel`` (module docstring), or raises NotJammed."""
    an = _Analysis(kernel, y_guards)
    module = kernel.module
    fn = ir.Function(module, kernel.function_type, f"{kernel.name}.rows{rows}")
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    single: dict = dict(zip(kernel.args, fn.args, strict=True))
    single.update(an.known)
    copies: dict = {}
    blocks = {block: fn.append_basic_block(block.name) for block in an.rpo}

    def value(op, r: int = 0):
        op_r = _resolve(op) if op not in an.known else op
        if op_r in copies:
            return copies[op_r][r]
        if op_r in single:
            return single[op_r]
        if op in single:
            return single[op]
        if isinstance(op, ir.Instruction):
            raise NotJammed(f"value {op.name} used before its definition")
        return op  # constants, globals, functions, metadata

    def target(block):
        return blocks[block]

    phis = []
    for block in an.rpo:
        nb = blocks[block]
        b = ir.IRBuilder(nb)
        for inst in block.instructions:
            if isinstance(inst, ir.Comment) or inst in an.known:
                continue
            if inst in an.roots:
                load = _clone(inst, nb, value, target, inst.name)
                b.position_at_end(nb)
                one = ir.Constant(inst.type, 1)
                row = [load]
                for _ in range(1, rows):
                    row.append(b.add(row[-1], one, name=f"{inst.name}.y"))
                copies[inst] = row
                continue
            varying = inst in an.varying or (
                isinstance(inst, ir.StoreInstr)
                and any(an.operand_varying(op) for op in inst.operands)
            )
            if not varying:
                new = _clone(inst, nb, value, target, inst.name)
                single[inst] = new
                if isinstance(new, ir.PhiInstr):
                    phis.append((inst, new, 0))
                continue
            row = []
            for r in range(rows):
                new = _clone(inst, nb, lambda op, r=r: value(op, r), target, f"{inst.name}.y{r}")
                row.append(new)
                if isinstance(new, ir.PhiInstr):
                    phis.append((inst, new, r))
            copies[inst] = row
    for old, new, r in phis:
        for val, blk in old.incomings:
            if blk in blocks:
                new.add_incoming(value(val, r), blocks[blk])
    return fn


def find_y_guards(kernel: ir.Function, slot_of) -> list:
    """The comparisons of the y global id with group-uniform bounds (guards.py)."""
    return guard_split.find_guards(kernel, slot_of, dim=1)


class Rows:
    """A kernel's R-row clones, vectorized: ``clones`` [(function, lanes)], widest
    first; ``y_guards`` the y guards their rows must satisfy."""

    def __init__(self, rows: int, clones: list, y_guards: list):
        self.rows = rows
        self.clones = clones
        self.y_guards = y_guards


def rows_body(
    module: ir.Module, kernel: ir.Function, features: str | None, main_range: bool, slot_of
) -> Rows | None:
    """The kernel's R-row clone vectorized across x (W lanes, and K*W where the
    vectorizer interleaves), or None with the reason logged (SPIRVJIT_DEBUG) and kept
    as ``kernel.rows_note``. ``main_range``: the clone runs in the guard split's main
    range (the flag reads 1)."""
    if features is None or not wfv.enabled() or ROWS < 2:
        return None
    y_guards = find_y_guards(kernel, slot_of)
    try:
        source = jam(kernel, ROWS, y_guards)
    except NotJammed as exc:
        kernel.rows_note = f"no y-row blocking: {exc}"
        log.debug("%s: %s", kernel.name, kernel.rows_note)
        return None
    width = wfv.width_for(features)
    clones = []
    try:
        # One clone, for JIT time: K*W lanes where the vectorizer interleaves (16 on
        # AVX2 for gemm: 4 rows x 2 vectors of accumulators), else W. The items of a
        # block of rows it leaves run row by row as before.
        clone = wfv.vectorize(source, width, features, main_range, module.data_layout)
        lanes = width * clone.wfv_interleave
        if lanes > width:
            module.globals.pop(clone.name, None)
            try:
                clone = wfv.vectorize(source, lanes, features, main_range, module.data_layout)
            except wfv.Declined:
                clone, lanes = (
                    wfv.vectorize(source, width, features, main_range, module.data_layout),
                    width,
                )
        clones.append((clone, lanes))
    except wfv.Declined as exc:
        kernel.rows_note = f"no y-row blocking: the {ROWS}-row clone: {exc}"
        log.debug("%s: %s", kernel.name, kernel.rows_note)
        return None
    finally:
        module.globals.pop(source.name, None)  # only its vector clones run
    lanes = " and ".join(str(n) for _, n in clones)
    kernel.rows_note = f"{ROWS} y rows at a time ({lanes} x work-items per instruction)"
    log.debug("%s: %s", kernel.name, kernel.rows_note)
    return Rows(ROWS, clones, y_guards)


_BRANCHES = ("OpBranch", "OpBranchConditional", "OpSwitch")


def rows_hint(module, kernel: str) -> int:
    """The y rows the launcher's own local size should give kernel ``kernel`` of the
    SPIR-V ``module`` (spirv/module.py): GROUP_ROWS where the kernel or a function it calls
    has a loop (a branch back to its own block or an earlier one: SPIR-V orders blocks
    so that dominators come first), else 1. Blocks of rows only pay where a loop loads
    something the rows share; a loop-free 2-D kernel (a stencil) ran slower in groups
    of 256 x 4 than 256 x 1. Read from the SPIR-V, so a cached object needs no
    translation; a loop the clone then declines only keeps groups of 4 rows."""
    by_id = {fn.id: fn for fn in module.functions}
    entry = next((e for e in module.entry_points if e.name == kernel), None)
    if entry is None:
        return 1
    seen, todo = set(), [entry.function_id]
    while todo:
        fn = by_id.get(todo.pop())
        if fn is None or fn.id in seen:
            continue
        seen.add(fn.id)
        position = {block.label_id: i for i, block in enumerate(fn.blocks)}
        for i, block in enumerate(fn.blocks):
            for inst in block.instructions:
                if inst.opname == "OpFunctionCall":
                    todo.append(inst.operands[0])
                elif inst.opname in _BRANCHES:
                    targets = inst.operands[:1] if inst.opname == "OpBranch" else inst.operands
                    if any(position.get(t, len(fn.blocks)) <= i for t in targets):
                        return GROUP_ROWS
    return 1
