"""The host CPU's kernel ABI and the work-group functions wrapped around kernels.

Every translated function takes one hidden parameter, a pointer to the
work-item context below. The work-group function fills it and runs the kernel
body in a loop over the group's work-items (x innermost); after inlining, the
context lives in registers and the loop is an ordinary vectorizable loop.

The runner function takes chunks of work-group indices from an atomic counter in
the launch record, so all threads share the NDRange with no Python in between.

Launch record (``LaunchRecord`` below: i64 words, written by the host): global size,
enqueued local size, global offset, number of groups (3 words each), work_dim, total
groups, the next group to claim (atomic), groups per chunk, and the byte offset of the
work-item frames in the group's local memory (kernels with barriers), and an abort flag
the host sets to abandon the groups not yet started (Ctrl-C).

Argument array: one pointer per kernel argument, pointing to the argument's
bytes (a buffer's address, a scalar, a struct); a ``__local`` pointer argument
points to its byte offset (i64) in the group's local memory.
"""

from __future__ import annotations

import ctypes
import logging

from llvmlite import ir

from ... import config
from ...translate.signature import KernelSignature
from . import guards as guard_split
from . import vectorize as wfv
from . import yjam

log = logging.getLogger("spirvjit")

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I64 = ir.IntType(64)
PTR = ir.PointerType()


class LaunchRecord(ctypes.Structure):
    """What the runner reads of a launch; the IR below addresses it by ``launch_word``."""

    _fields_ = [
        ("global_size", ctypes.c_int64 * 3),
        ("local_size", ctypes.c_int64 * 3),  # the enqueued (full-group) size
        ("global_offset", ctypes.c_int64 * 3),
        ("groups", ctypes.c_int64 * 3),
        ("work_dim", ctypes.c_int64),
        ("total_groups", ctypes.c_int64),
        ("next_group", ctypes.c_int64),  # claimed atomically by the runners
        ("groups_per_chunk", ctypes.c_int64),
        ("frames_offset", ctypes.c_int64),
        # Set by the host to abandon the launch (Ctrl-C): runners stop claiming groups.
        ("abort", ctypes.c_int64),
        # Checked mode: the address of the launch's check table (translate/checks.py).
        ("check", ctypes.c_int64),
    ]


def launch_word(field: str, dim: int = 0) -> int:
    """The i64 word index of a launch record field (of its element ``dim``)."""
    return getattr(LaunchRecord, field).offset // 8 + dim


_QUERY_BASE = {
    "global_id": 0,
    "local_id": 3,
    "group_id": 6,
    "global_size": 9,
    "local_size": 12,
    "enqueued_local_size": 15,
    "num_groups": 18,
    "global_offset": 21,
    "work_dim": 24,
}
# Work-item queries (and, not a query, slot _MAIN_RANGE_SLOT: 1 while the work-group
# function runs the main range of the x ids, where the kernel's guards have known values,
# guards.py), the group's local memory, the check table (checked mode); then the end of
# the group's local memory (the work-item frames of a barrier kernel start there), the
# frames' end, and the stack address above every work-item's private variables
# (generic_pointer_space reads the last three).
_MAIN_RANGE_SLOT = 25
# Checked mode: 1 while the group's hoisted bounds checks are known to hold (checks.py).
_CHECKED_RANGE_SLOT = 26
_CONTEXT = ir.LiteralStructType([ir.ArrayType(I64, 27), PTR, PTR, PTR, PTR, PTR])
# Its size: 8-byte slots and pointers (the CPU targets are 64-bit: x86-64, AArch64).
_CONTEXT_BYTES = 8 * (_CONTEXT.elements[0].count + len(_CONTEXT.elements) - 1)
_LOCAL_END, _FRAMES_END, _STACK_TOP = 3, 4, 5
_RED_ZONE = 128


class CpuABI:
    """TargetABI for the host CPU: flat memory, work-item state in a hidden context."""

    # One thread runs a work-group's work-items one after another: its local memory
    # is private to that thread while the group runs.
    sequential_workgroups = True
    native_barriers = False  # barrier kernels become step functions (translate/barriers.py)
    host_libc = True
    # Buffers come from NumPy, which aligns only to the scalar (ops_memory.lane_alignment).
    natural_vector_alignment = False
    # Division and sqrt instructions are correctly rounded here: nothing to gain.
    fp32_divide_ulp = None
    fp32_sqrt_ulp = None

    def __init__(
        self, triple: str, data_layout: str, checked: bool = False, debug_info: bool = False
    ):
        self.triple = triple
        self.data_layout = data_layout
        # Checked mode: memory accesses are bounds-checked (translate/checks.py).
        self.checked = checked
        # Debug mode: DWARF from the module's debug information (translate/debuginfo.py).
        self.debug_info = debug_info

    def check_table(self, builder: ir.IRBuilder, hidden: list[ir.Value]) -> ir.Value:
        """The launch's check table (checked mode)."""
        # Not an invariant load: the context is memory the work-group function writes
        # (and the vectorizer copies once per lane for a call it runs lane by lane); an
        # invariant load of the copy could move above the copy and read garbage (a null
        # table, a crash: differential finding seed 24350 kernel 1, checked, WFV=all).
        # The table's own words are invariant (translate/checks.py).
        return builder.load(
            builder.gep(hidden[0], [_i32(0), _i32(2)], source_etype=_CONTEXT), typ=PTR
        )

    def check_fast_slot(self, builder: ir.IRBuilder, ctx: ir.Value) -> ir.Value:
        """Checked mode: the context word that says the group's range check held."""
        return _context_slot(builder, ctx, _CHECKED_RANGE_SLOT)

    def address_space(self, storage_class: int) -> int:
        return 0

    def hidden_parameters(self) -> list[ir.Type]:
        return [PTR]

    def sync_scope(self, scope: int) -> str | None:
        return None  # every scope is the whole system on the host

    def workitem(
        self, builder: ir.IRBuilder, hidden: list[ir.Value], name: str, dim: int
    ) -> ir.Value:
        return builder.load(_context_slot(builder, hidden[0], _QUERY_BASE[name] + dim), typ=I64)

    def workgroup_address(
        self, builder: ir.IRBuilder, hidden: list[ir.Value], offset: int
    ) -> ir.Value:
        base = builder.load(
            builder.gep(hidden[0], [_i32(0), _i32(1)], source_etype=_CONTEXT), typ=PTR
        )
        return builder.gep(base, [ir.Constant(I64, offset)], source_etype=I8)

    def generic_pointer_space(
        self, builder: ir.IRBuilder, hidden: list[ir.Value], pointer: ir.Value
    ) -> tuple[ir.Value, ir.Value]:
        """(is __local, is __private) for a generic pointer, as i1 values.

        The host has one flat address space, but it knows where each space lives: the
        group's local memory is [local base, local end) of the thread's arena, and a
        work-item's private memory is its frame (barrier kernels: [local end, frames
        end)) or the thread's stack between the current stack pointer and the
        work-group function's frame. Everything else is __global."""
        address = builder.ptrtoint(pointer, I64)

        def field(index: int) -> ir.Value:
            slot = builder.gep(hidden[0], [_i32(0), _i32(index)], source_etype=_CONTEXT)
            return builder.ptrtoint(builder.load(slot, typ=PTR), I64)

        def within(low: ir.Value, high: ir.Value) -> ir.Value:
            return builder.and_(
                builder.icmp_unsigned(">=", address, low), builder.icmp_unsigned("<", address, high)
            )

        save = module_function(builder.module, "llvm.stacksave.p0", PTR, [])
        # A leaf function keeps its variables in the 128-byte red zone below the stack
        # pointer (x86-64 System V); that memory is this thread's stack too.
        stack_pointer = builder.sub(
            builder.ptrtoint(builder.call(save, []), I64), ir.Constant(I64, _RED_ZONE)
        )
        local_end = field(_LOCAL_END)
        is_local = within(field(1), local_end)
        is_private = builder.or_(
            within(local_end, field(_FRAMES_END)), within(stack_pointer, field(_STACK_TOP))
        )
        return is_local, is_private


def _i32(value: int) -> ir.Constant:
    return ir.Constant(ir.IntType(32), value)


def _context_slot(builder: ir.IRBuilder, ctx: ir.Value, index: int) -> ir.Value:
    return builder.gep(ctx, [_i32(0), _i32(0), _i32(index)], source_etype=_CONTEXT)


def _launch_word(builder: ir.IRBuilder, launch: ir.Value, field: str, dim: int = 0) -> ir.Value:
    """The address of a launch record field (element ``dim`` of a 3-word field)."""
    return builder.gep(launch, [ir.Constant(I64, launch_word(field, dim))], source_etype=I64)


class _Loop:
    """A counted loop ``for (i = 0; i < n; ++i)`` built with an explicit phi."""

    def __init__(self, builder: ir.IRBuilder, count: ir.Value, name: str):
        self.b = builder
        fn = builder.function
        self.pre = builder.block
        self.head = fn.append_basic_block(f"{name}.head")
        self.body = fn.append_basic_block(f"{name}.body")
        self.exit = fn.append_basic_block(f"{name}.exit")
        builder.branch(self.head)
        builder.position_at_end(self.head)
        self.index = builder.phi(I64, name=name)
        self.index.add_incoming(ir.Constant(I64, 0), self.pre)
        builder.cbranch(builder.icmp_unsigned("<", self.index, count), self.body, self.exit)
        builder.position_at_end(self.body)

    def close(self, loop_metadata: ir.MDValue | None = None) -> None:
        b = self.b
        next_index = b.add(self.index, ir.Constant(I64, 1), flags=["nuw"])
        self.index.add_incoming(next_index, b.block)
        latch = b.branch(self.head)
        if loop_metadata is not None:
            latch.set_metadata("llvm.loop", loop_metadata)
        b.position_at_end(self.exit)


def _scalar_loop_metadata(module: ir.Module, unroll: bool = False) -> ir.MDValue:
    """``llvm.loop`` metadata: neither vectorize nor unroll this loop (a remainder);
    ``unroll``: it may be unrolled (the vectorized work-item chunks)."""
    no_vectorize = [ir.MetaDataString(module, "llvm.loop.vectorize.enable"), ir.Constant(I1, 0)]
    hints = [module.add_metadata(no_vectorize)]
    if not unroll:
        hints.append(module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.disable")]))
    loop_id = module.add_metadata(hints)
    loop_id.operands = (loop_id, *loop_id.operands)  # a loop ID refers to itself
    return loop_id


def _main_loop_metadata(module: ir.Module) -> ir.MDValue:
    """``llvm.loop`` metadata of a guard split's main range: no runtime unrolling. Its
    vector loop is interleaved anyway; the copies that loop unswitching makes for
    uniform conditions (a stencil's boundary rows) and the scalar remainders were
    unrolled with a remainder loop each, a third of the code for a few items per row."""
    hint = module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.runtime.disable")])
    loop_id = module.add_metadata([hint])
    loop_id.operands = (loop_id, *loop_id.operands)  # a loop ID refers to itself
    return loop_id


def emit_kernel_wrappers(
    module: ir.Module,
    kernel: ir.Function,
    signature: KernelSignature,
    symbol: str,
    checked_abi: CpuABI | None = None,
    features: str | None = None,
) -> tuple[str, str]:
    """Adds the work-group function and the runner for one kernel; returns their names.
    ``checked_abi``: checked mode, where a barrier kernel's wrapper reports a barrier not
    reached by every work-item of the group. ``features``: the target's, for whole-function
    vectorization (vectorize.py; None: not vectorized)."""
    kernel.attributes.discard("noinline")
    kernel.attributes.add("alwaysinline")
    if signature.wave_state_offset >= 0:
        # Lock-step wavefronts run lane by lane between their exchanges.
        kernel.wfv_note = "not vectorized across work-items: wavefront operations"
        wg = _emit_wavefront_workgroup_function(
            module, kernel, signature, f"{symbol}.wg", checked_abi
        )
    elif signature.barrier_states:
        wfv_features = None if checked_abi is not None else features
        wg = _emit_stepped_workgroup_function(
            module,
            kernel,
            signature,
            stepped_workgroup_function(f"{symbol}.run"),
            checked_abi,
            _region_bodies(module, kernel, signature.barrier_states + 1, wfv_features),
        )
    else:
        # Local memory is ordinary memory to the vectorizer; atomics on it (plain loads
        # and stores on the CPU) make it decline (vectorize.py). Checked mode keeps local
        # memory kernels scalar (their shadow bookkeeping is per work-item).
        wfv_features = features
        if checked_abi is not None and any(arg.kind == "local" for arg in signature.args):
            wfv_features = None
            kernel.wfv_note = "not vectorized across work-items: local memory (checked mode)"
        wg = _emit_workgroup_function(
            module, kernel, signature, f"{symbol}.wg", wfv_features, checked_abi is not None
        )
    runner = _emit_runner(module, wg, f"{symbol}.run")
    return wg.name, runner.name


def stepped_workgroup_function(runner: str) -> str:
    """The name of the work-group function of a barrier kernel whose runner is ``runner``
    (the optimizer runs O2 on modules that have one: codegen.STEPPED_SPEED_LEVEL)."""
    return runner.removesuffix(".run") + ".steps"


def _group_prologue(
    b: ir.IRBuilder, fn: ir.Function, kernel: ir.Function, signature: KernelSignature
):
    """Fills the parts of the work-item context that are the same for the whole group.

    Returns (context, kernel arguments, local sizes, first global id per dimension).
    """
    args_ptr, launch, *group, local_base = fn.args
    ctx = b.alloca(_CONTEXT, name="ctx")
    ctx.type = PTR  # opaque pointers: llvmlite's alloca is typed
    kernel_args = _load_kernel_args(b, args_ptr, kernel, signature, local_base)

    def put(index: int, value: ir.Value) -> None:
        b.store(value, _context_slot(b, ctx, index))

    def word(field: str, dim: int = 0) -> ir.Value:
        return b.load(_launch_word(b, launch, field, dim), typ=I64)

    b.store(local_base, b.gep(ctx, [_i32(0), _i32(1)], source_etype=_CONTEXT))
    check = b.inttoptr(word("check"), PTR)
    b.store(check, b.gep(ctx, [_i32(0), _i32(2)], source_etype=_CONTEXT))
    local_sizes, starts = [], []
    for d in range(3):
        global_size = word("global_size", d)
        enqueued = word("local_size", d)
        offset = word("global_offset", d)
        first = b.mul(group[d], enqueued)
        # The last group of a dimension may be smaller (non-uniform work-groups).
        rest = b.sub(global_size, first)
        local_size = b.select(b.icmp_unsigned("<", rest, enqueued), rest, enqueued)
        put(_QUERY_BASE["global_size"] + d, global_size)
        put(_QUERY_BASE["enqueued_local_size"] + d, enqueued)
        put(_QUERY_BASE["global_offset"] + d, offset)
        put(_QUERY_BASE["num_groups"] + d, word("groups", d))
        put(_QUERY_BASE["group_id"] + d, group[d])
        put(_QUERY_BASE["local_size"] + d, local_size)
        local_sizes.append(local_size)
        starts.append(b.add(first, offset))
    put(_QUERY_BASE["work_dim"], word("work_dim"))
    # Where the group's local memory and the work-items' private memory are, for
    # to_global/to_local/to_private (unused fields vanish after inlining). The launch
    # sets frames_offset, the end of the group's local memory, for every kernel.
    local_end = b.gep(local_base, [word("frames_offset")], source_etype=I8)
    items = b.mul(b.mul(local_sizes[0], local_sizes[1]), local_sizes[2])
    frames_end = b.gep(
        local_end, [b.mul(items, ir.Constant(I64, signature.frame_bytes))], source_etype=I8
    )
    frame_address = module_function(b.module, "llvm.frameaddress.p0", PTR, [ir.IntType(32)])
    top = b.call(frame_address, [_i32(0)])
    for index, value in ((_LOCAL_END, local_end), (_FRAMES_END, frames_end), (_STACK_TOP, top)):
        b.store(value, b.gep(ctx, [_i32(0), _i32(index)], source_etype=_CONTEXT))
    return ctx, kernel_args, local_sizes, starts


def module_function(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]):
    """Function ``name`` of ``module``, declared if it is not there yet."""
    return module.globals.get(name) or ir.Function(module, ir.FunctionType(ret, args), name)


def _work_item_loops(
    b: ir.IRBuilder, ctx: ir.Value, local_sizes: list, starts: list
) -> list[_Loop]:
    """Opens the z, y, x loops over the group's work-items and sets their ids."""
    loops = []
    for d in (2, 1, 0):
        loop = _Loop(b, local_sizes[d], f"l{d}")
        b.store(loop.index, _context_slot(b, ctx, _QUERY_BASE["local_id"] + d))
        b.store(b.add(starts[d], loop.index), _context_slot(b, ctx, _QUERY_BASE["global_id"] + d))
        loops.append(loop)
    return loops


def _workgroup_signature(module: ir.Module, name: str) -> ir.Function:
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR, I64, I64, I64, PTR]), name)
    fn.linkage = "internal"
    return fn


def _vector_body(
    module: ir.Module,
    kernel: ir.Function,
    features: str | None,
    main_range: bool,
    checked: bool = False,
) -> tuple[ir.Function | None, int]:
    """The W-wide body of ``kernel`` (vectorize.py) and W, or (None, 0) where the
    vectorizer is off or declines. The outcome is logged (SPIRVJIT_DEBUG), kept as
    ``kernel.wfv_note`` (``spirvjit dis --target``) and, for a decline, as a comment in
    the kernel's IR (SPIRVJIT_DUMP). ``checked``: a checked kernel, whose body runs only
    in the copy of the loops where the group's hoisted bounds checks held
    (``_checked_versions``): it has none of their per-item checks; the kernel's other
    checks make the vectorizer decline (they call the reporting function)."""
    if features is None or not wfv.enabled():
        if not wfv.enabled():
            kernel.wfv_note = "not vectorized across work-items (SPIRVJIT_WFV=0)"
        return None, 0
    width = wfv.width_for(features)
    known = {_CHECKED_RANGE_SLOT: _checked_fast_value(module, kernel)} if checked else None
    try:
        vector = wfv.vectorize(kernel, width, features, main_range, module.data_layout, known)
    except wfv.Declined as exc:
        reason = " ".join(str(exc).split())  # one line: it also becomes an IR comment
        kernel.wfv_note = f"not vectorized across work-items: {reason}"
        entry = kernel.blocks[0]
        entry.instructions.insert(0, ir.Comment(entry, f"wfv declined: {reason}"))
    else:
        kernel.wfv_note = f"vectorized across work-items, {width} per instruction"
        if vector.wfv_interleave > 1:
            # K W-chunks in lockstep (vectorize's _Vectorizer._interleave): a clone of K*W
            # lanes runs the full K*W-chunks of a row, this one the W-chunks left
            # (_emit_x_range).
            lanes = width * vector.wfv_interleave
            try:
                wide = wfv.vectorize(kernel, lanes, features, main_range, module.data_layout, known)
            except wfv.Declined:
                pass
            else:
                vector.wfv_wide = (wide, lanes)
                kernel.wfv_note += f", {lanes} at a time where a row has them"
    if config.debug():
        log.info("%s: %s", kernel.name, kernel.wfv_note)
    return (vector, width) if kernel.wfv_note.startswith("vectorized") else (None, 0)


def _region_bodies(
    module: ir.Module, step: ir.Function, regions: int, features: str | None
) -> tuple[dict[int, list[tuple[ir.Function, int]]], int]:
    """The vector clones of a step function's regions (state -> [(clone, its width)],
    widest first; regions the vectorizer declines are missing) and the target's W. The
    outcome goes where ``_vector_body`` puts a kernel's: the log, ``step.wfv_note`` and IR
    comments."""
    if features is None or not wfv.enabled():
        if not wfv.enabled():
            step.wfv_note = "not vectorized across work-items (SPIRVJIT_WFV=0)"
        return {}, 0
    width = wfv.width_for(features)
    # With 8 lanes (AVX, AVX2), when a region's loop carries a multiply-add chain of
    # per-lane scalars or a float sum (_fma_loop), every region also gets a clone of twice
    # that width,
    # which runs the row's x work-items 16 at a time (two 8-wide vectors per operation),
    # then the 8-wide clone at most once and the rest one by one: sgemm's k loop runs two
    # FMA chains side by side, where one chain per chunk is bound by the FMA latency
    # (4-5 cycles, two FMA pipes), and the tile staging's per-chunk work (the saved loop
    # counter, the checks of its int indices) is shared by 16 work-items. Not for every
    # kernel: the second clones cost JIT time, n-body's float4 loop (4 chains per lane
    # already) ran slower 16 wide (and the reduction's first region, while its loop was
    # masked: with the loop's all-active copy it runs faster).
    bodies, reasons = {}, {}
    for state in range(regions):
        try:
            narrow = wfv.vectorize_region(step, state, width, features, module.data_layout)
            bodies[state] = [(narrow, width)]
        except wfv.Declined as exc:
            reasons[state] = " ".join(str(exc).split())
    if width == 8 and any(_fma_loop(clones[0][0], width) for clones in bodies.values()):
        for state, clones in bodies.items():
            try:  # (it declines where the 8-wide one did not only on a vectorizer bug)
                double = wfv.vectorize_region(step, state, 2 * width, features, module.data_layout)
            except wfv.Declined:
                continue
            clones.insert(0, (double, 2 * width))
    entry = step.blocks[0]
    for state, reason in reversed(reasons.items()):
        entry.instructions.insert(0, ir.Comment(entry, f"wfv declined region {state}: {reason}"))
    wide = sum(len(clones) > 1 for clones in bodies.values())
    unlike = dict.fromkeys(reasons.values())
    if len(unlike) == 1 and not bodies:
        why = f"{next(iter(unlike))} (every barrier region)"
    else:
        why = "; ".join(f"region {state}: {reason}" for state, reason in reasons.items())
    if bodies:
        step.wfv_note = (
            f"vectorized across work-items, {width} per instruction, in {len(bodies)} of"
            f" {regions} barrier regions"
            + (f", {2 * width} per instruction in {wide} of them" if wide else "")
            + (f" ({why})" if reasons else "")
        )
    else:
        step.wfv_note = f"not vectorized across work-items: {why}"
    if config.debug():
        log.info("%s: %s", step.name, step.wfv_note)
    return bodies, width


def _fma_loop(clone: ir.Function, width: int) -> bool:
    """Whether a region clone has a loop (the vectorizer's ``<header>.loop`` blocks) and a
    multiply-add of ``width`` lanes (``llvm.fma``/``llvm.fmuladd``: one scalar per
    work-item) or a float add to a loop header's phi (a sum carried around the loop, as
    the grid-stride loop of a reduction: bound by the add's latency as a multiply-add
    chain is, now that its all-active copy has no masks; reduction 2^24 one-thread CPU
    ~10 -> ~7.5 ms), no vector values of more lanes (a work-item's float4 is 4 chains
    already) and no libmvec call (whose 8-lane variant a 16-lane clone could not call)."""
    looped, fma = False, False
    headers = (".loop", ".all")  # vectorize._emit_loop's and _all_active_copy's
    for block in clone.blocks:
        looped = looped or block.name.endswith(".loop")
        for inst in block.instructions:
            if isinstance(inst.type, ir.VectorType) and inst.type.count > width:
                return False
            callee = getattr(getattr(inst, "callee", None), "name", "")
            if callee.startswith("_ZGV"):
                return False
            fma = fma or callee.startswith((f"llvm.fma.v{width}", f"llvm.fmuladd.v{width}"))
            fma = fma or (
                inst.opname == "fadd"
                and inst.type == ir.VectorType(ir.FloatType(), width)
                and any(
                    isinstance(op, ir.PhiInstr) and op.parent.name.endswith(headers)
                    for op in inst.operands
                )
            )
    return looped and fma


def _emit_workgroup_function(
    module: ir.Module,
    kernel: ir.Function,
    signature: KernelSignature,
    name: str,
    features: str | None = None,
    checked: bool = False,
) -> ir.Function:
    fn = _workgroup_signature(module, name)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ctx, kernel_args, local_sizes, starts = _group_prologue(b, fn, kernel, signature)
    # A kernel function that other code calls (a kernel calling a kernel) is left alone:
    # the flag in the caller's context would not be about this kernel's guards.
    guards = [] if _called(module, kernel) else guard_split.find_guards(kernel, _global_id_slot)
    if guards:
        log.debug(
            "%s: x loop split on %d guard(s) of the x global id (ranges before masks)",
            kernel.name,
            len(guards),
        )
        _emit_split_work_items(
            b, module, ctx, kernel, kernel_args, local_sizes, starts, guards, features, checked
        )
        b.ret_void()
        return fn
    vector, width = (
        (None, 0)
        if _called(module, kernel)
        else _vector_body(module, kernel, features, False, checked)
    )

    rows = features is not None and not checked  # see _row_function
    jammed = yjam.rows_body(module, kernel, features, False, _global_id_slot) if rows else None

    def emit(body: ir.Function | None) -> None:
        if body is not None:

            def x_range(rb, rctx, rargs, start_x, count, skip=_I64_ZERO) -> None:
                # skip: items of the row a block of rows ran already (yjam.py)
                _emit_x_range(
                    rb, rctx, kernel, rargs, start_x, skip, rb.sub(count, skip), None, body,
                    width, rows,
                )  # fmt: skip

            if rows:
                row = _row_function(fn, kernel_args, 3, x_range)
                x = [starts[0], local_sizes[0]]
                if jammed is not None:
                    rows_x = [starts[0], _I64_ZERO, local_sizes[0]]
                    _emit_rows(
                        b, ctx, kernel, kernel_args, local_sizes, starts, jammed, row, x, rows_x
                    )
                    return
                outer = _outer_loops(b, ctx, local_sizes, starts)
                b.call(row, [*kernel_args, ctx, *x, _I64_ZERO])
            else:
                outer = _outer_loops(b, ctx, local_sizes, starts)
                x_range(b, ctx, kernel_args, starts[0], local_sizes[0])
            for loop in reversed(outer):
                loop.close()
            return
        loops = _work_item_loops(b, ctx, local_sizes, starts)
        b.call(kernel, [*kernel_args, ctx])
        for loop in reversed(loops):
            loop.close()

    _checked_versions(b, module, kernel, kernel_args, ctx, emit, vector)
    b.ret_void()
    return fn


def _checked_fast_value(module: ir.Module, kernel: ir.Function) -> int:
    """Checked mode: the flag word (``_CHECKED_RANGE_SLOT``) where the vector body runs:
    FAST_RANGES where the kernel has hoisted checks (the body runs in the copy where they
    held), else 0 (there is one copy)."""
    from ...translate import checks

    return checks.FAST_RANGES if kernel.name + checks.RANGES_SUFFIX in module.globals else 0


def _checked_versions(b, module, kernel, kernel_args, ctx, emit, vector) -> None:
    """Checked mode: the loops (``emit(vector body or None)``) twice, with and without the
    group's hoisted bounds checks (translate/checks.py): the vector body (vectorize.py), made
    for the copy without them, runs there only; else once, with the vector body."""
    from ...translate import checks

    inside = checks.group_ranges(b, module, kernel, kernel_args, ctx)
    flag = _context_slot(b, ctx, _CHECKED_RANGE_SLOT)
    if inside is None:
        checks.versioned(b, None, flag, lambda: emit(vector))
    else:
        checks.versioned(b, inside, flag, lambda: emit(None), fast=lambda: emit(vector))


def _called(module: ir.Module, fn: ir.Function) -> bool:
    """Whether any function of ``module`` calls ``fn``."""
    return any(
        isinstance(inst, ir.CallInstr) and inst.callee is fn
        for other in module.functions
        for block in other.blocks
        for inst in block.instructions
    )


def _global_id_slot(pointer: ir.Value, ctx: ir.Value) -> int | None:
    """The dimension of get_global_id that a load from ``pointer`` reads, if any."""
    slot = wfv.context_slot(pointer, ctx)
    if slot is None:
        return None
    slot -= _QUERY_BASE["global_id"]
    return slot if 0 <= slot < 3 else None


def _emit_split_work_items(
    b: ir.IRBuilder,
    module: ir.Module,
    ctx: ir.Value,
    kernel: ir.Function,
    kernel_args: list,
    local_sizes: list,
    starts: list,
    guards: list,
    features: str | None = None,
    checked: bool = False,
) -> None:
    """The z and y loops, and in them two x loops: the main range [lo, hi), where every
    guard has its known value (the flag in the context says so, and the kernel's guards
    fold to constants: plain vector code), then the others, [0, lo) and [hi, local),
    with the original code. Without barriers work-items may run in any order."""

    def read_flag(kb: ir.IRBuilder) -> ir.Value:
        flag = kb.load(_context_slot(kb, kernel.args[-1], _MAIN_RANGE_SLOT), typ=I64)
        return kb.icmp_unsigned("!=", flag, ir.Constant(I64, 0))

    guard_split.fold_guards(kernel, guards, read_flag)
    vector, width = _vector_body(b.module, kernel, features, True, checked)
    lo, hi = guard_split.main_range(b, guards, kernel, kernel_args, starts[0], local_sizes[0])
    gap = b.sub(hi, lo)
    rest = b.add(lo, b.sub(local_sizes[0], hi))

    def x_ranges(body: ir.Function | None):
        def emit_row(rb, ctx, kernel_args, start_x, lo, gap, rest, skip=_I64_ZERO) -> None:
            # skip: items of the main range a block of rows ran already (yjam.py)
            if body is not None:
                _emit_x_range(
                    rb, ctx, kernel, kernel_args, start_x, rb.add(lo, skip), rb.sub(gap, skip),
                    1, body, width, rows,
                )  # fmt: skip
            for main in (True, False):
                if main and body is not None:
                    continue
                loop = _Loop(rb, gap if main else rest, "main" if main else "rest")
                if main:
                    lx = rb.add(lo, loop.index)
                else:  # [0, lo), then [hi, local)
                    lx = rb.select(
                        rb.icmp_unsigned("<", loop.index, lo), loop.index, rb.add(loop.index, gap)
                    )
                rb.store(lx, _context_slot(rb, ctx, _QUERY_BASE["local_id"]))
                rb.store(rb.add(start_x, lx), _context_slot(rb, ctx, _QUERY_BASE["global_id"]))
                rb.store(ir.Constant(I64, int(main)), _context_slot(rb, ctx, _MAIN_RANGE_SLOT))
                if main or not guard_split.has_loop(kernel):
                    rb.call(kernel, [*kernel_args, ctx])
                else:
                    # The rest of a kernel with loops calls it out of line: one copy optimized
                    # for size (guard_split.rest_copy), not a second inlined copy whose loops
                    # the optimizer vectorizes and unrolls for a few boundary items per row.
                    # A kernel without loops costs less inlined than as a function.
                    rb.call(kernel, [*kernel_args, ctx], attrs=("noinline",))
                    guard_split.rest_copy(kernel)
                # The rest is at most a few boundary items per row: vectorizing it (with masks)
                # would only cost JIT time.
                loop.close(
                    _main_loop_metadata(rb.module) if main else _scalar_loop_metadata(rb.module)
                )

        return emit_row

    rows = features is not None and not checked  # see _row_function
    jammed = yjam.rows_body(module, kernel, features, True, _global_id_slot) if rows else None

    def emit(body: ir.Function | None) -> None:
        if rows and body is not None and jammed is not None:
            row = _row_function(b.function, kernel_args, 5, x_ranges(body))
            x, rows_x = [starts[0], lo, gap, rest], [starts[0], lo, gap]
            _emit_rows(b, ctx, kernel, kernel_args, local_sizes, starts, jammed, row, x, rows_x)
            return
        outer = _outer_loops(b, ctx, local_sizes, starts)
        if rows:
            row = _row_function(b.function, kernel_args, 5, x_ranges(body))
            b.call(row, [*kernel_args, ctx, starts[0], lo, gap, rest, _I64_ZERO])
        else:
            x_ranges(body)(b, ctx, kernel_args, starts[0], lo, gap, rest)
        for loop in reversed(outer):
            loop.close()

    _checked_versions(b, module, kernel, kernel_args, ctx, emit, vector)


def _row_function(wg: ir.Function, kernel_args: list, extra: int, emit_row) -> ir.Function:
    """The x loops of one row of the group (fixed y and z) as a function of their own,
    called from the group's z and y loops: ``row(kernel arguments..., context,
    ``extra`` i64 values...)``; ``emit_row(builder, context, kernel arguments, *values)``
    fills it in.

    Not inlined, for JIT time: with a row's two x loops (main range and rest, or vector
    chunks and remainder) inside the y loop, LLVM's non-trivial loop unswitching copied
    the whole y loop for each combination of x loops that may be empty, and every copy
    was vectorized (and the y loop unrolled around short x loops) again. In a function
    of its own a row is two loops one after the other; conditions that are uniform in a
    row (a stencil's boundary rows) are still unswitched out of the x loop. The row
    works on its own copy of the context, which stays in registers as before (the
    group's is only read: nothing after the loops reads what a work-item wrote there).
    Checked mode keeps its rows inline (its two copies of the loops differ by a flag in
    the context that must stay a constant there), and so do debug builds (no features:
    scalar code at -O0).
    """
    params = [arg.type for arg in kernel_args] + [PTR] + [I64] * extra
    row = ir.Function(wg.module, ir.FunctionType(ir.VoidType(), params), f"{wg.name}.row")
    row.linkage = "internal"
    row.attributes.add("noinline")
    rb = ir.IRBuilder(row.append_basic_block("entry"))
    ctx = rb.alloca(_CONTEXT, name="ctx")
    ctx.type = PTR  # opaque pointers: llvmlite's alloca is typed
    group_ctx = row.args[len(kernel_args)]
    memcpy = module_function(wg.module, "llvm.memcpy.p0.p0.i64", ir.VoidType(), [PTR, PTR, I64, I1])
    rb.call(memcpy, [ctx, group_ctx, ir.Constant(I64, _CONTEXT_BYTES), ir.Constant(I1, 0)])
    emit_row(rb, ctx, list(row.args[: len(kernel_args)]), *row.args[len(kernel_args) + 1 :])
    rb.ret_void()
    return row


_I64_ZERO = ir.Constant(I64, 0)


def _emit_rows(
    b: ir.IRBuilder,
    ctx: ir.Value,
    kernel: ir.Function,
    kernel_args: list,
    local_sizes: list,
    starts: list,
    jammed: yjam.Rows,
    row: ir.Function,
    x: list,
    rows_x: list,
) -> None:
    """The z and y loops of a kernel with an R-row clone (yjam.py): the blocks of R y rows
    from the first row in the y guards' range on, as many as lie in that range, run the
    clone's vector chunks (``_rows_function``: chunk by chunk, each for every block, so
    the data the rows share stays in cache), then each of their rows the items left
    (``row`` with the items done to skip); any other y row runs ``row`` alone. ``x``:
    ``row``'s arguments after the context, less the last (the items to skip);
    ``rows_x``: the first x global id, and the x local ids where the vector chunks run
    (lo, count): the guard split's main range, or the whole row (the flag is set in the
    first case only)."""
    lo, hi = (_I64_ZERO, local_sizes[1])
    if jammed.y_guards:
        lo, hi = guard_split.main_range(
            b, jammed.y_guards, kernel, kernel_args, starts[1], local_sizes[1]
        )
    r = ir.Constant(I64, jammed.rows)
    jam_row = _rows_function(b.function, kernel_args, jammed, len(x) == 4)
    z = _Loop(b, local_sizes[2], "l2")
    b.store(z.index, _context_slot(b, ctx, _QUERY_BASE["local_id"] + 2))
    b.store(b.add(starts[2], z.index), _context_slot(b, ctx, _QUERY_BASE["global_id"] + 2))
    fn = b.function
    pre = b.block
    head, body = fn.append_basic_block("ly.head"), fn.append_basic_block("ly.body")
    block_of_rows, one, nxt = (fn.append_basic_block(f"ly.{n}") for n in ("rows", "one", "next"))
    done = fn.append_basic_block("ly.exit")
    b.branch(head)
    b.position_at_end(head)
    y = b.phi(I64, name="ly")
    y.add_incoming(_I64_ZERO, pre)
    b.cbranch(b.icmp_unsigned("<", y, local_sizes[1]), body, done)
    b.position_at_end(body)

    def set_y(value: ir.Value) -> None:
        b.store(value, _context_slot(b, ctx, _QUERY_BASE["local_id"] + 1))
        b.store(b.add(starts[1], value), _context_slot(b, ctx, _QUERY_BASE["global_id"] + 1))

    set_y(y)
    blocks = b.select(b.icmp_unsigned("<", lo, hi), b.udiv(b.sub(hi, lo), r), _I64_ZERO)
    span = b.mul(blocks, r)
    inside = b.and_(b.icmp_unsigned("==", y, lo), b.icmp_unsigned("!=", blocks, _I64_ZERO))
    b.cbranch(inside, block_of_rows, one)
    b.position_at_end(block_of_rows)
    skip = b.call(jam_row, [*kernel_args, ctx, *rows_x, y, blocks, starts[1]])
    rows_loop = _Loop(b, span, "ly.r")
    set_y(b.add(y, rows_loop.index))
    b.call(row, [*kernel_args, ctx, *x, skip])
    rows_loop.close(_scalar_loop_metadata(b.module))
    b.branch(nxt)
    b.position_at_end(one)
    b.call(row, [*kernel_args, ctx, *x, _I64_ZERO])
    b.branch(nxt)
    b.position_at_end(nxt)
    step = b.phi(I64)
    step.add_incoming(span, rows_loop.exit)
    step.add_incoming(ir.Constant(I64, 1), one)
    y.add_incoming(b.add(y, step), nxt)
    b.branch(head)
    b.position_at_end(done)
    z.close()


def _rows_function(
    wg: ir.Function, kernel_args: list, jammed: yjam.Rows, split: bool
) -> ir.Function:
    """``rows(kernel arguments..., context, start_x, lo, count, y, blocks, start_y) ->
    i64``: the R-row clone's full vector chunks of the x local ids [lo, lo + count), for
    ``blocks`` blocks of R y rows from local y id ``y`` on (``start_y``: the group's first
    y global id); returns how many items of each row it ran (from lo). Chunk by chunk,
    each for every block: a k loop's column block of B (64 KB for 16 lanes and k up to
    1024) is then read from L2 by the blocks after the first.
    ``split``: the guard split's main range, where the flag is set. Not inlined, for JIT
    time (see _row_function)."""
    params = [arg.type for arg in kernel_args] + [PTR] + [I64] * 6
    fn = ir.Function(wg.module, ir.FunctionType(I64, params), f"{wg.name}.rows")
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ctx = b.alloca(_CONTEXT, name="ctx")
    ctx.type = PTR
    memcpy = module_function(wg.module, "llvm.memcpy.p0.p0.i64", ir.VoidType(), [PTR, PTR, I64, I1])
    n = len(kernel_args)
    b.call(memcpy, [ctx, fn.args[n], ir.Constant(I64, _CONTEXT_BYTES), ir.Constant(I1, 0)])
    args = list(fn.args[:n])
    start_x, lo, count, first_y, blocks, start_y = fn.args[n + 1 :]
    if split:
        b.store(ir.Constant(I64, 1), _context_slot(b, ctx, _MAIN_RANGE_SLOT))
    done = _I64_ZERO
    for clone, lanes in jammed.clones:
        size = ir.Constant(I64, lanes)
        chunks = b.udiv(b.sub(count, done), size)
        loop = _Loop(b, chunks, f"rows.x{lanes}")
        lx = b.add(b.add(lo, done), b.mul(loop.index, size))
        b.store(lx, _context_slot(b, ctx, _QUERY_BASE["local_id"]))
        b.store(b.add(start_x, lx), _context_slot(b, ctx, _QUERY_BASE["global_id"]))
        block = _Loop(b, blocks, "rows.y")
        ly = b.add(first_y, b.mul(block.index, ir.Constant(I64, jammed.rows)))
        b.store(ly, _context_slot(b, ctx, _QUERY_BASE["local_id"] + 1))
        b.store(b.add(start_y, ly), _context_slot(b, ctx, _QUERY_BASE["global_id"] + 1))
        b.call(clone, [*args, ctx])
        block.close(_scalar_loop_metadata(b.module))
        loop.close(_scalar_loop_metadata(b.module))
        done = b.add(done, b.mul(chunks, size))
    b.ret(done)
    return fn


def _outer_loops(b: ir.IRBuilder, ctx: ir.Value, local_sizes: list, starts: list) -> list:
    """Opens the z and y loops over the group's work-items and sets their ids."""
    outer = []
    for d in (2, 1):
        loop = _Loop(b, local_sizes[d], f"l{d}")
        b.store(loop.index, _context_slot(b, ctx, _QUERY_BASE["local_id"] + d))
        b.store(b.add(starts[d], loop.index), _context_slot(b, ctx, _QUERY_BASE["global_id"] + d))
        outer.append(loop)
    return outer


def _emit_x_range(
    b: ir.IRBuilder,
    ctx: ir.Value,
    kernel: ir.Function,
    kernel_args: list,
    start_x: ir.Value,
    lo: ir.Value,
    count: ir.Value,
    flag: int | None,
    vector: ir.Function,
    width: int,
    row: bool = False,
) -> None:
    """x local ids [lo, lo + count): W at a time through ``vector`` (it reads the ids of
    its first lane and adds the lane number), then the remainder one by one. Where
    ``vector`` has an interleaved clone (``wfv_wide``: K*W lanes, _vector_body), that runs
    the full K*W-chunks first and ``vector`` the W-chunks left.

    In a row function (``row``), the remainder (fewer than W items per row) of a kernel
    with loops calls the kernel out of line, the copy the guard split's rest range calls
    (``guard_split.rest_copy``): an inlined scalar copy was optimized like hot code (its
    loops unswitched, unrolled), a fifth of gemm_naive's cold JIT for a few items per row."""

    def run(body: ir.Function, lx: ir.Value, out_of_line: bool = False) -> None:
        b.store(lx, _context_slot(b, ctx, _QUERY_BASE["local_id"]))
        b.store(b.add(start_x, lx), _context_slot(b, ctx, _QUERY_BASE["global_id"]))
        if flag is not None:
            b.store(ir.Constant(I64, flag), _context_slot(b, ctx, _MAIN_RANGE_SLOT))
        b.call(body, [*kernel_args, ctx], attrs=("noinline",) if out_of_line else ())
        if out_of_line:
            guard_split.rest_copy(body)

    wide = getattr(vector, "wfv_wide", None)
    if wide is not None:
        lanes = ir.Constant(I64, wide[1])
        loop = _Loop(b, b.udiv(count, lanes), "wfv.wide")
        run(wide[0], b.add(lo, b.mul(loop.index, lanes)))
        loop.close(_scalar_loop_metadata(b.module, unroll=True))
        done = b.mul(b.udiv(count, lanes), lanes)
        lo, count = b.add(lo, done), b.sub(count, done)
    w = ir.Constant(I64, width)
    chunks = b.udiv(count, w)
    loop = _Loop(b, chunks, "wfv")
    run(vector, b.add(lo, b.mul(loop.index, w)))
    loop.close(_scalar_loop_metadata(b.module, unroll=wide is None))  # else < K chunks
    done = b.mul(chunks, w)
    loop = _Loop(b, b.sub(count, done), "wfv.rest")
    run(kernel, b.add(b.add(lo, done), loop.index), row and guard_split.has_loop(kernel))
    loop.close(_scalar_loop_metadata(b.module))


def _emit_stepped_workgroup_function(
    module: ir.Module,
    kernel: ir.Function,
    signature: KernelSignature,
    name: str,
    checked_abi: CpuABI | None = None,
    vectors: tuple[dict[int, list[tuple[ir.Function, int]]], int] = ({}, 0),
) -> ir.Function:
    """Runs a barrier kernel's step function region by region.

    All work-items are at the same state between regions (OpenCL requires every
    work-item to reach the same barriers); the state is a constant in each region's
    loop, so after inlining each loop holds only that region's code. ``vectors``: the
    vector clones of regions (``_region_bodies``) and W; those regions run W x work-items
    at a time (2W first on 8-lane targets), the rest of each row one by one.
    """
    # The scalar step function too: the rest of each row, and regions left scalar.
    wfv.frame_alias_scopes(kernel)
    fn = _workgroup_signature(module, name)
    launch, local_base = fn.args[1], fn.args[5]
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ctx, kernel_args, local_sizes, starts = _group_prologue(b, fn, kernel, signature)
    frames = b.gep(
        local_base, [b.load(_launch_word(b, launch, "frames_offset"), typ=I64)], source_etype=I8
    )
    state = b.alloca(ir.IntType(32), name="state")
    state.type = PTR
    b.store(ir.Constant(ir.IntType(32), 0), state)
    items = b.mul(b.mul(local_sizes[0], local_sizes[1]), local_sizes[2])
    from ...translate import checks

    inside = checks.group_ranges(b, module, kernel, kernel_args, ctx)  # checked mode
    # Checked mode: each work-item's next state, compared over the group after the region
    # (no branch per work-item: the region's loop vectorizes as the unchecked one does).
    states = b.alloca(ir.IntType(32), size=items, name="states") if checked_abi else None
    dispatch = fn.append_basic_block("dispatch")
    done = fn.append_basic_block("done")
    b.branch(dispatch)
    b.position_at_end(dispatch)
    switch = b.switch(b.load(state, typ=ir.IntType(32)), done)
    for number in range(signature.barrier_states + 1):
        region = fn.append_basic_block(f"region{number}")
        switch.add_case(ir.Constant(ir.IntType(32), number), region)
        b.position_at_end(region)

        if number in vectors[0]:
            _emit_vector_region(
                b, ctx, kernel, kernel_args, local_sizes, starts, (frames, items, state),
                number, vectors[0][number],
            )  # fmt: skip
            b.branch(dispatch)
            continue

        def emit(number: int = number) -> None:
            # Checked mode: whether a report was made before this region (see below).
            reported = checks.report_flag(b, checked_abi, ctx) if states is not None else None
            loops = _work_item_loops(b, ctx, local_sizes, starts)
            linear = b.add(
                b.mul(b.add(b.mul(loops[0].index, local_sizes[1]), loops[1].index), local_sizes[0]),
                loops[2].index,
            )
            state_arg = ir.Constant(ir.IntType(32), number)
            after = b.call(kernel, [*kernel_args, ctx, frames, linear, items, state_arg])
            if states is not None:
                b.store(after, b.gep(states, [linear], source_etype=ir.IntType(32)))
            b.store(after, state)
            for loop in reversed(loops):
                loop.close()
            if states is not None:
                _check_same_states(
                    b, module, checked_abi, ctx, items, local_sizes, starts, states, reported
                )

        full = checks.region_shadow_full(b, module, ctx) if checked_abi else None
        checks.versioned(b, inside, _context_slot(b, ctx, _CHECKED_RANGE_SLOT), emit, full)
        b.branch(dispatch)
    b.position_at_end(done)
    b.ret_void()
    return fn


def _emit_vector_region(
    b: ir.IRBuilder,
    ctx: ir.Value,
    step: ir.Function,
    kernel_args: list,
    local_sizes: list,
    starts: list,
    frame: tuple,
    number: int,
    clones: list[tuple[ir.Function, int]],
) -> None:
    """Region ``number`` of a step function: the z and y loops, and in them the row's x
    work-items W at a time through each clone of ``clones`` (widest first; lanes:
    consecutive x and linear ids from the first lane's) as long as W of them are left,
    then the rest one by one, inlined: groups narrower than W run only those (an
    out-of-line call per work-item made a reduction with 4-item groups 2x slower and
    saved no measurable JIT time). The next state is the last work-item's, as in the
    scalar loop."""
    frames, items, state = frame
    state_arg = ir.Constant(ir.IntType(32), number)
    outer = _outer_loops(b, ctx, local_sizes, starts)
    row = b.mul(b.add(b.mul(outer[0].index, local_sizes[1]), outer[1].index), local_sizes[0])

    def run(body: ir.Function, lx: ir.Value) -> None:
        b.store(lx, _context_slot(b, ctx, _QUERY_BASE["local_id"]))
        b.store(b.add(starts[0], lx), _context_slot(b, ctx, _QUERY_BASE["global_id"]))
        args = [*kernel_args, ctx, frames, b.add(row, lx), items, state_arg]
        b.store(b.call(body, args), state)

    done = ir.Constant(I64, 0)
    for n, (vector, width) in enumerate(clones):
        w = ir.Constant(I64, width)
        chunks = b.udiv(b.sub(local_sizes[0], done), w)
        loop = _Loop(b, chunks, "wfv")
        run(vector, b.add(done, b.mul(loop.index, w)))
        # A narrower clone after a wider one runs at most once: not unrolled.
        loop.close(_scalar_loop_metadata(b.module, unroll=n == 0))
        done = b.add(done, b.mul(chunks, w))
    loop = _Loop(b, b.sub(local_sizes[0], done), "wfv.rest")
    run(step, b.add(done, loop.index))
    loop.close(_scalar_loop_metadata(b.module))
    for loop in reversed(outer):
        loop.close()


def _emit_wavefront_workgroup_function(
    module: ir.Module,
    kernel: ir.Function,
    signature: KernelSignature,
    name: str,
    checked_abi: CpuABI | None = None,
) -> ir.Function:
    """Runs a kernel with AMD wavefront operations, keeping a state per work-item.

    Between group barriers, each wavefront (64 consecutive linear ids) runs on its own:
    its lanes run to their next synchronization point; while some wait at a wavefront
    operation (a gather state, translate/wavefront.py), the one with the lowest state
    is released (barriers.py numbers an operation before those it can reach): the mask
    of the lanes waiting there is stored, the lowest of them computes every one's result,
    then they run on.
    When every lane waits at a group barrier or has finished, the group releases the
    lanes at the highest barrier state (all of them when the kernel is well formed;
    finished work-items do not take part, as on AMD GPUs, where a wavefront that has
    ended no longer counts at s_barrier). ``checked_abi``: checked mode, where work-items
    waiting at different barriers are reported (finished ones are not).
    """
    from ...translate import checks, wavefront

    i32 = ir.IntType(32)
    fn = _workgroup_signature(module, name)
    launch, local_base = fn.args[1], fn.args[5]
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ctx, kernel_args, local_sizes, starts = _group_prologue(b, fn, kernel, signature)
    frames = b.gep(
        local_base, [b.load(_launch_word(b, launch, "frames_offset"), typ=I64)], source_etype=I8
    )
    if checked_abi is not None:
        # Checked mode: the group's shadow starts clear, and the checks' flag word is 0
        # (one copy of the loops, every check per work-item).
        checks.reset_group_shadow(b, module, ctx)
        b.store(ir.Constant(I64, 0), _context_slot(b, ctx, _CHECKED_RANGE_SLOT))
    items = b.mul(b.mul(local_sizes[0], local_sizes[1]), local_sizes[2])
    plane = b.mul(local_sizes[0], local_sizes[1])
    wave_size = ir.Constant(I64, wavefront.CPU_WAVEFRONT_SIZE)
    finished = ir.Constant(i32, -1)

    def element(offset: int, size: int, index: ir.Value) -> ir.Value:
        start = b.mul(ir.Constant(I64, offset), items)
        address = b.add(start, b.mul(index, ir.Constant(I64, size)))
        return b.gep(frames, [address], source_etype=I8)

    def state_of(index: ir.Value) -> ir.Value:
        return element(signature.wave_state_offset, 4, index)

    def variable(ty: ir.Type, value: ir.Value, label: str) -> ir.Value:
        slot = b.alloca(ty, name=label)
        slot.type = PTR
        b.store(value, slot)
        return slot

    released = variable(i32, ir.Constant(i32, 0), "released")
    select = variable(i32, ir.Constant(i32, 0), "select")
    pending = variable(i32, ir.Constant(i32, 0), "pending")
    mask = variable(I64, ir.Constant(I64, 0), "mask")
    latest = variable(i32, finished, "latest")
    ids = [variable(I64, ir.Constant(I64, 0), f"id{d}") for d in range(3)]
    lowest = variable(i32, ir.Constant(i32, 0), "lowest")  # the released gather's leader
    loop = _Loop(b, items, "init")
    b.store(ir.Constant(i32, 0), state_of(loop.index))
    loop.close()

    round_head = fn.append_basic_block("round")
    done = fn.append_basic_block("done")
    b.branch(round_head)
    b.position_at_end(round_head)
    waves = b.udiv(b.add(items, ir.Constant(I64, wavefront.CPU_WAVEFRONT_SIZE - 1)), wave_size)
    wave_loop = _Loop(b, waves, "wave")
    first = b.mul(wave_loop.index, wave_size)
    end = b.add(first, wave_size)
    end = b.select(b.icmp_unsigned("<", end, items), end, items)
    b.store(b.load(released, typ=i32), select)
    step_head = fn.append_basic_block("wave.step")
    wave_done = fn.append_basic_block("wave.done")
    b.branch(step_head)
    b.position_at_end(step_head)
    # Run the lanes at the selected state to their next synchronization point.
    chosen = b.load(select, typ=i32)
    gather = wavefront.is_gather_state(b, chosen)
    leader = b.add(first, b.zext(b.load(lowest, typ=i32), I64))
    # The first lane's (x, y, z) local id, then counted up lane by lane (no division).
    b.store(b.urem(first, local_sizes[0]), ids[0])
    b.store(b.urem(b.udiv(first, local_sizes[0]), local_sizes[1]), ids[1])
    b.store(b.udiv(first, plane), ids[2])
    lanes = _Loop(b, b.sub(end, first), "lane")
    linear = b.add(first, lanes.index)
    here = state_of(linear)
    x, y, z = (b.load(slot, typ=I64) for slot in ids)
    # At a released gather, one lane computes every active lane's result (wavefront.py).
    runs = b.and_(
        b.icmp_signed("==", b.load(here, typ=i32), chosen),
        b.or_(b.not_(gather), b.icmp_unsigned("==", linear, leader)),
    )
    with b.if_then(runs):
        for d, value in enumerate((x, y, z)):
            b.store(value, _context_slot(b, ctx, _QUERY_BASE["local_id"] + d))
            b.store(b.add(starts[d], value), _context_slot(b, ctx, _QUERY_BASE["global_id"] + d))
        after = b.call(kernel, [*kernel_args, ctx, frames, linear, items, chosen])
        b.store(after, here)
    one = ir.Constant(I64, 1)
    next_x = b.add(x, one)
    row_done = b.icmp_unsigned("==", next_x, local_sizes[0])
    next_y = b.add(y, b.zext(row_done, I64))
    plane_done = b.icmp_unsigned("==", next_y, local_sizes[1])
    b.store(b.select(row_done, ir.Constant(I64, 0), next_x), ids[0])
    b.store(b.select(plane_done, ir.Constant(I64, 0), next_y), ids[1])
    b.store(b.add(z, b.zext(plane_done, I64)), ids[2])
    lanes.close()
    # A gather just released: its lanes now wait at the sync right after it.
    after_gather = fn.append_basic_block("wave.resume")
    find = fn.append_basic_block("wave.find")
    b.cbranch(gather, after_gather, find)
    b.position_at_end(after_gather)
    sync = b.add(chosen, ir.Constant(i32, 1))
    lanes = _Loop(b, b.sub(end, first), "synced")
    here = state_of(b.add(first, lanes.index))
    with b.if_then(b.icmp_signed("==", b.load(here, typ=i32), chosen)):
        b.store(sync, here)
    lanes.close()
    b.store(sync, select)
    b.branch(step_head)
    # Else the earliest wavefront operation some lane waits at, and who waits there.
    b.position_at_end(find)
    b.store(finished, pending)
    b.store(ir.Constant(I64, 0), mask)
    scan = _Loop(b, b.sub(end, first), "scan")
    state = b.load(state_of(b.add(first, scan.index)), typ=i32)
    with b.if_then(wavefront.is_gather_state(b, state)):
        current = b.load(pending, typ=i32)
        better = b.or_(b.icmp_signed("==", current, finished), b.icmp_signed("<", state, current))
        lane_bit = b.shl(ir.Constant(I64, 1), scan.index)
        old_mask = b.load(mask, typ=I64)
        b.store(b.select(better, state, current), pending)
        new_mask = b.select(
            better,
            lane_bit,
            b.select(b.icmp_signed("==", state, current), b.or_(old_mask, lane_bit), old_mask),
        )
        b.store(new_mask, mask)
    scan.close()
    waiting = b.load(pending, typ=i32)
    release = fn.append_basic_block("wave.release")
    b.cbranch(b.icmp_signed("==", waiting, finished), wave_done, release)
    b.position_at_end(release)
    active = b.load(mask, typ=I64)
    b.store(active, element(signature.wave_mask_offset, 8, first))
    lowest_lane = module_function(module, "llvm.cttz.i64", I64, [I64, I1])
    b.store(b.trunc(b.call(lowest_lane, [active, ir.Constant(I1, 1)]), i32), lowest)
    b.store(waiting, select)
    b.branch(step_head)
    b.position_at_end(wave_done)
    wave_loop.close()
    # Every lane waits at a group barrier or has finished: release the latest barrier.
    b.store(finished, latest)
    scan = _Loop(b, items, "barrier")
    state = b.load(state_of(scan.index), typ=i32)
    current = b.load(latest, typ=i32)
    b.store(b.select(b.icmp_signed(">", state, current), state, current), latest)
    scan.close()
    next_state = b.load(latest, typ=i32)
    if checked_abi is not None:
        _check_same_barrier(b, module, checked_abi, ctx, items, local_sizes, starts, state_of)
    b.store(next_state, released)
    b.cbranch(b.icmp_signed("==", next_state, finished), done, round_head)
    b.position_at_end(done)
    b.ret_void()
    return fn


def _check_same_barrier(b, module, abi, ctx, items, local_sizes, starts, state_of) -> None:
    """Checked mode, wavefront kernels: while the group's first work-item waits at a
    barrier, every work-item that has not finished must wait at the same one."""
    from ...translate import checks

    i32 = ir.IntType(32)
    first = b.load(state_of(ir.Constant(I64, 0)), typ=i32)
    scan = _Loop(b, items, "check")
    state = b.load(state_of(scan.index), typ=i32)
    waiting = b.and_(
        b.icmp_signed(">=", first, ir.Constant(i32, 0)),
        b.icmp_signed(">=", state, ir.Constant(i32, 0)),
    )
    with b.if_then(b.and_(waiting, b.icmp_signed("!=", state, first)), likely=False):
        _set_ids(b, ctx, scan.index, local_sizes, starts)
        values = [ir.Constant(I64, checks.KIND_BARRIER)]
        values += [ir.Constant(I64, 0)] * (checks.FAIL_WORDS - 1)
        values[1] = b.sext(state, I64)  # which: this item's state
        values[2] = b.sext(first, I64)  # offset: the first item's
        b.call(checks.fail_function(module, abi), [abi.check_table(b, [ctx]), *values, ctx])
    scan.close()


def _set_ids(b: ir.IRBuilder, ctx: ir.Value, index: ir.Value, local_sizes, starts) -> None:
    """Sets the context's local and global ids to those of the group's ``index``-th
    work-item (a report names the work-item by the ids in the context)."""
    x = b.urem(index, local_sizes[0])
    y = b.urem(b.udiv(index, local_sizes[0]), local_sizes[1])
    z = b.udiv(index, b.mul(local_sizes[0], local_sizes[1]))
    for d, value in enumerate((x, y, z)):
        b.store(value, _context_slot(b, ctx, _QUERY_BASE["local_id"] + d))
        b.store(b.add(starts[d], value), _context_slot(b, ctx, _QUERY_BASE["global_id"] + d))


def _check_same_states(b, module, abi, ctx, items, local_sizes, starts, states, before) -> None:
    """Checked mode, after a region of a barrier kernel: every work-item must stop at the
    same barrier (or all finish) as the group's first; else the divergent-barrier report
    (translate/checks.py) of the first that did not, exactly as a check after each
    work-item's step gave it: which = that item's next state, offset = the first item's.

    The region's work-items after that one have run too; a report one of them made in
    this region (``before``: the report flag when the region began was clear) came later
    in work-item order, so the barrier report replaces it."""
    from ...translate import checks

    i32 = ir.IntType(32)
    fn = b.function

    def state_at(index: ir.Value) -> ir.Value:
        return b.load(b.gep(states, [index], source_etype=i32), typ=i32)

    first = state_at(ir.Constant(I64, 0))
    # Any work-item at another state: a branch-free OR over the group (vectorizes).

    def differs(differ: ir.Value, i: ir.Value) -> ir.Value:
        return b.or_(differ, b.icmp_signed("!=", state_at(i), first))

    differ = checks.fold_range(b, "same", ir.Constant(I64, 1), items, ir.Constant(I1, 0), differs)
    with b.if_then(differ, likely=False):
        # The first work-item at another state (one exists).
        pre = b.block
        find = fn.append_basic_block("same.find")
        found = fn.append_basic_block("same.found")
        b.branch(find)
        b.position_at_end(find)
        k = b.phi(I64)
        k.add_incoming(ir.Constant(I64, 1), pre)
        k.add_incoming(b.add(k, ir.Constant(I64, 1)), find)
        b.cbranch(b.icmp_signed("!=", state_at(k), first), found, find)
        b.position_at_end(found)
        table = abi.check_table(b, [ctx])
        checks.yield_later_report(b, table, before, k, local_sizes, starts)
        _set_ids(b, ctx, k, local_sizes, starts)
        values = [ir.Constant(I64, checks.KIND_BARRIER)]
        values += [ir.Constant(I64, 0)] * (checks.FAIL_WORDS - 1)
        values[1] = b.sext(state_at(k), I64)  # which: this item's next state
        values[2] = b.sext(first, I64)  # offset: the first item's
        b.call(checks.fail_function(module, abi), [table, *values, ctx])


def _load_kernel_args(
    b: ir.IRBuilder,
    args_ptr: ir.Value,
    kernel: ir.Function,
    signature: KernelSignature,
    local_base: ir.Value,
) -> list[ir.Value]:
    values = []
    for arg, param_ty in zip(signature.args, kernel.function_type.args, strict=False):
        slot = b.load(b.gep(args_ptr, [ir.Constant(I64, arg.index)], source_etype=PTR), typ=PTR)
        if arg.kind in ("global", "constant"):
            values.append(b.load(slot, typ=PTR))
        elif arg.kind == "local":
            offset = b.load(slot, typ=I64)
            values.append(b.gep(local_base, [offset], source_etype=I8))
        elif arg.kind == "struct":
            values.append(slot)  # by-value structs arrive as a pointer to their bytes
        else:
            values.append(b.load(slot, typ=param_ty, align=1))
    return values


# Work-groups are walked in bands GROUP_BAND groups wide along x, top to bottom, not row by
# row over the whole grid. In a tiled gemm-like kernel every group of a row of groups reads
# all of a column-shared input (the whole of B, 4 MiB at 1024²), which then comes from L3
# again for each row of groups (most of sgemm's time on main went to the first load of B
# in the tile-staging region). In a band the groups below each other read the same B
# columns, so the band's share (8 groups x 16 columns x 1024 rows = 512 KiB) stays in L2.
# Intel's runtime gets the same effect from TBB's 2-D range splitting. 8 rather than 4:
# as fast on sgemm. Only for work-groups more than one row high (2-D tiles, which is how
# kernels with 2-D reuse are written): one-row groups, like the (256, 1) shape chosen
# when none is given, are streaming kernels where half-rows measured 10-20% slower
# (the 4096² stencil), so they keep the row-major walk.
# OpenCL promises no order between work-groups, so any bijection is correct.
GROUP_BAND = 8


def _group_of_index(
    b: ir.IRBuilder, index: ir.Value, groups_x: ir.Value, groups_y: ir.Value, band: ir.Value
) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(gx, gy, gz) of the ``index``-th group walked: z slices, in each x bands of ``band``
    (> 0) groups (the last band narrower) walked top to bottom, x fastest in a row of a
    band. A bijection onto the group grid; row-major when ``band`` >= groups_x or there is
    one row of groups."""
    slice_size = b.mul(groups_x, groups_y)
    gz = b.udiv(index, slice_size)
    r = b.urem(index, slice_size)
    full_x = b.mul(b.udiv(groups_x, band), band)  # columns in full-width bands
    full = b.mul(full_x, groups_y)  # groups in full-width bands
    in_full = b.icmp_unsigned("<", r, full)
    # In a full band: band k = r / (band * groups_y), then row-major over band x groups_y.
    per_band = b.mul(band, groups_y)
    within = b.urem(r, per_band)
    full_gx = b.add(b.mul(b.udiv(r, per_band), band), b.urem(within, band))
    full_gy = b.udiv(within, band)
    # In the last, narrower band (width groups_x - full_x, never 0 when reached).
    width = b.sub(groups_x, full_x)
    width = b.select(in_full, band, width)  # keeps the division below defined
    tail = b.select(in_full, ir.Constant(I64, 0), b.sub(r, full))
    tail_gx = b.add(full_x, b.urem(tail, width))
    tail_gy = b.udiv(tail, width)
    gx = b.select(in_full, full_gx, tail_gx)
    gy = b.select(in_full, full_gy, tail_gy)
    return gx, gy, gz


def _emit_runner(module: ir.Module, wg: ir.Function, name: str) -> ir.Function:
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR]), name)
    args_ptr, launch, local_base = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    groups_x = b.load(_launch_word(b, launch, "groups", 0), typ=I64)
    groups_y = b.load(_launch_word(b, launch, "groups", 1), typ=I64)
    total = b.load(_launch_word(b, launch, "total_groups"), typ=I64)
    chunk = b.load(_launch_word(b, launch, "groups_per_chunk"), typ=I64)
    local_y = b.load(_launch_word(b, launch, "local_size", 1), typ=I64)
    tall = b.icmp_unsigned(">", local_y, ir.Constant(I64, 1))
    band = ir.Constant(I64, GROUP_BAND)
    claim = fn.append_basic_block("claim")
    work = fn.append_basic_block("work")
    done = fn.append_basic_block("done")
    b.branch(claim)
    b.position_at_end(claim)
    start = b.atomic_rmw("add", _launch_word(b, launch, "next_group"), chunk, "monotonic")
    b.cbranch(b.icmp_unsigned("<", start, total), work, done)
    b.position_at_end(work)
    end = b.add(start, chunk)
    end = b.select(b.icmp_unsigned("<", end, total), end, total)
    loop = _Loop(b, b.sub(end, start), "g")
    index = b.add(start, loop.index)
    # Row-major (one-row groups) keeps its own two divisions: the banded mapping's extra
    # 64-bit divisions per group cost a many-group streaming launch about a millisecond.
    with b.if_else(tall) as (banded, row_major):
        with banded:
            banded_ids = _group_of_index(b, index, groups_x, groups_y, band)
            banded_block = b.block
        with row_major:
            rest = b.udiv(index, groups_x)
            row_ids = (b.urem(index, groups_x), b.urem(rest, groups_y), b.udiv(rest, groups_y))
            row_block = b.block
    gx, gy, gz = [b.phi(I64) for _ in range(3)]
    for phi, banded_id, row_id in zip((gx, gy, gz), banded_ids, row_ids, strict=True):
        phi.add_incoming(banded_id, banded_block)
        phi.add_incoming(row_id, row_block)
    # Before each group: an abandoned launch (Ctrl-C) starts no more groups.
    aborted = b.load_atomic(_launch_word(b, launch, "abort"), "monotonic", 8, typ=I64)
    with b.if_then(b.icmp_signed("==", aborted, ir.Constant(I64, 0)), likely=True):
        b.call(wg, [args_ptr, launch, gx, gy, gz, local_base])
    loop.close()
    b.branch(claim)
    b.position_at_end(done)
    b.ret_void()
    return fn
