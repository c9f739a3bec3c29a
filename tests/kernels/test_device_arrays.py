"""spirvjit.Array: memory that stays on a device across launches. On the host CPU for
real (the CPU backend's allocate is host memory); on a GPU through the fake driver
context of test_gpu_launch.py (launches recorded, memory a dict), and on a real GPU
where one is present."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from harness import build
from test_gpu_launch import FakeContext

import spirvjit
from spirvjit.array import Array, asarray, empty, zeros
from spirvjit.backends import backend
from spirvjit.device import Device
from spirvjit.errors import LaunchError
from spirvjit.target import parse_target

SOURCE = """
kernel void axpy(global float* y, global const float* x, float a) {
    size_t i = get_global_id(0);
    y[i] += a * x[i];
}
"""


@pytest.fixture(scope="module")
def program():
    return build(SOURCE)


# ----- host CPU Arrays, for real ---------------------------------------------------


def test_host_array_round_trip_and_launch_in_place(program):
    x = asarray(np.arange(100, dtype=np.float32))
    y = zeros(100)
    assert isinstance(y, Array) and y.shape == (100,) and y.dtype == np.float32
    for _ in range(3):  # the data stays where it is between launches
        program.axpy(y, x, np.float32(2), global_size=100)
    np.testing.assert_array_equal(y.to_numpy(), 6 * np.arange(100, dtype=np.float32))


def test_host_array_exports_views_not_copies(program):
    y = asarray(np.ones((4, 8), np.float32))
    view = np.asarray(y)  # __array_interface__
    via_dlpack = np.from_dlpack(y)
    assert view.ctypes.data == via_dlpack.ctypes.data == y.address
    view[1, 2] = 7
    via_dlpack[0, 0] = 5  # writable: a kernel may write it
    assert via_dlpack[1, 2] == 7 and view[0, 0] == 5 and y.to_numpy()[1, 2] == 7
    assert y.__dlpack_device__() == (1, 0)


def test_host_array_view_keeps_memory_alive():
    view = np.from_dlpack(asarray(np.full(16, 3, np.int32)))
    # The Array itself is gone; the view's capsule holds it.
    np.testing.assert_array_equal(view, np.full(16, 3, np.int32))


def test_torch_cpu_tensor_of_array_is_zero_copy():
    torch = pytest.importorskip("torch")
    y = asarray(np.arange(6, dtype=np.float32))
    t = torch.from_dlpack(y)
    assert t.data_ptr() == y.address
    t += 1
    np.testing.assert_array_equal(y.to_numpy(), np.arange(1, 7, dtype=np.float32))


def test_dlpack_export_is_consumed_by_numpy_and_torch():
    """spirvjit.dlpack's capsule (what GPU Arrays export) read by real consumers, on
    host memory: the data, the shape, and the owner released by the deleter."""
    import gc

    from spirvjit import dlpack

    torch = pytest.importorskip("torch")
    owner = np.arange(12, dtype=np.float32).reshape(3, 4)

    class Exporter:
        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, **kwargs):
            return dlpack.export(owner, owner.ctypes.data, owner.shape, owner.dtype, (1, 0))

    live = len(dlpack._live)
    t = torch.from_dlpack(Exporter())
    v = np.from_dlpack(Exporter())
    assert t.data_ptr() == v.ctypes.data == owner.ctypes.data and tuple(t.shape) == (3, 4)
    assert len(dlpack._live) == live + 2
    del t, v
    gc.collect()
    assert len(dlpack._live) == live


def test_freed_array_and_wrong_sizes_raise(program):
    y = empty(8)
    with pytest.raises(ValueError, match="copy of 4 elements"):
        y.copy_from(np.zeros(4, np.float32))
    y.free()
    y.free()  # twice is harmless
    with pytest.raises(ValueError, match="freed"):
        y.to_numpy()
    with pytest.raises(ValueError, match="negative"):
        Array((-1,))


def test_cpu_kernel_refuses_gpu_memory(program):
    class GpuMemory:
        __cuda_array_interface__ = {
            "shape": (4,),
            "typestr": "<f4",
            "data": (0x7F0000000000, False),
            "version": 3,
        }

    x = np.zeros(4, np.float32)
    with pytest.raises(LaunchError, match="GPU memory"):
        program.axpy(GpuMemory(), x, np.float32(1), global_size=4)


# ----- GPU Arrays against the fake driver context ----------------------------------


@pytest.fixture
def fake(monkeypatch) -> tuple[FakeContext, Device]:
    context = FakeContext()
    monkeypatch.setattr(backend("nvptx"), "context", lambda device: context)
    device = Device(
        f"fake H200 {id(context)}", "nvidia", parse_target("sm_90"), 132, 1024, 228 * 1024, 0
    )
    return context, device


def test_gpu_arrays_are_passed_by_address_without_copies(program, fake):
    context, device = fake
    y = asarray(np.zeros(256, np.float32), device=device)
    x = asarray(np.arange(256, dtype=np.float32), device=device)
    assert len(context.memory) == 2  # the two Arrays, nothing else
    np.testing.assert_array_equal(
        context.memory[x.address].view(np.float32), np.arange(256, dtype=np.float32)
    )
    program.axpy(y, x, np.float32(2), global_size=256, device=device)
    program.axpy(y, x, np.float32(2), global_size=256, device=device)
    assert len(context.memory) == 2 and context.freed == []  # no staging buffers
    for _, _, _, _, params in context.launches:
        assert struct.unpack("<Q", params[0])[0] == y.address
        assert struct.unpack("<Q", params[1])[0] == x.address
    # The fake "kernel" writes 42 to out[0]: it landed in the Array's memory.
    assert y.to_numpy()[0] == 42
    address = y.address
    y.free()
    assert context.freed == [address]


def test_gpu_array_interfaces(fake):
    _, device = fake
    a = zeros((3, 5), np.int32, device=device)
    cai = a.__cuda_array_interface__
    assert cai["shape"] == (3, 5) and cai["typestr"] == "<i4" and cai["data"] == (a.address, False)
    assert cai["version"] == 3 and cai["strides"] is None
    assert a.__dlpack_device__() == (2, 0)
    with pytest.raises(AttributeError, match="not in host memory"):
        a.__array_interface__  # noqa: B018
    assert not hasattr(asarray(np.zeros(2)), "__cuda_array_interface__")


class Foreign:
    """GPU memory from another library (torch CUDA, CuPy): __cuda_array_interface__."""

    def __init__(self, address: int, shape, typestr="<f4", readonly=False, strides=None):
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": typestr,
            "data": (address, readonly),
            "strides": strides,
            "version": 3,
            "stream": None,
        }


def test_gpu_array_dlpack_capsule_describes_its_memory(fake):
    from spirvjit import dlpack

    _, device = fake
    a = zeros((3, 5), np.int16, device=device)
    capsule = a.__dlpack__()
    tensor = dlpack.read_capsule(capsule)
    assert tensor.data == a.address and (tensor.device.device_type, tensor.device.device_id) == (
        2,
        0,
    )
    assert tensor.ndim == 2 and [tensor.shape[i] for i in range(2)] == [3, 5]
    assert (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes) == (0, 16, 1)
    assert not tensor.strides  # NULL: compact row-major
    live = len(dlpack._live)
    del capsule  # never consumed: the capsule's destructor lets the Array go
    assert len(dlpack._live) == live - 1
    with pytest.raises(BufferError, match="not"):
        a.__dlpack__(dl_device=(1, 0))


def test_foreign_gpu_memory_is_checked_like_host_arrays(program, fake):
    context, device = fake
    y = context.alloc(64)
    program.axpy(Foreign(y, (16,)), Foreign(y, (16,)), np.float32(1), global_size=16, device=device)
    assert struct.unpack("<Q", context.launches[-1][4][0])[0] == y
    x = Foreign(y, (16,))
    cases = [
        (Foreign(y, (16,), readonly=True), "read-only"),
        (Foreign(y, (16,), typestr="<i4"), "got a GPU array of int32"),
        (Foreign(y, (4, 4), strides=(4, 16)), "not C-contiguous"),
        (Foreign(y + 2, (16,)), "aligned"),
    ]
    for bad, message in cases:
        with pytest.raises(LaunchError, match=message):
            program.axpy(bad, x, np.float32(1), global_size=16, device=device)
    # Size-1 dimensions may have any stride (torch reports them so).
    column = Foreign(y, (16, 1), strides=(4, 99))
    program.axpy(column, x, np.float32(1), global_size=16, device=device)


GPUS = [d for d in spirvjit.devices() if d.kind != "cpu"]


@pytest.mark.gpu
@pytest.mark.skipif(not GPUS, reason="no GPU: neither the CUDA driver nor HIP lists a device")
@pytest.mark.parametrize("device", GPUS, ids=[d.target.name for d in GPUS])
def test_arrays_stay_on_a_real_gpu(program, device):
    x = asarray(np.arange(1000, dtype=np.float32), device=device)
    y = zeros(1000, device=device)
    for _ in range(3):
        program.axpy(y, x, np.float32(0.5), global_size=1000, device=device)
    np.testing.assert_allclose(y.to_numpy(), 1.5 * np.arange(1000, dtype=np.float32))
