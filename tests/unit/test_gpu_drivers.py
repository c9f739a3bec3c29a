"""The CUDA and HIP ctypes bindings, against a fake driver (and a real GPU when present)."""

from __future__ import annotations

import ctypes
import shutil
import struct
import subprocess
import sys

import pytest

from spirvjit.backends.amdgpu import hip
from spirvjit.backends.gpu.driver import GpuDriverError, KernelParams
from spirvjit.backends.nvptx import cuda
from spirvjit.errors import LaunchError

_BYREF = type(ctypes.byref(ctypes.c_int()))


class FakeDriver:
    """Stands in for libcuda/libamdhip64: records calls and returns success.

    Out-parameters passed by reference receive made-up handles; ``hooks`` run inside
    a call (while its arguments are alive), ``errors`` makes a call return a code.
    """

    def __init__(self, missing=(), hooks=None, errors=None):
        self.calls: list[tuple[str, tuple]] = []
        self.missing = set(missing)
        self.hooks = hooks or {}
        self.errors = errors or {}
        self.handle = 0x7F00_0000_1000  # above 32 bits: truncation would show

    def __getattr__(self, name):
        if name.startswith("_") or name in self.missing:
            raise AttributeError(name)

        def function(*args):
            self.calls.append((name, args))
            for arg in args:
                if isinstance(arg, _BYREF) and type(arg._obj) in (
                    ctypes.c_int,
                    ctypes.c_void_p,
                    ctypes.c_uint64,
                ):
                    self.handle += 0x100
                    arg._obj.value = 2 if isinstance(arg._obj, ctypes.c_int) else self.handle
            if name in self.hooks:
                return self.hooks[name](*args)
            return self.errors.get(name, 0)

        return function

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    def last(self, name: str) -> tuple:
        return [args for called, args in self.calls if called == name][-1]


@pytest.fixture(autouse=True)
def _fresh_caches():
    """No test sees another's library or cuInit result (fake or missing)."""
    for module in (cuda, hip):
        module._driver.reset()
    yield
    for module in (cuda, hip):
        module._driver.reset()


def _install(monkeypatch, module, fake: FakeDriver) -> FakeDriver:
    monkeypatch.setattr(module._driver, "state", (fake, ""))
    return fake


def test_kernel_params_point_at_the_packed_values():
    values = [struct.pack("<Q", 0x1234_5678_9ABC_DEF0), struct.pack("<f", 2.5), b"\x01\x02\x03"]
    params = KernelParams(values)
    assert len(params) == 3
    for index, value in enumerate(values):
        address = params.array[index]
        assert address % 8 == 0
        assert ctypes.string_at(address, len(value)) == value
    assert KernelParams([]).array is None


def test_driver_error_names_call_error_and_remedy():
    error = GpuDriverError(
        "allocating 1024 bytes on CUDA device 0",
        "saxpy",
        call="cuMemAlloc_v2",
        code=2,
        error_name="CUDA_ERROR_OUT_OF_MEMORY",
        error_string="out of memory",
    )
    assert isinstance(error, LaunchError)
    text = str(error)
    for part in ("saxpy", "allocating 1024 bytes", "cuMemAlloc_v2", "CUDA_ERROR_OUT_OF_MEMORY"):
        assert part in text
    assert "(out of memory)" in text and "free device buffers" in error.hint
    assert (error.call, error.code, error.kernel) == ("cuMemAlloc_v2", 2, "saxpy")
    hip_error = GpuDriverError(
        "loading", call="hipModuleLoadData", error_name="hipErrorNoBinaryForGpu"
    )
    assert "another GPU architecture" in str(hip_error)
    unknown = GpuDriverError("initializing", call="cuInit", code=12345, log="line 1\n")
    assert "error 12345" in str(unknown) and "driver installation" in str(unknown)
    assert str(unknown).endswith("\nline 1")
    plain = GpuDriverError("sizes are wrong", "k")
    assert str(plain) == "kernel 'k': sizes are wrong" and plain.call is None


@pytest.mark.parametrize("module", [cuda, hip], ids=["cuda", "hip"])
def test_missing_library_means_no_devices(monkeypatch, module):
    monkeypatch.setattr(module._driver, "candidates", lambda: ["libspirvjit-no-such-driver.so"])
    assert module.load_library() is None
    assert module.devices() == []
    reason = module.unavailable_reason()
    assert "libspirvjit-no-such-driver.so" in reason
    context = cuda.CudaContext if module is cuda else hip.HipContext
    with pytest.raises(GpuDriverError, match="not available"):
        context(0)


@pytest.mark.parametrize("module, init", [(cuda, "cuInit"), (hip, "hipInit")], ids=["cuda", "hip"])
def test_failed_init_means_no_devices(monkeypatch, module, init):
    fake = _install(monkeypatch, module, FakeDriver(errors={init: 100}))
    assert module.devices() == []
    reason = module.unavailable_reason()
    assert f"{init} failed with error 100" in reason and not reason.startswith("launch:")
    assert module.devices() == [] and fake.names().count(init) == 1  # the failure is kept


def test_importing_the_bindings_loads_no_library():
    code = (
        "import spirvjit.backends.nvptx.cuda as c, spirvjit.backends.amdgpu.hip as h\n"
        "assert c._driver.state is None and h._driver.state is None\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cuda_launch_needs_whole_blocks_and_checks_before_the_driver(monkeypatch):
    fake = _install(monkeypatch, cuda, FakeDriver())
    context = cuda.CudaContext(0)
    fake.calls.clear()
    with pytest.raises(GpuDriverError, match=r"\(100, 1, 1\) is not a multiple.*\(32, 1, 1\)"):
        context.launch(0x10, (100, 1, 1), (32, 1, 1), 0, [])
    with pytest.raises(GpuDriverError, match="below 2"):
        context.launch(0x10, (1 << 32, 1, 1), (32, 1, 1), 0, [])
    assert fake.calls == []


def test_cuda_launch_passes_grid_block_and_params(monkeypatch):
    seen = {}

    def launch(*args):
        seen["args"] = args
        array = args[9]
        seen["values"] = [ctypes.string_at(array[i], 8) for i in range(2)] if array else []
        return 0

    fake = _install(monkeypatch, cuda, FakeDriver(hooks={"cuLaunchKernel": launch}))
    context = cuda.CudaContext(0)
    module = context.load_module(b".version 8.0\n", "kernels.ptx")
    assert fake.last("cuModuleLoadDataEx")[1] == b".version 8.0\n\0"  # PTX is a C string
    function = module.function("saxpy")
    assert function > 1 << 32
    params = [struct.pack("<Q", 0xDEAD_BEEF_0000_0001), struct.pack("<d", 1.5)]
    context.launch(function, (256, 4, 2), (64, 2, 1), 1024, params)
    assert seen["args"][:9] == (function, 4, 2, 2, 64, 2, 1, 1024, None)
    assert seen["values"] == params
    assert "cuFuncSetAttribute" not in fake.names()
    context.launch(function, (64, 1, 1), (64, 1, 1), 64 * 1024, [])
    assert fake.last("cuFuncSetAttribute") == (function, 8, 64 * 1024)
    assert fake.last("cuLaunchKernel")[9] is None
    context.launch(function, (0, 1, 1), (64, 1, 1), 0, [])  # empty: nothing launched
    assert fake.names().count("cuLaunchKernel") == 2


def test_cuda_errors_carry_the_driver_names_and_jit_log(monkeypatch):
    def error_name(code, out):
        out._obj.value = b"CUDA_ERROR_INVALID_PTX"
        return 0

    def load(module, image, count, options, values):
        assert list(options) == [5, 6]
        ctypes.memmove(values[0], b"ptxas fatal: bad\0", 17)
        return 218

    fake = FakeDriver(hooks={"cuGetErrorName": error_name, "cuModuleLoadDataEx": load})
    _install(monkeypatch, cuda, fake)
    context = cuda.CudaContext(0)
    with pytest.raises(GpuDriverError) as caught:
        context.load_module(b"\x7fELF...", "saxpy.cubin")
    error = caught.value
    assert (error.call, error.code) == ("cuModuleLoadDataEx", 218)
    assert error.error_name == "CUDA_ERROR_INVALID_PTX"
    assert "loading saxpy.cubin" in str(error) and "ptxas fatal: bad" in error.log


def test_cuda_devices_and_arch(monkeypatch):
    attributes = {1: 1024, 8: 48 * 1024, 16: 132, 75: 9, 76: 0, 97: 227 * 1024}

    def attribute(out, which, device):
        out._obj.value = attributes[which]
        return 0

    def name(buffer, size, device):
        ctypes.memmove(buffer, b"NVIDIA H100\0", 12)
        return 0

    hooks = {"cuDeviceGetAttribute": attribute, "cuDeviceGetName": name}
    _install(monkeypatch, cuda, FakeDriver(hooks=hooks))
    assert cuda.device_arch(0) == "sm_90"
    found = cuda.devices()
    assert len(found) == 2  # the fake reports a count of 2
    expected = cuda.GpuDeviceInfo("nvidia", 1, "NVIDIA H100", "sm_90", 132, 1024, 227 * 1024)
    assert found[1] == expected


def test_hip_ext_launch_takes_work_items_and_partial_groups(monkeypatch):
    seen = {}

    def launch(*args):
        seen["args"] = args
        seen["value"] = ctypes.string_at(args[9][0], 4)
        return 0

    fake = _install(monkeypatch, hip, FakeDriver(hooks={"hipExtModuleLaunchKernel": launch}))
    context = hip.HipContext(3)
    function = context.load_module(b"\x7fELF", "k.hsaco").function("k")
    context.launch(function, (1000, 3, 1), (256, 1, 1), 512, [struct.pack("<i", -7)])
    args = seen["args"]
    assert args[:9] == (function, 1000, 3, 1, 256, 1, 1, 512, None)
    assert args[10:] == (None, None, None, 0)
    assert seen["value"] == struct.pack("<i", -7)
    assert fake.last("hipSetDevice") == (3,)
    assert "hipModuleLaunchKernel" not in fake.names()


def test_hip_without_ext_launch_needs_whole_groups(monkeypatch):
    fake = _install(monkeypatch, hip, FakeDriver(missing={"hipExtModuleLaunchKernel"}))
    context = hip.HipContext(0)
    with pytest.raises(GpuDriverError, match="not a multiple"):
        context.launch(0x10, (1000, 1, 1), (256, 1, 1), 0, [])
    context.launch(0x10, (1024, 2, 1), (256, 1, 1), 0, [])
    assert fake.last("hipModuleLaunchKernel")[:8] == (0x10, 4, 2, 1, 256, 1, 1, 0)


_STREAM_CALLS = {
    cuda: {
        "create_stream": "cuStreamCreate",
        "destroy_stream": "cuStreamDestroy_v2",
        "synchronize_stream": "cuStreamSynchronize",
        "create_event": "cuEventCreate",
        "record_event": "cuEventRecord",
        "synchronize_event": "cuEventSynchronize",
        "elapsed_ms": "cuEventElapsedTime",
        "destroy_event": "cuEventDestroy_v2",
        "to_device_async": "cuMemcpyHtoDAsync_v2",
        "to_host_async": "cuMemcpyDtoHAsync_v2",
        "launch": "cuLaunchKernel",
    },
    hip: {
        "create_stream": "hipStreamCreate",
        "destroy_stream": "hipStreamDestroy",
        "synchronize_stream": "hipStreamSynchronize",
        "create_event": "hipEventCreate",
        "record_event": "hipEventRecord",
        "synchronize_event": "hipEventSynchronize",
        "elapsed_ms": "hipEventElapsedTime",
        "destroy_event": "hipEventDestroy",
        "to_device_async": "hipMemcpyHtoDAsync",
        "to_host_async": "hipMemcpyDtoHAsync",
        "launch": "hipExtModuleLaunchKernel",
    },
}


def _context(module):
    return cuda.CudaContext(0) if module is cuda else hip.HipContext(0)


@pytest.mark.parametrize("module", [cuda, hip], ids=["cuda", "hip"])
def test_streams_and_events_pass_their_handles(monkeypatch, module):
    calls = _STREAM_CALLS[module]

    def elapsed(out, start, end):
        out._obj.value = 2.5
        return 0

    fake = _install(monkeypatch, module, FakeDriver(hooks={calls["elapsed_ms"]: elapsed}))
    context = _context(module)
    stream = context.create_stream()
    # CUDA's create calls take flags (0: a blocking stream, a timed event); HIP's none.
    flags = (0,) if module is cuda else ()
    assert stream > 1 << 32 and fake.last(calls["create_stream"])[1:] == flags
    start, end = context.create_event(), context.create_event()
    assert start != end and fake.last(calls["create_event"])[1:] == flags
    context.record_event(start, stream)
    assert fake.last(calls["record_event"]) == (start, stream)
    context.launch(0x10, (256, 1, 1), (64, 1, 1), 0, [], stream=stream)
    assert fake.last(calls["launch"])[8] == stream
    context.copy_to_device(0x2000, 0x3000, 64, stream)
    assert fake.last(calls["to_device_async"]) == (0x2000, 0x3000, 64, stream)
    context.copy_to_host(0x3000, 0x2000, 64, stream)
    assert fake.last(calls["to_host_async"]) == (0x3000, 0x2000, 64, stream)
    context.record_event(end, stream)
    context.synchronize_stream(stream)
    assert fake.last(calls["synchronize_stream"]) == (stream,)
    context.synchronize_event(end)
    assert fake.last(calls["synchronize_event"]) == (end,)
    assert context.elapsed_ms(start, end) == 2.5
    assert fake.last(calls["elapsed_ms"])[1:] == (start, end)
    context.destroy_event(start)
    assert fake.last(calls["destroy_event"]) == (start,)
    context.destroy_stream(stream)
    assert fake.last(calls["destroy_stream"]) == (stream,)
    # No stream: the synchronous calls and the default stream, as before.
    names = fake.names()
    context.copy_to_device(0x2000, 0x3000, 64)
    context.launch(0x10, (256, 1, 1), (64, 1, 1), 0, [])
    assert calls["to_device_async"] not in fake.names()[len(names) :]
    assert fake.last(calls["launch"])[8] is None


@pytest.mark.parametrize("module", [cuda, hip], ids=["cuda", "hip"])
@pytest.mark.parametrize(
    "method, key, args, what",
    [
        ("synchronize_stream", "synchronize_stream", (0x40,), "waiting for a stream"),
        ("create_stream", "create_stream", (), "creating a stream"),
        ("record_event", "record_event", (0x50, 0x40), "recording an event"),
        ("synchronize_event", "synchronize_event", (0x50,), "waiting for an event"),
        ("elapsed_ms", "elapsed_ms", (0x50, 0x60), "timing events"),
        ("copy_to_host", "to_host_async", (0x3000, 0x2000, 8, 0x40), "copying 8 bytes from"),
    ],
)
def test_stream_and_event_errors_name_the_call(monkeypatch, module, method, key, args, what):
    """A fault in queued work is reported when waiting for it: the error names the call
    and the driver's error, with the hint for a faulted kernel."""
    call = _STREAM_CALLS[module][key]
    fake = FakeDriver(errors={call: 700})
    if module is cuda:

        def error_name(code, out):
            out._obj.value = b"CUDA_ERROR_ILLEGAL_ADDRESS"
            return 0

        fake.hooks["cuGetErrorName"] = error_name
    else:
        fake.hooks["hipGetErrorName"] = lambda code: b"hipErrorIllegalAddress"
        fake.hooks["hipGetErrorString"] = lambda code: b"illegal address"
    _install(monkeypatch, module, fake)
    context = _context(module)
    with pytest.raises(GpuDriverError) as caught:
        getattr(context, method)(*args)
    error = caught.value
    assert (error.call, error.code) == (call, 700)
    assert what in str(error) and "restart the process" in error.hint


def test_hip_errors_use_the_runtime_names(monkeypatch):
    fake = FakeDriver(errors={"hipMalloc": 2})
    fake.hooks["hipGetErrorName"] = lambda code: b"hipErrorOutOfMemory"
    fake.hooks["hipGetErrorString"] = lambda code: b"out of memory"
    _install(monkeypatch, hip, fake)
    with pytest.raises(GpuDriverError, match="hipMalloc failed with hipErrorOutOfMemory"):
        hip.HipContext(0).alloc(1 << 40)


def test_hip_arch_name_found_in_any_properties_layout(monkeypatch):
    properties = bytearray(2048)
    properties[0:19] = b"AMD Instinct MI300X"
    properties[300:304] = b"gfx\x00"  # a stray "gfx" in another field is not the name
    properties[1000:1023] = b"gfx942:sramecc+:xnack-\x00"
    assert hip.find_arch_name(bytes(properties)) == "gfx942:sramecc+:xnack-"
    assert hip.find_arch_name(bytes(64)) == ""

    def props(buffer, index):
        ctypes.memmove(buffer, bytes(properties), len(properties))
        return 0

    def attribute(out, which, index):  # each attribute reads back as its own number
        out._obj.value = which
        return 0

    hooks = {"hipGetDevicePropertiesR0600": props, "hipDeviceGetAttribute": attribute}
    _install(monkeypatch, hip, FakeDriver(hooks=hooks))
    device = hip.devices()[0]
    assert (device.vendor, device.arch) == ("amd", "gfx942:sramecc+:xnack-")
    assert (device.compute_units, device.max_work_group_size, device.local_memory_bytes) == (
        hip.ATTR_MULTIPROCESSOR_COUNT,
        hip.ATTR_MAX_THREADS_PER_BLOCK,
        hip.ATTR_MAX_SHARED_MEMORY_PER_BLOCK,
    )


@pytest.mark.parametrize(
    "name, expected",
    [
        ("gfx942:sramecc+:xnack-", ("gfx942", "+sramecc,-xnack")),
        ("gfx90a:xnack+", ("gfx90a", "+xnack")),
        ("gfx1100", ("gfx1100", "")),
    ],
)
def test_base_arch_splits_features(name, expected):
    assert hip.base_arch(name) == expected


@pytest.mark.parametrize("name", ["sm_90", "gfx", "gfx942:sramecc", "gfx942:+", "gfx942:"])
def test_base_arch_rejects_other_names(name):
    with pytest.raises(ValueError, match="not an AMD GPU target"):
        hip.base_arch(name)


# Both APIs' functions in C, so the ctypes prototypes meet a real C ABI: a truncated
# 64-bit handle, a size in the wrong slot or a mis-declared array fails here.
_STUB_SOURCE = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#define H(x) ((void *)(uintptr_t)(x))
#define MODULE H(0x7f0000000020)
#define FUNCTION H(0x7f0000000030)
uint64_t seen[16];  /* the last launch, read back by the test */
static char heap[4096];
static int record(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                  unsigned bz, size_t shared, void *stream, void **kp, void **extra) {
    uint64_t v[] = {(uintptr_t)f, gx, gy, gz, bx, by, bz, shared, (uintptr_t)stream,
                    (uintptr_t)extra, *(uint64_t *)kp[0], *(uint32_t *)kp[1]};
    memcpy(seen, v, sizeof v);
    return f == FUNCTION ? 0 : 400;
}
static int name(char *s, int n, int d) { snprintf(s, n, "Stub %d", d); return 0; }
static int count(int *n) { *n = 1; return 0; }
static int function(void **f, void *m, const char *name) {
    *f = FUNCTION;
    return m == MODULE && !strcmp(name, "k") ? 0 : 500;
}
static int copy_async(void *d, const void *s, size_t n, void *stream);
/* A module's variable: "counter", 8 bytes at heap + 2048. */
static int global(void **p, size_t *n, void *m, const char *name) {
    if (m != MODULE || strcmp(name, "counter")) return 500;
    *p = heap + 2048;
    *n = 8;
    return 0;
}
int cuInit(unsigned flags) { return flags; }
int cuDeviceGetCount(int *n) { return count(n); }
int cuDeviceGet(int *d, int i) { *d = i; return 0; }
int cuDeviceGetName(char *s, int n, int d) { return name(s, n, d); }
int cuDeviceGetAttribute(int *v, int a, int d) {
    *v = a == 75 ? 8 : a == 76 ? 9 : 1000 + a; /* compute capability 8.9 */
    return 0;
}
int cuDevicePrimaryCtxRetain(void **c, int d) { *c = H(0x7f0000000010); return 0; }
int cuCtxSetCurrent(void *c) { return c == H(0x7f0000000010) ? 0 : 201; }
int cuModuleLoadDataEx(void **m, const char *image, unsigned n, int *options, void **values) {
    *m = MODULE;
    if (!strcmp(image, ".version 8.0")) return 0;
    snprintf(values[0], (size_t)values[1], "ptxas: rejected");
    return 218;
}
int cuModuleGetFunction(void **f, void *m, const char *s) { return function(f, m, s); }
int cuModuleUnload(void *m) { return m == MODULE ? 0 : 400; }
int cuModuleGetGlobal_v2(uint64_t *p, size_t *n, void *m, const char *s) {
    return global((void **)p, n, m, s);
}
int cuMemcpyDtoD_v2(uint64_t d, uint64_t s, size_t n) { memmove(H(d), H(s), n); return 0; }
int cuMemcpyDtoDAsync_v2(uint64_t d, uint64_t s, size_t n, void *st) {
    return copy_async(H(d), H(s), n, st);
}
int cuMemAlloc_v2(uint64_t *p, size_t n) { *p = (uintptr_t)heap; return n > sizeof heap ? 2 : 0; }
int cuMemFree_v2(uint64_t p) { return p == (uintptr_t)heap ? 0 : 1; }
int cuMemcpyHtoD_v2(uint64_t d, const void *s, size_t n) { memcpy(H(d), s, n); return 0; }
int cuMemcpyDtoH_v2(void *d, uint64_t s, size_t n) { memcpy(d, H(s), n); return 0; }
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned shared, void *stream, void **kp, void **extra) {
    return record(f, gx, gy, gz, bx, by, bz, shared, stream, kp, extra);
}
int cuFuncSetAttribute(void *f, int a, int v) { seen[12] = a; seen[13] = v; return 0; }
int cuCtxSynchronize(void) { return 0; }
int cuGetErrorName(int c, const char **s) {
    *s = c == 218 ? "CUDA_ERROR_INVALID_PTX"
       : c == 400 ? "CUDA_ERROR_INVALID_HANDLE" : "CUDA_ERROR_OUT_OF_MEMORY";
    return 0;
}
/* Streams and events, both APIs: one stream handle, events numbered from EVENT0; an
   event's "time" is its number, so the elapsed time shows which events were passed. */
#define STREAM H(0x7f0000000040)
#define EVENT0 0x7f0000000100ull
static unsigned events;
static int make_stream(void **s) { *s = STREAM; return 0; }
static int is_stream(void *s) { return s == STREAM ? 0 : 400; }
static int make_event(void **e) { *e = H(EVENT0 + 0x10 * events++); return 0; }
static int is_event(void *e) { return (uintptr_t)e >= EVENT0 ? 0 : 400; }
static int record_event(void *e, void *s) {
    seen[14] = (uintptr_t)e;
    seen[15] = (uintptr_t)s;
    return is_event(e);
}
static int elapsed(float *ms, void *a, void *b) {
    *ms = ((float)((uintptr_t)b - (uintptr_t)a)) / 64.0f;
    return is_event(a) || is_event(b) ? 400 : 0;
}
static int copy_async(void *d, const void *s, size_t n, void *stream) {
    if (is_stream(stream)) return 400;
    memcpy(d, s, n);
    return 0;
}
int cuStreamCreate(void **s, unsigned flags) { return flags ? 1 : make_stream(s); }
int cuStreamDestroy_v2(void *s) { return is_stream(s); }
int cuStreamSynchronize(void *s) { return is_stream(s); }
int cuEventCreate(void **e, unsigned flags) { return flags ? 1 : make_event(e); }
int cuEventRecord(void *e, void *s) { return record_event(e, s); }
int cuEventSynchronize(void *e) { return is_event(e); }
int cuEventElapsedTime(float *ms, void *a, void *b) { return elapsed(ms, a, b); }
int cuEventDestroy_v2(void *e) { return is_event(e); }
int cuMemcpyHtoDAsync_v2(uint64_t d, const void *s, size_t n, void *st) {
    return copy_async(H(d), s, n, st);
}
int cuMemcpyDtoHAsync_v2(void *d, uint64_t s, size_t n, void *st) {
    return copy_async(d, H(s), n, st);
}
int hipStreamCreate(void **s) { return make_stream(s); }
int hipStreamDestroy(void *s) { return is_stream(s); }
int hipStreamSynchronize(void *s) { return is_stream(s); }
int hipEventCreate(void **e) { return make_event(e); }
int hipEventRecord(void *e, void *s) { return record_event(e, s); }
int hipEventSynchronize(void *e) { return is_event(e); }
int hipEventElapsedTime(float *ms, void *a, void *b) { return elapsed(ms, a, b); }
int hipEventDestroy(void *e) { return is_event(e); }
int hipMemcpyHtoDAsync(void *d, const void *s, size_t n, void *st) {
    return copy_async(d, s, n, st);
}
int hipMemcpyDtoHAsync(void *d, const void *s, size_t n, void *st) {
    return copy_async(d, s, n, st);
}
int cuGetErrorString(int c, const char **s) { *s = "stub"; return 0; }
int hipInit(unsigned flags) { return flags; }
int hipGetDeviceCount(int *n) { return count(n); }
int hipSetDevice(int d) { return d ? 101 : 0; }
int hipDeviceGetName(char *s, int n, int d) { return name(s, n, d); }
int hipDeviceGetAttribute(int *v, int a, int d) { *v = 1000 + a; return 0; }
int hipGetDevicePropertiesR0600(char *p, int d) {
    strcpy(p, "Stub");
    strcpy(p + 1000, "gfx90a:sramecc+:xnack-");
    return 0;
}
int hipModuleLoadData(void **m, const void *image) {
    *m = MODULE;
    return memcmp(image, "\x7f" "ELF", 4) ? 200 : 0;
}
int hipModuleGetFunction(void **f, void *m, const char *s) { return function(f, m, s); }
int hipModuleUnload(void *m) { return m == MODULE ? 0 : 400; }
int hipModuleGetGlobal(void **p, size_t *n, void *m, const char *s) { return global(p, n, m, s); }
int hipMemcpyDtoD(void *d, const void *s, size_t n) { memmove(d, s, n); return 0; }
int hipMemcpyDtoDAsync(void *d, const void *s, size_t n, void *st) {
    return copy_async(d, s, n, st);
}
int hipMalloc(void **p, size_t n) { *p = heap; return n > sizeof heap ? 2 : 0; }
int hipFree(void *p) { return p == heap ? 0 : 1; }
int hipMemcpyHtoD(void *d, const void *s, size_t n) { memcpy(d, s, n); return 0; }
int hipMemcpyDtoH(void *d, const void *s, size_t n) { memcpy(d, s, n); return 0; }
int hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned shared, void *stream, void **kp,
                          void **extra) { return 1; }
int hipExtModuleLaunchKernel(void *f, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx,
                             uint32_t by, uint32_t bz, size_t shared, void *stream, void **kp,
                             void **extra, void *start, void *stop, uint32_t flags) {
    seen[12] = (uintptr_t)start | (uintptr_t)stop | flags;
    return record(f, gx, gy, gz, bx, by, bz, shared, stream, kp, extra);
}
int hipDeviceSynchronize(void) { return 0; }
const char *hipGetErrorName(int c) {
    return c == 2 ? "hipErrorOutOfMemory" : c == 400 ? "hipErrorInvalidHandle" : "hipErrorUnknown";
}
const char *hipGetErrorString(int c) { return "stub"; }
"""


@pytest.fixture(scope="module")
def stub_library(tmp_path_factory) -> str:
    """The C stub driver, built with the system C compiler (skipped without one)."""
    compiler = next(filter(None, map(shutil.which, ("cc", "gcc", "clang", "clang-22"))), None)
    if compiler is None:
        pytest.skip("no C compiler to build the stub driver")
    directory = tmp_path_factory.mktemp("stub-driver")
    (directory / "stub.c").write_text(_STUB_SOURCE)
    library = directory / "libstubgpu.so"
    command = [compiler, "-shared", "-fPIC", "-o", str(library), str(directory / "stub.c")]
    subprocess.run(command, check=True)
    return str(library)


def _stub(monkeypatch, module, library: str):
    monkeypatch.setattr(module._driver, "candidates", lambda: [library])
    return (ctypes.c_uint64 * 16).in_dll(module.load_library(), "seen")


def _stub_round_trip_and_errors(context, module) -> None:
    data = bytes(range(200))
    source = (ctypes.c_ubyte * len(data)).from_buffer_copy(data)
    result = (ctypes.c_ubyte * len(data))()
    pointer = context.alloc(len(data))
    context.copy_to_device(pointer, ctypes.addressof(source), len(data))
    context.copy_to_host(ctypes.addressof(result), pointer, len(data))
    context.free(pointer)
    assert bytes(result) == data
    with pytest.raises(GpuDriverError, match="[Oo]ut[Oo]f[Mm]emory|OUT_OF_MEMORY"):
        context.alloc(1 << 40)


def _stub_streams_and_events(context, seen, function: int, params, invalid_handle: str) -> None:
    """Every stream and event call through the real C ABI: the handles (above 32 bits)
    reach the functions that take them, the elapsed time comes back as a float, the
    asynchronous copies move the data, and a bad handle becomes the driver's error."""
    stream = context.create_stream()
    assert stream == 0x7F0000000040
    start, end = context.create_event(), context.create_event()
    assert end - start == 0x10 and start >= 0x7F0000000100
    context.record_event(start, stream)
    assert list(seen[14:16]) == [start, stream]
    context.launch(function, (1024, 1, 1), (256, 1, 1), 0, params, stream=stream)
    assert seen[8] == stream  # the launch's stream slot
    data = bytes(range(100, 200))
    source = (ctypes.c_ubyte * len(data)).from_buffer_copy(data)
    result = (ctypes.c_ubyte * len(data))()
    pointer = context.alloc(len(data))
    context.copy_to_device(pointer, ctypes.addressof(source), len(data), stream)
    context.copy_to_host(ctypes.addressof(result), pointer, len(data), stream)
    context.record_event(end, stream)
    context.synchronize_stream(stream)
    context.synchronize_event(end)
    assert bytes(result) == data
    assert context.elapsed_ms(start, end) == 0.25  # (end - start) / 64 in the stub
    context.destroy_event(start)
    context.destroy_event(end)
    with pytest.raises(GpuDriverError, match=invalid_handle) as caught:
        context.synchronize_stream(0x1234)
    assert caught.value.code == 400 and "waiting for a stream" in str(caught.value)
    with pytest.raises(GpuDriverError, match=invalid_handle):
        context.copy_to_device(pointer, ctypes.addressof(source), len(data), 0x1234)
    with pytest.raises(GpuDriverError, match="timing events"):
        context.elapsed_ms(0x10, end)
    context.free(pointer)
    context.destroy_stream(stream)


def _stub_module_variable(context, module, not_found: str) -> None:
    """A module's variable through the real C ABI: its address and size come back (the
    address above 32 bits where the stub's heap is), and a device-to-device copy, plain
    and on a stream, moves the data to it."""
    address, size = module.global_variable("counter")
    assert size == 8 and address > 0
    data = (ctypes.c_ubyte * 8).from_buffer_copy(bytes(range(1, 9)))
    scratch = context.alloc(8)  # the stub's heap start: 2048 bytes below the variable
    context.copy_to_device(scratch, ctypes.addressof(data), 8)
    context.copy_device_to_device(address, scratch, 8)
    result = (ctypes.c_ubyte * 8)()
    context.copy_to_host(ctypes.addressof(result), address, 8)
    assert bytes(result) == bytes(range(1, 9))
    stream = context.create_stream()
    context.copy_device_to_device(scratch, address + 4, 4, stream)
    context.synchronize_stream(stream)
    context.copy_to_host(ctypes.addressof(result), scratch, 4)
    assert bytes(result)[:4] == bytes(range(5, 9))
    context.destroy_stream(stream)
    with pytest.raises(GpuDriverError, match=f"looking up variable 'nothing' in k.*{not_found}"):
        module.global_variable("nothing")


def test_cuda_prototypes_match_the_c_abi(monkeypatch, stub_library):
    seen = _stub(monkeypatch, cuda, stub_library)
    assert cuda.devices() == [cuda.GpuDeviceInfo("nvidia", 0, "Stub 0", "sm_89", 1016, 1001, 1097)]
    context = cuda.CudaContext(0)
    with pytest.raises(GpuDriverError, match="CUDA_ERROR_INVALID_PTX") as caught:
        context.load_module(b".version 9.9", "bad.ptx")
    assert caught.value.log == "ptxas: rejected"
    module = context.load_module(b".version 8.0", "k.ptx")
    function = module.function("k")
    assert function == 0x7F0000000030
    params = [struct.pack("<Q", 0x1122334455667788), struct.pack("<I", 7)]
    context.launch(function, (256, 6, 1), (64, 2, 1), 64 * 1024, params)
    expected = [function, 4, 3, 1, 64, 2, 1, 64 * 1024, 0, 0, 0x1122334455667788, 7, 8, 64 * 1024]
    assert list(seen[:14]) == expected
    context.synchronize()
    _stub_streams_and_events(context, seen, function, params, "CUDA_ERROR_INVALID_HANDLE")
    _stub_module_variable(context, module, r"cuModuleGetGlobal_v2 failed .*\[500\]")
    module.unload()
    _stub_round_trip_and_errors(context, cuda)


def test_hip_prototypes_match_the_c_abi(monkeypatch, stub_library):
    seen = _stub(monkeypatch, hip, stub_library)
    arch = "gfx90a:sramecc+:xnack-"
    assert hip.devices() == [hip.GpuDeviceInfo("amd", 0, "Stub 0", arch, 1063, 1056, 1074)]
    context = hip.HipContext(0)
    with pytest.raises(GpuDriverError, match="hipModuleLoadData failed"):
        context.load_module(b"not elf", "bad.hsaco")
    module = context.load_module(b"\x7fELF", "k.hsaco")
    function = module.function("k")
    params = [struct.pack("<Q", 0x1122334455667788), struct.pack("<I", 7)]
    context.launch(function, (1000, 3, 1), (256, 1, 1), 128, params)
    expected = [function, 1000, 3, 1, 256, 1, 1, 128, 0, 0, 0x1122334455667788, 7, 0]
    assert list(seen[:13]) == expected
    context.synchronize()
    _stub_streams_and_events(context, seen, function, params, "hipErrorInvalidHandle")
    _stub_module_variable(context, module, r"hipModuleGetGlobal failed .*\[500\]")
    module.unload()
    _stub_round_trip_and_errors(context, hip)


def _round_trip(context) -> None:
    data = bytes(range(256)) * 16
    source = (ctypes.c_ubyte * len(data)).from_buffer_copy(data)
    result = (ctypes.c_ubyte * len(data))()
    pointer = context.alloc(len(data))
    try:
        context.copy_to_device(pointer, ctypes.addressof(source), len(data))
        context.copy_to_host(ctypes.addressof(result), pointer, len(data))
        context.synchronize()
    finally:
        context.free(pointer)
    assert bytes(result) == data
    context.free(context.alloc(0))


@pytest.mark.gpu
def test_cuda_device_memory_round_trip():
    if not cuda.devices():
        pytest.skip(f"no CUDA device: {cuda.unavailable_reason() or 'the driver lists none'}")
    _round_trip(cuda.CudaContext(0))


@pytest.mark.gpu
def test_hip_device_memory_round_trip():
    if not hip.devices():
        pytest.skip(f"no HIP device: {hip.unavailable_reason() or 'the runtime lists none'}")
    _round_trip(hip.HipContext(0))
