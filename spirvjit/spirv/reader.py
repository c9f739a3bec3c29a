"""Read a binary SPIR-V module (1.0 to 1.6, either endianness) into a :class:`Module`.

``read_module`` decodes every instruction per the grammar (see module.py for how
operands are decoded) and checks the module's structure as it goes. Anything malformed
raises :class:`SpirvError` carrying the word offset of the offending instruction (or
word); no other exception escapes, and the work is linear in the size of the input.

What is checked: the header; each instruction's word count, opcode and operands
against the grammar (enumerant values, string termination, context-dependent
literal widths); ids (in ``1..bound-1``, defined once, defined before use except where
SPIR-V allows forward references); the logical layout (section order, one
OpMemoryModel, instructions inside/outside functions, blocks ending in a terminator,
functions ending in OpFunctionEnd). Then ``validate`` (validate.py) checks types, sizes,
counts, indices and operand kinds; scoping and dominance are not checked.

Forward references allowed: debug and annotation targets (OpName, OpDecorate*,
OpGroupDecorate targets, ...), OpEntryPoint and OpExecutionMode* operands, OpPhi
operands, branch, merge and switch targets, OpExtInstWithForwardRefsKHR operands,
pointer types declared by OpTypeForwardPointer, and any reference to a function
(OpFunctionCall callees, OpEnqueueKernel invokes, function pointer constants).

Where things go: every instruction is in ``Module.instructions`` (in order) and every
result id in ``defs``. ``globals`` holds the types/constants/variables section,
including OpTypeForwardPointer but not OpLine/OpNoLine/OpNop nor module-level
OpExtInst (debug info). Blocks hold neither OpLine/OpNoLine/OpNop nor OpLabel.
Decoration groups are applied to their targets (copies of the group's decorations)
and the group ids themselves dropped from ``decorations``. OpExtInst operands are
``[set, instruction, *operands]``, decoded per the OpenCL.std grammar for that set,
as ids for ``NonSemantic.*`` sets and as raw ``LiteralInteger`` words for other sets
(e.g. OpenCL.DebugInfo.100), which are therefore not id-checked.
"""

from __future__ import annotations

import sys
from array import array

from ..errors import SpirvError
from . import grammar
from .module import Block, Decoration, EntryPoint, ExecutionMode, Function, Instruction, Module
from .validate import validate

_OP = grammar.OPCODES
_INSTRUCTIONS = grammar.INSTRUCTIONS
_CATEGORY = grammar.OPERAND_KINDS
_BASES = grammar.COMPOSITE_BASES
_ENUMERANTS = grammar.ENUMERANTS
_OPENCL_STD = grammar.OPENCL_STD_INSTRUCTIONS
_ID_KINDS = frozenset(kind for kind, category in _CATEGORY.items() if category == "Id")
_WORD_TYPECODE = next(code for code in "IL" if array(code).itemsize == 4)
_HEADER_WORDS = 5
_MAX_MINOR_VERSION = 6

# Logical layout (SPIR-V spec 2.4): module-level sections in the order they must appear.
(
    _CAPABILITIES,
    _EXTENSIONS,
    _IMPORTS,
    _MEMORY_MODEL,
    _ENTRY_POINTS,
    _EXECUTION_MODES,
    _DEBUG_SOURCE,
    _DEBUG_NAMES,
    _DEBUG_PROCESSED,
    _ANNOTATIONS,
    _GLOBALS,
    _FUNCTIONS,
) = range(12)


def _ops(*names: str) -> frozenset[int]:
    return frozenset(_OP[name] for name in names)


_MODULE_SECTION = {
    _OP["OpCapability"]: _CAPABILITIES,
    _OP["OpExtension"]: _EXTENSIONS,
    _OP["OpExtInstImport"]: _IMPORTS,
    _OP["OpMemoryModel"]: _MEMORY_MODEL,
    _OP["OpEntryPoint"]: _ENTRY_POINTS,
    _OP["OpExecutionMode"]: _EXECUTION_MODES,
    _OP["OpExecutionModeId"]: _EXECUTION_MODES,
    _OP["OpString"]: _DEBUG_SOURCE,
    _OP["OpSource"]: _DEBUG_SOURCE,
    _OP["OpSourceContinued"]: _DEBUG_SOURCE,
    _OP["OpSourceExtension"]: _DEBUG_SOURCE,
    _OP["OpName"]: _DEBUG_NAMES,
    _OP["OpMemberName"]: _DEBUG_NAMES,
    _OP["OpModuleProcessed"]: _DEBUG_PROCESSED,
}
_MODULE_SECTION.update(
    dict.fromkeys(
        _ops(
            "OpDecorate",
            "OpDecorateId",
            "OpDecorateString",
            "OpMemberDecorate",
            "OpMemberDecorateString",
            "OpDecorationGroup",
            "OpGroupDecorate",
            "OpGroupMemberDecorate",
        ),
        _ANNOTATIONS,
    )
)
# Allowed both among the globals and inside blocks.
_GLOBAL_OR_BLOCK = _ops(
    "OpVariable", "OpUntypedVariableKHR", "OpUndef", "OpExtInst", "OpExtInstWithForwardRefsKHR"
)
# Allowed anywhere after the header and kept out of the section/block bookkeeping.
_ANYWHERE = _ops("OpLine", "OpNoLine", "OpNop")
_GLOBAL_ONLY = frozenset(
    opcode
    for opcode, (opname, klass, *_) in _INSTRUCTIONS.items()
    if klass in ("Type-Declaration", "Constant-Creation")
    or opname.startswith(("OpType", "OpConstant", "OpSpecConstant"))
) | _ops(
    "OpAsmTargetINTEL",
    "OpAsmINTEL",
    "OpAliasDomainDeclINTEL",
    "OpAliasScopeDeclINTEL",
    "OpAliasScopeListDeclINTEL",
)
TERMINATORS = frozenset(
    _OP[name]
    for name in (
        "OpBranch",
        "OpBranchConditional",
        "OpSwitch",
        "OpReturn",
        "OpReturnValue",
        "OpKill",
        "OpUnreachable",
        "OpTerminateInvocation",
        "OpIgnoreIntersectionKHR",
        "OpTerminateRayKHR",
        "OpEmitMeshTasksEXT",
    )
    if name in _OP
)
# Id operands from this index on may refer to ids defined later.
_FORWARD_FROM = dict.fromkeys(
    _ops(
        "OpName",
        "OpMemberName",
        "OpDecorate",
        "OpDecorateId",
        "OpDecorateString",
        "OpMemberDecorate",
        "OpMemberDecorateString",
        "OpEntryPoint",
        "OpExecutionMode",
        "OpExecutionModeId",
        "OpPhi",
        "OpBranch",
        "OpSelectionMerge",
        "OpLoopMerge",
        "OpExtInstWithForwardRefsKHR",
        "OpTypeForwardPointer",
    ),
    0,
)
_FORWARD_FROM.update(
    dict.fromkeys(
        _ops("OpBranchConditional", "OpSwitch", "OpGroupDecorate", "OpGroupMemberDecorate"), 1
    )
)
_EXT_INST = _ops("OpExtInst", "OpExtInstWithForwardRefsKHR")
_CONSTANT_WITH_LITERAL = _ops("OpConstant", "OpSpecConstant")
_NUMERIC_TYPES = _ops("OpTypeInt", "OpTypeFloat")
_OP_SPEC_CONSTANT_OP = _OP["OpSpecConstantOp"]
_OP_FUNCTION_PARAMETER = _OP["OpFunctionParameter"]
_OP_TYPE_FORWARD_POINTER = _OP["OpTypeForwardPointer"]
# Public: what other code that walks a module's words needs too (frontend.translator_fixups).
OP_SWITCH = _OP["OpSwitch"]
OP_TYPE_INT = _OP["OpTypeInt"]
OP_FUNCTION = _OP["OpFunction"]
OP_FUNCTION_END = _OP["OpFunctionEnd"]
OP_LABEL = _OP["OpLabel"]


def read_module(data: bytes | bytearray | memoryview) -> Module:
    """Decode and check a binary SPIR-V module.

    Raises SpirvError (with ``offset``, a word offset, and ``opname`` where known) for
    any malformed input. The result follows the contract in spirvjit/spirv/module.py.
    """
    words, text, big_endian = _words(data)
    module = _Reader(words, text, big_endian).read()
    validate(module)
    return module


def _words(data: bytes | bytearray | memoryview) -> tuple[list[int], bytes, bool]:
    """The module's words (values in the right byte order), its bytes with every word
    little-endian (strings are decoded from these), and whether it was big-endian."""
    raw = bytes(data)
    if int.from_bytes(raw[:4], "little") not in (grammar.MAGIC_NUMBER, 0x03022307):
        from ..offload_bundle import foreign_format

        foreign = foreign_format(raw)  # a HIP bundle or host object: say what to do
        if foreign is not None:
            raise SpirvError(f"this is {foreign}", 0)
    if len(raw) % 4:
        raise SpirvError(f"module size {len(raw)} bytes is not a multiple of 4", len(raw) // 4)
    if len(raw) < 4 * _HEADER_WORDS:
        raise SpirvError(f"header truncated: {len(raw) // 4} of 5 words", len(raw) // 4)
    if int.from_bytes(raw[:4], "little") == grammar.MAGIC_NUMBER:
        big_endian = False
    elif int.from_bytes(raw[:4], "big") == grammar.MAGIC_NUMBER:
        big_endian = True
    else:
        raise SpirvError(f"bad magic number {int.from_bytes(raw[:4], 'little'):#010x}", 0)
    native = array(_WORD_TYPECODE, raw)
    if big_endian != (sys.byteorder == "big"):
        native.byteswap()
    if big_endian:
        little = array(_WORD_TYPECODE, native)
        if sys.byteorder == "big":
            little.byteswap()
        raw = little.tobytes()
    return native.tolist(), raw, big_endian


class _Reader:
    """One pass over the words; builds the Module and checks layout and ids on the way."""

    def __init__(self, words: list[int], text: bytes, big_endian: bool):
        self.words = words
        self.text = text
        version = words[1]
        major, minor = (version >> 16) & 0xFF, (version >> 8) & 0xFF
        if major != 1 or minor > _MAX_MINOR_VERSION or version & 0xFF0000FF:
            raise SpirvError(f"unsupported SPIR-V version word {version:#010x}", 1)
        self.bound = words[3]
        self.module = Module(
            version=(major, minor),
            generator=words[2],
            bound=words[3],
            schema=words[4],
            big_endian=big_endian,
        )
        self.section = _CAPABILITIES
        self.memory_model_seen = False
        self.function: Function | None = None
        self.function_offset = 0
        self.block: Block | None = None
        self.groups: set[int] = set()
        self.forward_pointers: set[int] = set()
        # (id, offset, opname) of forward references, resolved once the module is read.
        self.forward_refs: list[tuple[int, int, str]] = []
        self.function_refs: list[tuple[int, int, str]] = []
        # Per-instruction decoding state.
        self.offset = 0
        self.opname = ""
        self.number_words = 1

    # -- the pass ---------------------------------------------------------------------

    def read(self) -> Module:
        words = self.words
        count = len(words)
        pos = _HEADER_WORDS
        while pos < count:
            first = words[pos]
            word_count, opcode = first >> 16, first & 0xFFFF
            self.offset, self.opname = pos, ""
            if word_count == 0:
                raise SpirvError("instruction word count is 0", pos)
            end = pos + word_count
            if end > count:
                raise SpirvError(
                    f"instruction of {word_count} words runs past the end of the module "
                    f"({count - pos} words left)",
                    pos,
                )
            info = _INSTRUCTIONS.get(opcode)
            if info is None:
                raise SpirvError(f"unknown opcode {opcode}", pos)
            self.opname = info[0]
            inst = self._decode(opcode, info, pos, end)
            self._check_ids(inst)
            self._place(inst)
            pos = end
        self._finish(count)
        return self.module

    def _error(self, message: str) -> SpirvError:
        return SpirvError(message, self.offset, self.opname)

    def _finish(self, count: int) -> None:
        if self.function is not None:
            fn_id = self.function.definition.result_id
            raise SpirvError(f"function %{fn_id} has no OpFunctionEnd", self.function_offset)
        if not self.memory_model_seen:
            raise SpirvError("the module has no OpMemoryModel", count)
        defs = self.module.defs
        for target, offset, opname in self.forward_refs:
            if target not in defs:
                raise SpirvError(f"id %{target} is never defined", offset, opname)
        for target, offset, opname in self.function_refs:
            if target not in defs:
                raise SpirvError(f"id %{target} is never defined", offset, opname)
            if defs[target].opcode != OP_FUNCTION:
                raise SpirvError(f"id %{target} is used before its definition", offset, opname)
        for group in self.groups:
            self.module.decorations.pop(group, None)

    # -- decoding ---------------------------------------------------------------------

    def _decode(self, opcode: int, info: tuple, pos: int, end: int) -> Instruction:
        opname, _, has_type, has_result, specs = info
        words = self.words
        p = pos + 1
        result_type = result_id = None
        if has_type:
            if p >= end:
                raise self._error("too few operands: missing the result type")
            result_type = words[p]
            self._check_use(result_type, forward=False)
            p += 1
        if has_result:
            if p >= end:
                raise self._error("too few operands: missing the result id")
            result_id = words[p]
            p += 1
        values: list = []
        kinds: list[str] = []
        self.number_words = 1
        if opcode in _CONSTANT_WITH_LITERAL:
            self.number_words = self._literal_words(result_type)
        if opcode == OP_SWITCH:
            p = self._switch(p, end, values, kinds)
        elif opcode in _EXT_INST:
            p = self._ext_inst(specs, p, end, values, kinds)
        elif opcode == _OP_SPEC_CONSTANT_OP:
            p = self._spec_constant_op(specs, p, end, values, kinds)
        else:
            p = self._operands(specs, p, end, values, kinds)
        if p != end:
            raise self._error(f"too many operand words ({end - p} left over)")
        return Instruction(opcode, opname, result_type, result_id, values, tuple(kinds), pos)

    def _operands(self, specs: tuple, p: int, end: int, values: list, kinds: list) -> int:
        """Decode operands per ``specs`` ((kind, quantifier) pairs) from word ``p``."""
        for kind, quantifier in specs:
            if quantifier == "*":
                while p < end:
                    p = self._operand(kind, p, end, values, kinds)
            elif p < end:
                p = self._operand(kind, p, end, values, kinds)
            elif not quantifier:
                raise self._error(f"too few operands: missing a {kind}")
        return p

    def _operand(self, kind: str, p: int, end: int, values: list, kinds: list) -> int:
        """Decode one operand of ``kind`` at word ``p`` (< end); return the next word."""
        category = _CATEGORY[kind]
        if category == "Id" or (
            category == "Literal" and kind not in ("LiteralString", "LiteralContextDependentNumber")
        ):
            values.append(self.words[p])
            kinds.append(kind)
            return p + 1
        if kind == "LiteralString":
            return self._string(p, end, values, kinds)
        if kind == "LiteralContextDependentNumber":
            return self._number(kind, self.number_words, p, end, values, kinds)
        if category == "Composite":
            for base in _BASES[kind]:
                if p >= end:
                    raise self._error(f"too few operands: missing a {base}")
                p = self._operand(base, p, end, values, kinds)
            return p
        return self._enumerant(kind, category, p, end, values, kinds)

    def _enumerant(
        self, kind: str, category: str, p: int, end: int, values: list, kinds: list
    ) -> int:
        """An enumerant and then its parameters (for a bit enum: each set bit's, lowest first)."""
        value = self.words[p]
        table = _ENUMERANTS[kind]
        values.append(value)
        kinds.append(kind)
        p += 1
        if category == "ValueEnum":
            entry = table.get(value)
            if entry is None:
                raise self._error(f"{kind} value {value} is not in the grammar")
            return self._operands(entry[1], p, end, values, kinds)
        rest = value
        while rest:
            bit = rest & -rest
            rest ^= bit
            entry = table.get(bit)
            if entry is None:
                raise self._error(f"{kind} value {value:#x} has bit {bit:#x}, not in the grammar")
            p = self._operands(entry[1], p, end, values, kinds)
        return p

    def _string(self, p: int, end: int, values: list, kinds: list) -> int:
        nul = self.text.find(b"\0", 4 * p, 4 * end)
        if nul < 0:
            raise self._error("string is not nul-terminated within the instruction")
        try:
            values.append(self.text[4 * p : nul].decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise self._error(f"string is not valid UTF-8 ({exc.reason})") from None
        kinds.append("LiteralString")
        return nul // 4 + 1

    def _number(self, kind: str, size: int, p: int, end: int, values: list, kinds: list) -> int:
        """A literal of ``size`` words, low word first, as one unsigned int."""
        if p + size > end:
            raise self._error(f"too few operands: a {size}-word literal number")
        value = 0
        for i in range(size):
            value |= self.words[p + i] << (32 * i)
        values.append(value)
        kinds.append(kind)
        return p + size

    def _literal_words(self, type_id: int) -> int:
        """Words taken by a literal number of the (integer or float) type ``type_id``."""
        type_inst = self.module.defs.get(type_id)
        if type_inst is None:
            raise self._error(f"type %{type_id} is used before its definition")
        if type_inst.opcode not in _NUMERIC_TYPES:
            raise self._error(f"type %{type_id} is not an integer or floating-point type")
        width = type_inst.operands[0]
        return max(1, (width + 31) // 32)

    def _switch(self, p: int, end: int, values: list, kinds: list) -> int:
        """OpSwitch: selector, default, then (literal, label) pairs; the literals are as
        wide as the selector's integer type."""
        p = self._operands((("IdRef", ""), ("IdRef", "")), p, end, values, kinds)
        selector = values[0]
        self._check_use(selector, forward=False)
        selector_inst = self.module.defs.get(selector)
        type_inst = self.module.defs.get(selector_inst.result_type) if selector_inst else None
        if type_inst is None or type_inst.opcode != OP_TYPE_INT:
            raise self._error(f"selector %{selector} is not of an integer type")
        size = max(1, (type_inst.operands[0] + 31) // 32)
        while p < end:
            p = self._number("LiteralInteger", size, p, end, values, kinds)
            if p >= end:
                raise self._error("too few operands: a switch literal without its label")
            p = self._operand("IdRef", p, end, values, kinds)
        return p

    def _ext_inst(self, specs: tuple, p: int, end: int, values: list, kinds: list) -> int:
        """OpExtInst: set, instruction number, then the operands that instruction takes
        (OpenCL.std per its grammar; NonSemantic.* sets all ids; other sets raw words)."""
        p = self._operands(specs[:2], p, end, values, kinds)
        set_id, number = values
        self._check_use(set_id, forward=False)
        set_name = self.module.ext_inst_imports.get(set_id)
        if set_name is None:
            raise self._error(f"%{set_id} is not an OpExtInstImport")
        if set_name == "OpenCL.std":
            entry = _OPENCL_STD.get(number)
            if entry is None:
                raise self._error(f"unknown OpenCL.std instruction {number}")
            return self._operands(entry[1], p, end, values, kinds)
        kind = "IdRef" if set_name.startswith("NonSemantic.") else "LiteralInteger"
        return self._operands(((kind, "*"),), p, end, values, kinds)

    def _spec_constant_op(self, specs: tuple, p: int, end: int, values: list, kinds: list) -> int:
        """OpSpecConstantOp: the opcode, then that opcode's operands."""
        p = self._operands(specs, p, end, values, kinds)
        info = _INSTRUCTIONS.get(values[0])
        if info is None or not (info[2] and info[3]):
            raise self._error(f"OpSpecConstantOp cannot perform opcode {values[0]}")
        return self._operands(info[4], p, end, values, kinds)

    # -- ids --------------------------------------------------------------------------

    def _check_use(self, target: int, forward: bool) -> None:
        """Check a referenced id: in range, and defined unless a forward reference is allowed."""
        if not 0 < target < self.bound:
            raise self._error(self._out_of_range(target))
        if target in self.module.defs or target in self.forward_pointers:
            return
        if forward:
            self.forward_refs.append((target, self.offset, self.opname))
        else:
            # Functions may be referenced before they are defined; anything else may not.
            self.function_refs.append((target, self.offset, self.opname))

    def _out_of_range(self, target: int) -> str:
        if target == 0:
            return "id 0 is out of range: ids start at 1"
        return f"id {target} is out of range: the module's id bound is {self.bound}"

    def _check_ids(self, inst: Instruction) -> None:
        forward_from = _FORWARD_FROM.get(inst.opcode, len(inst.kinds))
        if inst.opcode == _OP_TYPE_FORWARD_POINTER:
            self.forward_pointers.add(inst.operands[0])
        for index, kind in enumerate(inst.kinds):
            if kind in _ID_KINDS:
                self._check_use(inst.operands[index], index >= forward_from)
        result_id = inst.result_id
        if result_id is not None:
            if not 0 < result_id < self.bound:
                raise self._error("result " + self._out_of_range(result_id))
            if result_id in self.module.defs:
                raise self._error(f"id %{result_id} is defined twice")
            self.module.defs[result_id] = inst

    # -- layout -----------------------------------------------------------------------

    def _place(self, inst: Instruction) -> None:
        """Put the instruction where it belongs, checking the logical layout."""
        self.module.instructions.append(inst)
        opcode = inst.opcode
        if opcode in _ANYWHERE:
            return
        if self.function is not None:
            self._place_in_function(inst)
        elif opcode in _MODULE_SECTION:
            self._enter_section(_MODULE_SECTION[opcode])
            self._module_level(inst)
        elif opcode in _GLOBAL_ONLY or opcode in _GLOBAL_OR_BLOCK:
            self._enter_section(_GLOBALS)
            self._global(inst)
        elif opcode == OP_FUNCTION:
            self._enter_section(_FUNCTIONS)
            self.function = Function(inst, [], [])
            self.function_offset = inst.offset
        else:
            raise self._error("instruction outside a function")

    def _enter_section(self, section: int) -> None:
        if section < self.section:
            raise self._error("instruction out of order in the module's logical layout")
        if section > _MEMORY_MODEL and not self.memory_model_seen:
            raise self._error("instruction before the module's OpMemoryModel")
        self.section = section

    def _place_in_function(self, inst: Instruction) -> None:
        opcode = inst.opcode
        fn = self.function
        if opcode == OP_LABEL:
            if self.block is not None:
                raise self._error(f"block %{self.block.label_id} has no terminator")
            self.block = Block(inst.result_id, [], inst.offset)
            fn.blocks.append(self.block)
        elif opcode == OP_FUNCTION_END:
            if self.block is not None:
                raise self._error(f"block %{self.block.label_id} has no terminator")
            self.module.functions.append(fn)
            self.function = None
        elif opcode == _OP_FUNCTION_PARAMETER:
            if fn.blocks:
                raise self._error("OpFunctionParameter after the function's first block")
            fn.parameters.append(inst)
        elif opcode in _MODULE_SECTION or opcode in _GLOBAL_ONLY or opcode == OP_FUNCTION:
            raise self._error(f"instruction not allowed inside a function (in %{fn.id})")
        elif self.block is None:
            raise self._error("instruction outside a block")
        else:
            self.block.instructions.append(inst)
            if opcode in TERMINATORS:
                self.block = None

    def _global(self, inst: Instruction) -> None:
        opcode = inst.opcode
        if opcode in _EXT_INST:
            return  # non-semantic/debug info: kept in ``instructions`` and ``defs`` only
        self.module.globals.append(inst)

    def _module_level(self, inst: Instruction) -> None:
        """Record a module-level (layout sections 1-9) instruction in the Module."""
        m = self.module
        ops = inst.operands
        name = inst.opname
        if name == "OpCapability":
            m.capabilities.append(ops[0])
        elif name == "OpExtension":
            m.extensions.append(ops[0])
        elif name == "OpExtInstImport":
            m.ext_inst_imports[inst.result_id] = ops[0]
        elif name == "OpMemoryModel":
            if self.memory_model_seen:
                raise self._error("second OpMemoryModel")
            self.memory_model_seen = True
            m.addressing_model, m.memory_model = ops
        elif name == "OpEntryPoint":
            m.entry_points.append(EntryPoint(ops[0], ops[1], ops[2], ops[3:], inst.offset))
        elif name in ("OpExecutionMode", "OpExecutionModeId"):
            mode = ExecutionMode(ops[1], ops[2:], inst.offset)
            m.execution_modes.setdefault(ops[0], []).append(mode)
        elif name == "OpName":
            m.names[ops[0]] = ops[1]
        elif name == "OpMemberName":
            m.member_names[(ops[0], ops[1])] = ops[2]
        else:
            self._annotation(inst)

    def _annotation(self, inst: Instruction) -> None:
        m = self.module
        ops = inst.operands
        name = inst.opname
        if name in ("OpDecorate", "OpDecorateId", "OpDecorateString"):
            m.decorations.setdefault(ops[0], []).append(Decoration(ops[1], ops[2:], inst.offset))
        elif name in ("OpMemberDecorate", "OpMemberDecorateString"):
            decoration = Decoration(ops[2], ops[3:], inst.offset)
            m.member_decorations.setdefault((ops[0], ops[1]), []).append(decoration)
        elif name == "OpDecorationGroup":
            self.groups.add(inst.result_id)
        elif name == "OpGroupDecorate":
            for target in ops[1:]:
                m.decorations.setdefault(target, []).extend(self._group(ops[0]))
        elif name == "OpGroupMemberDecorate":
            for target, member in zip(ops[1::2], ops[2::2], strict=True):
                m.member_decorations.setdefault((target, member), []).extend(self._group(ops[0]))

    def _group(self, group: int) -> list[Decoration]:
        """Copies of the decorations of decoration group ``group``."""
        if group not in self.groups:
            raise self._error(f"%{group} is not an OpDecorationGroup")
        decorations = self.module.decorations.get(group, ())
        return [Decoration(d.decoration, list(d.operands), d.offset) for d in decorations]
