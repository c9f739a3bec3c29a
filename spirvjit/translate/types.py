"""SPIR-V types: a small semantic description of each type id, and its LLVM type.

The translator asks two questions of a type: what LLVM type represents it, and
what SPIR-V says about it that LLVM does not keep (signedness is not part of a
SPIR-V integer's meaning, but the storage class of a pointer and the lanes of a
vector are). ``SpvType`` answers the second.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from llvmlite import ir

from ..errors import SpirvError
from ..spirv.grammar import Decoration
from ..spirv.module import Module
from ..spirv.validate import MAX_ARRAY_LENGTH

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)


@dataclass(frozen=True, slots=True)
class SpvType:
    """What the translator needs to know of a SPIR-V type beyond its LLVM type.

    kind: "void", "bool", "int", "float", "vector", "array", "struct", "pointer",
    "function" or "opaque" (events, samplers, images and other handles).
    """

    kind: str
    width: int = 0  # bits, for int and float
    element: int = 0  # type id of a vector's lanes, an array's elements, a pointer's pointee
    count: int = 0  # vector lanes, array length (0: runtime array)
    storage: int = -1  # a pointer's storage class
    members: tuple[int, ...] = ()  # struct members; a function's parameter types
    returns: int = 0  # a function type's return type id

    @property
    def is_vector(self) -> bool:
        return self.kind == "vector"


class TypeTable:
    """Lazily maps type ids of one module to ``SpvType`` and ``ir.Type``.

    ``address_space`` maps a SPIR-V storage class to the backend's LLVM address
    space; ``constant_value`` evaluates an array length id (which may be a spec
    constant) to an int.
    """

    def __init__(
        self,
        module: Module,
        address_space: Callable[[int], int],
        constant_value: Callable[[int], int],
    ):
        self.module = module
        self._address_space = address_space
        self._constant_value = constant_value
        self._spv: dict[int, SpvType] = {}
        self._llvm: dict[int, ir.Type] = {}

    def spv(self, type_id: int) -> SpvType:
        found = self._spv.get(type_id)
        if found is None:
            found = self._spv[type_id] = self._describe(type_id)
        return found

    def llvm(self, type_id: int) -> ir.Type:
        found = self._llvm.get(type_id)
        if found is None:
            found = self._llvm[type_id] = self._lower(type_id)
        return found

    def scalar(self, type_id: int) -> SpvType:
        """The lane type of a vector, or the type itself for a scalar."""
        t = self.spv(type_id)
        return self.spv(t.element) if t.kind == "vector" else t

    def lanes(self, type_id: int) -> int:
        """Number of lanes: a vector's count, 1 for a scalar."""
        t = self.spv(type_id)
        return t.count if t.kind == "vector" else 1

    def address_space(self, storage_class: int) -> int:
        return self._address_space(storage_class)

    def _inst(self, type_id: int):
        inst = self.module.defs.get(type_id)
        if inst is None or not inst.opname.startswith("OpType"):
            raise SpirvError(f"%{type_id} is used as a type but is not one")
        return inst

    def _describe(self, type_id: int) -> SpvType:
        inst = self._inst(type_id)
        op, ops = inst.opname, inst.operands
        if op == "OpTypeVoid":
            return SpvType("void")
        if op == "OpTypeBool":
            return SpvType("bool", width=1)
        if op == "OpTypeInt":
            return SpvType("int", width=ops[0])
        if op == "OpTypeFloat":
            return SpvType("float", width=ops[0])
        if op == "OpTypeVector":
            return SpvType("vector", element=ops[0], count=ops[1])
        if op == "OpTypeArray":
            count = self._constant_value(ops[1])
            # validate.py checked the default; a spec constant's value is known only now.
            length = self.module.defs[ops[1]]
            if length.opname.startswith("OpSpecConstant") and not 1 <= count <= MAX_ARRAY_LENGTH:
                raise SpirvError(
                    f"array length {count} after specialization (1 to {MAX_ARRAY_LENGTH})",
                    inst.offset,
                    op,
                )
            return SpvType("array", element=ops[0], count=count)
        if op == "OpTypeRuntimeArray":
            return SpvType("array", element=ops[0], count=0)
        if op == "OpTypeStruct":
            return SpvType("struct", members=tuple(ops))
        if op == "OpTypePointer":
            return SpvType("pointer", storage=ops[0], element=ops[1])
        if op == "OpTypeUntypedPointerKHR":
            return SpvType("pointer", storage=ops[0], element=0)
        if op == "OpTypeFunction":
            return SpvType("function", returns=ops[0], members=tuple(ops[1:]))
        return SpvType("opaque")

    def _lower(self, type_id: int) -> ir.Type:
        t = self.spv(type_id)
        if t.kind == "void":
            return ir.VoidType()
        if t.kind == "bool":
            return I1
        if t.kind == "int":
            if t.width not in (8, 16, 32, 64, 128):  # 128: see spirv/validate.py
                raise SpirvError(
                    f"integer width {t.width} is not supported", self._inst(type_id).offset
                )
            return ir.IntType(t.width)
        if t.kind == "float":
            floats = {16: ir.HalfType, 32: ir.FloatType, 64: ir.DoubleType}
            if t.width not in floats:
                raise SpirvError(
                    f"float width {t.width} is not supported", self._inst(type_id).offset
                )
            return floats[t.width]()
        if t.kind == "vector":
            return ir.VectorType(self.llvm(t.element), t.count)
        if t.kind == "array":
            return ir.ArrayType(self.llvm(t.element), t.count)
        if t.kind == "struct":
            members = [self.llvm(m) for m in t.members]
            packed = bool(self.module.decorations_of(type_id, Decoration.CPacked))
            return ir.LiteralStructType(members, packed=packed)
        if t.kind == "pointer":
            return ir.PointerType(addrspace=self._address_space(t.storage))
        if t.kind == "function":
            return ir.FunctionType(self.llvm(t.returns), [self.llvm(p) for p in t.members])
        # Events, samplers, queues and other handles are opaque pointers to the runtime.
        return ir.PointerType()
