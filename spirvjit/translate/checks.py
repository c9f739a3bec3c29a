"""Checked mode: bounds checks around memory accesses (``SPIRVJIT_CHECK=1``, ``check=True``).

A target ABI with ``checked`` set gives every translated function access to a *check
table* (``abi.check_table``), written by the host before each launch:

    words 0..CHECK_ARGS-1   the report of the first violation (see the ``R_*`` indices)
    word  W_ABORT           the address of the launch record's abort flag
    word  W_NARGS           the number of kernel arguments
    words CHECK_ARGS + 2*i  argument i: (base address, extent in bytes); for a buffer the
                            array's address and ``nbytes`` (0, 0 for None: NULL), for a
                            ``__local`` argument (0, its size), else (0, 0)

Each load, store, copy and atomic finds, at translation time, where its pointer came
from: an access chain back to a kernel argument, a program-scope, ``__local`` or private
variable. Its bytes must then lie inside that argument's or variable's extent, so an
overflow is caught even when it lands in a neighbouring array. A pointer whose origin is
not known statically (a phi, a pointer loaded from memory, a helper function's
parameter) is checked against every buffer argument and program-scope variable
(``__global``/``__constant``) or the group's local memory (``__local``); ``Generic`` and
private pointers of unknown origin are not checked.

The first failing access records the report (atomically: one report per launch), sets the
launch's abort flag (no further work-groups start) and is skipped (a load yields zero),
so a checked launch never writes outside its arrays.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from llvmlite import ir

from ..spirv.grammar import Decoration, FunctionParameterAttribute, StorageClass

if TYPE_CHECKING:
    from .function import FunctionTranslator

I1 = ir.IntType(1)
I64 = ir.IntType(64)
PTR = ir.PointerType()

# Report words.
R_FLAG, R_KIND, R_WHICH, R_OFFSET, R_SIZE, R_STORE = range(6)
R_GID, R_LID = 6, 9  # 3 words each
R_FILE, R_LINE, R_COLUMN, R_ADDRESS, R_EXTENT = 12, 13, 14, 15, 16
# Where the kernel called the helper function that made the access (see _call_site).
R_CALLER = 17
W_ABORT, W_NARGS, W_LOCAL_BYTES, W_SHADOW = 20, 21, 22, 23
CHECK_ARGS = 24

# Report kinds.
KIND_ARGUMENT = 1  # which: the argument's index
KIND_VARIABLE = 2  # which: the variable's SPIR-V id
KIND_ANY_GLOBAL = 3  # a __global/__constant pointer of unknown origin outside every buffer
KIND_ANY_LOCAL = 4  # a __local pointer of unknown origin outside the group's local memory
KIND_BARRIER = 5  # which: the state one work-item reached, offset: the first item's state
# A read of __local memory that no work-item of the group has written (see _Shadow):
KIND_UNSET_ARGUMENT = 6  # which: the __local argument's index, offset: in its block
KIND_UNSET_VARIABLE = 7  # which: the __local variable's id, offset: in it
KIND_UNSET_LOCAL = 8  # a pointer of unknown origin; offset: in the group's local memory

_CASTS = frozenset(
    {
        "OpAccessChain",
        "OpInBoundsAccessChain",
        "OpPtrAccessChain",
        "OpInBoundsPtrAccessChain",
        "OpBitcast",
        "OpCopyObject",
        "OpPtrCastToGeneric",
        "OpGenericCastToPtr",
        "OpGenericCastToPtrExplicit",
    }
)
_GLOBAL_CLASSES = (StorageClass.CrossWorkgroup, StorageClass.UniformConstant)


def _round_trip_source(t: FunctionTranslator, inst) -> int | None:
    """The pointer that ``OpConvertUToPtr(OpConvertPtrToU(p))`` is, or None: clang-22 casts
    every HIP kernel's pointer arguments to generic pointers through an integer."""
    if inst.opname != "OpConvertUToPtr":
        return None
    source = t.module.defs.get(inst.operands[0])
    if source is None or source.opname != "OpConvertPtrToU":
        return None
    return source.operands[0]


def _spilled_value(t: FunctionTranslator, inst) -> int | None:
    """The value an ``OpLoad`` reads back from a private variable that holds one value
    only, or None. Unoptimized code (``-g`` builds: the translator producer at -O0) keeps
    every kernel argument in such a variable, ``store %in, %in.addr`` then a load before
    each use; without this, no access of theirs would name its argument."""
    if inst.opname != "OpLoad":
        return None
    return _single_stores(t).get(inst.operands[0])


def _single_stores(t: FunctionTranslator) -> dict[int, int]:
    """Function-storage variable id -> the one value stored to it, for the variables whose
    only uses are that store, loads and debug instructions (nothing else can change or
    alias them)."""
    found = getattr(t.mt, "_check_single_stores", None)
    if found is None:
        stores: dict[int, list[int]] = {}
        escaped: set[int] = set()
        private = set()
        for fn in t.module.functions:
            for block in fn.blocks:
                for inst in block.instructions:
                    if inst.opname == "OpVariable" and inst.operands[0] == StorageClass.Function:
                        if len(inst.operands) == 1:  # an initializer is a second value
                            private.add(inst.result_id)
                    elif inst.opname == "OpStore":
                        stores.setdefault(inst.operands[0], []).append(inst.operands[1])
                        escaped.add(inst.operands[1])  # its address stored elsewhere
                    elif inst.opname not in ("OpLoad", "OpLifetimeStart", "OpLifetimeStop") and (
                        inst.opname != "OpExtInst" or not _debug_set(t, inst.operands[0])
                    ):
                        # Any other use may write through the address (modf's or vstore's
                        # pointer argument) or keep it; a literal taken for an id only
                        # makes this more careful.
                        escaped.update(op for op in inst.operands if isinstance(op, int))
        found = t.mt._check_single_stores = {
            var: values[0]
            for var, values in stores.items()
            if var in private and len(values) == 1 and var not in escaped
        }
    return found


def _debug_set(t: FunctionTranslator, set_id: int) -> bool:
    name = t.module.ext_inst_imports.get(set_id, "")
    return name == "OpenCL.DebugInfo.100" or name.startswith("NonSemantic.")


def enabled(t: FunctionTranslator) -> bool:
    return bool(getattr(t.mt.abi, "checked", False))


def _table_word(b: ir.IRBuilder, table: ir.Value, index: int | ir.Value) -> ir.Value:
    if isinstance(index, int):
        index = ir.Constant(I64, index)
    return b.gep(table, [index], source_etype=I64)


def _invariant(b: ir.IRBuilder, address: ir.Value) -> ir.Value:
    """A load of a check-table word the host wrote before the launch: marked invariant,
    so that LLVM hoists it out of loops although the kernel's stores might alias it."""
    value = b.load(address, typ=I64)
    value.set_metadata("invariant.load", b.module.add_metadata([]))
    return value


def _origin(t: FunctionTranslator, pointer_id: int):
    """(kind, which) of the pointer's origin, or None when it is not known statically."""
    pid = pointer_id
    first_param = None  # the parameter of the function being translated, when followed
    for _ in range(64):
        inst = t.module.defs.get(pid)
        if inst is None:
            return None
        if inst.opname in _CASTS:
            pid = inst.operands[0]
            continue
        source = _round_trip_source(t, inst) or _spilled_value(t, inst)
        if source is not None:
            pid = source
            continue
        if inst.opname == "OpFunctionParameter":
            owner, calls, entries = _call_graph(t)
            fn = owner.get(pid)
            if fn is None:
                return None
            position = [p.result_id for p in fn.parameters].index(pid)
            if fn.id in entries:
                return ("argument", position, first_param or pid)
            # A helper called once, from a kernel (llvm-spirv wraps each kernel so):
            # its parameter is the caller's argument.
            sites = calls.get(fn.id, [])
            if len(sites) != 1:
                return None
            first_param = first_param or pid
            pid = sites[0].operands[1 + position]
            continue
        if inst.opname == "OpVariable":
            if t.mt.is_builtin_variable(pid):
                return None
            if first_param is not None and inst.operands[0] == StorageClass.Function:
                return None  # the caller's private variable: not addressable from here
            return ("variable", pid)
        return None
    return None


def _call_graph(t: FunctionTranslator):
    """(parameter id -> its function, function id -> its call sites, entry function ids)."""
    found = getattr(t.mt, "_check_calls", None)
    if found is None:
        owner, calls = {}, {}
        for fn in t.module.functions:
            for param in fn.parameters:
                owner[param.result_id] = fn
            for block in fn.blocks:
                for inst in block.instructions:
                    if inst.opname == "OpFunctionCall":
                        calls.setdefault(inst.operands[0], []).append(inst)
        entries = {ep.function_id for ep in t.module.entry_points}
        found = t.mt._check_calls = (owner, calls, entries)
    return found


def _storage_class(t: FunctionTranslator, pointer_id: int) -> int | None:
    spv = t.types.spv(t.type_of(pointer_id))
    return spv.storage if spv.kind == "pointer" else None


def _memory(t: FunctionTranslator, pointer_id: int) -> int | None:
    """The storage class of the memory a pointer addresses: its own, or for a ``Generic``
    pointer, the one every pointer it can have been cast from has (HIP reaches
    ``__shared__`` variables and buffers through generic pointers), found through casts,
    phis, selects and the call sites of helper functions; else ``Generic``."""
    storage = _storage_class(t, pointer_id)
    if storage != StorageClass.Generic:
        return storage
    owner, calls, entries = _call_graph(t)
    found: set[int] = set()
    seen: set[int] = set()
    work = [pointer_id]
    while work:
        pid = work.pop()
        if pid in seen:
            continue
        seen.add(pid)
        storage = _storage_class(t, pid)
        if storage is not None and storage != StorageClass.Generic:
            found.add(storage)
            continue
        inst = t.module.defs.get(pid)
        if inst is None or len(seen) > 256:
            return StorageClass.Generic
        source = _round_trip_source(t, inst)
        if inst.opname in _CASTS:
            work.append(inst.operands[0])
        elif source is not None:
            work.append(source)
        elif inst.opname == "OpPhi":
            work.extend(inst.operands[0::2])
        elif inst.opname == "OpSelect":
            work.extend(inst.operands[1:3])
        elif inst.opname == "OpFunctionParameter" and pid in owner:
            fn = owner[pid]
            sites = calls.get(fn.id, [])
            if fn.id in entries or not sites:
                return StorageClass.Generic  # the host's pointer: anything
            position = [p.result_id for p in fn.parameters].index(pid)
            work.extend(site.operands[1 + position] for site in sites)
        else:
            return StorageClass.Generic  # loaded, returned by a call, a constant
    return found.pop() if len(found) == 1 else StorageClass.Generic


def _extent(t: FunctionTranslator, pointer_id: int):
    """(kind, which, base pointer, extent) for a pointer of known origin, else None."""
    origin = _origin(t, pointer_id)
    if origin is None:
        return None
    b = t.b
    table = t.mt.abi.check_table(b, t.hidden)
    if origin[0] == "argument":
        index, param = origin[1], origin[2]
        storage = _storage_class(t, param)
        if _by_value(t, param):
            # A struct passed by value (HIP's are UniformConstant pointers): the kernel's
            # own copy, as large as its type; the check table has no buffer for it.
            pointee = t.llvm_type(t.types.spv(t.type_of(param)).element)
            size = pointee.get_abi_size(t.mt.target_data)
            return KIND_ARGUMENT, index, t.value(param), ir.Constant(I64, size)
        extent = _invariant(b, _table_word(b, table, CHECK_ARGS + 2 * index + 1))
        if storage == StorageClass.Workgroup:
            base = t.value(param)  # the argument's block in the group's local memory
        elif storage in _GLOBAL_CLASSES:
            base = _invariant(b, _table_word(b, table, CHECK_ARGS + 2 * index))
        else:
            return None
        return KIND_ARGUMENT, index, base, extent
    var = origin[1]
    value = t.value(var)
    if not isinstance(value, ir.Value) or not isinstance(value.type, ir.PointerType):
        return None
    pointee = t.llvm_type(t.types.spv(t.type_of(var)).element)
    size = pointee.get_abi_size(t.mt.target_data)
    return KIND_VARIABLE, var, value, ir.Constant(I64, size)


def _by_value(t: FunctionTranslator, param: int) -> bool:
    return any(
        d.operands[0] == FunctionParameterAttribute.ByVal
        for d in t.module.decorations_of(param, Decoration.FuncParamAttr)
    )


def _lines(t: FunctionTranslator) -> dict:
    from ..debuginfo import line_table

    lines = getattr(t.mt, "_check_lines", None)
    if lines is None:
        lines = t.mt._check_lines = line_table(t.module)
    return lines


def _location(t: FunctionTranslator) -> tuple[int, int, int, int]:
    """(file, line, column) of the instruction being translated (zeros without line
    information), and ``_call_site``'s word."""
    inst = t.current
    here = _lines(t).get(inst.offset, (0, 0, 0)) if inst is not None else (0, 0, 0)
    return (*here, _call_site(t))


def _call_site(t: FunctionTranslator) -> int:
    """In a helper function: where the kernel calls it (directly, or through helpers),
    packed as ``file << 40 | line << 16 | column``, when each function on the way has one
    call site (so the place is known without a run-time stack); the outermost call with
    line information (a producer's entry wrapper has none). 0 in a kernel or else."""
    owner, calls, entries = _call_graph(t)
    caller_of = getattr(t.mt, "_check_call_owner", None)
    if caller_of is None:
        caller_of = t.mt._check_call_owner = {
            id(inst): fn.id for fn in t.module.functions for inst in _body(fn)
        }
    lines = _lines(t)
    found, fn_id = (0, 0, 0), t.fn.id
    for _ in range(16):
        if fn_id in entries:
            break
        sites = calls.get(fn_id, [])
        if len(sites) != 1 or id(sites[0]) not in caller_of:
            return 0
        found = lines.get(sites[0].offset, (0, 0, 0)) if sites[0].offset in lines else found
        fn_id = caller_of[id(sites[0])]
    file, line, column = found
    if not line:
        return 0
    return file << 40 | min(line, (1 << 24) - 1) << 16 | min(column, (1 << 16) - 1)


def _body(fn):
    return (inst for block in fn.blocks for inst in block.instructions)


# Words a report takes (``fail_function``'s after the table).
FAIL_WORDS = 11


def fail_function(module: ir.Module, abi) -> ir.Function:
    """``spirvjit.check.fail(table, kind, which, offset, size, store, file, line, column,
    address, extent, caller, hidden...)``: records the first violation and aborts the launch."""
    name = "spirvjit.check.fail"
    if name in module.globals:
        return module.globals[name]
    hidden = abi.hidden_parameters()
    words_ty = [I64] * FAIL_WORDS
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, *words_ty, *hidden]), name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    fn.attributes.add("cold")
    table, *words = fn.args[: 1 + FAIL_WORDS]
    fn_hidden = list(fn.args[1 + FAIL_WORDS :])
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    first = fn.append_basic_block("first")
    done = fn.append_basic_block("done")
    won = b.cmpxchg(
        _table_word(b, table, R_FLAG),
        ir.Constant(I64, 0),
        ir.Constant(I64, 1),
        "monotonic",
        "monotonic",
    )
    b.cbranch(b.extract_value(won, 1), first, done)
    b.position_at_end(first)
    indices = (
        R_KIND,
        R_WHICH,
        R_OFFSET,
        R_SIZE,
        R_STORE,
        R_FILE,
        R_LINE,
        R_COLUMN,
        R_ADDRESS,
        R_EXTENT,
        R_CALLER,
    )
    for index, value in zip(indices, words, strict=True):
        b.store(value, _table_word(b, table, index))
    for d in range(3):
        for base, query in ((R_GID, "global_id"), (R_LID, "local_id")):
            b.store(abi.workitem(b, fn_hidden, query, d), _table_word(b, table, base + d))
    abort = b.inttoptr(b.load(_table_word(b, table, W_ABORT), typ=I64), PTR)
    b.atomic_rmw("xchg", abort, ir.Constant(I64, 1), "monotonic")
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn


def _any_buffer(t: FunctionTranslator, table: ir.Value, address: ir.Value, size: ir.Value):
    """i1: [address, address + size) lies inside some buffer argument or program-scope
    variable."""
    b = t.b
    ok = ir.Constant(I1, 0)
    for inst in t.module.globals:
        if inst.opname == "OpVariable" and inst.operands[0] in _GLOBAL_CLASSES:
            gv = t.value(inst.result_id)
            if isinstance(gv, ir.Value):
                ty = t.llvm_type(t.types.spv(inst.result_type).element)
                extent = ir.Constant(I64, ty.get_abi_size(t.mt.target_data))
                ok = b.or_(ok, _inside(b, address, size, b.ptrtoint(gv, I64), extent))
    # The arguments: a loop, their number is the host's.
    count = _invariant(b, _table_word(b, table, W_NARGS))

    def any_argument(found: ir.Value, i: ir.Value) -> ir.Value:
        word = b.add(ir.Constant(I64, CHECK_ARGS), b.shl(i, ir.Constant(I64, 1)))
        base = _invariant(b, _table_word(b, table, word))
        extent = _invariant(b, _table_word(b, table, b.add(word, ir.Constant(I64, 1))))
        inside = b.and_(
            b.icmp_unsigned("!=", base, ir.Constant(I64, 0)),
            _inside(b, address, size, base, extent),
        )
        return b.or_(found, inside)

    return fold_range(b, "chk.any", ir.Constant(I64, 0), count, ok, any_argument)


def fold_range(b: ir.IRBuilder, name: str, start, count, init: ir.Value, step) -> ir.Value:
    """An IR loop over i in [start, count) that folds ``acc = step(acc, i)`` from ``init``
    (branch-free bodies, which LLVM vectorizes); returns the final ``acc``, the builder
    after the loop."""
    fn = b.function
    entry = b.block
    head = fn.append_basic_block(f"{name}.head")
    body = fn.append_basic_block(f"{name}.body")
    out = fn.append_basic_block(f"{name}.exit")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64)
    acc = b.phi(init.type)
    i.add_incoming(start, entry)
    acc.add_incoming(init, entry)
    b.cbranch(b.icmp_unsigned("<", i, count), body, out)
    b.position_at_end(body)
    folded = step(acc, i)
    i.add_incoming(b.add(i, ir.Constant(I64, 1)), b.block)
    acc.add_incoming(folded, b.block)
    b.branch(head)
    b.position_at_end(out)
    return acc


def _inside(b: ir.IRBuilder, address, size, base, extent) -> ir.Value:
    offset = b.sub(address, base)
    fits = b.icmp_unsigned("<=", size, extent)
    return b.and_(fits, b.icmp_unsigned("<=", offset, b.sub(extent, size)))


def guarded(
    t: FunctionTranslator,
    pointer_id: int,
    pointer: ir.Value,
    size: int | ir.Value,
    store: bool,
    access,
    result_type: ir.Type | None = None,
    *,
    at_id: bool = True,
):
    """Runs ``access()`` (which emits the access and returns its value, or None) only
    when ``size`` bytes at ``pointer`` lie inside the pointer's extent; otherwise records
    the violation. Returns the access's value (zero after a violation).

    ``pointer_id`` names the SPIR-V pointer the access goes through: its origin gives the
    extent. With ``at_id`` false, ``pointer`` is an address computed from that pointer
    (an OpenCL ``vload``/``vstore`` at ``p + offset * n``): the static and hoisted paths,
    which reason from the id's own access chain, do not apply, only the per-item check of
    ``pointer`` itself."""
    if not enabled(t) or not isinstance(pointer, ir.Value):
        return access()
    if _memory(t, pointer_id) == StorageClass.Workgroup and _shadow_on(t):
        access = _tracked(t, pointer_id, pointer, size, store, access)
    if at_id and isinstance(size, int) and _statically_inside(t, pointer_id, size):
        return access()  # e.g. a private scalar, or a constant index into a local array
    b = t.b
    hoisted = at_id and isinstance(size, int) and _hoist(t, pointer_id, size)
    fn = b.function
    good = fn.append_basic_block("chk.ok") if hoisted else None
    if hoisted:
        # The group's whole range was checked before its first work-item ran: where it
        # held, nothing of the per-item check runs (the branch folds to a constant in the
        # copy of the loops that sets the flag, and the vectorizer, vectorize.py, drops
        # the other side), else the per-item check below.
        per_item = fn.append_basic_block("chk.item")
        b.cbranch(_group_checked(t), good, per_item)
        b.position_at_end(per_item)
    size = ir.Constant(I64, size) if isinstance(size, int) else size
    if size.type != I64:
        size = b.zext(size, I64)
    table = t.mt.abi.check_table(b, t.hidden)
    address = b.ptrtoint(pointer, I64)
    known = _extent(t, pointer_id)
    if known is not None:
        kind, which, base, extent = known
        base = base if base.type == I64 else b.ptrtoint(base, I64)
        ok = _inside(b, address, size, base, extent)
        offset = b.sub(address, base)
    else:
        storage = _storage_class(t, pointer_id)
        if storage in _GLOBAL_CLASSES:
            kind, which, extent = KIND_ANY_GLOBAL, 0, ir.Constant(I64, 0)
            ok = _any_buffer(t, table, address, size)
        elif storage == StorageClass.Workgroup:
            kind, which = KIND_ANY_LOCAL, 0
            base = b.ptrtoint(t.mt.abi.workgroup_address(b, t.hidden, 0), I64)
            extent = _invariant(b, _table_word(b, table, W_LOCAL_BYTES))
            ok = _inside(b, address, size, base, extent)
        else:
            if good is not None:  # no per-item check for such a pointer
                b.branch(good)
                b.position_at_end(good)
            return access()
        offset = ir.Constant(I64, 0)
    if good is None:
        good = fn.append_basic_block("chk.ok")
    bad = fn.append_basic_block("chk.bad")
    join = fn.append_basic_block("chk.join")
    b.cbranch(ok, good, bad)
    b.position_at_end(bad)
    file, line, column, caller = _location(t)
    b.call(
        fail_function(t.mt.llmodule, t.mt.abi),
        [
            table,
            ir.Constant(I64, kind),
            ir.Constant(I64, which),
            offset,
            size,
            ir.Constant(I64, int(store)),
            ir.Constant(I64, file),
            ir.Constant(I64, line),
            ir.Constant(I64, column),
            address,
            extent,
            ir.Constant(I64, caller),
            *t.hidden,
        ],
    )
    b.branch(join)
    b.position_at_end(good)
    value = access()
    good_end = b.block
    b.branch(join)
    b.position_at_end(join)
    if value is None:
        return None
    phi = b.phi(value.type)
    phi.add_incoming(value, good_end)
    phi.add_incoming(ir.Constant(value.type, None), bad)
    return phi


def report_flag(b: ir.IRBuilder, abi, ctx: ir.Value) -> ir.Value:
    """i64: the launch's report flag now (non-zero once a violation was recorded)."""
    return report_flag_at(b, abi.check_table(b, [ctx]))


def yield_later_report(
    b: ir.IRBuilder, table: ir.Value, before: ir.Value, index: ir.Value, local_sizes, starts
) -> None:
    """Before a report found after a region of a barrier kernel (the group's ``index``-th
    work-item's): a report made since ``before`` (the flag when the region began) by a
    later work-item of the same group is withdrawn, so that ``fail`` records the earlier
    one, as checks made during the region in work-item order would have."""
    now = report_flag_at(b, table)
    lid = [b.load(_table_word(b, table, R_LID + d), typ=I64) for d in range(3)]
    gid = [b.load(_table_word(b, table, R_GID + d), typ=I64) for d in range(3)]
    later = b.and_(
        b.icmp_unsigned("==", before, ir.Constant(I64, 0)),
        b.icmp_unsigned("!=", now, ir.Constant(I64, 0)),
    )
    for d in range(3):
        later = b.and_(later, b.icmp_unsigned("==", b.sub(gid[d], lid[d]), starts[d]))
    linear = b.add(lid[0], b.mul(local_sizes[0], b.add(lid[1], b.mul(local_sizes[1], lid[2]))))
    later = b.and_(later, b.icmp_unsigned(">", linear, index))
    with b.if_then(later, likely=False):
        b.atomic_rmw("xchg", _table_word(b, table, R_FLAG), ir.Constant(I64, 0), "monotonic")


def report_flag_at(b: ir.IRBuilder, table: ir.Value) -> ir.Value:
    return b.load_atomic(_table_word(b, table, R_FLAG), "monotonic", 8, typ=I64)


# ----- checks hoisted out of the work-item loop ------------------------------------------
#
# An access whose byte offset from its array is an affine function of the work-item's ids
# (e.g. ``x[get_global_id(0)]``, ``tile[ly * 16 + lx]``, ``a[y * width + x - 1]``) touches,
# over one work-group, offsets between two bounds that only depend on the group. The
# kernel's ``<name>.chk.ranges`` function (built here, one condition per such access)
# computes those bounds from the kernel's arguments and the group's ids and says whether
# every one lies inside its array. The work-group function (backends/cpu/abi.py) calls it
# once per group and runs the group's work-item loops in one of two copies: where it held,
# with the flag ``abi.check_fast_slot`` set, which turns those accesses' checks into
# constants (no branch: the loops vectorize as unchecked code does); else with the flag
# clear, every access checked per work-item as before. A violation is therefore always
# found by the per-item check, in the same work-item order, with the same report.
#
# Soundness: the bounds are computed in 64 bits from the SPIR-V expression, and each
# intermediate value is required (at run time, as part of the condition) to stay in a
# range where the kernel's narrower arithmetic cannot have wrapped: a value of w < 64 bits
# in [-2^(w-1), 2^(w-1)), a 64-bit one in [-2^62, 2^62), a factor of a product within
# +-2^31, a zero-extended value non-negative, a truncated one in [0, 2^(w-1)). Outside
# those ranges the condition is false and the group takes the checked copy.

RANGES_SUFFIX = ".chk.ranges"
_ARITH = frozenset(
    {
        "OpIAdd",
        "OpISub",
        "OpIMul",
        "OpShiftLeftLogical",
        "OpSNegate",
        "OpSConvert",
        "OpUConvert",
        "OpBitcast",
        "OpCopyObject",
    }
)
_UNIFORM_BUILTINS = {
    "WorkgroupId": "group_id",
    "GlobalSize": "global_size",
    "WorkgroupSize": "local_size",
    "EnqueuedWorkgroupSize": "enqueued_local_size",
    "NumWorkgroups": "num_groups",
    "GlobalOffset": "global_offset",
}
_MAX_STRIDE = 1 << 14
_MAX_INDEX = 1 << 47


def _bound(width: int) -> int:
    return 1 << 62 if width >= 64 else 1 << (width - 1)


def _int_width(t: FunctionTranslator, value_id: int) -> int | None:
    spv = t.types.spv(t.type_of(value_id))
    return spv.width if spv.kind == "int" else None


def _chain_terms(t: FunctionTranslator, pointer_id: int):
    """(origin id, [(index id, stride in bytes)], constant byte offset) of a pointer made of
    access chains and casts from a variable or a parameter, or None (a struct member, a
    pointer of another origin)."""
    terms: list[tuple[int, int]] = []
    pid = pointer_id
    for _ in range(64):
        inst = t.module.defs.get(pid)
        if inst is None:
            return None
        op = inst.opname
        if op in ("OpBitcast", "OpCopyObject", "OpPtrCastToGeneric", "OpGenericCastToPtr"):
            pid = inst.operands[0]
            continue
        source = _round_trip_source(t, inst)
        if source is not None:
            pid = source
            continue
        if op in (
            "OpPtrAccessChain",
            "OpInBoundsPtrAccessChain",
            "OpAccessChain",
            "OpInBoundsAccessChain",
        ):
            base = inst.operands[0]
            spv = t.types.spv(t.type_of(base))
            if spv.kind != "pointer":
                return None
            current = spv.element
            indices = list(inst.operands[1:])
            if op.endswith("PtrAccessChain"):
                stride = t.llvm_type(current).get_abi_size(t.mt.target_data)
                terms.append((indices.pop(0), stride))
            for index in indices:
                spv = t.types.spv(current)
                if spv.kind not in ("array", "vector"):
                    return None  # struct members: not followed
                current = spv.element
                terms.append((index, t.llvm_type(current).get_abi_size(t.mt.target_data)))
            pid = base
            continue
        if op in ("OpVariable", "OpFunctionParameter"):
            return pid, terms
        if op == "OpPhi":
            found = _pointer_induction(t, inst)
            if found is None:
                return None
            pid, term = found
            terms.append(term)
            continue
        return None
    return None


def _original_blocks(t: FunctionTranslator) -> dict:
    """label -> block of the function as the module has it (a barrier kernel's step
    function has its blocks split at the barriers; the phis' instructions are these)."""
    blocks = getattr(t, "_check_blocks", None)
    if blocks is None:
        original = next((f for f in t.module.functions if f.id == t.fn.id), t.fn)
        blocks = t._check_blocks = {block.label_id: block for block in original.blocks}
    return blocks


def _constant(t: FunctionTranslator, value_id: int) -> int | None:
    """A scalar integer constant's value, signed by its width; None for anything else."""
    inst = t.module.defs.get(value_id)
    width = _int_width(t, value_id)
    if inst is None or inst.opname not in ("OpConstant", "OpConstantNull") or width is None:
        return None
    value = t.mt.constants.int_value(value_id)
    return value - (1 << width) if value >= 1 << (width - 1) else value


def _strip_bitcasts(t: FunctionTranslator, value_id: int) -> int:
    inst = t.module.defs.get(value_id)
    while inst is not None and inst.opname == "OpBitcast":
        value_id = inst.operands[0]
        inst = t.module.defs.get(value_id)
    return value_id


def _counter(t: FunctionTranslator, header: int, latch: int):
    """The loop counter of this header and latch: (start id, step d, end id, next id) for
    ``c = phi(start, c + d)`` (d a constant) whose back edge is taken while
    ``c + d != end``; or (start id, d, None, phi id) when it is taken while
    ``c + d < bound`` (the phi's own range then bounds it); None without one."""
    blocks = _original_blocks(t)
    block, end = blocks.get(header), blocks.get(latch)
    if block is None or end is None or not end.instructions:
        return None
    branch = end.instructions[-1]
    if branch.opname != "OpBranchConditional":
        return None
    cond = t.module.defs.get(branch.operands[0])
    if cond is None:
        return None
    for phi in block.instructions:
        if phi.opname != "OpPhi" or len(phi.operands) != 4 or _int_width(t, phi.result_id) is None:
            continue
        ops = phi.operands
        if latch not in (ops[1], ops[3]):
            continue
        nxt, start = (ops[0], ops[2]) if ops[1] == latch else (ops[2], ops[0])
        add = t.module.defs.get(nxt)
        if add is None or add.opname != "OpIAdd" or phi.result_id not in add.operands:
            continue
        step = add.operands[1] if add.operands[0] == phi.result_id else add.operands[0]
        d = _constant(t, step)
        if not d or nxt not in cond.operands:
            continue
        if cond.opname in ("OpIEqual", "OpINotEqual"):
            # IEqual: the back edge is the false edge; INotEqual: the true one.
            back, out = branch.operands[1:3]
            if cond.opname == "OpIEqual":
                back, out = out, back
            if back != header or out == header:
                continue
            other = cond.operands[1] if cond.operands[0] == nxt else cond.operands[0]
            return start, d, other, nxt
        return start, d, None, phi.result_id  # perhaps a `<` test: see _induction
    return None


def _pointer_induction(t: FunctionTranslator, inst):
    """(init pointer, term) for ``p = phi(init, p + s)`` (an access chain by s, through
    bitcasts) in a loop with a counter (``_counter``): p is init plus 0..trips-1 steps.
    The term's index is ("induction", header, latch, s id), bounded at run time."""
    ops = inst.operands
    if len(ops) != 4:
        return None
    blocks = _original_blocks(t)
    header = next((label for label, bl in blocks.items() if inst in bl.instructions), None)
    if header is None:
        return None
    for at in (0, 2):
        step = t.module.defs.get(_strip_bitcasts(t, ops[at]))
        if step is None or step.opname not in ("OpPtrAccessChain", "OpInBoundsPtrAccessChain"):
            continue
        if len(step.operands) != 2 or _strip_bitcasts(t, step.operands[0]) != inst.result_id:
            continue
        if _counter(t, header, ops[at + 1]) is None:
            return None
        spv = t.types.spv(t.type_of(step.operands[0]))
        stride = t.llvm_type(spv.element).get_abi_size(t.mt.target_data)
        return ops[2 - at], (("induction", header, ops[at + 1], step.operands[1]), stride)
    return None


def _statically_inside(t: FunctionTranslator, pointer_id: int, size: int) -> bool:
    """Whether the access provably lies inside a variable: constant indices into a
    private, ``__local`` or program-scope variable (a private scalar: no index at all)."""
    found = _chain_terms(t, pointer_id)
    if found is None:
        return False
    origin, terms = found
    inst = t.module.defs.get(origin)
    if inst.opname != "OpVariable" or t.mt.is_builtin_variable(origin):
        return False
    value = t.value(origin)
    if not isinstance(value, ir.Value) or not isinstance(value.type, ir.PointerType):
        return False
    lo = hi = 0
    for index, stride in terms:
        value = None if isinstance(index, tuple) else _constant(t, index)
        if value is None:  # a pointer induction, a variable index
            return False
        lo, hi = lo + value * stride, hi + value * stride  # access chain indices are signed
    extent = t.llvm_type(t.types.spv(t.type_of(origin)).element).get_abi_size(t.mt.target_data)
    return lo >= 0 and hi + size <= extent


class _GroupRanges:
    """The kernel's ``.chk.ranges`` function, under construction: it returns whether every
    hoisted access of the kernel stays inside its array for the whole work-group."""

    def __init__(self, t: FunctionTranslator):
        llfn = t.llfn
        n = len(t.fn.parameters)
        types = [arg.type for arg in llfn.args[:n]] + [PTR]
        module = t.mt.llmodule
        fn = ir.Function(module, ir.FunctionType(I1, types), llfn.name + RANGES_SUFFIX)
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        entry = fn.append_basic_block("entry")
        done = fn.append_basic_block("done")
        b = ir.IRBuilder(entry)
        self.flag = b.alloca(I1, name="all.inside")
        self.flag.type = PTR  # opaque pointers: llvmlite's alloca is typed
        b.store(ir.Constant(I1, 1), self.flag)
        jump = b.branch(done)
        b.position_at_end(done)
        b.ret(b.load(self.flag, typ=I1))
        self.b = ir.IRBuilder(entry)
        self.b.position_before(jump)
        self.params = {p.result_id: arg for p, arg in zip(t.fn.parameters, fn.args, strict=False)}
        self.ctx = fn.args[-1]
        self.abi = t.mt.abi
        self.cache: dict[int, tuple | None] = {}

    # The values are (lo, hi, conditions): i64 bounds and the i1 values that must hold
    # for them to be the kernel's values (see above).

    def _const(self, value: int):
        return ir.Constant(I64, value), ir.Constant(I64, value), []

    def _within(self, lo, hi, low: int, high: int) -> list:
        b = self.b
        return [
            b.icmp_signed(">=", lo, ir.Constant(I64, low)),
            b.icmp_signed("<", hi, ir.Constant(I64, high)),
        ]

    def _workitem(self, name: str, dim: int):
        return self.abi.workitem(self.b, [self.ctx], name, dim)

    def _builtin(self, t: FunctionTranslator, var: int, dim: int):
        name = t.mt.builtin_of(var)
        b = self.b
        if name == "GlobalInvocationId":
            lo = b.add(
                b.mul(self._workitem("group_id", dim), self._workitem("enqueued_local_size", dim)),
                self._workitem("global_offset", dim),
            )
            last = b.sub(self._workitem("local_size", dim), ir.Constant(I64, 1))
            return lo, b.add(lo, last), []
        if name == "LocalInvocationId":
            last = b.sub(self._workitem("local_size", dim), ir.Constant(I64, 1))
            return ir.Constant(I64, 0), last, []
        query = _UNIFORM_BUILTINS.get(name)
        if query is None:
            return None
        value = self._workitem(query, dim)
        return value, value, []

    def value(self, t: FunctionTranslator, value_id: int):
        if value_id not in self.cache:
            self.cache[value_id] = None  # a cycle through phis: not affine
            self.cache[value_id] = self._value(t, value_id)
        return self.cache[value_id]

    def _sign_extension(self, t: FunctionTranslator, inst, width: int):
        """``(x << k) >> j`` (arithmetic, j <= k): x * 2^(k - j), when x fits in
        width - k signed bits (clang's sign extension of a 32-bit index, times a size)."""
        inner = t.module.defs.get(inst.operands[0])
        if inner is None or inner.opname != "OpShiftLeftLogical":
            return None
        right, left = _constant(t, inst.operands[1]), _constant(t, inner.operands[1])
        if right is None or left is None or not 0 < right <= left < width - 1:
            return None
        found = self.value(t, inner.operands[0])
        if found is None or _int_width(t, inner.operands[0]) != width:
            return None
        lo, hi, conds = found
        bound = 1 << (width - 1 - left)
        conds = conds + self._within(lo, hi, -bound, min(bound, _bound(64)))
        factor = ir.Constant(I64, 1 << (left - right))
        return self.b.mul(lo, factor), self.b.mul(hi, factor), conds

    def _steps(self, t: FunctionTranslator, header: int, latch: int, step: int):
        """The range of k * step over the k = 0..trips-1 back edges of a loop."""
        counter = _counter(t, header, latch)
        found = self.value(t, step)
        if counter is None or found is None:
            return None
        start, d, end, other = counter
        b = self.b
        c0 = self.value(t, start)
        if c0 is None:
            return None
        conds = list(c0[2]) + list(found[2])
        if end is not None:  # back edge while c + d != end: d = +-1, or all constants
            e = self.value(t, end)
            if e is None:
                return None
            conds += e[2]
            first, last = (_constant(t, start), _constant(t, end))
            if first is not None and last is not None:
                if (last - first) % d or (last - first) // d < 1:
                    return None
                trips = ir.Constant(I64, (last - first) // d)
            elif d == 1:  # start < end for every work-item; at most end - start trips
                conds.append(b.icmp_signed("<", c0[1], e[0]))
                trips = b.sub(e[1], c0[0])
            elif d == -1:
                conds.append(b.icmp_signed(">", c0[0], e[1]))
                trips = b.sub(c0[1], e[0])
            else:
                return None
        else:  # back edge while c + d < bound: c's own range (_induction) bounds it
            if d < 1:
                return None
            inst = t.module.defs.get(other)
            counted = self._induction(t, inst, _int_width(t, other))
            if counted is None:
                return None
            conds += counted[2]
            span = b.sub(counted[1], c0[0])
            trips = b.add(b.sdiv(span, ir.Constant(I64, d)), ir.Constant(I64, 1))
        most = b.sub(trips, ir.Constant(I64, 1))  # back edges per entry, at most
        conds += self._within(most, most, 0, 1 << 31)
        conds += self._within(found[0], found[1], -(1 << 31), 1 << 31)
        low, high = b.mul(most, found[0]), b.mul(most, found[1])
        zero = ir.Constant(I64, 0)
        low = b.select(b.icmp_signed("<", low, zero), low, zero)
        high = b.select(b.icmp_signed(">", high, zero), high, zero)
        return low, high, conds

    def _merge(self, t: FunctionTranslator, inst):
        """A phi that is not a loop's: one of its incoming values (a cycle through the
        phi itself makes one of them None)."""
        parts = [self.value(t, v) for v in inst.operands[0::2]]
        if not parts or any(part is None for part in parts):
            return None
        b = self.b
        lo, hi, conds = parts[0][0], parts[0][1], list(parts[0][2])
        for part in parts[1:]:
            lo = b.select(b.icmp_signed("<", part[0], lo), part[0], lo)
            hi = b.select(b.icmp_signed(">", part[1], hi), part[1], hi)
            conds += part[2]
        return lo, hi, conds

    def _induction(self, t: FunctionTranslator, inst, width: int):
        """A loop counter ``p = phi(init, next)``, ``next = p + step`` (step >= 1), whose
        back edge is taken only when ``next < bound``: p is init, or a next below bound."""
        ops = inst.operands
        if len(ops) != 4:
            return None
        blocks = _original_blocks(t)
        header = next((bl for bl in blocks.values() if inst in bl.instructions), None)
        for step_at in (0, 2):
            nxt, latch = ops[step_at], ops[step_at + 1]
            init = ops[2 - step_at]
            add = t.module.defs.get(nxt)
            if add is None or add.opname != "OpIAdd" or inst.result_id not in add.operands:
                continue
            step = add.operands[1] if add.operands[0] == inst.result_id else add.operands[0]
            block = blocks.get(latch)
            if header is None or block is None or not block.instructions:
                continue
            branch = block.instructions[-1]
            if branch.opname != "OpBranchConditional":
                continue
            cond_id, on_true, on_false = branch.operands[:3]
            if on_true != header.label_id or on_false == header.label_id:
                continue
            cond = t.module.defs.get(cond_id)
            if cond is None:
                continue
            pairs = {
                "OpSLessThan": (0, 1, 0, False),
                "OpULessThan": (0, 1, 0, True),
                "OpSLessThanEqual": (0, 1, 1, False),
                "OpULessThanEqual": (0, 1, 1, True),
                "OpSGreaterThan": (1, 0, 0, False),
                "OpUGreaterThan": (1, 0, 0, True),
            }
            shape = pairs.get(cond.opname)
            if shape is None or cond.operands[shape[0]] != nxt:
                continue
            parts = [self.value(t, v) for v in (init, step, cond.operands[shape[1]])]
            if any(part is None for part in parts):
                return None
            (init_lo, init_hi, c1), (step_lo, step_hi, c2), (b_lo, b_hi, c3) = parts
            b = self.b
            last = b.add(b_hi, ir.Constant(I64, shape[2] - 1))  # the largest p after a step
            first, d = _constant(t, init), _constant(t, step)
            if first is not None and d is not None and d > 0:
                # p = first + k d: the largest such value not above last.
                span = b.sub(last, ir.Constant(I64, first))
                zero = ir.Constant(I64, 0)
                span = b.select(b.icmp_signed("<", span, zero), zero, span)
                steps = b.sdiv(span, ir.Constant(I64, d))
                last = b.add(ir.Constant(I64, first), b.mul(steps, ir.Constant(I64, d)))
            hi = b.select(b.icmp_signed(">", last, init_hi), last, init_hi)
            conds = c1 + c2 + c3 + self._within(step_lo, step_hi, 1, 1 << 31)
            # next = p + step must not wrap (p <= hi), else next < bound says nothing.
            conds += self._within(init_lo, b.add(hi, step_hi), -_bound(width), _bound(width))
            if shape[3]:  # an unsigned comparison: every value involved is non-negative
                conds += self._within(init_lo, init_hi, 0, _bound(64))
                conds += self._within(b_lo, b_hi, 0, _bound(64))
            return init_lo, hi, conds
        return None

    def _value(self, t: FunctionTranslator, value_id: int):
        width = _int_width(t, value_id)
        inst = t.module.defs.get(value_id)
        if width is None or inst is None:
            return None
        b = self.b
        op = inst.opname
        if op in ("OpConstant", "OpConstantNull", "OpSpecConstant"):
            value = t.mt.constants.int_value(value_id)
            return self._const(value - (1 << width) if value >= 1 << (width - 1) else value)
        if op == "OpFunctionParameter":
            arg = self.params.get(value_id)
            if arg is None:
                return None
            value = b.sext(arg, I64) if width < 64 else arg
            return value, value, self._within(value, value, -_bound(64), _bound(64))
        if op == "OpCompositeExtract" and len(inst.operands) == 2:
            loaded = t.module.defs.get(inst.operands[0])
            if loaded is None or loaded.opname != "OpLoad":
                return None
            var = loaded.operands[0]
            if not t.mt.is_builtin_variable(var):
                return None
            return self._builtin(t, var, inst.operands[1])
        if op == "OpLoad":
            found = _chain_terms(t, inst.operands[0])
            var = inst.operands[0] if found is None else found[0]
            if not t.mt.is_builtin_variable(var):
                return None
            chain = t.module.defs.get(inst.operands[0])
            if chain.opname == "OpVariable":
                return self._builtin(t, var, 0)  # a scalar built-in
            indices = chain.operands[1:]
            index = t.module.defs.get(indices[-1]) if len(indices) == 1 else None
            if index is None or index.opname != "OpConstant":
                return None
            return self._builtin(t, var, t.mt.constants.int_value(indices[-1]))
        if op == "OpShiftRightArithmetic":
            return self._sign_extension(t, inst, width)
        if op == "OpPhi":
            return self._induction(t, inst, width) or self._merge(t, inst)
        if op not in _ARITH:
            return None
        operands = [self.value(t, v) for v in inst.operands if not isinstance(v, str)]
        if any(o is None for o in operands):
            return None
        first = operands[0]
        source_width = _int_width(t, inst.operands[0])
        if op in ("OpBitcast", "OpCopyObject"):
            if source_width != width:
                return None
            return first
        lo, hi, conds = first[0], first[1], list(first[2])
        if op == "OpSConvert":
            if width < source_width:
                conds += self._within(lo, hi, -_bound(width), _bound(width))
            return lo, hi, conds
        if op == "OpUConvert":
            if width < source_width:  # a truncation keeps values in [0, 2^(w-1))
                conds += self._within(lo, hi, 0, _bound(width))
            else:  # a zero extension: the value must not be negative
                conds += self._within(lo, hi, 0, _bound(64))
            return lo, hi, conds
        if op == "OpSNegate":
            lo, hi = b.neg(hi), b.neg(lo)
        elif op in ("OpIAdd", "OpISub"):
            second = operands[1]
            conds += second[2]
            if op == "OpIAdd":
                lo, hi = b.add(lo, second[0]), b.add(hi, second[1])
            else:
                lo, hi = b.sub(lo, second[1]), b.sub(hi, second[0])
        elif op == "OpIMul":
            second = operands[1]
            conds += second[2]
            conds += self._within(lo, hi, -(1 << 31), 1 << 31)
            conds += self._within(second[0], second[1], -(1 << 31), 1 << 31)
            corners = [b.mul(x, y) for x in (lo, hi) for y in (second[0], second[1])]
            lo, hi = corners[0], corners[0]
            for corner in corners[1:]:
                lo = b.select(b.icmp_signed("<", corner, lo), corner, lo)
                hi = b.select(b.icmp_signed(">", corner, hi), corner, hi)
        else:  # OpShiftLeftLogical by a constant: a product
            shift = t.module.defs.get(inst.operands[1])
            if shift is None or shift.opname != "OpConstant":
                return None
            amount = t.mt.constants.int_value(inst.operands[1])
            if amount >= 31:
                return None
            conds += self._within(lo, hi, -(1 << 31), 1 << 31)
            factor = ir.Constant(I64, 1 << amount)
            lo, hi = b.mul(lo, factor), b.mul(hi, factor)
        conds += self._within(lo, hi, -_bound(width), _bound(width))
        return lo, hi, conds

    def add_access(self, t: FunctionTranslator, terms, size: int, extent, base_ok) -> bool:
        """Adds the condition that bytes [lo, hi + size) of every work-item's access lie
        in [0, extent); False (nothing added) when an index is not an affine function."""
        b = self.b
        lo, hi, conds = ir.Constant(I64, 0), ir.Constant(I64, 0), []
        for index, stride in terms:
            # A tuple: a pointer induction's steps.
            found = self._steps(t, *index[1:]) if isinstance(index, tuple) else self.value(t, index)
            if found is None or stride > _MAX_STRIDE:
                return False
            conds += found[2] + self._within(found[0], found[1], -_MAX_INDEX, _MAX_INDEX)
            step = ir.Constant(I64, stride)
            lo = b.add(lo, b.mul(found[0], step))
            hi = b.add(hi, b.mul(found[1], step))
        extent = extent(b)
        conds += [
            b.icmp_signed(">=", lo, ir.Constant(I64, 0)),
            b.icmp_signed("<=", b.add(hi, ir.Constant(I64, size)), extent),
        ]
        conds += base_ok(b)
        inside = b.load(self.flag, typ=I1)
        for cond in conds:
            inside = b.and_(inside, cond)
        b.store(inside, self.flag)
        return True


def _hoist(t: FunctionTranslator, pointer_id: int, size: int) -> bool:
    """Whether this access's check is covered by the kernel's group range check (see
    above); adds its condition to the kernel's ``.chk.ranges`` function when it is."""
    owner, calls, entries = _call_graph(t)
    if t.fn.id not in entries or t.fn.id in calls:
        return False  # a helper, or a kernel that another kernel calls
    if getattr(t.mt.abi, "check_fast_slot", None) is None:
        return False
    found = _chain_terms(t, pointer_id)
    if found is None:
        return False
    origin, terms = found
    inst = t.module.defs.get(origin)
    if inst.opname == "OpFunctionParameter":
        if owner.get(origin) is None or owner[origin].id != t.fn.id:
            return False
        index = [p.result_id for p in t.fn.parameters].index(origin)
        storage = _storage_class(t, origin)
        if storage not in (*_GLOBAL_CLASSES, StorageClass.Workgroup):
            return False
        ranges = _ranges(t)
        arg = ranges.params[origin]

        def extent(b: ir.IRBuilder) -> ir.Value:
            table = ranges.abi.check_table(b, [ranges.ctx])
            return _invariant(b, _table_word(b, table, CHECK_ARGS + 2 * index + 1))

        def base_ok(b: ir.IRBuilder) -> list:
            if storage == StorageClass.Workgroup:
                return []  # the base is the argument's block itself
            table = ranges.abi.check_table(b, [ranges.ctx])
            base = _invariant(b, _table_word(b, table, CHECK_ARGS + 2 * index))
            return [
                b.icmp_unsigned("!=", base, ir.Constant(I64, 0)),
                b.icmp_unsigned("==", base, b.ptrtoint(arg, I64)),
            ]

        return ranges.add_access(t, terms, size, extent, base_ok)
    if t.mt.is_builtin_variable(origin):
        return False
    value = t.value(origin)
    if not isinstance(value, ir.Value) or not isinstance(value.type, ir.PointerType):
        return False
    pointee = t.llvm_type(t.types.spv(t.type_of(origin)).element)
    size_of = pointee.get_abi_size(t.mt.target_data)
    return _ranges(t).add_access(t, terms, size, lambda b: ir.Constant(I64, size_of), lambda b: [])


def _ranges(t: FunctionTranslator) -> _GroupRanges:
    ranges = getattr(t, "_check_ranges", None)
    if ranges is None:
        ranges = t._check_ranges = _GroupRanges(t)
    return ranges


def _group_checked(t: FunctionTranslator) -> ir.Value:
    """i1: this group's range check held (the work-group function's flag)."""
    return _fast_bit(t, FAST_RANGES)


def _fast_bit(t: FunctionTranslator, bit: int) -> ir.Value:
    """i1: the work-group function's flag word has ``bit`` set (see ``versioned``)."""
    b = t.b
    flag = b.load(t.mt.abi.check_fast_slot(b, t.hidden[0]), typ=I64)
    return b.icmp_unsigned("!=", b.and_(flag, ir.Constant(I64, bit)), ir.Constant(I64, 0))


def group_ranges(
    b: ir.IRBuilder, module: ir.Module, kernel: ir.Function, kernel_args: list, ctx: ir.Value
) -> ir.Value | None:
    """In a work-group function, before the group's first work-item: clears the group's
    shadow of its local memory (when tracked); returns i1, the kernel's hoisted accesses
    all stay inside their arrays for this group, or None when it has none."""
    reset_group_shadow(b, module, ctx)
    fn = module.globals.get(kernel.name + RANGES_SUFFIX)
    if fn is None:
        return None
    return b.call(fn, [*kernel_args, ctx])


def reset_group_shadow(b: ir.IRBuilder, module: ir.Module, ctx: ir.Value) -> None:
    """Before a group's first work-item: clears its shadow of the local memory, when the
    module tracks it (none of the group's local memory is written yet)."""
    reset = module.globals.get(_SHADOW_RESET)
    if reset is not None:
        b.call(reset, [ctx])


# The flag word's bits: the group's hoisted range checks held; every byte of the group's
# local memory was already written when the region began (barrier kernels, see _Shadow).
FAST_RANGES, FAST_SHADOW_FULL = 1, 2


def versioned(
    b: ir.IRBuilder,
    inside: ir.Value | None,
    flag: ir.Value,
    emit,
    full: ir.Value | None = None,
    fast=None,
) -> None:
    """Emits the group's work-item loops (``emit()``) once per case: with the flag's
    FAST_RANGES bit set where the range check (``inside``) held (``fast()`` instead of
    ``emit()`` when given: e.g. the vectorized loops, which have no per-item checks), else
    clear (per-item checks); ``full`` (i1, a barrier kernel's region): with
    FAST_SHADOW_FULL set where the group's local memory was all written when the region
    began, which turns the region's unset-read checks into constants (no branch left in
    its loops). The flag is always stored: the kernel's checks read it."""

    def run(value: int) -> None:
        b.store(ir.Constant(I64, value), flag)
        (fast if fast is not None and value & FAST_RANGES else emit)()

    def by_shadow(value: int) -> None:
        if full is None:
            run(value)
            return
        with b.if_else(full, likely=True) as (written, partly):
            with written:
                run(value | FAST_SHADOW_FULL)
            with partly:
                run(value)

    if inside is None:
        by_shadow(0)
        return
    with b.if_else(inside, likely=True) as (held, failed):
        with held:
            by_shadow(FAST_RANGES)
        with failed:
            run(0)  # a violation is near: every check per item


# ----- reads of __local memory never written in the group --------------------------------
#
# Each thread's arena (the group's local memory, then the work-item frames) is followed by
# a shadow of the local memory: one byte per byte, at the local address plus the table's
# W_SHADOW word. The work-group function clears it before each group
# (``spirvjit.check.shadow_reset``); every store, copy and atomic to __local memory sets
# its bytes; a load checks that all of its bytes are set, else reports which work-item
# read which element of which __local argument or variable (the load still happens: the
# memory is the group's, only its value is undefined).
#
# Only where every write to __local memory is seen: a module that stores (OpStore, copies,
# atomics, vstore built-ins) through a generic pointer of unknown memory, writes __local
# memory with the math built-ins that return a result through a pointer or with async
# copies, or hands a __local or generic pointer to a function without a body, is not
# tracked (its reads would be reported falsely).

# OpenCL.std math built-ins that write a result through a pointer operand: fract, frexp,
# lgamma_r, modf, remquo, sincos. Their writes are not seen by the shadow. (The vstore
# built-ins, vstoren, vstore_half[n][_r] and vstorea_halfn[_r], go through ``guarded``
# like OpStore, which marks their bytes written: like OpStore, only one through a generic
# pointer of unknown memory turns the shadow off.)
_POINTER_RESULTS = frozenset({30, 31, 36, 45, 52, 58})
_VSTORES = frozenset({172, 175, 176, 177, 178, 180, 181})
_VSTORE_POINTER = 4  # vstore*(data, offset, p): p's position among the OpExtInst's operands
_SHADOW_RESET = "spirvjit.check.shadow_reset"


_SHADOW_FULL = "spirvjit.check.shadow_full"


def _shadow_on(t: FunctionTranslator) -> bool:
    found = getattr(t.mt, "_check_shadow", None)
    if found is None:
        found = t.mt._check_shadow = _every_local_write_seen(t)
        if found:
            _shadow_reset_function(t)
            _shadow_full_function(t)
    return found


def region_shadow_full(b: ir.IRBuilder, module: ir.Module, ctx: ir.Value) -> ir.Value | None:
    """In a barrier kernel's work-group function, where a region begins: i1, every byte of
    the group's local memory is written (its reads cannot be unset until the group ends:
    the shadow's bytes only go from unset to set), or None when the shadow is off."""
    fn = module.globals.get(_SHADOW_FULL)
    return None if fn is None else b.call(fn, [ctx])


def _shadow_full_function(t: FunctionTranslator) -> None:
    """``spirvjit.check.shadow_full(ctx) -> i1``: no byte of the group's shadow is unset
    (a branch-free AND over the bytes, so that the loop vectorizes)."""
    module = t.mt.llmodule
    if _SHADOW_FULL in module.globals:
        return
    fn = ir.Function(module, ir.FunctionType(I1, [PTR]), _SHADOW_FULL)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    shadow, size = _group_shadow(t, b, fn.args[0])
    i8 = ir.IntType(8)

    def all_set(every: ir.Value, i: ir.Value) -> ir.Value:
        return b.and_(every, b.load(b.gep(shadow, [i], source_etype=i8), typ=i8))

    every = fold_range(b, "shadow", ir.Constant(I64, 0), size, ir.Constant(i8, 1), all_set)
    b.ret(b.icmp_unsigned("!=", every, ir.Constant(i8, 0)))


def _group_shadow(t: FunctionTranslator, b: ir.IRBuilder, ctx: ir.Value):
    """(address of the group's shadow, its size in bytes: the group's local memory's)."""
    table = t.mt.abi.check_table(b, [ctx])
    local = b.ptrtoint(t.mt.abi.workgroup_address(b, [ctx], 0), I64)
    shadow = b.inttoptr(b.add(local, _invariant(b, _table_word(b, table, W_SHADOW))), PTR)
    return shadow, _invariant(b, _table_word(b, table, W_LOCAL_BYTES))


def _every_local_write_seen(t: FunctionTranslator) -> bool:
    maybe_local = (StorageClass.Workgroup, StorageClass.Generic)
    bodiless = {fn.id for fn in t.module.functions if not fn.blocks}

    def storage(value_id) -> int | None:
        if not isinstance(value_id, int) or value_id not in t.module.defs:
            return None
        inst = t.module.defs[value_id]
        if inst.result_type is None:
            return None
        spv = t.types.spv(inst.result_type)
        return spv.storage if spv.kind == "pointer" else None

    def memory(value_id) -> int | None:
        # A generic pointer cast from a known variable or argument (HIP) is that one's.
        return None if storage(value_id) is None else _memory(t, value_id)

    for fn in t.module.functions:
        for block in fn.blocks:
            for inst in block.instructions:
                op = inst.opname
                if op in ("OpStore", "OpCopyMemory", "OpCopyMemorySized") or op.startswith(
                    "OpAtomic"
                ):
                    if memory(inst.operands[0]) == StorageClass.Generic:
                        return False
                elif op == "OpExtInst" and inst.operands[1] in _POINTER_RESULTS:
                    if any(memory(v) in maybe_local for v in inst.operands[2:]):
                        return False
                elif (
                    op == "OpExtInst"
                    and inst.operands[1] in _VSTORES
                    and t.module.ext_inst_imports.get(inst.operands[0]) == "OpenCL.std"
                ):
                    if memory(inst.operands[_VSTORE_POINTER]) == StorageClass.Generic:
                        return False
                elif op == "OpGroupAsyncCopy" or (
                    op == "OpFunctionCall"
                    and inst.operands[0] in bodiless
                    and not _atomic_name(t, inst.operands[0])
                    and any(memory(v) in maybe_local for v in inst.operands[1:])
                ):
                    return False
    return True


def _memset() -> tuple[str, ir.FunctionType]:
    return "llvm.memset.p0.i64", ir.FunctionType(ir.VoidType(), [PTR, ir.IntType(8), I64, I1])


def _declare(module: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    return module.globals.get(name) or ir.Function(module, fnty, name)


def _shadow_reset_function(t: FunctionTranslator) -> None:
    """``spirvjit.check.shadow_reset(ctx)``: clears the group's shadow (no byte written)."""
    module = t.mt.llmodule
    if _SHADOW_RESET in module.globals:
        return
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), _SHADOW_RESET)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    shadow, size = _group_shadow(t, b, fn.args[0])
    memset = _declare(module, *_memset())
    b.call(memset, [shadow, ir.Constant(ir.IntType(8), 0), size, ir.Constant(I1, 0)])
    b.ret_void()


def _shadow_address(t: FunctionTranslator, address: ir.Value) -> ir.Value:
    b = t.b
    table = t.mt.abi.check_table(b, t.hidden)
    return b.inttoptr(b.add(address, _invariant(b, _table_word(b, table, W_SHADOW))), PTR)


def _mark_written(t: FunctionTranslator, address: ir.Value, size: ir.Value) -> None:
    memset = _declare(t.mt.llmodule, *_memset())
    one = ir.Constant(ir.IntType(8), 1)
    t.b.call(memset, [_shadow_address(t, address), one, size, ir.Constant(I1, 0)])


def _tracked(t: FunctionTranslator, pointer_id: int, pointer, size, store: bool, access):
    """``access`` with the shadow's part: a store sets the bytes written, a load of a
    constant size checks that they were."""

    def tracked():
        b = t.b
        address = b.ptrtoint(pointer, I64)
        if store:
            value = access()
            count = ir.Constant(I64, size) if isinstance(size, int) else size
            _mark_written(t, address, count if count.type == I64 else b.zext(count, I64))
            return value
        if isinstance(size, int):
            _check_written(t, pointer_id, address, size)
        return access()

    return tracked


def _check_written(t: FunctionTranslator, pointer_id: int, address: ir.Value, size: int) -> None:
    b = t.b
    bytes_ = ir.VectorType(ir.IntType(8), size)
    shadow = b.load(_shadow_address(t, address), typ=bytes_, align=1)
    each = b.icmp_unsigned("==", shadow, ir.Constant(bytes_, [1] * size))
    every = b.icmp_unsigned(
        "==", b.bitcast(each, ir.IntType(size)), ir.Constant(ir.IntType(size), -1)
    )
    if getattr(t.mt.abi, "check_fast_slot", None) is not None:
        # A region that began with the group's local memory all written reads no unset byte.
        every = b.or_(every, _fast_bit(t, FAST_SHADOW_FULL))
    with b.if_then(b.not_(every), likely=False):
        origin = _origin(t, pointer_id)
        if origin is not None and origin[0] == "argument":
            kind, which, base = KIND_UNSET_ARGUMENT, origin[1], t.value(origin[2])
        elif origin is not None and isinstance(t.value(origin[1]), ir.Value):
            kind, which, base = KIND_UNSET_VARIABLE, origin[1], t.value(origin[1])
        else:
            kind, which = KIND_UNSET_LOCAL, 0
            base = t.mt.abi.workgroup_address(b, t.hidden, 0)
        file, line, column, caller = _location(t)
        words = [kind, which, None, size, 0, file, line, column, None, 0, caller]
        values = [ir.Constant(I64, w) if w is not None else None for w in words]
        values[2] = b.sub(address, b.ptrtoint(base, I64))
        values[8] = address
        table = t.mt.abi.check_table(b, t.hidden)
        b.call(fail_function(t.mt.llmodule, t.mt.abi), [table, *values, *t.hidden])


def _atomic_name(t: FunctionTranslator, function_id: int) -> bool:
    """An imported OpenCL C atomic built-in (``_Z11atomic_xchgPU3AS3Vii``, ``atom_add``)."""
    return re.match(r"_Z\d+(atomic|atom)_", t.module.name_of(function_id) or "") is not None


def is_atomic(t: FunctionTranslator, inst) -> bool:
    """An atomic instruction, or a call of an imported atomic built-in."""
    if inst.opname.startswith("OpAtomic"):
        return inst.opname != "OpAtomicLoad"
    if inst.opname != "OpFunctionCall" or len(inst.operands) < 2:
        return False
    callee = next((f for f in t.module.functions if f.id == inst.operands[0]), None)
    return callee is not None and not callee.blocks and _atomic_name(t, inst.operands[0])


def atomic_written(t: FunctionTranslator, inst) -> None:
    """After an atomic on __local memory: its bytes count as written (atomics are not
    bounds-checked, so only an address inside the group's local memory is marked)."""
    if not enabled(t):
        return
    pointer_id = inst.operands[1 if inst.opname == "OpFunctionCall" else 0]
    if _memory(t, pointer_id) != StorageClass.Workgroup or not _shadow_on(t):
        return
    pointer = t.value(pointer_id)
    if not isinstance(pointer, ir.Value):
        return
    # The value's size: the result's (the old value), else the stored value's.
    typed = inst.result_type
    if typed is None or t.types.spv(typed).kind == "void":
        typed = t.type_of(inst.operands[-1]) if inst.opname == "OpAtomicStore" else None
    if typed is None or t.types.spv(typed).kind not in ("int", "float"):
        typed = t.types.spv(t.type_of(pointer_id)).element
    size = t.llvm_type(typed).get_abi_size(t.mt.target_data)
    b = t.b
    table = t.mt.abi.check_table(b, t.hidden)
    address = b.ptrtoint(pointer, I64)
    base = b.ptrtoint(t.mt.abi.workgroup_address(b, t.hidden, 0), I64)
    extent = _invariant(b, _table_word(b, table, W_LOCAL_BYTES))
    with b.if_then(_inside(b, address, ir.Constant(I64, size), base, extent)):
        _mark_written(t, address, ir.Constant(I64, size))
