"""Program-scope variables (HIP ``__device__`` / ``__constant__``) on GPUs without a GPU:
real code objects, a fake driver (``fake_gpu.py``)."""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from fake_gpu import FakeContext

import spirvjit
from spirvjit.backends import backend
from spirvjit.device import Device
from spirvjit.errors import LaunchError
from spirvjit.target import parse_target
from spirvjit.toolchain import find_tool

CORPUS = Path(__file__).parent / "hip_corpus"


@pytest.fixture(scope="module")
def program():
    return spirvjit.compile_hip(CORPUS / "globals.hip")


DEVICES = {
    "gfx942": ("amdgpu", Device("fake MI300X", "amd", parse_target("gfx942"), 304, 1024, 65536)),
    "sm_90": ("nvptx", Device("fake H200", "nvidia", parse_target("sm_90"), 132, 1024, 232448)),
}


@pytest.fixture(params=sorted(DEVICES))
def fake(request, monkeypatch):
    kind, device = DEVICES[request.param]
    # A fresh device per test: programs keep their loaded kernels per device.
    device = dataclasses.replace(device, name=f"{device.name} {request.node.name}")
    context = FakeContext()
    monkeypatch.setattr(backend(kind), "context", lambda device: context)
    return context, device


def test_variables_are_one_value_across_kernels_and_the_host(program, fake):
    context, device = fake
    poly = program.global_variable("poly", device=device)
    # Read before any launch: a code object is loaded and its initial value read.
    np.testing.assert_array_equal(poly.read(), [1.0, -0.5, 0.25, -0.125])
    assert (poly.dtype, poly.shape, poly.nbytes) == (np.float32, (4,), 16)
    np.testing.assert_array_equal(np.asarray(poly), poly.read())
    counter = program.global_variable("blocks_done", np.uint32, device=device)
    scale = program.global_variable("scale", device=device)
    counter.write(0)
    scale.write([2.0, 1.0])
    x, y = np.zeros(1000, np.float32), np.zeros(1000, np.float32)
    program.evaluate_poly(x, y, np.int32(1000), grid=4, block=256, device=device)
    assert int(counter.read()) == 4
    # Another kernel's code object: it holds its own copy, brought up to date first.
    program.apply_scale(y, np.int32(1000), grid=4, block=256, device=device)
    launched = [entry for entry in context.log if entry[0] == "launch"][-1][2]
    address, _ = launched.variables["scale"]
    np.testing.assert_array_equal(context._bytes(address, 8).view(np.float32), [2.0, 1.0])
    counter.write(10)  # lands in apply_scale's code object, the newest copy
    program.evaluate_poly(x, y, np.int32(1000), grid=2, block=256, device=device)
    assert int(counter.read()) == 12
    assert int(program.global_variable("blocks_done", device=device).read()) == 12
    # The symbol the driver was asked for is what the code object exports.
    names = {s for m in context.modules for s in m.variables}
    assert {"poly", "scale", "blocks_done"} <= names


def test_variable_copies_are_ordered_on_the_stream(program, fake):
    context, device = fake
    counter = program.global_variable("blocks_done", np.uint32, device=device)
    stream = spirvjit.Stream(device)
    counter.write(7, stream=stream)  # before any launch: kept, uploaded before the first
    x, y = (spirvjit.asarray(np.zeros(512, np.float32), device=device) for _ in range(2))
    program.evaluate_poly(x, y, np.int32(512), grid=2, block=256, device=device, stream=stream)
    value = counter.read(stream=stream)
    stream.synchronize()
    assert int(value) == 9
    # The written value goes in before the launch, the read after it, all on the stream.
    calls = [entry[0] for entry in context.log if entry[-1] == stream.handle]
    assert calls == ["to_device", "launch", "to_host", "synchronize_stream"]
    stream.close()


def test_unknown_variables_are_named_with_the_ones_there_are(program, fake):
    _context, device = fake
    with pytest.raises(LaunchError, match="nothing.*this program has blocks_done, poly, scale"):
        program.global_variable("nothing", device=device)


def _tool(name: str) -> str:
    path = find_tool(name) or find_tool(f"{name}-22")
    if path is None:
        pytest.skip(f"{name} is not installed")
    return path


def test_code_objects_export_every_variable_by_its_source_name(program, tmp_path):
    """O3 and linking must not internalise them: hipModuleGetGlobal and cuModuleGetGlobal
    find only exported symbols."""
    gfx = program.for_target(parse_target("gfx942"))
    image, _ = gfx.object_code(program.kernel_names[1])  # apply_scale uses only scale
    (tmp_path / "k.hsaco").write_bytes(image)
    symbols = subprocess.run(
        [_tool("llvm-readelf"), "--dyn-syms", str(tmp_path / "k.hsaco")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for name in ("poly", "scale", "blocks_done"):
        assert re.search(rf"OBJECT\s+GLOBAL\s+\w+\s+\d+\s+{name}$", symbols, re.M), symbols
    ptx = program.for_target(parse_target("sm_90")).assembly(program.kernel_names[1])
    for name in ("poly", "scale", "blocks_done"):
        assert re.search(rf"^\.visible \.global .*\b{name}\b", ptx, re.M), name


def test_the_host_cpu_form_has_the_same_interface_and_is_a_view(program):
    scale = program.global_variable("scale")
    assert isinstance(scale, np.ndarray) and scale.name == "scale"
    assert (scale.dtype, scale.shape, scale.nbytes) == (np.float32, (2,), 8)
    scale.write([2.0, 1.0])
    copy = scale.read()
    copy[0] = 5.0  # a copy: the variable keeps its value
    np.testing.assert_array_equal(program.global_variable("scale"), [2.0, 1.0])
    y = np.ones(300, np.float32)
    program.apply_scale(y, np.int32(300), grid=2, block=256)
    np.testing.assert_array_equal(y, 3.0)
