"""Translation of one SPIR-V function body into an LLVM function.

Blocks are created first, then filled in module order (SPIR-V puts dominators
before the blocks they dominate, so every operand but a phi's is already
translated), then phi incomings are patched. Instruction handlers live in the
``ops_*`` modules and register themselves by opname in ``HANDLERS``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from llvmlite import ir

from ..errors import SpirvError
from ..spirv.grammar import Decoration, FPFastMathMode
from ..spirv.module import Function, Instruction
from . import checks
from .builtins import WorkItem

if TYPE_CHECKING:
    from .barriers import SteppedKernel
    from .module import ModuleTranslator

Handler = Callable[["FunctionTranslator", Instruction], "ir.Value | None"]
HANDLERS: dict[str, Handler] = {}

# Instructions that carry no meaning for code generation.
IGNORED = frozenset(
    {
        "OpNop",
        "OpLine",
        "OpNoLine",
        "OpSelectionMerge",
        "OpLoopMerge",
        "OpLifetimeStart",
        "OpLifetimeStop",
        "OpAssumeTrueKHR",
        "OpModuleProcessed",
        "OpName",
        "OpMemberName",
        "OpString",
        "OpSource",
        "OpSourceContinued",
        "OpSourceExtension",
    }
)

I32 = ir.IntType(32)
I64 = ir.IntType(64)

_FAST_MATH_FLAGS = (
    (FPFastMathMode.NotNaN, "nnan"),
    (FPFastMathMode.NotInf, "ninf"),
    (FPFastMathMode.NSZ, "nsz"),
    (FPFastMathMode.AllowRecip, "arcp"),
    (FPFastMathMode.Fast, "fast"),
)


def handles(*opnames: str) -> Callable[[Handler], Handler]:
    """Registers a handler for the given opnames."""

    def register(fn: Handler) -> Handler:
        for name in opnames:
            HANDLERS[name] = fn
        return fn

    return register


class BuiltinPointer:
    """A pointer to a BuiltIn Input variable (or one of its lanes), resolved at OpLoad."""

    def __init__(self, builtin: str, lane: ir.Value | int | None = None):
        self.builtin = builtin
        self.lane = lane


class FunctionTranslator:
    """Translates one function. With ``stepped``, the function is a barrier kernel's
    step function: its last two parameters are the work-item's frame and the state
    to resume from, and it returns the state to resume from next (-1: finished)."""

    def __init__(
        self,
        mt: ModuleTranslator,
        fn: Function,
        llfn: ir.Function,
        stepped: SteppedKernel | None = None,
    ):
        self.mt = mt
        self.fn = fn
        self.llfn = llfn
        self.stepped = stepped
        self.types = mt.types
        self.module = mt.module
        self.values: dict[int, object] = {}
        self.blocks: dict[int, ir.Block] = {}
        self.block_ends: dict[int, ir.Block] = {}
        self.phis: list[tuple[ir.PhiInstr, Instruction]] = []
        n_params = len(fn.parameters)
        n_hidden = len(mt.abi.hidden_parameters())
        self.hidden = list(llfn.args[n_params : n_params + n_hidden])
        for param, arg in zip(fn.parameters, llfn.args, strict=False):
            arg.name = self._llvm_name(param.result_id)
            self.values[param.result_id] = arg
        self.alloca_block = llfn.append_basic_block("entry")
        self.b = ir.IRBuilder(self.alloca_block)
        self.alloca_builder = ir.IRBuilder(self.alloca_block)
        self.workitem = WorkItem(mt.abi, self.b, self.hidden)
        self.current: Instruction | None = None
        self.subprogram = None  # the DISubprogram of a debug translation
        self.debug_scope = None  # its DILexicalBlock now (DebugScope), None: subprogram
        self.current_label: int | None = None
        self.frame: Frame | None = None
        if stepped is not None:
            base, linear, items = llfn.args[-4:-1]
            self.frame = Frame(self, base, linear, items)
        else:
            self._copy_by_value_parameters()

    def _copy_by_value_parameters(self) -> None:
        """A ByVal pointer parameter is the function's own copy of the pointee: the
        function may write it, and the caller's memory must not change. Producers pass
        the caller's object itself (llvm-spirv-15 passes a kernel's struct argument
        straight to a helper that rewrites its by-value copy, after clang folded the
        copy the source made), so the copy is made here, in the entry block. A parameter
        also marked NoWrite is never written: it is used in place. (Functions with
        barriers are inlined into a step function; their parameters are not copied.)"""
        for param in self.fn.parameters:
            if not self.module.writable_by_value(param.result_id):
                continue
            spv = self.types.spv(param.result_type)
            if spv.kind != "pointer" or spv.element is None:
                continue
            ty = self.types.llvm(spv.element)
            td = self.mt.target_data
            align = max(ty.get_abi_alignment(td), self._declared_alignment(param.result_id))
            copy = self.alloca(ty, name=f"byval.{param.result_id}", align=align)
            source = self.values[param.result_id]
            name = f"llvm.memcpy.p{copy.type.addrspace}.p{source.type.addrspace}.i64"
            fnty = ir.FunctionType(ir.VoidType(), [copy.type, source.type, I64, ir.IntType(1)])
            size = ir.Constant(I64, ty.get_abi_size(td))
            self.alloca_builder.call(
                self.mt.declare(name, fnty), [copy, source, size, ir.Constant(ir.IntType(1), 0)]
            )
            self.values[param.result_id] = copy

    def _declared_alignment(self, value_id: int) -> int:
        for d in self.module.decorations_of(value_id, Decoration.Alignment):
            return int(d.operands[0])
        return 0

    # -- driving -----------------------------------------------------------------------

    def translate(self) -> None:
        for block in self.fn.blocks:
            self.blocks[block.label_id] = self.llfn.append_basic_block(
                self._llvm_name(block.label_id)
            )
        self.alloca_builder.position_at_end(self.alloca_block)
        debug = self.mt.debug
        self.subprogram = debug.subprogram(self.fn, self.llfn) if debug else None
        if self.subprogram is not None:  # a debug translation (translate/debuginfo.py)
            self.alloca_builder.debug_metadata = debug.location(None, self.subprogram, self)
            self.b.debug_metadata = self.alloca_builder.debug_metadata
            debug.workitem_variables(self, self.subprogram)
        for block in self.fn.blocks:
            self.b.position_at_end(self.blocks[block.label_id])
            self.current_label = block.label_id
            self.debug_scope = None  # DebugScope: until the block's end
            for inst in block.instructions:
                self.current = inst
                if self.subprogram is not None:
                    scope = self.debug_scope or self.subprogram
                    self.b.debug_metadata = debug.location(inst, scope, self)
                if self.frame is not None and inst.opname != "OpPhi":
                    self.frame.flush_phis()
                self._translate(inst)
            self.block_ends[block.label_id] = self.b.block
        self._patch_phis()
        if self.subprogram is not None:
            self.mt.debug.finish(self)
        # The alloca block falls through to the SPIR-V entry block, or in a step
        # function to the block the state says to resume at.
        self.alloca_builder.position_at_end(self.alloca_block)
        entry = self.blocks[self.fn.blocks[0].label_id]
        if self.stepped is None:
            self.alloca_builder.branch(entry)
            return
        dispatch = self.alloca_builder.switch(self.llfn.args[-1], entry)
        for label, number in self.stepped.states.items():
            dispatch.add_case(ir.Constant(I32, number), self.blocks[label])

    def _translate(self, inst: Instruction) -> None:
        name = inst.opname
        if name in IGNORED:
            return
        debug = self.mt.debug
        if self.subprogram is not None and name == "OpExtInst" and inst.operands[0] in debug.sets:
            debug.instruction(self, inst)  # DebugDeclare, DebugValue
            return
        handler = HANDLERS.get(name)
        if handler is None:
            raise self.error(f"{name} is not supported by spirvjit's translator")
        try:
            result = handler(self, inst)
        except SpirvError:
            raise
        except (TypeError, ValueError, KeyError, IndexError, AttributeError, AssertionError) as exc:
            # llvmlite rejects ill-typed IR with these; report the SPIR-V instruction.
            raise self.error(
                f"operands do not fit this instruction ({type(exc).__name__}: {exc})"
            ) from None
        if getattr(self.mt.abi, "checked", False) and checks.is_atomic(self, inst):
            checks.atomic_written(self, inst)  # checked mode: __local bytes now written
        if inst.result_id is not None and result is not None:
            if isinstance(result, ir.NamedValue) and not result.name:
                result.name = self._llvm_name(inst.result_id)
            self.values[inst.result_id] = result
            if self.frame is not None:
                self.frame.defined(inst, result)

    def _patch_phis(self) -> None:
        for phi, inst in self.phis:
            ops = inst.operands
            # LLVM wants one incoming entry per CFG edge: a switch whose several case
            # literals (or default) share this block, or a conditional branch with both
            # targets here, is one predecessor but several edges. clang-22 lists such a
            # predecessor once per edge, llvm-spirv once: take each predecessor once and
            # repeat its entry per edge.
            seen: set[int] = set()
            for value_id, label in zip(ops[0::2], ops[1::2], strict=True):
                if label in seen:
                    continue
                seen.add(label)
                if label not in self.block_ends:
                    raise SpirvError(
                        f"OpPhi names %{label}, which is not a block of this function",
                        inst.offset,
                        inst.opname,
                    )
                end = self.block_ends[label]
                if self.frame is not None and self.frame.holds(value_id):
                    # A frame value is reloaded at the end of the predecessor, where the phi
                    # reads it.
                    self.b.position_before(end.terminator)
                    self.current_label = label
                value = self.value(value_id)
                for _ in range(_edges(end, phi.parent)):
                    phi.add_incoming(value, end)

    # -- values and types ----------------------------------------------------------

    def error(self, message: str) -> SpirvError:
        inst = self.current
        fn_name = self.module.name_of(self.fn.id)
        return SpirvError(
            f"in function {fn_name}: {message}",
            inst.offset if inst else None,
            inst.opname if inst else None,
        )

    def value(self, value_id: int) -> ir.Value:
        if self.frame is not None and self.frame.holds(value_id):
            reloaded = self.frame.reload(value_id)
            if reloaded is not None:
                return reloaded
        found = self.values.get(value_id)
        if found is not None:
            return found
        inst = self.module.defs.get(value_id)
        if inst is None:
            raise self.error(f"%{value_id} is not defined")
        if inst.opname == "OpVariable" and self.mt.is_builtin_variable(value_id):
            return BuiltinPointer(self.mt.builtin_of(value_id))
        if inst.opname == "OpVariable" and value_id in self.mt.workgroup_offsets:
            address = self.values[value_id] = self.mt.workgroup_variable(self, value_id)
            return address
        if inst.opname == "OpFunction":
            raise self.error(
                f"function %{value_id} is used as a value; function pointers are not supported"
            )
        return self.mt.constants.value(value_id)

    def type_of(self, value_id: int) -> int:
        """The SPIR-V type id of a value id."""
        inst = self.module.defs.get(value_id)
        if inst is None or inst.result_type is None:
            raise self.error(f"%{value_id} has no type")
        return inst.result_type

    def llvm_type(self, type_id: int) -> ir.Type:
        return self.types.llvm(type_id)

    def constant(self, ty: ir.Type, value: int | float) -> ir.Constant:
        """A constant of ``ty`` with every lane equal to ``value``."""
        if isinstance(ty, ir.VectorType):
            return ir.Constant(ty, [ir.Constant(ty.element, value)] * ty.count)
        return ir.Constant(ty, value)

    def splat(self, value: ir.Value, ty: ir.Type) -> ir.Value:
        """``value`` broadcast to the vector type ``ty`` (unchanged when ``ty`` is scalar)."""
        if not isinstance(ty, ir.VectorType) or isinstance(value.type, ir.VectorType):
            return value
        if isinstance(value, ir.Constant):
            return ir.Constant(ty, [value] * ty.count)
        one = self.b.insert_element(
            ir.Constant(ir.VectorType(value.type, 1), ir.Undefined), value, ir.Constant(I32, 0)
        )
        return self.b.shuffle_vector(
            one, one, ir.Constant(ir.VectorType(I32, ty.count), [0] * ty.count)
        )

    def decorated(self, value_id: int, decoration: int) -> list:
        return self.module.decorations_of(value_id, decoration)

    def fast_math(self, inst: Instruction) -> tuple[str, ...]:
        """The LLVM fast-math flags of ``inst``'s FPFastMathMode decoration."""
        flags: list[str] = []
        for deco in self.decorated(inst.result_id, Decoration.FPFastMathMode):
            mask = deco.operands[0]
            flags += [name for bit, name in _FAST_MATH_FLAGS if mask & bit]
            if mask & FPFastMathMode.AllowContract:
                flags.append("contract")
            if mask & FPFastMathMode.AllowReassoc:
                flags.append("reassoc")
        return tuple(dict.fromkeys(flags))

    def variable_storage(self, inst: Instruction, ty: ir.Type, align: int | None) -> ir.Value:
        """Storage of a function-scope variable: a stack slot, or the frame in a step function."""
        if self.frame is not None:
            return self.frame.variable(inst)
        return self.alloca(ty, align=align)

    def alloca(self, ty: ir.Type, name: str = "", align: int | None = None) -> ir.Value:
        ptr = private_alloca(self.alloca_builder, ty, self.mt.private_space, name)
        if align:
            ptr.align = align
        return ptr

    def intrinsic(self, name: str, ret: ir.Type, args: list[ir.Value]) -> ir.Value:
        """Calls the LLVM intrinsic or C function ``name``, declaring it on first use."""
        fn = self.mt.declare(name, ir.FunctionType(ret, [a.type for a in args]))
        return self.b.call(fn, args)

    def _llvm_name(self, value_id: int) -> str:
        name = self.module.names.get(value_id)
        return f"{name}.{value_id}" if name else f"v{value_id}"


def _edges(pred: ir.Block, succ: ir.Block) -> int:
    """How many CFG edges lead from ``pred`` to ``succ`` (at least 1, so that a phi
    naming a block that does not branch here still gets its entry and LLVM's verifier
    reports the real problem)."""
    term = pred.terminator
    if isinstance(term, ir.SwitchInstr):
        count = (term.default is succ) + sum(1 for _, block in term.cases if block is succ)
    elif isinstance(term, ir.ConditionalBranch):
        count = sum(1 for block in term.operands[1:] if block is succ)
    else:
        count = 1
    return max(count, 1)


def private_alloca(builder: ir.IRBuilder, ty: ir.Type, space: int, name: str = "") -> ir.Value:
    """An alloca of ``ty`` in address space ``space`` (the target data layout's ``A``)."""
    ptr = builder.alloca(ty, name=name)
    # opaque pointers: llvmlite's alloca is typed and always in address space 0
    ptr.type = ir.PointerType(addrspace=space)
    if space:
        ptr.__class__ = _AddressSpaceAlloca
    return ptr


class _AddressSpaceAlloca(ir.instructions.AllocaInstr):
    """An alloca in the target's private address space (5 on AMD GPUs), which llvmlite
    cannot print: its data layout's ``A5`` makes allocas anywhere else invalid IR."""

    def descr(self, buf: list[str]) -> None:
        super().descr(buf)
        tail = buf.pop() if self.metadata else None
        buf.append(f", addrspace({self.type.addrspace})")
        if tail is not None:
            buf.append(tail)


def overload_suffix(ty: ir.Type) -> str:
    """The type suffix LLVM intrinsics use: f32, v4f32, i64, v2i8, ..."""
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{overload_suffix(ty.element)}"
    if isinstance(ty, ir.IntType):
        return f"i{ty.width}"
    if isinstance(ty, ir.HalfType):
        return "f16"
    if isinstance(ty, ir.FloatType):
        return "f32"
    if isinstance(ty, ir.DoubleType):
        return "f64"
    if isinstance(ty, ir.PointerType):
        return f"p{ty.addrspace}"
    raise TypeError(f"no intrinsic suffix for {ty}")


# Instructions with no side effect whose value depends only on their operands (and, for
# loads of BuiltIn variables, on the work-item's ids): a barrier kernel recomputes such
# values after a barrier instead of keeping them in memory.
_PURE = frozenset(
    {
        "OpIAdd", "OpISub", "OpIMul", "OpUDiv", "OpSDiv", "OpUMod", "OpSRem", "OpSMod",
        "OpFAdd", "OpFSub", "OpFMul", "OpFDiv", "OpSNegate", "OpFNegate", "OpNot",
        "OpShiftLeftLogical", "OpShiftRightLogical", "OpShiftRightArithmetic",
        "OpBitwiseAnd", "OpBitwiseOr", "OpBitwiseXor", "OpLogicalAnd", "OpLogicalOr",
        "OpLogicalNot", "OpLogicalEqual", "OpLogicalNotEqual", "OpSelect",
        "OpIEqual", "OpINotEqual", "OpULessThan", "OpULessThanEqual", "OpUGreaterThan",
        "OpUGreaterThanEqual", "OpSLessThan", "OpSLessThanEqual", "OpSGreaterThan",
        "OpSGreaterThanEqual", "OpUConvert", "OpSConvert", "OpConvertUToF", "OpConvertSToF",
        "OpBitcast", "OpCompositeExtract", "OpCompositeConstruct", "OpVectorShuffle",
        "OpCopyObject", "OpAccessChain", "OpInBoundsAccessChain", "OpPtrAccessChain",
        "OpInBoundsPtrAccessChain", "OpPtrCastToGeneric",
    }
)  # fmt: skip


class Frame:
    """The per-work-item memory of a step function.

    It holds the values that may be live across a barrier and every function-scope
    variable: everything a work-item must find again when it resumes. Each value
    has an array with one element per work-item of the group (consecutive work-items
    at consecutive addresses, so the vectorized region loops access it contiguously).
    A value is stored right after its definition and reloaded where it is used in
    another block (within one block no barrier intervenes).

    Values computed only from work-item ids, kernel arguments and constants are
    not stored: they are recomputed where they are used after a barrier, which
    costs a few instructions and no memory traffic. (Uniform values built this way
    are recomputed too rather than stored once.)
    """

    def __init__(self, t: FunctionTranslator, base: ir.Value, linear: ir.Value, items: ir.Value):
        self.t = t
        self.base, self.linear, self.items = base, linear, items
        self.home: dict[int, int] = {}
        self.remat: set[int] = set()
        params = {p.result_id for p in t.fn.parameters}
        stored: list[tuple[int, ir.Type]] = []
        for block in t.fn.blocks:
            for inst in block.instructions:
                if inst.result_id is None:
                    continue
                self.home[inst.result_id] = block.label_id
                if self._recomputable(inst, params):
                    self.remat.add(inst.result_id)
                elif inst.opname == "OpVariable":
                    stored.append(
                        (inst.result_id, t.llvm_type(t.types.spv(inst.result_type).element))
                    )
                elif inst.result_id in t.stepped.crossing:
                    ty = t.llvm_type(inst.result_type)
                    # A void result (a non-semantic instruction's, used by another one
                    # after the barrier) has no value to keep.
                    if not isinstance(ty, ir.VoidType):
                        stored.append((inst.result_id, ty))
        if t.stepped.gathers:  # wavefront operations exchange values through the frame
            from .wavefront import WAVE_ARRAYS

            stored.extend(WAVE_ARRAYS)
        # Arrays in order of decreasing alignment keep every array aligned for any group size.
        td = t.mt.target_data
        stored.sort(key=lambda item: -item[1].get_abi_alignment(td))
        self.offset: dict[int, int] = {}
        self.types: dict[int, ir.Type] = {}
        self.bytes = 0
        for value_id, ty in stored:
            self.offset[value_id] = self.bytes
            self.types[value_id] = ty
            self.bytes += ty.get_abi_size(td)
        self._cache: dict[tuple[ir.Block, int], ir.Value] = {}
        self._pending_phis: list[tuple[int, ir.Value]] = []
        self._recomputing = 0

    def _recomputable(self, inst: Instruction, params: set[int]) -> bool:
        if inst.opname == "OpLoad":
            return self.t.mt.is_builtin_variable(inst.operands[0])
        if inst.opname not in _PURE:
            return False
        ids = [op for op, kind in zip(inst.operands, inst.kinds, strict=False) if kind == "IdRef"]
        return all(
            op in self.remat or op in params or op not in self.home and op in self.t.module.defs
            for op in ids
        )

    def holds(self, value_id: int) -> bool:
        """Whether reading ``value_id`` may need the frame (a reload or a recomputation)."""
        return (
            value_id in self.types
            and self.t.module.defs[value_id].opname != "OpVariable"
            or (
                value_id in self.remat
                and (value_id in self.t.stepped.crossing or self._recomputing > 0)
            )
        )

    def slot(self, value_id: int, builder: ir.IRBuilder) -> ir.Value:
        """This work-item's element of ``value_id``'s array."""
        size = ir.Constant(I64, self.types[value_id].get_abi_size(self.t.mt.target_data))
        start = builder.mul(ir.Constant(I64, self.offset[value_id]), self.items)
        address = builder.add(start, builder.mul(self.linear, size))
        return builder.gep(self.base, [address], inbounds=True, source_etype=ir.IntType(8))

    def variable(self, inst: Instruction) -> ir.Value:
        return self.slot(inst.result_id, self.t.alloca_builder)

    def defined(self, inst: Instruction, value: ir.Value) -> None:
        if inst.result_id not in self.types or inst.opname == "OpVariable":
            return
        if inst.opname == "OpPhi":
            self._pending_phis.append((inst.result_id, value))  # phis must stay first
        else:
            self.t.b.store(value, self.slot(inst.result_id, self.t.b))

    def flush_phis(self) -> None:
        for value_id, value in self._pending_phis:
            self.t.b.store(value, self.slot(value_id, self.t.b))
        self._pending_phis.clear()

    def reload(self, value_id: int) -> ir.Value | None:
        """The value as seen in the current block: None in its home block (use the
        register), else reloaded from the frame or recomputed."""
        if self.home.get(value_id) == self.t.current_label and not self._recomputing:
            return None
        key = (self.t.b.block, value_id)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._materialize(value_id)
        return found

    def _materialize(self, value_id: int) -> ir.Value:
        inst = self.t.module.defs[value_id]
        if value_id not in self.remat:
            return self.t.b.load(self.slot(value_id, self.t.b), typ=self.types[value_id])
        # Re-run the defining instruction here; its remat operands are recomputed too.
        self._recomputing += 1
        try:
            return HANDLERS[inst.opname](self.t, inst)
        finally:
            self._recomputing -= 1
