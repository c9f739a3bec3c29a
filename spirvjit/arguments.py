"""Kernel arguments: checking what a launch passes against the kernel's signature and
packing it as the kernel's native code takes it. Shared by every backend.

Arguments arrive at native code as an array of pointers to each argument's bytes (as
with ``cuLaunchKernel``): a buffer's address, a scalar, a struct's bytes; a ``__local``
pointer argument is a byte offset into the group's local memory.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

import numpy as np

from .errors import LaunchError
from .translate.signature import KernelArg, KernelSignature


class LocalMemory:
    """A ``__local`` pointer argument: ``nbytes`` of work-group memory per group."""

    def __init__(self, nbytes: int):
        if not isinstance(nbytes, (int, np.integer)) or nbytes <= 0:
            raise ValueError(f"LocalMemory needs a positive byte count, got {nbytes!r}")
        self.nbytes = int(nbytes)

    def __repr__(self) -> str:
        return f"LocalMemory({self.nbytes})"


_INT_CTYPES = {8: ctypes.c_uint8, 16: ctypes.c_uint16, 32: ctypes.c_uint32, 64: ctypes.c_uint64}
_FLOAT_CTYPES = {32: ctypes.c_float, 64: ctypes.c_double}
# A by-value struct's bytes are placed at least this aligned: the largest alignment of an
# OpenCL C type (long16, double16), whatever alignment the signature's LLVM type reports
# (an __attribute__((aligned)) is not in it).
STRUCT_ALIGN = 128


_MISSING = object()


def _data_pointer_offset() -> int | None:
    """Where a NumPy array object keeps its data pointer (CPython object header, then
    ``char *data``: NumPy's ``PyArrayObject_fields``), or None where that is not so.

    ``array.ctypes.data`` builds a ctypes helper object per call (~2 µs, a tenth of a
    tiny kernel's launch); reading the field is ~0.3 µs. The layout is checked here, on
    arrays whose data pointers differ, before it is trusted."""
    if not hasattr(ctypes.pythonapi, "Py_IncRef"):  # not CPython: no object addresses
        return None
    offset = 2 * ctypes.sizeof(ctypes.c_void_p)  # ob_refcnt, ob_type
    probes = [np.zeros(3, np.float32), np.arange(8)[3:], np.empty((2, 2), np.uint8).T]
    for probe in probes:
        if ctypes.c_void_p.from_address(id(probe) + offset).value != probe.ctypes.data:
            return None
    return offset


_DATA_OFFSET = _data_pointer_offset()


def array_address(array: np.ndarray) -> int:
    """The address of ``array``'s first element (``array.ctypes.data``, faster)."""
    if _DATA_OFFSET is None or type(array) is not np.ndarray:
        return array.ctypes.data
    return ctypes.c_void_p.from_address(id(array) + _DATA_OFFSET).value or 0


# DLPack device types (dlpack.h DLDeviceType) an array may report.
_DLPACK_DEVICES = {
    1: "CPU",
    2: "CUDA",
    3: "CUDA host",
    4: "OpenCL",
    7: "Vulkan",
    8: "Metal",
    10: "ROCm",
    11: "ROCm host",
    13: "CUDA managed",
    14: "oneAPI",
}
_HOST_DLPACK_DEVICES = (1, 3, 11)  # memory the host CPU can address


def host_array(value) -> np.ndarray:
    """A NumPy view of an array in host memory, without copying: a NumPy array, an
    object with ``__dlpack__`` (torch CPU tensors, CuPy/JAX arrays on the CPU, ...),
    ``__array_interface__`` or the buffer protocol (memoryview, bytearray, array.array).

    Raises TypeError saying why when ``value`` is no such array (a GPU array, a torch
    tensor that requires grad, a list, ...).
    """
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dlpack_device__"):
        kind, index = value.__dlpack_device__()
        if int(kind) not in _HOST_DLPACK_DEVICES:
            where = _DLPACK_DEVICES.get(int(kind), f"DLPack device type {int(kind)}")
            raise TypeError(
                f"the {type(value).__name__} lives on {where} device {index}, not in host "
                "memory: copy it to the host, or launch on that device"
            )
        try:
            return np.from_dlpack(value)
        except (BufferError, TypeError, RuntimeError, ValueError) as exc:
            raise TypeError(f"the {type(value).__name__}'s DLPack export failed: {exc}") from None
    if hasattr(value, "__cuda_array_interface__"):
        raise TypeError(
            f"the {type(value).__name__} is GPU memory (__cuda_array_interface__), not host memory"
        )
    if hasattr(value, "__array_interface__") or hasattr(value, "__array_struct__"):
        return np.asarray(value)
    try:
        view = memoryview(value)
    except TypeError:
        raise TypeError(
            f"a {type(value).__name__} is not an array (NumPy, DLPack, __array_interface__ or "
            "the buffer protocol)"
        ) from None
    return np.asarray(view)


class DeviceBuffer:
    """GPU memory described by ``__cuda_array_interface__`` (version 2 or 3): a torch CUDA
    or ROCm tensor, a CuPy or Numba array, a ``spirvjit.Array`` on a GPU."""

    __slots__ = ("address", "nbytes", "dtype", "readonly", "contiguous")

    def __init__(self, interface: dict):
        self.address, self.readonly = int(interface["data"][0]), bool(interface["data"][1])
        self.dtype = np.dtype(interface["typestr"])
        shape = tuple(int(n) for n in interface["shape"])
        self.nbytes = int(np.prod(shape, dtype=np.int64)) * self.dtype.itemsize
        strides = interface.get("strides")
        expected = []
        step = self.dtype.itemsize
        for n in reversed(shape):
            expected.append(step)
            step *= n
        # Strides of size-1 dimensions do not matter (torch reports any for them).
        self.contiguous = strides is None or all(
            n == 1 or s == e for n, s, e in zip(shape, strides, reversed(expected), strict=True)
        )


def device_buffer(value) -> DeviceBuffer | None:
    """The GPU memory ``value`` describes with ``__cuda_array_interface__``, else None."""
    interface = getattr(value, "__cuda_array_interface__", None)
    return None if interface is None else DeviceBuffer(interface)


class ArgumentPacker:
    """Checks one launch's arguments against the signature and packs them for the runner.

    A packing function per argument is prepared once per kernel, so a launch does
    only the checks and conversions its argument types need.
    """

    def __init__(self, signature: KernelSignature, device_memory: bool = False):
        self.signature = signature
        # A GPU's packer takes GPU memory (__cuda_array_interface__) as it is, by address;
        # the host CPU's refuses it (host_array says why).
        self._device_memory = device_memory
        self._packers = [self._packer(spec) for spec in signature.args]
        self._slots_type = ctypes.c_void_p * max(1, len(signature.args))
        self._dynamic_local = any(spec.kind == "local" for spec in signature.args)

    def pack(
        self, args: Sequence, local_limit: tuple[int, str] | None = None
    ) -> tuple[ctypes.Array, list, int]:
        """Returns (argument pointer array, objects to keep alive, local bytes needed).

        ``local_limit`` = (bytes, device name) lays out ``__local`` arguments after the
        kernel's static ``__local`` variables in one block of at most that many bytes (the
        host CPU's arena). None leaves them to the caller (a GPU lays them out in its own
        shared memory, with its own limit); local bytes are then 0.
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
        if local_limit is None:
            return slots, keep, 0
        local_bytes = (
            self._local_layout(args, keep, *local_limit)
            if self._dynamic_local
            else sig.static_local_bytes
        )
        return slots, keep, local_bytes

    def bind(self, args: Sequence, kwargs: dict) -> Sequence:
        """The arguments in signature order, keyword arguments placed by parameter name
        (names come from the module's OpName / kernel_arg_name information)."""
        if not kwargs:
            return args
        sig = self.signature
        names = [spec.name for spec in sig.args]
        bound: list = list(args) + [_MISSING] * (len(names) - len(args))
        if len(args) > len(names):
            return args  # pack() reports the count
        for name, value in kwargs.items():
            if name not in names or name.startswith("#"):
                known = ", ".join(n for n in names if not n.startswith("#")) or "none are named"
                raise LaunchError(f"no parameter named {name!r} (parameters: {known})", sig.name)
            index = names.index(name)
            if bound[index] is not _MISSING:
                raise LaunchError(f"argument {name!r} given twice", sig.name)
            bound[index] = value
        missing = [names[i] for i, v in enumerate(bound) if v is _MISSING]
        if missing:
            raise LaunchError(f"missing arguments: {', '.join(missing)}", sig.name)
        return bound

    def _local_layout(self, args: Sequence, storages: list, limit: int, device: str) -> int:
        """Gives each __local argument its offset; returns the bytes the group needs."""
        offset = self.signature.static_local_bytes
        for spec, value, storage in zip(self.signature.args, args, storages, strict=False):
            if spec.kind == "local":
                offset = (offset + 127) // 128 * 128
                storage.value = offset
                offset += value.nbytes
        if offset > limit:
            raise LaunchError(
                f"needs {offset} bytes of local memory; the {device} has {limit}",
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
        if spec.element_kind == "int" and spec.element_bits not in _INT_CTYPES:
            bits = spec.element_bits

            def refuse(value):  # HIP's __int128 (spirv/validate.py takes it inside kernels)
                raise self._error(
                    spec, f"is a {bits}-bit integer (__int128): pass it as two 64-bit halves"
                )

            return refuse
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
        writable = spec.kind == "global" and not spec.read_only
        accepted = _accepted_dtypes(spec)
        align = spec.align

        def pack_buffer(value):
            if value is None:
                # NULL, as OpenCL allows (kernels test optional buffers: `if (bias)`).
                # A kernel that dereferences it faults: the crash report names it and
                # suggests check=True, where the dereference is a LaunchError.
                return ctypes.c_void_p(0)
            if self._device_memory and not isinstance(value, np.ndarray):
                found = device_buffer(value)
                if found is not None:
                    return pack_device(found)
            if not isinstance(value, np.ndarray):
                try:
                    value = host_array(value)
                except TypeError as exc:
                    raise self._error(
                        spec, f"expects an array for {spec.describe()}: {exc}"
                    ) from None
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
            address = array_address(value)
            if address % align and value.size:
                raise self._error(
                    spec,
                    f"the array's data is not {align}-byte aligned as {spec.describe()} requires",
                )
            return ctypes.c_void_p(address)

        def pack_device(found: DeviceBuffer):
            if not found.contiguous:
                raise self._error(spec, "the GPU array is not C-contiguous")
            if writable and found.readonly:
                raise self._error(
                    spec, "the GPU array is read-only but the kernel may write to a __global buffer"
                )
            if accepted is not None and found.dtype not in accepted:
                raise self._error(
                    spec, f"expects {spec.describe()}, got a GPU array of {found.dtype}"
                )
            if found.address % align and found.nbytes:
                raise self._error(
                    spec, f"the GPU array is not {align}-byte aligned as {spec.describe()} requires"
                )
            return ctypes.c_void_p(found.address)

        return pack_buffer

    def _unsupported(self, spec: KernelArg):
        raise self._error(spec, f"by-value argument of type {spec.describe()} is not supported")

    def _error(self, spec: KernelArg, message: str) -> LaunchError:
        if spec.name.startswith("#"):
            return LaunchError(message, self.signature.name, spec.index)
        # The message says "argument 2 (name)"; ``argument`` is the name, as callers use it.
        error = LaunchError(message, self.signature.name, f"{spec.index} ({spec.name})")
        error.argument = spec.name
        return error

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
        # The kernel reads the struct where its slot points, with the alignment the producer
        # declared (clang: Aligned 64 on a long8 member, which LLVM turns into aligned
        # vector loads): a malloc'ed ctypes array is only 16-byte aligned, so a struct with
        # a 32- or 64-byte aligned member crashed (findings: fuzz seed 25618 kernel 2).
        align = max(spec.align, STRUCT_ALIGN)
        size = max(1, spec.size)
        raw = (ctypes.c_char * (size + align - 1))()
        storage = (ctypes.c_char * size).from_buffer(raw, -ctypes.addressof(raw) % align)
        ctypes.memmove(storage, data, len(data))  # ``storage`` keeps ``raw`` alive
        return storage


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
