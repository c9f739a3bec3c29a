"""Module-scope values: constants, spec constants (with values set at load time),
OpSpecConstantOp, OpUndef and the addresses of global variables.

Scalar constants are also evaluated to Python values, so that array lengths and
OpSpecConstantOp can be computed at JIT time exactly as the device would.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np
from llvmlite import ir

from ..errors import SpirvError
from ..spirv.grammar import Decoration, Op
from ..spirv.module import Instruction, Module
from .types import TypeTable

_FLOAT_FORMATS = {16: ("<e", "<H"), 32: ("<f", "<I"), 64: ("<d", "<Q")}


def bits_to_float(bits: int, width: int) -> float:
    ffmt, ifmt = _FLOAT_FORMATS[width]
    return struct.unpack(ffmt, struct.pack(ifmt, bits))[0]


def round_float(value: float, width: int) -> float:
    """``value`` rounded to a float of ``width`` bits (round to nearest even)."""
    kind = {16: np.float16, 32: np.float32, 64: np.float64}[width]
    with np.errstate(over="ignore"):
        return float(kind(value))


def _wrap(value: int, width: int) -> int:
    return value & ((1 << width) - 1)


def _signed(value: int, width: int) -> int:
    value = _wrap(value, width)
    return value - (1 << width) if value >> (width - 1) else value


class ConstantTable:
    """Lowers module-scope value ids to LLVM constants for one module.

    ``spec_constants`` maps SpecId → value (bool, int or float) and overrides the
    defaults written in the module. ``global_address`` gives the LLVM global for
    a module-scope OpVariable (the module translator owns globals).
    """

    def __init__(
        self,
        module: Module,
        types: TypeTable,
        spec_constants: dict[int, object],
        global_address: Callable[[Instruction], ir.Value],
    ):
        self.module = module
        self.types = types
        self.spec_constants = dict(spec_constants)
        self._global_address = global_address
        self._cache: dict[int, ir.Value] = {}
        self._python: dict[int, object] = {}
        self.used_spec_ids: set[int] = set()

    # -- Python values -------------------------------------------------------------

    def python(self, value_id: int) -> object:
        """The value of a scalar or composite constant as Python data (ints unsigned)."""
        if value_id not in self._python:
            self._python[value_id] = self._evaluate(self._inst(value_id))
        return self._python[value_id]

    def int_value(self, value_id: int) -> int:
        value = self.python(value_id)
        if not isinstance(value, int):
            raise SpirvError(
                f"%{value_id} must be an integer constant", self._inst(value_id).offset
            )
        return int(value)

    def _inst(self, value_id: int) -> Instruction:
        inst = self.module.defs.get(value_id)
        if inst is None:
            raise SpirvError(f"%{value_id} is not defined")
        return inst

    def _spec_override(self, inst: Instruction) -> object | None:
        for deco in self.module.decorations_of(inst.result_id, Decoration.SpecId):
            spec_id = deco.operands[0]
            if spec_id in self.spec_constants:
                self.used_spec_ids.add(spec_id)
                return self.spec_constants[spec_id]
        return None

    def _evaluate(self, inst: Instruction) -> object:
        op = inst.opname
        rtype = self.types.spv(inst.result_type) if inst.result_type else None
        if op in ("OpConstantTrue", "OpConstantFalse", "OpSpecConstantTrue", "OpSpecConstantFalse"):
            value = op.endswith("True")
            if op.startswith("OpSpec"):
                override = self._spec_override(inst)
                if override is not None:
                    value = bool(override)
            return value
        if op in ("OpConstant", "OpSpecConstant"):
            bits = inst.operands[0]
            value = bits_to_float(bits, rtype.width) if rtype.kind == "float" else bits
            if op == "OpSpecConstant":
                override = self._spec_override(inst)
                if override is not None:
                    value = self._coerce(override, rtype, inst)
            return value
        if op == "OpConstantNull":
            return self._null(inst.result_type)
        if op in ("OpConstantComposite", "OpSpecConstantComposite"):
            return [self.python(part) for part in inst.operands]
        if op == "OpSpecConstantOp":
            return self._spec_op(inst)
        if op == "OpConstantFunctionPointerINTEL":
            raise SpirvError(
                function_pointer_message(self.module, inst.operands[0]), inst.offset, op
            )
        raise SpirvError(
            f"%{inst.result_id} is not a constant the JIT can evaluate", inst.offset, op
        )

    def _coerce(self, value: object, rtype, inst: Instruction) -> object:
        if rtype.kind == "float":
            return round_float(float(value), rtype.width)
        if rtype.kind == "int":
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise SpirvError(
                    f"spec constant %{inst.result_id} is an integer; got {value!r}", inst.offset
                )
            return _wrap(int(value), rtype.width)
        return value

    def _null(self, type_id: int) -> object:
        t = self.types.spv(type_id)
        if t.kind == "bool":
            return False
        if t.kind == "int":
            return 0
        if t.kind == "float":
            return 0.0
        if t.kind == "vector":
            return [self._null(t.element)] * t.count
        if t.kind == "array":
            return [self._null(t.element)] * t.count
        if t.kind == "struct":
            return [self._null(m) for m in t.members]
        return None

    def _spec_op(self, inst: Instruction) -> object:
        """Evaluates OpSpecConstantOp on scalars (the opcodes the Kernel capability allows)."""
        opcode, args = inst.operands[0], inst.operands[1:]
        name = Op(opcode).name
        rtype = self.types.spv(inst.result_type)
        if name in ("OpCompositeExtract", "OpCompositeInsert", "OpVectorShuffle"):
            return self._spec_composite(name, args)
        values = [self.python(a) for a in args]
        first_type = self.types.spv(self.module.defs[args[0]].result_type)
        width = rtype.width if rtype.kind in ("int", "float") else 0
        w0 = first_type.width
        if name == "OpSelect":
            return values[1] if values[0] else values[2]
        if rtype.kind == "bool" or name.startswith("OpLogical"):
            return self._spec_compare(name, values, w0)
        if rtype.kind == "float":
            return round_float(self._spec_float(name, values, first_type), width)
        return _wrap(self._spec_int(name, values, w0, width, inst), width)

    def _spec_composite(self, name: str, args: list) -> object:
        if name == "OpCompositeExtract":
            value = self.python(args[0])
            for index in args[1:]:
                value = value[index]
            return value
        if name == "OpCompositeInsert":
            obj = self.python(args[0])
            composite = _deep_copy(self.python(args[1]))
            target = composite
            for index in args[2:-1]:
                target = target[index]
            target[args[-1]] = obj
            return composite
        lanes = list(self.python(args[0])) + list(self.python(args[1]))
        return [lanes[i] if i != 0xFFFFFFFF else lanes[0] for i in args[2:]]

    @staticmethod
    def _spec_compare(name: str, v: list, width: int) -> bool:
        s = [
            (_signed(x, width) if isinstance(x, int) and not isinstance(x, bool) else x) for x in v
        ]
        table = {
            "OpLogicalOr": lambda: bool(v[0]) or bool(v[1]),
            "OpLogicalAnd": lambda: bool(v[0]) and bool(v[1]),
            "OpLogicalNot": lambda: not v[0],
            "OpLogicalEqual": lambda: bool(v[0]) == bool(v[1]),
            "OpLogicalNotEqual": lambda: bool(v[0]) != bool(v[1]),
            "OpIEqual": lambda: v[0] == v[1],
            "OpINotEqual": lambda: v[0] != v[1],
            "OpULessThan": lambda: v[0] < v[1],
            "OpUGreaterThan": lambda: v[0] > v[1],
            "OpULessThanEqual": lambda: v[0] <= v[1],
            "OpUGreaterThanEqual": lambda: v[0] >= v[1],
            "OpSLessThan": lambda: s[0] < s[1],
            "OpSGreaterThan": lambda: s[0] > s[1],
            "OpSLessThanEqual": lambda: s[0] <= s[1],
            "OpSGreaterThanEqual": lambda: s[0] >= s[1],
        }
        if name not in table:
            raise SpirvError(f"OpSpecConstantOp {name} with a boolean result is not supported")
        return table[name]()

    def _spec_float(self, name: str, v: list, first_type) -> float:
        if name == "OpConvertSToF":
            return float(_signed(v[0], first_type.width))
        if name == "OpConvertUToF":
            return float(v[0])
        if name == "OpFConvert":
            return float(v[0])
        table = {
            "OpFNegate": lambda: -v[0],
            "OpFAdd": lambda: v[0] + v[1],
            "OpFSub": lambda: v[0] - v[1],
            "OpFMul": lambda: v[0] * v[1],
            "OpFDiv": lambda: float(np.float64(v[0]) / np.float64(v[1])),
        }
        if name not in table:
            raise SpirvError(f"OpSpecConstantOp {name} with a float result is not supported")
        with np.errstate(all="ignore"):
            return table[name]()

    @staticmethod
    def _spec_int(name: str, v: list, w0: int, width: int, inst: Instruction) -> int:
        s = [_signed(x, w0) if isinstance(x, int) else x for x in v]
        if name in ("OpUDiv", "OpSDiv", "OpUMod", "OpSRem", "OpSMod") and v[1] == 0:
            raise SpirvError("OpSpecConstantOp divides by zero", inst.offset)

        def sdiv() -> int:
            q = abs(s[0]) // abs(s[1])
            return q if (s[0] < 0) == (s[1] < 0) else -q

        def srem() -> int:
            return s[0] - sdiv() * s[1]

        def smod() -> int:
            r = srem()
            return r + s[1] if r and (r < 0) != (s[1] < 0) else r

        table = {
            "OpSConvert": lambda: s[0],
            "OpUConvert": lambda: v[0],
            "OpSNegate": lambda: -v[0],
            "OpNot": lambda: ~v[0],
            "OpIAdd": lambda: v[0] + v[1],
            "OpISub": lambda: v[0] - v[1],
            "OpIMul": lambda: v[0] * v[1],
            "OpUDiv": lambda: v[0] // v[1],
            "OpSDiv": sdiv,
            "OpUMod": lambda: v[0] % v[1],
            "OpSRem": srem,
            "OpSMod": smod,
            "OpShiftRightLogical": lambda: v[0] >> (v[1] % w0),
            "OpShiftRightArithmetic": lambda: s[0] >> (v[1] % w0),
            "OpShiftLeftLogical": lambda: v[0] << (v[1] % w0),
            "OpBitwiseOr": lambda: v[0] | v[1],
            "OpBitwiseXor": lambda: v[0] ^ v[1],
            "OpBitwiseAnd": lambda: v[0] & v[1],
            "OpConvertFToS": lambda: int(v[0]),
            "OpConvertFToU": lambda: int(v[0]),
        }
        if name not in table:
            raise SpirvError(f"OpSpecConstantOp {name} is not supported", inst.offset)
        return table[name]()

    # -- LLVM constants ------------------------------------------------------------

    def value(self, value_id: int) -> ir.Value:
        """The LLVM value of a module-scope id (constant, spec constant, undef, global)."""
        found = self._cache.get(value_id)
        if found is None:
            found = self._cache[value_id] = self._lower(self._inst(value_id))
        return found

    def _lower(self, inst: Instruction) -> ir.Value:
        op = inst.opname
        if op == "OpVariable":
            return self._global_address(inst)
        if op == "OpUndef":
            return ir.Constant(self.types.llvm(inst.result_type), ir.Undefined)
        if op == "OpConstantNull":
            return ir.Constant(self.types.llvm(inst.result_type), None)
        if op == "OpSpecConstantOp" and self._is_pointer_op(inst):
            return self._pointer_spec_op(inst)
        if op in ("OpConstantComposite", "OpSpecConstantComposite"):
            ty = self.types.llvm(inst.result_type)
            parts = [self.value(part) for part in inst.operands]
            return ir.Constant(ty, parts)
        return self.from_python(inst.result_type, self.python(inst.result_id))

    def from_python(self, type_id: int, value: object) -> ir.Constant:
        ty = self.types.llvm(type_id)
        t = self.types.spv(type_id)
        if t.kind in ("vector", "array", "struct"):
            members = t.members if t.kind == "struct" else [t.element] * t.count
            parts = [self.from_python(m, v) for m, v in zip(members, value, strict=True)]
            return ir.Constant(ty, parts)
        if t.kind == "bool":
            return ir.Constant(ty, int(bool(value)))
        if t.kind == "int":
            return ir.Constant(ty, _wrap(int(value), t.width))
        if t.kind == "float":
            return ir.Constant(ty, float(value))
        return ir.Constant(ty, None)

    def _is_pointer_op(self, inst: Instruction) -> bool:
        return self.types.spv(inst.result_type).kind == "pointer" or Op(inst.operands[0]).name in (
            "OpConvertPtrToU",
        )

    def _pointer_spec_op(self, inst: Instruction) -> ir.Value:
        name = Op(inst.operands[0]).name
        args = inst.operands[1:]
        base = self.value(args[0])
        result_ty = self.types.llvm(inst.result_type)
        ref = f"{base.type} {base.get_reference()}"
        if name in (
            "OpAccessChain",
            "OpInBoundsAccessChain",
            "OpPtrAccessChain",
            "OpInBoundsPtrAccessChain",
        ):
            pointee = self.types.llvm(self.types.spv(self.module.defs[args[0]].result_type).element)
            indices = [self.int_value(a) for a in args[1:]]
            if name in ("OpAccessChain", "OpInBoundsAccessChain"):
                indices.insert(0, 0)
            # Struct member indices must be i32 in LLVM; i32 is right for the others too.
            text = ", ".join(f"i32 {i}" for i in indices)
            return ir.FormattedConstant(result_ty, f"getelementptr ({pointee}, {ref}, {text})")
        if name in ("OpBitcast", "OpPtrCastToGeneric", "OpGenericCastToPtr"):
            if base.type == result_ty:
                return base
            return ir.FormattedConstant(result_ty, f"addrspacecast ({ref} to {result_ty})")
        if name == "OpConvertPtrToU":
            return ir.FormattedConstant(result_ty, f"ptrtoint ({ref} to {result_ty})")
        raise SpirvError(f"OpSpecConstantOp {name} on pointers is not supported", inst.offset)


def _deep_copy(value: object) -> object:
    return [_deep_copy(v) for v in value] if isinstance(value, list) else value


# C++ virtual functions (clang puts the methods' addresses in a vtable, a
# SPV_INTEL_function_pointers constant, and calls through it) and __device__ function
# pointers: the translator calls functions only by name.
FUNCTION_POINTERS = (
    "spirvjit does not call functions through pointers (C++ virtual functions, "
    "__device__ function pointers); call the function directly or dispatch on a type tag"
)


def function_pointer_message(module: Module, function_id: int | None) -> str:
    """The error for a function pointer constant (``function_id``: the function) or call."""
    if function_id is None:
        return f"a call through a function pointer: {FUNCTION_POINTERS}"
    from ..kernel_names import demangle_names

    name = module.names.get(function_id, f"%{function_id}")
    shown = demangle_names([name]).get(name, name)
    return (
        f"the address of function {shown} (a vtable entry or function pointer): {FUNCTION_POINTERS}"
    )
