"""Kernel arguments from the Python array ecosystem, used in place (no copies): the
buffer protocol, __array_interface__, DLPack and torch CPU tensors; and the errors for
what cannot be used."""

from __future__ import annotations

import array

import numpy as np
import pytest

import spirvjit

SCALE = """
kernel void scale(global float* y, global const float* x, float a) {
    size_t i = get_global_id(0);
    y[i] = a * x[i];
}
kernel void bump(global uchar* b) { b[get_global_id(0)] += 1; }
"""


@pytest.fixture(scope="module")
def program():
    return spirvjit.compile_opencl(SCALE, producer="translator")


class ArrayInterface:
    """Exposes an array through ``__array_interface__`` only."""

    def __init__(self, data: np.ndarray):
        self._data = data
        self.__array_interface__ = data.__array_interface__


class DLPackOnly:
    """Exposes an array through DLPack only, reporting ``device``."""

    def __init__(self, data: np.ndarray, device=(1, 0)):
        self._data, self._device = data, device

    def __dlpack__(self, **kwargs):
        return self._data.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._device


def test_buffer_protocol_objects_are_used_in_place(program):
    x = array.array("f", [1.0, 2.0, 3.0, 4.0])
    y = array.array("f", [0.0] * 4)
    program.scale(y, memoryview(x), np.float32(3), global_size=4)
    assert list(y) == [3.0, 6.0, 9.0, 12.0]
    raw = bytearray(b"\x00\x01\x02")
    program.bump(raw, global_size=3)
    assert raw == bytearray(b"\x01\x02\x03")


def test_array_interface_and_dlpack_objects_are_used_in_place(program):
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    program.scale(ArrayInterface(y), DLPackOnly(x), np.float32(2), global_size=8)
    assert (y == 2 * x).all()


def test_what_cannot_be_used_is_named(program):
    y = np.zeros(4, np.float32)
    with pytest.raises(spirvjit.LaunchError, match="lives on CUDA device 0"):
        program.scale(y, DLPackOnly(y, (2, 0)), np.float32(1), global_size=4)
    with pytest.raises(spirvjit.LaunchError, match="a list is not an array"):
        program.scale(y, [1.0, 2.0], np.float32(1), global_size=4)
    with pytest.raises(spirvjit.LaunchError, match="read-only"):
        program.bump(memoryview(b"abc"), global_size=3)
    with pytest.raises(spirvjit.LaunchError, match="got an array of uint8"):
        program.scale(bytearray(16), y, np.float32(1), global_size=4)


def test_torch_cpu_tensors_run_in_place(program):
    torch = pytest.importorskip("torch")
    x = torch.arange(16, dtype=torch.float32)
    y = torch.zeros(16, dtype=torch.float32)
    before = y.data_ptr()
    program.scale(y, x, np.float32(0.5), global_size=16)
    assert y.data_ptr() == before and torch.equal(y, x * 0.5)
    with pytest.raises(spirvjit.LaunchError, match="require"):
        program.scale(y, x.clone().requires_grad_(), np.float32(1), global_size=16)
    with pytest.raises(spirvjit.LaunchError, match="C-contiguous"):
        program.scale(torch.zeros(32)[::2], x, np.float32(1), global_size=16)
    with pytest.raises(spirvjit.LaunchError, match="float64"):
        program.scale(y, x.double(), np.float32(1), global_size=16)
