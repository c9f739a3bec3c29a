"""benchmarks/gpu_timings.py without a GPU: it says so and writes nothing, and the native
build's arguments it would launch with agree with clang's code object (its metadata)."""

from __future__ import annotations

import struct
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import spirvjit
from spirvjit.toolchain import find_tool

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
# The script puts benchmarks/ on sys.path to find cases.py; not left there for others.
_saved = list(sys.path)
try:
    sys.path.insert(0, str(BENCHMARKS))
    import gpu_timings
finally:
    sys.path[:] = _saved


class FakeDeviceArray:
    """Device memory as a GPU array library describes it (no GPU behind it)."""

    def __init__(self, address: int, n: int):
        self.__cuda_array_interface__ = {
            "data": (address, False),
            "shape": (n,),
            "typestr": "<f4",
            "version": 3,
        }


def test_without_a_gpu_nothing_is_timed_or_written(tmp_path, capsys, monkeypatch):
    if gpu_timings.gpus():
        pytest.skip("a GPU is present: gpu_timings.py times on it")
    monkeypatch.setattr(sys, "argv", ["gpu_timings.py", "--out", str(tmp_path)])
    assert gpu_timings.main() == 0
    assert "no AMD or NVIDIA GPU here" in capsys.readouterr().out
    assert not list(tmp_path.iterdir())


@pytest.mark.skipif(
    find_tool("clang") is None or find_tool("ld.lld") is None, reason="needs clang-22, ld.lld"
)
def test_native_amd_reduction_arguments_match_its_metadata(tmp_path):
    # reduction(global const float*, global float*, local float*, uint): buffers as
    # addresses, the __local pointer as the LDS address after the static LDS, n by value.
    case = gpu_timings.CASES["reduction"]
    device = SimpleNamespace(kind="amd", target=spirvjit.parse_target("gfx942"))
    image, ptx = gpu_timings.native_image(case, device, tmp_path)
    assert image.startswith(b"\x7fELF") and ptx == ""
    args = [
        FakeDeviceArray(0x10000, 64),
        FakeDeviceArray(0x20000, 4),
        spirvjit.LocalMemory(256 * 4),
        np.uint32(64),
    ]
    params, shared = gpu_timings.native_params(case, device, image, ptx, args, ctx=None)
    assert params == [
        struct.pack("<Q", 0x10000),
        struct.pack("<Q", 0x20000),
        struct.pack("<I", 0),  # no static LDS in reduction
        struct.pack("<I", 64),
    ]
    assert shared == 1024
    with pytest.raises(gpu_timings.Skip, match="other arguments"):
        gpu_timings.native_params(case, device, image, ptx, args[:3], ctx=None)
