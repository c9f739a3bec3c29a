"""Caches of compiled kernels (native object code), keyed by ``KernelKey``: the JIT's seam.

Two layers, asked in order by ``Program.object_code``:

* memory: process-wide, so a second Program of the same SPIR-V gets its kernels'
  object code from a dict, without compiling (bounded to ``MEMORY_LIMIT`` bytes, least
  recently used first out);
* disk: ``disk.DiskCache`` at ``config.cache_dir()``, shared by processes, unless
  ``SPIRVJIT_CACHE=0``.

Every lookup that hits, and every ``store`` (a compile), records an event: a counter,
the kernel's last-event record (read by ``spirvjit cache explain``) and, under
SPIRVJIT_DEBUG, a line on the ``spirvjit`` logger saying where the code came from and,
for a compile, which key part differed from the nearest cached entry.

Nothing here raises into a launch. A disk problem is logged once per process (logger
``spirvjit``, WARNING), and the process goes on with the memory layer.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from .. import config
from . import format as cache_format
from . import records as cache_records
from .disk import CacheUnavailable, DiskCache
from .key import KernelKey

log = logging.getLogger("spirvjit")

MEMORY_LIMIT = 256 << 20
NEAREST_CANDIDATES = 32  # entries of the same kernel name compared to explain a miss


@dataclass(frozen=True)
class Hit:
    obj: bytes
    origin: str  # "memory" or "disk"


_lock = threading.RLock()
_memory: OrderedDict[KernelKey, bytes] = OrderedDict()
_memory_bytes = 0
_disks: dict[Path, DiskCache | str] = {}  # cache root -> the open cache, or why it is not
_counters: dict[Path, cache_records.Counters] = {}
_read_only: set[Path] = set()  # roots where a store failed: no more writes this process
_problems: dict[KernelKey, str] = {}  # why the disk entry of a key was unusable
_refused: set[KernelKey] = set()  # keys whose disk entry did not load: not read again
_warned: set[str] = set()


def lookup(key: KernelKey) -> Hit | None:
    """The object code cached for ``key`` in memory or on disk, or None (a miss).

    A hit records its event; a miss records nothing until ``store``.
    """
    with _lock:
        obj = _memory.get(key)
        if obj is not None:
            _memory.move_to_end(key)
    if obj is not None:
        _event(key, "memory", "object code compiled or loaded earlier by this process")
        return Hit(obj, "memory")
    disk = _disk()
    if disk is None or key in _refused:
        return None
    try:
        result = disk.load(key)
    except CacheUnavailable as exc:  # an unsafe tag directory: as for an unsafe root
        _give_up(disk.root, exc)
        return None
    if result.problem:
        with _lock:
            _problems[key] = f"the entry {result.path.name} was {result.problem}"
        first = _warn_once(
            str(result.path),
            f"spirvjit: cache entry {result.path} {result.problem}; ignoring it, "
            "the kernel is compiled again and the entry replaced",
        )
        if first:
            _count(disk, "corrupt")
    if result.obj is None:
        return None
    _remember(key, result.obj)
    stored = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(result.header["created"]))
    _event(key, "disk", f"entry {result.path.name}, stored {stored}")
    return Hit(result.obj, "disk")


def load(key: KernelKey) -> bytes | None:
    """The object code cached for ``key``, or None (``lookup`` without the origin)."""
    hit = lookup(key)
    return hit.obj if hit else None


def store(key: KernelKey, obj: bytes) -> None:
    """Remembers ``obj``, just compiled, as the object code for ``key``; records the compile.

    On disk the entry is written atomically, then eviction may run: at most once per
    ``DiskCache.prune_interval`` per directory, only after a compile (which costs far
    more), never on a hit or in a launch of an already compiled kernel.
    """
    _remember(key, obj)
    disk = _disk()
    reason, nearest = _explain_miss(key, disk)
    if disk is not None and disk.root not in _read_only:
        try:
            disk.store(key, obj, f"{key.triple}:{key.cpu}")
            _refused.discard(key)  # replaced by what was just compiled
            pruned = disk.maybe_evict()
        except CacheUnavailable as exc:
            _give_up(disk.root, exc)
        except OSError as exc:
            with _lock:
                _read_only.add(disk.root)
            _warn_once(
                f"store:{disk.root}",
                f"spirvjit: cannot write to the kernel cache {disk.root} "
                f"({getattr(exc, 'strerror', None) or exc}); compiled kernels are kept in "
                "memory only for this process. Free space or fix the directory's permissions, "
                "or set SPIRVJIT_CACHE_DIR or SPIRVJIT_CACHE=0",
            )
        else:
            if pruned and pruned.removed:
                _count(disk, "evicted", len(pruned.removed))
    _event(key, "compile", reason, nearest)


def persistent() -> bool:
    """Whether a ``store`` now would write to the disk cache (on, usable, and no write
    failed in this process), as the current settings say (``config.using``)."""
    disk = _disk()
    return disk is not None and disk.root not in _read_only


def discard(key: KernelKey, why: str) -> None:
    """Forgets the object code cached for ``key`` (memory and disk): it did not load.

    A forged or damaged entry whose digest is right (someone recomputed it) would
    otherwise break the kernel in every later process. One warning per entry; the next
    ``store`` (the recompile) writes a good entry and its event says why.
    """
    global _memory_bytes
    with _lock:
        obj = _memory.pop(key, None)
        if obj is not None:
            _memory_bytes -= len(obj)
    disk = _disk()
    if disk is None:
        return
    path = disk.path_for(key)
    with _lock:
        _problems[key] = f"the entry {path.name} did not load ({why})"
        _refused.add(key)  # also when it cannot be removed (a read-only cache)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        why += f"; it cannot be removed: {exc.strerror}"
    if _warn_once(
        f"load:{path}",
        f"spirvjit: cache entry {path} did not load ({why}); dropped it, the kernel is "
        "compiled again",
    ):
        _count(disk, "corrupt")


def _remember(key: KernelKey, obj: bytes) -> None:
    global _memory_bytes
    with _lock:
        if key in _memory:
            return
        _memory[key] = obj
        _memory_bytes += len(obj)
        while _memory_bytes > MEMORY_LIMIT and len(_memory) > 1:
            _memory_bytes -= len(_memory.popitem(last=False)[1])


def _disk() -> DiskCache | None:
    """The disk cache configured now, or None when it is off or unusable (warned once)."""
    if not config.cache_enabled():
        return None
    root = config.cache_dir()
    with _lock:
        found = _disks.get(root)
        if found is None:
            found = _disks[root] = _open(root)
    return found if isinstance(found, DiskCache) else None


def _open(root: Path) -> DiskCache | str:
    try:
        max_size = config.cache_max_size()
    except ValueError as exc:
        max_size = config.DEFAULT_CACHE_MAX_SIZE
        _warn_once("max_size", f"spirvjit: {exc}; using the default, 1G")
    try:
        return DiskCache(root, max_size)
    except CacheUnavailable as exc:
        _warn_once(f"open:{root}", f"spirvjit: {exc}. Continuing with the in-memory cache only")
        return str(exc)


def _give_up(root: Path, exc: CacheUnavailable) -> None:
    """Stops using the disk cache at ``root`` in this process, with ``_open``'s warning."""
    with _lock:
        _disks[root] = str(exc)
    _warn_once(f"open:{root}", f"spirvjit: {exc}. Continuing with the in-memory cache only")


def _explain_miss(key: KernelKey, disk: DiskCache | None) -> tuple[str, dict | None]:
    """Why ``key`` missed the cache, and the nearest entry's differing parts (or None)."""
    if disk is None:
        if not config.cache_enabled():
            return "the disk cache is off (SPIRVJIT_CACHE=0)", None
        return f"the disk cache is unavailable: {_disks.get(config.cache_dir())}", None
    with _lock:
        problem = _problems.pop(key, None)
    if problem:
        return f"{problem}; compiled again and replaced", None
    wanted = key.parts()
    best: tuple[list[str], Path, dict] | None = None
    for entry in disk.candidates(key.entry_point)[:NEAREST_CANDIDATES]:
        try:
            parts = disk.read_header(entry.path)["key"]
        except (OSError, CacheUnavailable, cache_format.CorruptEntry):
            continue
        if parts.get("entry_point") != key.entry_point:
            continue  # another kernel whose name maps to the same file-name stem
        diff = cache_format.differences(parts, wanted)
        if best is None or len(diff) < len(best[0]):
            best = (diff, entry.path, parts)
    if best is None:
        return f"no cached entry of kernel {key.entry_point} in {disk.root}", None
    diff, path, parts = best
    if not diff:
        return (
            f"the entry {path.name} has this key: another process stored it while this one "
            "compiled, or SPIRVJIT_DUMP forced a compile",
            None,
        )
    nearest = {
        "entry": path.name,
        "differences": {name: [parts.get(name), wanted.get(name)] for name in diff},
    }
    return f"the nearest cached entry, {path.name}, differs in {', '.join(diff)}", nearest


def _event(key: KernelKey, origin: str, detail: str, nearest: dict | None = None) -> None:
    """Records one first launch: counter, last-event record, debug log."""
    if config.debug():
        log.info("spirvjit: cache %s for %s: %s", origin, key.entry_point, detail)
    disk = _disk()
    if disk is None:
        return
    counter = {"memory": "memory_hits", "disk": "disk_hits", "compile": "compiles"}[origin]
    record = {
        "kernel": key.entry_point,
        "origin": origin,
        "detail": detail,
        "nearest": nearest,
        "time": time.time(),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "target": f"{key.triple}:{key.cpu}",
        "key": key.parts(),
    }
    _count(disk, counter)
    try:
        cache_records.write_event(disk.events_dir, record)
    except OSError as exc:
        _records_failed(disk, exc)


def _count(disk: DiskCache, name: str, count: int = 1) -> None:
    with _lock:
        counters = _counters.get(disk.root)
        if counters is None:
            counters = _counters[disk.root] = cache_records.Counters(disk.stats_dir)
        try:
            counters.add(name, count)
        except OSError as exc:
            _records_failed(disk, exc)


def _records_failed(disk: DiskCache, exc: OSError) -> None:
    _warn_once(
        f"records:{disk.root}",
        f"spirvjit: cannot record cache statistics in {disk.root} ({exc.strerror}); "
        "`spirvjit cache stats` and `explain` will miss this process's launches",
    )


def _warn_once(topic: str, message: str) -> bool:
    """Logs ``message`` unless a warning on ``topic`` was given; True if it logged."""
    with _lock:
        if topic in _warned:
            return False
        _warned.add(topic)
    log.warning(message)
    return True


def reset() -> None:
    """Forgets the memory layer, open directories and given warnings (for tests)."""
    global _memory_bytes
    with _lock:
        _memory.clear()
        _memory_bytes = 0
        _disks.clear()
        _counters.clear()
        _read_only.clear()
        _problems.clear()
        _refused.clear()
        _warned.clear()
