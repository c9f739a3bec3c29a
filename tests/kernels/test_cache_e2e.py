"""The kernel cache with real kernels: layers, concurrency, crashes, corruption, the CLI."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import spirvjit
from spirvjit import cache
from spirvjit.cache.disk import DiskCache

# Small kernels, each checked against NumPy by _CHECK in every process that runs them.
KERNELS = {
    "scale": "kernel void scale(global float *a, float s) { size_t i = get_global_id(0); "
    "a[i] *= s; }",
    "iota": "kernel void iota(global int *a, int base) { a[get_global_id(0)] = base + "
    "(int)get_global_id(0); }",
    "axpy": "kernel void axpy(global const float *x, global float *y, float a) { size_t i = "
    "get_global_id(0); y[i] = a * x[i] + y[i]; }",
}

# Runs every kernel saved in SPV_DIR once and checks the result; prints the origins.
_CHECK = """
import json, sys
from pathlib import Path
import numpy as np
import spirvjit

origins = {}
for path in sorted(Path(sys.argv[1]).glob("*.spv")):
    prog = spirvjit.load_spirv(path)
    name = path.stem
    n = 257
    if name == "scale":
        a = np.arange(n, dtype=np.float32)
        prog.scale(a, np.float32(3), global_size=n)
        ok = np.array_equal(a, np.arange(n, dtype=np.float32) * 3)
    elif name == "iota":
        a = np.zeros(n, np.int32)
        prog.iota(a, 5, global_size=n)
        ok = np.array_equal(a, np.arange(n, dtype=np.int32) + 5)
    else:
        x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
        prog.axpy(x, y, np.float32(2), global_size=n)
        ok = np.array_equal(y, 2 * np.arange(n, dtype=np.float32) + 1)
    if not ok:
        sys.exit(f"wrong result from {name} ({prog.origins[name]})")
    origins[name] = prog.origins[name]
    # A compiling first launch is tiered: its optimized code, which the cache stores, comes
    # from a background compile, which the process would give up at exit.
    prog.kernel(name).wait_optimized()
print(json.dumps(origins))
"""


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    """A fresh cache directory for this test, and a process with no cached kernels."""
    root = tmp_path / "cache"
    monkeypatch.setenv("SPIRVJIT_CACHE_DIR", str(root))
    monkeypatch.setenv("SPIRVJIT_NUM_THREADS", "1")  # many processes share 2 cores
    cache.reset()
    yield root
    cache.reset()


@pytest.fixture(scope="module")
def spv_dir(tmp_path_factory) -> Path:
    """The KERNELS compiled to SPIR-V once, one file per kernel."""
    directory = tmp_path_factory.mktemp("spv")
    for name, source in KERNELS.items():
        (directory / f"{name}.spv").write_bytes(spirvjit.compile_opencl(source).spirv)
    return directory


def check_in_subprocess(spv_dir: Path, **env: str) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", _CHECK, str(spv_dir)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def assert_all(origins: dict[str, str], expected: str) -> None:
    """Every kernel came from ``expected``; else fails with the cache's explanations."""
    why = "\n".join(cli("explain", name).stdout for name, got in origins.items() if got != expected)
    assert not why, why  # e.g. spirvjit's source edited meanwhile: the key covers it


def check_here(spv_dir: Path) -> dict[str, str]:
    """_CHECK in this process (its memory layer included)."""
    namespace: dict = {}
    argv = sys.argv
    sys.argv = ["check", str(spv_dir)]
    try:
        code = compile(_CHECK.replace("print(json.dumps(origins))", ""), "check", "exec")
        exec(code, namespace)
    finally:
        sys.argv = argv
    return namespace["origins"]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "spirvjit", "cache", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_compile_then_memory_then_disk(cache_dir, spv_dir):
    assert_all(check_here(spv_dir), "compile")
    assert_all(check_here(spv_dir), "memory")
    assert_all(check_in_subprocess(spv_dir), "disk")
    assert_all(check_in_subprocess(spv_dir, SPIRVJIT_CACHE="0"), "compile")
    done = cli("explain", "axpy")  # the cache off, that process did not touch the directory
    assert done.returncode == 0 and "\ndisk hit: entry axpy." in done.stdout


@pytest.mark.slow
def test_sixteen_processes_compile_the_same_kernels(cache_dir, spv_dir):
    script = [sys.executable, "-c", _CHECK, str(spv_dir)]
    procs = [
        subprocess.Popen(script, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(16)
    ]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    for status, _, err in results:
        assert status == 0, err
    origins = [o for _, out, _ in results for o in json.loads(out).values()]
    assert len(origins) == 48 and set(origins) <= {"compile", "disk"}
    checked, problems = DiskCache(cache_dir, 1 << 30).verify()
    assert (checked, problems) == (3, [])
    assert_all(check_in_subprocess(spv_dir), "disk")
    stats = cli("stats").stdout
    assert "first launches   51:" in stats and " 0 unusable entries" in stats


_STORE_LOOP = """
import sys
import spirvjit
from spirvjit import cache
prog = spirvjit.load_spirv(sys.argv[1])
obj, _ = prog.object_code("axpy")
key = prog.kernel_key("axpy")
print("ready", flush=True)
while True:
    cache.reset()  # forget the memory layer and the open directory: store writes again
    cache.store(key, obj)
"""


def test_sigkill_while_storing_never_loads_a_half_entry(cache_dir, spv_dir):
    for delay in (0.05, 0.2, 0.11, 0.3):
        writer = subprocess.Popen(
            [sys.executable, "-c", _STORE_LOOP, str(spv_dir / "axpy.spv")],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert writer.stdout.readline() == "ready\n"
        time.sleep(delay)
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        writer.stdout.close()
        assert_all({"axpy": check_in_subprocess(spv_dir)["axpy"]}, "disk")
    assert DiskCache(cache_dir, 1 << 30).verify()[1] == []


def _corruptions(data: bytes) -> dict[str, bytes]:
    flipped = [bytearray(data) for _ in range(3)]
    flipped[0][len(data) // 2] ^= 0x10  # in the object code
    flipped[1][40] ^= 0x01  # in the header
    flipped[2][-1] ^= 0x80  # in the digest
    return {
        "empty": b"",
        "half": data[: len(data) // 2],
        "one byte short": data[:-1],
        "garbage appended": data + b"\0" * 16,
        **{f"bit flip {i}": bytes(f) for i, f in enumerate(flipped)},
    }


def test_damaged_entries_are_misses_and_replaced(cache_dir, spv_dir, caplog):
    check_here(spv_dir)
    disk = DiskCache(cache_dir, 1 << 30)
    [path] = [e.path for e in disk.entries() if e.path.name.startswith("scale.")]
    good = path.read_bytes()
    for what, damaged in _corruptions(good).items():
        path.write_bytes(damaged)
        cache.reset()
        with caplog.at_level(logging.WARNING, logger="spirvjit"):
            origins = check_here(spv_dir)  # raises on a wrong result
        assert origins["scale"] == "compile", what
        assert origins["iota"] == "disk"
        assert path.read_bytes() != damaged, f"{what}: not replaced"
        assert "scale." in caplog.text and "ignoring it" in caplog.text
        caplog.clear()
    done = cli("explain", "scale")
    assert done.returncode == 0
    assert "compiled: the entry scale." in done.stdout and "was corrupt" in done.stdout


def test_explain_a_changed_kernel(cache_dir, caplog, monkeypatch):
    source = KERNELS["scale"]
    a = np.ones(4, np.float32)
    first = spirvjit.compile_opencl(source)
    first.scale(a, np.float32(2), global_size=4)
    first.scale.wait_optimized()  # stored (tiered: by the background compile)
    cache.reset()
    monkeypatch.setenv("SPIRVJIT_DEBUG", "1")
    with caplog.at_level(logging.INFO, logger="spirvjit"):
        changed = spirvjit.compile_opencl(source.replace("*= s", "*= s + 1.0f"))
        changed.scale(a, np.float32(2), global_size=4)
        changed.scale.wait_optimized()  # stored (and its event logged) by the background
    assert a.tolist() == [6.0] * 4
    assert "cache compile for scale: the nearest cached entry" in caplog.text
    assert "differs in spirv_digest" in caplog.text
    done = cli("explain", "scale")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith("compiled: the nearest cached entry, scale.")
    assert lines[2:5] and lines[2] == "  spirv_digest:"


def test_cache_command(cache_dir, spv_dir):
    check_in_subprocess(spv_dir)
    check_in_subprocess(spv_dir)
    stats = cli("stats")
    assert stats.returncode == 0
    assert f"cache directory  {cache_dir}" in stats.stdout
    assert "entries          3 (0 of other" in stats.stdout
    assert "6: 0 memory hits, 3 disk hits, 3 compiles (hit rate 50 %)" in stats.stdout
    listing = cli("list").stdout.splitlines()
    assert listing[0].split() == ["KERNEL", "TARGET", "SIZE", "LAST", "USE", "STATE"]
    assert sorted(line.split()[0] for line in listing[1:]) == ["axpy", "iota", "scale"]
    assert cli("verify").returncode == 0
    explain = cli("explain", "iota")
    assert explain.returncode == 0 and "disk hit: entry iota." in explain.stdout
    pruned = cli("prune", "--max-size", "1")
    assert pruned.returncode == 0 and pruned.stdout.startswith("removed 3 entries")
    assert "merged 2 counter files" in pruned.stdout
    assert "6: 0 memory hits, 3 disk hits, 3 compiles" in cli("stats").stdout
    assert_all(check_in_subprocess(spv_dir), "compile")
    cleared = cli("clear")
    assert cleared.returncode == 0 and cleared.stdout.startswith("removed 3 entries")
    assert "entries          0 " in cli("stats").stdout


def test_cache_command_errors(cache_dir, tmp_path):
    missing = cli("explain", "nosuchkernel")
    assert missing.returncode == 1 and "no first launch of kernel 'nosuchkernel'" in missing.stderr
    assert cli("prune", "--max-size", "lots").returncode == 1
    assert cli().returncode == 2
    open_dir = tmp_path / "open"
    open_dir.mkdir(mode=0o777)
    open_dir.chmod(0o777)
    refused = cli("--dir", str(open_dir), "stats")
    assert refused.returncode == 1 and "writable by group or others" in refused.stderr
    entry = DiskCache(cache_dir, 1 << 30)
    bad = entry.entries_dir / "x" / "k.0.sjc"
    bad.parent.mkdir(mode=0o700)
    bad.write_bytes(b"not an entry")
    bad.chmod(0o600)
    verify = cli("verify")
    assert verify.returncode == 1 and "k.0.sjc" in verify.stdout and "1 bad" in verify.stdout
    assert cli("verify", "--remove").returncode == 1 and not bad.exists()


def test_forged_entry_with_a_right_digest_is_dropped_and_recompiled(cache_dir, spv_dir):
    """An entry whose digest and key are right but whose code is another kernel's (made
    by a tool or a person that rewrote it): before, every later process failed to load
    it, and `cache verify` called it fine."""
    from spirvjit.cache import format as cache_format

    assert_all(check_here(spv_dir), "compile")
    scale = spirvjit.load_spirv(spv_dir / "scale.spv")
    iota = spirvjit.load_spirv(spv_dir / "iota.spv")
    disk = DiskCache(cache_dir, 1 << 30)
    path = disk.path_for(scale.kernel_key("scale"))
    iota_code = iota.object_code("iota")[0]
    path.write_bytes(cache_format.encode(scale.kernel_key("scale"), iota_code, "forged"))
    verify = cli("verify")
    assert verify.returncode == 1 and "would not load" in verify.stdout + verify.stderr
    assert path.name in verify.stdout + verify.stderr
    done = subprocess.run(
        [sys.executable, "-c", _CHECK, str(spv_dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr  # right results, scale compiled again
    assert json.loads(done.stdout) == {"axpy": "disk", "iota": "disk", "scale": "compile"}
    assert done.stderr.count("did not load") == 1, done.stderr
    assert cli("verify").returncode == 0  # the entry was replaced by a good one
    assert_all(check_in_subprocess(spv_dir), "disk")
