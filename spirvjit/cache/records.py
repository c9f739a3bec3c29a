"""The small records a cache directory keeps besides entries: counters and last events.

Counters: each process writes its own file ``stats/<host>-<pid>-<nonce>.json``
(whole, atomically, after each change), so processes never write the same file and a
crash loses nothing already written. ``totals`` sums the files; ``fold`` merges the
files of ended processes into one, so their number stays small. A fold claims each
file by renaming it first, so two concurrent folds never count a file twice; a fold
killed half-way can at worst drop or repeat the counts of that one fold.

Events: ``events/<kernel>.json`` holds the last first launch of each kernel (memory
hit, disk hit or compile, and why the cache missed), for ``spirvjit cache explain``
in another process.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import time
from pathlib import Path

from .disk import CacheUnavailable, file_stem, read_trusted, write_atomic

COUNTERS = ("memory_hits", "disk_hits", "compiles", "corrupt", "evicted")
REMOTE_FOLD_AGE = 30 * 86400.0  # another host's process file this old belongs to an ended one
CLAIM_AGE = 3600.0  # a claim this old was left by a fold that died
EVENT_MAX_AGE = 90 * 86400.0  # events of kernels not launched for this long are dropped
_RECORD_LIMIT = 1 << 20


class Counters:
    """This process's counters in ``stats_dir``; ``add`` persists them (OSError)."""

    def __init__(self, stats_dir: Path):
        self.stats_dir = stats_dir
        self._start()

    def _start(self) -> None:
        self.pid = os.getpid()
        self.path = (
            self.stats_dir / f"{socket.gethostname()}-{self.pid}-{secrets.token_hex(4)}.json"
        )
        self.values = dict.fromkeys(COUNTERS, 0)

    def add(self, name: str, count: int = 1) -> None:
        if os.getpid() != self.pid:  # a forked child counts in a file of its own
            self._start()
        self.values[name] += count
        write_atomic(self.path, json.dumps(self.values).encode())


def _read_json(path: Path) -> dict | None:
    """A record file's JSON object, or None when it is missing, unsafe or damaged."""
    try:
        value = json.loads(read_trusted(path, _RECORD_LIMIT).decode())
    except (OSError, CacheUnavailable, UnicodeDecodeError, ValueError, RecursionError):
        return None  # (RecursionError: JSON nested past the interpreter's limit)
    return value if isinstance(value, dict) else None


def _counts(path: Path) -> dict[str, int]:
    values = _read_json(path) or {}
    return {name: v for name in COUNTERS if isinstance(v := values.get(name), int)}


def totals(stats_dir: Path) -> dict[str, int]:
    """The counters of every process that used this directory, summed."""
    total = dict.fromkeys(COUNTERS, 0)
    for path in stats_dir.glob("*.json"):
        for name, value in _counts(path).items():
            total[name] += value
    return total


def _ended(path: Path, now: float) -> bool:
    """Whether the process that writes counter file ``path`` has ended."""
    host, pid_text, _ = (["", "", ""] + path.stem.rsplit("-", 2))[-3:]
    if host == "folded":
        return True
    if host != socket.gethostname() or not pid_text.isdigit():
        with contextlib.suppress(FileNotFoundError):
            return now - path.stat().st_mtime > REMOTE_FOLD_AGE
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def fold(stats_dir: Path) -> int:
    """Merges the counter files of ended processes into one; returns files merged."""
    now = time.time()
    me = f"{os.getpid()}-{secrets.token_hex(4)}"
    claimed: list[Path] = []
    for path in list(stats_dir.iterdir()):
        if path.name.startswith(".claim-"):
            with contextlib.suppress(FileNotFoundError):
                if now - path.stat().st_mtime <= CLAIM_AGE:
                    continue
        elif not (path.suffix == ".json" and _ended(path, now)):
            continue
        claim = stats_dir / f".claim-{me}-{len(claimed)}"
        try:
            os.rename(path, claim)  # atomic: exactly one fold wins each file
        except FileNotFoundError:
            continue
        claimed.append(claim)
    if len(claimed) < 2:  # nothing to merge: put a lone file back under its own name
        for claim in claimed:
            os.rename(claim, stats_dir / f"folded-{me}.json")
        return 0
    total = dict.fromkeys(COUNTERS, 0)
    for claim in claimed:
        for name, value in _counts(claim).items():
            total[name] += value
    write_atomic(stats_dir / f"folded-{me}.json", json.dumps(total).encode())
    for claim in claimed:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(claim)
    return len(claimed)


def _event_path(events_dir: Path, kernel: str) -> Path:
    return events_dir / f"{file_stem(kernel)}.json"


def write_event(events_dir: Path, record: dict) -> None:
    """Replaces the last-event record of ``record["kernel"]`` (OSError)."""
    write_atomic(_event_path(events_dir, record["kernel"]), json.dumps(record, indent=1).encode())


def read_event(events_dir: Path, kernel: str) -> dict | None:
    """The last first launch of ``kernel`` recorded in ``events_dir``, or None."""
    record = _read_json(_event_path(events_dir, kernel))
    return record if record and record.get("kernel") == kernel else None


def prune_events(events_dir: Path) -> int:
    """Removes events older than EVENT_MAX_AGE; returns how many."""
    now, removed = time.time(), 0
    for path in events_dir.glob("*.json"):
        with contextlib.suppress(FileNotFoundError):
            if now - path.stat().st_mtime > EVENT_MAX_AGE:
                os.unlink(path)
                removed += 1
    return removed
