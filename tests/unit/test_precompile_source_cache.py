"""The source cache: compile_opencl / compile_hip results reused for the same source,
options, headers and compiler (spirvjit/frontend/source_cache.py)."""

from __future__ import annotations

import logging
import os
import shutil
import stat
import time

import pytest

import spirvjit
from spirvjit import toolchain
from spirvjit.errors import CompileError
from spirvjit.frontend import source_cache as sc

KERNEL = '#include "value.h"\nkernel void f(global int *x) { x[0] = VALUE; }\n'


def needs(*tools: str) -> None:
    missing = [t for t in tools if toolchain.find_tool(t) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """A private cache directory and an empty source cache."""
    monkeypatch.setenv("SPIRVJIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SPIRVJIT_SOURCE_CACHE", raising=False)
    sc.reset()
    yield tmp_path
    sc.reset()


def literal(value: int) -> bytes:
    return value.to_bytes(4, "little")


def write_old(path, text: str) -> None:
    """Writes a header as an editor did a while ago (a header changed within a second
    of a compile keeps that compile out of the cache)."""
    path.write_text(text)
    old = time.time_ns() - 10 * 10**9
    os.utime(path, ns=(old, old))


# --- pure parts ----------------------------------------------------------------------------------


def test_dependency_file_parsing_handles_escapes_and_continuations():
    text = (
        "spirvjit-source: /tmp/x/kernel.cl /usr/include/a\\ b.h \\\n  inc/c$$d.h \\\n inc/e\\#f.h\n"
    )
    assert sc.parse_dependencies(text) == [
        "/tmp/x/kernel.cl",
        "/usr/include/a b.h",
        "inc/c$d.h",
        "inc/e#f.h",
    ]
    assert sc.parse_dependencies("") == []


def test_path_options_in_every_spelling():
    options = ["-Ia", "-I", "b", "-I=c", "-isystem", "d", "-isysteme", "-DX=1", "-include", "f.h"]
    assert sc._path_values(options, sc._PATH_FLAGS) == ["a", "b", "c", "d", "e", "f.h"]


def test_key_covers_options_settings_compiler_and_relative_paths(fresh, monkeypatch, tmp_path):
    fake = tmp_path / "fake-clang"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("SPIRVJIT_CLANG", str(fake))
    toolchain.find_tool.cache_clear()
    try:
        key = sc.source_key("opencl", "x", ["-DA=1"], {"producer": "clang"}, ["clang"])[0]
        assert key == sc.source_key("opencl", "x", ["-DA=1"], {"producer": "clang"}, ["clang"])[0]
        assert key != sc.source_key("opencl", "y", ["-DA=1"], {"producer": "clang"}, ["clang"])[0]
        assert key != sc.source_key("opencl", "x", ["-DA=2"], {"producer": "clang"}, ["clang"])[0]
        assert key != sc.source_key("opencl", "x", ["-DA=1"], {"producer": "t"}, ["clang"])[0]
        # A compiler replaced in place (an upgrade) changes the key.
        os.utime(fake, ns=(1, 1))
        assert key != sc.source_key("opencl", "x", ["-DA=1"], {"producer": "clang"}, ["clang"])[0]
        # A tool the front end only may use enters the key as absent when it is.
        assert sc.tool_identity("no-such-tool?") == "no-such-tool:absent"
        # A relative include directory means different headers from another directory.
        parts = sc.source_key("opencl", "x", ["-Iinc"], {}, ["clang"])[1]
        assert parts["cwd"] == os.getcwd()
        assert sc.source_key("opencl", "x", ["-I/abs"], {}, ["clang"])[1]["cwd"] is None
    finally:
        toolchain.find_tool.cache_clear()


def test_corrupt_entries_never_decode():
    entry = sc.Entry(b"\x03\x02\x23\x07rest", (("/a.h", "00"),), (("/", 5),), ("warned",))
    data = sc.encode("k" * 64, {}, entry)
    assert sc.decode(data, "k" * 64) == entry
    with pytest.raises(sc.CorruptSourceEntry):
        sc.decode(data, "j" * 64)  # stored under another key
    for i in (0, 20, len(data) // 2, len(data) - 1):
        flipped = bytearray(data)
        flipped[i] ^= 1
        with pytest.raises(sc.CorruptSourceEntry):
            sc.decode(bytes(flipped), "k" * 64)
    with pytest.raises(sc.CorruptSourceEntry):
        sc.decode(data[:-5], "k" * 64)


def test_a_header_nested_past_the_recursion_limit_never_decodes():
    """Bytes with a valid SHA-256 (no MAC: anyone can frame them) whose JSON header nests
    200,000 deep: json.loads raised RecursionError out of decode, not CorruptSourceEntry."""
    import hashlib

    text = b"[" * 200_000
    body = sc._PREFIX.pack(sc.MAGIC, len(text)) + text
    with pytest.raises(sc.CorruptSourceEntry, match="RecursionError"):
        sc.decode(body + hashlib.sha256(body).digest(), "k" * 64)


# --- with clang --------------------------------------------------------------------------------


def test_same_source_compiles_once_per_process_and_machine(fresh):
    needs("clang")
    inc = fresh / "inc"
    inc.mkdir()
    write_old(inc / "value.h", "#define VALUE 123456\n")
    options = [f"-I{inc}"]
    first = spirvjit.compile_opencl(KERNEL, options)
    second = spirvjit.compile_opencl(KERNEL, options)
    assert first.spirv == second.spirv and literal(123456) in first.spirv
    assert sc.stats() == {"memory": 1, "disk": 0, "compile": 1, "bypass": 0}
    sc.reset()  # a new process: the memory layer is empty, the disk entry remains
    third = spirvjit.compile_opencl(KERNEL, options)
    assert third.spirv == first.spirv
    assert sc.stats()["disk"] == 1 and sc.stats()["compile"] == 0
    entries = list((fresh / "cache" / "sources").rglob("*.sjs"))
    assert len(entries) == 1
    assert stat.S_IMODE(entries[0].stat().st_mode) & 0o077 == 0


def test_a_changed_header_recompiles_even_at_the_same_size(fresh):
    needs("clang")
    inc = fresh / "inc"
    inc.mkdir()
    header = inc / "value.h"
    write_old(header, "#define VALUE 111111\n")
    mtime = header.stat().st_mtime_ns
    options = [f"-I{inc}"]
    assert literal(111111) in sc.opencl_to_spirv(KERNEL, options)
    header.write_text("#define VALUE 222222\n")  # same size, same mtime: content decides
    os.utime(header, ns=(mtime, mtime))
    assert literal(222222) in sc.opencl_to_spirv(KERNEL, options)
    assert sc.stats()["compile"] == 2
    sc.reset()  # also from disk: the entry was replaced, and checks the header again
    assert literal(222222) in sc.opencl_to_spirv(KERNEL, options)
    assert sc.stats()["disk"] == 1


def test_a_header_changed_just_before_the_compile_does_not_vouch_for_it(fresh):
    # Its contents after the compile may not be the ones clang read (an editor saving
    # during the compile), so the result is not cached until a later compile.
    needs("clang")
    inc = fresh / "inc"
    inc.mkdir()
    (inc / "value.h").write_text("#define VALUE 121212\n")
    options = [f"-I{inc}"]
    assert literal(121212) in sc.opencl_to_spirv(KERNEL, options)
    assert literal(121212) in sc.opencl_to_spirv(KERNEL, options)
    assert sc.stats()["compile"] == 2 and not list((fresh / "cache").rglob("*.sjs"))


def test_a_new_header_that_shadows_the_old_one_recompiles(fresh):
    needs("clang")
    first, second = fresh / "first", fresh / "second"
    first.mkdir()
    second.mkdir()
    write_old(second / "value.h", "#define VALUE 333333\n")
    options = [f"-I{first}", f"-I{second}"]
    assert literal(333333) in sc.opencl_to_spirv(KERNEL, options)
    write_old(first / "value.h", "#define VALUE 444444\n")  # found first from now on
    assert literal(444444) in sc.opencl_to_spirv(KERNEL, options)


def test_warnings_are_logged_again_on_a_hit(fresh, caplog):
    needs("clang")
    source = "kernel void f(global int *x) { int z = 1.5; x[0] = z; }"
    for _ in range(2):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="spirvjit"):
            sc.opencl_to_spirv(source)
        assert "kernel.cl:1:" in caplog.text and "warning" in caplog.text
    assert sc.stats()["memory"] == 1


def test_failures_are_not_cached(fresh):
    needs("clang")
    for _ in range(2):
        with pytest.raises(CompileError):
            sc.opencl_to_spirv("kernel void f( {")
    assert sc.stats()["compile"] == 0


def test_damaged_disk_entry_is_a_miss_and_replaced(fresh, caplog):
    needs("clang")
    source = "kernel void f(global int *x) { x[0] = 555555; }"
    spirv = sc.opencl_to_spirv(source)
    (entry,) = (fresh / "cache" / "sources").rglob("*.sjs")
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF
    entry.write_bytes(bytes(data))
    sc.reset()
    with caplog.at_level(logging.WARNING, logger="spirvjit"):
        assert sc.opencl_to_spirv(source) == spirv
    assert "unusable" in caplog.text and sc.stats()["compile"] == 1
    sc.reset()
    assert sc.opencl_to_spirv(source) == spirv and sc.stats()["disk"] == 1


def test_a_cache_removed_while_running_is_made_again(fresh, caplog):
    # A long-lived process whose cache directory is removed (rm -rf, a test's cleanup)
    # used to turn the source cache off for the rest of its life.
    needs("clang")
    sc.opencl_to_spirv("kernel void f(global int *x) { x[0] = 1; }")
    shutil.rmtree(fresh / "cache")
    with caplog.at_level(logging.WARNING, logger="spirvjit"):
        sc.opencl_to_spirv("kernel void f(global int *x) { x[0] = 2; }")
    assert "cannot write" not in caplog.text
    assert len(list((fresh / "cache" / "sources").rglob("*.sjs"))) == 1
    assert (fresh / "cache").stat().st_mode & 0o077 == 0


def test_unsafe_directory_is_refused_memory_still_works(fresh, caplog):
    needs("clang")
    root = fresh / "cache"
    root.mkdir(mode=0o700)
    root.chmod(0o777)
    source = "kernel void f(global int *x) { x[0] = 7; }"
    with caplog.at_level(logging.WARNING, logger="spirvjit"):
        sc.opencl_to_spirv(source)
        sc.opencl_to_spirv(source)
    assert caplog.text.count("refusing") == 1
    assert not (root / "sources").exists()
    assert sc.stats()["memory"] == 1


def test_switches_and_bypassing_options(fresh, monkeypatch):
    needs("clang")
    source = "kernel void f(global int *x) { x[0] = 8; }"
    monkeypatch.setenv("SPIRVJIT_SOURCE_CACHE", "0")
    sc.opencl_to_spirv(source)
    sc.opencl_to_spirv(source)
    assert sc.stats()["bypass"] == 2
    monkeypatch.delenv("SPIRVJIT_SOURCE_CACHE")
    stamped = "kernel void f(global int *x) { x[0] = sizeof(__TIME__); }"
    sc.opencl_to_spirv(stamped)
    sc.opencl_to_spirv(stamped)
    assert sc.stats()["bypass"] == 4
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")  # memory only
    sc.opencl_to_spirv(source)
    sc.opencl_to_spirv(source)
    assert sc.stats()["memory"] == 1 and not (fresh / "cache").exists()


def test_translator_producer_is_cached_separately(fresh):
    needs("clang", "clang15", "llvm-spirv")
    source = "kernel void f(global int *x) { x[0] = 9; }"
    a = sc.opencl_to_spirv(source)
    b = sc.opencl_to_spirv(source, producer="translator")
    assert sc.stats()["compile"] == 2
    assert sc.opencl_to_spirv(source, producer="translator") == b != a


def test_hip_goes_through_the_cache_with_headers(fresh):
    needs("clang", "clang-offload-bundler")
    inc = fresh / "inc"
    inc.mkdir()
    write_old(inc / "n.h", "#define N 666666\n")
    source = '#include "n.h"\nextern "C" __attribute__((global)) void k(int *x) { x[0] = N; }\n'
    first = sc.hip_to_spirv(source, [f"-I{inc}"])
    assert literal(666666) in first
    assert sc.hip_to_spirv(source, [f"-I{inc}"]) == first and sc.stats()["memory"] == 1
    write_old(inc / "n.h", "#define N 777777\n")
    assert literal(777777) in sc.hip_to_spirv(source, [f"-I{inc}"])


def test_cache_clear_removes_compiled_sources(fresh, capsys):
    needs("clang")
    from spirvjit.cli import main

    sc.opencl_to_spirv("kernel void f(global int *x) { x[0] = 10; }")
    assert main(["cache", "clear"]) == 0
    assert "and 1 compiled sources" in capsys.readouterr().out
    assert not list((fresh / "cache" / "sources").rglob("*.sjs"))
