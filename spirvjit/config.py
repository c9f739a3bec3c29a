"""Every environment knob spirvjit reads, in one place.

Values are read when asked for (not at import), so tests and long-running
processes can change the environment and see the effect on the next JIT.

A compile that runs later than it was asked for (the tiered JIT's background compile of
the optimized code, backends/cpu/tiered.py) runs with the settings of the moment it was
asked for: ``snapshot()`` takes them (every ``SPIRVJIT_*`` variable), ``using(settings)``
makes this thread's reads of them see that snapshot instead of ``os.environ``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

_FALSE = ("", "0", "false", "no", "off")
PREFIX = "SPIRVJIT_"

_thread = threading.local()  # .settings: the snapshot this thread reads (``using``)


def setting(name: str, default: str = "") -> str:
    """The value of the ``SPIRVJIT_*`` variable ``name``: from the snapshot this thread
    runs with (``using``), else from the environment now."""
    settings = getattr(_thread, "settings", None)
    if settings is not None and name.startswith(PREFIX):
        return settings.get(name, default)
    return os.environ.get(name, default)


def snapshot() -> dict[str, str]:
    """Every ``SPIRVJIT_*`` setting as this thread sees it now (``using``'s argument)."""
    settings = getattr(_thread, "settings", None)
    if settings is not None:
        return dict(settings)
    data = _ENVIRON_BYTES
    if data is None:
        return {k: v for k, v in os.environ.copy().items() if k.startswith(PREFIX)}
    # A copy taken in one step (``list`` of a dict's items holds the GIL throughout): a
    # thread setting a variable meanwhile cannot break the iteration.
    prefix = PREFIX.encode()
    return {os.fsdecode(k): os.fsdecode(v) for k, v in list(data.items()) if k.startswith(prefix)}


@contextlib.contextmanager
def using(settings: Mapping[str, str]) -> Iterator[None]:
    """Within: this thread reads the ``SPIRVJIT_*`` settings from ``settings`` (a
    ``snapshot()``; a variable missing there is unset), whatever the environment says.
    Other threads are not affected."""
    previous = getattr(_thread, "settings", None)
    _thread.settings = dict(settings)
    try:
        yield
    finally:
        _thread.settings = previous


def _flag(name: str) -> bool:
    return setting(name).strip().lower() not in _FALSE


def _launch_flag(name: str) -> bool:
    """``_flag`` for a variable read at every launch. ``os.environ.get`` encodes the
    name and decodes the value each time (~0.5-1.5 µs, a tenth of a tiny launch); the
    mapping's bytes dictionary, which every ``os.environ`` change updates, is read
    directly where it exists (POSIX CPython)."""
    data = _ENVIRON_BYTES
    if data is None or getattr(_thread, "settings", None) is not None:
        return _flag(name)
    value = data.get(name.encode())
    return value is not None and value.strip().lower().decode(errors="replace") not in _FALSE


# os.environ's own store on POSIX CPython: bytes names to bytes values.
_ENVIRON_BYTES: dict | None = (
    os.environ._data
    if os.name == "posix" and isinstance(getattr(os.environ, "_data", None), dict)
    else None
)


def dump_dir() -> Path | None:
    """SPIRVJIT_DUMP=DIR: write every kernel's stages (SPIR-V, disassembly, IR, asm) there."""
    value = setting("SPIRVJIT_DUMP").strip()
    return Path(value) if value else None


def debug() -> bool:
    """SPIRVJIT_DEBUG=1: log each JIT with its time per stage to the ``spirvjit`` logger.

    When set and the application has configured no logging handler, the lines go to
    stderr by themselves (a handler on the ``spirvjit`` logger): setting a variable must
    be enough to see them."""
    if not _flag("SPIRVJIT_DEBUG"):
        return False
    _ensure_debug_handler()
    return True


_debug_handler: logging.Handler | None = None


def _ensure_debug_handler() -> None:
    global _debug_handler
    logger = logging.getLogger("spirvjit")
    # DEBUG, not INFO: the compiler's decisions (guard splits, producer repairs) are
    # logged at debug level and are what the variable is set to see.
    if _debug_handler is not None or logger.hasHandlers():
        if logger.getEffectiveLevel() > logging.DEBUG and _debug_handler is not None:
            logger.setLevel(logging.DEBUG)
        return
    _debug_handler = logging.StreamHandler()  # stderr
    _debug_handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(_debug_handler)
    if logger.getEffectiveLevel() > logging.DEBUG:
        logger.setLevel(logging.DEBUG)


def check() -> bool:
    """SPIRVJIT_CHECK=1: run every CPU launch in checked mode (bounds-checked accesses,
    divergent barriers; see docs/debugging.md), as ``kernel(..., check=True)`` does."""
    return _launch_flag("SPIRVJIT_CHECK")


def force_jit() -> bool:
    """SPIRVJIT_FORCE_JIT=1: ignore unified binaries' native variants, JIT from the SPIR-V."""
    return _flag("SPIRVJIT_FORCE_JIT")


def tiered() -> bool:
    """Tiered CPU JIT, on unless SPIRVJIT_TIERED=0 (or false/no/off): a CPU kernel's first
    launch runs quickly compiled code (no vectorization, -O0 code generation) while the
    optimized code is compiled at the same time on a background thread and replaces it,
    also in the middle of a launch (backends/cpu/tiered.py). ``Kernel.compile()`` always
    loads the optimized code. Off: every compile is synchronous and fully optimized."""
    value = setting("SPIRVJIT_TIERED").strip().lower()
    return value not in ("0", "false", "no", "off")


DEFAULT_EXIT_WAIT = 2.0


def exit_wait() -> float:
    """SPIRVJIT_EXIT_WAIT=SECONDS: how long a process's exit waits, at most, for the
    tiered JIT's optimized compiles still running or queued whose code would go into the
    disk cache, so that the next run loads optimized code from disk instead of compiling
    (backends/cpu/tiered.py: ``at_exit``). Default 2; 0: the exit gives them up at once;
    ``inf``: it waits until they are done. A value that is not a number of seconds logs
    a warning and uses the default (it is read at exit, where raising helps no one)."""
    value = setting("SPIRVJIT_EXIT_WAIT").strip()
    if not value:
        return DEFAULT_EXIT_WAIT
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # (also NaN)
        logging.getLogger("spirvjit").warning(
            "spirvjit: SPIRVJIT_EXIT_WAIT=%r is not a number of seconds; using %g",
            value,
            DEFAULT_EXIT_WAIT,
        )
        return DEFAULT_EXIT_WAIT
    return seconds


def opt_level() -> int | None:
    """SPIRVJIT_OPT_LEVEL=1|2|3: the LLVM pipeline level for every CPU kernel (default:
    none, the backend's choice per kernel: O3, O2 for barrier kernels). For measuring JIT
    time against run time; part of the cache key. Anything else is an error."""
    value = setting("SPIRVJIT_OPT_LEVEL").strip()
    if not value:
        return None
    if value not in ("1", "2", "3"):
        raise ValueError(f"SPIRVJIT_OPT_LEVEL={value!r}: expected 1, 2 or 3")
    return int(value)


def num_threads() -> int:
    """SPIRVJIT_NUM_THREADS: worker threads of the host CPU device (default: all cores)."""
    value = setting("SPIRVJIT_NUM_THREADS").strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not every platform has affinity masks
        return os.cpu_count() or 1


DEFAULT_CACHE_MAX_SIZE = 1 << 30  # 1 GiB
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def cache_enabled() -> bool:
    """SPIRVJIT_CACHE: the persistent kernel cache is on unless this is 0, false, no or off."""
    return setting("SPIRVJIT_CACHE").strip().lower() not in ("0", "false", "no", "off")


def source_cache_enabled() -> bool:
    """SPIRVJIT_SOURCE_CACHE: compile_opencl/compile_hip reuse earlier results for the same
    source unless this is 0, false, no or off (SPIRVJIT_CACHE=0 keeps only its memory layer)."""
    value = setting("SPIRVJIT_SOURCE_CACHE").strip().lower()
    return value not in ("0", "false", "no", "off")


def progress_enabled() -> bool:
    """SPIRVJIT_PROGRESS: long commands (precompile, build) show progress on stderr unless 0."""
    value = setting("SPIRVJIT_PROGRESS").strip().lower()
    return value not in ("0", "false", "no", "off")


def warmup_enabled() -> bool:
    """SPIRVJIT_WARMUP=1: load_package_kernels starts a background precompile of the package."""
    return _flag("SPIRVJIT_WARMUP")


def cache_dir() -> Path:
    """SPIRVJIT_CACHE_DIR: the persistent cache's directory (default: the user cache dir)."""
    value = setting("SPIRVJIT_CACHE_DIR").strip()
    if value:
        return Path(value).expanduser()
    import platformdirs  # imported here: only the cache needs it

    return Path(platformdirs.user_cache_dir("spirvjit", appauthor=False))


def cache_max_size() -> int:
    """SPIRVJIT_CACHE_MAX_SIZE: the disk cache's size limit in bytes (default 1 GiB).

    Raises ValueError, naming the variable, when the value is not a size.
    """
    value = setting("SPIRVJIT_CACHE_MAX_SIZE").strip()
    if not value:
        return DEFAULT_CACHE_MAX_SIZE
    try:
        return parse_size(value)
    except ValueError as exc:
        raise ValueError(f"SPIRVJIT_CACHE_MAX_SIZE: {exc}") from None


def parse_size(text: str) -> int:
    """Bytes in ``text``: an integer with an optional binary suffix, e.g. 4096, 100M, 1.5G, 2GiB.

    Suffixes K, M, G, T (also KB/KiB, ...) are powers of 1024, case-insensitive.
    Raises ValueError saying what is accepted.
    """
    raw = text.strip().upper().replace(" ", "")
    for tail in ("IB", "B"):
        if raw.endswith(tail) and raw[: -len(tail)][-1:] in ("K", "M", "G", "T"):
            raw = raw[: -len(tail)]
            break
    unit = raw[-1:] if raw[-1:] in _SIZE_UNITS else ""
    number = raw[: len(raw) - len(unit)]
    try:
        size = float(number) * _SIZE_UNITS[unit]
    except ValueError:
        size = -1.0
    if not number or size < 0 or size != size or size == float("inf"):
        raise ValueError(
            f"{text!r} is not a size; give bytes or a number with K, M, G or T (e.g. 100M, 2G)"
        )
    return int(size)


NATIVE_VAR = "SPIRVJIT_NATIVE"
NATIVE_POLICIES = ("never", "trusted", "always")
TRUSTED_KEYS_VAR = "SPIRVJIT_TRUSTED_KEYS"


def native_policy() -> str:
    """SPIRVJIT_NATIVE=never|trusted|always: which unified binaries' native code may run.

    "trusted" (the default) runs it only from files no other user can write or that carry
    a trusted signature (docs/threat-model.md). Raises ValueError for another value.
    """
    value = setting(NATIVE_VAR).strip().lower() or "trusted"
    if value not in NATIVE_POLICIES:
        raise ValueError(f"{NATIVE_VAR}={value!r}: expected one of {', '.join(NATIVE_POLICIES)}")
    return value


def trusted_keys_files() -> list[Path]:
    """SPIRVJIT_TRUSTED_KEYS=FILE[:FILE...]: files of public keys trusted to sign unified
    binaries (default: ``trusted_keys`` in the user config directory, e.g.
    ``~/.config/spirvjit/trusted_keys``)."""
    value = setting(TRUSTED_KEYS_VAR).strip()
    if value:
        return [Path(p).expanduser() for p in value.split(os.pathsep) if p.strip()]
    import platformdirs

    return [Path(platformdirs.user_config_dir("spirvjit", appauthor=False)) / "trusted_keys"]
