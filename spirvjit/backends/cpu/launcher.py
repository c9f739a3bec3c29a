"""Running a compiled kernel on the host CPU: argument packing, NDRange, threads.

Python runs once per launch: it checks and packs the arguments, writes the launch
record and wakes the worker threads. Each thread (the caller included) then
calls the kernel's native runner, which claims chunks of work-groups from an
atomic counter until none are left. ctypes releases the GIL for the call, so
the threads run in parallel.
"""

from __future__ import annotations

import ctypes
import queue
import threading
from collections.abc import Sequence

import numpy as np

from ...errors import LaunchError
from ...translate.signature import KernelArg, KernelSignature
from .abi import LAUNCH_WORDS

RUNNER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)

MAX_WORK_GROUP_SIZE = 4096
LOCAL_MEMORY_BYTES = 256 * 1024
ARENA_ALIGN = 64
# Launches with fewer work-items than this run on the calling thread alone:
# waking workers costs more than they would save.
INLINE_WORK_ITEMS = 1 << 14


class LocalMemory:
    """A ``__local`` pointer argument: ``nbytes`` of work-group memory per group."""

    def __init__(self, nbytes: int):
        if not isinstance(nbytes, (int, np.integer)) or nbytes <= 0:
            raise ValueError(f"LocalMemory needs a positive byte count, got {nbytes!r}")
        self.nbytes = int(nbytes)

    def __repr__(self) -> str:
        return f"LocalMemory({self.nbytes})"


class ThreadPool:
    """Worker threads that call native runners; the caller takes part in every launch."""

    def __init__(self, threads: int):
        self.threads = max(1, threads)
        self._tasks: list[queue.SimpleQueue] = []
        self._done: queue.SimpleQueue = queue.SimpleQueue()
        self._arenas: list[np.ndarray] = [np.empty(0, np.uint8)] * self.threads
        self._lock = threading.Lock()
        for i in range(self.threads - 1):
            tasks: queue.SimpleQueue = queue.SimpleQueue()
            self._tasks.append(tasks)
            threading.Thread(
                target=self._work, args=(tasks,), name=f"spirvjit-cpu-{i}", daemon=True
            ).start()

    def _work(self, tasks: queue.SimpleQueue) -> None:
        while True:
            runner, args, launch, arena = tasks.get()
            try:
                runner(args, launch, arena)
            finally:
                self._done.put(None)

    def arena(self, index: int, nbytes: int) -> int:
        """Address of thread ``index``'s local-memory arena of at least ``nbytes``."""
        arena = self._arenas[index]
        if arena.size < nbytes + ARENA_ALIGN:
            arena = self._arenas[index] = np.zeros(nbytes + ARENA_ALIGN, np.uint8)
        address = arena.ctypes.data
        return address + (-address % ARENA_ALIGN)

    def run(self, runner, args: int, launch: int, threads: int, arena_bytes: int) -> None:
        # One launch at a time: workers share the done queue and the arenas.
        with self._lock:
            helpers = min(threads, self.threads) - 1
            for i in range(helpers):
                self._tasks[i].put((runner, args, launch, self.arena(i + 1, arena_bytes)))
            try:
                runner(args, launch, self.arena(0, arena_bytes))
            finally:
                for _ in range(helpers):
                    self._done.get()


def normalize_sizes(
    kernel: str, global_size, local_size, global_offset
) -> tuple[tuple, tuple | None, tuple]:
    """Checks the NDRange arguments; returns 3-D tuples (local None when not given)."""
    gs = _size_tuple(kernel, "global_size", global_size)
    dims = len(gs)
    if any(g < 1 for g in gs):
        raise LaunchError(f"global_size {gs} has a zero or negative dimension", kernel)
    ls = None
    if local_size is not None:
        ls = _size_tuple(kernel, "local_size", local_size)
        if len(ls) != dims:
            raise LaunchError(
                f"local_size {ls} has {len(ls)} dimensions, global_size {gs} has {dims}", kernel
            )
        if any(v < 1 for v in ls):
            raise LaunchError(f"local_size {ls} has a zero or negative dimension", kernel)
        if int(np.prod(ls)) > MAX_WORK_GROUP_SIZE:
            raise LaunchError(
                f"local_size {ls} has more than {MAX_WORK_GROUP_SIZE} work-items", kernel
            )
    offset = (0,) * dims
    if global_offset is not None:
        offset = _size_tuple(kernel, "global_offset", global_offset)
        if len(offset) != dims or any(v < 0 for v in offset):
            raise LaunchError(
                f"global_offset {offset} must be {dims} non-negative integers", kernel
            )
    pad = (1,) * (3 - dims)
    return gs + pad, (ls + pad) if ls else None, offset + (0,) * (3 - dims), dims


def _size_tuple(kernel: str, what: str, value) -> tuple[int, ...]:
    if isinstance(value, (int, np.integer)):
        value = (value,)
    try:
        sizes = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise LaunchError(
            f"{what} must be an int or a tuple of 1-3 ints, got {value!r}", kernel
        ) from None
    if not 1 <= len(sizes) <= 3 or any(not isinstance(v, (int, np.integer)) for v in value):
        raise LaunchError(f"{what} must be an int or a tuple of 1-3 ints, got {value!r}", kernel)
    return sizes


def choose_local_size(global_size: tuple[int, int, int], dims: int) -> tuple[int, int, int]:
    """A work-group shape for launches that give none.

    Prefers divisors of the global size (OpenCL 1.2 kernels may assume uniform
    groups); falls back to a non-uniform last group when the only divisors are
    too small to amortize the per-group cost.
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
    return tuple(shape)


class ArgumentPacker:
    """Checks one launch's arguments against the signature and packs them for the runner."""

    def __init__(self, signature: KernelSignature):
        self.signature = signature

    def pack(self, args: Sequence) -> tuple[ctypes.Array, list, int]:
        """Returns (argument pointer array, objects to keep alive, local bytes needed)."""
        sig = self.signature
        if len(args) != len(sig.args):
            expected = ", ".join(a.describe() for a in sig.args)
            raise LaunchError(
                f"takes {len(sig.args)} arguments ({expected}), got {len(args)}", sig.name
            )
        slots = (ctypes.c_void_p * max(1, len(args)))()
        keep: list = []
        local_offset = sig.static_local_bytes
        for spec, value in zip(sig.args, args, strict=True):
            if spec.kind == "local":
                if not isinstance(value, LocalMemory):
                    raise self._error(
                        spec, f"expects spirvjit.LocalMemory(nbytes), got {type(value).__name__}"
                    )
                local_offset = (local_offset + 127) // 128 * 128
                storage = ctypes.c_int64(local_offset)
                local_offset += value.nbytes
            elif spec.kind in ("global", "constant"):
                storage = ctypes.c_void_p(self._buffer_address(spec, value, keep))
            elif spec.kind == "struct":
                storage = self._struct_bytes(spec, value)
            else:
                storage = self._value_bytes(spec, value)
            keep.append(storage)
            slots[spec.index] = ctypes.addressof(storage)
        if local_offset > LOCAL_MEMORY_BYTES:
            raise LaunchError(
                f"needs {local_offset} bytes of local memory; "
                f"the host CPU device has {LOCAL_MEMORY_BYTES}",
                sig.name,
            )
        return slots, keep, local_offset

    def _error(self, spec: KernelArg, message: str) -> LaunchError:
        return LaunchError(
            message,
            self.signature.name,
            f"{spec.index} ({spec.name})" if not spec.name.startswith("#") else spec.index,
        )

    def _buffer_address(self, spec: KernelArg, value, keep: list) -> int:
        if value is None:
            return 0
        if not isinstance(value, np.ndarray):
            raise self._error(
                spec, f"expects a NumPy array for {spec.describe()}, got {type(value).__name__}"
            )
        if not value.flags.c_contiguous:
            raise self._error(spec, "the array is not C-contiguous; pass np.ascontiguousarray(a)")
        if spec.kind == "global" and not value.flags.writeable:
            raise self._error(
                spec, "the array is read-only but the kernel may write to a __global buffer"
            )
        if spec.element_kind is not None and value.dtype.fields is None:
            kind = {"f": "float", "i": "int", "u": "int", "b": "bool"}.get(value.dtype.kind)
            if kind != spec.element_kind or value.dtype.itemsize * 8 != spec.element_bits:
                raise self._error(
                    spec,
                    f"expects {spec.describe()} (elements of {spec.element_bits}-bit "
                    f"{spec.element_kind}), got an array of {value.dtype}; convert it with "
                    ".astype() or reinterpret it with .view()",
                )
        address = value.ctypes.data
        if address % spec.align and value.size:
            raise self._error(
                spec,
                f"the array's data is not {spec.align}-byte aligned as {spec.describe()} requires",
            )
        keep.append(value)
        return address

    def _value_bytes(self, spec: KernelArg, value) -> ctypes.Array:
        dtype = _scalar_dtype(spec)
        if dtype is None:
            raise self._error(spec, f"by-value argument of type {spec.describe()} is not supported")
        lanes = spec.lanes
        if lanes > 1:
            data = np.asarray(value)
            if data.ndim != 1 or data.size not in (lanes, 4 if lanes == 3 else lanes):
                raise self._error(
                    spec, f"expects {lanes} values for {spec.describe()}, got shape {data.shape}"
                )
            items = list(data)[:lanes]
        else:
            items = [value]
        converted = np.zeros(spec.size // dtype.itemsize, dtype)
        for i, item in enumerate(items):
            converted[i] = self._scalar(spec, item, dtype)
        buffer = (ctypes.c_char * spec.size).from_buffer_copy(converted.tobytes()[: spec.size])
        return buffer

    def _scalar(self, spec: KernelArg, item, dtype: np.dtype):
        if isinstance(item, (bool, np.bool_)) and dtype.kind != "b":
            raise self._error(spec, f"expects {spec.describe()}, got a bool")
        if dtype.kind == "f":
            if not isinstance(item, (int, float, np.integer, np.floating)):
                raise self._error(spec, f"expects {spec.describe()}, got {type(item).__name__}")
            return dtype.type(item)
        if not isinstance(item, (int, np.integer)):
            raise self._error(
                spec,
                f"expects an integer for {spec.describe()}, got {type(item).__name__} {item!r}",
            )
        bits = spec.element_bits
        if not -(1 << (bits - 1)) <= int(item) < (1 << bits):
            raise self._error(spec, f"{item} does not fit in {spec.describe()}")
        return int(item) & ((1 << bits) - 1)

    def _struct_bytes(self, spec: KernelArg, value) -> ctypes.Array:
        if isinstance(value, np.ndarray) and value.size == 1:
            value = value.reshape(())[()]
        if isinstance(value, np.void):
            data = value.tobytes()
        elif isinstance(value, (bytes, bytearray, memoryview)):
            data = bytes(value)
        else:
            raise self._error(
                spec,
                f"expects a struct of {spec.size} bytes (NumPy structured scalar or bytes), "
                f"got {type(value).__name__}",
            )
        if len(data) != spec.size:
            raise self._error(spec, f"expects a struct of {spec.size} bytes, got {len(data)} bytes")
        buffer = (ctypes.c_char * max(1, spec.size)).from_buffer_copy(data or b"\0")
        return buffer


def _scalar_dtype(spec: KernelArg) -> np.dtype | None:
    if spec.element_kind == "float":
        return np.dtype({16: np.float16, 32: np.float32, 64: np.float64}[spec.element_bits])
    if spec.element_kind == "int":
        return np.dtype(
            {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[spec.element_bits]
        )
    return None


def launch_record(
    global_size, local_size, global_offset, dims: int, threads: int, frames_offset: int = 0
) -> tuple[ctypes.Array, int]:
    """The launch record the runner reads (see abi.py); returns it and the group count."""
    record = (ctypes.c_int64 * LAUNCH_WORDS)()
    groups = [-(-size // group) for size, group in zip(global_size, local_size, strict=True)]
    total = groups[0] * groups[1] * groups[2]
    record[0:3] = list(global_size)
    record[3:6] = list(local_size)
    record[6:9] = list(global_offset)
    record[9:12] = groups
    record[12] = dims
    record[13] = total
    record[14] = 0
    # Several chunks per thread balance uneven groups; one chunk is the whole range inline.
    record[15] = max(1, total // (threads * 8)) if threads > 1 else total
    record[16] = frames_offset
    return record, total
