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

from typing import TYPE_CHECKING

from llvmlite import ir

from ..spirv.grammar import StorageClass

if TYPE_CHECKING:
    from .function import FunctionTranslator

I1 = ir.IntType(1)
I64 = ir.IntType(64)
PTR = ir.PointerType()

# Report words.
R_FLAG, R_KIND, R_WHICH, R_OFFSET, R_SIZE, R_STORE = range(6)
R_GID, R_LID = 6, 9  # 3 words each
R_FILE, R_LINE, R_COLUMN, R_ADDRESS, R_EXTENT = 12, 13, 14, 15, 16
W_ABORT, W_NARGS, W_LOCAL_BYTES = 20, 21, 22
CHECK_ARGS = 24

# Report kinds.
KIND_ARGUMENT = 1  # which: the argument's index
KIND_VARIABLE = 2  # which: the variable's SPIR-V id
KIND_ANY_GLOBAL = 3  # a __global/__constant pointer of unknown origin outside every buffer
KIND_ANY_LOCAL = 4  # a __local pointer of unknown origin outside the group's local memory
KIND_BARRIER = 5  # which: the state one work-item reached, offset: the first item's state

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


def _location(t: FunctionTranslator) -> tuple[int, int, int]:
    from ..debuginfo import line_table

    lines = getattr(t.mt, "_check_lines", None)
    if lines is None:
        lines = t.mt._check_lines = line_table(t.module)
    inst = t.current
    return lines.get(inst.offset, (0, 0, 0)) if inst is not None else (0, 0, 0)


def fail_function(module: ir.Module, abi) -> ir.Function:
    """``spirvjit.check.fail(table, kind, which, offset, size, store, file, line, column,
    address, extent, hidden...)``: records the first violation and aborts the launch."""
    name = "spirvjit.check.fail"
    if name in module.globals:
        return module.globals[name]
    hidden = abi.hidden_parameters()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR] + [I64] * 10 + hidden), name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    fn.attributes.add("cold")
    table, *words = fn.args[:11]
    fn_hidden = list(fn.args[11:])
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
    fn = b.function
    pre = b.block
    head = fn.append_basic_block("chk.any.head")
    body = fn.append_basic_block("chk.any.body")
    out = fn.append_basic_block("chk.any.out")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64)
    found = b.phi(I1)
    i.add_incoming(ir.Constant(I64, 0), pre)
    found.add_incoming(ok, pre)
    b.cbranch(b.icmp_unsigned("<", i, count), body, out)
    b.position_at_end(body)
    word = b.add(ir.Constant(I64, CHECK_ARGS), b.shl(i, ir.Constant(I64, 1)))
    base = _invariant(b, _table_word(b, table, word))
    extent = _invariant(b, _table_word(b, table, b.add(word, ir.Constant(I64, 1))))
    inside = b.and_(
        b.icmp_unsigned("!=", base, ir.Constant(I64, 0)), _inside(b, address, size, base, extent)
    )
    i.add_incoming(b.add(i, ir.Constant(I64, 1)), body)
    found.add_incoming(b.or_(found, inside), body)
    b.branch(head)
    b.position_at_end(out)
    return found


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
):
    """Runs ``access()`` (which emits the access and returns its value, or None) only
    when ``size`` bytes at ``pointer`` lie inside the pointer's extent; otherwise records
    the violation. Returns the access's value (zero after a violation)."""
    if not enabled(t) or not isinstance(pointer, ir.Value):
        return access()
    b = t.b
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
            return access()
        offset = ir.Constant(I64, 0)
    fn = b.function
    good = fn.append_basic_block("chk.ok")
    bad = fn.append_basic_block("chk.bad")
    join = fn.append_basic_block("chk.join")
    b.cbranch(ok, good, bad)
    b.position_at_end(bad)
    file, line, column = _location(t)
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
