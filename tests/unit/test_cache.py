"""The kernel cache without a toolchain: fake keys, fake object code (see docs/cache.md)."""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from spirvjit import cache, config
from spirvjit.cache import disk as cache_store
from spirvjit.cache import format as cache_format
from spirvjit.cache import records as cache_records
from spirvjit.cache.disk import CacheUnavailable, DiskCache, key_tag
from spirvjit.cache.format import CorruptEntry
from spirvjit.cache.key import KernelKey

ROOT = Path(__file__).resolve().parents[2]


def make_key(**changes) -> KernelKey:
    fields = dict(
        spirv_digest="ab" * 32,
        entry_point="saxpy",
        spec_constants=((1, "4"),),
        triple="x86_64-unknown-linux-gnu",
        cpu="znver4",
        features="+avx2,+fma",
        options=(),
        specialization=(),
        spirvjit_version="0.1.0",
        llvm_version="22.1.0 (llvmlite 0.50.0)",
        compiler_digest="cd" * 32,
    )
    fields.update(changes)
    return KernelKey(**fields)


KEY = make_key()


def disk_cache(root: Path, max_size: int = 1 << 30, **kwargs) -> DiskCache:
    return DiskCache(root, max_size, tag=key_tag(KEY), **kwargs)


@pytest.fixture
def facade(tmp_path, monkeypatch):
    """The cache module on a fresh directory, with its process state reset around the test."""
    monkeypatch.setenv("SPIRVJIT_CACHE_DIR", str(tmp_path / "cache"))
    cache.reset()
    yield tmp_path / "cache"
    cache.reset()


# -- configuration ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, size",
    [("4096", 4096), ("100M", 100 << 20), ("2G", 2 << 30), ("1.5g", 3 << 29), ("2GiB", 2 << 30)]
    + [("10kb", 10 << 10), ("1T", 1 << 40), (" 7 M ", 7 << 20), ("0", 0)],
)
def test_parse_size(text, size):
    assert config.parse_size(text) == size


@pytest.mark.parametrize("text", ["", "M", "abc", "-1G", "1X", "nan", "inf", "1e999", "1GG"])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError, match="not a size.*100M"):
        config.parse_size(text)


def test_cache_knobs(monkeypatch, tmp_path):
    monkeypatch.delenv("SPIRVJIT_CACHE_MAX_SIZE", raising=False)
    assert config.cache_max_size() == 1 << 30
    monkeypatch.setenv("SPIRVJIT_CACHE_MAX_SIZE", "lots")
    with pytest.raises(ValueError, match="SPIRVJIT_CACHE_MAX_SIZE: 'lots' is not a size"):
        config.cache_max_size()
    for value, enabled in [("", True), ("1", True), ("0", False), ("off", False), ("NO", False)]:
        monkeypatch.setenv("SPIRVJIT_CACHE", value)
        assert config.cache_enabled() is enabled
    monkeypatch.setenv("SPIRVJIT_CACHE_DIR", str(tmp_path))
    assert config.cache_dir() == tmp_path
    monkeypatch.delenv("SPIRVJIT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert config.cache_dir() == tmp_path / "xdg" / "spirvjit"


# -- entry format ----------------------------------------------------------------------------


def test_entry_round_trip_records_readable_key():
    data = cache_format.encode(KEY, b"\x7fELF object", "x86_64:znver4")
    header, payload = cache_format.decode(data, KEY)
    assert payload == b"\x7fELF object"
    assert header["key"]["entry_point"] == "saxpy"
    assert header["key"]["spec_constants"] == [[1, "4"]]
    assert header["key_digest"] == KEY.digest()
    assert cache_format.parts_digest(header["key"]) == KEY.digest()


def test_every_truncation_and_bit_flip_is_detected():
    data = cache_format.encode(KEY, bytes(range(64)), "t")
    for length in range(len(data)):
        with pytest.raises(CorruptEntry):
            cache_format.decode(data[:length], KEY)
    for bit in range(len(data) * 8):
        flipped = bytearray(data)
        flipped[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(CorruptEntry):
            cache_format.decode(bytes(flipped), KEY)


@pytest.mark.parametrize("text", [b"[" * 200_000, b'{"a":' * 100_000], ids=["arrays", "objects"])
def test_a_deeply_nested_header_is_a_corrupt_entry(text):
    """Bytes with a valid SHA-256 (anyone can compute one) whose header nests past
    Python's recursion limit: json.loads raised RecursionError out of decode, through the
    lookup of the launch that read it, and out of ``cache list`` (decode_header)."""
    body = cache_format._PREFIX.pack(cache_format.MAGIC, len(text)) + text
    data = body + hashlib.sha256(body).digest()
    with pytest.raises(CorruptEntry, match="nests too deeply"):
        cache_format.decode(data, KEY)
    with pytest.raises(CorruptEntry, match="nests too deeply"):
        cache_format.decode_header(body)


def test_entry_of_another_key_is_rejected():
    data = cache_format.encode(make_key(cpu="skylake"), b"obj", "t")
    with pytest.raises(CorruptEntry, match="differs from the key looked up"):
        cache_format.decode(data, KEY)


def test_differences_names_the_parts():
    wanted = make_key(spirv_digest="ee" * 32, options=("-O2",)).parts()
    stored = json.loads(json.dumps(KEY.parts()))  # as read back from a header
    assert cache_format.differences(stored, wanted) == ["spirv_digest", "options"]
    assert cache_format.differences(stored, KEY.parts()) == []


# -- the directory ---------------------------------------------------------------------------


def test_store_load_and_modes(tmp_path):
    disk = disk_cache(tmp_path / "c")
    path = disk.store(KEY, b"code", "t")
    assert disk.load(KEY).obj == b"code"
    assert disk.load(make_key(cpu="other")).obj is None
    for directory in (disk.root, disk.entries_dir, disk.events_dir, path.parent):
        assert directory.stat().st_mode & 0o777 == 0o700
    assert path.stat().st_mode & 0o777 == 0o600
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_store_makes_a_removed_directory_again(tmp_path):
    # rm -rf of the cache under a running process: the next store recreates it (mode
    # 0700 all the way), where it used to turn the disk cache off for the process.
    disk = disk_cache(tmp_path / "c")
    disk.store(KEY, b"one", "t")
    shutil.rmtree(disk.root)
    path = disk.store(make_key(cpu="other"), b"two", "t")
    assert disk.load(make_key(cpu="other")).obj == b"two"
    for directory in (disk.root, disk.entries_dir, path.parent):
        assert directory.stat().st_mode & 0o777 == 0o700


def test_hit_records_its_use(tmp_path):
    disk = disk_cache(tmp_path)
    path = disk.store(KEY, b"code", "t")
    os.utime(path, (1000, 1000))
    disk.load(KEY)
    assert path.stat().st_mtime > time.time() - 60


def test_entry_under_the_wrong_name_is_a_miss(tmp_path):
    disk = disk_cache(tmp_path)
    other = make_key(spec_constants=((1, "5"),))
    disk.path_for(KEY).parent.mkdir(parents=True, mode=0o700)
    disk.path_for(KEY).write_bytes(cache_format.encode(other, b"wrong code", "t"))
    result = disk.load(KEY)
    assert result.obj is None and "differs from the key" in result.problem


def test_leftover_temporary_file_is_never_loaded(tmp_path):
    disk = disk_cache(tmp_path)
    path = disk.path_for(KEY)
    path.parent.mkdir(parents=True, mode=0o700)
    data = cache_format.encode(KEY, b"code", "t")
    (path.parent / f".{path.name}.123.abcd.tmp").write_bytes(data[: len(data) // 2])
    assert disk.load(KEY).obj is None and disk.load(KEY).problem is None


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_group_or_world_writable_directory_is_refused(tmp_path, mode):
    root = tmp_path / "c"
    root.mkdir()
    root.chmod(mode)
    with pytest.raises(CacheUnavailable, match=r"writable by group or others.*SPIRVJIT_CACHE_DIR"):
        disk_cache(root)


def test_world_writable_tag_directory_is_refused_like_the_cache(tmp_path):
    """Before: only checked when storing, with another message; a lookup read from it."""
    disk = disk_cache(tmp_path / "c")
    path = disk.store(KEY, b"code", "t")
    path.parent.chmod(0o777)
    with pytest.raises(CacheUnavailable, match=rf"refusing the cache directory {path.parent}"):
        disk_cache(tmp_path / "c")


@pytest.mark.parametrize("sticky", [False, True])
def test_cache_inside_a_directory_others_can_write(tmp_path, sticky):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777 if sticky else 0o777)
    if sticky:  # /tmp-like: our own directory in it is safe
        assert disk_cache(shared / "c").load(KEY).obj is None
        return
    with pytest.raises(CacheUnavailable, match=f"refusing the cache directory .*{shared}"):
        disk_cache(shared / "c")


@pytest.mark.skipif(os.getuid() != 0, reason="chown to another user needs root")
def test_cache_inside_someone_elses_writable_directory(tmp_path):
    shared = tmp_path / "theirs"
    shared.mkdir()
    shared.chmod(0o1777)
    os.chown(shared, 65534, 65534)  # sticky, but its owner can still swap our directory
    with pytest.raises(CacheUnavailable, match="owned by uid 65534"):
        disk_cache(shared / "c")


def test_refused_tag_directory_warns_like_the_cache_directory(facade, caplog):
    cache.store(KEY, b"code")
    tag = DiskCache(facade, 1 << 30).path_for(KEY).parent
    tag.chmod(0o777)
    cache.reset()
    with caplog.at_level(logging.WARNING, logger="spirvjit"):
        assert cache.lookup(KEY) is None
        cache.store(KEY, b"code")
        assert cache.lookup(KEY).origin == "memory"
    assert len(caplog.records) == 1
    assert "refusing the cache directory" in caplog.records[0].getMessage()


@pytest.mark.skipif(os.getuid() != 0, reason="chown to another user needs root")
def test_foreign_directory_and_entry_are_refused(tmp_path):
    root = tmp_path / "c"
    disk = disk_cache(root)
    path = disk.store(KEY, b"code", "t")
    os.chown(path, 65534, 65534)
    result = disk.load(KEY)
    assert result.obj is None and "owned by uid 65534" in result.problem
    os.chown(root, 65534, 65534)
    with pytest.raises(CacheUnavailable, match="owned by uid 65534"):
        disk_cache(root)


def test_writable_or_linked_entry_is_refused(tmp_path):
    disk = disk_cache(tmp_path)
    path = disk.store(KEY, b"code", "t")
    path.chmod(0o666)
    assert "writable by group or others" in disk.load(KEY).problem
    path.rename(tmp_path / "elsewhere")
    path.symlink_to(tmp_path / "elsewhere")
    assert "symbolic link" in disk.load(KEY).problem


def test_fifo_at_an_entry_path_is_refused_without_waiting(tmp_path):
    """A FIFO planted at an entry's path: opening it for reading used to wait for a
    writer forever (the first launch hung)."""
    disk = disk_cache(tmp_path)
    path = disk.path_for(KEY)
    path.parent.mkdir(parents=True, mode=0o700)
    event = disk.events_dir / "saxpy.json"  # records are read the same way
    for fifo in (path, event):
        os.mkfifo(fifo, 0o600)
    found = []

    def read() -> None:
        found.append(disk.load(KEY))
        found.append(cache_records.read_event(disk.events_dir, "saxpy"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # unblock the stuck open() before failing
        os.close(os.open(event if found else path, os.O_WRONLY))
        pytest.fail("opening a FIFO in the cache blocked")
    assert found[0].obj is None and "not a regular file" in found[0].problem
    assert found[1] is None


# -- eviction --------------------------------------------------------------------------------


def _store_aged(disk: DiskCache, key: KernelKey, size: int, used: float) -> Path:
    path = disk.store(key, b"x" * size, "t")
    os.utime(path, (used, used))
    return path


def test_eviction_is_least_recently_used_and_stale_first(tmp_path):
    disk = disk_cache(tmp_path)
    now = time.time()
    paths = [
        _store_aged(disk, make_key(entry_point=f"k{i}"), 1000, now - 100 + i) for i in range(6)
    ]
    stale = _store_aged(disk, make_key(llvm_version="21.0.0"), 1000, now)  # newest, yet first
    sizes = {p: p.stat().st_size for p in [*paths, stale]}
    limit = sum(sizes.values()) * 3 // 4  # frees to 90 % of it: three of seven entries go
    report = disk.evict(limit)
    assert [e.path for e in report.removed] == [stale, paths[0], paths[1]]
    assert report.kept_bytes <= limit * cache_store.LOW_WATER
    assert not stale.parent.exists()  # the empty stale tag directory went too
    assert all(p.exists() for p in paths[2:])
    assert disk.evict(limit).removed == []  # under the limit: nothing to do


def test_prune_stale_and_dead_writers_temporaries(tmp_path):
    disk = disk_cache(tmp_path)
    stale = disk.store(make_key(spirvjit_version="0.0.9"), b"old", "t")
    current = disk.store(KEY, b"new", "t")
    old_temp = current.parent / ".x.sjc.1.aa.tmp"
    fresh_temp = current.parent / ".y.sjc.2.bb.tmp"
    for temp in (old_temp, fresh_temp):
        temp.write_bytes(b"half")
    os.utime(old_temp, (time.time() - 2 * cache_store.TEMP_MAX_AGE,) * 2)
    report = disk.evict(1 << 30, stale=True)
    assert [e.path for e in report.removed] == [stale]
    assert report.temporaries == 1 and fresh_temp.exists() and current.exists()


def test_automatic_eviction_is_rate_limited(tmp_path):
    disk = disk_cache(tmp_path, max_size=0, prune_interval=3600)
    disk.store(KEY, b"code", "t")
    assert disk.maybe_evict() is not None  # first time: runs, and empties a 0-byte cache
    disk.store(KEY, b"code", "t")
    assert disk.maybe_evict() is None
    assert disk.load(KEY).obj == b"code"


def kernel_object(key: KernelKey, symbol: str | None = None) -> bytes:
    """A host object defining the runner symbol ``key``'s program would look for."""
    import llvmlite.binding as llvm

    from spirvjit.backends.cpu import codegen
    from spirvjit.backends.cpu.objcheck import runner_prefix
    from spirvjit.target import host_target

    symbol = symbol or runner_prefix(key.spirv_digest, key.spec_constants) + ".k0.run"
    module = llvm.parse_assembly(f'define void @"{symbol}"(ptr %0) {{ ret void }}')
    return codegen.emit_object(module, host_target())


def test_verify_and_clear(tmp_path):
    disk = disk_cache(tmp_path)
    good = disk.store(KEY, kernel_object(KEY), "t")
    bad = disk.store(make_key(entry_point="bad"), b"bad code", "t")
    bad.write_bytes(bad.read_bytes()[:-3])
    checked, problems = disk.verify()
    assert checked == 2 and [p for p, _ in problems] == [bad]
    assert disk.verify(remove=True)[1] and not bad.exists() and good.exists()
    assert disk.clear() == 1 and disk.entries() == []


@pytest.mark.parametrize(
    "payload, why",
    [
        (lambda: b"\x7fELF not really", "unreadable object file"),
        (lambda: kernel_object(make_key(spirv_digest="ef" * 32)), "defines 0 symbols"),
        (lambda: kernel_object(KEY) + b"", None),
    ],
)
def test_verify_loads_what_it_checks(tmp_path, payload, why):
    """A forged entry (right digest, code of another program or none) passed verify."""
    disk = disk_cache(tmp_path)
    path = disk.store(KEY, payload(), "t")
    checked, problems = disk.verify()
    if why is None:
        assert (checked, problems) == (1, [])
    else:
        assert [p for p, _ in problems] == [path]
        assert "would not load" in problems[0][1] and why in problems[0][1]


# -- the facade: memory layer, warnings, degradation -----------------------------------------


def test_memory_layer_without_disk(facade, monkeypatch):
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    assert cache.lookup(KEY) is None
    cache.store(KEY, b"code")
    assert cache.lookup(KEY) == cache.Hit(b"code", "memory")
    assert not facade.exists()


def test_memory_layer_is_bounded(facade, monkeypatch):
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    monkeypatch.setattr(cache, "MEMORY_LIMIT", 10)
    cache.store(make_key(entry_point="a"), b"123456")
    cache.store(make_key(entry_point="b"), b"123456")
    assert cache.lookup(make_key(entry_point="a")) is None
    assert cache.lookup(make_key(entry_point="b")).obj == b"123456"


def test_disk_hit_in_a_new_process_state(facade):
    cache.store(KEY, b"code")
    cache.reset()  # as if another process
    assert cache.lookup(KEY) == cache.Hit(b"code", "disk")
    assert cache.lookup(KEY) == cache.Hit(b"code", "memory")
    counts = cache_records.totals(facade / "stats")
    assert (counts["compiles"], counts["disk_hits"], counts["memory_hits"]) == (1, 1, 1)


def test_corrupt_entry_warns_once_and_is_replaced(facade, caplog):
    cache.store(KEY, b"code")
    path = DiskCache(facade, 1 << 30).path_for(KEY)
    path.write_bytes(path.read_bytes()[:-1])
    cache.reset()
    with caplog.at_level(logging.WARNING, logger="spirvjit"):
        assert cache.lookup(KEY) is None
        assert cache.lookup(KEY) is None
        cache.store(KEY, b"code")
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "corrupt: SHA-256 mismatch" in warnings[0]
    assert str(path) in warnings[0]
    event = cache_records.read_event(facade / "events", "saxpy")
    assert event["origin"] == "compile" and "was corrupt" in event["detail"]
    cache.reset()
    assert cache.lookup(KEY).origin == "disk"
    assert cache_records.totals(facade / "stats")["corrupt"] == 1


def test_refused_directory_warns_once_and_keeps_memory(facade, caplog):
    facade.mkdir(mode=0o777)
    facade.chmod(0o777)
    with caplog.at_level(logging.WARNING, logger="spirvjit"):
        for _ in range(3):
            cache.store(KEY, b"code")
            assert cache.lookup(KEY).origin == "memory"
    assert len(caplog.records) == 1
    assert "refusing the cache directory" in caplog.records[0].getMessage()
    assert not (facade / "entries").exists()


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EDQUOT])
def test_full_or_read_only_disk_warns_once(facade, caplog, monkeypatch, code):
    def fail(path, data):
        raise OSError(code, os.strerror(code), str(path))

    monkeypatch.setattr(cache_store, "write_atomic", fail)
    with caplog.at_level(logging.WARNING, logger="spirvjit"):
        cache.store(KEY, b"code")
        cache.store(make_key(entry_point="other"), b"more")
    assert cache.lookup(KEY).origin == "memory"
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1 and os.strerror(code) in messages[0]


def test_uncreatable_directory_warns_once(facade, caplog, monkeypatch):
    blocker = facade.parent / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("SPIRVJIT_CACHE_DIR", str(blocker / "cache"))
    with caplog.at_level(logging.WARNING, logger="spirvjit"):
        cache.store(KEY, b"code")
        assert cache.lookup(KEY).origin == "memory"
    assert len(caplog.records) == 1
    assert "cannot create the cache directory" in caplog.records[0].getMessage()


def test_bad_max_size_warns_and_uses_default(facade, caplog, monkeypatch):
    monkeypatch.setenv("SPIRVJIT_CACHE_MAX_SIZE", "huge")
    with caplog.at_level(logging.WARNING, logger="spirvjit"):
        cache.store(KEY, b"code")
    assert "SPIRVJIT_CACHE_MAX_SIZE: 'huge' is not a size" in caplog.text
    assert cache.lookup(KEY) is not None


def test_compile_explains_the_nearest_entry(facade, caplog, monkeypatch):
    monkeypatch.setenv("SPIRVJIT_DEBUG", "1")
    cache.store(KEY, b"v1")
    cache.store(make_key(entry_point="other"), b"unrelated")
    changed = make_key(spirv_digest="99" * 32)
    with caplog.at_level(logging.INFO, logger="spirvjit"):
        cache.store(changed, b"v2")
    event = cache_records.read_event(facade / "events", "saxpy")
    assert event["origin"] == "compile"
    assert list(event["nearest"]["differences"]) == ["spirv_digest"]
    assert event["nearest"]["differences"]["spirv_digest"] == ["ab" * 32, "99" * 32]
    assert "differs in spirv_digest" in caplog.text


# -- counters --------------------------------------------------------------------------------


def test_a_record_nested_past_the_recursion_limit_reads_as_damaged(tmp_path):
    """A stats or event record is read as damaged (None), whatever its bytes: JSON nested
    200,000 deep (under the 1 MiB record limit) raised RecursionError out of totals()."""
    (tmp_path / "deep-1-2.json").write_text("[" * 200_000)
    (tmp_path / "ok-1-3.json").write_text('{"disk_hits": 5}')
    assert cache_records.totals(tmp_path)["disk_hits"] == 5


def test_counters_fold_ended_processes_once(tmp_path):
    counters = cache_records.Counters(tmp_path)
    counters.add("compiles", 2)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], **_text)
    host = os.uname().nodename
    for i in range(3):
        (tmp_path / f"{host}-{int(dead.stdout)}-{i:08x}.json").write_text('{"disk_hits": 5}')
    (tmp_path / "garbage-1-2.json").write_text("{not json")
    before = cache_records.totals(tmp_path)
    assert (before["compiles"], before["disk_hits"]) == (2, 15)
    assert cache_records.fold(tmp_path) == 3
    assert cache_records.fold(tmp_path) == 0
    assert cache_records.totals(tmp_path) == before
    assert counters.path.exists() and len(list(tmp_path.iterdir())) == 3


_text = dict(capture_output=True, text=True, check=True)


# -- crashes ---------------------------------------------------------------------------------

_WRITER = """
import sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from test_cache import KEY, disk_cache
disk = disk_cache(Path({root!r}))
i = 0
while True:
    i += 1
    disk.store(KEY, bytes([i % 251]) * (4 << 20), "t")
    if i == 1:
        print("stored", flush=True)
"""


def test_sigkill_during_writes_never_leaves_a_half_entry(tmp_path):
    root = tmp_path / "c"
    disk = disk_cache(root)
    script = _WRITER.format(tests=str(Path(__file__).parent), root=str(root))
    for delay in (0.0, 0.013, 0.05, 0.021, 0.1, 0.037):  # a 4 MiB store takes ~10 ms
        writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
        assert writer.stdout.readline() == b"stored\n"
        time.sleep(delay)
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        writer.stdout.close()
        result = disk.load(KEY)
        assert result.problem is None and len(result.obj) == 4 << 20
        assert result.obj == result.obj[:1] * len(result.obj)  # one whole store's bytes
    temps = [p for p in disk.path_for(KEY).parent.iterdir() if p.name.endswith(".tmp")]
    for temp in temps:  # left by killed writers; never loaded, pruned once old
        os.utime(temp, (0, 0))
    assert disk.evict(1 << 30).temporaries == len(temps)
