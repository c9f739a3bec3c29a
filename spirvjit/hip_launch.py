"""HIP's launch form: ``kernel(..., grid=(gx, gy, gz), block=(bx, by, bz), shared_mem=n)``.

A HIP grid counts blocks, an OpenCL NDRange counts work-items: the global size is
``grid * block`` in each dimension and the local size is the block. ``shared_mem`` is
the dynamic shared memory (``extern __shared__``) of each block, in bytes, as the third
``<<<grid, block, shared_mem>>>`` argument; see ``translate/dynamic_shared.py`` for where
it lives.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

from .errors import LaunchError
from .translate.dynamic_shared import dynamic_offset
from .translate.signature import KernelSignature


def _dims(value: int | Sequence[int], what: str, kernel: str) -> tuple[int, ...]:
    """1 to 3 positive integers (Python or NumPy, alone or in a sequence; a dim3-like
    tuple), or LaunchError."""
    try:
        dims = (
            (operator.index(value),)
            if not hasattr(value, "__len__")
            else tuple(operator.index(d) for d in value)
        )
    except TypeError:
        dims = ()
    if not 1 <= len(dims) <= 3 or not all(d >= 1 for d in dims):
        raise LaunchError(f"{what} must be 1 to 3 positive integers, got {value!r}", kernel)
    return dims


def hip_sizes(
    grid: int | Sequence[int], block: int | Sequence[int], kernel: str = "kernel"
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(global size, local size) of a launch of ``grid`` blocks of ``block`` threads.

    Both keep the larger of the two dimension counts (``grid=(4, 2)``, ``block=256`` is
    a 2-D launch of 1024 x 2 work-items in blocks of 256 x 1).
    """
    g, b = _dims(grid, "grid", kernel), _dims(block, "block", kernel)
    n = max(len(g), len(b))
    g, b = g + (1,) * (n - len(g)), b + (1,) * (n - len(b))
    return tuple(gd * bd for gd, bd in zip(g, b, strict=True)), b


def launch_sizes(
    kernel: str,
    global_size,
    local_size,
    grid: int | Sequence[int] | None,
    block: int | Sequence[int] | None,
):
    """The NDRange of a launch given either as global/local sizes or as grid/block."""
    if grid is None and block is None:
        if global_size is None:
            raise LaunchError("give global_size (and local_size), or grid and block", kernel)
        return global_size, local_size
    if grid is None or block is None:
        raise LaunchError("grid and block go together", kernel)
    if global_size is not None or local_size is not None:
        raise LaunchError("give global_size/local_size or grid/block, not both", kernel)
    return hip_sizes(grid, block, kernel)


def cpu_local_bytes(
    signature: KernelSignature, local_bytes: int, shared_mem: int, limit: int
) -> int:
    """A CPU work-group's local memory with ``shared_mem`` bytes of dynamic shared memory
    after the static ``__shared__`` variables; LaunchError above ``limit``."""
    if not shared_mem:
        return local_bytes
    check_shared_mem(signature, shared_mem)
    total = dynamic_offset(signature.static_local_bytes) + shared_mem
    if total > limit:
        raise LaunchError(
            f"needs {total} bytes of shared memory ({signature.static_local_bytes} static, "
            f"{shared_mem} dynamic); the host CPU device has {limit}",
            signature.name,
        )
    return max(local_bytes, total)


def check_shared_mem(signature: KernelSignature, shared_mem: int) -> None:
    if not isinstance(shared_mem, int) or shared_mem < 0:
        raise LaunchError(
            f"shared_mem must be a byte count >= 0, got {shared_mem!r}", signature.name
        )
    if shared_mem and any(a.kind == "local" for a in signature.args):
        # Both would start at the beginning of the dynamic region.
        raise LaunchError(
            "shared_mem cannot be combined with __local (LocalMemory) arguments", signature.name
        )
