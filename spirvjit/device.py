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
    # OpenCL extensions the device reports (cl_khr_*); sub-group sizes its kernels run with.
    extensions: tuple[str, ...] = ()
    sub_group_sizes: tuple[int, ...] = (1,)

    def supports(self, name: str) -> bool:
        """Whether kernels using ``name`` run here: an OpenCL extension (``cl_khr_fp64``),
        a SPIR-V capability (``Float64``) or a SPIR-V extension (``SPV_KHR_expect_assume``)."""
        from .spirv import capabilities

        if name.startswith("cl_"):
            return name in self.extensions
        return capabilities.supports(name)

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
