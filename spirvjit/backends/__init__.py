"""Device backends behind one interface (``base.Backend``).

The core (``program.py``, ``jit.py``, ``device.py``, ``target.py``) names no backend: it
asks this registry for the backend of a target kind, and the backend's package is
imported then. So a CPU-only process never imports the GPU back ends or their drivers,
and adding a backend is one entry here plus its package (docs/design.md, "Adding a
backend").
"""

from __future__ import annotations

import importlib
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Backend

# Target kind -> the module whose ``BACKEND`` implements it, in the order devices()
# lists their devices (the host CPU first).
BACKEND_MODULES: dict[str, str] = {
    "cpu": "spirvjit.backends.cpu",
    "nvptx": "spirvjit.backends.nvptx.backend",
    "amdgpu": "spirvjit.backends.amdgpu.backend",
}
# Target kind -> the module that parses its target names (light: no driver, no codegen).
TARGET_NAME_MODULES: dict[str, str] = {
    "amdgpu": "spirvjit.backends.amdgpu.target",
    "nvptx": "spirvjit.backends.nvptx.target",
}

_lock = threading.Lock()
_loaded: dict[str, Backend] = {}


def backend(kind: str) -> Backend:
    """The backend of target kind ``kind`` ("cpu", "amdgpu", "nvptx"), imported on first use."""
    found = _loaded.get(kind)
    if found is None:
        if kind not in BACKEND_MODULES:
            raise ValueError(f"no backend for target kind {kind!r}")
        with _lock:
            found = _loaded.get(kind)
            if found is None:
                found = _loaded[kind] = importlib.import_module(BACKEND_MODULES[kind]).BACKEND
    return found


_parsers: dict | None = None


def target_name_parsers() -> dict:
    """The GPU target-name modules by kind, each with ``parse(name) -> Target | None``
    and ``name_of(target) -> str``."""
    global _parsers
    if _parsers is None:
        _parsers = {kind: importlib.import_module(p) for kind, p in TARGET_NAME_MODULES.items()}
    return _parsers
