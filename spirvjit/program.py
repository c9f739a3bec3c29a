"""Programs and kernels: the objects users hold and launch."""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import logging
import threading
from collections.abc import Mapping

from . import cache, config, jit
from .backends.cpu import codegen
from .backends.cpu.launcher import (
    ARENA_ALIGN,
    INLINE_WORK_ITEMS,
    RUNNER,
    ArgumentPacker,
    LaunchPlan,
    LaunchRecord,
    ThreadPool,
    choose_local_size,
    launch_record,
    normalize_sizes,
)
from .backends.cpu.objcheck import NativeCodeRefused
from .cache_key import KernelKey
from .device import Device, devices
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
    """A SPIR-V module ready to run: kernels are JIT-compiled at their first launch.

    ``native_objects`` maps kernel names to object code already built for ``target``
    with this module and these spec constants (a unified binary's native variants);
    those kernels skip the JIT. ``other_targets`` does the same for other targets (a
    unified binary's GPU variants), used when a kernel runs on such a device.
    """

    def __init__(
        self,
        spirv: bytes,
        spec_constants: Mapping[int, object] | None = None,
        name: str = "program",
        *,
        target: Target | None = None,
        native_objects: Mapping[str, bytes] | None = None,
        other_targets: Mapping[Target, Mapping[str, bytes]] | None = None,
    ):
        self._spirv = bytes(spirv)
        self.name = name
        self.module: Module = read_module(self._spirv)
        self.spec_constants = dict(spec_constants or {})
        self.spirv_digest = hashlib.sha256(self._spirv).hexdigest()
        digest = hashlib.sha256(self.spirv_digest.encode())
        digest.update(repr(sorted(self.spec_constants.items())).encode())
        # Symbols are named after the module and its spec constants, so object code
        # built for them (cached, or shipped in a unified binary) links the same way.
        self._prefix = f"spirvjit.{digest.hexdigest()[:16]}"
        self.target: Target = target or host_target()
        self._native_objects = dict(native_objects or {})
        # Native objects for other targets (a unified binary's GPU variants), used by
        # for_target.
        self._other_targets = dict(other_targets or {})
        self._lock = threading.RLock()
        self._translation: Translation | None = None
        self._translate_seconds = 0.0
        self._data_library: str | None = None
        self._data = None  # keeps the program's data library alive
        self._kernels: dict[str, Kernel] = {}
        self._for_targets: dict[Target, Program] = {}
        self.origins: dict[str, str] = {}  # kernel -> "native", "memory", "disk" or "compile"
        self.kernel_names = tuple(e.name for e in self.module.entry_points)
        # Entry points and spec constants are checked now; function bodies are translated
        # at the first compile, so a kernel found in a cache never pays for translation.
        signatures, self._has_mutable_globals = jit.quick_look(
            self.module, self.target, self.spec_constants, self._prefix
        )
        self._signatures = signatures if signatures is not None else self._translated().kernels

    @property
    def spirv(self) -> bytes:
        """The SPIR-V module's bytes."""
        return self._spirv

    def kernel(self, name: str) -> Kernel:
        """The kernel ``name``; raises LaunchError listing the kernels when there is none."""
        with self._lock:
            found = self._kernels.get(name)
            if found is None:
                if name not in self._signatures:
                    raise LaunchError(
                        "no kernel of that name; this program has "
                        + (", ".join(self.kernel_names) or "none"),
                        name,
                    )
                found = self._kernels[name] = Kernel(self, name, self._signatures[name])
            return found

    def __getattr__(self, name: str) -> Kernel:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.kernel(name)
        except LaunchError:
            raise AttributeError(name) from None

    @property
    def signatures(self) -> dict[str, KernelSignature]:
        """Every kernel's signature (arguments, work-group size hints), by name."""
        return dict(self._signatures)

    def kernel_key(self, name: str) -> KernelKey:
        """The cache key of kernel ``name`` on this program's target."""
        return KernelKey.make(
            self.spirv_digest, name, self.spec_constants, self.target, jit.key_options(self.target)
        )

    def for_target(self, target: Target) -> Program:
        """This program compiled for ``target`` (this program itself for its own target)."""
        if target == self.target:
            return self
        with self._lock:
            found = self._for_targets.get(target)
            if found is None:
                found = Program(
                    self._spirv,
                    self.spec_constants,
                    self.name,
                    target=target,
                    native_objects=self._other_targets.get(target),
                )
                self._for_targets[target] = found
            return found

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

    def object_code(self, name: str, times: jit.StageTimes | None = None) -> tuple[bytes, str]:
        """Native object code of kernel ``name`` for the target, and where it came from.

        Order: a native object given at load ("native"), the cache ("memory": compiled
        earlier by this process; "disk": the persistent cache; not asked when
        SPIRVJIT_DUMP is set), the JIT ("compile"; the result is stored in the cache).
        """
        times = times or jit.StageTimes()
        with self._lock:
            if name not in self._signatures:
                self.kernel(name)  # raises the LaunchError that lists the kernels
            obj = self._native_objects.get(name)
            if obj is not None:
                return obj, "native"
            key = self.kernel_key(name)
            directory = config.dump_dir()
            # Dumps come from compiling, so SPIRVJIT_DUMP skips the cache lookup.
            hit = None if directory else times.run("cache", cache.lookup, key)
            if hit is not None:
                return hit.obj, hit.origin
            if directory is not None:
                from .spirv.disasm import disassemble

                jit.dump(directory, name, {"spv": self._spirv, "spvasm": disassemble(self.module)})
            symbol = jit.runner_symbol(self.module, self._prefix, name, self.target)
            translation = self._translated()
            if self._translate_seconds:
                times.seconds["translate"], self._translate_seconds = self._translate_seconds, 0.0
            obj = jit.compile_kernel(translation, self.target, symbol, name, times)
            cache.store(key, obj)
            return obj, "compile"

    def assembly(self, name: str) -> str:
        """Kernel ``name`` compiled for the target now, as assembly (x86-64, GCN, PTX)."""
        with self._lock:
            if name not in self._signatures:
                self.kernel(name)  # raises the LaunchError that lists the kernels
            symbol = jit.runner_symbol(self.module, self._prefix, name, self.target)
            return jit.kernel_assembly(self._translated(), self.target, symbol)

    def _compile(self, name: str) -> tuple[object, float]:
        """Makes kernel ``name`` runnable; returns its loaded code and the seconds it took."""
        with self._lock:
            times = jit.StageTimes()
            obj, origin = self.object_code(name, times)
            if self._has_mutable_globals and self._data_library is None:
                translation = self._translated()
                data_ir = codegen.data_ir(translation.module, translation.mutable_globals)
                data = codegen.parse(data_ir, "program data")
                self._data, self._data_library = codegen.load_data(
                    self.target,
                    f"{self._prefix}.data",
                    codegen.emit_object(data, self.target),
                    [g.name for g in translation.mutable_globals],
                )
            symbol = jit.runner_symbol(self.module, self._prefix, name, self.target)
            while True:  # at most: native, then cached, then compiled code
                try:
                    code = times.run(
                        "load",
                        codegen.load_kernel,
                        self.target,
                        f"{symbol}.lib",
                        obj,
                        symbol,
                        self._data_library,
                    )
                    break
                except NativeCodeRefused as exc:
                    if origin == "compile":  # our own code did not load: a spirvjit bug
                        raise
                    obj, origin = self._replace_refused(name, origin, exc, times)
            self.origins[name] = origin
            if config.debug():
                log.info("spirvjit: %s %s for %s: %s", origin, name, self.target, times)
            return code, times.total

    def _replace_refused(
        self, name: str, origin: str, exc: Exception, times: jit.StageTimes
    ) -> tuple[bytes, str]:
        """Object code of ``name`` from a unified binary or the cache that was refused at
        load (wrong symbols, does not link): drops it and JITs (issue 13)."""
        if origin == "native":
            del self._native_objects[name]
            log.warning(
                "spirvjit: %r: native code of kernel %r refused (%s); JIT-compiling it from "
                "the SPIR-V",
                self.name,
                name,
                exc,
            )
        else:
            cache.discard(self.kernel_key(name), str(exc))
        return self.object_code(name, times)


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
        self._plans: dict[tuple, LaunchPlan] = {}  # NDRange -> checked sizes and record
        self._gpu_kernels: dict[Device, object] = {}  # GPU -> its loaded code
        self._default_gpu: Device | None = None  # where launches without device= go

    @property
    def num_args(self) -> int:
        return len(self.signature.args)

    def compile(self) -> None:
        """JIT-compiles the kernel now instead of at its first launch."""
        if self._runner is None:
            self._code, self.compile_seconds = self.program._compile(self.name)
            self._runner = RUNNER(self._code.address)

    def __call__(
        self, *args, global_size, local_size=None, global_offset=None, device: Device | None = None
    ) -> None:
        """Runs the kernel over ``global_size`` work-items and returns when it is done.

        ``device``: one of ``spirvjit.devices()``; the host CPU when None, unless the
        program was built for a GPU target (then the first GPU of that target). On a
        GPU, NumPy arrays are copied to the device and the writable ones back.
        """
        if (device is not None and device.kind != "cpu") or self.program.target.is_gpu:
            self._launch_gpu(device, args, global_size, local_size, global_offset)
            return
        key = (global_size, local_size, global_offset)
        try:
            plan = self._plans[key]
        except (KeyError, TypeError):  # TypeError: sizes given as lists, not hashable
            plan = self._plan(global_size, local_size, global_offset)
            if len(self._plans) < 64:
                with contextlib.suppress(TypeError):
                    self._plans[key] = plan
        slots, keep, local_bytes = self._packer.pack(args)
        if self._runner is None:
            self.compile()
        record = LaunchRecord.from_buffer_copy(plan.record)
        # Kernels with barriers keep each work-item's frame after the group's local memory.
        frames_offset = (local_bytes + ARENA_ALIGN - 1) // ARENA_ALIGN * ARENA_ALIGN
        record[16] = frames_offset
        arena_bytes = frames_offset + self.signature.frame_bytes * plan.group_items
        _thread_pool().run(
            self._runner,
            ctypes.addressof(slots),
            ctypes.addressof(record),
            plan.threads,
            arena_bytes,
        )
        del keep

    def _launch_gpu(self, device, args, global_size, local_size, global_offset) -> None:
        from .gpu_launch import GpuKernel

        if device is None:
            # The program's own GPU target: find its device once, not at every launch
            # (listing devices asks the drivers).
            device = self._default_gpu
            if device is None:
                target = self.program.target
                device = next((d for d in devices() if d.target == target), None)
                if device is None:
                    raise LaunchError(f"no {target.name} GPU is present to run on", self.name)
                self._default_gpu = device
        gpu = self._gpu_kernels.get(device)
        if gpu is None:
            program = self.program.for_target(device.target)
            image, _origin = program.object_code(self.name)
            gpu = self._gpu_kernels[device] = GpuKernel(device, image, self.signature, self._packer)
        gpu.launch(args, global_size, local_size, global_offset)

    def _plan(self, global_size, local_size, global_offset) -> LaunchPlan:
        gs, ls, offset, dims = normalize_sizes(self.name, global_size, local_size, global_offset)
        required = self.signature.required_local_size
        if ls is None:
            ls = required or choose_local_size(gs, dims)
        elif required and ls != tuple(required):
            raise LaunchError(
                f"local_size {ls[:dims]} differs from the kernel's reqd_work_group_size {required}",
                self.name,
            )
        pool_threads = _thread_pool().threads
        threads = 1 if gs[0] * gs[1] * gs[2] < INLINE_WORK_ITEMS else pool_threads
        record, total = launch_record(gs, ls, offset, dims, threads)
        return LaunchPlan(bytes(record), min(threads, total), ls[0] * ls[1] * ls[2])

    def __repr__(self) -> str:
        args = ", ".join(a.describe() for a in self.signature.args)
        return f"<spirvjit kernel {self.name}({args})>"
