"""Devices spirvjit can run kernels on: the host CPU, and NVIDIA and AMD GPUs where a
driver reports them. Each device knows its backend, which runs its launches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .target import Target

if TYPE_CHECKING:
    from .backends.base import Backend


@dataclass(frozen=True, slots=True)
class Device:
    name: str
    kind: str  # "cpu", "nvidia" or "amd"
    target: Target
    compute_units: int  # threads a launch may use (CPU), SMs or CUs (GPUs)
    max_work_group_size: int
    local_memory_bytes: int  # per work-group; a launch needing more raises LaunchError
    index: int = 0  # the driver's ordinal of a GPU

    @property
    def backend(self) -> Backend:
        """The backend that compiles for and launches on this device."""
        from .backends import backend

        return backend(self.target.kind)


def host_device() -> Device:
    """The host CPU."""
    from .backends import backend

    return backend("cpu").devices()[0]


def devices() -> list[Device]:
    """The devices present, in the registry's order: the host CPU first, then the GPUs
    the CUDA driver and the HIP runtime report.

    GPU drivers are loaded here (and only when a GPU is listed or used); a GPU whose
    architecture LLVM does not know is left out with a warning.
    """
    from .backends import BACKEND_MODULES, backend

    return [device for kind in BACKEND_MODULES for device in backend(kind).devices()]
