"""Programs and kernels: the objects users hold and launch."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Mapping

from . import config, jit
from .backends.cpu import codegen
from .backends.cpu.launcher import (
    INLINE_WORK_ITEMS,
    RUNNER,
    ArgumentPacker,
    ThreadPool,
    choose_local_size,
    launch_record,
    normalize_sizes,
)
from .errors import LaunchError
from .spirv.module import Module
from .spirv.reader import read_module
from .target import Target, host_target
from .translate.module import Translation
from .translate.signature import KernelSignature

log = logging.getLogger("spirvjit")

_pool: ThreadPool | None = None
_pool_lock = threading.Lock()


def _thread_pool() -> ThreadPool:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPool(config.num_threads())
        return _pool


class Program:
    """A SPIR-V module ready to run: kernels are JIT-compiled at their first launch."""

    def __init__(
        self,
        spirv: bytes,
        spec_constants: Mapping[int, object] | None = None,
        name: str = "program",
    ):
        self._spirv = bytes(spirv)
        self.name = name
        self.module: Module = read_module(self._spirv)
        self.spec_constants = dict(spec_constants or {})
        digest = hashlib.sha256(self._spirv)
        digest.update(repr(sorted(self.spec_constants.items())).encode())
        self.digest = digest.hexdigest()
        self._prefix = f"spirvjit.{self.digest[:16]}"
        self.target: Target = host_target()
        self._lock = threading.Lock()
        self._translation: Translation | None = None
        self._translate_seconds = 0.0
        self._data_library: str | None = None
        self._data = None  # keeps the program's data library alive
        self._kernels: dict[str, Kernel] = {}
        self.kernel_names = tuple(e.name for e in self.module.entry_points)
        self._translated()  # translate eagerly: a bad module fails here, not at first launch

    @property
    def spirv(self) -> bytes:
        """The SPIR-V module's bytes."""
        return self._spirv

    def kernel(self, name: str) -> Kernel:
        """The kernel ``name``; raises LaunchError listing the kernels when there is none."""
        with self._lock:
            found = self._kernels.get(name)
            if found is None:
                if name not in self._translated().kernels:
                    raise LaunchError(
                        "no kernel of that name; this program has "
                        + (", ".join(self.kernel_names) or "none"),
                        name,
                    )
                found = self._kernels[name] = Kernel(self, name, self._translated().kernels[name])
            return found

    def __getattr__(self, name: str) -> Kernel:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.kernel(name)
        except LaunchError:
            raise AttributeError(name) from None

    def _translated(self) -> Translation:
        if self._translation is None:
            times = jit.StageTimes()
            self._translation = times.run(
                "translate",
                jit.translate_program,
                self.module,
                self.target,
                self.spec_constants,
                self._prefix,
            )
            self._translate_seconds = times.total
        return self._translation

    def _compile(self, name: str) -> tuple[object, float]:
        """JIT-compiles kernel ``name``; returns its loaded code and the seconds it took."""
        with self._lock:
            translation = self._translated()
            times = jit.StageTimes()
            if self._translate_seconds:
                times.seconds["translate"], self._translate_seconds = self._translate_seconds, 0.0
            symbol = jit.runner_symbol(translation, self._prefix, name)
            directory = config.dump_dir()
            if directory is not None:
                from .spirv.disasm import disassemble

                jit.dump(directory, name, {"spv": self._spirv, "spvasm": disassemble(self.module)})
            obj = jit.compile_kernel(translation, self.target, symbol, name, times)
            if translation.mutable_globals and self._data_library is None:
                data = codegen.parse(
                    codegen.data_ir(translation.module, translation.mutable_globals), "program data"
                )
                self._data, self._data_library = codegen.load_data(
                    self.target,
                    f"{self._prefix}.data",
                    codegen.emit_object(data, self.target),
                    [g.name for g in translation.mutable_globals],
                )
            code = times.run(
                "load",
                codegen.load_kernel,
                self.target,
                f"{symbol}.lib",
                obj,
                symbol,
                self._data_library,
            )
            if config.debug():
                log.info("spirvjit: JIT %s for %s: %s", name, self.target, times)
            return code, times.total


class Kernel:
    """One kernel of a Program. Call it to launch it (synchronously)."""

    def __init__(self, program: Program, name: str, signature: KernelSignature):
        self.program = program
        self.name = name
        self.signature = signature
        self._packer = ArgumentPacker(signature)
        self._runner = None
        self._code = None
        self.compile_seconds: float | None = None

    @property
    def num_args(self) -> int:
        return len(self.signature.args)

    def compile(self) -> None:
        """JIT-compiles the kernel now instead of at its first launch."""
        if self._runner is None:
            self._code, self.compile_seconds = self.program._compile(self.name)
            self._runner = RUNNER(self._code.address)

    def __call__(self, *args, global_size, local_size=None, global_offset=None) -> None:
        gs, ls, offset = normalize_sizes(self.name, global_size, local_size, global_offset)
        dims = len(global_size) if not isinstance(global_size, int) else 1
        required = self.signature.required_local_size
        if ls is None:
            ls = required or choose_local_size(gs, dims)
        elif required and ls != tuple(required):
            raise LaunchError(
                f"local_size {ls[:dims]} differs from the kernel's reqd_work_group_size {required}",
                self.name,
            )
        slots, keep, local_bytes = self._packer.pack(args)
        self.compile()
        pool = _thread_pool()
        items = gs[0] * gs[1] * gs[2]
        threads = 1 if items < INLINE_WORK_ITEMS else pool.threads
        record, total = launch_record(gs, ls, offset, dims, threads)
        threads = min(threads, total)
        import ctypes

        pool.run(
            self._runner, ctypes.addressof(slots), ctypes.addressof(record), threads, local_bytes
        )
        del keep

    def __repr__(self) -> str:
        args = ", ".join(a.describe() for a in self.signature.args)
        return f"<spirvjit kernel {self.name}({args})>"
