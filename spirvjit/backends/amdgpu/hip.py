"""ctypes bindings to the AMD HIP runtime (libamdhip64), enough to run compiled kernels.

HIP's module API loads AMD GPU code objects (ELF) directly. The library is opened
on first use, never at import. Device attribute numbers are those of ROCm 5 and
later (the enum was renumbered in ROCm 5.0).
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
from collections.abc import Sequence
from ctypes import POINTER, byref, c_char_p, c_float, c_int, c_size_t, c_uint, c_void_p

from ..gpu.driver import (
    DeviceContext,
    Driver,
    GpuDeviceInfo,
    KernelParams,
    LoadedModule,
    Prototype,
    check_sizes,
    check_whole_groups,
    decode,
    list_devices,
)

_VOIDPP = POINTER(c_void_p)
_PROTOTYPES: dict[str, Prototype] = {
    "hipInit": (c_int, [c_uint]),
    "hipGetDeviceCount": (c_int, [POINTER(c_int)]),
    "hipSetDevice": (c_int, [c_int]),
    "hipDeviceGetName": (c_int, [c_void_p, c_int, c_int]),
    "hipDeviceGetAttribute": (c_int, [POINTER(c_int), c_int, c_int]),
    "hipGetDevicePropertiesR0600": (c_int, [c_void_p, c_int]),
    "hipGetDeviceProperties": (c_int, [c_void_p, c_int]),
    "hipModuleLoadData": (c_int, [_VOIDPP, c_void_p]),
    "hipModuleGetFunction": (c_int, [_VOIDPP, c_void_p, c_char_p]),
    "hipModuleUnload": (c_int, [c_void_p]),
    "hipModuleGetGlobal": (c_int, [_VOIDPP, POINTER(c_size_t), c_void_p, c_char_p]),
    "hipMemcpyDtoD": (c_int, [c_void_p, c_void_p, c_size_t]),
    "hipMemcpyDtoDAsync": (c_int, [c_void_p, c_void_p, c_size_t, c_void_p]),
    "hipMalloc": (c_int, [_VOIDPP, c_size_t]),
    "hipFree": (c_int, [c_void_p]),
    "hipMemcpyHtoD": (c_int, [c_void_p, c_void_p, c_size_t]),
    "hipMemcpyDtoH": (c_int, [c_void_p, c_void_p, c_size_t]),
    "hipModuleLaunchKernel": (c_int, [c_void_p] + [c_uint] * 7 + [c_void_p, _VOIDPP, _VOIDPP]),
    # (f, global xyz, local xyz, size_t shared, stream, params, extra, start, stop, flags)
    "hipExtModuleLaunchKernel": (
        c_int,
        [c_void_p]
        + [c_uint] * 6
        + [c_size_t, c_void_p, _VOIDPP, _VOIDPP]
        + [c_void_p, c_void_p, c_uint],
    ),
    "hipDeviceSynchronize": (c_int, []),
    "hipMemcpyHtoDAsync": (c_int, [c_void_p, c_void_p, c_size_t, c_void_p]),
    "hipMemcpyDtoHAsync": (c_int, [c_void_p, c_void_p, c_size_t, c_void_p]),
    "hipStreamCreate": (c_int, [_VOIDPP]),
    "hipStreamDestroy": (c_int, [c_void_p]),
    "hipStreamSynchronize": (c_int, [c_void_p]),
    "hipEventCreate": (c_int, [_VOIDPP]),
    "hipEventRecord": (c_int, [c_void_p, c_void_p]),
    "hipEventSynchronize": (c_int, [c_void_p]),
    "hipEventElapsedTime": (c_int, [POINTER(c_float), c_void_p, c_void_p]),
    "hipEventDestroy": (c_int, [c_void_p]),
    "hipGetErrorName": (c_char_p, [c_int]),
    "hipGetErrorString": (c_char_p, [c_int]),
}
_OPTIONAL = frozenset(
    {"hipGetDevicePropertiesR0600", "hipGetDeviceProperties", "hipExtModuleLaunchKernel"}
)

ATTR_MAX_THREADS_PER_BLOCK = 56
ATTR_MULTIPROCESSOR_COUNT = 63
ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 74
# hipDeviceProp_t's layout differs between ROCm releases; a buffer larger than any
# of them receives it, and gcnArchName is found by content instead of offset.
_PROPERTIES_BYTES = 8192
_ARCH_NAME = re.compile(rb"(?<![^\x00])gfx[0-9a-z]+(?:-[0-9a-z]+)*(?::[a-z0-9_]+[+-])*(?=\x00)")
_LIBRARY = "libamdhip64.so"


def _candidates() -> list[str]:
    if sys.platform == "win32":
        return ["amdhip64_7.dll", "amdhip64_6.dll", "amdhip64.dll"]
    names = [_LIBRARY, f"{_LIBRARY}.7", f"{_LIBRARY}.6"]
    roots = [os.environ.get("ROCM_PATH", ""), "/opt/rocm"]
    return names + [os.path.join(root, "lib", name) for root in roots if root for name in names]


def _error_text(lib: ctypes.CDLL, code: int) -> tuple[str, str]:
    return decode(lib.hipGetErrorName(code)), decode(lib.hipGetErrorString(code))


_driver = Driver(
    "the HIP runtime (libamdhip64)", _candidates, _PROTOTYPES, _OPTIONAL, "hipInit", _error_text
)
_call = _driver.call


def load_library() -> ctypes.CDLL | None:
    """The library, opened on first use; None when it cannot be (see unavailable_reason)."""
    return _driver.load()[0]


def unavailable_reason() -> str:
    """Why this driver cannot be used here ("" when it can): no library, or init failed."""
    return _driver.unavailable_reason()


def base_arch(name: str) -> tuple[str, str]:
    """Splits "gfx942:sramecc+:xnack-" into ("gfx942", "+sramecc,-xnack") for LLVM.

    HIP reports the target with its feature settings; LLVM takes the processor as
    the CPU name and the settings as a feature string.
    """
    processor, *settings = name.split(":")
    bad = [s for s in settings if not re.fullmatch(r"[a-z0-9_]+[+-]", s)]
    if not re.fullmatch(r"gfx[0-9a-z]+(-[0-9a-z]+)*", processor) or bad:
        raise ValueError(f"not an AMD GPU target name: {name!r}")
    return processor, ",".join(s[-1] + s[:-1] for s in settings)


def find_arch_name(properties: bytes) -> str:
    """gcnArchName found in a raw hipDeviceProp_t; "" when there is none.

    The last match wins: the device name field comes first and could itself look
    like an architecture name.
    """
    found = _ARCH_NAME.findall(properties)
    return found[-1].decode("ascii") if found else ""


def _device_arch(index: int) -> str:
    lib = _driver.ready()
    buffer = ctypes.create_string_buffer(_PROPERTIES_BYTES)
    for call in ("hipGetDevicePropertiesR0600", "hipGetDeviceProperties"):
        if hasattr(lib, call):
            _call(f"querying HIP device {index}", call, buffer, index)
            return find_arch_name(buffer.raw)
    return ""


def _attribute(index: int, attribute: int) -> int:
    value = c_int()
    what = f"querying HIP device {index}"
    _call(what, "hipDeviceGetAttribute", byref(value), attribute, index)
    return value.value


def _device_info(index: int) -> GpuDeviceInfo:
    name = ctypes.create_string_buffer(256)
    _call(f"querying HIP device {index}", "hipDeviceGetName", name, len(name), index)
    return GpuDeviceInfo(
        vendor="amd",
        index=index,
        name=decode(name.value),
        arch=_device_arch(index),
        compute_units=_attribute(index, ATTR_MULTIPROCESSOR_COUNT),
        max_work_group_size=_attribute(index, ATTR_MAX_THREADS_PER_BLOCK),
        local_memory_bytes=_attribute(index, ATTR_MAX_SHARED_MEMORY_PER_BLOCK),
    )


def devices() -> list[GpuDeviceInfo]:
    """The HIP devices present; [] when there is no driver or it fails. Never raises."""
    return list_devices(_driver, "HIP device", "hipGetDeviceCount", _device_info)


class HipModule(LoadedModule):
    """A loaded code object; kernels are looked up in it by name."""

    get_function_call = "hipModuleGetFunction"
    get_global_call = "hipModuleGetGlobal"
    unload_call = "hipModuleUnload"


class HipContext(DeviceContext):
    """HIP device ``index``: memory, modules and launches there.

    HIP's current device is per thread, so every method selects it first (cheap),
    and a context may be used from any thread.
    """

    driver = _driver
    device_word = "HIP device"
    calls = {
        "alloc": "hipMalloc",
        "free": "hipFree",
        "to_device": "hipMemcpyHtoD",
        "to_host": "hipMemcpyDtoH",
        "synchronize": "hipDeviceSynchronize",
        "to_device_async": "hipMemcpyHtoDAsync",
        "to_host_async": "hipMemcpyDtoHAsync",
        "device_to_device": "hipMemcpyDtoD",
        "device_to_device_async": "hipMemcpyDtoDAsync",
        "stream_create": "hipStreamCreate",
        "stream_destroy": "hipStreamDestroy",
        "stream_synchronize": "hipStreamSynchronize",
        "event_create": "hipEventCreate",
        "event_record": "hipEventRecord",
        "event_synchronize": "hipEventSynchronize",
        "event_elapsed": "hipEventElapsedTime",
        "event_destroy": "hipEventDestroy",
    }

    def __init__(self, index: int):
        _driver.ready()
        self.index = index
        self._names: dict[int, str] = {}  # function handle -> kernel name, for errors
        self._use()

    def _use(self) -> None:
        _call(f"using HIP device {self.index}", "hipSetDevice", self.index)

    def load_module(self, image: bytes, what: str) -> HipModule:
        """Loads an AMD GPU code object (or offload bundle); ``what`` names it in errors."""
        self._use()
        module = c_void_p()
        _call(f"loading {what}", "hipModuleLoadData", byref(module), bytes(image))
        return HipModule(self, module.value, what)

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

        hipExtModuleLaunchKernel takes the global size in work-items, so the last
        group may be partial (as in OpenCL 2.0+); without it, whole groups are needed
        as on CUDA. ``params`` holds each kernel parameter's bytes. An empty launch
        (a zero global size) does nothing. ``stream``: a handle from create_stream (None:
        the default stream); the call returns once the launch is queued.
        """
        kernel = self._names.get(function)
        extended = hasattr(_driver.ready(), "hipExtModuleLaunchKernel")
        if extended:
            check_sizes(global_size, local_size, kernel, shared_bytes)
            sizes = tuple(global_size)
        else:
            sizes = check_whole_groups(global_size, local_size, kernel, shared_bytes)
        if 0 in sizes:
            return
        self._use()
        args = KernelParams(params)
        what = f"launch on HIP device {self.index}"
        launch = (function, *sizes, *local_size, shared_bytes, stream, args.array, None)
        if extended:
            _call(what, "hipExtModuleLaunchKernel", *launch, None, None, 0, kernel=kernel)
        else:
            _call(what, "hipModuleLaunchKernel", *launch, kernel=kernel)
