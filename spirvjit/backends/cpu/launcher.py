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
from dataclasses import dataclass

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
INLINE_WORK_ITEMS = 1 << 12


class LocalMemory:
    """A ``__local`` pointer argument: ``nbytes`` of work-group memory per group."""

    def __init__(self, nbytes: int):
        if not isinstance(nbytes, (int, np.integer)) or nbytes <= 0:
            raise ValueError(f"LocalMemory needs a positive byte count, got {nbytes!r}")
        self.nbytes = int(nbytes)

    def __repr__(self) -> str:
        return f"LocalMemory({self.nbytes})"


class _Arena(threading.local):
    """The calling thread's local-memory arena, grown on demand and reused."""

    def __init__(self) -> None:
        self.buffer = np.empty(0, np.uint8)
        self.address = 0

    def get(self, nbytes: int) -> int:
        if self.buffer.size < nbytes + ARENA_ALIGN:
            self.buffer = np.zeros(nbytes + ARENA_ALIGN, np.uint8)
            raw = self.buffer.ctypes.data
            self.address = raw + (-raw % ARENA_ALIGN)
        return self.address


class ThreadPool:
    """Worker threads that call native runners; the caller takes part in every launch.

    Every thread (the callers' too) has its own arena, so launches that run inline on
    their calling thread need no lock and several Python threads may launch at once.
    """

    def __init__(self, threads: int):
        self.threads = max(1, threads)
        self._tasks: list[queue.SimpleQueue] = []
        self._done: queue.SimpleQueue = queue.SimpleQueue()
        self._arena = _Arena()
        self._lock = threading.Lock()
        for i in range(self.threads - 1):
            tasks: queue.SimpleQueue = queue.SimpleQueue()
            self._tasks.append(tasks)
            threading.Thread(
                target=self._work, args=(tasks,), name=f"spirvjit-cpu-{i}", daemon=True
            ).start()

    def _work(self, tasks: queue.SimpleQueue) -> None:
        while True:
            runner, args, launch, arena_bytes = tasks.get()
            try:
                runner(args, launch, self._arena.get(arena_bytes))
            finally:
                self._done.put(None)

    def run(self, runner, args: int, launch: int, threads: int, arena_bytes: int) -> None:
        if threads <= 1:
            runner(args, launch, self._arena.get(arena_bytes))
            return
        # The workers are shared: one multi-threaded launch at a time.
        with self._lock:
            helpers = min(threads, self.threads) - 1
            for i in range(helpers):
                self._tasks[i].put((runner, args, launch, arena_bytes))
            try:
                runner(args, launch, self._arena.get(arena_bytes))
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


_INT_CTYPES = {8: ctypes.c_uint8, 16: ctypes.c_uint16, 32: ctypes.c_uint32, 64: ctypes.c_uint64}
_FLOAT_CTYPES = {32: ctypes.c_float, 64: ctypes.c_double}


class ArgumentPacker:
    """Checks one launch's arguments against the signature and packs them for the runner.

    A packing function per argument is prepared once per kernel, so a launch does
    only the checks and conversions its argument types need.
    """

    def __init__(self, signature: KernelSignature):
        self.signature = signature
        self._packers = [self._packer(spec) for spec in signature.args]
        self._slots_type = ctypes.c_void_p * max(1, len(signature.args))
        self._dynamic_local = any(spec.kind == "local" for spec in signature.args)

    def pack(self, args: Sequence, cpu_local: bool = True) -> tuple[ctypes.Array, list, int]:
        """Returns (argument pointer array, objects to keep alive, local bytes needed).

        ``cpu_local=False`` leaves ``__local`` arguments to the caller (a GPU lays them
        out in its own shared memory, with its own limit); local bytes are then 0.
        """
        sig = self.signature
        if len(args) != len(self._packers):
            expected = ", ".join(a.describe() for a in sig.args)
            raise LaunchError(
                f"takes {len(sig.args)} arguments ({expected}), got {len(args)}", sig.name
            )
        slots = self._slots_type()
        keep = []
        for i, (packer, value) in enumerate(zip(self._packers, args, strict=True)):
            storage = packer(value)
            keep.append(storage)
            slots[i] = ctypes.addressof(storage)
        keep.append(args)  # the arrays whose addresses were taken
        if not cpu_local:
            return slots, keep, 0
        local_bytes = (
            self._local_layout(args, keep) if self._dynamic_local else sig.static_local_bytes
        )
        return slots, keep, local_bytes

    def _local_layout(self, args: Sequence, storages: list) -> int:
        """Gives each __local argument its offset; returns the bytes the group needs."""
        offset = self.signature.static_local_bytes
        for spec, value, storage in zip(self.signature.args, args, storages, strict=False):
            if spec.kind == "local":
                offset = (offset + 127) // 128 * 128
                storage.value = offset
                offset += value.nbytes
        if offset > LOCAL_MEMORY_BYTES:
            raise LaunchError(
                f"needs {offset} bytes of local memory; "
                f"the host CPU device has {LOCAL_MEMORY_BYTES}",
                self.signature.name,
            )
        return offset

    def _packer(self, spec: KernelArg):
        if spec.kind == "local":
            return self._local_packer(spec)
        if spec.kind in ("global", "constant"):
            return self._buffer_packer(spec)
        if spec.kind == "struct":
            return lambda value: self._struct_bytes(spec, value)
        if spec.lanes == 1 and spec.element_kind == "bool":
            return lambda value: self._bool(spec, value)  # HIP/C++ bool parameters
        dtype = _scalar_dtype(spec)
        if spec.lanes == 1 and spec.element_kind == "float" and spec.element_bits in _FLOAT_CTYPES:
            ctype = _FLOAT_CTYPES[spec.element_bits]

            def pack_float(value):
                numeric = type(value) is float or isinstance(value, (int, np.floating, np.integer))
                if numeric and not isinstance(value, (bool, np.bool_)):
                    return ctype(value)
                raise self._error(spec, f"expects {spec.describe()}, got {type(value).__name__}")

            return pack_float
        if spec.lanes == 1 and spec.element_kind == "int":
            ctype, bits = _INT_CTYPES[spec.element_bits], spec.element_bits
            low, high = -(1 << (bits - 1)), 1 << bits

            def pack_int(value):
                if (type(value) is int or isinstance(value, np.integer)) and not isinstance(
                    value, (bool, np.bool_)
                ):
                    if low <= value < high:
                        return ctype(int(value) & (high - 1))
                    raise self._error(spec, f"{value} does not fit in {spec.describe()}")
                raise self._error(
                    spec, f"expects an integer for {spec.describe()}, got {type(value).__name__}"
                )

            return pack_int
        if dtype is None:
            return lambda value: self._unsupported(spec)
        return lambda value: self._value_bytes(spec, value)

    def _bool(self, spec: KernelArg, value) -> ctypes.c_uint8:
        """A bool parameter: one byte, 0 or 1 (Python/NumPy bools, or the integers 0, 1)."""
        if isinstance(value, (bool, np.bool_)) or (
            isinstance(value, (int, np.integer)) and value in (0, 1)
        ):
            return ctypes.c_uint8(1 if value else 0)
        raise self._error(spec, f"expects a bool, got {value!r}")

    def _local_packer(self, spec: KernelArg):
        def pack_local(value):
            if not isinstance(value, LocalMemory):
                raise self._error(
                    spec, f"expects spirvjit.LocalMemory(nbytes), got {type(value).__name__}"
                )
            return ctypes.c_int64(0)  # its offset, set once all local sizes are known

        return pack_local

    def _buffer_packer(self, spec: KernelArg):
        writable = spec.kind == "global"
        accepted = _accepted_dtypes(spec)
        align = spec.align

        def pack_buffer(value):
            if value is None:
                return ctypes.c_void_p(0)
            if not isinstance(value, np.ndarray):
                raise self._error(
                    spec, f"expects a NumPy array for {spec.describe()}, got {type(value).__name__}"
                )
            flags = value.flags
            if not flags.c_contiguous:
                raise self._error(
                    spec, "the array is not C-contiguous; pass np.ascontiguousarray(a)"
                )
            if writable and not flags.writeable:
                raise self._error(
                    spec, "the array is read-only but the kernel may write to a __global buffer"
                )
            if accepted is not None and value.dtype not in accepted and value.dtype.fields is None:
                raise self._error(
                    spec,
                    f"expects {spec.describe()} (elements of {spec.element_bits}-bit "
                    f"{spec.element_kind}), got an array of {value.dtype}; convert it with "
                    ".astype() or reinterpret it with .view()",
                )
            address = value.ctypes.data
            if address % align and value.size:
                raise self._error(
                    spec,
                    f"the array's data is not {align}-byte aligned as {spec.describe()} requires",
                )
            return ctypes.c_void_p(address)

        return pack_buffer

    def _unsupported(self, spec: KernelArg):
        raise self._error(spec, f"by-value argument of type {spec.describe()} is not supported")

    def _error(self, spec: KernelArg, message: str) -> LaunchError:
        where = spec.index if spec.name.startswith("#") else f"{spec.index} ({spec.name})"
        return LaunchError(message, self.signature.name, where)

    def _value_bytes(self, spec: KernelArg, value) -> ctypes.Array:
        dtype = _scalar_dtype(spec)
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
        return (ctypes.c_char * spec.size).from_buffer_copy(converted.tobytes()[: spec.size])

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
        return (ctypes.c_char * max(1, spec.size)).from_buffer_copy(data or b"\0")


def _accepted_dtypes(spec: KernelArg) -> frozenset | None:
    """The NumPy dtypes a buffer argument accepts (None: any)."""
    if spec.element_kind is None:
        return None
    bits = spec.element_bits
    if spec.element_kind == "float":
        names = {16: ["f2"], 32: ["f4"], 64: ["f8"]}.get(bits, [])
    elif spec.element_kind == "bool":
        names = ["?"] if bits == 8 else []
    else:
        names = [f"i{bits // 8}", f"u{bits // 8}"]
    dtypes = set()
    for name in names:
        dtypes |= {np.dtype("<" + name), np.dtype("=" + name)}
    return frozenset(dtypes)


def _scalar_dtype(spec: KernelArg) -> np.dtype | None:
    if spec.element_kind == "float":
        return np.dtype({16: np.float16, 32: np.float32, 64: np.float64}[spec.element_bits])
    if spec.element_kind == "int":
        return np.dtype(
            {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[spec.element_bits]
        )
    return None


LaunchRecord = ctypes.c_int64 * LAUNCH_WORDS


@dataclass(frozen=True, slots=True)
class LaunchPlan:
    """What a launch of one NDRange shape needs, checked once and reused."""

    record: bytes  # the launch record (frames offset still 0)
    threads: int
    group_items: int  # work-items per (full) group


def launch_record(
    global_size, local_size, global_offset, dims: int, threads: int, frames_offset: int = 0
) -> tuple[ctypes.Array, int]:
    """The launch record the runner reads (see abi.py); returns it and the group count."""
    record = LaunchRecord()
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
