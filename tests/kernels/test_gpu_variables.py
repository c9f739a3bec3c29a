"""Program-scope variables (HIP ``__device__`` / ``__constant__``) on GPUs without a GPU.

The code objects are real (ld.lld's AMD code object, ptxas's cubin); the driver is a fake
that does what HIP's and CUDA's loaders do with them: each loaded code object gets its
own device copy of every variable its ELF symbol table exports, initialised from the
file, found by name (hipModuleGetGlobal / cuModuleGetGlobal). Launches are recorded and
"run" the one thing the test needs: ``evaluate_poly`` adds its block count to
``blocks_done``, as the real kernel's atomicAdd per block does.
"""

from __future__ import annotations

import ctypes
import dataclasses
import re
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

import spirvjit
from spirvjit.backends import backend
from spirvjit.backends.gpu.driver import GpuDriverError
from spirvjit.device import Device
from spirvjit.errors import LaunchError
from spirvjit.target import parse_target
from spirvjit.toolchain import find_tool

CORPUS = Path(__file__).parent / "hip_corpus"


def exported_objects(image: bytes) -> dict[str, bytes]:
    """The data objects an ELF code object exports, with their initial bytes: the dynamic
    symbol table of an AMD code object (what the HSA loader reads), else the symbol table
    (a cubin)."""
    (shoff,) = struct.unpack_from("<Q", image, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", image, 0x3A)
    sections = [struct.unpack_from("<IIQQQQII", image, shoff + i * shentsize) for i in range(shnum)]
    kinds = [s[1] for s in sections]
    table = sections[kinds.index(11 if 11 in kinds else 2)]  # SHT_DYNSYM, else SHT_SYMTAB
    strings = sections[table[6]]
    found = {}
    for offset in range(table[4], table[4] + table[5], 24):
        name, info, _other, index, value, size = struct.unpack_from("<IBBHQQ", image, offset)
        if info != 0x11 or not 0 < index < len(sections):  # STB_GLOBAL, STT_OBJECT
            continue
        start = strings[4] + name
        symbol = image[start : image.index(b"\0", start)].decode()
        section = sections[index]
        if section[1] == 8:  # SHT_NOBITS: zeroes
            found[symbol] = bytes(size)
        else:
            at = section[4] + value - section[3]
            found[symbol] = image[at : at + size]
    return found


class Module:
    def __init__(self, context: FakeContext, image: bytes, what: str):
        self.context, self.image, self.what = context, image, what
        self.variables = {}
        for symbol, initial in exported_objects(image).items():
            address = context.alloc(len(initial))
            context.memory[address][:] = np.frombuffer(initial, np.uint8)
            self.variables[symbol] = (address, len(initial))

    def function(self, name):
        return (self, name)

    def global_variable(self, symbol):
        if symbol not in self.variables:
            raise GpuDriverError(f"looking up {symbol}", call="hipModuleGetGlobal", code=500)
        return self.variables[symbol]


class FakeContext:
    """Device memory as NumPy byte arrays; every call is logged."""

    def __init__(self):
        self.memory: dict[int, np.ndarray] = {}
        self.modules: list[Module] = []
        self.log: list[tuple] = []

    def load_module(self, image, what):
        self.modules.append(Module(self, image, what))
        return self.modules[-1]

    def alloc(self, nbytes):
        address = 0x1000 * (len(self.memory) + 1)
        self.memory[address] = np.zeros(max(nbytes, 1), dtype=np.uint8)
        return address

    def free(self, address):
        pass

    def _bytes(self, address, nbytes):
        base = max(a for a in self.memory if a <= address)
        return self.memory[base][address - base : address - base + nbytes]

    def copy_to_device(self, dst, src, nbytes, stream=None):
        self.log.append(("to_device", dst, stream))
        self._bytes(dst, nbytes)[:] = np.frombuffer(ctypes.string_at(src, nbytes), np.uint8)

    def copy_to_host(self, dst, src, nbytes, stream=None):
        self.log.append(("to_host", src, stream))
        ctypes.memmove(dst, self._bytes(src, nbytes).tobytes(), nbytes)

    def copy_device_to_device(self, dst, src, nbytes, stream=None):
        self.log.append(("device_to_device", dst, src, stream))
        self._bytes(dst, nbytes)[:] = self._bytes(src, nbytes)

    def launch(self, function, global_size, local_size, shared, params, stream=None):
        module, name = function
        self.log.append(("launch", name, module, stream))
        if "evaluate_poly" in name:
            address, _ = module.variables["blocks_done"]
            counter = self._bytes(address, 4).view(np.uint32)
            counter += global_size[0] // local_size[0]

    def synchronize(self):
        pass

    def create_stream(self):
        return 0x7F00_0000_0000

    def synchronize_stream(self, stream):
        self.log.append(("synchronize_stream", stream))

    def destroy_stream(self, stream):
        pass


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
    assert counter.read()[0] == 4
    # Another kernel's code object: it holds its own copy, brought up to date first.
    program.apply_scale(y, np.int32(1000), grid=4, block=256, device=device)
    launched = [entry for entry in context.log if entry[0] == "launch"][-1][2]
    address, _ = launched.variables["scale"]
    np.testing.assert_array_equal(context._bytes(address, 8).view(np.float32), [2.0, 1.0])
    counter.write(10)  # lands in apply_scale's code object, the newest copy
    program.evaluate_poly(x, y, np.int32(1000), grid=2, block=256, device=device)
    assert counter.read()[0] == 12
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
    assert value[0] == 9
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
