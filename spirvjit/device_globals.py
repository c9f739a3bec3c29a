"""Program-scope variables seen from the host: ``Program.global_variable(name)``.

HIP programs read and write ``__device__`` and ``__constant__`` variables from the host
with hipMemcpyToSymbol / hipMemcpyFromSymbol; OpenCL programs have ``__global``
program-scope variables. On the host CPU these variables live once per program in
its data library (shared by all its kernels), so a NumPy array over their memory is
the variable itself: writes are seen by the next launch, and a launch's writes are
seen at once. (HIP ``__constant__`` variables are host-writable data: see
``translate/hip_prepass.py``.)

On a GPU the variable lives in device memory, inside the code objects of the program's
kernels (``backends/gpu/variables.py`` keeps their copies one value), which host memory
cannot alias: ``global_variable`` returns a ``DeviceVariable`` whose ``read()`` copies the
value to the host and ``write()`` copies one to the device, ordered with the launches as
hipMemcpyFromSymbol / hipMemcpyToSymbol are.

Both forms have the same interface, so code written against it runs on every device:
``name``, ``dtype``, ``shape``, ``nbytes``, ``read(stream=None)`` (a NumPy copy) and
``write(value, stream=None)``. The CPU form is besides a NumPy array (a view of the
variable itself); the GPU form converts to one (``np.asarray(v)`` reads it).
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


class HostVariable(np.ndarray):
    """A program-scope variable on the host CPU: a NumPy view of the variable itself,
    with the interface every form has (``read``/``write``)."""

    name: str

    def read(self, stream=None) -> np.ndarray:
        """A copy of the value (the CPU runs launches at once: ``stream`` changes nothing)."""
        return np.array(self)

    def write(self, value, stream=None) -> None:
        """Sets the value (``value`` is converted to the variable's dtype and shape)."""
        self[...] = np.broadcast_to(np.asarray(value, dtype=self.dtype), self.shape)


def variable_type(program: Program, name: str, dtype=None) -> tuple[int, np.dtype, tuple]:
    """The SPIR-V id, dtype and shape of the program-scope variable ``name`` (as read with
    ``dtype``): LaunchError listing the variables when there is none."""
    variable_id = _find(program, name)
    translation = program.translation()
    gv = translation.module.globals.get(_llvm_name(program, variable_id))
    if gv is None or gv not in translation.mutable_globals:
        raise LaunchError("is a constant the host cannot write, not a variable", name)
    view_dtype, shape = _numpy_type(gv.value_type, translation.module.data_layout)
    if dtype is not None and np.dtype(dtype).itemsize == view_dtype.itemsize:
        view_dtype = np.dtype(dtype)  # same shape: an unsigned int read as such
    elif dtype is not None:
        size = int(np.prod(shape, dtype=np.int64)) * view_dtype.itemsize
        view_dtype = np.dtype(dtype)
        if size % view_dtype.itemsize:
            raise LaunchError(f"is {size} bytes, not a whole number of {view_dtype}", name)
        shape = (size // view_dtype.itemsize,)
    return variable_id, view_dtype, shape


def _llvm_name(program: Program, variable_id: int) -> str:
    """The variable's name in the program's translation (GPU code exports it renamed)."""
    if program.target.kind == "cpu":
        return f"{program.symbol_prefix}.g{variable_id}"
    from .backends.gpu.variables import export_names

    return export_names(program.module)[variable_id]


def global_variable(program: Program, name: str, dtype=None) -> HostVariable:
    """A writable NumPy view of variable ``name`` on the host CPU; ``dtype`` reinterprets
    its bytes (signedness: SPIR-V integers have none, so the default is signed)."""
    from .backends import backend

    variable_id, view_dtype, shape = variable_type(program, name, dtype)
    address = backend("cpu").data_address(program, _llvm_name(program, variable_id))
    size = int(np.prod(shape, dtype=np.int64)) * view_dtype.itemsize
    buffer = (ctypes.c_char * size).from_address(address)
    buffer._program = program  # the array keeps the program's data library alive
    array = np.frombuffer(buffer, dtype=view_dtype).reshape(shape).view(HostVariable)
    array.name = name
    return array


class DeviceVariable:
    """A program-scope variable on a GPU: ``read()`` copies its value to the host,
    ``write(value)`` copies one to the device. Without ``stream`` both are ordered after
    the device's synchronous launches (and return when done); with ``stream`` (a
    ``spirvjit.Stream`` of the device) they are queued on it: a read's array holds the
    value once the stream is synchronised."""

    def __init__(self, name: str, symbol: str, dtype: np.dtype, shape: tuple, device, state):
        self.name, self.dtype, self.shape, self.device = name, dtype, shape, device
        self._symbol, self._state = symbol, state

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def _stream(self, stream):
        if stream is None:
            return None
        from .stream import check_stream

        check_stream(stream, self.device, self.name)
        return stream.handle

    def read(self, stream=None) -> np.ndarray:
        out = np.empty(self.shape, self.dtype)
        self._state.read(self._symbol, self.name, out, self._stream(stream))
        return out

    def write(self, value, stream=None) -> None:
        data = np.broadcast_to(np.asarray(value, dtype=self.dtype), self.shape)
        self._state.write(self._symbol, self.name, data.tobytes(), self._stream(stream))

    def __array__(self, dtype=None, copy=None):
        value = self.read()
        return value if dtype is None else value.astype(dtype)

    def __repr__(self) -> str:
        return (
            f"<spirvjit device variable {self.name}: {self.dtype}{list(self.shape)} "
            f"on {self.device.name}>"
        )


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
