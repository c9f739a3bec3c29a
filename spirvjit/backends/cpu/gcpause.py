"""Python's cyclic garbage collector paused while a kernel is compiled for a launch.

Translating a kernel builds thousands of llvmlite IR objects, and the allocations
trigger the collector: young-generation passes, and now and then a full one that walks
every object of the process (the application's included), ~30 ms of a barrier kernel's
quick-tier compile of ~50 (benchmarks/results/jit_times.md). While paused, nothing is
lost: the garbage is collected at the next collection after the pause, and the full
collection comes when its counters say, which is later. Paused only on the thread that
launches (the first launch waits for it), not for the optimized tier's background
compile, which nobody waits for; pauses of several threads nest (the collector runs
again when the last one ends).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_holders = 0  # threads inside paused()
_was_enabled = False
_background = threading.local()  # .active: this thread compiles in the background


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The collector paused for the duration (a no-op on a background compile thread)."""
    global _holders, _was_enabled
    if getattr(_background, "active", False):
        yield
        return
    with _lock:
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _was_enabled:
                gc.enable()


def mark_background() -> None:
    """This thread compiles in the background: ``paused`` leaves the collector alone."""
    _background.active = True
