"""The backend interface: what a target kind provides to the core.

A backend is a compiler and a driver behind one small class (as in Triton's backends,
or PoCL's device-operation table):

* compiler side: the ABI the translator targets, wrapping the translated kernels for
  the target (work-group functions on the CPU, entry points on GPUs), the IR of one
  kernel, optimisation, emission (host object, AMD code object, NVIDIA cubin/PTX) and
  assembly for people to read;
* runtime side: listing its devices, loading a kernel's native code on a device into a
  ``LoadedKernel`` that launches it, and device memory (allocate, copy, free).

``jit.py`` runs the compiler side in order and wraps it with timing, dumps and the
cache; ``program.Kernel`` hands launches to the loaded kernel of the device asked for.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import llvmlite.binding as llvm

    from ..device import Device
    from ..jit import StageTimes
    from ..program import Program
    from ..spirv.module import Module
    from ..target import Target
    from ..translate.abi import TargetABI
    from ..translate.module import Translation


class LoadedKernel(Protocol):
    """One kernel's native code loaded on one device."""

    origin: str  # where its code came from: "native", "memory", "disk" or "compile"
    times: StageTimes  # seconds per stage of loading it (the JIT's stages included)
    compile_seconds: float  # their total

    def launch(
        self, args: Sequence, global_size, local_size, global_offset, *, stream=None
    ) -> None:
        """Runs the kernel over the NDRange (sizes as the user gave them) and returns when
        it is done; raises LaunchError for bad arguments or sizes. With ``stream`` (a
        ``spirvjit.Stream`` of the kernel's device) a backend that queues work returns
        once the launch is queued on it."""


class Backend(ABC):
    """One target kind ("cpu", "amdgpu", "nvptx"). Instances are stateless singletons
    (``BACKEND`` in the backend's package); per-device state lives in their devices'
    contexts, per-program state in the program."""

    kind: str

    # ----- compiler side -------------------------------------------------------------

    @abstractmethod
    def abi(self, target: Target, options: tuple[str, ...] = ()) -> TargetABI:
        """The ABI the translator targets for ``target`` and the program's build options
        (``program.JIT_OPTIONS``)."""

    def key_options(self, target: Target) -> tuple[str, ...]:
        """What besides the target and the SPIR-V decides a kernel's code (e.g. the
        device library's fingerprint): part of the cache key."""
        return ()

    def signature_variant(self, target: Target) -> tuple:
        """The kernel variant (a specialization) whose translation gives the program's
        kernel signatures when the SPIR-V alone does not: () the program's own; the CPU's
        quick tier when tiered, which translates in a fraction of the time."""
        return ()

    @abstractmethod
    def translate_program(
        self,
        module: Module,
        target: Target,
        spec_constants: Mapping,
        prefix: str,
        options: tuple[str, ...] = (),
    ) -> Translation:
        """Translates the whole module once and wraps every kernel for the target."""

    @abstractmethod
    def kernel_symbol(self, module: Module, prefix: str, kernel: str) -> str:
        """The exported symbol of kernel ``kernel``'s native code."""

    @abstractmethod
    def kernel_ir(
        self, translation: Translation, target: Target, symbol: str, specialization: tuple = ()
    ) -> str:
        """LLVM IR text of one kernel: ``symbol`` exported, what it reaches; with the
        launch values of ``specialization`` (pairs of name and value) baked in."""

    @abstractmethod
    def optimize(self, module: llvm.ModuleRef, target: Target, symbol: str) -> llvm.ModuleRef:
        """Optimises the kernel's module (device libraries linked first); returns the module
        to use from now on: ``module`` itself, or a new one (the CPU may optimize in a
        child process)."""

    @abstractmethod
    def emit(self, module: llvm.ModuleRef, target: Target, what: str) -> bytes:
        """The native product: a host object, an AMD code object, an NVIDIA cubin."""

    @abstractmethod
    def assembly(self, module: llvm.ModuleRef, target: Target) -> str:
        """The same code as text for people (x86-64, GCN, PTX)."""

    # ----- runtime side --------------------------------------------------------------

    @abstractmethod
    def devices(self) -> list[Device]:
        """The devices of this kind present now (may load the vendor's driver)."""

    def default_device(self, target: Target) -> Device | None:
        """Where a program built for ``target`` runs when a launch names no device."""
        return next((d for d in self.devices() if d.target == target), None)

    @abstractmethod
    def load(self, program: Program, kernel: str, device: Device) -> LoadedKernel:
        """Kernel ``kernel`` of ``program`` made runnable on ``device``: compiled (or
        found in a cache) for the device's target and loaded. Called once per kernel
        and device, under the kernel's lock (``Kernel._loaded_on``; other kernels of the
        program may load at the same time)."""

    def load_optimized(self, program: Program, kernel: str, device: Device) -> LoadedKernel:
        """``load`` as ``Kernel.compile()`` asks for it: the best code now. The host CPU's
        first launch may load a quickly compiled tier first (backends/cpu/tiered.py);
        this never does."""
        return self.load(program, kernel, device)

    def load_checked(self, program: Program, kernel: str, device: Device) -> LoadedKernel:
        """The kernel's checked-mode variant (bounds-checked accesses, docs/debugging.md);
        only the host CPU backend has one."""
        from ..errors import LaunchError

        raise LaunchError(
            f"checked mode (check=True, SPIRVJIT_CHECK) runs on the host CPU only, not on "
            f"{device.name}",
            kernel,
        )

    def global_variable(self, program: Program, name: str, device: Device, dtype=None):
        """Program-scope variable ``name`` of ``program`` (the backend finds its build for
        ``device``, as ``load`` does) on ``device``: an object with ``read``/``write``
        (``device_globals.py``)."""
        from ..errors import LaunchError

        raise LaunchError(f"program-scope variables are not reachable on {device.name}", name)

    @abstractmethod
    def allocate(self, device: Device, nbytes: int) -> int:
        """``nbytes`` of device memory; returns its address."""

    @abstractmethod
    def free(self, device: Device, address: int) -> None:
        """Frees memory from ``allocate``."""

    @abstractmethod
    def copy_to_device(
        self, device: Device, dst: int, src_host_address: int, nbytes: int, stream=None
    ) -> None:
        """Copies ``nbytes`` from host memory to device memory; with ``stream`` (a handle
        from ``create_stream``) the copy may only be queued on it."""

    @abstractmethod
    def copy_to_host(
        self, device: Device, dst_host_address: int, src: int, nbytes: int, stream=None
    ) -> None:
        """Copies ``nbytes`` from device memory to host memory; with ``stream`` the copy
        may only be queued (the data is there once the stream is synchronised)."""

    # Streams and events (``spirvjit.stream``): handles are the backend's own objects.
    # A backend that runs everything at once (the CPU) implements them synchronously.

    @abstractmethod
    def create_stream(self, device: Device) -> object:
        """A new in-order queue of work on ``device``."""

    @abstractmethod
    def destroy_stream(self, device: Device, stream: object) -> None:
        """Releases a stream (its queued work still completes)."""

    @abstractmethod
    def synchronize_stream(self, device: Device, stream: object) -> None:
        """Returns when the stream's work is done; raises the errors of that work."""

    @abstractmethod
    def create_event(self, device: Device) -> object:
        """A new event (a mark in a stream, with a time)."""

    @abstractmethod
    def record_event(self, device: Device, event: object, stream: object) -> None:
        """Marks the point ``stream`` has reached; the event completes when it does."""

    @abstractmethod
    def synchronize_event(self, device: Device, event: object) -> None:
        """Returns when the event's last record has completed."""

    @abstractmethod
    def event_elapsed_ms(self, device: Device, start: object, end: object) -> float:
        """Milliseconds from event ``start`` to event ``end`` (both recorded and done)."""

    @abstractmethod
    def destroy_event(self, device: Device, event: object) -> None:
        """Releases an event."""
