"""NDRange arithmetic shared by every backend: checking the sizes a launch gives and
choosing a local size when it gives none.

Sizes come from users (and from files, through ``spirvjit run``): every value is
checked to be a real integer (not a bool, not a float) that fits the device's
``size_t`` arithmetic, so nothing wraps silently. The launch record of the CPU and the
drivers' grids hold signed 64-bit values; every size, offset, offset + size and the
total number of work-items must therefore stay below 2**63.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import LaunchError

SIZE_LIMIT = (1 << 63) - 1  # the largest size, offset or work-item count a launch may use


def normalize_sizes(
    kernel: str, global_size, local_size, global_offset, max_group_items: int | None = None
) -> tuple[tuple[int, int, int], tuple[int, int, int] | None, tuple[int, int, int], int]:
    """Checks the NDRange arguments; returns (global, local or None, offset, dims) with
    the tuples padded to three dimensions. ``max_group_items``: the device's work-group
    size limit, checked against an explicit local size."""
    gs = _size_tuple(kernel, "global_size", global_size)
    dims = len(gs)
    if any(g < 1 for g in gs):
        raise LaunchError(f"global_size {gs} has a zero or negative dimension", kernel)
    if any(g > SIZE_LIMIT for g in gs) or math.prod(gs) > SIZE_LIMIT:
        raise LaunchError(
            f"global_size {gs} has {math.prod(gs)} work-items; at most 2**63-1 fit in size_t "
            "arithmetic",
            kernel,
        )
    ls = None
    if local_size is not None:
        ls = _size_tuple(kernel, "local_size", local_size)
        if len(ls) != dims:
            raise LaunchError(
                f"local_size {ls} has {len(ls)} dimensions, global_size {gs} has {dims}", kernel
            )
        if any(v < 1 for v in ls):
            raise LaunchError(f"local_size {ls} has a zero or negative dimension", kernel)
        if max_group_items is not None and math.prod(ls) > max_group_items:
            raise LaunchError(f"local_size {ls} has more than {max_group_items} work-items", kernel)
    offset = (0,) * dims
    if global_offset is not None:
        offset = _size_tuple(kernel, "global_offset", global_offset)
        if len(offset) != dims or any(v < 0 for v in offset):
            raise LaunchError(
                f"global_offset {offset} must be {dims} non-negative integers", kernel
            )
        if any(o + g > SIZE_LIMIT for o, g in zip(offset, gs, strict=True)):
            raise LaunchError(
                f"global_offset {offset} + global_size {gs} does not fit in size_t arithmetic "
                "(2**63-1)",
                kernel,
            )
    pad = (1,) * (3 - dims)
    return gs + pad, (ls + pad) if ls else None, offset + (0,) * (3 - dims), dims


def _size_tuple(kernel: str, what: str, value) -> tuple[int, ...]:
    items = (value,) if _is_integer(value) or isinstance(value, (bool, np.bool_)) else value
    try:
        items = tuple(items)
    except TypeError:
        items = None
    if items is None or not 1 <= len(items) <= 3 or not all(_is_integer(v) for v in items):
        raise LaunchError(
            f"{what} must be an int or a tuple of 1-3 ints, got {value!r}"
            + (" (a bool is not a size)" if _has_bool(value) else ""),
            kernel,
        )
    return tuple(int(v) for v in items)


def _is_integer(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _has_bool(value) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return True
    try:
        return any(isinstance(v, (bool, np.bool_)) for v in value)
    except TypeError:
        return False


def group_counts(global_size: tuple[int, ...], local_size: tuple[int, ...]) -> list[int]:
    """Work-groups per dimension; the last group of a dimension may be partial."""
    return [-(-size // group) for size, group in zip(global_size, local_size, strict=True)]


def choose_local_size(
    global_size: tuple[int, int, int], dims: int, rows: int = 1
) -> tuple[int, int, int]:
    """A work-group shape for CPU launches that give none.

    Prefers divisors of the global size (OpenCL 1.2 kernels may assume uniform
    groups); falls back to a non-uniform last group when the only divisors are
    too small to amortize the per-group cost. ``rows``: in 2-D and 3-D, y gets up to
    that many rows even where x takes the whole budget of 256 items (the CPU back end
    runs blocks of y rows together: backends/cpu/yjam.py).
    """
    budget = 256
    shape = []
    for d in range(3):
        if d >= dims:
            shape.append(1)
            continue
        want = min(global_size[d], max(1, budget))
        best = (
            max(v for v in range(1, want + 1) if global_size[d] % v == 0) if want <= 4096 else want
        )
        chosen = best if best * 8 >= want else want
        shape.append(chosen)
        budget //= chosen
        if d == 0 and dims >= 2:
            budget = max(budget, rows)
    return tuple(shape)


def choose_whole_groups(global_size: tuple, dims: int, limit: int) -> tuple[int, int, int]:
    """Groups of up to 256 work-items whose sides divide the global size (for devices that
    launch whole groups only, like CUDA's blocks): x gets the most, then y, then z."""
    budget = min(256, limit)
    sides = []
    for d in range(3):
        side = 1
        if d < dims:
            side = max(
                s for s in range(1, min(budget, global_size[d]) + 1) if global_size[d] % s == 0
            )
        sides.append(side)
        budget = max(1, budget // side)
    return tuple(sides)
