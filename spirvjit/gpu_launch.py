"""Launching a kernel on a GPU: NumPy arrays go to the device and back around one
synchronous launch, through the CUDA driver or the HIP runtime (``runtime/``).

The kernel's parameters are packed as its GPU entry point takes them (see
``backends/gpu/entry.py``): buffers as device addresses, ``__local`` buffers as offsets
into the group's dynamic shared memory, values as their bytes, then the global offset
and the work dimension.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from collections.abc import Sequence

import numpy as np

from .backends.cpu.launcher import LocalMemory, normalize_sizes
from .device import Device
from .errors import LaunchError
from .translate.signature import KernelSignature

_contexts: dict[tuple[str, int], object] = {}
_contexts_lock = threading.Lock()
SHARED_ALIGN = 16


def _context(device: Device):
    """The driver context of ``device``, made once per process."""
    with _contexts_lock:
        key = (device.kind, device.index)
        if key not in _contexts:
            if device.kind == "nvidia":
                from .runtime.cuda import CudaContext

                _contexts[key] = CudaContext(device.index)
            else:
                from .runtime.hip import HipContext

                _contexts[key] = HipContext(device.index)
        return _contexts[key]


def choose_gpu_local_size(global_size: tuple, dims: int, limit: int) -> tuple[int, int, int]:
    """Groups of up to 256 work-items whose sides divide the global size (CUDA launches
    whole blocks only): x gets the most, then y, then z."""
    budget = min(256, limit)
    sides = []
    for d in range(3):
        side = 1
        if d < dims:
            side = max(s for s in range(1, budget + 1) if global_size[d] % s == 0)
        sides.append(side)
        budget = max(1, budget // side)
    return tuple(sides)


class GpuKernel:
    """One kernel's code loaded on one GPU, with its argument packing."""

    def __init__(self, device: Device, image: bytes, signature: KernelSignature, packer):
        self.device = device
        self.signature = signature
        self._packer = packer  # the CPU ArgumentPacker: its checks and scalar conversions
        self._context = _context(device)
        self._module = self._context.load_module(image, f"kernel {signature.name}")
        self._function = self._module.function(signature.name)

    def launch(
        self, args: Sequence, global_size, local_size, global_offset, dynamic_shared: int = 0
    ) -> None:
        """``dynamic_shared``: bytes of HIP dynamic shared memory (``extern __shared__``)."""
        sig = self.signature
        gs, ls, offset, dims = normalize_sizes(sig.name, global_size, local_size, global_offset)
        if ls is None:
            ls = sig.required_local_size or choose_gpu_local_size(
                gs, dims, self.device.max_work_group_size
            )
        items = ls[0] * ls[1] * ls[2]
        if items > self.device.max_work_group_size:
            raise LaunchError(
                f"local_size {ls[:dims]} has {items} work-items; "
                f"{self.device.name} allows {self.device.max_work_group_size}",
                sig.name,
            )
        _slots, storages, _ = self._packer.pack(args, cpu_local=False)  # checks every argument
        ctx = self._context
        params: list[bytes] = []
        allocations: list[int] = []
        copy_back: list[tuple[np.ndarray, int]] = []
        shared = dynamic_shared  # extern __shared__ arrays start at the region's base
        try:
            for spec, value, storage in zip(sig.args, args, storages[: len(args)], strict=True):
                if spec.kind in ("global", "constant"):
                    address = 0
                    if value is not None:
                        host = np.asarray(value)
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
            params.append(struct.pack("<QQQI", *offset, dims))
            ctx.launch(self._function, gs, ls, shared, params)
            ctx.synchronize()
            for host, address in copy_back:
                ctx.copy_to_host(host.ctypes.data, address, host.nbytes)
        finally:
            for address in allocations:
                ctx.free(address)
