"""``spirvjit cache ...``: inspect and maintain the persistent kernel cache.

Subcommands: ``stats``, ``list``, ``clear``, ``prune``, ``verify``, ``explain KERNEL``.
They act on ``--dir DIR`` or else the directory the JIT uses (``SPIRVJIT_CACHE_DIR``
or the user cache directory); see docs/cache.md.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from collections.abc import Callable
from pathlib import Path

from ..errors import EXIT_BAD_INPUT, EXIT_OK


def register_cache(subparsers: argparse._SubParsersAction) -> None:
    """Adds ``spirvjit cache`` and its subcommands."""
    parser = subparsers.add_parser(
        "cache",
        help="inspect and maintain the kernel cache",
        description="Inspect and maintain the persistent cache of JIT-compiled kernels.",
    )
    parser.add_argument(
        "--dir", metavar="DIR", help="the cache directory (default: the one the JIT uses)"
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser(
        "stats", help="entries, bytes, and hit/miss counts of the processes that used it"
    ).set_defaults(handler=_cached(_stats))
    actions.add_parser(
        "list", help="one line per entry: kernel, target, size, last use"
    ).set_defaults(handler=_cached(_list))
    actions.add_parser("clear", help="remove every entry, event and counter").set_defaults(
        handler=_cached(_clear)
    )
    prune = actions.add_parser(
        "prune",
        help="evict down to the size limit, drop dead writers' temporary files",
        description="Evict least recently used entries (other versions' first) while over "
        "the size limit, remove temporary files of dead writers and old events, and merge "
        "the counters of ended processes.",
    )
    prune.add_argument(
        "--max-size", metavar="SIZE", help="limit, e.g. 500M (default: SPIRVJIT_CACHE_MAX_SIZE)"
    )
    prune.add_argument(
        "--stale", action="store_true", help="also remove every entry of other spirvjit/LLVM"
    )
    prune.set_defaults(handler=_cached(_prune))
    verify = actions.add_parser(
        "verify", help="read every entry and check its digest and key; exit 1 if one is bad"
    )
    verify.add_argument("--remove", action="store_true", help="remove the bad entries")
    verify.set_defaults(handler=_cached(_verify))
    explain = actions.add_parser(
        "explain",
        help="how the last first launch of KERNEL got its code, and why it missed",
    )
    explain.add_argument("kernel", metavar="KERNEL", help="the kernel (entry point) name")
    explain.set_defaults(handler=_cached(_explain))


def _cached(action: Callable) -> Callable[[argparse.Namespace], int]:
    """Wraps an action ``(args, cache) -> int`` with opening the cache directory."""

    def handler(args: argparse.Namespace) -> int:
        from .. import config
        from ..cache.disk import CacheUnavailable, DiskCache

        try:
            root = config.cache_dir() if args.dir is None else Path(args.dir)
            disk = DiskCache(root, config.cache_max_size())
        except (CacheUnavailable, ValueError) as exc:
            print(f"spirvjit cache {args.action}: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        return action(args, disk)

    return handler


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _when(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds).strftime("%Y-%m-%d %H:%M:%S")


def _stats(args: argparse.Namespace, disk) -> int:
    from .. import config
    from ..cache import records as cache_records

    entries = disk.entries()
    stale = sum(e.stale for e in entries)
    counts = cache_records.totals(disk.stats_dir)
    launches = counts["memory_hits"] + counts["disk_hits"] + counts["compiles"]
    hits = launches - counts["compiles"]
    rate = f" (hit rate {100 * hits / launches:.0f} %)" if launches else ""
    off = "" if config.cache_enabled() else "  (the JIT does not use it: SPIRVJIT_CACHE=0)"
    print(f"cache directory  {disk.root}{off}")
    print(
        f"entries          {len(entries)} ({stale} of other spirvjit/LLVM versions), "
        f"{_size(sum(e.size for e in entries))} of {_size(disk.max_size)}"
    )
    print(
        f"first launches   {launches}: {counts['memory_hits']} memory hits, "
        f"{counts['disk_hits']} disk hits, {counts['compiles']} compiles{rate}"
    )
    print(
        f"problems         {counts['corrupt']} unusable entries ignored and replaced, "
        f"{counts['evicted']} entries evicted"
    )
    return EXIT_OK


def _list(args: argparse.Namespace, disk) -> int:
    from ..cache.disk import CacheUnavailable
    from ..cache.format import CorruptEntry

    rows = [("KERNEL", "TARGET", "SIZE", "LAST USE", "STATE")]
    for e in disk.entries():
        try:
            header = disk.read_header(e.path)
            kernel, target = header["key"].get("entry_point", "?"), header["target"]
            state = "stale" if e.stale else "ok"
        except (CorruptEntry, CacheUnavailable, OSError) as exc:
            kernel, target, state = e.path.name, "?", f"unusable: {exc}"
        rows.append((str(kernel), target, _size(e.size), _when(e.mtime), state))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths, strict=True)), row[4])
    return EXIT_OK


def _clear(args: argparse.Namespace, disk) -> int:
    from ..frontend.source_cache import clear_directory

    removed, sources = disk.clear(), clear_directory(disk.root)
    print(f"removed {removed} entries and {sources} compiled sources from {disk.root}")
    return EXIT_OK


def _prune(args: argparse.Namespace, disk) -> int:
    from .. import config
    from ..cache import records as cache_records

    try:
        limit = disk.max_size if args.max_size is None else config.parse_size(args.max_size)
    except ValueError as exc:
        print(f"spirvjit cache prune: --max-size: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    report = disk.evict(limit, stale=args.stale)
    events = cache_records.prune_events(disk.events_dir)
    merged = cache_records.fold(disk.stats_dir)
    freed = sum(e.size for e in report.removed)
    print(
        f"removed {len(report.removed)} entries ({_size(freed)}), {report.temporaries} "
        f"temporary files, {events} old events; merged {merged} counter files; "
        f"{_size(report.kept_bytes)} kept (limit {_size(limit)})"
    )
    return EXIT_OK


def _verify(args: argparse.Namespace, disk) -> int:
    checked, problems = disk.verify(remove=args.remove)
    for path, problem in problems:
        print(f"{path}: {problem}" + (" (removed)" if args.remove else ""))
    print(f"checked {checked} entries in {disk.root}: {len(problems)} bad")
    if problems and not args.remove:
        print("run `spirvjit cache verify --remove` to delete them", file=sys.stderr)
    return EXIT_BAD_INPUT if problems else EXIT_OK


def _explain(args: argparse.Namespace, disk) -> int:
    from ..cache import records as cache_records

    event = cache_records.read_event(disk.events_dir, args.kernel)
    if event is None:
        print(
            f"spirvjit cache explain: no first launch of kernel {args.kernel!r} is recorded in "
            f"{disk.root}; launch it with the disk cache on (SPIRVJIT_CACHE unset) first",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    label = {"memory": "memory hit", "disk": "disk hit", "compile": "compiled"}
    print(
        f"kernel {event['kernel']} on {event['target']}: last first launch at "
        f"{_when(event['time'])} by process {event['pid']} on {event['host']}"
    )
    print(f"{label.get(event['origin'], event['origin'])}: {event['detail']}")
    for part, (cached, now) in ((event.get("nearest") or {}).get("differences") or {}).items():
        print(f"  {part}:\n    cached {_short(cached)}\n    now    {_short(now)}")
    return EXIT_OK


def _short(value: object) -> str:
    text = str(value)
    return text if len(text) <= 100 else f"{text[:97]}..."
