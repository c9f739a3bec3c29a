"""Caches of compiled kernels (native object code), keyed by ``KernelKey``.

This is the seam the JIT uses; the persistent on-disk cache plugs in here.
``load`` returns None on a miss; ``store`` never raises into a launch.
"""

from __future__ import annotations

from .cache_key import KernelKey


def load(key: KernelKey) -> bytes | None:
    """The object code cached for ``key``, or None."""
    return None


def store(key: KernelKey, obj: bytes) -> None:
    """Remembers ``obj`` as the object code for ``key``."""
