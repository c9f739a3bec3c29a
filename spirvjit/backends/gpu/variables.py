"""Program-scope variables on GPUs: what each code object exports, and one value per
program and device seen by every kernel and by the host.

HIP's ``__device__`` / ``__constant__`` variables and OpenCL's ``__global`` program-scope
variables are one object per program that all its kernels share and the host reads and
writes (hipMemcpyToSymbol / hipMemcpyFromSymbol). On a GPU each kernel is its own code
object (``backend.py``), and each code object, including a kernel's specialised variants,
holds its own copy of every variable of the program, exported under a fixed symbol
(``export_names``) so the driver finds it (hipModuleGetGlobal / cuModuleGetGlobal).

``ProgramVariables`` makes those copies act as one variable: it remembers which loaded
code object holds the current values (the *home*: the last one launched, or the host's
values written before any launch) and, before a launch of another code object, copies
every variable there, device to device, on the launch's stream. The host reads and writes
the home. Programs without variables pay nothing; a program with variables pays a few
small copies when consecutive launches run different code objects.
"""

from __future__ import annotations

import ctypes
import re
import threading
from collections import Counter
from collections.abc import Mapping

import numpy as np

from ...errors import LaunchError
from ...spirv.grammar import Decoration, StorageClass
from .driver import GpuDriverError

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def export_names(module) -> dict[int, str]:
    """The symbol each mutable program-scope variable of the SPIR-V ``module`` is exported
    under in a GPU code object, by variable id: its source-level (linkage) name, as clang
    exports it from a HIP code object (``counter``, ``_ZN2ns7counterE``), where that is a
    plain identifier no other name of the module uses; ``spirvjit_g<id>`` otherwise (PTX
    takes no dots, and symbols must be unique)."""
    counts = Counter(module.names.values())
    taken = {name for name, n in counts.items() if n > 1}
    taken.update(e.name for e in module.entry_points)
    found: dict[int, str] = {}
    for inst in module.globals:
        if (
            inst.opname != "OpVariable"
            or inst.operands[0] != StorageClass.CrossWorkgroup
            or module.decorations_of(inst.result_id, Decoration.Constant)
        ):
            continue
        name = module.names.get(inst.result_id, "")
        plain = _IDENTIFIER.fullmatch(name) and not name.startswith(("llvm", "spirvjit"))
        fallback = f"spirvjit_g{inst.result_id}"
        found[inst.result_id] = name if plain and name not in taken else fallback
    return found


def rename_for_export(translation, module, prefix: str) -> None:
    """Gives each mutable global of ``translation`` (named ``<prefix>.g<id>`` by the
    translator) its exported name."""
    llmodule = translation.module
    for variable_id, symbol in export_names(module).items():
        old = f"{prefix}.g{variable_id}"
        gv = llmodule.globals.pop(old, None)
        if gv is None:
            continue
        gv._set_name(symbol)  # llvmlite has no public rename
        llmodule.globals[gv.name] = gv


class ProgramVariables:
    """The variables of one program on one GPU, kept as one value across the code
    objects loaded for its kernels (see the module docstring). Variables are known by
    their exported symbol (``export_names``); ``symbols`` maps each to the names a code
    object may export it as (spirvjit's, and clang's for a HIP code object)."""

    def __init__(self, context, symbols: Mapping[str, tuple[str, ...]], describe: str):
        self._context = context
        self._symbols = dict(symbols)
        self._describe = describe  # "program 'x' on <device>", for errors
        self._lock = threading.RLock()
        self._home = None  # the module holding the current values; None: the host's
        self._host: dict[str, bytes] = {}  # values written before any launch
        self._addresses: dict[int, dict[str, tuple[int, int]]] = {}  # id(module) -> ...
        self._modules: list = []  # every module registered, kept alive for the ids above
        self._pending: list = []  # host buffers of asynchronous uploads, kept alive
        self._first_load = None  # loads some kernel, for a read before any launch

    def set_first_load(self, load) -> None:
        """``load()`` loads one kernel of the program (registering its module): how a read
        before any launch finds the variables' initial values."""
        self._first_load = load

    def register(self, module) -> None:
        """A code object of the program, just loaded: finds its variables (a variable a
        code object does not export, such as one clang dropped from native code, is
        left out of the copies to and from it)."""
        with self._lock:
            if id(module) in self._addresses:
                return
            found: dict[str, tuple[int, int]] = {}
            for symbol, candidates in self._symbols.items():
                for candidate in candidates:
                    try:
                        found[symbol] = module.global_variable(candidate)
                    except GpuDriverError:
                        continue
                    break
            self._addresses[id(module)] = found
            self._modules.append(module)

    def before_launch(self, module, stream: int | None) -> None:
        """Brings the current values into ``module`` before a launch of one of its kernels
        on ``stream`` (a driver handle, None: the default stream); it is the home after."""
        with self._lock:
            if self._home is module:
                return
            mine = self._addresses[id(module)]
            if self._home is None:
                for symbol, value in self._host.items():
                    if symbol in mine:
                        self._upload(mine[symbol], value, stream)
            else:
                theirs = self._addresses[id(self._home)]
                copy = self._context.copy_device_to_device
                for symbol, (address, size) in mine.items():
                    if symbol in theirs:
                        copy(address, theirs[symbol][0], min(size, theirs[symbol][1]), stream)
            self._home, self._host = module, {}

    def _upload(self, where: tuple[int, int], value: bytes, stream) -> None:
        address, size = where
        value = value[:size]
        buffer = ctypes.create_string_buffer(value, len(value))
        self._context.copy_to_device(address, ctypes.addressof(buffer), len(value), stream)
        if stream is not None:
            self._pending.append(buffer)  # the copy reads it later

    def _where(self, symbol: str, name: str, nbytes: int) -> int:
        found = self._addresses[id(self._home)].get(symbol)
        if found is None:
            exported = " or ".join(self._symbols[symbol])
            raise LaunchError(
                f"{self._home.what} ({self._describe}) exports no variable '{name}' "
                f"(looked for {exported})",
                name,
            )
        if found[1] < nbytes:
            raise LaunchError(
                f"variable '{name}' is {found[1]} bytes in {self._home.what}, not {nbytes}: "
                "that code object was not built from this program",
                name,
            )
        return found[0]

    def _settle(self) -> None:
        """Makes a loaded code object the home, loading one first if none is: a read
        before any launch sees the initial values (and any written since)."""
        if self._home is None and self._modules:
            self.before_launch(self._modules[0], None)

    def read(self, symbol: str, name: str, out: np.ndarray, stream: int | None = None) -> None:
        """Copies the variable's current value into ``out`` (after the work queued before
        on ``stream``; with a stream, ``out`` holds it once the stream is synchronised)."""
        if self._home is None and not self._modules and self._first_load is not None:
            # Loading takes the program's lock, which a loading thread holds while it
            # registers here: load before taking this lock.
            self._first_load()
        with self._lock:
            self._settle()
            if self._home is None:
                raise LaunchError(f"no code object of {self._describe} is loaded", name)
            address = self._where(symbol, name, out.nbytes)
            self._context.copy_to_host(out.ctypes.data, address, out.nbytes, stream)

    def write(self, symbol: str, name: str, value: bytes, stream: int | None = None) -> None:
        """Sets the variable (queued after the work before it on ``stream``)."""
        with self._lock:
            if self._home is None:
                self._host[symbol] = value
            else:
                self._upload((self._where(symbol, name, len(value)), len(value)), value, stream)
