"""Whole-function vectorization (WFV): W work-items per SIMD instruction.

LLVM's loop vectorizer widens the work-group function's x loop only when the kernel body
is simple enough for it; it gives up on data-dependent inner loops (Mandelbrot), and an
inner accumulation loop (gemm) stays one scalar FMA per work-item per step. This module
instead clones the translated kernel body into a function that runs W consecutive x
work-items at once (``<kernel>.wfv``, same parameters): the work-group function (abi.py)
calls it for the full W-chunks of the x range and the scalar body for the rest.

* **Uniformity.** The x local and global ids are *varying* (``splat(id) + <0..W-1>``);
  kernel arguments, constants, the other ids, sizes and group ids are *uniform* and stay
  scalar; an instruction is varying when an operand is, a phi when lanes may reach it
  along different edges, a value used after a loop whose lanes leave at different
  iterations. Masks have three kinds: FULL (every lane: the entry, and blocks outside
  loops that post-dominate it), UNIFORM (all lanes or none: a scalar i1) and VARYING (a
  vector of i1).
* **Control flow** is linearized: blocks run in a topological order in which each loop's
  blocks are contiguous, each under its mask (a UNIFORM or VARYING block is skipped when
  no lane is in it, unless it is a few instructions that cannot trap: ``_cheap``). Phis
  become selects on the incoming edges' masks. A loop whose exits are uniform keeps its
  scalar loop test; a divergent one loops while any lane is active, with a per-lane active
  mask, and captures each lane's exit edge and live-out values in the iteration it leaves.
  A counter stepped by a uniform amount from a uniform start stays scalar even there
  (lockstep: ``_header_phi_varying``). Without mask registers, varying masks are combined
  and carried as 32-bit lanes (``_widened``). A divergent loop whose lanes leave only at
  its latch first runs as a copy in which every lane is active (``_all_active_copy``),
  until not every lane goes on. A condition that holds for a range of lanes (``lid <
  stride``) has scalar any-lane and every-lane tests (``_note_range``).
* **Memory.** A varying address whose stride analysis says "consecutive" is checked at run
  time (all lanes ``base + lane * size``); when it is and every lane is active, one plain
  vector load/store; otherwise ``llvm.masked.gather``/``scatter`` (masked-off lanes are
  never touched). A uniform address is a scalar load (a store of a varying value to it is
  a scatter: the last active lane wins, as in the scalar order). No check where the lanes
  are consecutive by construction (``_affine``: the x ids, and a sign extension that
  cannot wrap, ``_no_signed_wrap``): one plain vector access from a scalar pointer.
* **Calls.** Element-wise LLVM intrinsics become their vector forms; libm functions with a
  glibc libmvec variant of W lanes call it, other pure libm calls run lane by lane.
  Calls that were not inlined (and other intrinsics) run once per active lane, in lane
  order (wfv_values.py).
* **Vector values, private arrays, compare-exchange, atomic loads and stores:** see
  wfv_values.py (structure-of-arrays vectors, interleaved or per-lane private copies,
  lane by lane under the mask).
* **Barrier kernels.** Each region of the step function (translate/barriers.py) gets its
  own clone (``_RegionVectorizer``, ``vectorize_region``): values live across barriers
  are saved in the frames as plain vectors, and frame arrays that hold the same value in
  every work-item are read as scalars (``uniform_frame_slots``).
* **Local memory** is ordinary memory; atomics on it (plain loads and stores on the CPU,
  marked ``PLAIN_ATOMIC`` by the translator) decline.
* **Declines** (the scalar work-item loop stays): atomics on local memory, calls through
  function pointers, private arrays of run-time size, irreducible control flow. The
  reason is logged (``SPIRVJIT_DEBUG``) and put in the IR (``spirvjit dis``).

Results: integer results are bit-exact (same operations per lane; masked-off lanes never
store, load, divide or branch); floating-point results are identical except where a
libmvec variant replaces libm (the loop vectorizer already does the same on the scalar
path). ``SPIRVJIT_WFV=0`` turns the vectorizer off; by default it takes kernels with loops
(see ``mode``), ``SPIRVJIT_WFV=all`` every kernel it can.
"""

from __future__ import annotations

import functools

import llvmlite.binding as llvm
from llvmlite import ir

from ...translate.function import overload_suffix
from ...translate.mathlib import LIBMVEC
from ...translate.ops_atomic import PLAIN_ATOMIC
from .wfv_values import _REDUCTIONS, ValueLanes

I1 = ir.IntType(1)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = ir.PointerType()

FULL, UNIFORM, VARYING = 0, 1, 2

# The work-item context slots (abi._QUERY_BASE): x global id, x local id, main-range flag.
_GLOBAL_ID_X, _LOCAL_ID_X, _MAIN_RANGE = 0, 3, 25
_X_IDS = (_GLOBAL_ID_X, _LOCAL_ID_X)
# Local ids (and a region's linear id) are below this: the CPU launcher refuses larger
# groups (launcher.MAX_WORK_GROUP_SIZE, far below it), so their low 32 bits read as a
# signed int are the id itself (``_no_signed_wrap``).
_LOCAL_SIZE_LIMIT = 1 << 31

_BINARY = {
    "add", "sub", "mul", "and", "or", "xor", "shl", "lshr", "ashr",
    "udiv", "sdiv", "urem", "srem", "fadd", "fsub", "fmul", "fdiv", "frem",
}  # fmt: skip
_DIVISIONS = {"udiv", "sdiv", "urem", "srem"}
# Integer operations _lane0 recomputes on lane 0 alone (no division: a masked-off lane's
# divisor is replaced, and lane 0's may be one).
_LANE0_BINARY = {"add", "sub", "mul", "and", "or", "xor", "shl", "lshr", "ashr"}
_CASTS = {
    "trunc", "zext", "sext", "fptrunc", "fpext", "fptoui", "fptosi", "uitofp", "sitofp",
    "ptrtoint", "inttoptr", "bitcast", "addrspacecast",
}  # fmt: skip
# Element-wise intrinsics (every argument and the result widen) and those with one
# immediate argument that stays scalar (position).
_ELEMENTWISE = {
    "fma", "fmuladd", "fabs", "sqrt", "floor", "ceil", "trunc", "rint", "nearbyint",
    "round", "roundeven", "copysign", "minnum", "maxnum", "minimum", "maximum", "exp",
    "exp2", "exp10", "log", "log2", "log10", "sin", "cos", "tan", "pow", "canonicalize",
    "smin", "smax", "umin", "umax", "ctpop", "bitreverse", "bswap", "fshl", "fshr",
    "sadd.sat", "uadd.sat", "ssub.sat", "usub.sat", "fptosi.sat", "fptoui.sat", "ldexp",
    "sadd.with.overflow", "uadd.with.overflow", "ssub.with.overflow", "usub.with.overflow",
    "smul.with.overflow", "umul.with.overflow",
}  # fmt: skip
_IMMEDIATE = {"abs": 1, "ctlz": 1, "cttz": 1}
# Instructions a masked block may run for every lane (_cheap), and how many.
_CHEAP_OPS = (_BINARY - _DIVISIONS - {"frem"}) | _CASTS | {"fneg"}
_CHEAP_BLOCK = 16
# The largest divergent loop (instructions) that gets an all-active copy (_all_active).
_ALL_ACTIVE_BODY = 200
_RESIZE = ("trunc", "zext", "sext")
# Integer predicates with their operands swapped, and negated.
_FLIPPED = {
    "ult": "ugt", "ule": "uge", "ugt": "ult", "uge": "ule",
    "slt": "sgt", "sle": "sge", "sgt": "slt", "sge": "sle",
}  # fmt: skip
_NEGATED = {
    "ult": "uge", "ule": "ugt", "ugt": "ule", "uge": "ult",
    "slt": "sge", "sle": "sgt", "sgt": "sle", "sge": "slt",
}  # fmt: skip
_PURE_INTRINSICS = {"assume"}  # uniform-only, kept as they are
# Memory operations run once per active lane, in lane order (wfv_values.py).
_LANE_BY_LANE = ir.CmpXchg | ir.LoadAtomicInstr | ir.StoreAtomicInstr
_KEPT = ir.Terminator | ir.AtomicRMW | ir.AllocaInstr | ir.Fence | _LANE_BY_LANE


def mode() -> str:
    """``SPIRVJIT_WFV``: "off" (0/off/false/no), "all" (every kernel it can), else "loops"
    (the default: kernels with loops; a loop-free kernel's work-item loop is left to
    LLVM's loop vectorizer, which widens it as well and, on the streaming kernels measured
    (stencils, guarded saxpy), runs faster: it interleaves and proves addresses
    consecutive without run-time checks)."""
    from ... import config  # (here: one hunk in a module others edit)

    value = config.setting("SPIRVJIT_WFV").strip().lower()
    if value in ("0", "false", "no", "off"):
        return "off"
    return "all" if value == "all" else "loops"


def enabled() -> bool:
    """Whether whole-function vectorization is on (``SPIRVJIT_WFV`` is not 0/off)."""
    return mode() != "off"


def width_for(features: str) -> int:
    """W: 32-bit lanes in the target's widest vector register."""
    flags = set(features.split(","))
    if "+avx512f" in flags:
        return 16
    if "+avx2" in flags or "+avx" in flags:
        return 8
    return 4


class Declined(Exception):
    """The kernel cannot be vectorized (yet); the message says why."""


@functools.cache
def _target_data(layout: str) -> llvm.TargetData:
    return llvm.create_target_data(layout)


def vectorize(
    kernel: ir.Function,
    width: int,
    features: str,
    main_range: bool,
    data_layout: str,
    known_slots: dict[int, int] | None = None,
) -> ir.Function:
    """The W-wide clone of ``kernel`` (``<name>.wfv``), or raises Declined.

    ``main_range``: the clone runs only where the guard split's flag is set (guards.py),
    so the flag reads as 1. ``known_slots``: other work-item context slots whose value is
    fixed wherever the clone runs (checked mode: the flag that says the group's hoisted
    bounds checks held); a branch that folds to a constant on them leaves its other side
    out of the clone."""
    known = dict(known_slots or {})
    if main_range:
        known[_MAIN_RANGE] = 1
    vectorizer = _Vectorizer(kernel, width, features, known, _target_data(data_layout))
    clone = _run(vectorizer, kernel)
    clone.wfv_interleave = vectorizer.interleave  # see _Vectorizer._interleave
    return clone


def vectorize_region(
    step: ir.Function, state: int, width: int, features: str, data_layout: str
) -> ir.Function:
    """The W-wide clone of one region of a barrier kernel's step function
    (translate/barriers.py): what ``step`` runs from ``state`` to its next barrier or its
    end (``<name>.wfv.r<state>``, same parameters; it returns the next state of its last
    lane), or raises Declined."""
    td = _target_data(data_layout)
    slots = uniform_frame_slots(step, width, features, data_layout)
    return _run(_RegionVectorizer(step, width, features, td, state, slots), step)


def uniform_frame_slots(
    step: ir.Function, width: int, features: str, data_layout: str
) -> frozenset[int]:
    """The frame arrays of a step function that hold the same value in every work-item of
    the group (by their offsets, Frame.slot's constant): those that only plain loads and
    stores address, and every store of which stores a uniform value under a uniform mask
    (assuming the arrays found so far uniform, to a fixed point). Loop counters, tile
    offsets and strides saved across barriers are, so a region reads them as scalars:
    its loops keep scalar tests and its addresses their strides (``sgemm``'s ``t``, a
    tree reduction's ``stride``). Cached on ``step``."""
    cached = getattr(step, "wfv_uniform_slots", None)
    if cached is not None:
        return cached
    found: frozenset[int] = frozenset()
    an = _RegionVectorizer(step, width, features, _target_data(data_layout), None, found)
    try:
        an._cfg()
        an._aliases()
        an._loops()
        candidates, escaped = set(), set()
        for block in an.rpo:
            for inst in block.instructions:
                for n, op in enumerate(inst.operands):
                    key = an._frame_slot(op)
                    if key is None:
                        continue
                    plain = isinstance(inst, ir.LoadInstr) or (
                        isinstance(inst, ir.StoreInstr) and n == 1
                    )
                    (candidates if plain else escaped).add(key)
        candidates -= escaped
        while candidates:
            an.uniform_slots = frozenset(candidates)
            an._uniformity()
            varying = set()
            for block in an.rpo:
                for inst in block.instructions:
                    if not isinstance(inst, ir.StoreInstr):
                        continue
                    key = an._frame_slot(inst.operands[1])
                    if key in candidates and (
                        an.kind[block] == VARYING
                        or an._resolve(inst.operands[0]) in an.varying
                        or an._liveout_use(inst.operands[0], block)
                    ):
                        varying.add(key)
            if not varying:
                break
            candidates -= varying
        found = frozenset(candidates)
    except Declined:
        found = frozenset()
    step.wfv_uniform_slots = found
    return found


def _run(vectorizer: _Vectorizer, kernel: ir.Function) -> ir.Function:
    try:
        return vectorizer.run()
    except Exception as exc:
        # A decline found while emitting: drop the half-built clone from the module. Any
        # other error is a vectorizer bug: the kernel still runs, as the scalar loop.
        fn = getattr(vectorizer, "fn", None)
        if fn is not None:
            kernel.module.globals.pop(fn.name, None)
        if isinstance(exc, Declined):
            raise
        raise Declined(f"vectorizer error (a spirvjit bug): {type(exc).__name__}: {exc}") from exc


_SIZES: dict = {}


def _abi_size(ty: ir.Type, td: llvm.TargetData) -> int:
    """``ty.get_abi_size(td)``, remembered: llvmlite parses a module for each call."""
    key = (str(ty), id(td))
    size = _SIZES.get(key)
    if size is None:
        size = _SIZES[key] = ty.get_abi_size(td)
    return size


def _successors(block: ir.Block, declined: type[Exception] = Declined) -> list[ir.Block]:
    """``block``'s successors; ``declined`` is raised for a terminator other than a
    branch, switch, return or unreachable."""
    term = block.terminator
    if isinstance(term, ir.ConditionalBranch):
        return [term.operands[1], term.operands[2]]
    if isinstance(term, ir.Branch):
        return [term.operands[0]]
    if isinstance(term, ir.SwitchInstr):
        return [term.default] + [target for _, target in term.cases]
    if isinstance(term, ir.Ret | ir.Unreachable):
        return []
    raise declined(f"terminator {term.opname if term is not None else 'missing'}")


def _dominators(nodes: list, entry, preds) -> dict:
    """Iterative dominator sets (kernels are small)."""
    everything = set(nodes)
    dom = {n: set(everything) for n in nodes}
    dom[entry] = {entry}
    changed = True
    while changed:
        changed = False
        for n in nodes:
            if n is entry:
                continue
            incoming = [dom[p] for p in preds[n] if p in dom]
            new = set.intersection(*incoming) if incoming else set()
            new = new | {n}
            if new != dom[n]:
                dom[n], changed = new, True
    return dom


class _Loop:
    def __init__(self, header: ir.Block, body: set, latches: list):
        self.header = header
        self.body = body
        self.latches = latches
        self.parent: _Loop | None = None
        self.divergent = False
        self.exits: list[tuple[ir.Block, ir.Block]] = []


def _scaled_operand(opname: str, ops):
    """x of ``x * k`` or ``k * x`` (``mul``) or ``x << k`` (``shl``) with a constant k,
    else None: a constant multiple of an affine (or non-wrapping) value is one too."""
    k, x = (ops[1], ops[0]) if opname == "shl" or isinstance(ops[1], ir.Constant) else ops
    return x if isinstance(k, ir.Constant) else None


class _AllActive:
    """What a divergent loop's all-active copy (``_Vectorizer._all_active_copy``) hands to
    its masked loop: the phis (in the block before it) of the loop's header phis, lane 0
    pointers, active lanes, exit lanes and live-out values, from where the loop was
    entered and from the all-active copy's last iteration; ``after`` (the block after the
    loop), which the copy branches to directly when no lane goes on."""

    def __init__(self, out: ir.Block, after: ir.Block):
        self.out, self.after = out, after
        self.entry_values: dict = {}
        self.firsts: dict = {}
        self.mask = None
        self.exits: dict = {}
        self.live: dict = {}
        self.left: dict = {}
        self.left_live: dict = {}

    def meet(self, b: ir.IRBuilder, latch_end: ir.Block, exits: dict, live: dict):
        """In ``after``: each exit edge's lanes and each live-out's values, from the masked
        loop's last iteration (``latch_end``) or from the all-active copy."""
        met_exits, met_live = {}, {}
        for edge, lanes in exits.items():
            met_exits[edge] = b.phi(lanes.type)
            met_exits[edge].add_incoming(lanes, latch_end)
            met_exits[edge].add_incoming(self.left[edge], self.out)
        for value, found in live.items():
            met_live[value] = b.phi(found.type)
            met_live[value].add_incoming(found, latch_end)
            met_live[value].add_incoming(self.left_live[value], self.out)
        return met_exits, met_live


class _Vectorizer(ValueLanes):
    # Whether a function without loops is vectorized in the default mode ("loops").
    loop_free_too = False

    def __init__(self, kernel, width, features, known: dict[int, int], td):
        self.kernel = kernel
        self.W = width
        self.features = set(features.split(","))
        self.known = known
        self.td = td
        self.ctx = kernel.args[-1]
        self.module = kernel.module
        self.alias: dict = {}

    # ----- analysis ----------------------------------------------------------------

    def run(self) -> ir.Function:
        self._cfg()
        self._aliases()
        # Again without the edges that constant conditions never take: code only they
        # reach (e.g. checked mode's per-item checks) is not part of the clone.
        self._cfg()
        self._check_instructions()
        self._privates()
        self._loops()
        if not self.loops and mode() != "all" and not self.loop_free_too:
            raise Declined("no loops: LLVM's loop vectorizer widens the work-item loop")
        self._uniformity()
        self._needed()
        self._strides()
        self._inductions()
        self.interleave = self._interleave()
        return self._emit()

    def _interleave(self) -> int:
        """K: how many W-chunks the work-group function may run as one clone of K*W lanes
        (abi.py: that clone for the full K*W-chunks of a row, this one for the rest).

        A loop whose varying accesses are all consecutive across lanes touches W elements
        per access per iteration: 32 bytes of a row on AVX2, when a column walk (``data[i *
        cols + j]`` in a loop over ``i``) or a k loop (``b[k * n + j]``) moves to another
        row, another cache line and page, each iteration. K chunks in lockstep read K*W
        elements of each row (a 128-byte span: two whole cache lines), and keep K
        independent accumulator chains where one was latency-bound. Lanes run in lockstep
        already; more of them is the same interleaving of work-items (no barriers here),
        and each lane's operations are unchanged, so results are identical.

        Only for loop nests LLVM can hold in registers at K*W lanes: no divergent loop, no
        masked (VARYING) block, gather, scatter, lane-by-lane call or atomic, libm call
        (libmvec has no K*W-lane variant), private array or vector-typed value in a loop;
        the loops' varying phis (a pointer induction: two registers per W lanes) in at most
        12 of the 16 vector registers at K*W lanes. 1 where it does not apply."""
        if self.private or not self.loops or any(lp.divergent for lp in self.loops):
            return 1
        streams, phi_bits = False, 0
        for block in self.rpo:
            if block not in self.loop_of:
                continue
            if self.kind[block] == VARYING:
                return 1
            for inst in block.instructions:
                if inst not in self.varying and not isinstance(inst, ir.StoreInstr):
                    continue
                if isinstance(inst.type, ir.VectorType) or self._per_lane(inst):
                    return 1
                if isinstance(inst, ir.CallInstr) and self._call_kind(inst)[0] != "elementwise":
                    return 1
                if isinstance(inst, ir.LoadInstr | ir.StoreInstr):
                    pointer = self._resolve(inst.operands[-1])
                    ty = inst.operands[0].type if isinstance(inst, ir.StoreInstr) else inst.type
                    if isinstance(ty, ir.VectorType):
                        return 1
                    if pointer in self.varying:
                        if not self._consecutive(pointer, ty):
                            return 1  # a gather or scatter
                        streams = True
                    elif isinstance(inst, ir.StoreInstr) and (
                        self._resolve(inst.operands[0]) in self.varying
                    ):
                        return 1  # a varying value to one address: a scatter
                elif isinstance(inst, ir.PhiInstr) and block in self.header_loop:
                    phi_bits += 8 * _abi_size(inst.type, self.td)
        if not streams:
            return 1
        # 32 lanes: 128 bytes of 32-bit elements per access; the phis in at most 12 of the
        # 16 vector registers (a 32-bit phi takes one register per W lanes).
        k = max(1, 32 // self.W)
        while k > 1 and phi_bits * k > 12 * 32:
            k //= 2
        return k

    def _successors(self, block: ir.Block) -> list[ir.Block]:
        """The block's successors, less the edge a constant condition never takes."""
        found = _successors(block)
        term = block.terminator
        if isinstance(term, ir.ConditionalBranch):
            cond = self._resolve(term.operands[0])
            if isinstance(cond, ir.Constant) and isinstance(cond.constant, int):
                return [found[0] if cond.constant else found[1]]
        if isinstance(term, ir.SwitchInstr):
            # As edge_kind says, every edge of a constant switch has the block's own kind:
            # only the edge it takes may stay (a FULL edge into every case ran them all).
            value = self._resolve(term.value)
            if isinstance(value, ir.Constant) and isinstance(value.constant, int):
                bits = (1 << value.type.width) - 1
                for case, target in term.cases:
                    if (getattr(case, "constant", case) - value.constant) & bits == 0:
                        return [target]
                return [term.default]
        return found

    def _cfg(self) -> None:
        entry = self.kernel.blocks[0]
        succ = {}
        order, seen, stack = [], {entry}, [(entry, iter(self._successors(entry)))]
        succ[entry] = self._successors(entry)
        on_stack = {entry}
        self.retreating = []
        while stack:
            block, it = stack[-1]
            for s in it:
                if s in on_stack:
                    self.retreating.append((block, s))
                if s not in seen:
                    seen.add(s)
                    succ[s] = self._successors(s)
                    stack.append((s, iter(succ[s])))
                    on_stack.add(s)
                    break
            else:
                stack.pop()
                on_stack.discard(block)
                order.append(block)
        self.rpo = order[::-1]
        self.reachable = set(self.rpo)
        self.succ = succ
        self.preds = {b: [] for b in self.rpo}
        for b in self.rpo:
            for s in dict.fromkeys(succ[b]):
                self.preds[s].append(b)
        self.entry = entry
        self.dom = _dominators(self.rpo, entry, self.preds)
        for src, dst in self.retreating:
            if dst not in self.dom[src]:
                raise Declined("irreducible control flow")
        # Post-dominance of the entry: blocks every lane passes exactly once (outside loops).
        exit_node = "exit"
        nodes = [exit_node] + self.rpo[::-1]
        rpreds = {n: [] for n in nodes}
        for b in self.rpo:
            targets = succ[b] or [exit_node]
            for s in targets:
                rpreds[b].append(s)
        pdom = _dominators(nodes, exit_node, rpreds)
        self.postdominates_entry = {b for b in self.rpo if b in pdom[entry]}

    def _resolve(self, value):
        """``value`` after the look-throughs of ``_aliases``."""
        while value in self.alias:
            value = self.alias[value]
        return value

    def _aliases(self) -> None:
        """extractelement(insertelement chain, k) -> the inserted scalar (the translator
        builds id vectors that way); select on a constant; context slots of known value
        (the main-range flag, ``known_slots``)."""
        self.alias = {}
        self.constant_flag = set()
        for block in self.rpo:
            for inst in block.instructions:
                if inst.opname == "extractelement":
                    vector, index = inst.operands
                    if not isinstance(index, ir.Constant):
                        continue
                    while isinstance(vector, ir.InsertElement):
                        at = vector.operands[2]
                        if isinstance(at, ir.Constant) and at.constant == index.constant:
                            self.alias[inst] = vector.operands[1]
                            break
                        if not isinstance(at, ir.Constant):
                            break
                        vector = vector.operands[0]
                elif inst.opname == "load" and self._ctx_slot(inst) in self.known:
                    self.alias[inst] = ir.Constant(I64, self.known[self._ctx_slot(inst)])
                elif isinstance(inst, ir.ICMPInstr) and inst.op in ("!=", "ne"):
                    a, c = (self._resolve(op) for op in inst.operands)
                    if _int_constants(a, c):
                        self.alias[inst] = ir.Constant(I1, int(a.constant != c.constant))
                elif inst.opname in _FOLDABLE and isinstance(inst.type, ir.IntType):
                    a, c = (self._resolve(op) for op in inst.operands)
                    if _int_constants(a, c):
                        folded = _fold(inst.opname, a.constant, c.constant, inst.type.width)
                        if folded is not None:
                            self.alias[inst] = ir.Constant(inst.type, folded)
                    elif inst.opname in ("or", "and"):
                        # x | all-ones, x & 0: the constant, whatever x is.
                        absorbing = -1 if inst.opname == "or" else 0
                        for op in (a, c):
                            if _int_constants(op) and _fold(
                                "and", op.constant, -1, inst.type.width
                            ) == _fold("and", absorbing, -1, inst.type.width):
                                self.alias[inst] = ir.Constant(inst.type, op.constant)
                elif isinstance(inst, ir.SelectInstr):
                    cond = self._resolve(inst.operands[0])
                    if isinstance(cond, ir.Constant) and isinstance(cond.constant, int):
                        self.alias[inst] = inst.operands[1] if cond.constant else inst.operands[2]

    def _ctx_slot(self, load) -> int | None:
        """The context slot a load reads (None: not a constant context slot)."""
        return context_slot(load.operands[0], self.ctx)

    def _reads_varying_slot(self, inst) -> bool:
        """A load of the x global or local id (or of a context slot not known)."""
        if not isinstance(inst, ir.LoadInstr):
            return False
        pointer = inst.operands[0]
        if not isinstance(pointer, ir.GEPInstr) or pointer.pointer is not self.ctx:
            return False
        if _group_field(pointer) is not None:
            return False  # the group's local memory and the like: one per group
        return self._ctx_slot(inst) in (_GLOBAL_ID_X, _LOCAL_ID_X, None)

    def _check_instructions(self) -> None:
        for block in self.rpo:
            for inst in block.instructions:
                name = inst.opname
                lanes = False
                if isinstance(inst, ir.CallInstr):
                    lanes = self._call_kind(inst)[0] == "lanes"  # raises for function pointers
                elif not (
                    name in _BINARY
                    or name in _CASTS
                    or name
                    in ("fneg", "icmp", "fcmp", "select", "phi", "getelementptr", "load", "store")
                    or name in ("extractelement", "insertelement", "shufflevector")
                    or name in ("extractvalue", "insertvalue")
                    or isinstance(inst, _KEPT)
                ):
                    raise Declined(f"instruction {name}")
                for op in inst.operands:
                    if op is self.ctx and not isinstance(inst, ir.GEPInstr) and not lanes:
                        raise Declined("the work-item context escapes")
                if isinstance(inst, ir.LoadInstr | ir.StoreInstr) and PLAIN_ATOMIC in getattr(
                    inst, "metadata", {}
                ):
                    # Atomics on local memory are plain loads and stores on the CPU (one
                    # thread runs the group's work-items in turn): lanes must not
                    # interleave them.
                    raise Declined("atomic on local memory")
                if isinstance(inst, ir.GEPInstr) and inst.pointer is self.ctx:
                    indices = [getattr(i, "constant", None) for i in inst.indices]
                    if _group_field(inst) is None and (
                        len(indices) != 3 or None in indices or indices[:2] != [0, 0]
                    ):
                        # get_global_id(d) with d known only at run time: the context
                        # holds the first lane's ids only.
                        raise Declined("a work-item query with a run-time dimension")

    def _call_kind(self, call) -> tuple[str, object]:
        callee = call.callee
        name = getattr(callee, "name", "")
        if not isinstance(callee, ir.Function):
            raise Declined("call through a function pointer")
        if callee.blocks:
            return "lanes", name  # not inlined: once per active lane
        if name.startswith("llvm."):
            base = name[5:].split(".")
            # Drop the type suffixes (f32, v4i32, p0, ...).
            while len(base) > 1 and _is_type_suffix(base[-1]):
                base.pop()
            base = ".".join(base)
            if base in _ELEMENTWISE:
                return "elementwise", base
            if base in _IMMEDIATE:
                return "immediate", base
            if base in _PURE_INTRINSICS:
                return "uniform", base
            if base in ("lifetime.start", "lifetime.end"):
                return "drop", base  # hints about one alloca, which the lanes' copies replace
            if base.startswith("vector.reduce.") and base[14:] in _REDUCTIONS:
                return "reduce", base[14:]
            return "lanes", base  # any other intrinsic: once per lane
        stem = name[:-1] if name.endswith("f") and name[:-1] in LIBMVEC else name
        attrs = callee.attributes
        if stem in LIBMVEC or (
            "readnone" in attrs and isinstance(callee.function_type.return_type, ir.FloatType)
        ):
            return "libm", stem
        if "readnone" in attrs and name in _OTHER_LIBM:
            return "libm", name
        return "lanes", name  # not inlined (or external): once per active lane

    def _per_lane(self, inst) -> bool:
        """Instructions whose result differs per lane whatever their operands: they run
        lane by lane (atomics, calls) or have a copy per lane (private variables)."""
        if isinstance(inst, ir.AtomicRMW | ir.CmpXchg | ir.LoadAtomicInstr | ir.AllocaInstr):
            return True
        return isinstance(inst, ir.CallInstr) and self._call_kind(inst)[0] == "lanes"

    def _loops(self) -> None:
        headers: dict = {}
        for src in self.rpo:
            for dst in self.succ[src]:
                if dst in self.dom[src]:  # back edge
                    headers.setdefault(dst, []).append(src)
        loops = []
        for header, latches in headers.items():
            body = {header}
            work = [s for s in latches if s is not header]
            body.update(work)
            while work:
                b = work.pop()
                for p in self.preds[b]:
                    if p not in body:
                        body.add(p)
                        work.append(p)
            loops.append(_Loop(header, body, list(dict.fromkeys(latches))))
        loops.sort(key=lambda lp: len(lp.body))
        for i, loop in enumerate(loops):
            for outer in loops[i + 1 :]:
                if loop.header in outer.body and outer is not loop:
                    loop.parent = outer
                    break
            loop.exits = [
                (b, s)
                for b in self.rpo
                if b in loop.body
                for s in self.succ[b]
                if s not in loop.body
            ]
        self.loops = loops
        self.loop_of = {}
        for loop in reversed(loops):  # outermost first; inner loops overwrite
            for b in loop.body:
                self.loop_of[b] = loop
        self.header_loop = {loop.header: loop for loop in loops}

    def _loops_of(self, block) -> list:
        cache = self.__dict__.setdefault("_loops_of_cache", {})
        out = cache.get(block)
        if out is None:
            out, loop = [], self.loop_of.get(block)
            while loop is not None:
                out.append(loop)
                loop = loop.parent
            cache[block] = out
        return out

    def _defined_block(self, value):
        return value.parent if isinstance(value, ir.Instruction) else None

    def _uniformity(self) -> None:
        """``varying``, ``kind``, ``edge_kind``; to a fixed point, less the lockstep phis
        (``_header_phi_varying``) whose values are used after their loop other than as
        a phi's incoming value or a stored value (``_escaping_lockstep``)."""
        refused: set = set()
        while True:
            self._uniformity_once(refused)
            more = self._escaping_lockstep() - refused
            if not more:
                return
            refused |= more

    def _uniformity_once(self, refused: set) -> None:
        varying: set = set(self._varying_arguments())
        full_blocks = {b for b in self.postdominates_entry if b not in self.loop_of}
        full_blocks.add(self.entry)

        def edge_kind(src, dst):
            k = kind[src]
            if k == VARYING:
                return VARYING
            term = src.terminator
            if isinstance(term, ir.ConditionalBranch) and term.operands[1] is not term.operands[2]:
                cond = self._resolve(term.operands[0])
                if isinstance(cond, ir.Constant):
                    return k
                return VARYING if cond in varying else UNIFORM
            if isinstance(term, ir.SwitchInstr):
                value = self._resolve(term.value)
                if isinstance(value, ir.Constant):
                    return k
                return VARYING if value in varying else UNIFORM
            return k

        def operand_varying(op, use_block) -> bool:
            op = self._resolve(op)
            if op in varying:
                return True
            d = self._defined_block(op)
            if d is None or d not in self.reachable:
                return False
            inner = set(map(id, self._loops_of(use_block)))
            return any(lp.divergent and id(lp) not in inner for lp in self._loops_of(d))

        kind = dict.fromkeys(self.rpo, FULL)
        changed = True
        while changed:
            changed = False
            for b in self.rpo:
                loop = self.header_loop.get(b)
                if b in full_blocks:
                    new = FULL
                elif loop is not None and loop.divergent:
                    new = VARYING
                else:
                    incoming = [
                        edge_kind(p, b) for p in self.preds[b] if loop is None or p not in loop.body
                    ]
                    new = (
                        VARYING
                        if VARYING in incoming
                        else (FULL if incoming == [FULL] else UNIFORM)
                    )
                if new > kind[b]:
                    kind[b], changed = new, True
                for inst in b.instructions:
                    if inst in varying:
                        continue
                    is_var = False
                    if self._per_lane(inst) or self._reads_varying_slot(inst):
                        # An atomic or a call runs once per lane (lane by lane), a private
                        # variable has a copy per lane: the result varies.
                        is_var = True
                    elif isinstance(inst, ir.PhiInstr) and loop is not None and inst not in refused:
                        is_var = self._header_phi_varying(inst, loop, edge_kind, operand_varying)
                    elif isinstance(inst, ir.PhiInstr):
                        for value, pred in inst.incomings:
                            if pred not in self.reachable:
                                continue
                            if edge_kind(pred, b) == VARYING or operand_varying(value, b):
                                is_var = True
                                break
                    elif not isinstance(inst, ir.Terminator) and not self._uniform_load(inst):
                        is_var = any(operand_varying(op, b) for op in inst.operands)
                    if is_var:
                        varying.add(inst)
                        changed = True
            for loop in self.loops:
                if loop.divergent:
                    continue
                out = [edge_kind(b, s) for b, s in loop.exits]
                back = [edge_kind(latch, loop.header) for latch in loop.latches]
                if VARYING in out or VARYING in back:
                    loop.divergent = True
                    changed = True
        self.varying = varying
        self.kind = kind
        self.edge_kind = edge_kind

    def _header_phi_varying(self, phi, loop, edge_kind, operand_varying) -> bool:
        """Whether a loop header's phi varies. It does not when every incoming value is
        uniform and, among the entry edges and among the back edges, a VARYING edge
        brings the same value as the others: a loop is entered once by all its lanes
        together, and the lanes still in a divergent loop have run the same iterations,
        so a counter that every iteration steps by a uniform amount (Mandelbrot's ``n``)
        is one scalar in every lane still looping (lockstep). Lanes that leave keep the
        value they left with (the loop's live-out capture)."""
        groups: tuple[list, list] = ([], [])
        for value, pred in phi.incomings:
            if pred not in self.reachable:
                continue
            if operand_varying(value, phi.parent):
                return True
            groups[pred in loop.body].append((self._resolve(value), edge_kind(pred, phi.parent)))
        return any(
            len({v for v, _ in group}) > 1 and any(k == VARYING for _, k in group)
            for group in groups
        )

    def _escaping_lockstep(self) -> set:
        """The uniform header phis of divergent loops (lockstep: the same value only among
        the lanes still looping) whose value, or a value computed from it in the loop, is
        used after the loop other than as a phi's incoming value or the value a store
        stores: the stride and consecutiveness analyses take a uniform operand as the
        same in every lane, which a lockstep value is not after its loop."""
        out = set()
        for loop in self.loops:
            if not loop.divergent:
                continue
            phis = [
                i
                for i in loop.header.instructions
                if isinstance(i, ir.PhiInstr) and i not in self.varying
            ]
            for phi in phis:
                derived = {phi}
                changed = True
                while changed:
                    changed = False
                    for b in loop.body:
                        for inst in b.instructions:
                            if inst in derived or inst in self.varying:
                                continue
                            if any(self._resolve(op) in derived for op in _operands(inst)):
                                derived.add(inst)
                                changed = True
                for b in self.rpo:
                    if b in loop.body:
                        continue
                    for inst in b.instructions:
                        if isinstance(inst, ir.PhiInstr):
                            continue
                        ops = [self._resolve(op) for op in _operands(inst)]
                        if isinstance(inst, ir.StoreInstr):
                            ops = ops[1:]
                        if any(op in derived for op in ops):
                            out.add(phi)
        return out

    def _needed(self) -> None:
        """Instructions whose results are used by stores, calls with effects or control
        flow (after look-throughs); the rest are not emitted."""
        needed: set = set()
        work = []
        for block in self.rpo:
            for inst in block.instructions:
                if isinstance(inst, ir.StoreInstr | ir.Terminator | ir.AtomicRMW | ir.Fence) or (
                    isinstance(inst, ir.CallInstr)
                    and self._call_kind(inst)[0] in ("uniform", "lanes")
                    or isinstance(inst, _LANE_BY_LANE)
                ):
                    work.append(inst)
        while work:
            inst = work.pop()
            if inst in needed:
                continue
            needed.add(inst)
            ops = (
                [v for v, _ in inst.incomings]
                if isinstance(inst, ir.PhiInstr)
                else list(inst.operands)
            )
            for op in ops:
                op = self._resolve(op)
                if isinstance(op, ir.Instruction) and op not in needed:
                    work.append(op)
        self.needed = needed
        for inst in needed:
            if inst in self.varying and not isinstance(inst.type, ir.VoidType):
                self._widen(inst.type)  # raises for a type with no varying form
        # Live-outs of divergent loops: values defined in the loop used outside it.
        self.liveouts = {id(loop): [] for loop in self.loops}
        for inst in needed:
            if isinstance(inst, ir.PhiInstr):
                uses = [(v, inst.parent) for v, p in inst.incomings if p in self.reachable]
            else:
                uses = [(op, inst.parent) for op in inst.operands]
            for op, use_block in uses:
                op = self._resolve(op)
                d = self._defined_block(op)
                if d is None or d not in self.reachable:
                    continue
                inner = set(map(id, self._loops_of(use_block)))
                for loop in self._loops_of(d):
                    if (
                        loop.divergent
                        and id(loop) not in inner
                        and op not in self.liveouts[id(loop)]
                    ):
                        self.liveouts[id(loop)].append(op)

    def _strides(self) -> None:
        """Per varying integer/pointer value: its change from one lane to the next (in
        units of the value; bytes for pointers), or None. A hint: every access that
        relies on it checks the addresses at run time."""
        stride: dict = {arg: 1 for arg in self._varying_arguments()}
        unset = object()

        def of(value):
            value = self._resolve(value)
            if value not in self.varying:
                return 0
            return stride.get(value, unset)

        def size(ty) -> int:
            return _abi_size(ty, self.td)

        for _ in range(4):
            for block in self.rpo:
                for inst in block.instructions:
                    if inst not in self.varying:
                        continue
                    s = None
                    ops = inst.operands
                    private = self._private_stride(inst, of)
                    if private is not None:
                        s = None if private == "unknown" else private
                    elif not _scalar_type(inst.type):
                        s = None
                    elif isinstance(inst, ir.LoadInstr):
                        slot = self._ctx_slot(inst)
                        s = 1 if slot in (_GLOBAL_ID_X, _LOCAL_ID_X) else None
                    elif inst.opname in ("add", "sub"):
                        a, c = of(ops[0]), of(ops[1])
                        if None not in (a, c) and unset not in (a, c):
                            s = a + c if inst.opname == "add" else a - c
                        elif unset in (a, c) and None not in (a, c):
                            s = unset
                    elif inst.opname in ("mul", "shl"):
                        k = self._resolve(ops[1])
                        a = of(ops[0])
                        if inst.opname == "mul" and not isinstance(k, ir.Constant):
                            k, a = self._resolve(ops[0]), of(ops[1])
                        if isinstance(k, ir.Constant) and isinstance(k.constant, int):
                            factor = k.constant if inst.opname == "mul" else 1 << k.constant
                            s = a if a in (None, unset) else a * factor
                    elif inst.opname in ("ashr", "lshr"):
                        k, a = self._resolve(ops[1]), of(ops[0])
                        if isinstance(k, ir.Constant) and a not in (None, unset):
                            if a % (1 << k.constant) == 0:
                                s = a >> k.constant
                        elif a is unset:
                            s = unset
                    elif inst.opname in ("trunc", "zext", "sext", "ptrtoint", "inttoptr"):
                        s = of(ops[0])
                    elif inst.opname == "and" and _low_mask(self._resolve(ops[1])):
                        s = of(ops[0])  # x's low bits (zext(trunc(x)) as LLVM writes it)
                    elif isinstance(inst, ir.GEPInstr):
                        s = of(inst.pointer)
                        ty = inst.source_etype
                        for n, index in enumerate(inst.indices):
                            if n > 0:
                                if not isinstance(ty, ir.ArrayType):
                                    if of(index) != 0:
                                        s = None
                                    ty = None
                                    break
                                ty = ty.element
                            a = of(index)
                            if s in (None, unset) or a in (None, unset):
                                s = None if None in (s, a) else unset
                            else:
                                s = s + a * size(ty)
                    elif isinstance(inst, (ir.PhiInstr, ir.SelectInstr)):
                        values = (
                            [v for v, p in inst.incomings if p in self.reachable]
                            if isinstance(inst, ir.PhiInstr)
                            else ops[1:]
                        )
                        known = {of(v) for v in values} - {unset}
                        s = known.pop() if len(known) == 1 else (None if known else unset)
                    stride[inst] = s
        self.stride = {k: (None if v is unset else v) for k, v in stride.items()}

    def _inductions(self) -> None:
        """Varying pointer phis of loop headers with one entry edge whose back-edge values
        are the phi plus uniform offsets, and a known stride (see ``_root``)."""
        self.induction: set = set()
        self.induction_flag: dict = {}
        self.strided: set = set()  # the same, stride unknown: ``_strided_load``
        self.counters: set = set()  # i64 phis advanced by uniform steps (``_affine``)
        self.strided_check: dict = {}  # phi -> (i1: lanes evenly spaced, i64 spacing)
        for loop in self.loops:
            header = loop.header
            entries = [p for p in self.preds[header] if p not in loop.body]
            if len(entries) != 1:
                continue
            for phi in header.instructions:
                if not isinstance(phi, ir.PhiInstr) or phi not in self.varying:
                    continue
                backs = [self._resolve(v) for v, p in phi.incomings if p in loop.body]
                if (
                    phi.type == I64
                    and all(self._plus_uniform(v, phi) for v in backs)
                    and not (loop.divergent and self._leaves_loop(phi, loop))
                ):
                    self.counters.add(phi)
                if not isinstance(phi.type, ir.PointerType):
                    continue
                self.induction.add(phi)  # tentatively, for _root
                if not all(self._root(v) is phi for v in backs) or not self.stride.get(phi):
                    self.induction.discard(phi)
                    if all(self._root(v, phi) is phi for v in backs):
                        self.strided.add(phi)

    def _leaves_loop(self, phi, loop) -> bool:
        """Whether an integer or pointer the loop computes from ``phi`` is used after it:
        where lanes leave at different iterations, each lane's last value is no longer
        lane 0's + i."""
        work, seen = list(self.liveouts[id(loop)]), set()
        while work:
            value = self._resolve(work.pop())
            if value is phi:
                return True
            if id(value) in seen or not isinstance(value, ir.Instruction):
                continue
            seen.add(id(value))
            # Only integer and pointer arithmetic carries the lanes' spacing (what _affine
            # follows); a load or a call from the counter's address starts a new value.
            if (
                value.parent in loop.body
                and isinstance(value.type, ir.IntType | ir.PointerType)
                and not isinstance(value, ir.LoadInstr | ir.CallInstr)
            ):
                ops = (
                    [v for v, _ in value.incomings]
                    if isinstance(value, ir.PhiInstr)
                    else value.operands
                )
                work.extend(ops)
        return False

    def _plus_uniform(self, value, phi) -> bool:
        """Whether i64 ``value`` is ``phi`` plus or minus uniform values (a grid-stride
        loop's ``i += get_global_size(0)``)."""
        for _ in range(8):
            if value is phi:
                return True
            if not isinstance(value, ir.Instruction) or value.opname not in ("add", "sub"):
                return False
            a, c = (self._resolve(op) for op in value.operands)
            if c not in self.varying:
                value = a
            elif value.opname == "add" and a not in self.varying:
                value = c
            else:
                return False
        return False

    # ----- emission ----------------------------------------------------------------

    def _emit(self) -> ir.Function:
        k = self.kernel
        fn = ir.Function(self.module, k.function_type, self._clone_name())
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        self.fn = fn
        self.vmap = {old: new for old, new in zip(k.args, fn.args, strict=True)}
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.block_mask: dict = {}
        self.edge_mask: dict = {}
        self.liveout_value: dict = {}  # (loop id, value) -> accumulated vector
        self.lane0: dict = {}  # pointer induction -> its lane 0's scalar phi (_emit_loop)
        self.current_block = self.entry
        self.iota = ir.Constant(ir.VectorType(I64, self.W), list(range(self.W)))
        for arg in self._varying_arguments():  # lane i: the first lane's value + i
            self.vmap[arg] = self.b.add(self._splat(self.vmap[arg]), self.iota)
        self._emit_nodes(self._order(set(self.rpo), self.entry, None))
        self._return()
        return fn

    # Hooks of step-function regions (_RegionVectorizer) -------------------------------

    def _clone_name(self) -> str:
        wide = width_for(",".join(self.features)) != self.W  # an interleaved clone
        return f"{self.kernel.name}.wfv" + (f".x{self.W}" if wide else "")

    def _varying_arguments(self) -> list:
        """i64 arguments that are the first lane's value of a per-lane id (+1 per lane)."""
        return []

    def _returned(self, block, mask) -> None:
        """After ``block`` ran under ``mask``: what its ``ret`` returns (kernels: nothing)."""

    def _return(self) -> None:
        self.b.ret_void()

    def _proven_consecutive(self, pointer) -> bool:
        """Whether ``pointer``'s lanes are consecutive by construction (no check): its
        lanes are lane 0's + i * stride (``_affine``), and the stride analysis (which
        ``_consecutive`` asked first) says the stride is the element size."""
        return self._affine(pointer)

    def _affine(self, value, depth: int = 0) -> bool:
        """Whether lane i of i64 or pointer ``value`` is lane 0's + i * its stride, modulo
        2**64, by construction: an x id (first lane's + lane number, in i64), sums,
        constant multiples and uniform offsets of those, a sign extension that cannot
        wrap (``_no_signed_wrap``), an induction whose entry value is affine."""
        value = self._resolve(value)
        if value not in self.varying:
            return True
        if depth > 24:
            return False
        slot = self._ctx_slot(value) if isinstance(value, ir.LoadInstr) else None
        if value in self._varying_arguments() or slot in _X_IDS:
            return True
        if isinstance(value, ir.GEPInstr):
            ops = [value.pointer, *value.indices]
            return all(
                self._affine(op, depth + 1)
                if op.type == I64 or isinstance(op.type, ir.PointerType)
                else self._no_signed_wrap(op, op.type.width, depth + 1)  # sign-extended
                for op in ops
            )
        if not isinstance(value, ir.Instruction) or value.type != I64:
            return self._affine_induction(value, depth)
        if value in self.counters:  # affine in every iteration when it is on entry
            loop = self.header_loop[value.parent]
            entries = [v for v, p in value.incomings if p not in loop.body]
            return all(self._affine(v, depth + 1) for v in entries)
        ops = [self._resolve(op) for op in value.operands]
        if value.opname in ("add", "sub"):
            return all(self._affine(op, depth + 1) for op in ops)
        if value.opname in ("mul", "shl"):
            x = _scaled_operand(value.opname, ops)
            return x is not None and self._affine(x, depth + 1)
        if value.opname == "sext":
            return self._no_signed_wrap(ops[0], ops[0].type.width, depth + 1)
        if value.opname == "ashr":  # ashr(shl(x, c), c): sext(trunc(x to 64 - c bits))
            shl = ops[0]
            if (
                isinstance(shl, ir.Instruction)
                and shl.opname == "shl"
                and isinstance(ops[1], ir.Constant)
                and isinstance(self._resolve(shl.operands[1]), ir.Constant)
                and self._resolve(shl.operands[1]).constant == ops[1].constant
            ):
                bits = 64 - ops[1].constant
                return self._no_signed_wrap(self._resolve(shl.operands[0]), bits, depth + 1)
        return False

    def _affine_induction(self, value, depth: int) -> bool:
        if value not in self.induction:
            return False
        loop = next(lp for lp in self.loops if lp.header is value.parent)
        entries = [v for v, p in value.incomings if p not in loop.body]
        return all(self._affine(v, depth + 1) for v in entries)

    def _no_signed_wrap(self, value, bits: int, depth: int) -> bool:
        """Whether the low ``bits`` bits of ``value``, read as signed integers, are lane
        0's + i * stride without wrapping around, so that their sign extension is affine.
        The x ids are below the work-group size (at most ``_LOCAL_SIZE_LIMIT``, checked at
        launch, ndrange.normalize_sizes); a uniform offset or constant factor keeps that
        only through an ``add``/``sub``/``mul`` the IR marks ``nsw`` (OpenCL C's signed
        arithmetic: overflow is undefined, so every lane that computes it does not wrap).
        Never assumed from the kernel's types alone: an ``add`` without ``nsw`` may wrap."""
        value = self._resolve(value)
        if value not in self.varying:
            return True
        if depth > 24 or not isinstance(value, ir.Instruction):
            return False
        slot = self._ctx_slot(value) if isinstance(value, ir.LoadInstr) else None
        if value in self._varying_arguments() or slot == _LOCAL_ID_X:
            # the linear id of a region and the x local id: in [0, _LOCAL_SIZE_LIMIT)
            return bits >= _LOCAL_SIZE_LIMIT.bit_length()
        ops = [self._resolve(op) for op in value.operands]
        if value.opname == "trunc":
            return bits <= value.type.width and self._no_signed_wrap(ops[0], bits, depth + 1)
        if value.opname == "sext":
            inner = ops[0].type.width
            return self._no_signed_wrap(ops[0], min(bits, inner), depth + 1)
        if bits != value.type.width or "nsw" not in getattr(value, "flags", ()):
            return False
        if value.opname in ("add", "sub"):
            return all(self._no_signed_wrap(op, bits, depth + 1) for op in ops)
        if value.opname == "mul":
            x = _scaled_operand(value.opname, ops)
            return x is not None and self._no_signed_wrap(x, bits, depth + 1)
        return False

    def _uniform_load(self, inst) -> bool:
        """Whether load ``inst`` reads the same value in every lane from per-lane addresses
        (a saved value that is the same in every work-item): lane 0's element is read."""
        return False

    def _order(self, blocks: set, entry, loop) -> list:
        """Topological order of ``blocks`` (one loop level: inner loops are one node)."""

        def node(b):
            inner = self.loop_of.get(b)
            while inner is not None and inner.parent is not loop:
                inner = inner.parent
            return inner if inner is not None and inner is not loop else b

        def succ(n):
            members = n.body if isinstance(n, _Loop) else [n]
            out = []
            for m in members:
                for s in self.succ[m]:
                    if s in blocks and s is not entry and s not in members:
                        out.append(node(s))
            return [o for o in dict.fromkeys(out) if o is not n]

        start = node(entry) if loop is None else entry
        order, seen, stack = [], {id(start)}, [(start, iter(succ(start)))]
        while stack:
            n, it = stack[-1]
            for s in it:
                if id(s) not in seen:
                    seen.add(id(s))
                    stack.append((s, iter(succ(s))))
                    break
            else:
                stack.pop()
                order.append(n)
        return order[::-1]

    def _emit_nodes(self, nodes: list) -> None:
        for n in nodes:
            if isinstance(n, _Loop):
                self._emit_loop(n)
            else:
                self._block_entry(n)
                self._emit_block(n)

    # masks -------------------------------------------------------------------------

    def _vec_type(self, ty):
        return ir.VectorType(ty, self.W)

    def _splat(self, value):
        if isinstance(value.type, ir.VectorType):
            return value
        vt = self._vec_type(value.type)
        if (
            isinstance(value, ir.Constant)
            and isinstance(value.constant, int | float)
            and not isinstance(value.type, ir.PointerType)
        ):
            return ir.Constant(vt, [ir.Constant(value.type, value.constant)] * self.W)
        if isinstance(value, ir.Constant) and value.constant is None:
            return ir.Constant(vt, None)
        b = self.b
        undef = ir.Constant(vt, ir.Undefined)
        one = b.insert_element(undef, value, ir.Constant(I32, 0))
        return b.shuffle_vector(one, undef, ir.Constant(self._vec_type(I32), [0] * self.W))

    def _any(self, mask):
        if mask is None:
            return ir.Constant(I1, 1)
        if not isinstance(mask.type, ir.VectorType):
            return mask
        ranged = self.__dict__.get("ranges", {}).get(id(mask))
        if ranged is not None and ranged[0] is mask:
            return ranged[1]  # a range of lanes (_note_range)
        bits = self.b.bitcast(mask, ir.IntType(self.W))
        return self.b.icmp_unsigned("!=", bits, ir.Constant(ir.IntType(self.W), 0))

    def _all(self, mask):
        if mask is None:
            return ir.Constant(I1, 1)
        if not isinstance(mask.type, ir.VectorType):
            return mask
        ranged = self.__dict__.get("ranges", {}).get(id(mask))
        if ranged is not None and ranged[0] is mask:
            return ranged[2]
        bits = self.b.bitcast(mask, ir.IntType(self.W))
        return self.b.icmp_unsigned("==", bits, ir.Constant(ir.IntType(self.W), -1))

    def _and(self, mask, cond, kind):
        """mask & cond as an edge mask of ``kind`` (None: FULL). A select, not ``and``:
        the condition may be poison where the mask is off (a skipped block's value)."""
        if kind == FULL:
            return None
        if kind == VARYING:
            if mask is not None and self._mask_lanes() != I1:
                # ``and`` of the lanes, the condition frozen: where the mask is off it
                # may be poison (frozen, any value; the mask's zero lanes clear it).
                frozen = self._put(ir.Instruction(self.b.block, cond.type, "freeze", [cond]))
                if not isinstance(cond.type, ir.VectorType):
                    # A splat of the condition as i32 lanes (one of i1 would be built in
                    # 16-bit lanes on AVX2).
                    lanes = self._splat(self.b.sext(frozen, I32))
                else:
                    lanes = self._widened(frozen)
                return self._narrowed(self.b.and_(self._widened(self._splat(mask)), lanes))
            cond = self._splat(cond)
            if mask is None:
                return cond
            mask = self._splat(mask)
            return self.b.select(mask, cond, ir.Constant(mask.type, None))
        if mask is None:
            return cond
        return self.b.select(mask, cond, ir.Constant(I1, 0))

    def _or(self, masks: list, kind):
        if kind == FULL:
            return None
        if not masks or any(m is None for m in masks):
            return ir.Constant(self._vec_type(I1) if kind == VARYING else I1, 1)
        if kind == VARYING:
            masks = [self._splat(m) for m in masks]
            if len(masks) > 1 and self._mask_lanes() != I1:
                acc = self._widened(masks[0])
                for m in masks[1:]:
                    acc = self.b.or_(acc, self._widened(m))
                return self._narrowed(acc)
        acc = masks[0]
        for m in masks[1:]:
            acc = self.b.or_(acc, m)
        return acc

    def _edges_into(self, block, exclude_back: bool) -> list:
        loop = self.header_loop.get(block)
        return [
            p
            for p in self.preds[block]
            if not (exclude_back and loop is not None and p in loop.body)
        ]

    def _block_entry(self, block) -> None:
        """The block's mask and its phis (as selects on the incoming edges' masks)."""
        kind = self.kind[block]
        preds = self._edges_into(block, exclude_back=False)
        if kind == FULL:
            self.block_mask[block] = None
        else:
            self.block_mask[block] = self._or([self.edge_mask[(p, block)] for p in preds], kind)
        for inst in block.instructions:
            if isinstance(inst, ir.PhiInstr) and inst in self.needed:
                self.vmap[inst] = self._merge(inst, preds, block)

    def _merge(self, phi, preds, use_block):
        """The phi's value from the incoming edges ``preds`` (disjoint masks)."""
        varying = phi in self.varying
        incoming = {p: v for v, p in phi.incomings}
        same = {self._resolve(incoming[p]) for p in preds}
        if not varying and len(same) == 1:  # a lockstep phi's edges (_header_phi_varying)
            return self._value(same.pop(), use_block, False)
        result = None
        for p in preds:
            value = self._value(incoming[p], use_block, varying)
            if result is None:
                result = value
                continue
            m = self.edge_mask[(p, phi.parent)]
            if m is None:
                result = value
                continue
            select = self._select_wide if varying else self.b.select
            result = select(m, value, result)
        return result

    # values ------------------------------------------------------------------------

    def _value(self, value, use_block, vector: bool):
        value = self._resolve(value)
        wide = False
        if isinstance(value, ir.Instruction):
            d = value.parent
            use_block = use_block if use_block is not None else self.current_block
            inner = set(map(id, self._loops_of(use_block)))
            outside = [lp for lp in self._loops_of(d) if lp.divergent and id(lp) not in inner]
            found = self.liveout_value[id(outside[-1]), value] if outside else self.vmap[value]
            wide = bool(outside) or value in self.varying
        elif isinstance(value, ir.Argument):
            found = self.vmap[value]
            wide = value in self.varying  # a region's linear id (_varying_arguments)
        else:
            found = value
        if vector and not wide:
            # A uniform value where a varying one is needed (vectors: each lane's copy).
            return self._broadcast(found)
        return found

    # blocks ------------------------------------------------------------------------

    def _emit_block(self, block) -> None:
        kind, mask = self.kind[block], self.block_mask[block]
        body = [
            i
            for i in block.instructions
            if not isinstance(i, ir.PhiInstr | ir.Terminator) and i in self.needed
        ]
        guarded = kind != FULL and body and not (kind == VARYING and self._cheap(body))
        if guarded:
            b = self.b
            run = self.fn.append_basic_block(f"{block.name}.run")
            join = self.fn.append_basic_block(f"{block.name}.join")
            before = b.block
            b.cbranch(self._any(mask), run, join)
            b.position_at_end(run)
        inner_mask = mask if kind == VARYING else None
        for inst in body:
            self.vmap[inst] = self._emit_instruction(inst, block, inner_mask)
        if guarded:
            end = b.block
            b.branch(join)
            b.position_at_end(join)
            for inst in body:
                value = self.vmap[inst]
                if value is None or isinstance(value.type, ir.VoidType):
                    continue
                phi = b.phi(value.type)
                phi.add_incoming(value, end)
                phi.add_incoming(ir.Constant(value.type, ir.Undefined), before)
                self.vmap[inst] = phi
        self._returned(block, mask)
        self._edge_masks(block, mask)

    def _cheap(self, body: list) -> bool:
        """Whether a VARYING block runs without its any-lane test: a few instructions that
        cannot trap or touch memory (no division, load, store or call), so lanes outside
        the mask only compute values nobody uses. The test and the phis after it cost more
        than that (a vector of i1 that crosses blocks is widened and narrowed again), and
        a divergent loop's blocks become one block (Mandelbrot's loop). A UNIFORM block
        keeps its test: a scalar branch, and all of it skipped when no lane is there."""
        return len(body) <= _CHEAP_BLOCK and all(
            isinstance(i, ir.ICMPInstr | ir.FCMPInstr | ir.SelectInstr)
            or (isinstance(i, ir.GEPInstr) and i not in self.private_pointer)
            or i.opname in _CHEAP_OPS
            for i in body
        )

    def _edge_masks(self, block, mask) -> None:
        term = block.terminator
        succ = self.succ[block]
        if isinstance(term, ir.ConditionalBranch) and len(succ) == 2 and succ[0] is not succ[1]:
            cond = self._value(term.operands[0], block, False)
            t_kind = self.edge_kind(block, succ[0])
            f_kind = self.edge_kind(block, succ[1])
            if isinstance(cond, ir.Constant):
                on = cond.constant
                self.edge_mask[(block, succ[0])] = mask if on else self._zero(t_kind)
                self.edge_mask[(block, succ[1])] = self._zero(f_kind) if on else mask
                return
            inverse = self.b.not_(cond)
            self.edge_mask[(block, succ[0])] = self._and(mask, cond, t_kind)
            self.edge_mask[(block, succ[1])] = self._and(mask, inverse, f_kind)
            for target, value in ((succ[0], True), (succ[1], False)):
                self._note_range(self.edge_mask[(block, target)], mask, term.operands[0], value)
        elif isinstance(term, ir.SwitchInstr):
            value = self._value(term.value, block, False)
            groups: dict = {}
            matched = []
            for case, target in term.cases:
                hit = self._cmp_eq(value, case)
                matched.append(hit)
                groups.setdefault(target, []).append(hit)
            none = None
            for hit in matched:
                miss = self.b.not_(hit)
                none = miss if none is None else self.b.and_(none, miss)
            if none is None:
                none = ir.Constant(I1, 1)
            groups.setdefault(term.default, []).append(none)
            for target, hits in groups.items():
                k = self.edge_kind(block, target)
                cond = hits[0]
                for h in hits[1:]:
                    cond = self.b.or_(cond, h)
                self.edge_mask[(block, target)] = self._and(mask, cond, k)
        else:
            for s in succ:
                self.edge_mask[(block, s)] = mask

    def _note_range(self, edge, parent, cond, value: bool) -> None:
        """Scalar any-lane and every-lane tests of VARYING edge mask ``edge`` (``parent``:
        its block's mask, FULL or UNIFORM) where the branch condition ``cond`` (taken
        when ``value``) holds for a range of lanes (``_lane_range``: ``lid < stride``),
        for ``_any`` and ``_all``: a chunk past the range skips the block with one scalar
        compare, one inside it runs plain vector code, and only the chunk across its end
        needs the lanes of the mask."""
        if edge is None or not isinstance(edge.type, ir.VectorType):
            return
        if parent is not None and isinstance(parent.type, ir.VectorType):
            return
        found = self._lane_range(cond, value)
        if found is None:
            return
        some, every = found
        if parent is not None:  # where the block did not run, its values are poison
            false = ir.Constant(I1, 0)
            some, every = self.b.select(parent, some, false), self.b.select(parent, every, false)
        self.__dict__.setdefault("ranges", {})[id(edge)] = (edge, some, every)

    def _lane_range(self, cond, value: bool):
        """(any lane, every lane) of integer compare ``cond`` being ``value``, as scalar
        i1s, where its lanes' truth is a range: ``a < n`` (any predicate) with uniform n
        and lanes of a in order (``_in_order``) with a constant positive stride: the first
        and last lanes decide (``<``: every lane where the last passes, some lane where the
        first does); ``a == n`` with stride 1: some lane where n lies between them, never
        every lane. Else None."""
        cond = self._resolve(cond)
        if not isinstance(cond, ir.ICMPInstr):
            return None
        op = cond.op if value else _NEGATED.get(cond.op, {"eq": "ne", "ne": "eq"}.get(cond.op))
        a, n = (self._resolve(x) for x in cond.operands)
        if a not in self.varying:
            a, n, op = n, a, _FLIPPED.get(op, op)
        step = self.stride.get(a)
        if n in self.varying or not isinstance(a.type, ir.IntType) or not step or step < 0:
            return None
        signed = op[0] == "s"
        if op in ("eq", "ne") and step != 1 or not self._in_order(a, signed):
            return None
        b = self.b
        first = self._lane0(a)
        last = b.add(first, ir.Constant(a.type, (self.W - 1) * step))
        bound = self._value(n, None, False)

        def cmp(op, x, y, name=""):
            return self._put(ir.ICMPInstr(b.block, op, x, y, name=name))

        # (named for the dumps' readers: the lanes' compare is not needed for the tests)
        if op in ("eq", "ne"):
            inside = b.and_(cmp("ule", first, bound), cmp("ule", bound, last), name="lanes.at")
            if op == "eq":
                return inside, ir.Constant(I1, 0)
            return ir.Constant(I1, 1), b.not_(inside)
        low, high = (first, last) if op[1] == "l" else (last, first)
        return cmp(op, low, bound, "lanes.some"), cmp(op, high, bound, "lanes.every")

    def _in_order(self, value, signed: bool) -> bool:
        """Whether lane i of integer ``value`` is lane 0's + i * stride (stride > 0) without
        passing the type's signed (``signed``) or unsigned bound, so that the lanes are in
        increasing order: the x local id and a region's linear id (below the work-group
        size, ``_LOCAL_SIZE_LIMIT``; the lanes of a chunk are all work-items of the group)
        and their extensions and truncations to 32 bits or more; the x global id in i64
        (at most ndrange.SIZE_LIMIT - 1, checked at launch: it is a work-item's); for
        signed order also what ``_no_signed_wrap`` proves."""
        if signed and self._no_signed_wrap(value, value.type.width, 0):
            return True
        wide = self._resolve(value)
        if isinstance(wide, ir.LoadInstr) and self._ctx_slot(wide) == _GLOBAL_ID_X:
            return wide.type.width >= 64
        for _ in range(4):
            value = self._resolve(value)
            if value in self._varying_arguments() or (
                isinstance(value, ir.LoadInstr) and self._ctx_slot(value) == _LOCAL_ID_X
            ):
                return value.type.width >= _LOCAL_SIZE_LIMIT.bit_length() - (not signed)
            if not isinstance(value, ir.Instruction) or value.opname not in _RESIZE:
                return False
            if value.type.width < _LOCAL_SIZE_LIMIT.bit_length() - (not signed):
                return False
            value = value.operands[0]
        return False

    # Where the target has no mask registers (AVX2, SSE), varying masks are combined
    # (_and, _or) and carried around divergent loops as 32-bit lanes, all ones where set:
    # LLVM legalizes a vector of i1 there to 16-bit lanes, and packs every 32-bit compare
    # down to them and unpacks again for each select (Mandelbrot's loop was half such
    # moves). Each combined mask is also kept as a vector of i1 (``icmp slt 0`` of the
    # lanes) for its users; ``wide_masks`` maps it back to its lanes. The loop-carried
    # values are built by ``and``/``or``, not casts, so LLVM does not narrow the phis.

    def _mask_lanes(self):
        return I1 if "+avx512f" in self.features else I32

    def _widened(self, mask):
        """A varying mask (vector of i1) as ``_mask_lanes``."""
        if self._mask_lanes() == I1:
            return mask
        found = self.__dict__.setdefault("wide_masks", {}).get(id(mask))
        if found is not None and found[0] is mask:
            return found[1]
        return self.b.sext(mask, self._vec_type(I32))

    def _narrowed(self, lanes):
        """``_widened``'s inverse: the vector of i1 (remembered as ``lanes``)."""
        if lanes.type.element == I1:
            return lanes
        mask = self.b.icmp_signed("<", lanes, ir.Constant(lanes.type, None))
        self.__dict__.setdefault("wide_masks", {})[id(mask)] = (mask, lanes)
        return mask

    def _zero(self, kind):
        return ir.Constant(self._vec_type(I1) if kind == VARYING else I1, 0)

    def _cmp_eq(self, value, case):
        if isinstance(value.type, ir.VectorType):
            case = self._splat(ir.Constant(value.type.element, case.constant))
        return self.b.icmp_unsigned("==", value, case)

    # loops -------------------------------------------------------------------------

    def _emit_loop(self, loop: _Loop) -> None:
        b = self.b
        header = loop.header
        entries = self._edges_into(header, exclude_back=True)
        kind = self.kind[header]
        entry_mask = self._or([self.edge_mask[(p, header)] for p in entries], kind)
        phis = [i for i in header.instructions if isinstance(i, ir.PhiInstr) and i in self.needed]
        entry_values = {phi: self._merge(phi, entries, header) for phi in phis}
        for phi in phis:
            # No check where the entry value is consecutive by construction: every access
            # rooted at the phi is then proven too (_proven_consecutive) and never asks.
            if phi in self.induction and not self._proven_consecutive(phi):
                step = self.stride.get(phi)
                self.induction_flag[phi] = self._consecutive_check(
                    self._splat(entry_values[phi]), step
                )
            elif phi in self.strided:
                self.strided_check[phi] = self._evenly_spaced(entry_values[phi])
        # Lane 0's pointer of each pointer induction as a scalar phi of its own: the plain
        # accesses' base, so the vector of pointers (kept for the gather path) is dead in
        # the loop LLVM unswitches on the check (before: W/4 vector adds per step).
        firsts = {
            phi: b.extract_element(entry_values[phi], ir.Constant(I32, 0))
            for phi in phis
            if (phi in self.induction or phi in self.strided)
            and len(loop.latches) == 1
            and len([p for _, p in phi.incomings if p in loop.body]) == 1
        }
        divergent = loop.divergent
        copy = None
        if divergent:
            # The active and exit masks cross iterations as _mask_lanes (_widened).
            mt = self._vec_type(self._mask_lanes())
            entry_wide = self._widened(self._splat(entry_mask))
            if self._all_active(loop):
                copy = self._all_active_copy(loop, phis, entry_values, firsts, entry_mask)
                entry_values, firsts, entry_wide = copy.entry_values, copy.firsts, copy.mask
        pre = b.block
        head = self.fn.append_basic_block(f"{header.name}.loop")
        b.branch(head)
        b.position_at_end(head)
        new_phis = {}
        for phi in phis:
            value = entry_values[phi]
            new = b.phi(value.type)
            new.add_incoming(value, pre)
            new_phis[phi] = new
            self.vmap[phi] = new
        for phi, first in firsts.items():
            self.lane0[phi] = b.phi(first.type)
            self.lane0[phi].add_incoming(first, pre)
        if divergent:
            mask_phi = b.phi(mt)
            mask_phi.add_incoming(entry_wide, pre)
            exit_accs = {}
            for edge in loop.exits:
                acc = b.phi(mt)
                start = copy.exits[edge] if copy else ir.Constant(mt, None)
                acc.add_incoming(start, pre)
                exit_accs[edge] = acc
            live_accs = {}
            for value in self.liveouts[id(loop)]:
                vt = self._widen(value.type)
                acc = b.phi(vt)
                start = copy.live[value] if copy else ir.Constant(vt, ir.Undefined)
                acc.add_incoming(start, pre)
                live_accs[value] = acc
            self.block_mask[header] = self._narrowed(mask_phi)
        else:
            self.block_mask[header] = entry_mask
        self._emit_block(header)
        body = [n for n in self._order(loop.body, header, loop) if n is not header]
        self._emit_nodes(body)
        # The latch end: every block of the loop has run once.
        back = [self.edge_mask[(latch, header)] for latch in loop.latches]
        cont = self._or(back, VARYING if divergent else UNIFORM)
        back_values = {phi: self._merge(phi, loop.latches, header) for phi in phis}
        if divergent:
            leaving = [self.edge_mask[edge] for edge in loop.exits]
            left = self._or(leaving, VARYING) if leaving else None
            new_exit = {}
            for edge, acc in exit_accs.items():
                new_exit[edge] = b.or_(acc, self._widened(self._splat(self.edge_mask[edge])))
                acc.add_incoming(new_exit[edge], b.block)
            for value, acc in live_accs.items():
                current = self._value(value, header, True)
                captured = self._select_wide(left, current, acc) if left is not None else acc
                acc.add_incoming(captured, b.block)
                self.liveout_value[(id(loop), value)] = captured
            mask_phi.add_incoming(b.and_(mask_phi, self._widened(cont)), b.block)
        for phi in firsts:
            back = next(v for v, p in phi.incomings if p in loop.body)
            scalar = self._lane0_pointer(back)
            self.lane0[phi].add_incoming(scalar, b.block)
        latch_end = b.block
        for phi, new in new_phis.items():
            new.add_incoming(back_values[phi], latch_end)
        after = copy.after if copy else self.fn.append_basic_block(f"{header.name}.exit")
        b.cbranch(self._any(cont), head, after)
        b.position_at_end(after)
        if copy:  # also reached from the all-active copy when every lane left there
            blocks = self.fn.blocks  # in the order they run, for the dumps' readers
            blocks.remove(copy.after)
            blocks.append(copy.after)
            captured = {value: self.liveout_value[(id(loop), value)] for value in live_accs}
            new_exit, captured = copy.meet(b, latch_end, new_exit, captured)
            for value, met in captured.items():
                self.liveout_value[(id(loop), value)] = met
        if divergent:
            for edge, value in new_exit.items():
                self.edge_mask[edge] = self._narrowed(value)
        # Blocks after the loop see the values the lanes left with (divergent loops) or
        # the last iteration's (uniform loops: every lane leaves in the same one).

    def _all_active(self, loop: _Loop) -> bool:
        """Whether divergent ``loop`` gets an all-active copy (``_all_active_copy``): lanes
        leave it only at the end of an iteration (every exit is from its one latch), it
        has no inner loop (the copy doubles its code) and it is small."""
        latch = loop.latches[0] if len(loop.latches) == 1 else None
        if latch is None or any(src is not latch for src, _ in loop.exits):
            return False
        if any(self.loop_of.get(block) is not loop for block in loop.body):
            return False
        return sum(len(block.instructions) for block in loop.body) <= _ALL_ACTIVE_BODY

    def _all_active_copy(self, loop: _Loop, phis, entry_values, firsts, entry_mask):
        """A copy of divergent ``loop`` that runs while every lane is active, before the
        masked loop: its header's mask is FULL, so it has no active mask to carry, no
        any-lane test per block, no exit or live-out captures and plain vector accesses
        without the all-lanes test (a grid-stride loop whose lanes run the same number of
        iterations, or one fewer: all of them here, but the last). It is entered where
        every lane enters the loop and left when, at the latch, not every lane goes on;
        the masked loop then goes on from that iteration with the lanes left (none: it is
        skipped). Returns the masked loop's entry state (``_AllActive``)."""
        b = self.b
        header, latch = loop.header, loop.latches[0]
        pre = b.block
        fast = self.fn.append_basic_block(f"{header.name}.all")
        some = ir.Block(self.fn, f"{header.name}.some")  # placed after the copy
        after = self.fn.append_basic_block(f"{header.name}.exit")
        entry_wide = self._widened(self._splat(entry_mask))
        b.cbranch(self._all(entry_mask), fast, some)
        b.position_at_end(fast)
        new_phis = {}
        for phi in phis:
            new_phis[phi] = self.vmap[phi] = b.phi(entry_values[phi].type)
            new_phis[phi].add_incoming(entry_values[phi], pre)
        for phi, first in firsts.items():
            self.lane0[phi] = b.phi(first.type)
            self.lane0[phi].add_incoming(first, pre)
        self.block_mask[header] = None
        self._emit_block(header)
        self._emit_nodes([n for n in self._order(loop.body, header, loop) if n is not header])
        cont = self._or([self.edge_mask[(latch, header)]], VARYING)
        back = {phi: self._merge(phi, [latch], header) for phi in phis}
        back0 = {
            phi: self._lane0_pointer(next(v for v, p in phi.incomings if p in loop.body))
            for phi in firsts
        }
        end = b.block
        for phi, new in new_phis.items():
            new.add_incoming(back[phi], end)
        for phi in firsts:
            self.lane0[phi].add_incoming(back0[phi], end)
        out = self.fn.append_basic_block(f"{header.name}.all.exit")
        b.cbranch(self._goes_on(loop, cont), fast, out)
        # Not every lane goes on: those that leave now left by the latch's exit edges, with
        # the values of this iteration.
        b.position_at_end(out)
        left = {edge: self._widened(self._splat(self.edge_mask[edge])) for edge in loop.exits}
        live = {value: self._value(value, header, True) for value in self.liveouts[id(loop)]}
        going_on = self._widened(self._splat(cont))
        b.cbranch(self._any(cont), some, after)
        self.fn.blocks.append(some)
        b.position_at_end(some)

        def meet(pairs: list) -> ir.PhiInstr:
            phi = b.phi(pairs[0][0].type)
            for value, block in pairs:
                phi.add_incoming(value, block)
            return phi

        state = _AllActive(out, after)
        state.entry_values = {
            phi: meet([(entry_values[phi], pre), (back[phi], out)]) for phi in phis
        }
        state.firsts = {
            phi: meet([(first, pre), (back0[phi], out)]) for phi, first in firsts.items()
        }
        state.mask = meet([(entry_wide, pre), (going_on, out)])
        zero = ir.Constant(going_on.type, None)
        state.exits = {edge: meet([(zero, pre), (lanes, out)]) for edge, lanes in left.items()}
        state.live = {
            value: meet([(ir.Constant(found.type, ir.Undefined), pre), (found, out)])
            for value, found in live.items()
        }
        state.left, state.left_live = left, live
        return state

    def _goes_on(self, loop: _Loop, cont):
        """Scalar i1: every lane takes the back edge of ``loop``'s latch (``cont``, the
        back edge's mask), in its all-active copy. Where the latch branches on a compare
        that ``_every_lane`` decides from lane 0 (``i + G < n`` of a grid-stride loop),
        that and the latch's own mask; else the lanes of ``cont``."""
        latch = loop.latches[0]
        term = latch.terminator
        if isinstance(term, ir.ConditionalBranch) and term.operands[1] is not term.operands[2]:
            holds = self._every_lane(term.operands[0], term.operands[1] is loop.header, latch)
            if holds is not None:
                return self.b.and_(self._all(self.block_mask[latch]), holds)
        return self._all(cont)

    def _every_lane(self, cond, value: bool, block):
        """Scalar i1 that implies integer compare ``cond`` is ``value`` in every lane, or
        None: a uniform condition; ``x && y`` (when ``value``) of conditions it decides;
        ``a < n`` (any predicate but ``==``/``!=``) with uniform n and i64 a whose
        lanes are lane 0's + i * s (``_affine``, constant s > 0): when lane 0's + (W - 1) * s
        does not pass the type's bound, the lanes are in order and the compare of the
        first (``>``, ``>=``) or the last (``<``, ``<=``) decides it for all. Scalar
        instructions where the vector compare and its reduction take a dozen."""
        cond = self._resolve(cond)
        if cond not in self.varying:  # the same in every lane
            found = self._value(cond, block, False)
            return found if value else self.b.not_(found)
        both = _logical_and(cond) if value else None
        if both is not None:  # ``x && y`` (``and``, or ``select x, y, false``)
            x, y = (self._every_lane(op, True, block) for op in both)
            return None if x is None or y is None else self.b.and_(x, y)
        if not isinstance(cond, ir.ICMPInstr) or cond.op not in _FLIPPED:
            return None
        op = cond.op if value else _NEGATED[cond.op]
        a, n = (self._resolve(x) for x in cond.operands)
        if a not in self.varying:
            a, n, op = n, a, _FLIPPED[op]
        step = self.stride.get(a)
        if n in self.varying or a.type != I64 or not step or step < 0 or not self._affine(a):
            return None
        b = self.b
        span = ir.Constant(I64, (self.W - 1) * step)
        signed = op[0] == "s"
        limit = (1 << 63) - 1 if signed else (1 << 64) - 1
        if (self.W - 1) * step > limit:
            return None
        cmp = b.icmp_signed if signed else b.icmp_unsigned
        first = self._lane0(a)
        in_order = cmp("<=", first, ir.Constant(I64, limit - (self.W - 1) * step))
        extreme = b.add(first, span) if op[1] == "l" else first
        bound = self._value(n, block, False)
        every = self._put(ir.ICMPInstr(b.block, op, extreme, bound, name="lanes.every"))
        return b.and_(in_order, every)

    # instructions ------------------------------------------------------------------

    def _emit_instruction(self, inst, block, mask):
        self.current_block = block
        b = self.b
        varying = inst in self.varying
        name = inst.opname

        def val(op, vector=varying):
            return self._value(op, block, vector)

        if name in _BINARY:
            lhs, rhs = val(inst.operands[0]), val(inst.operands[1])
            if name in _DIVISIONS and varying and mask is not None:
                one = ir.Constant(rhs.type, [ir.Constant(rhs.type.element, 1)] * rhs.type.count)
                rhs = b.select(self._lane_mask(mask, rhs.type), rhs, one)
            flags = [f for f in inst.flags if name.startswith("f")]
            return self._put(ir.Instruction(b.block, lhs.type, name, [lhs, rhs], flags=flags))
        if name == "fneg":
            x = val(inst.operands[0])
            return self._put(ir.Instruction(b.block, x.type, name, [x], flags=list(inst.flags)))
        if name in _CASTS:
            x = val(inst.operands[0])
            if varying and name == "bitcast":
                return self._bitcast(inst, x)
            ty = self._widen(inst.type) if varying else inst.type
            return getattr(b, name)(x, ty)
        if isinstance(inst, ir.ICMPInstr):
            lhs, rhs = val(inst.operands[0]), val(inst.operands[1])
            return self._put(ir.ICMPInstr(b.block, inst.op, lhs, rhs))
        if isinstance(inst, ir.FCMPInstr):
            lhs, rhs = val(inst.operands[0]), val(inst.operands[1])
            return self._put(ir.FCMPInstr(b.block, inst.op, lhs, rhs, flags=list(inst.flags)))
        if isinstance(inst, ir.SelectInstr):
            vector_cond = isinstance(inst.operands[0].type, ir.VectorType)
            cond = val(inst.operands[0], varying and vector_cond)
            lhs, rhs = val(inst.operands[1]), val(inst.operands[2])
            if varying and not vector_cond:
                return self._select_wide(cond, lhs, rhs)
            return b.select(cond, lhs, rhs)
        if isinstance(inst, ir.AllocaInstr):
            return self._emit_alloca(inst)
        if inst in self.private_pointer:
            return self._emit_private_gep(inst, block)
        if isinstance(inst, ir.GEPInstr):
            pointer = val(inst.pointer, False)
            indices = [val(i, False) for i in inst.indices]
            gep = b.gep(pointer, indices, inbounds=inst.inbounds, source_etype=inst.source_etype)
            if varying:
                gep.type = self._widen(inst.type if isinstance(inst.type, ir.VectorType) else PTR)
            return gep
        if isinstance(inst, ir.LoadInstr):
            return self._load(inst, block, mask)
        if isinstance(inst, ir.StoreInstr):
            return self._store(inst, block, mask)
        if isinstance(inst, ir.CallInstr):
            return self._call(inst, block, mask)
        if isinstance(inst, ir.AtomicRMW):
            return self._atomic(inst, block, mask)
        if isinstance(inst, ir.CmpXchg):
            return self._cmpxchg(inst, block, mask)
        if isinstance(inst, ir.LoadAtomicInstr):
            return self._atomic_load(inst, block, mask)
        if isinstance(inst, ir.StoreAtomicInstr):
            return self._atomic_store(inst, block, mask)
        if isinstance(inst, ir.Fence):
            # Once for the lanes: each lane's accesses before it stay before it.
            return self._put(ir.Fence(b.block, inst.ordering, inst.targetscope))
        if varying:
            result = self._emit_aggregate(inst, block, mask)
            if result is None:
                raise Declined(f"varying {name}")
            return result
        # Uniform vector/aggregate operations: copied as they are.
        ops = [val(op, False) for op in inst.operands]
        if name == "extractelement":
            return b.extract_element(*ops)
        if name == "insertelement":
            return b.insert_element(*ops)
        if name == "shufflevector":
            return b.shuffle_vector(*ops)
        if name == "extractvalue":
            return b.extract_value(ops[0], inst.indices)
        if name == "insertvalue":
            return b.insert_value(ops[0], ops[1], inst.indices)
        raise Declined(f"instruction {name}")

    def _atomic(self, inst, block, mask):
        """An atomic read-modify-write once per active lane, in lane order (the scalar
        loop's order)."""
        b = self.b
        pointer, value = inst.operands
        pointers = self._value(pointer, block, True)
        values = self._value(value, block, True)
        result = ir.Constant(self._vec_type(inst.type), ir.Undefined)
        for lane in range(self.W):
            at = ir.Constant(I32, lane)
            before = b.block
            if mask is not None:
                run = self.fn.append_basic_block(f"atomic.lane{lane}")
                done = self.fn.append_basic_block(f"atomic.lane{lane}.done")
                b.cbranch(b.extract_element(mask, at), run, done)
                b.position_at_end(run)
            old = b.atomic_rmw(
                inst.operation,
                b.extract_element(pointers, at),
                b.extract_element(values, at),
                inst.ordering,
            )
            updated = b.insert_element(result, old, at)
            if mask is not None:
                end = b.block
                b.branch(done)
                b.position_at_end(done)
                phi = b.phi(result.type)
                phi.add_incoming(updated, end)
                phi.add_incoming(result, before)
                updated = phi
            result = updated
        return result

    def _put(self, inst):
        self.b._insert(inst)
        return inst

    def _consecutive(self, pointer_value, element_type) -> bool:
        return self.stride.get(self._resolve(pointer_value)) == _abi_size(element_type, self.td)

    def _root(self, pointer, candidate=None):
        """The pointer phi of a loop header that ``pointer`` is, plus uniform offsets
        (``getelementptr`` with uniform indices), if it is an induction (or is
        ``candidate``): then the lanes' addresses are consecutive exactly when the phi's
        entry values were (the same offsets are added to every lane), checked once before
        the loop."""
        seen = 0
        while isinstance(pointer, ir.GEPInstr) and seen < 16:
            if any(self._resolve(i) in self.varying for i in pointer.indices):
                return None
            pointer, seen = self._resolve(pointer.pointer), seen + 1
        return pointer if pointer in self.induction or pointer is candidate else None

    def _fast_path(self, pointers, mask, size, pointer_op=None):
        """(lane 0's address, i1: every lane active and lane i's address is lane 0's +
        i * size). The check is made on what the address is built from, less uniform
        offsets (an induction's entry value, an i64 index, a pointer), so accesses at
        different offsets from one index share it (LLVM merges the identical checks)."""
        b = self.b
        # A pointer induction's scalar phi (lane0) first: then the loop keeps no vector
        # of pointers alive for the plain accesses.
        base = self._lane0_pointer(pointer_op) if pointer_op is not None else None
        if base is None and pointer_op is not None:
            base = self._lane0(pointer_op)
        if base is None:
            base = b.extract_element(pointers, ir.Constant(I32, 0))
        consecutive = None
        if pointer_op is not None and self._proven_consecutive(self._resolve(pointer_op)):
            if mask is None:
                return base, None  # no check: a plain vector access
            consecutive = ir.Constant(I1, 1)
        elif pointer_op is not None:
            consecutive = self._root_check(self._resolve(pointer_op), size)
        if consecutive is None:
            consecutive = self._consecutive_check(pointers, size)
        if mask is not None:
            consecutive = b.select(self._all(mask), consecutive, ir.Constant(I1, 0))
        return base, consecutive

    def _lane0(self, value, depth: int = 0):
        """Lane 0 of ``value`` computed with scalar instructions where it is an integer or
        pointer built by integer arithmetic, casts and GEPs: lane 0 of each operand, then
        the same operation (lane 0 of the vector operation, without its poison flags).
        The base address of a plain vector access is then scalar code the back end folds
        into the access, not a vector of addresses moved lane by lane to an integer
        register (the vector form stays for the gather/scatter fallback, where it sinks)."""
        b = self.b
        value = self._resolve(value)
        if value not in self.varying:
            found = self._value(value, None, False)
            if isinstance(found.type, ir.VectorType) and not isinstance(value.type, ir.VectorType):
                # uniform in a divergent loop, read after it: each lane's last value
                return b.extract_element(found, ir.Constant(I32, 0))
            return found
        if (
            depth > 24
            or not isinstance(value, ir.Instruction)
            or not isinstance(value.type, ir.IntType | ir.PointerType)
            or value in self.private_pointer
            or any(lp.divergent for lp in self._loops_of(value.parent))
            or not (
                isinstance(value, ir.GEPInstr)
                or value.opname in _LANE0_BINARY
                or value.opname in ("trunc", "zext", "sext")
            )
        ):
            return b.extract_element(self._value(value, None, True), ir.Constant(I32, 0))
        if isinstance(value, ir.GEPInstr):
            pointer = self._lane0(value.pointer, depth + 1)
            indices = [self._lane0(i, depth + 1) for i in value.indices]
            return b.gep(pointer, indices, inbounds=value.inbounds, source_etype=value.source_etype)
        ops = [self._lane0(op, depth + 1) for op in value.operands]
        if value.opname in _LANE0_BINARY:
            return self._put(ir.Instruction(b.block, ops[0].type, value.opname, ops))
        return getattr(b, value.opname)(ops[0], value.type)

    def _consecutive_check(self, vector, step: int):
        """i1: lane i of ``vector`` (pointers or integers) is lane 0's + i * step."""
        b = self.b
        wide = self._vec_type(I64)
        if isinstance(vector.type.element, ir.PointerType):
            values = b.ptrtoint(vector, wide)
        elif vector.type.element.width < 64:
            return None
        else:
            values = vector
        first = b.extract_element(values, ir.Constant(I32, 0))
        expected = b.add(self._splat(first), ir.Constant(wide, [i * step for i in range(self.W)]))
        return self._all(b.icmp_unsigned("==", values, expected))

    def _root_check(self, pointer, size: int):
        seen = 0
        while (
            isinstance(pointer, ir.GEPInstr)
            and seen < 16
            and not any(self._resolve(i) in self.varying for i in pointer.indices)
        ):
            pointer, seen = self._resolve(pointer.pointer), seen + 1
        if pointer in self.induction_flag:
            return self.induction_flag[pointer]
        if self._private_root(pointer, size) is not None:
            return self._private_root(pointer, size)
        if pointer not in self.varying or self.stride.get(pointer) != size:
            return None
        if (
            isinstance(pointer, ir.GEPInstr)
            and len(pointer.indices) == 1
            and self._resolve(pointer.pointer) not in self.varying
        ):
            index = self._resolve(pointer.indices[0])
            scale = _abi_size(pointer.source_etype, self.td)
            while (
                isinstance(index, ir.Instruction)
                and index.opname in ("add", "sub")
                and index.type == I64
            ):
                a, c = (self._resolve(op) for op in index.operands)
                if c not in self.varying and a in self.varying:
                    index = a
                elif index.opname == "add" and a not in self.varying and c in self.varying:
                    index = c
                else:
                    break
            step = self.stride.get(index) if index.type == I64 else None
            if step is not None and step * scale == size:
                narrow = self._extension_check(index, step)
                if narrow is not None:
                    return narrow
                return self._consecutive_check(self._value(index, None, True), self.stride[index])
        return self._consecutive_check(self._value(pointer, None, True), size)

    def _extension_check(self, index, step: int):
        """For an i64 ``index`` (times a constant) that extends a narrower integer whose
        lanes are lane 0's + i * stride modulo 2**bits (``_wraps_affinely``: ``int`` index
        arithmetic without ``nsw``, e.g. ``a[row * n + t + lx]``): the scalar i1 that
        lane 0's value + (W - 1) * stride does not cross the signed (sign extension) or
        unsigned (zero extension) boundary. Then no lane wraps and the extended lanes are
        lane 0's + i * stride. One compare of lane 0, where the generic check extends,
        compares and reduces W lanes (a dozen vector instructions in every chunk of a
        tile-staging loop). The extensions: ``sext``/``zext``; ``ashr(shl(x, c1), c2)``
        (c1 >= c2: x's low 64 - c1 bits sign-extended, times 2**(c1 - c2), as LLVM
        writes ``(long)(short)x * 4``); ``and x, 2**bits - 1``. None for other shapes."""
        factor = 1
        while isinstance(index, ir.Instruction) and index.opname in ("shl", "mul"):
            k = _int_constant(self._resolve(index.operands[1]))
            x = self._resolve(index.operands[0])
            if k is None and index.opname == "mul":
                k, x = _int_constant(x), self._resolve(index.operands[1])
            if k is None or k <= 0 or (index.opname == "shl" and k >= 64):
                return None
            factor *= 1 << k if index.opname == "shl" else k
            index = x
        if not isinstance(index, ir.Instruction):
            return None
        ops = [self._resolve(op) for op in index.operands]
        bits = 0
        if index.opname in ("sext", "zext") and isinstance(ops[0].type, ir.IntType):
            narrow, signed, bits = ops[0], index.opname == "sext", ops[0].type.width
        elif index.opname == "ashr" and isinstance(ops[0], ir.Instruction):
            c1, c2 = _int_constant(self._resolve(ops[0].operands[1])), _int_constant(ops[1])
            if ops[0].opname == "shl" and c1 is not None and c2 is not None and c1 >= c2:
                narrow, signed, bits = self._resolve(ops[0].operands[0]), True, 64 - c1
                factor <<= c1 - c2
        elif index.opname == "and" and _low_mask(ops[1]):
            narrow, signed, bits = ops[0], False, ops[1].constant.bit_length()
        if not 0 < bits < 64 or step % factor:
            return None
        span = (self.W - 1) * (step // factor)
        if abs(span) >= 1 << (bits - 1) or not self._wraps_affinely(narrow):
            return None
        b = self.b
        lane0 = self._lane0(narrow)
        if lane0.type.width != bits:  # x's low bits
            lane0 = b.trunc(lane0, ir.IntType(bits))
        if signed:
            low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        else:
            low, high = 0, (1 << bits) - 1
        # every lane's value lies between lane 0's and lane 0's + span, in order
        op, limit = ("<=", high - span) if span >= 0 else (">=", low - span)
        cmp = b.icmp_signed if signed else b.icmp_unsigned
        return cmp(op, lane0, ir.Constant(lane0.type, limit))

    def _wraps_affinely(self, value, depth: int = 0) -> bool:
        """Whether lane i of integer ``value`` is lane 0's + i * its stride modulo
        2**width (wrap-around allowed, unlike ``_no_signed_wrap``): the x ids and a region's
        linear id, uniform values, and sums, differences, constant multiples and
        truncations of those. The stride analysis gives the stride itself."""
        value = self._resolve(value)
        if value not in self.varying:
            return True
        if depth > 24 or not isinstance(value, ir.Instruction):
            return False
        slot = self._ctx_slot(value) if isinstance(value, ir.LoadInstr) else None
        if value in self._varying_arguments() or slot in _X_IDS:
            return True
        ops = [self._resolve(op) for op in value.operands]
        if value.opname in ("trunc", "add", "sub"):
            return all(self._wraps_affinely(op, depth + 1) for op in ops)
        if value.opname in ("mul", "shl"):
            x = _scaled_operand(value.opname, ops)
            return x is not None and self._wraps_affinely(x, depth + 1)
        if value.type == I64:
            return self._affine(value, depth + 1)
        return False

    def _load(self, inst, block, mask):
        b = self.b
        if self._ctx_slot(inst) in (_GLOBAL_ID_X, _LOCAL_ID_X):  # first lane's id + lane
            first = b.load(self._value(inst.operands[0], block, False), typ=I64)
            return b.add(self._splat(first), self.iota)
        if inst not in self.varying:
            pointer = self._value(inst.operands[0], block, False)
            if isinstance(pointer.type, ir.VectorType):  # _uniform_load: lane 0's element
                pointer = b.extract_element(pointer, ir.Constant(I32, 0))
            return b.load(pointer, typ=inst.type, align=inst.align)
        if isinstance(inst.type, ir.VectorType):
            return self._load_vector(inst, block, mask)
        if self.private:
            private = self._private_access(inst, block, mask)
            if private is not None:
                return private
        if not _scalar_type(inst.type):
            raise Declined(f"a varying load of {inst.type}")
        pointers = self._value(inst.operands[0], block, True)
        vt = self._vec_type(inst.type)
        align = inst.align or _abi_size(inst.type, self.td)
        full = self._splat(ir.Constant(I1, 1)) if mask is None else mask
        if not self._consecutive(inst.operands[0], inst.type):
            strided = self._strided_load(inst.operands[0], pointers, mask, vt, align)
            return strided if strided is not None else self._gather(pointers, full, vt, align)
        base, fast = self._fast_path(
            pointers, mask, _abi_size(inst.type, self.td), inst.operands[0]
        )
        return self._fast_or_not(
            fast,
            lambda: self._plain_load(base, vt, align),
            lambda: self._gather(pointers, full, vt, align),
        )

    def _lane0_pointer(self, pointer):
        """Lane 0's value of ``pointer``, a pointer induction (with a scalar phi in
        ``lane0``) plus uniform offsets, built on the scalar phi; else None."""
        chain, root = [], self._resolve(pointer)
        while isinstance(root, ir.GEPInstr) and len(chain) < 16:
            if any(self._resolve(i) in self.varying for i in root.indices):
                return None
            chain.append(root)
            root = self._resolve(root.pointer)
        scalar = self.lane0.get(root)
        if scalar is None:
            return None
        for gep in reversed(chain):
            indices = [self._value(i, self.current_block, False) for i in gep.indices]
            scalar = self.b.gep(
                scalar, indices, inbounds=gep.inbounds, source_etype=gep.source_etype
            )
        return scalar

    def _evenly_spaced(self, pointers):
        """(i1: lane i's pointer is lane 0's + i * d, d) for ``pointers``, a vector."""
        b = self.b
        wide = self._vec_type(I64)
        values = b.ptrtoint(pointers, wide)
        first = b.extract_element(values, ir.Constant(I32, 0))
        d = b.sub(b.extract_element(values, ir.Constant(I32, 1)), first)
        expected = b.add(self._splat(first), b.mul(self._splat(d), self.iota))
        return self._all(b.icmp_unsigned("==", values, expected)), d

    def _strided_load(self, pointer_op, pointers, mask, vt, align):
        """A varying load from a pointer induction with a uniform but unknown spacing
        between lanes (``_inductions``: ``row[k]`` of a row per work-item, ``row = a + i *
        cols``, in a loop over ``k``): where the phi's entry values were evenly spaced by
        d (checked once before the loop) and every lane is active, W scalar loads at lane
        0's address + i * d. A gather of W addresses costs more: LLVM scalarizes it on
        targets without fast gathers (AMD Zen, before Skylake) and then extracts every
        address from the vector of pointers, each iteration. None where this does not
        apply (the caller gathers)."""
        root, seen = self._resolve(pointer_op), 0
        while isinstance(root, ir.GEPInstr) and seen < 16:
            if any(self._resolve(i) in self.varying for i in root.indices):
                return None
            root, seen = self._resolve(root.pointer), seen + 1
        if root not in self.strided_check or not _scalar_type(vt.element):
            return None
        even, d = self.strided_check[root]
        b = self.b
        fast = even if mask is None else b.select(self._all(mask), even, ir.Constant(I1, 0))
        full = self._splat(ir.Constant(I1, 1)) if mask is None else mask

        def lanes():
            base = self._lane0_pointer(pointer_op)
            out = ir.Constant(vt, ir.Undefined)
            for lane in range(self.W):
                offset = b.mul(d, ir.Constant(I64, lane))
                at = b.gep(base, [offset], source_etype=ir.IntType(8)) if lane else base
                value = b.load(at, typ=vt.element, align=align)
                out = b.insert_element(out, value, ir.Constant(I32, lane))
            return out

        return self._fast_or_not(fast, lanes, lambda: self._gather(pointers, full, vt, align))

    def _fast_or_not(self, fast, plain, other):
        """``plain()`` where ``fast`` (from _fast_path) holds, else ``other()``; None:
        consecutive by construction, ``plain()`` only. A load's two results meet in a phi."""
        if fast is None:
            return plain()
        b = self.b
        with b.if_else(fast, likely=True) as (then, otherwise):
            with then:
                first, first_block = plain(), b.block
            with otherwise:
                second, second_block = other(), b.block
        if first is None or isinstance(first.type, ir.VoidType):  # a store
            return None
        phi = b.phi(first.type)
        phi.add_incoming(first, first_block)
        phi.add_incoming(second, second_block)
        return phi

    def _bytes_type(self, vt):
        """The vector type W consecutive elements of ``vt``'s type occupy in memory, when
        it is not ``vt`` itself: an ``i1`` is a byte in memory but a bit in a vector."""
        elem = vt.element
        if isinstance(elem, ir.IntType) and elem.width % 8:
            return self._vec_type(ir.IntType(8 * _abi_size(elem, self.td)))
        return None

    def _plain_load(self, base, vt, align):
        wide = self._bytes_type(vt)
        if wide is None:
            return self.b.load(base, typ=vt, align=align)
        return self.b.trunc(self.b.load(base, typ=wide, align=align), vt)

    def _plain_store(self, value, base, align):
        wide = self._bytes_type(value.type)
        if wide is not None:
            value = self.b.zext(value, wide)
        self.b.store(value, base, align)

    def _gather(self, pointers, mask, vt, align):
        elem = _mangle(vt)
        fn = _declare(
            self.module,
            f"llvm.masked.gather.{elem}.{_mangle(pointers.type)}",
            vt,
            [pointers.type, I32, mask.type, vt],
        )
        return self.b.call(
            fn, [pointers, ir.Constant(I32, align), mask, ir.Constant(vt, ir.Undefined)]
        )

    def _store(self, inst, block, mask):
        b = self.b
        value_op, pointer_op = inst.operands
        ptr_varying = self._resolve(pointer_op) in self.varying
        val_varying = self._resolve(value_op) in self.varying or self._liveout_use(value_op, block)
        align = inst.align or _abi_size(value_op.type, self.td)
        if not ptr_varying and not val_varying:
            b.store(
                self._value(value_op, block, False), self._value(pointer_op, block, False), align
            )
            return None
        if isinstance(value_op.type, ir.VectorType):
            return self._store_vector(inst, block, mask)
        if self.private and ptr_varying and self._private_access(inst, block, mask) is not None:
            return None
        if not _scalar_type(value_op.type):
            raise Declined(f"a varying store of {value_op.type}")
        value = self._value(value_op, block, True)
        pointers = self._value(pointer_op, block, True)
        full = self._splat(ir.Constant(I1, 1)) if mask is None else mask
        if not ptr_varying or not self._consecutive(pointer_op, value_op.type):
            self._scatter(value, pointers, full, align)
            return None
        base, fast = self._fast_path(pointers, mask, _abi_size(value_op.type, self.td), pointer_op)
        self._fast_or_not(
            fast,
            lambda: self._plain_store(value, base, align),
            lambda: self._scatter(value, pointers, full, align),
        )
        return None

    def _liveout_use(self, value, block) -> bool:
        value = self._resolve(value)
        if not isinstance(value, ir.Instruction):
            return False
        inner = set(map(id, self._loops_of(block)))
        return any(lp.divergent and id(lp) not in inner for lp in self._loops_of(value.parent))

    def _scatter(self, value, pointers, mask, align):
        vt = value.type
        fn = _declare(
            self.module,
            f"llvm.masked.scatter.{_mangle(vt)}.{_mangle(pointers.type)}",
            ir.VoidType(),
            [vt, pointers.type, I32, mask.type],
        )
        self.b.call(fn, [value, pointers, ir.Constant(I32, align), mask])

    def _wide_intrinsic(self, inst, base: str) -> str:
        """The name of intrinsic ``inst``'s overload for the widened types: each type
        suffix of its name (the result's or an argument's) becomes the widened type's."""
        wide = {}
        for ty in [inst.type] + [a.type for a in inst.args]:
            if _scalar_type(ty) or isinstance(ty, ir.VectorType):
                wide.setdefault(_mangle(ty), _mangle(self._widen(ty)))
        suffixes = inst.callee.name[len("llvm." + base) :].split(".")[1:]
        if not suffixes or any(part not in wide for part in suffixes):
            raise Declined(f"the vector form of {inst.callee.name}")
        return ".".join([f"llvm.{base}"] + [wide[part] for part in suffixes])

    def _call(self, inst, block, mask):
        b = self.b
        kind, base = self._call_kind(inst)
        if kind == "lanes":
            if self.private and self._private_memory_call(inst, block, mask):
                return None
            return self._call_lanes(inst, block, mask)
        if kind == "uniform" and inst in self.varying:
            return None  # llvm.assume of a varying condition: a hint, dropped
        if inst not in self.varying:
            args = [self._value(a, block, False) for a in inst.args]
            return b.call(inst.callee, args)
        ret = inst.type
        vt = self._widen(ret)
        if kind == "reduce":
            return self._reduce(base, [self._value(a, block, True) for a in inst.args], ret)
        if kind in ("elementwise", "immediate"):
            args = []
            for n, a in enumerate(inst.args):
                if kind == "immediate" and n == _IMMEDIATE[base]:
                    if self._resolve(a) in self.varying:
                        raise Declined(f"varying immediate of llvm.{base}")
                    args.append(self._value(a, block, False))
                else:
                    args.append(self._value(a, block, True))
            callee = _declare(
                self.module, self._wide_intrinsic(inst, base), vt, [a.type for a in args]
            )
            return b.call(callee, args)
        # libm: a libmvec variant of W lanes where the target has one, else lane by lane.
        args = [self._value(a, block, True) for a in inst.args]
        isa = {4: ("b", "+sse2"), 8: ("d", "+avx2"), 16: ("e", "+avx512f")}.get(self.W)
        if (
            base in LIBMVEC
            and isa is not None
            and isa[1] in self.features
            and isinstance(ret, ir.FloatType)
            and len(args) == LIBMVEC[base]
        ):
            symbol = f"_ZGV{isa[0]}N{self.W}{'v' * len(args)}_{base}f"
            callee = _declare(self.module, symbol, vt, [vt] * len(args))
            return b.call(callee, args)
        result = ir.Constant(vt, ir.Undefined)
        for lane in range(self.W):
            at = ir.Constant(I32, lane)
            scalar = b.call(inst.callee, [b.extract_element(a, at) for a in args])
            result = b.insert_element(result, scalar, at)
        return result


class _RegionVectorizer(_Vectorizer):
    """One region of a step function: the blocks that state ``state`` reaches from the
    dispatch ``switch`` on the state parameter up to the ``ret``s of the next barriers
    (or the end). The step function's parameters after the kernel's: the context, the
    work-item frames, the linear id, the number of work-items, the state. The frames hold
    one array per saved value with consecutive work-items at consecutive addresses
    (translate/function.Frame), and a chunk's lanes have consecutive linear ids, so the
    values live across barriers are saved and reloaded as plain vectors. Every lane of a
    well-formed kernel returns the same state; the clone returns its last lane's, as the
    scalar loop leaves the last work-item's.

    Loop-free regions are vectorized too (``loop_free_too``): LLVM's loop vectorizer does
    not replace it there as it does for loop-free kernels (measured: the tile loads of
    ``sgemm``, a tree reduction's steps; frame values saved as plain vectors)."""

    loop_free_too = True

    def __init__(self, step, width, features, td, state: int | None, uniform_slots=frozenset()):
        super().__init__(step, width, features, {}, td)
        self.ctx, self.frames, self.linear, self.items, self.state_arg = step.args[-5:]
        # None: the whole step function (uniform_frame_slots's analysis).
        self.state = None if state is None else ir.Constant(self.state_arg.type, state)
        self.uniform_slots = uniform_slots
        self.ret_acc = None

    def _successors(self, block):
        term = block.terminator
        if (
            isinstance(term, ir.SwitchInstr)
            and term.value is self.state_arg
            and self.state is not None
        ):
            for case, target in term.cases:
                if getattr(case, "constant", case) == self.state.constant:
                    return [target]
            return [term.default]
        return super()._successors(block)

    def _aliases(self) -> None:
        super()._aliases()
        if self.state is not None:
            self.alias[self.state_arg] = self.state

    def _frame_slot(self, pointer) -> int | None:
        """The frame array whose work-item element ``pointer`` is, ``frames + (C * items +
        linear * size)`` (Frame.slot), as C; else None."""
        pointer = self._resolve(pointer)
        if (
            not isinstance(pointer, ir.GEPInstr)
            or pointer.pointer is not self.frames
            or len(pointer.indices) != 1
        ):
            return None
        index = self._resolve(pointer.indices[0])
        if not isinstance(index, ir.Instruction) or index.opname != "add":
            return None
        start, element = (self._resolve(op) for op in index.operands)
        offset = _scaled(start, self.items)
        return offset if offset is not None and _scaled(element, self.linear) else None

    def _uniform_load(self, inst) -> bool:
        return (
            isinstance(inst, ir.LoadInstr)
            and bool(self.uniform_slots)
            and self._frame_slot(inst.operands[0]) in self.uniform_slots
        )

    def _clone_name(self) -> str:
        # A clone wider than the target's registers (abi._region_bodies) is named apart.
        wide = "" if width_for(",".join(self.features)) == self.W else str(self.W)
        return f"{self.kernel.name}.wfv{wide}.r{self.state.constant}"

    def _emit(self) -> ir.Function:
        fn = super()._emit()
        frame_alias_scopes(fn)
        return fn

    def _varying_arguments(self) -> list:
        return [self.linear]

    def _returned(self, block, mask) -> None:
        term = block.terminator
        if not isinstance(term, ir.Ret) or term.return_value is None:
            return
        value = self._value(term.return_value, block, True)
        if self.ret_acc is None or mask is None:
            self.ret_acc = value
            return
        if isinstance(mask.type, ir.VectorType):
            mask = self._splat(mask)
        self.ret_acc = self.b.select(mask, value, self.ret_acc)

    def _return(self) -> None:
        if self.ret_acc is None:
            raise Declined("a region that does not return")
        self.b.ret(self.b.extract_element(self.ret_acc, ir.Constant(I32, self.W - 1)))

    def _proven_consecutive(self, pointer) -> bool:
        """A frame element, ``frames + (uniform + linear * size)`` (Frame.slot): the
        lanes' linear ids are consecutive, in i64, so their addresses are too."""
        if super()._proven_consecutive(pointer):
            return True
        if not isinstance(pointer, ir.GEPInstr) or len(pointer.indices) != 1:
            return False
        if self._resolve(pointer.pointer) in self.varying:
            return False
        index = self._resolve(pointer.indices[0])
        scaled = False
        while (
            isinstance(index, ir.Instruction)
            and index.type == I64
            and index.opname in ("add", "sub", "mul", "shl")
        ):
            a, c = (self._resolve(op) for op in index.operands[:2])
            if index.opname == "add" and a not in self.varying:
                index = c
            elif index.opname in ("add", "sub") and c not in self.varying:
                index = a
            elif index.opname in ("mul", "shl") and not scaled:
                if isinstance(c, ir.Constant):
                    index = a
                elif index.opname == "mul" and isinstance(a, ir.Constant):
                    index = c
                else:
                    return False
                scaled = True
            else:
                break
        return index is self.linear


# Scoped alias metadata of region clones (frame_alias_scopes): the work-item frames are
# one scope, the kernel's own memory (its buffers, its __local variables) the other.
_FRAME, _OTHER, _UNKNOWN = "frame", "other", "unknown"
_MASKED_MEMORY = ("llvm.masked.load.", "llvm.masked.store.", "llvm.masked.gather.")
_MASKED_MEMORY += ("llvm.masked.scatter.", "llvm.masked.expandload.", "llvm.masked.compressstore.")


def frame_alias_scopes(fn: ir.Function) -> None:
    """Tell LLVM that the frame accesses of a step function (translate/barriers.py) or of
    a region clone of it never overlap its accesses to the kernel's own memory
    (``!alias.scope``/``!noalias``). The frames lie in the group's local
    memory block above the kernel's __local variables, so LLVM cannot tell them apart
    from the tiles: a value saved across barriers and updated in a loop (``sgemm``'s
    ``acc``) was stored to its frame at every step of the ``k`` loop, after every tile
    load. With the scopes, LICM keeps it in a register and stores it once.

    An access is in the frame scope when its address comes (through getelementptr, casts,
    vector element moves, phis and selects) only from the frames parameter; in the other
    scope when it comes only from the kernel's pointer parameters (global, constant and
    __local buffers), the __local block's base (context field 1) and module globals. Any
    other address (a pointer loaded from memory, a generic pointer, ...) gets no scope,
    and LLVM assumes what it assumed before."""
    ctx, frames = fn.args[-5], fn.args[-4]
    kernel_pointers = {id(arg) for arg in fn.args[:-5] if isinstance(arg.type, ir.PointerType)}
    memo: dict[int, str] = {}

    def local_base(value) -> bool:
        """``load ptr (gep ctx, 0, 1)``: the group's __local block (CpuABI.workgroup_address)."""
        if not isinstance(value, ir.LoadInstr):
            return False
        pointer = value.operands[0]
        return (
            isinstance(pointer, ir.GEPInstr)
            and pointer.pointer is ctx
            and len(pointer.indices) == 2
            and all(isinstance(i, ir.Constant) for i in pointer.indices)
            and [i.constant for i in pointer.indices] == [0, 1]
        )

    def leaf(value) -> str | list | None:
        """A root's kind, or the values ``value`` is made from (None: unknown)."""
        if value is frames:
            return _FRAME
        if id(value) in kernel_pointers or isinstance(value, ir.GlobalVariable):
            return _OTHER
        if local_base(value):
            return _OTHER
        if isinstance(value, ir.Constant) and (
            value.constant is ir.Undefined or value.constant is None
        ):
            return []  # the undefined half of a splat, a null pointer: no address
        if isinstance(value, ir.GEPInstr):
            return [value.pointer]
        if isinstance(value, ir.CastInstr) and value.opname in ("bitcast", "addrspacecast"):
            return [value.operands[0]]
        if isinstance(value, ir.PhiInstr):
            return [v for v, _ in value.incomings]
        if isinstance(value, ir.SelectInstr):
            return list(value.operands[1:])
        if isinstance(value, ir.ExtractElement):
            return [value.operands[0]]
        if isinstance(value, (ir.InsertElement, ir.ShuffleVector)):
            return list(value.operands[:2])
        return None

    def kind(pointer) -> str:
        """_FRAME or _OTHER when every root ``pointer`` comes from is of that kind, else
        _UNKNOWN. A walk of its own per access (no partial results of a phi cycle kept)."""
        if id(pointer) in memo:
            return memo[id(pointer)]
        kinds, seen, stack = set(), set(), [pointer]
        while stack and _UNKNOWN not in kinds and len(kinds) < 2:
            value = stack.pop()
            if id(value) in seen:
                continue
            seen.add(id(value))
            found = leaf(value)
            if found is None:
                kinds.add(_UNKNOWN)
            elif isinstance(found, str):
                kinds.add(found)
            else:
                stack.extend(found)
        result = kinds.pop() if len(kinds) == 1 else _UNKNOWN
        memo[id(pointer)] = result
        return result

    module = fn.module
    domain = module.add_metadata([ir.MetaDataString(module, "spirvjit.frames.domain")])
    scopes = {
        k: module.add_metadata([ir.MetaDataString(module, f"spirvjit.{k}"), domain])
        for k in (_FRAME, _OTHER)
    }
    lists = {k: module.add_metadata([v]) for k, v in scopes.items()}
    for block in fn.blocks:
        for inst in block.instructions:
            if isinstance(inst, ir.LoadInstr):
                pointers = [inst.operands[0]]
            elif isinstance(inst, ir.StoreInstr):
                pointers = [inst.operands[1]]
            elif isinstance(inst, ir.CallInstr) and getattr(inst.callee, "name", "").startswith(
                _MASKED_MEMORY
            ):
                pointers = [
                    a
                    for a in inst.args
                    if isinstance(getattr(a.type, "element", a.type), ir.PointerType)
                ]
            else:
                continue
            kinds = {kind(p) for p in pointers}
            if len(kinds) != 1 or _UNKNOWN in kinds:
                continue
            mine = kinds.pop()
            other = _OTHER if mine == _FRAME else _FRAME
            inst.set_metadata("alias.scope", lists[mine])
            inst.set_metadata("noalias", lists[other])


def _logical_and(cond) -> tuple | None:
    """(x, y) of an i1 ``and x, y`` or ``select x, y, false`` (LLVM's ``x && y``), else None."""
    if not isinstance(cond, ir.Instruction) or cond.type != I1:
        return None
    if cond.opname == "and":
        return tuple(cond.operands)
    if isinstance(cond, ir.SelectInstr):
        off = _int_constant(cond.operands[2])
        if off == 0:
            return cond.operands[0], cond.operands[1]
    return None


def _operands(inst) -> list:
    """An instruction's operands; a phi's incoming values."""
    if isinstance(inst, ir.PhiInstr):
        return [v for v, _ in inst.incomings]
    return list(inst.operands)


def _scaled(value, factor) -> int | None:
    """C where ``value`` is ``mul C, factor`` or ``mul factor, C`` (C a constant)."""
    if not isinstance(value, ir.Instruction) or value.opname != "mul":
        return None
    a, c = value.operands
    if c is factor and isinstance(a, ir.Constant) and isinstance(a.constant, int):
        return a.constant
    if a is factor and isinstance(c, ir.Constant) and isinstance(c.constant, int):
        return c.constant
    return None


_OTHER_LIBM = {
    "fmodf", "fmod", "remainderf", "remainder", "fdimf", "fdim", "logbf", "logb",
    "lgammaf", "lgamma", "tgammaf", "tgamma", "nextafterf", "nextafter", "cbrtf", "cbrt",
}  # fmt: skip


def _int_constant(value) -> int | None:
    """The value of an integer constant, else None."""
    if isinstance(value, ir.Constant) and isinstance(value.constant, int):
        return value.constant
    return None


def _low_mask(value) -> bool:
    """Whether ``value`` is the integer constant 2**bits - 1 (bits > 0)."""
    mask = _int_constant(value)
    return mask is not None and mask > 0 and mask & (mask + 1) == 0


def _int_constants(*values) -> bool:
    return all(isinstance(v, ir.Constant) and isinstance(v.constant, int) for v in values)


_FOLDABLE = {"add", "sub", "mul", "and", "or", "xor", "shl"}


def _fold(op: str, a: int, c: int, width: int) -> int | None:
    """``a op c`` on ``width``-bit integers (as LLVM prints them: signed), or None."""
    mask = (1 << width) - 1
    a, c = a & mask, c & mask
    if op == "shl":
        if c >= width:
            return None
        r = a << c
    else:
        r = {"add": a + c, "sub": a - c, "mul": a * c, "and": a & c, "or": a | c, "xor": a ^ c}[op]
    r &= mask
    return r - (1 << width) if r >> (width - 1) and width > 1 else r


def _is_type_suffix(part: str) -> bool:
    if part in ("f16", "f32", "f64", "f80", "f128", "p0", "bf16"):
        return True
    if part.startswith("v") and any(part.endswith(t) for t in ("f32", "f64", "f16", "p0")):
        return True
    return (part.startswith("i") or part.startswith("v")) and part.lstrip("vi0123456789x") == ""


def _group_field(gep: ir.GEPInstr) -> int | None:
    """The context field after the work-item queries that ``gep`` addresses when it is
    the group's local memory, its end or the frames' end (abi._CONTEXT: the same for
    every work-item), else None. (Not the check table or the stack top: checked mode's
    reports and generic-pointer tests stay scalar.)"""
    indices = [getattr(i, "constant", None) for i in gep.indices]
    if len(indices) == 2 and indices[0] == 0 and indices[1] in (1, 3, 4):
        return indices[1]
    return None


def context_slot(pointer: ir.Value, ctx: ir.Value) -> int | None:
    """The work-item context slot ``pointer`` addresses (a constant GEP into ``ctx``),
    else None."""
    if not isinstance(pointer, ir.GEPInstr) or pointer.pointer is not ctx:
        return None
    indices = pointer.indices
    if len(indices) != 3 or not all(isinstance(i, ir.Constant) for i in indices):
        return None
    if indices[0].constant != 0 or indices[1].constant != 0:
        return None
    return indices[2].constant


def _mangle(ty) -> str:
    """The intrinsic overload suffix of ``ty`` (function.overload_suffix); a type without
    one declines."""
    try:
        return overload_suffix(ty)
    except TypeError:
        raise Declined(f"type {ty}") from None


def _scalar_type(ty) -> bool:
    return isinstance(ty, ir.IntType | ir.FloatType | ir.DoubleType | ir.HalfType | ir.PointerType)


def _declare(module: ir.Module, name: str, ret, args) -> ir.Function:
    found = module.globals.get(name)
    if found is not None:
        return found
    return ir.Function(module, ir.FunctionType(ret, args), name)
