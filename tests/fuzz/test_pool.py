"""The differential tester's worker pool: its workers do not inherit the caller's threads'
state (a forked worker inherited the pytest process's PoCL context without PoCL's device
threads and hung: test_pocl_psel, 300 s), and they still get the caller's environment,
working directory and modules, as forked ones did."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

import pytest

from .differential import REFERENCE, Job, Pool, run_pocl
from .generator import REFERENCE_WORKAROUNDS, generate
from .test_fuzz import pocl_missing

# Held by a thread of the calling process while its pool starts a worker.
_HELD = threading.Lock()


@dataclass(frozen=True)
class _Report:
    """A job that says what its worker found: whether ``_HELD`` was free, its parent
    process, the environment variables ``names`` and its working directory."""

    names: tuple[str, ...] = ()

    def run(self) -> dict:
        free = _HELD.acquire(timeout=2.0)
        return {
            "lock_free": free,
            "ppid": os.getppid(),
            "env": {n: os.environ.get(n) for n in self.names},
            "cwd": os.getcwd(),
        }


def _run_one(job, timeout: float = 60.0) -> tuple[str, object]:
    pool = Pool(1, timeout)
    results: list = []
    try:
        pool.run([job], lambda _, status, payload: results.append((status, payload)))
    finally:
        pool.close()
    (result,) = results
    return result


def test_a_worker_does_not_inherit_a_lock_another_thread_holds():
    """A forked worker gets a copy of the caller's memory but only the forking thread: a
    lock another thread held then stays held in the worker for good (PoCL's device
    threads' state is so left). The worker must come from a single-threaded process."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with _HELD:
            held.set()
            release.wait(120)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert held.wait(30)
    try:
        status, report = _run_one(_Report())
    finally:
        release.set()
        thread.join()
    assert status == "ok", report
    assert report["lock_free"], "the worker found the caller's lock held: forked from it"
    assert report["ppid"] != os.getpid()
    task = f"/proc/{report['ppid']}/task"
    if os.path.isdir(task):  # the fork server: its preloaded modules started no thread
        assert len(os.listdir(task)) == 1, os.listdir(task)


def test_a_worker_has_the_callers_environment_and_directory(monkeypatch, tmp_path):
    """The fork server keeps the environment it started with; a worker must see the
    caller's as it is when the pool starts the worker (tests set SPIRVJIT_* variables)."""
    monkeypatch.setenv("SPIRVJIT_POOL_TEST_GONE", "1")
    status, report = _run_one(_Report(("SPIRVJIT_POOL_TEST_GONE",)))  # the server runs
    assert status == "ok" and report["env"] == {"SPIRVJIT_POOL_TEST_GONE": "1"}, report
    monkeypatch.delenv("SPIRVJIT_POOL_TEST_GONE")
    monkeypatch.setenv("SPIRVJIT_POOL_TEST_NEW", "2")
    monkeypatch.chdir(tmp_path)
    status, report = _run_one(_Report(("SPIRVJIT_POOL_TEST_GONE", "SPIRVJIT_POOL_TEST_NEW")))
    assert status == "ok", report
    assert report["env"] == {"SPIRVJIT_POOL_TEST_GONE": None, "SPIRVJIT_POOL_TEST_NEW": "2"}
    assert os.path.samefile(report["cwd"], tmp_path)


def test_a_worker_runs_pocl_after_the_caller_ran_it():
    """The hang itself: PoCL run in this process (as test_fuzz's tiered tests do), then a
    PoCL job in a worker. A worker forked from here hung in clEnqueueReadBuffer until
    the pool killed it ("timeout")."""
    why = pocl_missing()
    if why:
        pytest.skip(why)
    seed, count, index = 20261201, 2, 0
    batch = generate(seed, count, REFERENCE_WORKAROUNDS, size="small")
    here = run_pocl(batch.kernel_source(index), batch, [index], seed)[index]
    assert here.error is None, here.error
    job = Job(seed, count, (index,), producers=(REFERENCE,), size="small")
    status, payload = _run_one(job)
    assert status == "ok", (status, payload)
    there = payload[REFERENCE][index]
    assert there.error is None, there.error
    assert there.out.tolist() == here.out.tolist() and there.gat.tolist() == here.gat.tolist()
