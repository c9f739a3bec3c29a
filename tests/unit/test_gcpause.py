"""The garbage collector paused during a launch's compile (backends/cpu/gcpause.py)."""

from __future__ import annotations

import gc
import threading

import numpy as np

import spirvjit
from spirvjit.backends.cpu import gcpause


def test_paused_disables_the_collector_and_restores_it() -> None:
    assert gc.isenabled()
    with gcpause.paused():
        assert not gc.isenabled()
        with gcpause.paused():  # nested
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_the_application_disabled_stays_disabled() -> None:
    gc.disable()
    try:
        with gcpause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_pauses_of_several_threads_end_with_the_last_one() -> None:
    inside = threading.Barrier(2)
    leave_first = threading.Event()
    seen: list[bool] = []

    def first() -> None:
        with gcpause.paused():
            inside.wait()
            leave_first.wait(30)
        seen.append(gc.isenabled())  # the other thread is still inside

    thread = threading.Thread(target=first)
    thread.start()
    with gcpause.paused():
        inside.wait()
        leave_first.set()
        thread.join(30)
        assert not gc.isenabled()
    assert seen == [False] and gc.isenabled()


def test_a_background_compile_thread_leaves_the_collector_alone() -> None:
    states: list[bool] = []

    def background() -> None:
        gcpause.mark_background()
        with gcpause.paused():
            states.append(gc.isenabled())

    thread = threading.Thread(target=background)
    thread.start()
    thread.join(30)
    assert states == [True] and gc.isenabled()


def test_the_collector_runs_again_after_a_first_launch_compiled(monkeypatch) -> None:
    """The compile paused it (the translation ran with it off) and the launch leaves it on."""
    from spirvjit.backends import cpu

    states: list[bool] = []
    translate = cpu.CpuBackend._translate_program

    def recording(self, *args):
        states.append(gc.isenabled())
        return translate(self, *args)

    monkeypatch.setattr(cpu.CpuBackend, "_translate_program", recording)
    program = spirvjit.compile_opencl(
        "kernel void gc_paused(global int *p) { p[get_global_id(0)] += 1; }"
    )
    data = np.zeros(16, np.int32)
    kernel = program.kernel("gc_paused")
    kernel(data, global_size=16)
    # The first translation is the one the launch waited for (the quick tier's, or the
    # whole compile's with tiering off); an optimized tier's, in the background after it,
    # runs with the collector on (only a compile a launch waits for pauses it).
    assert states and states[0] is False
    kernel.wait_optimized()
    assert gc.isenabled() and (data == 1).all()
