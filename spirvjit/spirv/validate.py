"""Structural checks on a read Module: what spirv-val would reject and the translator
would otherwise trip over (or run) — types, sizes, counts, indices and operand kinds.

``read_module`` checks the encoding, ids and layout; this pass, run at its end, checks
that the pieces fit together, so a malformed module is a SpirvError (with the
instruction's word offset) and never an exception deep in the translator, an LLVM
error, a 22 GB constant or code that runs. The limits are in docs/limits.md.

Checked:

* types: integer widths 8/16/32/64 (and 128 with SPV_ALTERA_arbitrary_precision_integers)
  and signedness 0/1, float widths 16/32/64 (no other
  encodings), vectors of 2, 3, 4, 8 or 16 numeric or boolean lanes, array lengths that
  are integer constants from 1 to ``MAX_ARRAY_LENGTH``, members, pointees, parameters
  and results that are types, and every type at most ``MAX_TYPE_BYTES`` bytes;
* every result type is a type; constants have a type of their kind and, for
  composites, as many constituents as the type has members;
* functions: the function type is one, its parameters match it; calls name a function
  and pass as many arguments as it takes; entry points name functions;
* operands: an operand that must be a value is not a type, a label, a function or an
  extended-instruction set; branch, merge and phi targets are labels of the function;
* indices: OpCompositeExtract/Insert literals and OpVectorShuffle lanes are in range;
  an access chain's struct indices are constants in range and it only indexes into
  composites; decorated members exist;
* unsized arrays (clang's T[0xFFFFFFFF] for ``extern __shared__``): only pointed to by
  Workgroup or Generic pointers, only as imported Workgroup variables; never a value,
  a member, an element, a parameter or a whole-object memory copy.
"""

from __future__ import annotations

from ..errors import SpirvError
from .grammar import Decoration, LinkageType, StorageClass
from .module import Instruction, Module

# OpenCL C has these vector sizes only (SPIR-V's Vector16 capability), plus one: clang-22's
# SPIR-V back end writes LLVM's <1 x T> as a one-component OpTypeVector (a splat of a
# private array element, `(long4)(a[0])`: see docs/design.md "Known producer bugs"), which
# SPIR-V allows only with SPV_EXT_long_vector. Its meaning is clear: LLVM's <1 x T>.
VECTOR_SIZES = (1, 2, 3, 4, 8, 16)
# Larger arrays are refused: nothing on the host needs them, and a null constant or a
# private array of 2**32 elements would exhaust memory while translating.
MAX_ARRAY_LENGTH = 1 << 24
# How clang-22 spells HIP's ``extern __shared__`` arrays: T[0xFFFFFFFF] (a 32-bit
# OpConstant length) in Workgroup storage, rewritten into dynamic shared memory
# (translate/dynamic_shared.py). Such an array counts as size 0, like a runtime array,
# and is accepted only there: as the pointee of an imported Workgroup variable and of
# the pointers to it (Workgroup, and Generic: clang casts the variable to a generic
# pointer before indexing it). Anywhere else it would be a 16-32 GiB object: a
# variable, a value, a member, a memory copy.
UNSIZED_LENGTH = 0xFFFFFFFF
UNSIZED_STORAGE = (StorageClass.Workgroup, StorageClass.Generic)
MAX_TYPE_BYTES = 1 << 32
MAX_ALIGNMENT = 1 << 16
INT_WIDTHS = (8, 16, 32, 64)
# 128-bit integers, with SPV_ALTERA_arbitrary_precision_integers only: clang-22's SPIR-V
# back end declares it for HIP (spirv64-amd-amdhsa) when the IR has an i128: HIP's
# `__int128`, and LLVM 22's -O2 turning a 64x64 multiply's high half written with 32-bit
# partial products (`__umul64hi`) into one i128 multiply. Every target's LLVM has i128.
WIDE_INT_WIDTHS = INT_WIDTHS + (128,)
ARBITRARY_PRECISION_INTEGERS = 5844  # Capability ArbitraryPrecisionIntegersALTERA
FLOAT_WIDTHS = (16, 32, 64)

_NUMERIC = ("OpTypeInt", "OpTypeFloat", "OpTypeBool")
_COMPOSITE_CONSTANTS = ("OpConstantComposite", "OpSpecConstantComposite")
_ALIGNMENT = Decoration.Alignment
# Operand positions (in ``operands``) that are labels, per opcode; None: all odd ones.
_LABEL_OPERANDS = {
    "OpBranch": (0,),
    "OpBranchConditional": (1, 2),
    "OpSelectionMerge": (0,),
    "OpLoopMerge": (0, 1),
}
# Id operands that name something other than a value, left to their own checks.
_NOT_VALUES = frozenset(
    (
        "OpFunctionCall",  # operand 0 is the callee (checked below)
        "OpExtInst",  # operand 0 is the set; non-OpenCL sets are skipped entirely
        "OpExtInstWithForwardRefsKHR",
        "OpCooperativeMatrixLengthKHR",
        "OpUntypedAccessChainKHR",
        "OpUntypedInBoundsAccessChainKHR",
        "OpUntypedPtrAccessChainKHR",
        "OpUntypedInBoundsPtrAccessChainKHR",
        "OpUntypedVariableKHR",
        "OpConstantFunctionPointerINTEL",
        "OpEnqueueKernel",
        "OpGetKernelNDrangeSubGroupCount",
        "OpGetKernelNDrangeMaxSubGroupSize",
        "OpGetKernelWorkGroupSize",
        "OpGetKernelPreferredWorkGroupSizeMultiple",
        "OpGetKernelLocalSizeForSubgroupCount",
        "OpGetKernelMaxNumSubgroups",
    )
)
_NON_VALUE_DEFINITIONS = frozenset(
    ("OpLabel", "OpFunction", "OpExtInstImport", "OpDecorationGroup", "OpString")
)
_ACCESS_CHAINS = {
    "OpAccessChain": 1,
    "OpInBoundsAccessChain": 1,
    "OpPtrAccessChain": 2,
    "OpInBoundsPtrAccessChain": 2,
}


# Instructions with checks of their own beyond "value operands are values".
_CHECKED = frozenset(
    (
        "OpVariable",
        "OpPhi",
        "OpSwitch",
        "OpBranch",
        "OpBranchConditional",
        "OpSelectionMerge",
        "OpLoopMerge",
        "OpFunctionCall",
        "OpCompositeExtract",
        "OpCompositeInsert",
        "OpVectorShuffle",
        "OpVectorExtractDynamic",
        "OpVectorInsertDynamic",
        "OpCompositeConstruct",
        *_ACCESS_CHAINS,
    )
)


def validate(module: Module) -> None:
    """Raise SpirvError for the first structural problem found in ``module``."""
    _Validator(module).run()


class _Validator:
    def __init__(self, module: Module):
        self.m = module
        self.defs = module.defs
        self.sizes: dict[int, int] = {}
        self.types = {
            i
            for i, inst in self.defs.items()
            if inst.opname.startswith("OpType") and inst.opname != "OpTypeForwardPointer"
        }
        # Ids that name something other than a value.
        self.non_values = self.types | {
            i for i, inst in self.defs.items() if inst.opname in _NON_VALUE_DEFINITIONS
        }
        # Pointers declared by OpTypeForwardPointer before their OpTypePointer.
        self.forward = {i.operands[0] for i in module.globals if i.opname == "OpTypeForwardPointer"}
        self.unsized = {i for i in self.types if self.is_unsized(i)}
        wide = ARBITRARY_PRECISION_INTEGERS in module.capabilities
        self.int_widths = WIDE_INT_WIDTHS if wide else INT_WIDTHS

    def error(self, inst: Instruction, message: str) -> SpirvError:
        return SpirvError(message, inst.offset, inst.opname)

    def run(self) -> None:
        for inst in self.m.globals:
            if inst.opname.startswith("OpType"):
                self.type_decl(inst)
        for inst in self.m.globals:
            self.result_type(inst)
            if inst.opname.startswith(("OpConstant", "OpSpecConstant")):
                self.constant(inst)
            elif inst.opname == "OpVariable":
                self.variable(inst)
        for inst in self.m.instructions:
            if inst.opname in ("OpMemberDecorate", "OpMemberDecorateString"):
                self.member_of(inst, inst.operands[0], inst.operands[1])
            if inst.opname == "OpDecorate" and inst.operands[1] == _ALIGNMENT:
                value = inst.operands[2]
                if value < 1 or value & (value - 1) or value > MAX_ALIGNMENT:
                    raise self.error(inst, f"alignment {value} (a power of two to 2**16)")
        for entry in self.m.entry_points:
            target = self.defs.get(entry.function_id)
            if target is None or target.opname != "OpFunction":
                raise SpirvError(
                    f"entry point {entry.name!r} names %{entry.function_id}, not a function",
                    entry.offset,
                    "OpEntryPoint",
                )
            if self.defs.get(target.result_type, target).opname != "OpTypeVoid":
                raise SpirvError(
                    f"entry point {entry.name!r} returns a value (kernels return void)",
                    entry.offset,
                    "OpEntryPoint",
                )
        for fn in self.m.functions:
            self.function(fn)

    # -- types ---------------------------------------------------------------------------

    def is_type(self, type_id: int) -> bool:
        return type_id in self.types

    def type_inst(self, inst: Instruction, type_id: int, what: str) -> Instruction:
        found = self.defs.get(type_id)
        if not self.is_type(type_id):
            raise self.error(inst, f"{what} %{type_id} is not a type")
        return found

    def type_decl(self, inst: Instruction) -> None:
        op, ops = inst.opname, inst.operands
        if op == "OpTypeInt":
            if ops[0] not in self.int_widths or ops[1] not in (0, 1):
                raise self.error(inst, f"integer type of width {ops[0]}, signedness {ops[1]}")
        elif op == "OpTypeFloat":
            if ops[0] not in FLOAT_WIDTHS or len(ops) > 1:
                raise self.error(inst, f"unsupported floating-point type (width {ops[0]})")
        elif op == "OpTypeVector":
            lanes = self.type_inst(inst, ops[0], "vector component type")
            if lanes.opname not in _NUMERIC:
                raise self.error(inst, f"vector of {lanes.opname[6:]}: lanes must be scalars")
            if ops[1] not in VECTOR_SIZES:  # 1: clang-22's <1 x T> (see VECTOR_SIZES)
                raise self.error(inst, f"vector of {ops[1]} components (2, 3, 4, 8 or 16)")
        elif op in ("OpTypeArray", "OpTypeRuntimeArray"):
            self.sized(inst, ops[0], "array element type")
            if op == "OpTypeArray":
                self.array_length(inst, ops[1])
        elif op == "OpTypeStruct":
            for member in ops:
                self.sized(inst, member, "struct member type")
        elif op == "OpTypePointer":
            if not (self.is_type(ops[1]) or ops[1] in self.forward):
                raise self.error(inst, f"pointee %{ops[1]} is not a type")
            if ops[1] in self.unsized and ops[0] not in UNSIZED_STORAGE:
                raise self.error(
                    inst,
                    f"pointer type %{inst.result_id} in {_storage_name(ops[0])} storage to "
                    f"the unsized array %{ops[1]} (T[0xFFFFFFFF], extern __shared__: "
                    "Workgroup storage only)",
                )
        elif op == "OpTypeFunction":
            self.type_inst(inst, ops[0], "return type")
            for param in ops[1:]:
                self.sized(inst, param, "parameter type")
            if ops[0] in self.unsized:
                raise self.error(inst, f"return type %{ops[0]} is an unsized array")
        if op in ("OpTypeVector", "OpTypeArray", "OpTypeStruct"):
            size = self.size(inst.result_id)
            if size > MAX_TYPE_BYTES:
                raise self.error(inst, f"type of {size} bytes (at most {MAX_TYPE_BYTES})")

    def sized(self, inst: Instruction, type_id: int, what: str) -> None:
        found = self.type_inst(inst, type_id, what)
        if found.opname in ("OpTypeVoid", "OpTypeFunction"):
            raise self.error(inst, f"{what} %{type_id} is {found.opname[6:].lower()}")
        if type_id in self.unsized:
            raise self.error(inst, f"{what} %{type_id} is an unsized array (T[0xFFFFFFFF])")

    def is_unsized(self, type_id: int) -> bool:
        """Whether ``type_id`` is clang's T[0xFFFFFFFF] (a 32-bit constant length)."""
        inst = self.defs[type_id]
        if inst.opname != "OpTypeArray":
            return False
        length = self.defs.get(inst.operands[1])
        if length is None or length.opname != "OpConstant" or length.operands[0] != UNSIZED_LENGTH:
            return False
        length_type = self.defs.get(length.result_type)
        return (
            length_type is not None
            and length_type.opname == "OpTypeInt"
            and length_type.operands[0] == 32
        )

    def array_length(self, inst: Instruction, length_id: int) -> None:
        length = self.defs.get(length_id)
        if length is None or length.opname not in ("OpConstant", "OpSpecConstant"):
            raise self.error(inst, f"array length %{length_id} is not an integer constant")
        length_type = self.defs.get(length.result_type)
        if length_type is None or length_type.opname != "OpTypeInt":
            raise self.error(inst, f"array length %{length_id} is not an integer constant")
        value = length.operands[0]
        if length_type.operands[1] and value >> (length_type.operands[0] - 1):
            value = -1  # negative
        if not 1 <= value <= MAX_ARRAY_LENGTH and inst.result_id not in self.unsized:
            raise self.error(inst, f"array length {value} (1 to {MAX_ARRAY_LENGTH})")

    def size(self, type_id: int) -> int:
        """Bytes of a type (an upper bound; pointers 8, handles 8, runtime arrays 0)."""
        found = self.sizes.get(type_id)
        if found is not None:
            return found
        self.sizes[type_id] = 0  # guards against cycles through forward pointers
        inst = self.defs[type_id]
        op, ops = inst.opname, inst.operands
        if op in ("OpTypeInt", "OpTypeFloat"):
            size = max(1, ops[0] // 8)
        elif op == "OpTypeBool":
            size = 1
        elif op == "OpTypeVector":
            size = self.size(ops[0]) * (4 if ops[1] == 3 else ops[1])
        elif op == "OpTypeArray":
            length = self.defs[ops[1]].operands[0]
            size = 0 if type_id in self.unsized else self.size(ops[0]) * length
        elif op == "OpTypeStruct":
            size = sum(self.size(m) for m in ops)
        elif op == "OpTypeRuntimeArray" or op == "OpTypeVoid":
            size = 0
        else:
            size = 8
        self.sizes[type_id] = size
        return size

    # -- constants and result types ------------------------------------------------------

    def result_type(self, inst: Instruction) -> None:
        if inst.result_type is not None and not self.is_type(inst.result_type):
            raise self.error(inst, f"result type %{inst.result_type} is not a type")
        if inst.result_type in self.unsized:
            raise self.error(inst, f"a value of the unsized array type %{inst.result_type}")

    def constant(self, inst: Instruction) -> None:
        op = inst.opname
        rtype = self.defs[inst.result_type]
        if op in ("OpConstantTrue", "OpConstantFalse", "OpSpecConstantTrue", "OpSpecConstantFalse"):
            if rtype.opname != "OpTypeBool":
                raise self.error(inst, "a boolean constant of a non-boolean type")
        elif op in ("OpConstant", "OpSpecConstant"):
            # A 16-bit float's literal word has its high half zero (spirv-val's rule);
            # integers are taken modulo their width, as the translator does.
            if rtype.opname == "OpTypeFloat" and inst.operands[0] >> rtype.operands[0]:
                raise self.error(inst, f"literal {inst.operands[0]:#x} is wider than the type")
        elif op in ("OpConstantNull",) and rtype.opname in ("OpTypeVoid", "OpTypeFunction"):
            raise self.error(inst, f"a null constant of type {rtype.opname[6:]}")
        elif op in _COMPOSITE_CONSTANTS:
            members = self.members(rtype)
            if members is None:
                raise self.error(inst, f"a composite constant of type {rtype.opname[6:]}")
            if len(members) != len(inst.operands):
                raise self.error(
                    inst,
                    f"{len(inst.operands)} constituents for a type of {len(members)} members",
                )
            for constituent in inst.operands:
                found = self.defs.get(constituent)
                if found is None or not found.opname.startswith(
                    ("OpConstant", "OpSpecConstant", "OpUndef")
                ):
                    raise self.error(inst, f"constituent %{constituent} is not a constant")

    def variable(self, inst: Instruction) -> None:
        pointer = self.defs[inst.result_type]
        if pointer.opname != "OpTypePointer":
            raise self.error(inst, "a variable whose type is not a pointer")
        if pointer.operands[0] != inst.operands[0]:
            raise self.error(inst, "the storage class differs from its pointer type's")
        if pointer.operands[1] in self.unsized:
            self.unsized_variable(inst)
        elif pointer.operands[1] in self.types:
            self.sized(inst, pointer.operands[1], "the variable's type")
        if len(inst.operands) > 1:
            initializer = self.defs.get(inst.operands[1])
            if initializer is None or initializer.result_type != pointer.operands[1]:
                raise self.error(inst, "the initializer's type differs from the variable's")

    def unsized_variable(self, inst: Instruction) -> None:
        """An unsized array variable must be an ``extern __shared__`` one: in Workgroup
        storage, imported (its memory is the launch's dynamic shared memory)."""
        storage = inst.operands[0]
        if storage != StorageClass.Workgroup:
            raise self.error(
                inst,
                f"variable %{inst.result_id} in {_storage_name(storage)} storage of an "
                "unsized array (T[0xFFFFFFFF], extern __shared__: Workgroup storage only)",
            )
        if len(inst.operands) > 1 or not any(
            d.operands[-1] == LinkageType.Import
            for d in self.m.decorations_of(inst.result_id, Decoration.LinkageAttributes)
        ):
            raise self.error(
                inst,
                f"Workgroup variable %{inst.result_id} of an unsized array that is not "
                "imported (extern __shared__) or has an initializer",
            )

    def members(self, type_inst: Instruction) -> list[int] | None:
        """Member type ids of a composite type, None for other types."""
        op, ops = type_inst.opname, type_inst.operands
        if op == "OpTypeVector":
            return [ops[0]] * ops[1]
        if op == "OpTypeArray":
            return [ops[0]] * self.defs[ops[1]].operands[0]
        if op == "OpTypeStruct":
            return list(ops)
        return None

    def member_of(self, inst: Instruction, struct_id: int, member: int) -> None:
        found = self.defs.get(struct_id)
        if found is None or found.opname != "OpTypeStruct":
            raise self.error(inst, f"%{struct_id} is not a struct type")
        if member >= len(found.operands):
            raise self.error(inst, f"member {member} of a struct of {len(found.operands)}")

    # -- functions -----------------------------------------------------------------------

    def function(self, fn) -> None:
        definition = fn.definition
        fn_type = self.defs.get(definition.operands[1])
        if fn_type is None or fn_type.opname != "OpTypeFunction":
            raise self.error(definition, f"%{definition.operands[1]} is not a function type")
        self.result_type(definition)
        if fn_type.operands[0] != definition.result_type:
            raise self.error(definition, "the return type differs from the function type's")
        params = fn_type.operands[1:]
        if len(params) != len(fn.parameters):
            raise self.error(
                definition, f"{len(fn.parameters)} parameters for a type with {len(params)}"
            )
        for param, type_id in zip(fn.parameters, params, strict=True):
            if param.result_type != type_id:
                raise self.error(param, "the parameter's type differs from the function type's")
        labels = {block.label_id for block in fn.blocks}
        types, non_values = self.types, self.non_values
        for block in fn.blocks:
            for inst in block.instructions:
                if inst.result_type is not None and (
                    inst.result_type not in types or inst.result_type in self.unsized
                ):
                    self.result_type(inst)  # raises, with the message
                op = inst.opname
                if op == "OpCopyMemory":
                    self.copy_memory(inst)
                if op in _CHECKED:
                    if op == "OpVariable":
                        self.variable(inst)
                    self.operands(inst, labels)
                    self.indices(inst)
                elif op not in _NOT_VALUES:
                    # The common case, inlined: no operand names a type, label or function.
                    for value, kind in zip(inst.operands, inst.kinds, strict=True):
                        if kind == "IdRef" and value in non_values:
                            self.operands(inst, labels)  # raises, with the message

    def copy_memory(self, inst: Instruction) -> None:
        """OpCopyMemory copies its pointee whole: not an unsized array's 16-32 GiB."""
        for pointer_id in inst.operands[:2]:
            pointer = self.defs.get(pointer_id)
            pointer_type = self.defs.get(pointer.result_type) if pointer is not None else None
            if (
                pointer_type is not None
                and pointer_type.opname == "OpTypePointer"
                and pointer_type.operands[1] in self.unsized
            ):
                raise self.error(inst, f"copies the unsized array that %{pointer_id} points to")

    def operands(self, inst: Instruction, labels: set[int]) -> None:
        op, ops = inst.opname, inst.operands
        if op == "OpPhi":
            label_at = set(range(1, len(ops), 2))
        elif op == "OpSwitch":
            label_at = {1, *range(3, len(ops), 2)}
        else:
            label_at = set(_LABEL_OPERANDS.get(op, ()))
        for index in label_at:
            if index < len(ops) and ops[index] not in labels:
                raise self.error(inst, f"%{ops[index]} is not a label of this function")
        if op == "OpFunctionCall":
            self.call(inst)
        if op in _NOT_VALUES:
            return
        for index, kind in enumerate(inst.kinds):
            if kind != "IdRef" or index in label_at:
                continue
            if op == "OpSwitch" and index >= 2:
                continue  # literals, decoded as ints
            if ops[index] in self.non_values:
                what = self.defs[ops[index]].opname[2:]
                raise self.error(inst, f"operand %{ops[index]} is a {what}, not a value")

    def call(self, inst: Instruction) -> None:
        callee = self.defs.get(inst.operands[0])
        if callee is None or callee.opname != "OpFunction":
            raise self.error(inst, f"%{inst.operands[0]} is not a function")
        fn_type = self.defs.get(callee.operands[1])
        if fn_type is not None and fn_type.opname == "OpTypeFunction":
            wanted = len(fn_type.operands) - 1
            if len(inst.operands) - 1 != wanted:
                raise self.error(
                    inst, f"{len(inst.operands) - 1} arguments for a function of {wanted}"
                )
        for arg in inst.operands[1:]:
            found = self.defs.get(arg)
            if found is not None and (
                found.opname.startswith("OpType") or found.result_type is None
            ):
                raise self.error(inst, f"argument %{arg} is not a value")

    # -- indices -------------------------------------------------------------------------

    def value_type(self, inst: Instruction, value_id: int) -> Instruction:
        value = self.defs.get(value_id)
        if value is None or value.result_type is None:
            raise self.error(inst, f"%{value_id} is not a value")
        return self.defs[value.result_type]

    def indices(self, inst: Instruction) -> None:
        op, ops = inst.opname, inst.operands
        if op == "OpCompositeExtract":
            self.walk_literals(inst, self.value_type(inst, ops[0]), ops[1:])
        elif op == "OpCompositeInsert":
            self.walk_literals(inst, self.value_type(inst, ops[1]), ops[2:])
        elif op == "OpVectorShuffle":
            first = self.value_type(inst, ops[0])
            second = self.value_type(inst, ops[1])
            if first.opname != "OpTypeVector" or second.opname != "OpTypeVector":
                raise self.error(inst, "shuffles operands that are not vectors")
            lanes = first.operands[1] + second.operands[1]
            for component in ops[2:]:
                if component >= lanes and component != 0xFFFFFFFF:
                    raise self.error(inst, f"component {component} of {lanes} lanes")
            result = self.defs[inst.result_type]
            if result.opname != "OpTypeVector" or result.operands[1] != len(ops) - 2:
                raise self.error(inst, "the result is not a vector of as many components")
        elif op in ("OpVectorExtractDynamic", "OpVectorInsertDynamic"):
            if self.value_type(inst, ops[0]).opname != "OpTypeVector":
                raise self.error(inst, "the operand is not a vector")
        elif op in _ACCESS_CHAINS:
            self.access_chain(inst, ops[0], ops[_ACCESS_CHAINS[op] :])
        elif op == "OpCompositeConstruct":
            self.construct(inst)

    def walk_literals(self, inst: Instruction, type_inst: Instruction, indices: list) -> None:
        for index in indices:
            members = self.members(type_inst)
            if members is None:
                raise self.error(inst, f"index {index} into a {type_inst.opname[6:]}")
            if index >= len(members):
                raise self.error(inst, f"index {index} out of range (size {len(members)})")
            type_inst = self.defs[members[index]]

    def access_chain(self, inst: Instruction, base: int, indices: list) -> None:
        pointer = self.value_type(inst, base)
        if pointer.opname != "OpTypePointer":
            raise self.error(inst, f"base %{base} is not a pointer")
        current = self.defs.get(pointer.operands[1])
        for index_id in indices:
            if current is None:
                return
            op = current.opname
            if op == "OpTypeStruct":
                index = self.defs.get(index_id)
                if index is None or index.opname != "OpConstant":
                    raise self.error(inst, "a struct index that is not a constant")
                if index.operands[0] >= len(current.operands):
                    raise self.error(
                        inst,
                        f"member {index.operands[0]} of a struct of {len(current.operands)}",
                    )
                current = self.defs.get(current.operands[index.operands[0]])
            elif op in ("OpTypeArray", "OpTypeRuntimeArray", "OpTypeVector"):
                current = self.defs.get(current.operands[0])
            else:
                raise self.error(inst, f"indexes into a {op[6:]}")

    def construct(self, inst: Instruction) -> None:
        result = self.defs[inst.result_type]
        members = self.members(result)
        if members is None:
            raise self.error(inst, f"constructs a {result.opname[6:]}")
        if result.opname == "OpTypeVector":
            lanes = 0
            for part in inst.operands:
                part_type = self.value_type(inst, part)
                lanes += part_type.operands[1] if part_type.opname == "OpTypeVector" else 1
            if lanes != len(members):
                raise self.error(inst, f"{lanes} lanes for a vector of {len(members)}")
        elif len(inst.operands) != len(members):
            raise self.error(
                inst, f"{len(inst.operands)} constituents for a type of {len(members)} members"
            )


def _storage_name(storage: int) -> str:
    try:
        return StorageClass(storage).name
    except ValueError:
        return f"storage class {storage}"
