"""ctypes bindings to the NVIDIA CUDA driver API (libcuda), enough to run compiled kernels.

The driver API rather than the runtime: it ships with the driver itself, so a
machine with an NVIDIA GPU has it without a CUDA toolkit, and it loads cubin or
PTX images directly. The library is opened on first use, never at import.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
from collections.abc import Sequence
from ctypes import POINTER, byref, c_char_p, c_float, c_int, c_size_t, c_uint, c_uint64, c_void_p

from ..gpu.driver import (
    DeviceContext,
    Driver,
    GpuDeviceInfo,
    GpuDriverError,
    KernelParams,
    LoadedModule,
    Prototype,
    check_whole_groups,
    decode,
    list_devices,
)

_VOIDPP = POINTER(c_void_p)
_PROTOTYPES: dict[str, Prototype] = {
    "cuInit": (c_int, [c_uint]),
    "cuDeviceGetCount": (c_int, [POINTER(c_int)]),
    "cuDeviceGet": (c_int, [POINTER(c_int), c_int]),
    "cuDeviceGetName": (c_int, [c_void_p, c_int, c_int]),
    "cuDeviceGetAttribute": (c_int, [POINTER(c_int), c_int, c_int]),
    "cuDevicePrimaryCtxRetain": (c_int, [_VOIDPP, c_int]),
    "cuCtxSetCurrent": (c_int, [c_void_p]),
    "cuModuleLoadDataEx": (c_int, [_VOIDPP, c_void_p, c_uint, POINTER(c_int), _VOIDPP]),
    "cuModuleGetFunction": (c_int, [_VOIDPP, c_void_p, c_char_p]),
    "cuModuleUnload": (c_int, [c_void_p]),
    "cuModuleGetGlobal_v2": (c_int, [POINTER(c_uint64), POINTER(c_size_t), c_void_p, c_char_p]),
    "cuMemcpyDtoD_v2": (c_int, [c_uint64, c_uint64, c_size_t]),
    "cuMemcpyDtoDAsync_v2": (c_int, [c_uint64, c_uint64, c_size_t, c_void_p]),
    "cuMemAlloc_v2": (c_int, [POINTER(c_uint64), c_size_t]),
    "cuMemFree_v2": (c_int, [c_uint64]),
    "cuMemcpyHtoD_v2": (c_int, [c_uint64, c_void_p, c_size_t]),
    "cuMemcpyDtoH_v2": (c_int, [c_void_p, c_uint64, c_size_t]),
    "cuLaunchKernel": (c_int, [c_void_p] + [c_uint] * 7 + [c_void_p, _VOIDPP, _VOIDPP]),
    "cuFuncSetAttribute": (c_int, [c_void_p, c_int, c_int]),
    "cuCtxSynchronize": (c_int, []),
    "cuMemcpyHtoDAsync_v2": (c_int, [c_uint64, c_void_p, c_size_t, c_void_p]),
    "cuMemcpyDtoHAsync_v2": (c_int, [c_void_p, c_uint64, c_size_t, c_void_p]),
    "cuStreamCreate": (c_int, [_VOIDPP, c_uint]),
    "cuStreamDestroy_v2": (c_int, [c_void_p]),
    "cuStreamSynchronize": (c_int, [c_void_p]),
    "cuEventCreate": (c_int, [_VOIDPP, c_uint]),
    "cuEventRecord": (c_int, [c_void_p, c_void_p]),
    "cuEventSynchronize": (c_int, [c_void_p]),
    "cuEventElapsedTime": (c_int, [POINTER(c_float), c_void_p, c_void_p]),
    "cuEventDestroy_v2": (c_int, [c_void_p]),
    "cuGetErrorName": (c_int, [c_int, POINTER(c_char_p)]),
    "cuGetErrorString": (c_int, [c_int, POINTER(c_char_p)]),
}
_OPTIONAL: frozenset[str] = frozenset()  # everything is in CUDA 9 and later

ATTR_MAX_THREADS_PER_BLOCK = 1
ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 8
ATTR_MULTIPROCESSOR_COUNT = 16
ATTR_COMPUTE_CAPABILITY_MAJOR = 75
ATTR_COMPUTE_CAPABILITY_MINOR = 76
ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
JIT_ERROR_LOG_BUFFER = 5
JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
# Dynamic shared memory above this needs an explicit opt-in per function.
_DEFAULT_SHARED_LIMIT = 48 * 1024
_LOG_BYTES = 16 * 1024
_FATBIN_MAGIC = b"\x50\xed\x55\xba"


def _candidates() -> list[str]:
    return ["nvcuda.dll"] if sys.platform == "win32" else ["libcuda.so.1", "libcuda.so"]


def _error_text(lib: ctypes.CDLL, code: int) -> tuple[str, str]:
    name, text = c_char_p(), c_char_p()
    lib.cuGetErrorName(code, byref(name))
    lib.cuGetErrorString(code, byref(text))
    return decode(name.value), decode(text.value)


_driver = Driver(
    "the CUDA driver (libcuda)", _candidates, _PROTOTYPES, _OPTIONAL, "cuInit", _error_text
)
_call = _driver.call


def load_library() -> ctypes.CDLL | None:
    """The library, opened on first use; None when it cannot be (see unavailable_reason)."""
    return _driver.load()[0]


def unavailable_reason() -> str:
    """Why this driver cannot be used here ("" when it can): no library, or init failed."""
    return _driver.unavailable_reason()


def _device(index: int) -> int:
    device = c_int()
    _call(f"opening CUDA device {index}", "cuDeviceGet", byref(device), index)
    return device.value


def _attribute(device: int, attribute: int) -> int:
    value = c_int()
    _call("querying a CUDA device", "cuDeviceGetAttribute", byref(value), attribute, device)
    return value.value


def device_arch(index: int) -> str:
    """The device's LLVM/PTX target, "sm_<major><minor>" from its compute capability."""
    _driver.ready()
    device = _device(index)
    major = _attribute(device, ATTR_COMPUTE_CAPABILITY_MAJOR)
    return f"sm_{major}{_attribute(device, ATTR_COMPUTE_CAPABILITY_MINOR)}"


def _device_info(index: int) -> GpuDeviceInfo:
    device = _device(index)
    name = ctypes.create_string_buffer(256)
    _call(f"querying CUDA device {index}", "cuDeviceGetName", name, len(name), device)
    shared = _attribute(device, ATTR_MAX_SHARED_MEMORY_PER_BLOCK)
    with contextlib.suppress(GpuDriverError):  # what a launch may use after opting in
        shared = max(shared, _attribute(device, ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN))
    return GpuDeviceInfo(
        vendor="nvidia",
        index=index,
        name=decode(name.value),
        arch=device_arch(index),
        compute_units=_attribute(device, ATTR_MULTIPROCESSOR_COUNT),
        max_work_group_size=_attribute(device, ATTR_MAX_THREADS_PER_BLOCK),
        local_memory_bytes=shared,
    )


def devices() -> list[GpuDeviceInfo]:
    """The CUDA devices present; [] when there is no driver or it fails. Never raises."""
    return list_devices(_driver, "CUDA device", "cuDeviceGetCount", _device_info)


class CudaModule(LoadedModule):
    """A loaded cubin/PTX image; kernels are looked up in it by name."""

    get_function_call = "cuModuleGetFunction"
    get_global_call = "cuModuleGetGlobal_v2"
    address_type = c_uint64
    unload_call = "cuModuleUnload"


class CudaContext(DeviceContext):
    """The primary context of CUDA device ``index``: memory, modules and launches there.

    The primary context is the one the CUDA runtime and other libraries share, so
    buffers can be exchanged with them. Every method makes it current on the calling
    thread first (cheap), so a context may be used from any thread.
    """

    driver = _driver
    device_word = "CUDA device"
    pointer_type = c_uint64
    calls = {
        "alloc": "cuMemAlloc_v2",
        "free": "cuMemFree_v2",
        "to_device": "cuMemcpyHtoD_v2",
        "to_host": "cuMemcpyDtoH_v2",
        "synchronize": "cuCtxSynchronize",
        "to_device_async": "cuMemcpyHtoDAsync_v2",
        "to_host_async": "cuMemcpyDtoHAsync_v2",
        "device_to_device": "cuMemcpyDtoD_v2",
        "device_to_device_async": "cuMemcpyDtoDAsync_v2",
        "stream_create": "cuStreamCreate",
        "stream_destroy": "cuStreamDestroy_v2",
        "stream_synchronize": "cuStreamSynchronize",
        "event_create": "cuEventCreate",
        "event_record": "cuEventRecord",
        "event_synchronize": "cuEventSynchronize",
        "event_elapsed": "cuEventElapsedTime",
        "event_destroy": "cuEventDestroy_v2",
    }
    create_flags = (0,)  # CU_STREAM_DEFAULT, CU_EVENT_DEFAULT (blocking, timed)

    def __init__(self, index: int):
        _driver.ready()
        self.index = index
        context = c_void_p()
        what = f"opening CUDA device {index}"
        _call(what, "cuDevicePrimaryCtxRetain", byref(context), _device(index))
        self._context = context.value
        self._names: dict[int, str] = {}  # function handle -> kernel name, for errors

    def _use(self) -> None:
        _call(f"using CUDA device {self.index}", "cuCtxSetCurrent", self._context)

    def load_module(self, image: bytes, what: str) -> CudaModule:
        """Loads a cubin, fatbin or PTX image; ``what`` names it in errors.

        A rejected PTX image raises GpuDriverError with the JIT's error log.
        """
        self._use()
        image = bytes(image)
        if not image.startswith((b"\x7fELF", _FATBIN_MAGIC)) and not image.endswith(b"\0"):
            image += b"\0"  # PTX is read as a C string
        log = ctypes.create_string_buffer(_LOG_BYTES)
        options = (c_int * 2)(JIT_ERROR_LOG_BUFFER, JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
        values = (c_void_p * 2)(ctypes.addressof(log), _LOG_BYTES)
        module = c_void_p()
        args = (byref(module), image, 2, options, values)
        _call(f"loading {what}", "cuModuleLoadDataEx", *args, log=log)
        return CudaModule(self, module.value, what)

    def launch(
        self,
        function: int,
        global_size: tuple[int, int, int],
        local_size: tuple[int, int, int],
        shared_bytes: int,
        params: Sequence[bytes],
        stream: int | None = None,
    ) -> None:
        """Launches ``function`` over ``global_size`` work-items in groups of ``local_size``.

        CUDA runs whole blocks only: a global size that is not a multiple of the local
        size raises GpuDriverError before any driver call. ``params`` holds each kernel
        parameter's bytes. An empty launch (a zero global size) does nothing. ``stream``:
        a handle from create_stream (None: the default stream); the call returns once the
        launch is queued.
        """
        kernel = self._names.get(function)
        grid = check_whole_groups(global_size, local_size, kernel, shared_bytes)
        if 0 in grid:
            return
        self._use()
        what = f"launch on CUDA device {self.index}"
        if shared_bytes > _DEFAULT_SHARED_LIMIT:
            attribute = FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            _call(what, "cuFuncSetAttribute", function, attribute, shared_bytes, kernel=kernel)
        args = KernelParams(params)
        launch = (function, *grid, *local_size, shared_bytes, stream, args.array, None)
        _call(what, "cuLaunchKernel", *launch, kernel=kernel)
