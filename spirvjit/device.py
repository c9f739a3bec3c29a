"""Devices spirvjit can run kernels on: the host CPU, and NVIDIA and AMD GPUs where a
driver reports them."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from . import config
from .backends.cpu.launcher import LOCAL_MEMORY_BYTES, MAX_WORK_GROUP_SIZE
from .target import Target, host_target, parse_target

log = logging.getLogger("spirvjit")


@dataclass(frozen=True, slots=True)
class Device:
    name: str
    kind: str  # "cpu", "nvidia" or "amd"
    target: Target
    compute_units: int  # threads a launch may use (CPU), SMs or CUs (GPUs)
    max_work_group_size: int
    local_memory_bytes: int  # per work-group; a launch needing more raises LaunchError
    index: int = 0  # the driver's ordinal of a GPU


def host_device() -> Device:
    target = host_target()
    return Device(
        name=f"host CPU ({target.arch})",
        kind="cpu",
        target=target,
        compute_units=config.num_threads(),
        max_work_group_size=MAX_WORK_GROUP_SIZE,
        local_memory_bytes=LOCAL_MEMORY_BYTES,
    )


def devices() -> list[Device]:
    """The devices present; the host CPU is always first.

    GPUs are asked for through the CUDA driver and the HIP runtime, which are loaded
    here (and only when a GPU is listed or used); a GPU whose architecture LLVM does
    not know is left out with a warning.
    """
    from .runtime import cuda, hip

    found = [host_device()]
    for info in [*cuda.devices(), *hip.devices()]:
        try:
            target = parse_target(info.arch)
        except ValueError as exc:
            log.warning("spirvjit: skipping GPU %d (%s): %s", info.index, info.name, exc)
            continue
        found.append(
            Device(
                name=info.name,
                kind=info.vendor,
                target=target,
                compute_units=info.compute_units,
                max_work_group_size=info.max_work_group_size,
                local_memory_bytes=info.local_memory_bytes,
                index=info.index,
            )
        )
    return found
