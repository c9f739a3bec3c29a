"""Ctrl-C during a multi-threaded CPU launch: whenever the KeyboardInterrupt comes, the
launch is abandoned and nothing of it runs after the call has raised (else the workers
run on over arrays Python frees, and the process crashes at exit). Both pools: the
native one (launcher.NativePool) and the portable Python one (launcher.ThreadPool)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from spirvjit.backends.cpu import workers

ROOT = Path(__file__).resolve().parents[2]

# The interrupt lands right after the last task is handed out, before the launch starts
# waiting: where a real Ctrl-C landed when the woken workers preempted the main thread
# (the test of test_runtime.py, looped, crashed at exit in about one run of three on a
# loaded machine).
INTERRUPTED_WHILE_HANDING_OUT = """
import queue, sys, time
import numpy as np, spirvjit
from spirvjit.backends.cpu import launcher

prog = spirvjit.compile_opencl('''
kernel void spin(global float* out, int n) {
    size_t i = get_global_id(0);
    float v = (float)i;
    for (int k = 0; k < n; ++k) v = v * 0.999f + 1.0f;
    out[i] = v;
}''')
if sys.argv[1] == "python":  # the portable pool, else the native one where there is one
    launcher._pool = launcher.ThreadPool(2)
out = np.zeros(1 << 22, np.float32)
prog.spin(out, 1, global_size=out.size)  # compiled, and the workers started
pool = launcher.thread_pool()
print(type(pool).__name__)

class InterruptAfterPut:
    def __init__(self, tasks):
        self.tasks = tasks
    def put(self, item):
        self.tasks.put(item)
        if isinstance(item, tuple):  # a launch's task, not a fence
            pool._tasks[-1] = self.tasks  # once
            raise KeyboardInterrupt

if isinstance(pool, launcher.NativePool):
    started = pool._start
    def start_then_interrupt():
        started()  # the workers are running the launch
        pool._start = started  # once
        raise KeyboardInterrupt
    pool._start = start_then_interrupt
else:
    pool._tasks[-1] = InterruptAfterPut(pool._tasks[-1])
out[:] = -1
start = time.perf_counter()
try:
    prog.spin(out, 1 << 14, global_size=out.size)  # about an hour of work
    print("finished")
except KeyboardInterrupt:
    seconds = time.perf_counter() - start
    before = out.copy()
    time.sleep(0.5)
    still = "still running" if (out != before).any() else "stopped"
    print(f"interrupted {seconds:.1f} {still}")
prog.spin(out, 1, global_size=out.size)  # the pool still works
assert out[5] == 0.999 * 5 + 1.0 or abs(out[5] - (0.999 * 5 + 1.0)) < 1e-5, out[5]
print("ok")
"""


@pytest.mark.parametrize("pool", ["default", "python"])
def test_interrupt_while_the_tasks_are_handed_out_stops_the_launch(pool):
    env = {**os.environ, "SPIRVJIT_NUM_THREADS": "2", "PYTHONPATH": str(ROOT)}
    env.pop("SPIRVJIT_CHECK", None)
    proc = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_WHILE_HANDING_OUT, pool],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stdout.split()
    native = pool == "default" and workers.supported()
    assert lines[0] == ("NativePool" if native else "ThreadPool"), proc.stdout
    assert lines[1] == "interrupted" and lines[3] == "stopped", proc.stdout
    assert float(lines[2]) < 30  # the groups already running finish, no more start
    assert lines[-1] == "ok"
