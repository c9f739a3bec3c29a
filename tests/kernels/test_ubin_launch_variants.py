"""A unified binary's GPU code for the common launch (docs/ubin.md#variants): shipped next
to the generic code, run by the launches that keep its launch facts, never compiled at
run time. Real code objects (ptxas, ld.lld), a fake driver (``fake_gpu.py``)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import threading
from pathlib import Path

import numpy as np
import pytest
from fake_gpu import FakeContext

import spirvjit
from spirvjit import jit
from spirvjit.backends import backend
from spirvjit.backends.gpu.abi import LAUNCH_FACTS
from spirvjit.cache.key import compiler_digest, llvm_version
from spirvjit.device import Device
from spirvjit.ubin import format as fmt
from spirvjit.ubin.describe import describe, render
from spirvjit.ubin.reader import UnifiedBinary, read_file
from spirvjit.ubin.writer import write_bytes

# Named axpy, not test_gpu_launch.py's saxpy: its code must not be in the in-memory cache
# when that test runs.
SAXPY = """
kernel void axpy(global float* y, global const float* x, float a) {
    size_t i = get_global_id(0);
    y[i] = a * x[i] + y[i];
}
"""
# Written by spirvjit 0.1 before launch facts (format version 1): saxpy's generic sm_90 code.
OLD_FILE = Path(__file__).parents[1] / "data" / "ubin" / "saxpy_sm90_v1.ubin"

GFX942, SM_90 = spirvjit.parse_target("gfx942"), spirvjit.parse_target("sm_90")
DEVICES = {
    "gfx942": ("amdgpu", Device("fake MI300X", "amd", GFX942, 304, 1024, 65536)),
    "sm_90": ("nvptx", Device("fake H200", "nvidia", SM_90, 132, 1024, 232448)),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """saxpy built once per GPU target, with the common launch's code (the default)."""
    out = {}
    for name in DEVICES:
        out[name] = tmp_path_factory.mktemp("ubin") / f"saxpy-{name}.ubin"
        spirvjit.build(SAXPY, out[name], targets=[name])
    return out


@pytest.fixture(params=sorted(DEVICES))
def fake(request, monkeypatch):
    kind, device = DEVICES[request.param]
    # A fresh device per test: programs keep their loaded kernels per device.
    device = dataclasses.replace(device, name=f"{device.name} {request.node.name}")
    context = FakeContext()
    monkeypatch.setattr(backend(kind), "context", lambda device: context)
    return context, device


@pytest.fixture
def compiled(monkeypatch) -> list:
    """Every kernel the JIT compiles from now on (its specialization)."""
    found = []
    compile_kernel = jit.compile_kernel

    def counting(translation, target, symbol, name, times, specialization, stem):
        found.append((name, specialization))
        return compile_kernel(translation, target, symbol, name, times, specialization, stem)

    monkeypatch.setattr(jit, "compile_kernel", counting)
    return found


def _objects(path: Path, target: str) -> dict[tuple[str, ...], bytes]:
    """The binary's code of its kernel (axpy, or the old file's saxpy) for ``target``, by
    launch facts."""
    binary = read_file(path)
    return {
        v.launch_facts: v.objects[binary.kernels[0].name]
        for v in binary.variants
        if v.target == spirvjit.parse_target(target)
    }


def _launch(program, device, context, **sizes) -> bytes:
    """Launches the program's kernel; the code object it ran."""
    y, x = np.zeros(1024, np.float32), np.zeros(1024, np.float32)
    program.kernel(program.kernel_names[0])(y, x, np.float32(2), device=device, **sizes)
    return context.launches[-1][1].image


def test_build_ships_generic_and_common_launch_code(built):
    for name, path in built.items():
        binary = read_file(path)
        assert binary.version == fmt.LAUNCH_FACTS_VERSION
        objects = _objects(path, name)
        assert sorted(objects) == [(), LAUNCH_FACTS]
        assert objects[()] != objects[LAUNCH_FACTS]
        # The index entry names the facts; the generic entry names none.
        assert [v.launch_facts for v in binary.variants] == [(), LAUNCH_FACTS]
        text = render(describe(binary))
        assert "[ids32,uniform,zero_offset]" in text
        assert "specialised: runs launches that keep ids32, uniform, zero_offset" in text


def test_ubin_launches_run_the_code_their_facts_allow_without_compiling(built, fake, compiled):
    context, device = fake
    name = device.target.name
    objects = _objects(built[name], name)
    program = spirvjit.load(built[name], native="always")
    # Whole groups, no offset, small ids: the common launch's code.
    assert _launch(program, device, context, global_size=1024) == objects[LAUNCH_FACTS]
    assert (
        _launch(program, device, context, global_size=512, local_size=64) == objects[LAUNCH_FACTS]
    )
    # A global offset, or a partial last group: the generic code.
    generic = objects[()]
    assert _launch(program, device, context, global_size=1024, global_offset=(64,)) == generic
    assert _launch(program, device, context, global_size=1000, local_size=128) == generic
    assert compiled == []  # a unified binary's launches never compile
    assert len(context.modules) == 2  # each code object loaded once


def test_compile_loads_both_shipped_variants_without_compiling(built, fake, compiled):
    context, device = fake
    name = device.target.name
    program = spirvjit.load(built[name], native="always")
    program.axpy.compile(device)
    assert {m.image for m in context.modules} == set(_objects(built[name], name).values())
    _launch(program, device, context, global_size=2048)
    assert compiled == [] and len(context.modules) == 2


def test_generic_only_build_is_version_1_and_serves_every_launch(tmp_path, fake, compiled):
    context, device = fake
    name = device.target.name
    path = tmp_path / "generic.ubin"
    spirvjit.build(SAXPY, path, targets=[name], launch_variants="none")
    compiled.clear()  # the build's compiles (if its code was not cached yet)
    binary = read_file(path)
    assert binary.version == fmt.VERSION
    assert b"launch_facts" not in binary.payload(
        next(s.number for s in binary.sections if s.kind == fmt.VARIANTS)
    )
    generic = _objects(path, name)[()]
    program = spirvjit.load(path, native="always")
    assert _launch(program, device, context, global_size=1024) == generic
    assert _launch(program, device, context, global_size=1024, global_offset=(8,)) == generic
    assert compiled == []


def test_build_refuses_an_unknown_launch_variants_choice(tmp_path):
    with pytest.raises(ValueError, match="launch_variants"):
        spirvjit.build(SAXPY, tmp_path / "x.ubin", targets=["sm_90"], launch_variants="all")


# -- files written otherwise: old ones, and hostile launch facts ------------------------------


def _sections(data: bytes) -> list[list]:
    """[kind, compression, raw size, stored bytes] per section (no checks)."""
    count = fmt.HEADER.unpack_from(data, 0)[2]
    rows = []
    for i in range(count):
        kind, comp, offset, stored, raw, _ = fmt.ENTRY.unpack_from(
            data, fmt.HEADER.size + i * fmt.ENTRY.size
        )
        rows.append([kind, comp, raw, data[offset : offset + stored]])
    return rows


def _rewrite_variants(data: bytes, edit) -> bytes:
    """``data`` with its variants index passed through ``edit`` (a JSON value -> None),
    written canonically, with every size and checksum made right again."""
    version = fmt.HEADER.unpack_from(data, 0)[1]
    rows = _sections(data)
    row = next(r for r in rows if r[0] == fmt.VARIANTS)
    index = json.loads(row[3])
    edit(index)
    row[3] = fmt.canonical_json(index)
    row[2] = len(row[3])
    offset = fmt.HEADER.size + fmt.ENTRY.size * len(rows)
    table = b""
    for kind, comp, raw, stored in rows:
        table += fmt.ENTRY.pack(
            kind, comp, offset, len(stored), raw, hashlib.sha256(stored).digest()
        )
        offset += len(stored)
    header = fmt.HEADER.pack(fmt.MAGIC, version, len(rows), offset, hashlib.sha256(table).digest())
    return header + table + b"".join(r[3] for r in rows)


def _restamp(index: dict) -> None:
    """Marks every variant as built by this spirvjit compiler and LLVM."""
    for entry in index["variants"]:
        entry["compiler_digest"] = compiler_digest()
        entry["llvm_version"] = llvm_version()


def test_a_version_1_file_from_before_launch_facts_still_loads(tmp_path, monkeypatch, compiled):
    context = FakeContext()
    monkeypatch.setattr(backend("nvptx"), "context", lambda device: context)
    device = dataclasses.replace(DEVICES["sm_90"][1], name="fake H200 (old file)")
    old = UnifiedBinary(OLD_FILE.read_bytes())
    assert old.version == 1 and [v.launch_facts for v in old.variants] == [()]
    # Contents without launch facts are written as version 1, as they were: same bytes.
    assert write_bytes(old.contents()) == OLD_FILE.read_bytes()
    # Its compiler digest is the old spirvjit's (stale here: the kernels JIT); marked as
    # this one's, its generic code serves every launch, as it did before.
    path = tmp_path / "old.ubin"
    path.write_bytes(_rewrite_variants(OLD_FILE.read_bytes(), _restamp))
    generic = _objects(path, "sm_90")[()]
    program = spirvjit.load(path, native="always")
    assert _launch(program, device, context, global_size=1024) == generic
    assert _launch(program, device, context, global_size=1000, global_offset=(3,)) == generic
    assert compiled == []
    # As shipped (stale), it still loads, and its kernels JIT from the SPIR-V (or come
    # from the cache, where this test run compiled them before).
    stale = spirvjit.load(OLD_FILE, native="always")
    assert _launch(stale, device, context, global_size=1024) != old.variants[0].objects["saxpy"]
    assert stale.for_target(SM_90).object_code("saxpy", compile=False)[1] != "native"


BAD_FACTS = [
    (["ids16", "ids32"], "unknown launch fact 'ids16'"),
    (["ids32", "ids32", "zero_offset"], "launch fact 'ids32' appears twice"),
    (["zero_offset", "ids32"], "must be sorted"),
    ("ids32", "must be a list of names"),
    ([1], "launch_facts[0] must be a name, got 1"),
    ([None, "ids32"], "launch_facts[0] must be a name, got null"),
]


@pytest.mark.parametrize("value, why", BAD_FACTS)
def test_malformed_launch_facts_reject_only_that_variant(
    value, why, built, fake, compiled, tmp_path, caplog
):
    context, device = fake
    name = device.target.name

    def spoil(index: dict) -> None:
        specialised = next(e for e in index["variants"] if e["launch_facts"])
        specialised["launch_facts"] = value

    path = tmp_path / "spoilt.ubin"
    path.write_bytes(_rewrite_variants(built[name].read_bytes(), spoil))
    binary = read_file(path)  # the file reads: only the variant is rejected
    bad = [v for v in binary.variants if v.problem is not None]
    assert len(bad) == 1 and why in bad[0].problem
    assert bad[0].problem.startswith(f"variant 1 ({device.target}):")
    assert "REJECTED (no launch uses it): variant 1" in render(describe(binary))
    generic = _objects(built[name], name)[()]
    with caplog.at_level(logging.WARNING, logger="spirvjit"):
        program = spirvjit.load(path, native="always")
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("spoilt.ubin" in m and "variant 1" in m and why in m for m in warned), warned
    # Every launch runs the generic code; nothing compiles.
    assert _launch(program, device, context, global_size=1024) == generic
    assert compiled == []


def test_launch_facts_on_cpu_code_or_in_a_version_1_file_are_refused(built, tmp_path):
    data = built["sm_90"].read_bytes()

    def cpu(index: dict) -> None:
        entry = next(e for e in index["variants"] if e["launch_facts"])
        entry["target"] = {"kind": "cpu", "triple": "x86_64-unknown-linux-gnu", "cpu": "x86-64",
                           "features": ""}  # fmt: skip

    binary = UnifiedBinary(_rewrite_variants(data, cpu))
    (bad,) = [v for v in binary.variants if v.problem]
    assert "launch facts apply to GPU code only" in bad.problem
    # Version 1 defines no launch_facts field: the file is refused, naming it.
    v1 = bytearray(_rewrite_variants(data, lambda index: None))
    v1[8:12] = (1).to_bytes(4, "little")
    with pytest.raises(spirvjit.BinaryFormatError, match="unknown field 'launch_facts'"):
        UnifiedBinary(bytes(v1))
    # Version 2 requires it.
    with pytest.raises(spirvjit.BinaryFormatError, match="missing field 'launch_facts'"):
        UnifiedBinary(
            _rewrite_variants(data, lambda index: index["variants"][0].pop("launch_facts"))
        )


def test_concurrent_first_launches_of_a_ubin_load_each_code_object_once(built, fake, compiled):
    context, device = fake
    name = device.target.name
    objects = _objects(built[name], name)
    program = spirvjit.load(built[name], native="always")
    barrier = threading.Barrier(8)
    seen, errors = [], []

    def worker(i: int) -> None:
        try:
            barrier.wait()
            y, x = np.zeros(1024, np.float32), np.zeros(1024, np.float32)
            offset = (16,) if i % 2 else None
            program.axpy(y, x, np.float32(2), global_size=1024, global_offset=offset, device=device)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    seen = {launch[1].image for launch in context.launches}
    assert seen == set(objects.values())
    assert len(context.modules) == 2 and compiled == []


def test_precompile_builds_both_gpu_variants(tmp_path, monkeypatch, compiled):
    from spirvjit import precompile

    path = tmp_path / "generic.ubin"
    spirvjit.build(SAXPY.replace("axpy(", "axpy_pre("), path, targets=[], launch_variants="none")
    # Into the cache: the generic code and the common launch's, so that neither a launch
    # that promises nothing nor the common one compiles afterwards.
    report = precompile.precompile([str(path)], targets=[SM_90], jobs=1, progress=False)
    assert sorted((g.launch_facts, g.todo) for g in report.groups) == [
        ((), ["axpy_pre"]),
        (LAUNCH_FACTS, ["axpy_pre"]),
    ]
    context = FakeContext()
    monkeypatch.setattr(backend("nvptx"), "context", lambda device: context)
    device = dataclasses.replace(DEVICES["sm_90"][1], name="fake H200 (precompiled)")
    program = spirvjit.load(path)
    built = len(compiled)
    y, x = np.zeros(1024, np.float32), np.zeros(1024, np.float32)
    program.axpy_pre(y, x, np.float32(2), global_size=1024, device=device)
    program.axpy_pre(
        y, x, np.float32(2), global_size=1000, local_size=128, global_offset=(2**31,), device=device
    )
    assert len(compiled) == built and len(context.modules) == 2
    # --aot: into the file, as the variants build writes.
    report = precompile.precompile([str(path)], targets=[SM_90], jobs=1, aot=True, progress=False)
    assert report.written == [path]
    binary = read_file(path)
    assert binary.version == fmt.LAUNCH_FACTS_VERSION
    assert [v.launch_facts for v in binary.variants] == [(), LAUNCH_FACTS]


def test_package_hook_chooses_the_launch_variants(tmp_path):
    from spirvjit import setuptools_hook

    (tmp_path / "saxpy.cl").write_text(SAXPY)
    pyproject = tmp_path / "pyproject.toml"
    table = 'package = "p"\nname = "ops"\nsources = ["saxpy.cl"]\ntargets = ["sm_90"]\n'
    for choice, facts in (("", [(), LAUNCH_FACTS]), ('launch_variants = "none"\n', [()])):
        pyproject.write_text(f"[[tool.spirvjit.kernels]]\n{table}{choice}")
        (kernel_set,) = setuptools_hook.read_config(pyproject)
        out = tmp_path / "ops.ubin"
        setuptools_hook.build_kernel_set(kernel_set, tmp_path, out)
        assert [v.launch_facts for v in read_file(out).variants] == facts
