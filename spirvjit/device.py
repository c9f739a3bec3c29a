"""Devices spirvjit can run kernels on (the host CPU today)."""

from __future__ import annotations

from dataclasses import dataclass

from . import config
from .backends.cpu.launcher import LOCAL_MEMORY_BYTES, MAX_WORK_GROUP_SIZE
from .target import Target, host_target


@dataclass(frozen=True, slots=True)
class Device:
    name: str
    kind: str  # "cpu"
    target: Target
    compute_units: int  # threads a launch may use
    max_work_group_size: int
    local_memory_bytes: int  # per work-group; a launch needing more raises LaunchError


def devices() -> list[Device]:
    """The devices present; the host CPU is always first."""
    target = host_target()
    return [
        Device(
            name=f"host CPU ({target.arch})",
            kind="cpu",
            target=target,
            compute_units=config.num_threads(),
            max_work_group_size=MAX_WORK_GROUP_SIZE,
            local_memory_bytes=LOCAL_MEMORY_BYTES,
        )
    ]
