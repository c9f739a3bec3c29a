"""What an expression of a Python kernel evaluates to while it is being lowered."""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from .types import Array, KernelType


@dataclass
class Val:
    """A run-time value of a kernel type."""

    type: KernelType
    ir: ir.Value


@dataclass
class Lit:
    """A Python number or bool known at compile time; it takes the type of whatever it
    meets (``x * 2`` with ``x: float32`` multiplies by a float32 2)."""

    value: int | float | bool


@dataclass
class ArrayRef:
    """An array in memory (``local_array``, ``private_array``, or part of one after fewer
    subscripts than it has dimensions): its address and type."""

    type: Array
    ptr: ir.Value


@dataclass
class Obj:
    """A compile-time Python object: a module, a type, an intrinsic, a helper function."""

    value: object


@dataclass
class Tuple:
    """A tuple of values (for ``a, b = b, a`` and shapes)."""

    items: list
