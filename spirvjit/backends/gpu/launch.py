"""Launching a kernel on a GPU: NumPy arrays go to the device and back around one
synchronous launch, through the vendor's driver (``backends/nvptx/cuda.py``,
``backends/amdgpu/hip.py``); a launch on a stream (``spirvjit.Stream``) is queued and
takes device memory only. GPU memory (``__cuda_array_interface__``: spirvjit.Array,
torch CUDA/ROCm tensors, CuPy arrays) is passed by its address, without copies.

The kernel's parameters are packed as its GPU entry point takes them (see
``entry.py``): buffers as device addresses, ``__local`` buffers as offsets
into the group's dynamic shared memory, values as their bytes, then the global offset
and the work dimension.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from collections.abc import Sequence

import numpy as np

from ...arguments import ArgumentPacker, LocalMemory, device_buffer, host_array
from ...device import Device
from ...errors import LaunchError
from ...ndrange import choose_whole_groups, normalize_sizes
from ...translate.signature import KernelSignature
from .abi import LAUNCH_FACTS, launch_specialization
from .driver import DeviceContext

SHARED_ALIGN = 16


def launch_facts(global_size, local_size, offset) -> tuple[str, ...]:
    """The launch facts (abi.LAUNCH_FACTS) a launch of these sizes keeps."""
    facts = []
    # The last group of a partial launch reaches up to the next multiple of its size.
    ends = [-(-g // s) * s + o for g, s, o in zip(global_size, local_size, offset, strict=True)]
    if max(ends) < 2**31:
        facts.append("ids32")
    if all(g % s == 0 for g, s in zip(global_size, local_size, strict=True)):
        facts.append("uniform")
    if not any(offset):
        facts.append("zero_offset")
    return tuple(facts)


class GpuKernel:
    """One kernel's code loaded on one GPU, with its argument packing."""

    def __init__(
        self,
        device: Device,
        context: DeviceContext,
        image: bytes | None,
        signature: KernelSignature,
        origin: str,
        times,
        group_limit: int | None = None,
        load_variant=None,
        variables=None,
        shipped: tuple = (),
    ):
        self.device = device
        self.signature = signature
        self.origin = origin  # where the code object came from: "compile", "disk", ...
        self.times = times  # jit.StageTimes of compiling and loading it
        self._packer = ArgumentPacker(signature, device_memory=True)
        self._context = context
        # The program's variables (variables.ProgramVariables; None: it has none): every
        # code object loaded holds a copy, brought up to date before its launches.
        self._variables = variables
        # The code object is the generic variant: right for every launch with groups of
        # up to group_limit work-items (None: any). Other launches load, once each, a
        # variant specialised for what they need or promise: larger groups (built for
        # the device's limit) and launch facts (abi.LAUNCH_FACTS: 32-bit ids, no
        # offset, no partial groups). A unified binary's native code runs only what the
        # binary ships (``shipped``: its specializations of this kernel, the launch
        # facts its code assumes): the variant whose facts the launch keeps, the most
        # of them, else the generic one. The promise of a unified binary is no
        # compiling at run time.
        # ``image`` None: the generic variant is not compiled yet; load_variant(())
        # builds it when a launch runs it, so a first launch compiles one variant only.
        self._group_limit = group_limit
        self._load_variant = load_variant
        self._specialise = origin != "native" and load_variant is not None
        self._shipped = tuple(shipped) if origin == "native" else ()
        self._variants: dict[tuple, tuple[int, object]] = {}
        self._variant_modules: list = []  # kept loaded while the kernel is
        if image is not None:
            module = times.run("load", context.load_module, image, f"kernel {signature.name}")
            self._variant_modules.append(module)
            if variables is not None:
                variables.register(module)
            self._variants[()] = (module.function(signature.name), module)
        self.compile_seconds = times.total  # translation only where image is None
        self._variant_lock = threading.Lock()

    def prepare(self) -> None:
        """Compiles and loads now (``Kernel.compile``) the generic variant and the one the
        common launch runs (every launch fact: whole groups, no offset, 32-bit ids), so
        that neither that launch nor any other with groups the kernel's default build
        takes compiles later."""
        self._function_for(1)
        self._function_for(1, LAUNCH_FACTS)
        self.compile_seconds = self.times.total

    def variant_for(self, items: int, facts: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
        """The specialisation (``KernelKey.specialization``) a launch with groups of
        ``items`` work-items and launch facts ``facts`` runs."""
        variant: list[tuple[str, str]] = []
        if self._group_limit is not None and items > self._group_limit:
            variant.append(("max_group_size", str(self.device.max_work_group_size)))
        if self._specialise:
            variant.extend(launch_specialization(facts))
        elif self._shipped and not variant:
            # Shipped code only: the most specialised variant this launch's facts allow.
            fits = [v for v in self._shipped if {fact for fact, _ in v} <= set(facts)]
            variant.extend(max(fits, key=len, default=()))
        return tuple(variant)

    def _function_for(self, items: int, facts: tuple[str, ...] = ()) -> tuple[int, object]:
        """The function handle a launch runs, and its module."""
        variant = self.variant_for(items, facts)
        with self._variant_lock:
            found = self._variants.get(variant)
            if found is None:
                module = self._load_variant(variant)
                self._variant_modules.append(module)
                if self._variables is not None:
                    self._variables.register(module)
                found = self._variants[variant] = (module.function(self.signature.name), module)
            return found

    def hidden_params(self, global_size, local_size, offset, dims: int) -> list[bytes]:
        """The parameters after the kernel's own: spirvjit's entry points take the global
        offset and the work dimension (``entry.py``)."""
        return [struct.pack("<QQQI", *offset, dims)]

    def launch(
        self,
        args: Sequence,
        global_size,
        local_size,
        global_offset,
        dynamic_shared: int = 0,
        stream=None,
    ) -> None:
        """``dynamic_shared``: bytes of HIP dynamic shared memory (``extern __shared__``).

        Without ``stream``: host arrays are copied in, the kernel runs and the writable
        ones are copied back before returning. With ``stream`` (a spirvjit.Stream of
        this device): the launch is queued on it and this returns at once, so every
        buffer must already be device memory; a host array is refused (copying it back
        would need the launch to be waited for)."""
        sig = self.signature
        gs, ls, offset, dims = normalize_sizes(
            sig.name, global_size, local_size, global_offset, self.device.max_work_group_size
        )
        if ls is None:
            ls = sig.required_local_size or choose_whole_groups(
                gs, dims, self.device.max_work_group_size
            )
        items = ls[0] * ls[1] * ls[2]
        if items > self.device.max_work_group_size:
            raise LaunchError(
                f"local_size {ls[:dims]} has {items} work-items; "
                f"{self.device.name} allows {self.device.max_work_group_size}",
                sig.name,
            )
        _slots, storages, _ = self._packer.pack(args)  # checks every argument
        ctx = self._context
        params: list[bytes] = []
        allocations: list[int] = []
        copy_back: list[tuple[np.ndarray, int]] = []
        # extern __shared__ arrays start at the region's base; without them (0 bytes) the
        # first __local argument does, where the code assumes it (entry.py).
        shared = dynamic_shared
        try:
            for spec, value, storage in zip(sig.args, args, storages[: len(args)], strict=True):
                if spec.kind in ("global", "constant"):
                    address = 0
                    found = None if isinstance(value, np.ndarray) else device_buffer(value)
                    if found is not None:
                        address = found.address  # already on the device: no copies
                    elif value is not None and stream is not None:
                        raise LaunchError(
                            f"argument '{spec.name}' is host memory "
                            f"({type(value).__name__}); a launch on a stream is "
                            "asynchronous and takes device memory only: pass "
                            "spirvjit.asarray(x, device=...) (read it back with "
                            "to_numpy), or launch without stream= to copy it in and out",
                            sig.name,
                        )
                    elif value is not None:
                        host = host_array(value)  # checked by pack() above
                        address = ctx.alloc(host.nbytes)
                        allocations.append(address)
                        ctx.copy_to_device(address, host.ctypes.data, host.nbytes)
                        if spec.kind == "global" and host.flags.writeable:
                            copy_back.append((host, address))
                    params.append(struct.pack("<Q", address))
                elif spec.kind == "local":
                    assert isinstance(value, LocalMemory)
                    shared = (shared + SHARED_ALIGN - 1) // SHARED_ALIGN * SHARED_ALIGN
                    params.append(struct.pack("<I", shared))
                    shared += value.nbytes
                else:
                    params.append(ctypes.string_at(ctypes.addressof(storage), spec.size))
            # Only the __local arguments: the signature's static size counts the static
            # __local variables of every kernel in the module, while a GPU kernel's code
            # object has only its own (the driver refuses a launch whose total is too big).
            if shared > self.device.local_memory_bytes:
                raise LaunchError(
                    f"needs {shared} bytes of local memory for its __local arguments; "
                    f"{self.device.name} has {self.device.local_memory_bytes}",
                    sig.name,
                )
            params.extend(self.hidden_params(gs, ls, offset, dims))
            function, module = self._function_for(items, launch_facts(gs, ls, offset))
            if self._variables is not None:
                self._variables.before_launch(module, None if stream is None else stream.handle)
            if stream is not None:
                ctx.launch(function, gs, ls, shared, params, stream=stream.handle)
                return  # no host copies (refused above), so nothing to wait for
            ctx.launch(function, gs, ls, shared, params)
            ctx.synchronize()
            for host, address in copy_back:
                ctx.copy_to_host(host.ctypes.data, address, host.nbytes)
        finally:
            for address in allocations:
                ctx.free(address)
