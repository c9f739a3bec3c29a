"""Pieces shared by the CUDA and HIP bindings: the error, device facts, kernel parameters,
and the device-listing, memory and module calls both drivers make the same way."""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ...errors import LaunchError

# What to do about the errors a user can act on, keyed by the error name with the
# API prefix and underscores removed and lower-cased, so CUDA_ERROR_OUT_OF_MEMORY and
# hipErrorOutOfMemory share an entry.
_REBUILD = "the code was built for another GPU architecture or is corrupt: rebuild it for this one"
_FAULT = "the kernel faulted on the device; the context is unusable now: restart the process"
_HINTS = {
    "outofmemory": "free device buffers or work on smaller data",
    "nodevice": "no usable GPU: check nvidia-smi / rocminfo and *_VISIBLE_DEVICES",
    "invaliddevice": "the device index is out of range: list the devices first",
    "insufficientdriver": "the driver is older than this code needs: update it",
    "invalidptx": "the PTX is invalid or too new for this driver: see the JIT log",
    "unsupportedptxversion": "the PTX is newer than this driver supports: update the driver",
    "nobinaryforgpu": _REBUILD,
    "invalidimage": _REBUILD,
    "invalidkernelfile": _REBUILD,
    "notfound": "the kernel name is not in the module: check the entry-point name",
    "launchoutofresources": "the group needs more registers or threads: use smaller groups",
    "invalidvalue": "an argument was out of range: check the launch sizes and buffers",
    "illegaladdress": _FAULT,
    "launchfailed": _FAULT,
    "launchfailure": _FAULT,
    "launchtimeout": "the kernel ran past the watchdog limit: split the work into shorter launches",
}
_DEFAULT_HINT = "check the driver installation and the arguments of the call"


def _hint_for(error_name: str) -> str:
    key = error_name.lower().replace("_", "")
    for prefix in ("cudaerror", "hiperror"):
        if key.startswith(prefix):
            key = key[len(prefix) :]
    return _HINTS.get(key, _DEFAULT_HINT)


class GpuDriverError(LaunchError):
    """A GPU driver call failed, or a launch was refused before reaching the driver.

    For a failed call, ``message`` says what was being done; the call (``call``),
    its return code (``code``), the driver's own name and description of it
    (``error_name``, ``error_string``) and what to do (``hint``) are appended, and
    kept as attributes so callers can act on them without parsing the message.
    ``log`` holds the JIT compiler's log where there is one.
    """

    def __init__(
        self,
        message: str,
        kernel: str | None = None,
        *,
        call: str | None = None,
        code: int | None = None,
        error_name: str = "",
        error_string: str = "",
        log: str = "",
    ):
        self.call, self.code, self.log = call, code, log
        self.error_name, self.error_string = error_name, error_string
        self.hint = _hint_for(error_name) if call else ""
        if call:
            name = error_name or f"error {code}"
            text = f" ({error_string})" if error_string and error_string != error_name else ""
            message = f"{message}: {call} failed with {name} [{code}]{text}; {self.hint}"
        if log:
            message += f"\n{log.rstrip()}"
        super().__init__(message, kernel=kernel)


@dataclass(frozen=True, slots=True)
class GpuDeviceInfo:
    """What the JIT needs to know about one GPU to compile and size launches for it."""

    vendor: Literal["nvidia", "amd"]
    index: int  # the driver's device ordinal
    name: str
    arch: str  # "sm_90", "gfx942:sramecc+:xnack-"; "" when the driver did not say
    compute_units: int  # SMs / CUs
    max_work_group_size: int
    local_memory_bytes: int  # per work-group (shared memory / LDS)


class KernelParams:
    """The ``void **kernelParams`` array of a launch, owning the values it points at.

    Each element of ``params`` is one kernel parameter's bytes, already packed by the
    caller. The driver reads the values through the pointers during the launch call,
    so the buffers must outlive it: keep this object alive until the call returns.
    Values are stored 8-byte aligned (drivers copy them, but alignment costs nothing).
    """

    def __init__(self, params: Sequence[bytes]):
        self._buffers = []
        for value in params:
            buffer = (ctypes.c_uint64 * max(1, (len(value) + 7) // 8))()
            ctypes.memmove(buffer, bytes(value), len(value))
            self._buffers.append(buffer)
        pointers = [ctypes.addressof(buffer) for buffer in self._buffers]
        # NULL for a kernel without parameters, as both drivers accept.
        self.array = (ctypes.c_void_p * len(pointers))(*pointers) if pointers else None

    def __len__(self) -> int:
        return len(self._buffers)


_UINT32_LIMIT = 1 << 32


def check_sizes(
    global_size: Sequence[int],
    local_size: Sequence[int],
    kernel: str | None = None,
    shared_bytes: int = 0,
) -> None:
    """Refuses sizes the drivers cannot take, before any driver call.

    The launch functions take 32-bit unsigned sizes; ctypes would silently wrap a
    larger value, launching a different grid than asked for.
    """
    if len(global_size) != 3 or len(local_size) != 3:
        raise GpuDriverError("global and local sizes must have 3 dimensions", kernel)
    if not all(1 <= n < _UINT32_LIMIT for n in local_size) or not all(
        0 <= n < _UINT32_LIMIT for n in global_size
    ):
        raise GpuDriverError(
            f"invalid sizes: global {tuple(global_size)}, local {tuple(local_size)} "
            "(each must be below 2**32; local sizes at least 1)",
            kernel,
        )
    if not 0 <= shared_bytes < _UINT32_LIMIT:
        raise GpuDriverError(f"invalid local memory size {shared_bytes} bytes", kernel)


def check_whole_groups(
    global_size: Sequence[int],
    local_size: Sequence[int],
    kernel: str | None = None,
    shared_bytes: int = 0,
) -> tuple[int, int, int]:
    """The grid (groups per dimension) of a launch that needs whole work-groups.

    CUDA's and HIP's plain launch take a count of groups, so a global size that is
    not a multiple of the group size cannot be expressed: refuse it before any
    driver call rather than silently running fewer or more work-items.
    """
    check_sizes(global_size, local_size, kernel, shared_bytes)
    if any(g % n for g, n in zip(global_size, local_size, strict=True)):
        raise GpuDriverError(
            f"global size {tuple(global_size)} is not a multiple of the work-group size "
            f"{tuple(local_size)}; this driver launches whole work-groups only: pad the "
            "global size or pick a work-group size that divides it",
            kernel,
        )
    gx, gy, gz = (g // n for g, n in zip(global_size, local_size, strict=True))
    return gx, gy, gz


# A driver function's ctypes prototype: (restype, argtypes).
Prototype = tuple[type, list[type]]


@dataclass(eq=False)
class Driver:
    """A driver library, opened and initialized on first use; checks every return code.

    ``candidates`` lists the library names to try, in order. ``init`` is the
    initialization call (taking flags 0); ``error_text(lib, code)`` returns the
    driver's name and description of an error code. The opened library and the
    result of initialization are cached: a driver that failed to initialize keeps
    failing for the life of the process anyway.
    """

    api: str
    candidates: Callable[[], list[str]]
    prototypes: dict[str, Prototype]
    optional: frozenset[str]  # functions older drivers lack; the caller checks with hasattr
    init: str
    error_text: Callable[[ctypes.CDLL, int], tuple[str, str]]
    state: tuple[ctypes.CDLL | None, str] | None = None  # (library, why not)
    init_error: str | None = None

    def reset(self) -> None:
        """Forgets the library and the initialization result (for tests)."""
        self.state = self.init_error = None

    def load(self) -> tuple[ctypes.CDLL | None, str]:
        """The library and "", or None and why it cannot be opened. Never raises.

        Declaring restype and argtypes explicitly keeps 64-bit pointers and sizes
        from being truncated to C ints. A library lacking a required function is
        refused here, by name, rather than failing in the middle of a launch.
        """
        if self.state is not None:
            return self.state
        failures = []
        for name in self.candidates():
            try:
                lib = ctypes.CDLL(name)
            except OSError as exc:
                failures.append(str(exc))
                continue
            missing = [f for f in self.prototypes if f not in self.optional and not hasattr(lib, f)]
            if missing:
                failures.append(f"{name} lacks {', '.join(missing)}: update the driver")
                continue
            for function, (restype, argtypes) in self.prototypes.items():
                if hasattr(lib, function):
                    getattr(lib, function).restype = restype
                    getattr(lib, function).argtypes = argtypes
            self.state = lib, ""
            return self.state
        self.state = None, f"{self.api} is not available: " + "; ".join(failures)
        return self.state

    def unavailable_reason(self) -> str:
        """Why the driver cannot be used ("" when it can): no library, or init failed."""
        lib, reason = self.load()
        if lib is not None and self.init_error is None:
            try:
                self.call(f"initializing {self.api}", self.init, 0)
                self.init_error = ""
            except GpuDriverError as exc:
                self.init_error = exc.message
        return reason or self.init_error or ""

    def ready(self) -> ctypes.CDLL:
        """The initialized library; raises GpuDriverError saying why when there is none."""
        reason = self.unavailable_reason()
        if reason:
            raise GpuDriverError(reason)
        return self.load()[0]

    def call(
        self,
        what: str,
        name: str,
        *args,
        kernel: str | None = None,
        log: ctypes.Array | None = None,
    ) -> None:
        """Calls ``name``; a failure becomes a GpuDriverError saying ``what`` was being done.

        ``log`` is a JIT log buffer the call may have filled; it goes into the error.
        """
        lib, reason = self.load()
        if lib is None:
            raise GpuDriverError(reason)
        code = getattr(lib, name)(*args)
        if code != 0:
            error_name, error_string = self.error_text(lib, code)
            raise GpuDriverError(
                what,
                kernel,
                call=name,
                code=code,
                error_name=error_name,
                error_string=error_string,
                log=decode(log.value) if log is not None else "",
            )


def decode(text: bytes | None) -> str:
    """A C string from a driver, as text (drivers may return NULL)."""
    return text.decode("utf-8", "replace") if text else ""


def list_devices(
    driver: Driver, device_word: str, count_call: str, device_info: Callable[[int], GpuDeviceInfo]
) -> list[GpuDeviceInfo]:
    """Every device the driver reports; [] when there is no driver or it fails. Never raises."""
    try:
        driver.ready()
        count = ctypes.c_int()
        driver.call(f"counting {device_word}s", count_call, ctypes.byref(count))
        return [device_info(index) for index in range(count.value)]
    except GpuDriverError:
        return []


class DeviceContext:
    """Memory on one GPU, through the calls a subclass names for its driver.

    ``_use`` makes the device current on the calling thread (cheap); every method calls
    it first, so a context may be used from any thread.
    """

    driver: Driver
    device_word: str  # "CUDA device", "HIP device": how errors name the device
    pointer_type: type = ctypes.c_void_p  # what the allocation call writes
    # alloc, free, to_device(_async), to_host(_async), device_to_device(_async),
    # synchronize, stream_create,
    # stream_destroy, stream_synchronize, event_create, event_record, event_synchronize,
    # event_elapsed, event_destroy -> the driver's call
    calls: dict[str, str]
    index: int

    def _use(self) -> None:
        raise NotImplementedError

    def _call(self, what: str, name: str, *args, **kwargs) -> None:
        self.driver.call(what, name, *args, **kwargs)

    def alloc(self, nbytes: int) -> int:
        """A device buffer of ``nbytes`` (at least 1, so every buffer has an address)."""
        self._use()
        pointer = self.pointer_type()
        what = f"allocating {nbytes} bytes on {self.device_word} {self.index}"
        self._call(what, self.calls["alloc"], ctypes.byref(pointer), max(1, nbytes))
        return pointer.value or 0

    def free(self, pointer: int) -> None:
        self._use()
        what = f"freeing device memory on {self.device_word} {self.index}"
        self._call(what, self.calls["free"], pointer)

    def copy_to_device(
        self, dst: int, src_host_address: int, nbytes: int, stream: int | None = None
    ) -> None:
        """Copies host memory to the device; on ``stream`` (a handle from create_stream)
        the copy is queued after the stream's work and the host memory must stay alive
        and unchanged until the stream is synchronised."""
        self._use()
        what = f"copying {nbytes} bytes to {self.device_word} {self.index}"
        if stream is None:
            self._call(what, self.calls["to_device"], dst, src_host_address, nbytes)
        else:
            self._call(what, self.calls["to_device_async"], dst, src_host_address, nbytes, stream)

    def copy_to_host(
        self, dst_host_address: int, src: int, nbytes: int, stream: int | None = None
    ) -> None:
        """Copies device memory to the host; on ``stream`` the copy is queued and the
        host memory holds the data once the stream is synchronised."""
        self._use()
        what = f"copying {nbytes} bytes from {self.device_word} {self.index}"
        if stream is None:
            self._call(what, self.calls["to_host"], dst_host_address, src, nbytes)
        else:
            self._call(what, self.calls["to_host_async"], dst_host_address, src, nbytes, stream)

    def copy_device_to_device(
        self, dst: int, src: int, nbytes: int, stream: int | None = None
    ) -> None:
        """Copies device memory to device memory (ordered after the stream's work, or the
        default stream's)."""
        self._use()
        what = f"copying {nbytes} bytes within {self.device_word} {self.index}"
        if stream is None:
            self._call(what, self.calls["device_to_device"], dst, src, nbytes)
        else:
            self._call(what, self.calls["device_to_device_async"], dst, src, nbytes, stream)

    def synchronize(self) -> None:
        """Waits for all launches; a kernel fault is reported here."""
        self._use()
        self._call(f"waiting for {self.device_word} {self.index}", self.calls["synchronize"])

    # ----- streams and events ----------------------------------------------------------
    # Streams are created blocking (the drivers' default flags): they wait for the legacy
    # default stream the synchronous launches and copies use, so mixing both is ordered.
    # Events are created with timing enabled (the default flags).

    create_flags: tuple[int, ...] = ()  # what the create calls take after the out-pointer

    def _create(self, what: str, call: str) -> int:
        self._use()
        handle = ctypes.c_void_p()
        self._call(
            f"{what} on {self.device_word} {self.index}",
            call,
            ctypes.byref(handle),
            *self.create_flags,
        )
        return handle.value or 0

    def create_stream(self) -> int:
        """A new stream (queue); work on it runs in order, asynchronously to the host."""
        return self._create("creating a stream", self.calls["stream_create"])

    def destroy_stream(self, stream: int) -> None:
        self._use()
        what = f"destroying a stream on {self.device_word} {self.index}"
        self._call(what, self.calls["stream_destroy"], stream)

    def synchronize_stream(self, stream: int) -> None:
        """Waits for the stream's work; a kernel fault on it is reported here."""
        self._use()
        what = f"waiting for a stream on {self.device_word} {self.index}"
        self._call(what, self.calls["stream_synchronize"], stream)

    def create_event(self) -> int:
        """A new event, for ordering and timing work on streams."""
        return self._create("creating an event", self.calls["event_create"])

    def record_event(self, event: int, stream: int | None) -> None:
        """Marks the point ``stream`` (None: the default stream) has reached."""
        self._use()
        what = f"recording an event on {self.device_word} {self.index}"
        self._call(what, self.calls["event_record"], event, stream)

    def synchronize_event(self, event: int) -> None:
        """Waits until the work before the event's last record is done."""
        self._use()
        what = f"waiting for an event on {self.device_word} {self.index}"
        self._call(what, self.calls["event_synchronize"], event)

    def elapsed_ms(self, start: int, end: int) -> float:
        """Milliseconds between two recorded events (both must have completed)."""
        self._use()
        milliseconds = ctypes.c_float()
        what = f"timing events on {self.device_word} {self.index}"
        self._call(what, self.calls["event_elapsed"], ctypes.byref(milliseconds), start, end)
        return milliseconds.value

    def destroy_event(self, event: int) -> None:
        self._use()
        what = f"destroying an event on {self.device_word} {self.index}"
        self._call(what, self.calls["event_destroy"], event)


class LoadedModule:
    """A code image loaded into a DeviceContext; kernels are looked up in it by name."""

    get_function_call: str
    get_global_call: str
    unload_call: str
    address_type: type = ctypes.c_void_p  # what the global lookup writes

    def __init__(self, context: DeviceContext, handle: int, what: str):
        self.context = context
        self.handle = handle
        self.what = what

    def function(self, name: str) -> int:
        """The handle of kernel ``name``, for the context's launch."""
        self.context._use()
        function = ctypes.c_void_p()
        what = f"looking up kernel '{name}' in {self.what}"
        call = self.get_function_call
        self.context._call(what, call, ctypes.byref(function), self.handle, name.encode())
        self.context._names[function.value] = name
        return function.value

    def global_variable(self, symbol: str) -> tuple[int, int]:
        """The device address and size in bytes of the variable the module exports as
        ``symbol`` (hipModuleGetGlobal / cuModuleGetGlobal); GpuDriverError (error name
        ...NotFound) when it exports none."""
        self.context._use()
        address, size = self.address_type(), ctypes.c_size_t()
        what = f"looking up variable '{symbol}' in {self.what}"
        call = self.get_global_call
        self.context._call(
            what, call, ctypes.byref(address), ctypes.byref(size), self.handle, symbol.encode()
        )
        return address.value or 0, size.value

    def unload(self) -> None:
        """Frees the module's device code; its functions must not be launched after."""
        self.context._use()
        self.context._call(f"unloading {self.what}", self.unload_call, self.handle)
