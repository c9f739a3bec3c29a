"""The GPU launch path without a GPU: a fake driver context records what a launch
would send (tests/unit/test_gpu_drivers.py covers the drivers' C calls)."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from harness import build

import spirvjit
from spirvjit.backends import backend
from spirvjit.backends.gpu.abi import launch_specialization
from spirvjit.backends.gpu.driver import GpuDeviceInfo
from spirvjit.backends.gpu.launch import launch_facts
from spirvjit.device import Device
from spirvjit.target import parse_target

SOURCE = """
kernel void k(global float* out, constant float* in, local float* tmp, float a, int4 v) {
    tmp[get_local_id(0)] = in[get_global_id(0)] * a + v.x;
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = tmp[0];
}
"""


class LoadedFunction(str):
    """A kernel's name, as the driver's function handle, and the code it came from."""

    image: bytes


class FakeModule:
    def __init__(self, image: bytes):
        self.image = image

    def function(self, name):
        found = LoadedFunction(name)
        found.image = self.image
        return found


class FakeContext:
    """Device memory as a dict of NumPy byte arrays; launches are recorded, not run.

    Streams and events are recorded too: ``launches`` holds each launch with the stream
    it was queued on (None: the synchronous path), ``events`` what each call did."""

    def __init__(self):
        self.memory: dict[int, np.ndarray] = {}
        self.images: list[bytes] = []
        self.launches = []
        self.freed = []
        self.streams: list[int] = []  # every stream created
        self.log: list[tuple] = []  # (call, arguments) of the stream and event calls
        self.synchronized = 0  # synchronize() calls (the synchronous launch's wait)

    def load_module(self, image, what):
        self.image = image
        self.images.append(image)
        return FakeModule(image)

    def alloc(self, nbytes):
        address = 0x1000 * (len(self.memory) + 1)
        self.memory[address] = np.zeros(nbytes, dtype=np.uint8)
        return address

    def copy_to_device(self, dst, src, nbytes, stream=None):
        self.log.append(("copy_to_device", dst, nbytes, stream))
        self.memory[dst][:] = np.ctypeslib.as_array(
            (np.ctypeslib.ctypes.c_uint8 * nbytes).from_address(src)
        )

    def copy_to_host(self, dst, src, nbytes, stream=None):
        self.log.append(("copy_to_host", src, nbytes, stream))
        (np.ctypeslib.ctypes.c_uint8 * nbytes).from_address(dst)[:] = bytes(self.memory[src])

    def launch(self, function, global_size, local_size, shared, params, stream=None):
        self.launches.append((function, global_size, local_size, shared, params))
        self.log.append(("launch", function, stream))
        # "Run" the kernel: out[0] = 42, so the copy back is visible.
        out = struct.unpack("<Q", params[0])[0]
        self.memory[out][:4] = np.frombuffer(np.float32(42).tobytes(), np.uint8)

    def synchronize(self):
        self.synchronized += 1

    def free(self, address):
        self.freed.append(address)

    def create_stream(self):
        self.streams.append(0x7F00_0000_0000 + 0x10 * len(self.streams))
        return self.streams[-1]

    def create_event(self):
        self.log.append(("create_event",))
        return 0x7E00_0000_0000 + len(self.log)

    def __getattr__(self, name):
        # destroy_stream, synchronize_stream, record_event, ...: recorded.
        if name in (
            "destroy_stream",
            "synchronize_stream",
            "record_event",
            "synchronize_event",
            "destroy_event",
        ):
            return lambda *args: self.log.append((name, *args))
        if name == "elapsed_ms":
            return lambda start, end: self.log.append((name, start, end)) or 1.25
        raise AttributeError(name)


@pytest.fixture
def fake(monkeypatch) -> tuple[FakeContext, Device]:
    context = FakeContext()
    monkeypatch.setattr(backend("nvptx"), "context", lambda device: context)
    # A device per test: kernels keep the code they loaded per device.
    device = Device(
        f"fake H200 {id(context)}", "nvidia", parse_target("sm_90"), 132, 1024, 228 * 1024
    )
    return context, device


def test_arguments_are_packed_as_the_entry_point_takes_them(fake):
    context, device = fake
    program = build(SOURCE)
    out = np.zeros(512, dtype=np.float32)
    inp = np.arange(512, dtype=np.float32)
    v = np.array([1, 2, 3, 4], dtype=np.int32)
    program.k(
        out, inp, spirvjit.LocalMemory(1024), np.float32(2.0), v,
        global_size=512, local_size=128, global_offset=None, device=device,
    )  # fmt: skip
    assert context.image[:4] == b"\x7fELF"  # the cubin ptxas made for sm_90
    (function, gs, ls, shared, params) = context.launches[0]
    assert (function, gs, ls, shared) == ("k", (512, 1, 1), (128, 1, 1), 1024)
    out_address, in_address = (struct.unpack("<Q", p)[0] for p in params[:2])
    assert bytes(context.memory[in_address]) == inp.tobytes()
    assert params[2] == struct.pack("<I", 0)  # first __local buffer at offset 0
    assert params[3] == struct.pack("<f", 2.0)
    assert params[4] == v.tobytes()
    assert params[5] == struct.pack("<QQQI", 0, 0, 0, 1)  # global offset, work_dim
    assert out[0] == 42  # the written buffer came back
    assert sorted(context.freed) == sorted(context.memory)  # nothing leaks


def test_local_size_is_chosen_to_divide_the_global_size(fake):
    context, device = fake
    program = build(SOURCE)
    out, inp = np.zeros(600, np.float32), np.zeros(600, np.float32)
    v = np.zeros(4, np.int32)
    program.k(out, inp, spirvjit.LocalMemory(64), np.float32(1), v, global_size=600, device=device)
    (_, gs, ls, _, _) = context.launches[0]
    assert gs[0] % ls[0] == 0 and ls[0] <= 256


def test_too_much_local_memory_is_refused_before_launch(fake):
    context, device = fake
    program = build(SOURCE)
    out, inp, v = np.zeros(64, np.float32), np.zeros(64, np.float32), np.zeros(4, np.int32)
    with pytest.raises(spirvjit.LaunchError, match="bytes of local memory"):
        program.k(
            out, inp, spirvjit.LocalMemory(1 << 20), np.float32(1), v,
            global_size=64, device=device,
        )  # fmt: skip
    assert not context.launches and sorted(context.freed) == sorted(context.memory)


def test_devices_lists_gpus_the_drivers_report(monkeypatch):
    from spirvjit.backends.amdgpu import hip
    from spirvjit.backends.nvptx import cuda

    h200 = GpuDeviceInfo("nvidia", 0, "NVIDIA H200", "sm_90", 132, 1024, 232448)
    mi300 = GpuDeviceInfo(
        "amd", 1, "AMD Instinct MI300X", "gfx942:sramecc+:xnack-", 304, 1024, 65536
    )
    monkeypatch.setattr(cuda, "devices", lambda: [h200])
    monkeypatch.setattr(hip, "devices", lambda: [mi300])
    host, nvidia, amd = spirvjit.devices()
    assert host.kind == "cpu"
    assert (nvidia.kind, nvidia.target.name, nvidia.index) == ("nvidia", "sm_90", 0)
    assert (amd.kind, amd.target.arch, amd.target.features) == ("amd", "gfx942", "+sramecc,-xnack")


def test_a_gpu_program_finds_its_device_once(fake, monkeypatch):
    context, device = fake
    calls = []

    def listed():
        calls.append(1)
        return [device]

    monkeypatch.setattr(backend("nvptx"), "devices", listed)
    program = build(SOURCE).for_target(device.target)
    out, inp, v = np.zeros(64, np.float32), np.zeros(64, np.float32), np.zeros(4, np.int32)
    for _ in range(3):
        program.k(out, inp, spirvjit.LocalMemory(64), np.float32(1), v, global_size=64)
    assert len(context.launches) == 3 and len(calls) == 1


TWO_KERNELS = """
kernel void big(global float* out) {
    local float table[16384];  // 64 KiB of static __local memory, in this kernel only
    table[get_local_id(0)] = 1.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = table[0];
}
kernel void small(global float* out, local float* tmp) {
    tmp[get_local_id(0)] = 2.0f;
    out[get_global_id(0)] = tmp[0];
}
"""


def test_another_kernels_static_local_memory_does_not_count(fake):
    context, device = fake
    program = build(TWO_KERNELS)
    out = np.zeros(64, np.float32)
    # 200 KiB of __local argument: fits the device's 228 KiB on its own, not with the
    # other kernel's 64 KiB table, which this kernel's code does not have.
    program.small(out, spirvjit.LocalMemory(200 * 1024), global_size=64, device=device)
    assert context.launches[0][3] == 200 * 1024


def _max_flat_workgroup_size(image: bytes, tmp_path) -> int:
    import re
    import subprocess

    from spirvjit.toolchain import require_tool

    path = tmp_path / "k.hsaco"
    path.write_bytes(image)
    notes = subprocess.run(
        [require_tool("llvm-readelf", "notes"), "--notes", str(path)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return int(re.search(r"max_flat_workgroup_size:\s+(\d+)", notes).group(1))


def test_amd_kernels_are_built_for_256_and_larger_groups_get_a_variant(monkeypatch, tmp_path):
    # Built for 1..1024 work-items, every kernel had a quarter of the register budget of
    # clang's 1..256; a launch with larger groups now loads a variant built for them.
    context = FakeContext()
    monkeypatch.setattr(backend("amdgpu"), "context", lambda device: context)
    device = Device("fake MI300X", "amd", parse_target("gfx942"), 304, 1024, 64 * 1024)
    program = build("kernel void k(global float* out) { out[get_global_id(0)] = 1.0f; }")
    out = np.zeros(4096, np.float32)
    program.k(out, global_size=4096, local_size=256, device=device)
    program.k(out, global_size=4096, local_size=128, device=device)
    # The variant for these launches' facts only (the generic one is not needed).
    assert len(context.images) == 1
    assert _max_flat_workgroup_size(context.images[0], tmp_path) == 256
    program.k(out, global_size=4096, local_size=1024, device=device)
    program.k(out, global_size=4096, local_size=512, device=device)
    assert len(context.images) == 2  # the variant is loaded once
    assert _max_flat_workgroup_size(context.images[1], tmp_path) == 1024
    # A launch with an offset and a partial group runs the generic code object.
    program.k(out, global_size=4000, local_size=128, global_offset=(8,), device=device)
    assert len(context.images) == 3
    assert _max_flat_workgroup_size(context.images[2], tmp_path) == 256
    assert [launch[2][0] for launch in context.launches] == [256, 128, 1024, 512, 128]


SAXPY = """
kernel void saxpy(global float* y, global const float* x, float a) {
    size_t i = get_global_id(0);
    y[i] = a * x[i] + y[i];
}
"""


def test_each_launch_runs_the_variant_of_its_launch_facts(fake):
    # The generic variant adds a 64-bit global offset to every id and computes ids in 64
    # bits; launches that need neither run a variant specialised for their facts.
    context, device = fake
    program = build(SAXPY)
    ours = program.for_target(device.target)
    y, x = np.zeros(1024, np.float32), np.zeros(1024, np.float32)

    def image_of(**sizes) -> bytes:
        program.saxpy(y, x, np.float32(2), device=device, **sizes)
        return context.launches[-1][0].image

    def variant(*facts) -> bytes:
        return ours.object_code("saxpy", None, launch_specialization(facts))[0]

    fast = image_of(global_size=1024, local_size=128)
    generic = ours.object_code("saxpy")[0]
    assert fast == variant("ids32", "uniform", "zero_offset") and fast != generic
    assert image_of(global_size=1024, local_size=128, global_offset=(64,)) == variant(
        "ids32", "uniform"
    )
    assert image_of(global_size=1000, local_size=100) == fast  # same facts: same code
    # Ids of 2**31 and more need 64-bit arithmetic.
    assert image_of(global_size=2**31, local_size=256) == variant("uniform", "zero_offset")
    assert image_of(global_size=2**31 - 256, local_size=256, global_offset=(256,)) == variant(
        "uniform"
    )
    assert len(context.images) == 4  # four variants, each once; no generic one
    assert image_of(global_size=512, local_size=64) == fast
    assert len(context.images) == 4
    # A launch that promises nothing runs the generic code object.
    assert image_of(global_size=1000, local_size=128, global_offset=(2**31,)) == generic
    assert len(context.images) == 5


def test_the_first_launch_compiles_only_the_variant_it_runs(fake, monkeypatch):
    # It compiled the generic variant at load, then the specialised one it ran: twice
    # the JIT time of the first launch for code it did not use.
    from spirvjit import jit

    context, device = fake
    compiled = []
    compile_kernel = jit.compile_kernel

    def counting(translation, target, symbol, name, times, specialization, stem):
        compiled.append(specialization)
        return compile_kernel(translation, target, symbol, name, times, specialization, stem)

    monkeypatch.setattr(jit, "compile_kernel", counting)
    program = build(SAXPY.replace("saxpy", "saxpy_once"))
    y, x = np.zeros(1024, np.float32), np.zeros(1024, np.float32)
    program.saxpy_once(y, x, np.float32(2), global_size=1024, local_size=128, device=device)
    assert compiled == [launch_specialization(("ids32", "uniform", "zero_offset"))]
    assert len(context.images) == 1
    # A kernel whose generic variant is cached loads it at once, as before.
    other = Device("fake H200 #2", "nvidia", parse_target("sm_90"), 132, 1024, 228 * 1024)
    program.for_target(device.target).object_code("saxpy_once")  # compiles, caches
    assert len(compiled) == 2
    # compile() loads the generic variant and the common launch's (both cached now).
    program.saxpy_once.compile(other)
    assert len(context.images) == 3 and len(compiled) == 2
    # compile() of a kernel nothing compiled before compiles both now, so that neither
    # the common launch nor any other compiles afterwards.
    fresh = build(SAXPY.replace("saxpy", "saxpy_ahead"))
    fresh.saxpy_ahead.compile(device)
    common = launch_specialization(("ids32", "uniform", "zero_offset"))
    assert compiled[2:] == [(), common] and len(context.images) == 5
    y, x = np.zeros(1024, np.float32), np.zeros(1024, np.float32)
    fresh.saxpy_ahead(y, x, np.float32(2), global_size=1024, device=device)
    assert len(compiled) == 4 and len(context.images) == 5
    assert context.launches[-1][0].image == context.images[-1]  # the common launch's code


def test_launch_facts_of_partial_groups_and_offsets():
    assert launch_facts((1024, 1, 1), (128, 1, 1), (0, 0, 0)) == (
        "ids32", "uniform", "zero_offset",
    )  # fmt: skip
    assert launch_facts((1000, 1, 1), (128, 1, 1), (0, 0, 0)) == ("ids32", "zero_offset")
    # The partial last group's ids reach 1024 + offset.
    assert launch_facts((1000, 1, 1), (128, 1, 1), (2**31 - 1024, 0, 0)) == ()
    assert launch_facts((1000, 1, 1), (128, 1, 1), (2**31 - 1025, 0, 0)) == ("ids32",)
    assert launch_facts((64, 2**31, 1), (64, 1, 1), (0, 0, 0)) == ("uniform", "zero_offset")
    assert launch_facts((64, 64, 1), (64, 1, 1), (0, 0, 5)) == ("ids32", "uniform")
