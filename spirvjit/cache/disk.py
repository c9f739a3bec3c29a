"""The persistent cache's files: layout, safety checks, atomic writes, eviction.

Layout under the cache root (every directory 0700, owned by the user)::

    CACHEDIR.TAG                       tells backup tools to skip the directory
    entries/<tag>/<kernel>.<key digest>.sjc
    events/<kernel>.json               the last first launch of each kernel (cache_records)
    stats/<host>-<pid>-<nonce>.json    hit/miss counters, one file per process (cache_records)
    prune.stamp                        its mtime is when eviction last ran

``<tag>`` digests the entry format, spirvjit's version, LLVM's version and the
compiler digest: entries of another install live in another tag directory, so they
are never looked up and eviction finds them without reading a file.

Rules (see docs/cache.md): writes go to a temporary file in the same directory and
are renamed into place, so a reader sees a whole entry or none, also across NFS
clients and after SIGKILL; entries are read fully into memory (never mmap'ed: another
process may replace or truncate the file) and verified by ``cache_format.decode``; no
file locks anywhere. A directory or entry that another user owns, or that group or
others may write, is refused: its payload is native code this process would run.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..files import TEMP_SUFFIX, write_atomic
from ..safe_paths import parents_problem
from . import format as cache_format
from .format import CorruptEntry
from .key import KernelKey

ENTRY_SUFFIX = ".sjc"
MAX_ENTRY_BYTES = 256 << 20  # a kernel object is KiB to a few MiB; more is not an entry
TEMP_MAX_AGE = 3600.0  # older temporary files were left by a writer that died
PRUNE_INTERVAL = 60.0  # automatic eviction runs at most this often per cache directory
LOW_WATER = 0.9  # eviction frees down to this fraction of the limit, so it runs rarely
_FILE_SAFE = re.compile(r"[^A-Za-z0-9_]")
_CACHEDIR_TAG = b"Signature: 8a477f597d28d172789f06886806bc55\n# spirvjit kernel cache\n"


class CacheUnavailable(Exception):
    """The cache directory cannot be used (safely); the message says what, where, what to do."""


def file_stem(kernel: str) -> str:
    """A kernel name as a file-name fragment (entry and event files start with it)."""
    return _FILE_SAFE.sub("_", kernel)[:64] or "_"


def tag_of(spirvjit_version: str, llvm_version: str, compiler_digest: str) -> str:
    """The tag directory of entries made by this format, spirvjit, LLVM and compiler."""
    text = f"{cache_format.FORMAT}|{spirvjit_version}|{llvm_version}|{compiler_digest}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def key_tag(key: KernelKey) -> str:
    return tag_of(key.spirvjit_version, key.llvm_version, key.compiler_digest)


def current_tag() -> str:
    """The tag of entries this installation makes (others are stale to it)."""
    from .. import __version__
    from .key import compiler_digest, llvm_version

    return tag_of(__version__, llvm_version(), compiler_digest())


def unsafe_reason(st: os.stat_result) -> str | None:
    """Why a file or directory with this status must not be trusted, or None."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    if uid is not None and st.st_uid != uid:
        return f"is owned by uid {st.st_uid}, not by this user (uid {uid})"
    if st.st_mode & 0o022:
        return f"is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def secure_dir(path: Path) -> None:
    """Creates ``path`` (mode 0700) if missing; raises CacheUnavailable if it is unsafe."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.stat()
    except OSError as exc:
        raise CacheUnavailable(
            f"cannot create the cache directory {path}: {exc.strerror}; "
            "set SPIRVJIT_CACHE_DIR to a writable directory or SPIRVJIT_CACHE=0"
        ) from None
    if not stat.S_ISDIR(st.st_mode):
        raise CacheUnavailable(f"{path} is not a directory; remove it or set SPIRVJIT_CACHE_DIR")
    why = unsafe_reason(st)
    if why:
        raise _refusal(path, why)


def _refusal(path: Path, why: str) -> CacheUnavailable:
    return CacheUnavailable(
        f"refusing the cache directory {path}: it {why}, and its entries are native code "
        f"this process would run; fix it (chown/chmod go-w) or set SPIRVJIT_CACHE_DIR"
    )


def check_existing_dir(path: Path) -> None:
    """Raises CacheUnavailable, as ``secure_dir`` does, if ``path`` exists and is unsafe."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    why = "is not a directory" if not stat.S_ISDIR(st.st_mode) else unsafe_reason(st)
    if why:
        raise _refusal(path, why)


def read_trusted(path: Path, limit: int = MAX_ENTRY_BYTES) -> bytes:
    """The whole file, read into memory after checking that it is safe to trust.

    Raises FileNotFoundError, CacheUnavailable (unsafe file: symlink, not a regular
    file, foreign owner, group/other-writable) or another OSError.
    """
    # O_NONBLOCK: opening a FIFO (or a device) planted at an entry's path must not wait
    # for a writer; it is refused below as not a regular file. Regular files ignore it.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CacheUnavailable(f"{path} is a symbolic link") from None
        raise
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)  # the status of what we read, not of what the name points to now
        if not stat.S_ISREG(st.st_mode):
            raise CacheUnavailable(f"{path} is not a regular file")
        why = unsafe_reason(st)
        if why:
            raise CacheUnavailable(f"{path} {why}")
        return f.read(limit + 1)


@dataclass(frozen=True)
class EntryFile:
    """One entry file as listed (no content read)."""

    path: Path
    size: int
    mtime: float  # the last use: set when stored and on every disk hit
    stale: bool  # made by another spirvjit, LLVM or compiler: never used here


@dataclass(frozen=True)
class LoadResult:
    """What a disk lookup found: ``obj`` on a hit; ``problem`` when an entry was unusable."""

    obj: bytes | None
    path: Path
    problem: str | None = None
    header: dict | None = None


@dataclass
class PruneReport:
    removed: list[EntryFile] = field(default_factory=list)
    temporaries: int = 0
    kept_bytes: int = 0


class DiskCache:
    """One cache directory. Construction creates and checks it (CacheUnavailable).

    ``tag`` is the current installation's tag (tests pass their own); ``max_size`` the
    limit automatic eviction keeps, ``prune_interval`` how often it may run.
    """

    def __init__(
        self,
        root: Path,
        max_size: int,
        *,
        tag: str | None = None,
        prune_interval: float = PRUNE_INTERVAL,
    ):
        self.root = Path(root)
        self.max_size = max_size
        self.tag = tag or current_tag()
        self.prune_interval = prune_interval
        self.entries_dir = self.root / "entries"
        self.events_dir = self.root / "events"
        self.stats_dir = self.root / "stats"
        for directory in (self.root, self.entries_dir, self.events_dir, self.stats_dir):
            secure_dir(directory)
        # Whoever can write a directory above the cache can swap the whole cache for theirs.
        why = parents_problem(self.root)
        if why:
            raise CacheUnavailable(
                f"refusing the cache directory {self.root}: {why}, and its entries are "
                "native code this process would run; move it (SPIRVJIT_CACHE_DIR) or fix that"
            )
        check_existing_dir(self.entries_dir / self.tag)  # created 0700 by the first store
        self._checked_dirs: set[Path] = set()
        tag_file = self.root / "CACHEDIR.TAG"
        if not tag_file.exists():
            with contextlib.suppress(OSError):  # only a courtesy to backup tools
                write_atomic(tag_file, _CACHEDIR_TAG)

    def path_for(self, key: KernelKey) -> Path:
        """Where the entry of ``key`` lives (whether or not it exists)."""
        name = f"{file_stem(key.entry_point)}.{key.digest()}{ENTRY_SUFFIX}"
        return self.entries_dir / key_tag(key) / name

    def _path_for_parts(self, parts: dict) -> Path:
        """``path_for`` of a key known only by its recorded parts (KeyError, TypeError)."""
        tag = tag_of(parts["spirvjit_version"], parts["llvm_version"], parts["compiler_digest"])
        name = f"{file_stem(parts['entry_point'])}.{cache_format.parts_digest(parts)}"
        return self.entries_dir / tag / f"{name}{ENTRY_SUFFIX}"

    def load(self, key: KernelKey) -> LoadResult:
        """The verified object code for ``key``; a missing or unusable entry is a miss.

        Raises CacheUnavailable when the entry's tag directory is unsafe (like the root).
        """
        path = self.path_for(key)
        if path.parent not in self._checked_dirs:
            check_existing_dir(path.parent)
            if path.parent.exists():
                self._checked_dirs.add(path.parent)
        try:
            data = read_trusted(path)
        except FileNotFoundError:
            return LoadResult(None, path)
        except CacheUnavailable as exc:
            return LoadResult(None, path, f"refused: {exc}")
        except OSError as exc:
            return LoadResult(None, path, f"unreadable: {exc.strerror}")
        try:
            header, payload = cache_format.decode(data, key)
        except CorruptEntry as exc:
            return LoadResult(None, path, f"corrupt: {exc}")
        with contextlib.suppress(OSError):  # the use time; a read-only cache still serves
            os.utime(path)
        return LoadResult(payload, path, header=header)

    def store(self, key: KernelKey, obj: bytes, target: str) -> Path:
        """Writes the entry for ``key`` atomically; raises OSError or CacheUnavailable."""
        path = self.path_for(key)
        data = cache_format.encode(key, obj, target)
        if path.parent not in self._checked_dirs:
            secure_dir(path.parent)
            self._checked_dirs.add(path.parent)
        try:
            write_atomic(path, data)
        except FileNotFoundError:
            # The directory went away after it was checked (``rm -rf`` of the cache by
            # hand or a test, a clear in another process): make and check the whole
            # chain again, once, rather than stop caching for the rest of the process.
            self._checked_dirs.discard(path.parent)
            for directory in (self.root, self.entries_dir, path.parent):
                secure_dir(directory)
            self._checked_dirs.add(path.parent)
            write_atomic(path, data)
        return path

    def _scan(self) -> Iterator[tuple[os.DirEntry, bool]]:
        """Every file in the tag directories, with whether its tag is stale."""
        with contextlib.suppress(FileNotFoundError), os.scandir(self.entries_dir) as tags:
            for tag in tags:
                if not tag.is_dir(follow_symlinks=False):
                    continue
                with contextlib.suppress(FileNotFoundError), os.scandir(tag.path) as files:
                    for entry in files:
                        yield entry, tag.name != self.tag

    def entries(self) -> list[EntryFile]:
        """Every entry file, oldest use first."""
        found = []
        for entry, stale in self._scan():
            if entry.name.endswith(ENTRY_SUFFIX) and not entry.name.startswith("."):
                with contextlib.suppress(FileNotFoundError):  # evicted meanwhile
                    st = entry.stat(follow_symlinks=False)
                    found.append(EntryFile(Path(entry.path), st.st_size, st.st_mtime, stale))
        return sorted(found, key=lambda e: e.mtime)

    def read_header(self, path: Path) -> dict:
        """The header of the entry at ``path`` (CorruptEntry, CacheUnavailable, OSError)."""
        return cache_format.decode_header(read_trusted(path))

    def candidates(self, kernel: str) -> list[EntryFile]:
        """Entries whose file name says kernel ``kernel`` (any version), newest use first."""
        prefix = f"{file_stem(kernel)}."
        return [e for e in reversed(self.entries()) if e.path.name.startswith(prefix)]

    def maybe_evict(self) -> PruneReport | None:
        """Evicts if the last eviction (of any process) is ``prune_interval`` old."""
        stamp = self.root / "prune.stamp"
        now = time.time()
        try:
            if now - stamp.stat().st_mtime < self.prune_interval:
                return None
            os.utime(stamp)
        except FileNotFoundError:
            write_atomic(stamp, b"")
        return self.evict(self.max_size)

    def evict(self, max_size: int, *, stale: bool = False) -> PruneReport:
        """Frees space: stale entries first, then least recently used, to 90 % of the limit.

        Only when the entries exceed ``max_size``; ``stale=True`` removes every entry of
        another installation regardless. Also removes temporary files of dead writers.
        """
        report = PruneReport()
        now = time.time()
        entries: list[EntryFile] = []
        for entry, is_stale in self._scan():
            with contextlib.suppress(FileNotFoundError):
                st = entry.stat(follow_symlinks=False)
                if entry.name.endswith(TEMP_SUFFIX):
                    if now - st.st_mtime > TEMP_MAX_AGE and _unlink(Path(entry.path)):
                        report.temporaries += 1
                elif entry.name.endswith(ENTRY_SUFFIX):
                    entries.append(EntryFile(Path(entry.path), st.st_size, st.st_mtime, is_stale))
        total = sum(e.size for e in entries)
        limit = max_size if total > max_size else None
        for e in sorted(entries, key=lambda e: (not e.stale, e.mtime)):
            over = limit is not None and total > limit * LOW_WATER
            if (over or (stale and e.stale)) and _unlink(e.path):
                report.removed.append(e)
                total -= e.size
        report.kept_bytes = total
        with contextlib.suppress(FileNotFoundError), os.scandir(self.entries_dir) as tags:
            for tag in tags:
                if tag.name != self.tag:
                    with contextlib.suppress(OSError):  # only succeeds once it is empty
                        os.rmdir(tag.path)
        return report

    def verify(self, *, remove: bool = False) -> tuple[int, list[tuple[Path, str]]]:
        """Checks every entry fully; returns (entries checked, [(path, problem)])."""
        problems = []
        entries = self.entries()
        for e in entries:
            try:
                header, payload = cache_format.decode(read_trusted(e.path))
                if e.path != self._path_for_parts(header["key"]):
                    raise CorruptEntry("its path does not match the recorded key")
                why = _load_problem(header["key"], payload)
                if why:
                    raise CorruptEntry(f"its object code would not load: {why}")
            except (CorruptEntry, CacheUnavailable, KeyError, TypeError) as exc:
                problems.append((e.path, str(exc)))
            except FileNotFoundError:
                continue
            except OSError as exc:
                problems.append((e.path, f"unreadable: {exc.strerror}"))
        if remove:
            for path, _ in problems:
                _unlink(path)
        return len(entries), problems

    def clear(self) -> int:
        """Removes every entry, temporary file, event and counter; returns entries removed."""
        removed = 0
        for entry, _ in list(self._scan()):
            if _unlink(Path(entry.path)) and entry.name.endswith(ENTRY_SUFFIX):
                removed += 1
        for directory in (self.events_dir, self.stats_dir):
            for path in directory.iterdir():
                _unlink(path)
        _unlink(self.root / "prune.stamp")
        self.evict(self.max_size)  # drops the now empty stale tag directories
        return removed


def _load_problem(parts: dict, payload: bytes) -> str | None:
    """Why a verified entry's object code would still not load as its kernel, or None.

    Loads it as a launch would (symbols, then a trial link on this machine's triple).
    GPU code objects are checked by their digest only: loading them needs the device.
    """
    triple = parts["triple"]
    if not isinstance(triple, str) or triple.startswith(("amdgcn", "nvptx")):
        return None
    from ..backends.cpu.objcheck import runner_prefix, trial_load

    prefix = runner_prefix(parts["spirv_digest"], parts["spec_constants"])
    return trial_load(payload, prefix, triple)


def _unlink(path: Path) -> bool:
    """Removes a file; False if it was already gone (another process got there first)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True
