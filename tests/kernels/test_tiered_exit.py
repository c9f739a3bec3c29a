"""A process's exit and the tiered JIT's background compiles (backends/cpu/tiered.py,
``at_exit``): compiles whose code goes into the disk cache get up to SPIRVJIT_EXIT_WAIT
seconds to finish, so that a short script's next run loads optimized code from disk; no
wait with the variable at 0, after Ctrl-C or when nothing would be stored.

Each test runs scripts in fresh processes (the exit is what is tested), with a cache
directory of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from harness import TIERED_ARITH

ROOT = Path(__file__).resolve().parents[2]


# A script that launches a kernel once and ends. HOLD=1: the optimized compile's
# translation waits until the compile is given up (so it is surely pending at exit and
# ends only by being abandoned). It records when the exit waited for a compile
# (``TieredKernel.wait_optimized`` called from the main thread) and when the compile
# was given up, and prints a report from an ``atexit`` handler (after the interpreter
# joined its threads). INTERRUPT=1: a Ctrl-C (SIGINT) arrives while the exit waits.
# END=interrupt: the script ends with an unhandled KeyboardInterrupt.
SCRIPT = r"""
import atexit, json, os, signal, sys, threading, time
import numpy as np
import spirvjit
from spirvjit import jit
from spirvjit.backends.cpu import tiered

HOLD, INTERRUPT = os.environ.get("HOLD") == "1", os.environ.get("INTERRUPT") == "1"
events = {"waits": 0, "abandoned_after": None, "completed": []}
abandoned, waiting = threading.Event(), threading.Event()
abandon, wait_optimized = tiered.TieredKernel.abandon, tiered.TieredKernel.wait_optimized

def abandon_hook(self):
    if events["abandoned_after"] is None:
        events["abandoned_after"] = time.perf_counter() - returned
    abandoned.set()
    abandon(self)

def wait_hook(self, timeout=None):
    if threading.current_thread() is threading.main_thread():
        events["waits"] += 1
        waiting.set()
    return wait_optimized(self, timeout)

tiered.TieredKernel.abandon, tiered.TieredKernel.wait_optimized = abandon_hook, wait_hook
run = jit.StageTimes.run

def recording(self, name, fn, *args):
    if not threading.current_thread().name.startswith("spirvjit optimize "):
        return run(self, name, fn, *args)
    if HOLD and name == "translate":
        inner = fn
        fn = lambda *a: (abandoned.wait(600), inner(*a))[1]
    result = run(self, name, fn, *args)
    events["completed"].append(name)
    return result

jit.StageTimes.run = recording

def interrupter():  # Ctrl-C while the exit waits; again should the first come too early
    waiting.wait()
    while not abandoned.is_set():
        os.kill(os.getpid(), signal.SIGINT)
        abandoned.wait(5)

if INTERRUPT:
    threading.Thread(target=interrupter, daemon=True).start()
program = spirvjit.compile_opencl(SOURCE)
kernel = program.kernel("arith_exit")
n = 1000
x = np.linspace(-3, 3, n, dtype=np.float32)
y, h = np.zeros(n, np.float32), np.zeros(n, np.uint32)
kernel(x, y, h, np.uint32(n), global_size=1024, local_size=64)
returned = time.perf_counter()
loaded = kernel._default

@atexit.register
def report():
    print(json.dumps({
        "origin": program.origins["arith_exit"],
        "tiered": isinstance(loaded, tiered.TieredKernel),
        "tier": getattr(loaded, "tier", None),
        "error": type(getattr(loaded, "error", None)).__name__,
        "h": int(h.astype(np.uint64).sum()), "y": y.tolist(), **events,
    }))

if os.environ.get("END") == "interrupt":
    raise KeyboardInterrupt
"""


def _want_h() -> int:
    i = np.arange(1000, dtype=np.uint64)
    s = (i * 2654435761) % 2**32
    return int((((s ^ (s >> 13)) * 0x5BD1E995) % 2**32).sum())


def _run(tmp_path: Path, **env: str) -> tuple[dict, subprocess.CompletedProcess]:
    script = tmp_path / "launch_once.py"
    script.write_text(f"SOURCE = {TIERED_ARITH % 'exit'!r}\n" + SCRIPT)
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "SPIRVJIT_TIERED": "1"}
    environment["SPIRVJIT_CACHE_DIR"] = str(tmp_path / "cache")
    for name in ("HOLD", "INTERRUPT", "END", "SPIRVJIT_EXIT_WAIT", "SPIRVJIT_CACHE"):
        environment.pop(name, None)
    environment.update(env)
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=environment, timeout=300
    )
    lines = out.stdout.strip().splitlines()
    assert lines, out.stderr[-3000:]
    report = json.loads(lines[-1])
    assert report["h"] == _want_h()
    return report, out


def test_a_short_script_run_twice_loads_optimized_code_from_disk_the_second_time(
    tmp_path,
) -> None:
    """The first run's exit lets the optimized compile finish and store its code; the
    second run loads it from disk, without a quick tier (before: the compile was given
    up at exit, and every run compiled the quick tier again)."""
    first, out = _run(tmp_path, SPIRVJIT_EXIT_WAIT="600")
    assert out.returncode == 0, out.stderr[-3000:]
    assert first["origin"] == "compile" and first["tiered"]
    assert first["tier"] == 1 and first["error"] == "NoneType"
    assert first["waits"] >= 1  # the exit waited for it
    assert {"opt", "obj"} <= set(first["completed"])
    second, out = _run(tmp_path, SPIRVJIT_EXIT_WAIT="600")
    assert out.returncode == 0, out.stderr[-3000:]
    assert second["origin"] == "disk" and not second["tiered"]
    assert second["waits"] == 0 and second["y"] == first["y"]


def test_the_exit_waits_at_most_exit_wait_seconds(tmp_path) -> None:
    """A compile that does not end (held until given up) is given up once the exit has
    waited SPIRVJIT_EXIT_WAIT seconds for it."""
    report, out = _run(tmp_path, SPIRVJIT_EXIT_WAIT="0.5", HOLD="1")
    assert out.returncode == 0, out.stderr[-3000:]
    assert report["tier"] == 0 and report["error"] == "Abandoned"
    assert report["waits"] >= 1 and report["abandoned_after"] >= 0.5
    assert "translate" in report["completed"]
    assert not {"opt", "obj", "load"} & set(report["completed"])


@pytest.mark.parametrize(
    "env",
    [
        {"SPIRVJIT_EXIT_WAIT": "0"},
        {"SPIRVJIT_EXIT_WAIT": "600", "SPIRVJIT_CACHE": "0"},  # nothing would be stored
        {"SPIRVJIT_EXIT_WAIT": "600", "END": "interrupt"},  # Ctrl-C ended the script
    ],
    ids=["exit-wait-0", "cache-off", "ctrl-c"],
)
def test_exits_that_do_not_wait(tmp_path, env: dict) -> None:
    """The pending compile is given up at once: the exit never waited for it."""
    report, out = _run(tmp_path, HOLD="1", **env)
    assert report["tier"] == 0 and report["error"] == "Abandoned"
    assert report["waits"] == 0
    assert not {"opt", "obj", "load"} & set(report["completed"])
    if env.get("END") == "interrupt":
        assert "KeyboardInterrupt" in out.stderr
    else:
        assert out.returncode == 0, out.stderr[-3000:]


def test_ctrl_c_during_the_exit_wait_ends_it(tmp_path) -> None:
    """SIGINT while the exit waits (here up to 600 s) gives the compile up at once, the
    first one (the script sends another after 5 s): the process's signal reaches any of
    its threads, and only sets a flag the main thread reads between its waits. (Before
    the wait was sliced, the first signal was left waiting with it.)"""
    report, out = _run(tmp_path, SPIRVJIT_EXIT_WAIT="600", HOLD="1", INTERRUPT="1")
    assert out.returncode == 0, out.stderr[-3000:]
    assert report["waits"] >= 1 and report["error"] == "Abandoned"
    assert report["abandoned_after"] < 4.5


# Threads launch the 4 kernels of one program (first launches racing the exit among them)
# while the main thread ends: the exit waits for the pending compiles while they launch,
# a thread toggles a SPIRVJIT_* variable meanwhile (the settings snapshots race it).
STRESS = r"""
import atexit, json, os, threading
import numpy as np
import spirvjit
from spirvjit.backends.cpu import tiered

names = [f"arith_stress{k}" for k in range(4)]
program = spirvjit.compile_opencl(SOURCE)
n = 1000
x = np.linspace(-3, 3, n, dtype=np.float32)
i = np.arange(n, dtype=np.uint64)
s = (i * 2654435761) % 2**32
want_h = (((s ^ (s >> 13)) * 0x5BD1E995) % 2**32).astype(np.uint32)
reference = []
failures, launches = [], [0] * 8

def launch(name):
    y, h = np.zeros(n, np.float32), np.zeros(n, np.uint32)
    program.kernel(name)(x, y, h, np.uint32(n), global_size=1024, local_size=64)
    return y, h

reference.append(launch(names[0])[0])  # the main thread: kernel 0 tiered, pending
start = threading.Barrier(9)

def worker(t):
    try:
        start.wait()
        for round_ in range(12):
            for name in names[t % 4:] + names[:t % 4]:
                y, h = launch(name)
                launches[t] += 1
                if not (np.array_equal(h, want_h) and np.array_equal(y, reference[0])):
                    failures.append(f"{t} {name} {round_}")
    except BaseException as exc:
        failures.append(repr(exc))

def toggler():
    start.wait()
    for k in range(2000):
        os.environ["SPIRVJIT_STRESS_TOGGLE"] = str(k)
        os.environ.pop("SPIRVJIT_STRESS_TOGGLE", None)

threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
threads.append(threading.Thread(target=toggler))
for thread in threads:
    thread.start()

@atexit.register
def report():
    loaded = {name: program.kernel(name)._default for name in names}
    print(json.dumps({
        "failures": failures, "launches": launches, "origins": program.origins,
        "errors": {k: type(getattr(v, "error", None)).__name__ for k, v in loaded.items()},
        "pending": len(tiered._pending),
    }))
# the main thread ends here, while the threads launch: the exit begins
"""


def test_threads_launch_while_the_exit_waits_for_compiles(tmp_path) -> None:
    script = tmp_path / "stress.py"
    source = "".join(TIERED_ARITH % f"stress{k}" for k in range(4))
    script.write_text(f"SOURCE = {source!r}\n" + STRESS)
    environment = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SPIRVJIT_TIERED": "1",
        "SPIRVJIT_CACHE_DIR": str(tmp_path / "cache"),
        "SPIRVJIT_EXIT_WAIT": "600",
    }
    environment.pop("SPIRVJIT_CACHE", None)
    reports = []
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            env=environment,
            timeout=600,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        assert "Traceback" not in out.stderr and "Exception ignored" not in out.stderr
        reports.append(json.loads(out.stdout.strip().splitlines()[-1]))
    first, second = reports
    assert first["failures"] == [] and first["launches"] == [48] * 8
    assert first["pending"] == 0
    # Every kernel's optimized code was stored: compiled before the exit, or waited for
    # by it, or compiled untiered by a first launch after the exit began; unless given
    # up (a first launch that raced the end of the exit's wait).
    stored = [k for k, error in first["errors"].items() if error != "Abandoned"]
    assert "arith_stress0" in stored
    assert second["failures"] == [] and second["launches"] == [48] * 8
    for name in stored:
        assert second["origins"][name] in ("disk", "memory"), name
    assert second["origins"]["arith_stress0"] == "disk"
