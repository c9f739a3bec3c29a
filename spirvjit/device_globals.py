"""Program-scope variables seen from the host: ``Program.global_variable(name)``.

HIP programs read and write ``__device__`` and ``__constant__`` variables from the host
with hipMemcpyToSymbol / hipMemcpyFromSymbol; OpenCL programs have ``__global``
program-scope variables. On the host CPU these variables live once per program in
its data library (shared by all its kernels), so a NumPy array over their memory is
the variable itself: writes are seen by the next launch, and a launch's writes are
seen at once. (HIP ``__constant__`` variables are host-writable data: see
``translate/hip_prepass.py``.)

GPU targets are not covered yet: each GPU kernel is its own code object with its own
copy of the variables, so there is no single variable to map.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING

import numpy as np
from llvmlite import ir

from .errors import LaunchError
from .kernel_names import demangle_names
from .spirv.grammar import StorageClass

if TYPE_CHECKING:
    from .program import Program

_SCALARS = {
    ir.HalfType: np.float16,
    ir.FloatType: np.float32,
    ir.DoubleType: np.float64,
}


def global_variable(program: Program, name: str, dtype=None) -> np.ndarray:
    """A writable NumPy view of variable ``name``; ``dtype`` reinterprets its bytes
    (signedness: SPIR-V integers have none, so the default is signed)."""
    if program.target.kind != "cpu":
        raise LaunchError(
            "program-scope variables are reachable from the host only on the host CPU", name
        )
    from .backends import backend

    translation = program.translation()
    by_symbol = {gv.name: gv for gv in translation.mutable_globals}
    variable_id = _find(program, name)
    gv = by_symbol.get(f"{program.symbol_prefix}.g{variable_id}")
    if gv is None:
        raise LaunchError("is a constant the host cannot write, not a variable", name)
    address = backend("cpu").data_address(program, gv.name)
    view_dtype, shape = _numpy_type(gv.value_type, translation.module.data_layout)
    size = int(np.prod(shape, dtype=np.int64)) * view_dtype.itemsize
    buffer = (ctypes.c_char * size).from_address(address)
    buffer._program = program  # the array keeps the program's data library alive
    array = np.frombuffer(buffer, dtype=view_dtype).reshape(shape)
    if dtype is not None:
        array = array.reshape(-1).view(np.uint8).view(dtype)
    return array


def _find(program: Program, name: str) -> int:
    module = program.module
    candidates = [
        inst.result_id
        for inst in module.globals
        if inst.opname == "OpVariable" and inst.operands[0] == StorageClass.CrossWorkgroup
    ]
    names = {module.names.get(i, ""): i for i in candidates}
    if name in names:
        return names[name]
    for mangled, demangled in demangle_names(list(names)).items():
        if demangled == name or demangled.rsplit("::", 1)[-1] == name:
            return names[mangled]
    visible = sorted(n for n in names if n and not n.startswith(("__hip_cuid_", "llvm.")))
    raise LaunchError(
        "no program-scope variable of that name; this program has "
        + (", ".join(visible) or "none"),
        name,
    )


def _numpy_type(ty: ir.Type, data_layout: str) -> tuple[np.dtype, tuple[int, ...]]:
    """The element dtype and shape of an LLVM type (bytes for structs)."""
    shape: list[int] = []
    while isinstance(ty, (ir.ArrayType, ir.VectorType)):
        shape.append(ty.count)
        ty = ty.element
    if isinstance(ty, ir.IntType) and ty.width in (8, 16, 32, 64):
        return np.dtype(f"int{ty.width}"), tuple(shape)
    for kind, scalar in _SCALARS.items():
        if isinstance(ty, kind):
            return np.dtype(scalar), tuple(shape)
    # Structs and anything else: their bytes.
    from llvmlite import binding as llvm

    size = ty.get_abi_size(llvm.create_target_data(data_layout))
    return np.dtype(np.uint8), (*shape, size)
