"""A cache of front-end results: source text → SPIR-V, so the same source compiles once.

``compile_cached`` wraps a front end's compile function (OpenCL C, HIP). Its result is
kept in a process-wide dict and in the persistent cache directory (``sources/`` beside
the kernel cache's ``entries/``), under a key of:

* the language, the source text, the options and the front end's settings (producer,
  file name);
* the compilers' identity: each tool's resolved path, size and modification time (a
  package upgrade replaces the binary; the libraries of Debian's clang come in lockstep
  with it), and a digest of spirvjit's front-end code and its version;
* the environment variables clang reads include paths from, and the working directory
  when an option names a relative path.

Header files cannot be known before compiling, so an entry also records what clang's
dependency output (``-MD -MF``) says the compile read: every included file with the
SHA-256 of its contents, and the modification time of every include directory and of
each header's directory (a new file that would shadow a header changes them). A lookup
re-hashes those files; any difference is a miss, the source is compiled again and the
entry replaced. So editing a header, even to the same size within one timestamp tick,
always recompiles.

Warnings the compiler printed are stored with the result and logged again on every hit,
as a compile would log them. Disk entries follow the kernel cache's rules
(``spirvjit.cache.disk``): directories 0700 and owned by the user (else refused, memory only),
files written atomically and read whole through ``read_trusted``, every entry checked by
its SHA-256 and its recorded key. A disk problem never raises: it is logged once and the
source compiled.

``SPIRVJIT_SOURCE_CACHE=0`` turns the whole source cache off; ``SPIRVJIT_CACHE=0`` only
its disk layer. Options that change what the compiler writes (``-M…``, ``-E``,
``-save-temps``) and sources that use ``__DATE__``, ``__TIME__`` or ``__TIMESTAMP__``
bypass it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import struct
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import config
from ..toolchain import TOOL_NAMES, find_tool, require_tool

log = logging.getLogger("spirvjit")

MAGIC = b"SJITS\x00\x00\x01"  # the last byte is the format version
FORMAT = 1
ENTRY_SUFFIX = ".sjs"
MEMORY_LIMIT = 64 << 20  # SPIR-V modules are KiB; this is thousands of them
DISK_SHARE = 8  # the sources directory may use 1/8 of SPIRVJIT_CACHE_MAX_SIZE
PRUNE_INTERVAL = 60.0
_PREFIX = struct.Struct(">8sI")
_DIGEST = 32
# Environment variables clang reads header search paths from.
_INCLUDE_ENV = ("CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "OBJC_INCLUDE_PATH")
# Options whose value is a path the compile reads (attached, "-Idir", or the next word).
_PATH_FLAGS = ("-I", "-isystem", "-iquote", "-idirafter", "-include", "-imacros", "-isysroot")
_DIR_FLAGS = ("-I", "-isystem", "-iquote", "-idirafter")
_BYPASS = ("-M", "-E", "-save-temps", "--save-temps")
# A source that expands these compiles differently every time.
_TIME_MACROS = ("__DATE__", "__TIME__", "__TIMESTAMP__")
DEPENDENCY_TARGET = "spirvjit-source"
# A file the compile read that was modified this recently before the compile started
# (or later) keeps the result out of the cache: timestamps are coarse (a clock tick).
TOO_NEW_NS = 1_000_000_000


def driver_dependency_options(path: str) -> list[str]:
    """clang driver flags that write the files a compile read (system headers too) to ``path``."""
    return ["-MD", "-MF", path, "-MT", DEPENDENCY_TARGET]


def cc1_dependency_options(path: str) -> list[str]:
    """The same through ``-Xclang``: clang's HIP device-only compile ignores ``-MD -MF``."""
    flags = ["-dependency-file", path, "-MT", DEPENDENCY_TARGET, "-sys-header-deps"]
    return [word for flag in flags for word in ("-Xclang", flag)]


@dataclass(frozen=True)
class Entry:
    """A cached result: the SPIR-V, what the compile read, and what it warned about."""

    spirv: bytes
    files: tuple[tuple[str, str], ...]  # (absolute path, sha256 of its contents)
    dirs: tuple[tuple[str, int], ...]  # (absolute directory, mtime_ns; -1 when missing)
    warnings: tuple[str, ...]


_lock = threading.RLock()
_memory: OrderedDict[str, Entry] = OrderedDict()
_memory_bytes = 0
_counts = {"memory": 0, "disk": 0, "compile": 0, "bypass": 0}
_warned: set[str] = set()
_disk_off: set[Path] = set()  # roots refused or unwritable this process
_checked: set[Path] = set()  # directories found safe this process


# --- the key -----------------------------------------------------------------------------------


@functools.cache
def frontend_digest() -> str:
    """Digest of spirvjit's front-end code: its defaults and flags decide the SPIR-V."""
    from .. import __version__

    digest = hashlib.sha256(f"{FORMAT}|{__version__}|".encode())
    for path in sorted(Path(__file__).resolve().parent.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def tool_identity(name: str) -> str:
    """``path:size:mtime_ns`` of tool ``name`` (CompileError from require_tool if missing).

    A name ending in ``?`` is a tool the front end may use: ``name:absent`` when it is
    not installed or not a tool this spirvjit knows.
    """
    if name.endswith("?"):
        name = name[:-1]
        found = find_tool(name) if name in TOOL_NAMES else None
        if found is None:
            return f"{name}:absent"
        path = os.path.realpath(found)
    else:
        path = os.path.realpath(require_tool(name, "compiling sources to SPIR-V"))
    st = os.stat(path)
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


def _path_values(options: Sequence[str], flags: Sequence[str]) -> list[str]:
    """Values of the path options in ``flags``: ``-Idir``, ``-I dir`` and ``-I=dir`` alike."""
    by_length = sorted(flags, key=len, reverse=True)  # -isystem before -I... never collide
    values = []
    for i, option in enumerate(options):
        flag = next((f for f in by_length if option.startswith(f)), None)
        if flag is None:
            continue
        if option == flag:
            if i + 1 < len(options):
                values.append(options[i + 1])
        else:
            values.append(option[len(flag) :].removeprefix("="))
    return values


def _include_dirs(options: Sequence[str]) -> list[str]:
    dirs = [os.path.abspath(d) for d in _path_values(options, _DIR_FLAGS) if d]
    for var in _INCLUDE_ENV:
        dirs += [os.path.abspath(d) for d in os.environ.get(var, "").split(os.pathsep) if d]
    return dirs


def source_key(
    language: str,
    source: str,
    options: Sequence[str],
    settings: Mapping[str, str],
    tools: Sequence[str],
) -> tuple[str, dict]:
    """The key digest and its readable parts (without the source text, which is hashed)."""
    relative = any(not os.path.isabs(v) for v in _path_values(options, _PATH_FLAGS))
    parts = {
        "language": language,
        "source_sha256": hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest(),
        "options": list(options),
        "settings": dict(sorted(settings.items())),
        "tools": [tool_identity(t) for t in tools],
        "frontend": frontend_digest(),
        "environment": {v: os.environ[v] for v in _INCLUDE_ENV if v in os.environ},
        "cwd": os.getcwd() if relative else None,
    }
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest(), parts


# --- dependency files --------------------------------------------------------------------------


def parse_dependencies(text: str) -> list[str]:
    """The prerequisites of a Makefile rule as clang's ``-MD -MF`` writes it.

    Handles continuation lines and the escapes clang writes: ``\\ `` (space), ``\\#``
    and ``$$``. The first prerequisite (the main source file) is included.
    """
    text = text.replace("\\\r\n", " ").replace("\\\n", " ")
    words: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in " #\\":
            current.append(text[i + 1])
            i += 2
            continue
        if ch == "$" and text[i + 1 : i + 2] == "$":
            current.append("$")
            i += 2
            continue
        if ch.isspace():
            if current:
                words.append("".join(current))
                current = []
        else:
            current.append(ch)
        i += 1
    if current:
        words.append("".join(current))
    # words[0] is "target:" (or "target" followed by ":")
    for index, word in enumerate(words):
        if word.endswith(":"):
            return words[index + 1 :]
        if word == ":":
            return words[index + 1 :]
    return []


def _digest_file(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _mtime_ns(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return time.time_ns()  # gone: treat as just changed


def _dir_mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def _still_valid(entry: Entry) -> bool:
    """Whether every file the compile read still has its contents, and no include
    directory changed (a header could now be found elsewhere)."""
    for path, mtime in entry.dirs:
        if _dir_mtime(path) != mtime:
            return False
    return all(_digest_file(path) == digest for path, digest in entry.files)


# --- entry bytes -------------------------------------------------------------------------------


def encode(key: str, parts: dict, entry: Entry) -> bytes:
    """``MAGIC | header length | JSON header | SPIR-V | SHA-256 of all before``."""
    header = {
        "format": FORMAT,
        "key": key,
        "parts": parts,
        "files": [list(f) for f in entry.files],
        "dirs": [list(d) for d in entry.dirs],
        "warnings": list(entry.warnings),
        "payload_size": len(entry.spirv),
        "created": time.time(),
    }
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    body = _PREFIX.pack(MAGIC, len(text)) + text + entry.spirv
    return body + hashlib.sha256(body).digest()


class CorruptSourceEntry(Exception):
    """An entry's bytes are not a valid source-cache entry."""


def decode(data: bytes, key: str) -> Entry:
    """The entry in ``data`` if it is whole and recorded under ``key`` (else CorruptSourceEntry)."""
    body = data[:-_DIGEST]
    if len(data) < _PREFIX.size + _DIGEST or hashlib.sha256(body).digest() != data[-_DIGEST:]:
        raise CorruptSourceEntry("SHA-256 mismatch: truncated or damaged")
    magic, length = _PREFIX.unpack_from(body)
    if magic != MAGIC or length > len(body) - _PREFIX.size:
        raise CorruptSourceEntry("bad magic or header length")
    try:
        header = json.loads(body[_PREFIX.size : _PREFIX.size + length])
        spirv = body[_PREFIX.size + length :]
        if header["format"] != FORMAT or header["key"] != key:
            raise CorruptSourceEntry("recorded for another key or format")
        if header["payload_size"] != len(spirv):
            raise CorruptSourceEntry("payload size differs from the header")
        return Entry(
            spirv=spirv,
            files=tuple((str(p), str(d)) for p, d in header["files"]),
            dirs=tuple((str(p), int(m)) for p, m in header["dirs"]),
            warnings=tuple(str(w) for w in header["warnings"]),
        )
    # RecursionError: nested past the limit; OverflowError: int() of an Infinity.
    except (ValueError, KeyError, TypeError, RecursionError, OverflowError) as exc:
        raise CorruptSourceEntry(f"bad header: {type(exc).__name__}: {exc}") from None


# --- the disk layer ----------------------------------------------------------------------------


def _tag() -> str:
    return frontend_digest()[:16]


def _root() -> Path | None:
    """``<cache dir>/sources``, checked safe, or None (off, refused or unwritable)."""
    if not config.cache_enabled():
        return None
    root = config.cache_dir()
    if root in _disk_off:
        return None
    directory = root / "sources"
    if directory not in _checked:
        from ..cache.disk import CacheUnavailable, secure_dir

        try:
            for d in (root, directory):
                secure_dir(d)
        except CacheUnavailable as exc:
            _off(root, f"spirvjit: {exc}. Compiled sources are kept in memory only")
            return None
        with _lock:
            _checked.add(directory)
    return directory


def _off(root: Path, message: str) -> None:
    with _lock:
        _disk_off.add(root)
        first = str(root) not in _warned
        _warned.add(str(root))
    if first:
        log.warning(message)


def _entry_path(directory: Path, key: str) -> Path:
    return directory / _tag() / f"{key}{ENTRY_SUFFIX}"


def _disk_load(key: str) -> Entry | None:
    directory = _root()
    if directory is None:
        return None
    from ..cache.disk import CacheUnavailable, read_trusted

    path = _entry_path(directory, key)
    try:
        entry = decode(read_trusted(path), key)
    except FileNotFoundError:
        return None
    except (OSError, CacheUnavailable, CorruptSourceEntry) as exc:
        with _lock:
            first = str(path) not in _warned
            _warned.add(str(path))
        if first:
            log.warning("spirvjit: source cache entry %s is unusable (%s); compiling", path, exc)
        return None
    with contextlib.suppress(OSError):  # the last use, for eviction
        os.utime(path)
    return entry


def _disk_store(key: str, parts: dict, entry: Entry) -> None:
    directory = _root()
    if directory is None:
        return
    from ..cache.disk import CacheUnavailable, secure_dir
    from ..files import write_atomic

    path = _entry_path(directory, key)
    data = encode(key, parts, entry)
    try:
        for attempt in (1, 2):
            if path.parent not in _checked:
                secure_dir(path.parent)
                with _lock:
                    _checked.add(path.parent)
            try:
                write_atomic(path, data)
                break
            except FileNotFoundError:
                # The directory was removed after it was checked (``rm -rf`` of the
                # cache, a clear elsewhere): check and make the chain again, once.
                with _lock:
                    _checked.difference_update({directory, path.parent})
                if attempt == 2 or _root() is None:
                    raise
        _maybe_prune(directory)
    except (OSError, CacheUnavailable) as exc:
        _off(
            directory.parent,
            f"spirvjit: cannot write the source cache in {directory} "
            f"({getattr(exc, 'strerror', None) or exc}); compiled sources are kept in memory only",
        )


def _maybe_prune(directory: Path) -> None:
    """At most once per PRUNE_INTERVAL: drops other versions' entries and the least
    recently used ones beyond 1/DISK_SHARE of SPIRVJIT_CACHE_MAX_SIZE."""
    from ..files import write_atomic

    stamp = directory / "prune.stamp"
    try:
        if time.time() - stamp.stat().st_mtime < PRUNE_INTERVAL:
            return
        os.utime(stamp)
    except FileNotFoundError:
        write_atomic(stamp, b"")
    try:
        limit = config.cache_max_size() // DISK_SHARE
    except ValueError:
        limit = config.DEFAULT_CACHE_MAX_SIZE // DISK_SHARE
    prune(directory, limit)


def prune(directory: Path, limit: int) -> int:
    """Removes entries of other versions, then least recently used ones until the rest
    fit in 90 % of ``limit`` bytes; returns how many it removed."""
    current = _tag()
    found: list[tuple[bool, float, int, str]] = []
    with contextlib.suppress(FileNotFoundError), os.scandir(directory) as tags:
        for tag in tags:
            if not tag.is_dir(follow_symlinks=False):
                continue
            with contextlib.suppress(FileNotFoundError), os.scandir(tag.path) as files:
                for f in files:
                    with contextlib.suppress(FileNotFoundError):
                        st = f.stat(follow_symlinks=False)
                        found.append((tag.name == current, st.st_mtime, st.st_size, f.path))
    total = sum(size for *_, size, _ in found)
    removed = 0
    for is_current, _, size, path in sorted(found):
        if is_current and total <= limit * 0.9:
            break
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
            removed += 1
        total -= size
    with contextlib.suppress(FileNotFoundError), os.scandir(directory) as tags:
        for tag in tags:
            if tag.name != current and tag.is_dir(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    os.rmdir(tag.path)
    return removed


# --- the cache ---------------------------------------------------------------------------------


class _WarningRecorder(logging.Handler):
    """Keeps the ``spirvjit`` warnings this thread logs while it compiles."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.thread = threading.get_ident()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread:
            self.messages.append(record.getMessage())


def _remember(key: str, entry: Entry) -> None:
    global _memory_bytes
    with _lock:
        old = _memory.pop(key, None)
        if old is not None:
            _memory_bytes -= len(old.spirv)
        _memory[key] = entry
        _memory_bytes += len(entry.spirv)
        while _memory_bytes > MEMORY_LIMIT and len(_memory) > 1:
            _memory_bytes -= len(_memory.popitem(last=False)[1].spirv)


def _hit(entry: Entry, origin: str, settings: Mapping[str, str]) -> bytes:
    with _lock:
        _counts[origin] += 1
    for message in entry.warnings:
        log.warning("%s", message)
    if config.debug():
        log.info("spirvjit: source cache %s for %s", origin, settings.get("filename", "source"))
    return entry.spirv


def compile_cached(
    language: str,
    source: str,
    options: Sequence[str],
    compile: Callable[[list[str]], bytes],
    *,
    settings: Mapping[str, str] | None = None,
    tools: Sequence[str] = ("clang",),
    dependency_options: Callable[[str], list[str]] = driver_dependency_options,
    search_dirs: Sequence[str] = (),
) -> bytes:
    """``compile(extra_options)``'s SPIR-V for ``source``, from the cache when it can be.

    ``compile`` must pass ``extra_options`` (``dependency_options(path)``: clang's
    dependency-output flags) to the compiler that reads the source, and raise on failure
    (failures are not cached; a compile that writes no dependency list is not cached).
    ``settings`` are the front end's other parameters that change its output (producer,
    file name); ``tools`` the logical names of the tools it runs (their identity is in
    the key; a name ending in ``?`` is a tool it may use). ``search_dirs``: include
    directories the front end adds itself (not in ``options``), watched like ``-I``
    ones. Returns the SPIR-V bytes.
    """
    options = list(options)
    settings = dict(settings or {})
    if (
        not config.source_cache_enabled()
        or any(o.startswith(_BYPASS) for o in options)
        or any(macro in source for macro in _TIME_MACROS)
    ):
        with _lock:
            _counts["bypass"] += 1
        return compile([])
    key, parts = source_key(language, source, options, settings, tools)
    with _lock:
        entry = _memory.get(key)
        if entry is not None:
            _memory.move_to_end(key)
    if entry is not None and _still_valid(entry):
        return _hit(entry, "memory", settings)
    entry = _disk_load(key)
    if entry is not None and _still_valid(entry):
        _remember(key, entry)
        return _hit(entry, "disk", settings)
    spirv, entry = _compile(compile, options, dependency_options, search_dirs)
    with _lock:
        _counts["compile"] += 1
    if entry is not None:
        _remember(key, entry)
        _disk_store(key, parts, entry)
    return spirv


def _compile(
    compile: Callable[[list[str]], bytes],
    options: list[str],
    dependency_options: Callable[[str], list[str]],
    search_dirs: Sequence[str] = (),
) -> tuple[bytes, Entry | None]:
    """Compiles with dependency output; the entry to cache, or None when the compiler
    wrote no dependency list (then the result cannot be checked later and is not kept)."""
    recorder = _WarningRecorder()
    with tempfile.TemporaryDirectory(prefix="spirvjit-deps-") as tmp:
        deps_file = os.path.join(tmp, "deps.d")
        extra = dependency_options(deps_file)
        log.addHandler(recorder)
        started = time.time_ns()
        try:
            spirv = compile(extra)
        finally:
            log.removeHandler(recorder)
        try:
            with open(deps_file, encoding="utf-8", errors="surrogateescape") as f:
                read = parse_dependencies(f.read())[1:]  # [0] is the (temporary) source
        except FileNotFoundError:
            read = None
    if read is None:
        # No dependency list: the result cannot be checked against headers later.
        return spirv, None
    if any(_mtime_ns(p) >= started - TOO_NEW_NS for p in read):
        # A header changed while (or just before) it was read: its contents now may not
        # be what the compile saw, so they must not vouch for this result (ccache's
        # "include file too new" rule). The next compile caches it.
        return spirv, None
    files = tuple(sorted({(os.path.abspath(p), _digest_file(p) or "") for p in read}))
    directories = set(_include_dirs(options)) | {os.path.abspath(d) for d in search_dirs}
    directories |= {os.path.dirname(p) for p, _ in files}
    dirs = tuple(sorted((d, _dir_mtime(d)) for d in directories))
    return spirv, Entry(spirv, files, dirs, tuple(recorder.messages))


# --- front ends ----------------------------------------------------------------------------------


def opencl_to_spirv(
    source: str,
    options: Sequence[str] = (),
    *,
    producer: str = "clang",
    filename: str = "kernel.cl",
) -> bytes:
    """``frontend.opencl.opencl_to_spirv`` through the source cache (same arguments)."""
    from . import opencl

    if isinstance(options, str):  # the front end's own message
        return opencl.opencl_to_spirv(source, options, producer=producer, filename=filename)
    tools = ("clang",) if producer == "clang" else ("clang15", "llvm-spirv")
    if producer not in opencl.PRODUCERS:
        tools = ()  # the front end raises ValueError naming the valid producers
    return compile_cached(
        "opencl",
        source,
        options,
        lambda extra: opencl.opencl_to_spirv(
            source, [*options, *extra], producer=producer, filename=filename
        ),
        settings={"producer": producer, "filename": filename},
        tools=tools,
    )


def hip_to_spirv(source: str, options: Sequence[str] = (), **settings: object) -> bytes:
    """``frontend.hip.hip_to_spirv`` through the source cache (the same arguments:
    ``filename``, ``include_dirs``, ... are passed on and are part of the key)."""
    from . import hip

    if isinstance(options, str):
        raise TypeError("options must be a sequence of strings, e.g. ['-DN=4'], not one string")
    options = list(options)
    return compile_cached(
        "hip",
        source,
        options,
        lambda extra: hip.hip_to_spirv(source, [*options, *extra], **settings),
        settings={key: repr(value) for key, value in settings.items()},
        # The HIP front end runs clang, then either opt + llc or the offload bundler.
        tools=("clang", "clang-offload-bundler?", "opt?", "llc?"),
        dependency_options=cc1_dependency_options,
        search_dirs=[str(d) for d in settings.get("include_dirs", ()) or ()],
    )


def stats() -> dict[str, int]:
    """This process's source-cache results: memory and disk hits, compiles, bypasses."""
    with _lock:
        return dict(_counts)


def clear_directory(root: Path) -> int:
    """Removes every source-cache entry under cache root ``root``; returns how many."""
    return prune(root / "sources", -1) if (root / "sources").is_dir() else 0


def reset() -> None:
    """Forgets the memory layer, counters, warnings and checked directories (for tests)."""
    global _memory_bytes
    with _lock:
        _memory.clear()
        _memory_bytes = 0
        _counts.update(dict.fromkeys(_counts, 0))
        _warned.clear()
        _disk_off.clear()
        _checked.clear()
