"""The types of Python kernels: scalars, vectors, pointers into an address space, arrays.

These objects are what users write in annotations (``spirvjit.lang.float32``,
``Global[float4]``); the lowering maps each to its LLVM type, its OpenCL C spelling
(for the ``kernel_arg_type`` metadata the SPIR-V back end reads pointee types from) and
its Itanium mangling code (for OpenCL built-in calls).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from llvmlite import ir

# OpenCL address spaces as clang numbers them for SPIR-V (and the SPIR-V storage class
# each becomes): private 0 (Function), global 1 (CrossWorkgroup), constant 2
# (UniformConstant), local 3 (Workgroup).
PRIVATE, GLOBAL, CONSTANT, LOCAL = 0, 1, 2, 3
SPACE_NAMES = {PRIVATE: "private", GLOBAL: "global", CONSTANT: "constant", LOCAL: "local"}


class KernelType:
    """Base class of every type a kernel value can have."""

    @property
    def llvm(self) -> ir.Type:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True, eq=True, repr=False)
class Scalar(KernelType):
    """A scalar: ``kind`` is "int", "uint", "float" or "bool"."""

    name: str
    kind: str
    bits: int
    cl: str  # OpenCL C spelling
    code: str  # Itanium mangling code

    @cached_property
    def llvm(self) -> ir.Type:
        if self.kind == "bool":
            return ir.IntType(1)
        if self.kind == "float":
            return {16: ir.HalfType(), 32: ir.FloatType(), 64: ir.DoubleType()}[self.bits]
        return ir.IntType(self.bits)

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def signed(self) -> bool:
        return self.kind == "int"

    @property
    def size(self) -> int:
        return max(1, self.bits // 8)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.bool_ if self.kind == "bool" else f"{self.kind[0]}{self.size}")

    def __call__(self, value=0):
        """On the host, a NumPy scalar of this type (``float32(2)`` -> ``np.float32(2)``);
        inside a kernel, a conversion."""
        return self.dtype.type(value)

    def __getitem__(self, _):  # float32[:] reads as an array annotation to some users
        raise TypeError(f"write Global[{self.name}] for a pointer to {self.name}")


@dataclass(frozen=True, eq=True, repr=False)
class Vector(KernelType):
    """An OpenCL vector of 2, 3, 4, 8 or 16 lanes of a scalar type."""

    elem: Scalar
    lanes: int

    @property
    def name(self) -> str:
        # OpenCL's name, unless that is a scalar's name here (int8: 8 ints in OpenCL C).
        cl = f"{self.elem.cl}{self.lanes}"
        return f"{self.elem.name}x{self.lanes}" if cl in _SCALAR_NAMES else cl

    @cached_property
    def llvm(self) -> ir.Type:
        return ir.VectorType(self.elem.llvm, self.lanes)

    @property
    def cl(self) -> str:
        return f"{self.elem.cl}{self.lanes}"

    @property
    def code(self) -> str:
        return f"Dv{self.lanes}_{self.elem.code}"

    @property
    def size(self) -> int:
        # A 3-lane vector occupies 4 lanes, as in OpenCL C.
        return self.elem.size * (4 if self.lanes == 3 else self.lanes)

    @property
    def is_float(self) -> bool:
        return self.elem.is_float

    def __call__(self, *values):
        """On the host, a NumPy array of the lanes (with the vector's storage size)."""
        lanes = np.zeros(4 if self.lanes == 3 else self.lanes, self.elem.dtype)
        if len(values) == 1:
            lanes[: self.lanes] = values[0]
        else:
            lanes[: self.lanes] = values
        return lanes


@dataclass(frozen=True, eq=True, repr=False)
class Pointer(KernelType):
    """A pointer to ``elem`` values in address space ``space``."""

    elem: KernelType
    space: int

    @property
    def name(self) -> str:
        return f"{_SPACE_TYPES[self.space]}[{self.elem.name}]"

    @cached_property
    def llvm(self) -> ir.Type:
        return ir.PointerType(addrspace=self.space)


@dataclass(frozen=True, eq=True, repr=False)
class Array(KernelType):
    """A fixed-shape array (``local_array``/``private_array``): lives in memory, indexed
    with as many subscripts as it has dimensions; never a value on its own."""

    elem: KernelType
    shape: tuple[int, ...]
    space: int

    @property
    def name(self) -> str:
        return f"{SPACE_NAMES[self.space]} {self.elem.name}{list(self.shape)}"

    @property
    def count(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @cached_property
    def llvm(self) -> ir.Type:
        return ir.ArrayType(self.elem.llvm, self.count)


class AddressSpace:
    """``Global[float32]`` and friends: the annotation of a pointer argument."""

    def __init__(self, name: str, space: int):
        self.name = name
        self.space = space

    def __getitem__(self, elem) -> Pointer:
        if not isinstance(elem, (Scalar, Vector)) or elem == BOOL:
            raise TypeError(f"{self.name}[...] takes a scalar or vector type, not {elem!r}")
        return Pointer(elem, self.space)

    def __repr__(self) -> str:
        return self.name


class ConstantMarker:
    """``spirvjit.Constant[int]``: a parameter whose value is fixed when the kernel is
    specialised (a SPIR-V specialization constant, or a baked value)."""

    def __getitem__(self, ty) -> ConstantParam:
        return ConstantParam(ty)

    def __repr__(self) -> str:
        return "Constant"


@dataclass(frozen=True)
class ConstantParam:
    type: object  # int, float, bool or a Scalar

    @property
    def scalar(self) -> Scalar:
        if isinstance(self.type, Scalar):
            return self.type
        return {int: INT32, float: FLOAT32, bool: BOOL}[self.type]


def _scalar(name: str, kind: str, bits: int, cl: str, code: str) -> Scalar:
    return Scalar(name, kind, bits, cl, code)


BOOL = _scalar("bool_", "bool", 1, "bool", "b")
INT8 = _scalar("int8", "int", 8, "char", "c")
UINT8 = _scalar("uint8", "uint", 8, "uchar", "h")
INT16 = _scalar("int16", "int", 16, "short", "s")
UINT16 = _scalar("uint16", "uint", 16, "ushort", "t")
INT32 = _scalar("int32", "int", 32, "int", "i")
UINT32 = _scalar("uint32", "uint", 32, "uint", "j")
INT64 = _scalar("int64", "int", 64, "long", "l")
UINT64 = _scalar("uint64", "uint", 64, "ulong", "m")
FLOAT16 = _scalar("float16", "float", 16, "half", "Dh")
FLOAT32 = _scalar("float32", "float", 32, "float", "f")
FLOAT64 = _scalar("float64", "float", 64, "double", "d")

SCALARS = (BOOL, INT8, UINT8, INT16, UINT16, INT32, UINT32, INT64, UINT64)
SCALARS += (FLOAT16, FLOAT32, FLOAT64)
NUMERIC = SCALARS[1:]
_SCALAR_NAMES = {s.name for s in SCALARS}
VECTOR_LANES = (2, 3, 4, 8, 16)
# OpenCL names of every vector type: float4, uchar16, ...
VECTORS = {f"{s.cl}{n}": Vector(s, n) for s in NUMERIC for n in VECTOR_LANES}

_SPACE_TYPES = {GLOBAL: "Global", LOCAL: "Local", CONSTANT: "ConstantMem", PRIVATE: "Private"}


def from_dtype(dtype) -> Scalar:
    """The scalar type of a NumPy dtype."""
    dtype = np.dtype(dtype)
    for s in SCALARS:
        if s.dtype == dtype:
            return s
    raise TypeError(f"no kernel type for NumPy dtype {dtype}")


def common_scalar(a: Scalar, b: Scalar) -> Scalar:
    """C's usual arithmetic conversions without the promotion of small integers to int:
    the wider type wins, a float beats an integer, unsigned beats signed of equal width."""
    if a == b:
        return a
    if a.is_float or b.is_float:
        if a.is_float and b.is_float:
            return a if a.bits >= b.bits else b
        return a if a.is_float else b
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    return a if a.kind == "uint" else b
