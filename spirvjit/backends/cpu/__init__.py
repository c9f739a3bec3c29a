"""The host CPU backend: work-group functions around kernels (``abi.py``), native code
through LLVM's JIT linker (``codegen.py``), a thread pool running work-groups
(``launcher.py``)."""

from __future__ import annotations

import ctypes
import threading
import time
import weakref
from collections.abc import Mapping

import numpy as np

from ... import config
from ...device import Device
from ...errors import LaunchError
from ...jit import QUICK_MODULE_SUFFIX, QUICK_TIER
from ...spirv import capabilities
from ...target import Target, host_target
from ...translate.kernel_ir import kernel_ir, parse_ir
from ...translate.module import translate
from ..base import Backend
from . import abi as cpu_abi
from . import codegen, debugload, gcpause, mathcalls, tiered, vecmath, vectorize
from .launcher import LOCAL_MEMORY_BYTES, MAX_WORK_GROUP_SIZE, CpuKernel
from .objcheck import NativeCodeRefused

# The translation option that makes a checked translation (Program.translation(checked)).
CHECK_OPTION = "spirvjit:check"
CHECK_SPECIALIZATION = (("check", "1"),)
# The quick tier's translation (tiered.py): no whole-function vectorization.
QUICK_OPTION = "spirvjit:quick"


class CpuBackend(Backend):
    kind = "cpu"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # A program's writable program-scope variables are one data library that every
        # kernel of the program links against (loaded with the program's first kernel).
        self._data: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._buffers: dict[int, np.ndarray] = {}  # allocate(): address -> its memory

    # ----- compiler side -------------------------------------------------------------

    def abi(self, target: Target, options: tuple[str, ...] = ()) -> cpu_abi.CpuABI:
        return cpu_abi.CpuABI(
            target.triple,
            str(codegen.target_machine(target).target_data),
            checked=CHECK_OPTION in options,
            debug_info=debugload.DEBUG_OPTION in options,
        )

    def key_options(self, target: Target) -> tuple[str, ...]:
        # Whole-function vectorization changes the code (SPIRVJIT_WFV=0 or all), and so
        # does a pipeline level forced by SPIRVJIT_OPT_LEVEL.
        options = () if vectorize.mode() == "loops" else (f"wfv={vectorize.mode()}",)
        level = config.opt_level()
        return options if level is None else (*options, f"opt={level}")

    def signature_variant(self, target: Target) -> tuple:
        # Tiered: the quick tier's translation (no vectorizer) has the same signatures;
        # the optimized one is made on the background thread.
        return (QUICK_TIER,) if config.tiered() else ()

    def translate_program(
        self, module, target: Target, spec_constants: Mapping, prefix: str, options=()
    ):
        with gcpause.paused():  # a launch may be waiting for it (gcpause.py)
            return self._translate_program(module, target, spec_constants, prefix, options)

    def _translate_program(self, module, target: Target, spec_constants, prefix: str, options):
        abi = self.abi(target, options)
        translation = translate(module, abi, spec_constants, prefix)
        for index, (name, fn) in enumerate(translation.kernel_functions.items()):
            cpu_abi.emit_kernel_wrappers(
                translation.module,
                fn,
                translation.kernels[name],
                f"{prefix}.k{index}",
                abi if abi.checked else None,
                # Debug builds step through one work-item's scalar code; the quick tier
                # is not vectorized (tiered.py).
                None if abi.debug_info or QUICK_OPTION in options else target.features,
            )
        # After the vectorizer's clones: their libmvec calls are replaced too.
        vecmath.inline_math(translation.module)
        if abi.debug_info:
            debugload.without_vex(translation.module)
        # Every other libmvec function's calls compute through one variant: an element's
        # bits do not depend on the path (or tier) that computed it. After without_vex:
        # its scalar wrappers are compiled for the target (a float passes alike).
        mathcalls.one_variant(translation.module, target.features)
        return translation

    def kernel_symbol(self, module, prefix: str, kernel: str) -> str:
        # The runner, named after the entry point's index: kernel names may be any string.
        index = [entry.name for entry in module.entry_points].index(kernel)
        return f"{prefix}.k{index}.run"

    def kernel_ir(self, translation, target: Target, symbol: str, specialization=()) -> str:
        return kernel_ir(translation.module, symbol, translation.mutable_globals)

    def optimize(self, module, target: Target, symbol: str):
        if module.name.endswith(QUICK_MODULE_SUFFIX):
            return codegen.quick_optimize(module, target)
        stepped = cpu_abi.stepped_workgroup_function(symbol) in {f.name for f in module.functions}
        level = config.opt_level()
        if level is None:
            level = codegen.STEPPED_SPEED_LEVEL if stepped else 3
        return codegen.optimize(module, target, level)

    def emit(self, module, target: Target, what: str) -> bytes:
        if debugload.is_debug_module(module):
            return debugload.emit_object(module, target)
        quick = module.name.endswith(QUICK_MODULE_SUFFIX)
        return codegen.emit_object(module, target, quick=quick)

    def assembly(self, module, target: Target) -> str:
        if debugload.is_debug_module(module):
            return debugload.emit_assembly(module, target)
        return codegen.emit_assembly(module, target)

    # ----- runtime side --------------------------------------------------------------

    def devices(self) -> list[Device]:
        return [host_device()]

    def default_device(self, target: Target) -> Device | None:
        # A program built for any CPU target (x86-64-v3, ...) runs on this host.
        return host_device()

    def load(self, program, kernel: str, device: Device, check: bool = False, tiers: bool = True):
        """``check``: the checked-mode variant (its own cache key and translation).
        Tiered (the default; SPIRVJIT_TIERED=0 turns it off), unless ``tiers`` is False: a
        kernel that is not in hand compiled (native or cached) first runs quickly compiled
        code, replaced by the optimized code that a background thread compiles at the
        same time (tiered.py)."""
        if program.target.kind != self.kind:
            program = program.for_target(device.target)
        with gcpause.paused():  # the launch waits for it (gcpause.py)
            return self._load_for_launch(program, kernel, check, tiers)

    def load_optimized(self, program, kernel: str, device: Device):
        # Kernel.compile(): the optimized code, compiled now, no quick tier.
        return self.load(program, kernel, device, tiers=False)

    def _load_for_launch(self, program, kernel: str, check: bool, tiers: bool = True):
        if (
            tiers
            and not check
            and config.tiered()
            and not tiered.exiting()
            # SPIRVJIT_DUMP: the dumps are the code launches run, written before they run.
            and config.dump_dir() is None
            and not debugload.wanted(program.module)
        ):
            from ...jit import StageTimes

            times = StageTimes()  # the cache lookup's time counts in the load's
            in_hand = program.object_code(kernel, times, compile=False)
            if in_hand[0] is not None:  # native or cached: loaded as found (its origin)
                return self._load(program, kernel, (), (*in_hand, times))
            if tiered.worth_it(program, kernel):
                # The optimized tier's thread starts first, then the quick tier compiles
                # on this one: the two compile at the same time.
                return tiered.TieredKernel(
                    lambda: self._load(program, kernel, (QUICK_TIER,)),
                    lambda: self._load(program, kernel),
                    kernel,
                )
        return self._load(program, kernel, CHECK_SPECIALIZATION if check else ())

    def _load(
        self, program, kernel: str, specialization: tuple = (), in_hand: tuple | None = None
    ) -> CpuKernel:
        """Kernel ``kernel`` of ``program`` (for this backend's target) loaded: native,
        cached or compiled code of the variant ``specialization`` names; ``in_hand``:
        ``program.object_code``'s answer already asked for, and the StageTimes it ran
        with (not a debug build)."""
        from ...jit import StageTimes

        check = CHECK_SPECIALIZATION[0] in specialization
        times = StageTimes() if in_hand is None else in_hand[2]
        debug = debugload.wanted(program.module)
        if debug:  # under gdb, or SPIRVJIT_DEBUG_INFO=1: a shared object gdb can see
            specialization += debugload.DEBUG_SPECIALIZATION
        if in_hand is not None and not debug:
            obj, origin = in_hand[:2]
        else:
            obj, origin = program.object_code(kernel, times, specialization)
        symbol = self.kernel_symbol(program.module, program.symbol_prefix, kernel)
        data = self._data_library(program)
        while True:  # at most: native, then cached, then compiled code
            try:
                if debug:
                    data_symbols = {
                        g.name: self.data_address(program, g.name)
                        for g in (program.translation().mutable_globals if data else ())
                    }
                    code = times.run(
                        "load", debugload.load_kernel, program.target, kernel, obj, symbol,
                        data_symbols,
                    )  # fmt: skip
                    break
                code = times.run(
                    "load", codegen.load_kernel, program.target, f"{symbol}.lib", obj, symbol, data
                )
                break
            except NativeCodeRefused as exc:
                if origin == "compile":  # our own code did not load: a spirvjit bug
                    raise
                obj, origin = program.refuse_object_code(
                    kernel, origin, str(exc), times, specialization
                )
        if check:
            from .checked import CheckedCpuKernel

            return CheckedCpuKernel(code, program.signatures[kernel], origin, times, program)
        loaded = CpuKernel(code, program.signatures[kernel], origin, times)
        from .yjam import rows_hint  # here: keeps this module's imports as they were

        loaded.rows = rows_hint(program.module, kernel)  # see CpuKernel.rows
        return loaded

    def load_checked(self, program, kernel: str, device: Device) -> CpuKernel:
        return self.load(program, kernel, device, check=True)

    def _data_library(self, program) -> codegen.DataLibrary | None:
        """``program``'s data library, linked on first use (None: no data)."""
        if not program.has_mutable_globals:
            return None
        with self._lock:
            found = self._data.get(program)
            if found is None:
                translation = program.translation()
                data_ir = codegen.data_ir(translation.module, translation.mutable_globals)
                data = parse_ir(data_ir, "program data")
                found = self._data[program] = codegen.load_data(
                    program.target,
                    f"{program.symbol_prefix}.data",
                    codegen.emit_object(data, program.target),
                    [g.name for g in translation.mutable_globals],
                )
            return found

    def global_variable(self, program, name: str, device: Device, dtype=None):
        """A NumPy view of the variable itself (``device_globals.HostVariable``)."""
        from ...device_globals import global_variable

        if program.target.kind != self.kind:
            program = program.for_target(device.target)
        return global_variable(program, name, dtype)

    def data_address(self, program, symbol: str) -> int:
        """The address of ``program``'s writable program-scope variable ``symbol`` in this
        process (its data library is linked if it was not yet): device_globals.py."""
        self._data_library(program)
        with self._lock:
            return self._data[program][symbol]

    def allocate(self, device: Device, nbytes: int) -> int:
        buffer = np.zeros(max(1, nbytes) + 64, np.uint8)
        address = buffer.ctypes.data + (-buffer.ctypes.data % 64)
        with self._lock:
            self._buffers[address] = buffer
        return address

    def free(self, device: Device, address: int) -> None:
        with self._lock:
            if self._buffers.pop(address, None) is None:
                raise LaunchError(f"free of {address:#x}, which allocate did not return")

    def copy_to_device(
        self, device: Device, dst: int, src_host_address: int, nbytes: int, stream=None
    ) -> None:
        ctypes.memmove(dst, src_host_address, nbytes)

    def copy_to_host(
        self, device: Device, dst_host_address: int, src: int, nbytes: int, stream=None
    ) -> None:
        ctypes.memmove(dst_host_address, src, nbytes)

    # Launches and copies on the host run at once, so a stream has nothing to queue and
    # an event's time is the host's clock when it is recorded: the same code runs on a
    # GPU, where they are asynchronous.

    def create_stream(self, device: Device) -> object:
        return object()

    def destroy_stream(self, device: Device, stream: object) -> None:
        pass

    def synchronize_stream(self, device: Device, stream: object) -> None:
        pass

    def create_event(self, device: Device) -> HostEvent:
        return HostEvent()

    def record_event(self, device: Device, event: HostEvent, stream: object) -> None:
        event.time = time.perf_counter()

    def synchronize_event(self, device: Device, event: HostEvent) -> None:
        pass

    def event_elapsed_ms(self, device: Device, start: HostEvent, end: HostEvent) -> float:
        if start.time is None or end.time is None:
            raise LaunchError("elapsed time of an event that was never recorded: record it first")
        return (end.time - start.time) * 1000.0

    def destroy_event(self, device: Device, event: HostEvent) -> None:
        pass


class HostEvent:
    """An event on the host CPU: the time it was last recorded (None: never)."""

    __slots__ = ("time",)

    def __init__(self) -> None:
        self.time: float | None = None


def host_device() -> Device:
    """The host CPU as a device."""
    target = host_target()
    return Device(
        name=f"host CPU ({target.arch})",
        kind="cpu",
        target=target,
        compute_units=config.num_threads(),
        max_work_group_size=MAX_WORK_GROUP_SIZE,
        local_memory_bytes=LOCAL_MEMORY_BYTES,
        extensions=capabilities.cpu_opencl_extensions(),
        sub_group_sizes=capabilities.cpu_sub_group_sizes(),
    )


BACKEND = CpuBackend()
