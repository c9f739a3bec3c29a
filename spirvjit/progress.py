"""Progress of long work (precompile, builds with many targets, benchmarks) on stderr.

``Progress`` draws a bar with rich or tqdm when one is installed and stderr is a
terminal (neither is a dependency), else a single line rewritten in place on a
terminal, or, for a log file or CI, one line at most every ``LOG_INTERVAL`` seconds
and one at the end. ``SPIRVJIT_PROGRESS=0`` (or ``enabled=False``) turns it off.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from . import config

LOG_INTERVAL = 5.0


class Progress:
    """Counts ``total`` steps of ``description``; ``advance`` after each, ``close`` at the end."""

    def __init__(
        self,
        total: int,
        description: str,
        unit: str = "kernel",
        *,
        enabled: bool | None = None,
        stream: TextIO | None = None,
    ):
        self.total = total
        self.description = description
        self.unit = unit
        self.done = 0
        self.stream = stream or sys.stderr
        self.started = time.perf_counter()
        self._last_log = self.started
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = config.progress_enabled() if enabled is None else enabled
        self._bar = self._fancy() if self.enabled and self._tty else None
        self._line_width = 0

    def _fancy(self):
        """A rich or tqdm bar, or None when neither is installed."""
        try:
            from tqdm import tqdm

            bar = tqdm(total=self.total, desc=self.description, unit=self.unit, file=self.stream)
            return ("tqdm", bar)
        except ImportError:
            pass
        try:
            from rich.console import Console
            from rich.progress import Progress as RichProgress

            bar = RichProgress(console=Console(file=self.stream), transient=False)
            bar.start()
            return ("rich", (bar, bar.add_task(self.description, total=self.total)))
        except ImportError:
            return None

    def rate(self) -> float:
        elapsed = time.perf_counter() - self.started
        return self.done / elapsed if elapsed > 0 else 0.0

    def advance(self, steps: int = 1, note: str = "") -> None:
        self.done += steps
        if not self.enabled:
            return
        if self._bar is not None:
            kind, bar = self._bar
            if kind == "tqdm":
                bar.update(steps)
                if note:
                    bar.set_postfix_str(note, refresh=False)
            else:
                bar[0].update(bar[1], advance=steps)
            return
        now = time.perf_counter()
        if not self._tty and now - self._last_log < LOG_INTERVAL and self.done < self.total:
            return
        self._last_log = now
        percent = 100 * self.done // self.total if self.total else 100
        line = (
            f"{self.description}: {self.done}/{self.total} {self.unit}s ({percent}%), "
            f"{self.rate():.1f}/s" + (f", {note}" if note else "")
        )
        if self._tty:
            self.stream.write("\r" + line.ljust(self._line_width))
            self._line_width = len(line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            kind, bar = self._bar
            if kind == "tqdm":
                bar.close()
            else:
                bar[0].stop()
            self._bar = None
        elif self._tty and self._line_width:
            self.stream.write("\n")
            self.stream.flush()
            self._line_width = 0

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
