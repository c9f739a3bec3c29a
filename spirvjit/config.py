"""Every environment knob spirvjit reads, in one place.

Values are read when asked for (not at import), so tests and long-running
processes can change the environment and see the effect on the next JIT.
"""

from __future__ import annotations

import os
from pathlib import Path


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


def dump_dir() -> Path | None:
    """SPIRVJIT_DUMP=DIR: write every kernel's stages (SPIR-V, disassembly, IR, asm) there."""
    value = os.environ.get("SPIRVJIT_DUMP", "").strip()
    return Path(value) if value else None


def debug() -> bool:
    """SPIRVJIT_DEBUG=1: log each JIT with its time per stage to the ``spirvjit`` logger."""
    return _flag("SPIRVJIT_DEBUG")


def num_threads() -> int:
    """SPIRVJIT_NUM_THREADS: worker threads of the host CPU device (default: all cores)."""
    value = os.environ.get("SPIRVJIT_NUM_THREADS", "").strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not every platform has affinity masks
        return os.cpu_count() or 1
