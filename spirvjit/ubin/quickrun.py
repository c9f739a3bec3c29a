"""``spirvjit run``: launch one kernel on generated inputs and time it.

Buffers get the number of elements given with ``--size ARG=N``, else one element per
global work-item (random values, fixed seed), a guess: ``spirvjit run`` then makes a first
launch in checked mode, so that a kernel that reaches past a guessed size is reported
instead of crashing the process (see ``guessed``); ``__local`` pointers get 16 bytes per
work-group item; by-value arguments take the values given
(positionally, in order of the by-value arguments, or as NAME=VALUE where NAME is the
argument's name or index), else integers default to the global work-item count (the
usual ``n``) and floats to 1.0; structs are zero bytes.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..program import Kernel

_DTYPES = {
    ("int", 8): np.int8,
    ("int", 16): np.int16,
    ("int", 32): np.int32,
    ("int", 64): np.int64,
    ("bool", 8): np.int8,
    ("float", 16): np.float16,
    ("float", 32): np.float32,
    ("float", 64): np.float64,
}
LOCAL_BYTES_PER_ITEM = 16


@dataclass(frozen=True, slots=True)
class Timing:
    first_s: float
    steady_s: float
    repeats: int
    origin: str


def _dtype(arg):
    return np.dtype(_DTYPES.get((arg.element_kind, arg.element_bits), np.uint8))


def _parse_values(kernel: Kernel, values: Sequence[str]) -> dict[int, str]:
    """Argument index → text, from positional values and NAME=VALUE pairs."""
    scalars = [a for a in kernel.signature.args if a.kind == "value"]
    by_name = {a.name: a.index for a in kernel.signature.args}
    given: dict[int, str] = {}
    positional = iter(scalars)
    for text in values:
        name, eq, value = text.partition("=")
        if eq:
            index = int(name) if name.isdigit() else by_name.get(name)
            if index is None or index >= len(kernel.signature.args):
                names = ", ".join(f"{a.index}:{a.name}" for a in kernel.signature.args)
                raise ValueError(f"kernel {kernel.name} has no argument {name!r}; it has {names}")
            given[index] = value
        else:
            arg = next(positional, None)
            if arg is None:
                raise ValueError(f"kernel {kernel.name} takes {len(scalars)} by-value arguments")
            given[arg.index] = text
    return given


def parse_sizes(kernel: Kernel, sizes: Sequence[str]) -> dict[int, int]:
    """Buffer argument index → element count, from ``ARG=N`` texts (ARG: name or index)."""
    by_name = {a.name: a.index for a in kernel.signature.args}
    found: dict[int, int] = {}
    for text in sizes:
        name, eq, value = text.partition("=")
        index = int(name) if name.isdigit() else by_name.get(name)
        buffers = [a for a in kernel.signature.args if a.kind in ("global", "constant")]
        if not eq or index is None or index not in {a.index for a in buffers}:
            names = ", ".join(f"{a.index}:{a.name}" for a in buffers) or "none"
            raise ValueError(
                f"--size {text!r}: expected ARG=N with ARG a buffer argument of "
                f"{kernel.name} (its buffers: {names})"
            )
        try:
            count = int(value)
        except ValueError:
            count = -1
        if count < 0:
            raise ValueError(f"--size {text!r}: N must be a non-negative element count")
        found[index] = count
    return found


def guessed(kernel: Kernel, sizes: dict[int, int]) -> list[str]:
    """The buffer arguments whose size ``make_args`` guesses (no ``--size``)."""
    return [
        f"{a.index}:{a.name}"
        for a in kernel.signature.args
        if a.kind in ("global", "constant") and a.index not in sizes
    ]


def make_args(
    kernel: Kernel,
    items: int,
    group_items: int,
    values: Sequence[str],
    sizes: dict[int, int] | None = None,
) -> list:
    """The launch arguments (see the module docstring); ValueError for a bad value.
    ``sizes``: element counts of buffer arguments by index (``parse_sizes``)."""
    from ..arguments import LocalMemory

    given = _parse_values(kernel, values)
    sizes = sizes or {}
    rng = np.random.default_rng(0)
    args = []
    for arg in kernel.signature.args:
        dtype = _dtype(arg)
        lanes = 4 if arg.lanes == 3 else arg.lanes
        if arg.kind in ("global", "constant"):
            count = sizes.get(arg.index, items)
            shape = (count, lanes) if lanes > 1 else (count,)
            if dtype.kind == "f":
                args.append(rng.random(shape).astype(dtype))
            else:
                args.append(rng.integers(0, 100, shape).astype(dtype))
        elif arg.kind == "local":
            args.append(LocalMemory(group_items * LOCAL_BYTES_PER_ITEM))
        elif arg.kind == "struct":
            args.append(bytes(arg.size))
        else:
            text = given.get(arg.index)
            default = items if dtype.kind in "iu" else 1.0
            try:
                value = dtype.type(text if text is not None else default)
            except ValueError as exc:
                raise ValueError(f"argument {arg.index} ({arg.name}): bad value {text!r}") from exc
            args.append(np.full(lanes, value, dtype) if lanes > 1 else value)
    return args


def time_kernel(
    kernel: Kernel, args: list, global_size, local_size, repeats: int, check: bool = False
) -> Timing:
    """First launch (compile or load included) and the median of ``repeats`` more;
    ``check``: every launch in checked mode."""
    start = time.perf_counter()
    kernel(*args, global_size=global_size, local_size=local_size, check=check)
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        kernel(*args, global_size=global_size, local_size=local_size, check=check)
        times.append(time.perf_counter() - start)
    steady = statistics.median(times) if times else float("nan")
    origin = kernel.program.origins.get(kernel.name, "?")
    return Timing(first, steady, repeats, origin)
