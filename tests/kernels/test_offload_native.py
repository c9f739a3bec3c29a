"""A clang offload bundle's native gfx entry runs on the AMD GPU it matches, under the
native-code policy; the amdgcnspirv entry is JIT-compiled everywhere else.

The bundle is real (clang-22 builds hip_corpus/globals.hip for gfx942 and amdgcnspirv);
the HIP driver is the fake of ``fake_gpu.py``, so what is checked is which code object
is loaded and what the launch passes, not the kernel's results.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fake_gpu import FakeContext

import spirvjit
from spirvjit.backends import backend
from spirvjit.backends.amdgpu.code_object import decode_msgpack, kernels, metadata_note
from spirvjit.device import Device
from spirvjit.errors import BinaryFormatError, LaunchError
from spirvjit.offload_bundle import describe_entries, entry_matches, native_entry, read_entries
from spirvjit.target import parse_target
from spirvjit.toolchain import find_tool

CORPUS = Path(__file__).parent / "hip_corpus"
GFX942 = "hipv4-amdgcn-amd-amdhsa--gfx942"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    from spirvjit.frontend.hip import INCLUDE_DIR

    clang = find_tool("clang")
    if clang is None:
        pytest.skip("clang-22 is not installed")
    out = tmp_path_factory.mktemp("native") / "globals.bundle"
    command = [clang, "-x", "hip", "--offload-arch=gfx942", "--offload-arch=amdgcnspirv"]
    command += ["-nogpuinc", "-nogpulib", "-use-spirv-backend", "-O2", f"-I{INCLUDE_DIR}"]
    command += ["--cuda-device-only", "-c", str(CORPUS / "globals.hip"), "-o", str(out)]
    subprocess.run(command, check=True)
    out.chmod(0o600)  # a safe location: owned by us, writable by nobody else
    return out


def native_image(bundle: Path) -> bytes:
    return next(e.data for e in read_entries(bundle.read_bytes()) if e.id == GFX942)


@pytest.fixture
def amd(monkeypatch, request):
    context = FakeContext()
    monkeypatch.setattr(backend("amdgpu"), "context", lambda device: context)
    name = f"fake MI300X {request.node.name}"  # kernels keep their code per device
    device = Device(name, "amd", parse_target("gfx942:sramecc+:xnack-"), 304, 1024, 65536)
    return context, device


def test_the_native_entry_runs_on_the_gpu_it_matches(bundle, amd):
    context, device = amd
    prog = spirvjit.load(bundle, native="always")
    x, y = np.ones(1000, np.float32), np.zeros(1000, np.float32)
    prog.evaluate_poly(x, y, np.int32(1000), grid=4, block=256, device=device)
    name, module, grid, block, params = context.launches[-1]
    assert module.image == native_image(bundle)  # clang's code object, not the JIT's
    assert (name, grid, block) == ("_Z13evaluate_polyPKfPfi", (1024, 1, 1), (256, 1, 1))
    # The kernel's own three arguments only: the HIP runtime fills the hidden ones.
    assert [len(p) for p in params] == [8, 8, 4]
    assert struct.unpack("<i", params[2]) == (1000,)
    assert prog.kernel("evaluate_poly").program.origins["_Z13evaluate_polyPKfPfi"] == "native"
    # Its __device__ variables are the code object's own symbols (clang's names).
    counter = prog.global_variable("blocks_done", np.uint32, device=device)
    assert int(counter.read()) == 4
    # HIP kernels have no global offset, and clang built these for whole groups.
    with pytest.raises(LaunchError, match="no global offset"):
        prog.evaluate_poly(x, y, np.int32(1000), global_size=1024, global_offset=4, device=device)
    with pytest.raises(LaunchError, match="whole groups"):
        prog.evaluate_poly(x, y, np.int32(1000), global_size=1000, local_size=256, device=device)


def test_a_hip_object_s_fatbin_runs_its_native_entry(bundle, amd):
    """hipcc's whole-program output: the bundle sits in the object's .hip_fatbin."""
    from spirvjit.frontend.hip import INCLUDE_DIR

    context, device = amd
    obj = bundle.with_suffix(".o")
    command = [find_tool("clang"), "-x", "hip", "--offload-arch=gfx942"]
    command += ["--offload-arch=amdgcnspirv", "-nogpuinc", "-nogpulib", "-use-spirv-backend"]
    command += ["-O1", f"-I{INCLUDE_DIR}", "-c", str(CORPUS / "globals.hip"), "-o", str(obj)]
    subprocess.run(command, check=True)
    prog = spirvjit.load(obj, native="always")
    assert [e.id for e in prog.offload_code] == [GFX942]
    y = np.zeros(256, np.float32)
    prog.apply_scale(y, np.int32(256), grid=1, block=256, device=device)
    assert context.launches[-1][1].image == prog.offload_code[0].data


def test_native_never_jits_the_amdgcnspirv_entry_instead(bundle, amd):
    context, device = amd
    prog = spirvjit.load(bundle, native="never")
    y = np.zeros(1000, np.float32)
    prog.apply_scale(y, np.int32(1000), grid=4, block=256, device=device)
    _name, module, _grid, _block, params = context.launches[-1]
    assert module.image != native_image(bundle)
    assert module.image.startswith(b"\x7fELF")  # the JIT's code object from the SPIR-V
    # spirvjit's entry point: the kernel's arguments, then offset and work dimension.
    assert [len(p) for p in params] == [8, 4, 28]


def test_trusted_refuses_a_bundle_others_can_write_with_one_warning(bundle, amd, tmp_path, caplog):
    context, device = amd
    shared = tmp_path / "shared.bundle"
    shared.write_bytes(bundle.read_bytes())
    shared.chmod(0o666)
    with caplog.at_level(logging.WARNING, logger="spirvjit"):
        prog = spirvjit.load(shared, native="trusted")
        spirvjit.load(shared, native="trusted")
    warnings = [r.getMessage() for r in caplog.records if "native gfx" in r.getMessage()]
    assert len(warnings) == 1 and "writable by group or others" in warnings[0]
    assert prog.offload_code == ()
    y = np.zeros(256, np.float32)
    prog.apply_scale(y, np.int32(256), grid=1, block=256, device=device)
    assert context.launches[-1][1].image != native_image(bundle)
    # Given as bytes, a bundle has no location to vouch for it (and no signature).
    assert spirvjit.load(bundle.read_bytes(), native="trusted").offload_code == ()
    assert len(spirvjit.load(bundle, native="trusted").offload_code) == (
        1 if os.getuid() in (0, bundle.stat().st_uid) else 0
    )


def test_a_device_the_entry_does_not_match_jits(bundle, amd, monkeypatch):
    context, _ = amd
    device = Device("fake W7900", "amd", parse_target("gfx1100"), 48, 1024, 65536)
    prog = spirvjit.load(bundle, native="always")
    y = np.zeros(256, np.float32)
    prog.apply_scale(y, np.int32(256), grid=1, block=256, device=device)
    assert context.launches[-1][1].image != native_image(bundle)


def test_the_metadata_note_gives_the_kernels_argument_layout(bundle):
    found = kernels(native_image(bundle))
    poly = found["_Z13evaluate_polyPKfPfi"]
    assert poly.symbol == "_Z13evaluate_polyPKfPfi.kd"
    assert [(a.offset, a.size, a.value_kind) for a in poly.explicit_args] == [
        (0, 8, "global_buffer"),
        (8, 8, "global_buffer"),
        (16, 4, "by_value"),
    ]
    assert poly.max_flat_workgroup_size == 1024 and poly.wavefront_size == 64
    # The same layout as llvm-readelf's reading of the note.
    readelf = find_tool("llvm-readelf")
    if readelf is not None:
        path = bundle.with_suffix(".hsaco")
        path.write_bytes(native_image(bundle))
        text = subprocess.run(
            [readelf, "--notes", str(path)], capture_output=True, text=True, check=True
        ).stdout
        assert f".kernarg_segment_size: {poly.kernarg_segment_size}" in text
        assert text.count(".value_kind:") == sum(len(k.args) for k in found.values())


@pytest.mark.parametrize(
    ("entry", "device", "matches"),
    [
        ("gfx942", "gfx942:sramecc+:xnack-", True),
        ("gfx942:xnack-", "gfx942:sramecc+:xnack-", True),
        ("gfx942:xnack+", "gfx942:sramecc+:xnack-", False),
        ("gfx942:sramecc+:xnack-", "gfx942:sramecc+:xnack-", True),
        ("gfx942:xnack-", "gfx942", False),  # the device does not say: no promise kept
        ("gfx90a", "gfx942:sramecc+:xnack-", False),
        ("gfx1100", "gfx1100", True),
    ],
)
def test_entries_match_devices_as_the_hip_runtime_does(entry, device, matches):
    assert entry_matches(entry, device) is matches


def test_the_most_specific_matching_entry_wins():
    from spirvjit.offload_bundle import BundleEntry

    entries = [
        BundleEntry("hipv4-amdgcn-amd-amdhsa--gfx942", b"any"),
        BundleEntry("hipv4-amdgcn-amd-amdhsa--gfx942:xnack-", b"no xnack"),
        BundleEntry("hipv4-amdgcn-amd-amdhsa--gfx942:xnack+", b"xnack"),
    ]
    assert native_entry(entries, "gfx942:sramecc+:xnack-").data == b"no xnack"
    assert native_entry(entries, "gfx942:sramecc+:xnack+").data == b"xnack"
    assert native_entry(entries, "gfx90a:xnack-") is None


def test_inspect_says_which_entry_runs_where(bundle):
    listing = subprocess.run(
        [sys.executable, "-m", "spirvjit", "inspect", str(bundle)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "SPIRVJIT_NATIVE": "never"},
    ).stdout
    assert f"{GFX942}: " in listing and "native AMD code object for gfx942" in listing
    assert "native entries: refused: native code is off (native=never)" in listing
    assert "every other device: hipv4-spirv64-amd-amdhsa--amdgcnspirv (JIT-compiled)" in listing
    assert "here, " in listing  # the host CPU at least
    # Allowed, and on an AMD GPU the entry matches (the CLI's listing, in-process).
    entries = read_entries(bundle.read_bytes())
    gpu = Device("MI300X", "amd", parse_target("gfx942:sramecc+:xnack-"), 304, 1024, 65536)
    listing = describe_entries(entries, "globals.bundle", trust=(True, "ok"), devices=[gpu])
    assert f"here, MI300X (gfx942:sramecc+:xnack-): {GFX942} (native code)" in listing
    assert f"AMD GPUs matching gfx942: {GFX942} (native code)" in listing


# --- the metadata reader on hostile input ---------------------------------------------------


def test_msgpack_reader_is_bounded():
    assert decode_msgpack(b"\x82\xa1a\x01\xa1b\x92\xc3\xcd\x01\x00") == {"a": 1, "b": [True, 256]}
    with pytest.raises(BinaryFormatError, match="nested more than"):
        decode_msgpack(b"\x91" * 100 + b"\x00")
    with pytest.raises(BinaryFormatError, match="container of 4294967295 elements"):
        decode_msgpack(b"\xdd\xff\xff\xff\xff")
    with pytest.raises(BinaryFormatError, match="the note ends first"):
        decode_msgpack(b"\xdb\x00\x01\x00\x00abc")
    with pytest.raises(BinaryFormatError, match="type byte 0xc7"):
        decode_msgpack(b"\xc7\x01\x01\x00")
    with pytest.raises(BinaryFormatError, match="bytes after the value"):
        decode_msgpack(b"\x01\x02")


def test_every_damaged_code_object_is_refused_cleanly(bundle):
    """Truncations and byte flips of a real code object: kernels() returns or raises
    BinaryFormatError, nothing else (a fixed-seed sample)."""
    image = native_image(bundle)
    note = metadata_note(image)
    start = image.index(note)
    rng = np.random.default_rng(14)
    for cut in rng.integers(0, len(image), 40):
        with contextlib.suppress(BinaryFormatError):
            kernels(image[:cut])
    for where in rng.integers(start, start + len(note), 300):
        damaged = bytearray(image)
        damaged[where] ^= int(rng.integers(1, 256))
        with contextlib.suppress(BinaryFormatError):
            kernels(bytes(damaged))


def test_a_code_object_that_disagrees_with_the_spirv_is_not_run(bundle, amd, caplog):
    context, device = amd
    prog = spirvjit.load(bundle, native="always")
    other = dataclasses.replace(prog.offload_code[0], data=native_image(bundle)[:200])
    prog.offload_code = (other,)
    y = np.zeros(256, np.float32)
    with caplog.at_level(logging.WARNING, logger="spirvjit"):
        prog.apply_scale(y, np.int32(256), grid=1, block=256, device=device)
    assert "JIT-compiling it from the amdgcnspirv entry" in caplog.text
    assert context.launches[-1][1].image != native_image(bundle)
