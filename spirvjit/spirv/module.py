"""The in-memory model of a SPIR-V module, as the reader builds it.

The model keeps the module's logical layout (SPIR-V spec 2.4) with the
cross-references a translator needs ready-made: every result id maps to its
defining instruction, decorations are grouped by target (decoration groups
already applied), and functions are split into blocks.

Operands are decoded into plain Python values in grammar order:
ids and integer literals are ``int``; strings are ``str``; a context-dependent
number (OpConstant, OpSpecConstant, OpSwitch literals) is the unsigned ``int`` made
of its words (low word first) — its meaning comes from the result or selector type;
an enumerant is its ``int`` value, followed by the enumerant's own parameters as
further operands. ``kinds`` names each operand's grammar kind (``IdRef``,
``LiteralInteger``, ``Decoration``, ...) in parallel with ``operands``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import grammar


@dataclass(slots=True)
class Instruction:
    opcode: int
    opname: str
    result_type: int | None
    result_id: int | None
    operands: list
    kinds: tuple[str, ...]
    offset: int  # word offset of the instruction's first word in the module


@dataclass(slots=True)
class Decoration:
    decoration: int  # a spirvjit.spirv.grammar.Decoration value
    operands: list  # the decoration's literal/id parameters
    offset: int


@dataclass(slots=True)
class EntryPoint:
    execution_model: int
    function_id: int
    name: str
    interface: list[int]
    offset: int


@dataclass(slots=True)
class ExecutionMode:
    mode: int  # a spirvjit.spirv.grammar.ExecutionMode value
    operands: list  # literals for OpExecutionMode, ids for OpExecutionModeId
    offset: int


@dataclass(slots=True)
class Block:
    label_id: int
    instructions: list[Instruction]  # OpPhi first, the terminator last; OpLabel excluded
    offset: int


@dataclass(slots=True)
class Function:
    definition: Instruction  # the OpFunction
    parameters: list[Instruction]  # the OpFunctionParameter instructions
    blocks: list[Block]  # empty for a declaration (an imported function)

    @property
    def id(self) -> int:
        return self.definition.result_id

    @property
    def result_type(self) -> int:
        return self.definition.result_type

    @property
    def control(self) -> int:
        return self.definition.operands[0]

    @property
    def function_type(self) -> int:
        return self.definition.operands[1]


@dataclass(slots=True)
class Module:
    version: tuple[int, int]
    generator: int
    bound: int
    schema: int
    big_endian: bool = False
    capabilities: list[int] = field(default_factory=list)
    extensions: list[str] = field(default_factory=list)
    ext_inst_imports: dict[int, str] = field(default_factory=dict)  # id -> set name
    addressing_model: int = 0
    memory_model: int = 0
    entry_points: list[EntryPoint] = field(default_factory=list)
    execution_modes: dict[int, list[ExecutionMode]] = field(default_factory=dict)  # fn id -> modes
    names: dict[int, str] = field(default_factory=dict)
    member_names: dict[tuple[int, int], str] = field(default_factory=dict)
    decorations: dict[int, list[Decoration]] = field(default_factory=dict)
    member_decorations: dict[tuple[int, int], list[Decoration]] = field(default_factory=dict)
    # Types, constants (spec constants and OpSpecConstantOp too), global OpVariables
    # and OpUndef, in module order.
    globals: list[Instruction] = field(default_factory=list)
    functions: list[Function] = field(default_factory=list)
    defs: dict[int, Instruction] = field(default_factory=dict)  # result id -> defining instruction
    instructions: list[Instruction] = field(default_factory=list)  # every instruction, in order

    def decorations_of(self, target: int, decoration: int) -> list[Decoration]:
        """The decorations of one kind on ``target`` (empty when there are none)."""
        return [d for d in self.decorations.get(target, ()) if d.decoration == decoration]

    def writable_by_value(self, param_id: int) -> bool:
        """Whether parameter ``param_id`` is ByVal and not NoWrite: the function's own copy
        of the pointee, which it may write (the caller's object must not change)."""
        attrs = {
            d.operands[0] for d in self.decorations_of(param_id, grammar.Decoration.FuncParamAttr)
        }
        flags = grammar.FunctionParameterAttribute
        return flags.ByVal in attrs and flags.NoWrite not in attrs

    def name_of(self, target: int) -> str:
        """The OpName of ``target``, or ``%<id>`` when it has none."""
        return self.names.get(target, f"%{target}")

    def function(self, function_id: int) -> Function:
        for fn in self.functions:
            if fn.id == function_id:
                return fn
        raise KeyError(function_id)
