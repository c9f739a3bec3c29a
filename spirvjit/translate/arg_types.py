"""What the OpenCL C source declared for each kernel parameter, when the module says.

llvm-spirv (``--preserve-ocl-kernel-arg-type-metadata-through-string``) and spirvjit's
clang front end record a kernel's parameter types and qualifiers as strings:
``OpString "kernel_arg_type.<kernel>.float*,int,"``, ``"kernel_arg_type_qual.<kernel>.const,,"``
and (spirvjit's front end only) ``"kernel_arg_base_type.<kernel>.float4*,..."`` with
typedefs resolved. With opaque pointers the SPIR-V pointee type is only the producer's
guess from how the kernel uses the pointer; the declared type is what the caller must
pass, so it decides the element type of a buffer argument when it names one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..spirv.module import Module

# OpenCL C scalar type names -> (kind, bits); kind None: takes any buffer (bytes).
_SCALARS: dict[str, tuple[str | None, int]] = {
    "void": (None, 8),
    "char": (None, 8),
    "uchar": (None, 8),
    "signed char": (None, 8),
    "unsigned char": (None, 8),
    "bool": ("bool", 8),
    "short": ("int", 16),
    "ushort": ("int", 16),
    "unsigned short": ("int", 16),
    "int": ("int", 32),
    "uint": ("int", 32),
    "unsigned int": ("int", 32),
    "unsigned": ("int", 32),
    "long": ("int", 64),
    "ulong": ("int", 64),
    "unsigned long": ("int", 64),
    # spir64 / spirv64: 64-bit sizes and pointers
    "size_t": ("int", 64),
    "ptrdiff_t": ("int", 64),
    "intptr_t": ("int", 64),
    "uintptr_t": ("int", 64),
    "half": ("float", 16),
    "float": ("float", 32),
    "double": ("float", 64),
}
_VECTOR = re.compile(r"([a-z_ ]+?)(2|3|4|8|16)?")
# Logical layout (SPIR-V 2.4): OpString only appears among these, before any debug name,
# annotation or type, so a lookup reads a few dozen instructions, not the whole module.
_PREAMBLE = frozenset(
    {
        "OpCapability",
        "OpExtension",
        "OpExtInstImport",
        "OpMemoryModel",
        "OpEntryPoint",
        "OpExecutionMode",
        "OpExecutionModeId",
        "OpString",
        "OpSource",
        "OpSourceContinued",
        "OpSourceExtension",
    }
)


@dataclass(frozen=True, slots=True)
class DeclaredArg:
    """One parameter as the source declared it (strings as the module recorded them)."""

    type: str  # e.g. "float*", "float4*", "int"; "" when unknown
    qualifiers: frozenset[str]  # "const", "restrict", "volatile", "pipe"

    def pointee(self) -> tuple[str | None, int, int] | None:
        """(element kind, bits, lanes) of a pointer's element; None when not known.

        The kind is None for ``void*`` and ``char*`` (any buffer). Structs, unions,
        enums, images and names spirvjit does not know give None: the SPIR-V type stays.
        """
        text = " ".join(self.type.split())
        if not text.endswith("*"):
            return None
        text = text[:-1].strip()
        for word in ("const", "volatile", "restrict"):
            text = re.sub(rf"\b{word}\b", "", text)
        text = " ".join(text.removeprefix("__").split())
        text = text.removeprefix("atomic_")  # atomic_int* is an int buffer
        m = _VECTOR.fullmatch(text)
        if m is None or m.group(1) not in _SCALARS:
            return None
        kind, bits = _SCALARS[m.group(1)]
        lanes = int(m.group(2) or 1)
        if kind is None and lanes > 1:
            return "int", bits, lanes  # char4* holds 4-byte vectors
        return kind, bits, lanes

    @property
    def const(self) -> bool:
        return "const" in self.qualifiers


_ARG_STRING = re.compile(
    r"(kernel_arg_base_type|kernel_arg_type|kernel_arg_type_qual)\.([^.]*)\.(.*)"
)


def read_declared_args(module: Module) -> dict[str, dict[str, list[str]]]:
    """Every kernel argument string of ``module``: kernel -> kind -> one value per parameter."""
    table: dict[str, dict[str, list[str]]] = {}
    for inst in module.instructions:
        if inst.opname not in _PREAMBLE:
            break
        if inst.opname != "OpString":
            continue
        m = _ARG_STRING.fullmatch(inst.operands[0])
        if m is None:
            continue
        values = m.group(3).split(",")
        if values and values[-1] == "":
            values.pop()  # every value ends with ","
        table.setdefault(m.group(2), {})[m.group(1)] = values
    return table


def declared_args(
    table: dict[str, dict[str, list[str]]], kernel: str, count: int
) -> list[DeclaredArg] | None:
    """The declared parameters of ``kernel`` (``count`` of them), or None when not recorded.

    ``table`` is ``read_declared_args(module)``. Base types (typedefs resolved) win over
    types as spelled; a string whose entry count differs from ``count`` is ignored.
    """
    found = {k: v for k, v in table.get(kernel, {}).items() if len(v) == count}
    types = found.get("kernel_arg_base_type") or found.get("kernel_arg_type")
    quals = found.get("kernel_arg_type_qual")
    if types is None and quals is None:
        return None
    types = types or [""] * count
    quals = quals or [""] * count
    return [DeclaredArg(t, frozenset(q.split())) for t, q in zip(types, quals, strict=True)]
