"""Intel's CPU OpenCL runtime for the suite, in a child process.

The ICD loader reads OCL_ICD_VENDORS once, when PyOpenCL first asks for platforms, so
Intel's runtime gets its own process whose loader sees only libintelocl.so (found in the
intel-opencl-rt wheel, or named by SPIRVJIT_BENCH_INTELOCL). PoCL keeps running in the
suite's process; Intel's CL_CONFIG_* variables are left at their defaults.

The parent sends pickled requests on the child's stdin and reads pickled answers from a
private copy of its stdout (the child's fd 1 goes to stderr, so nothing the runtime prints
can corrupt the protocol):

    ("prepare", case name, params, SPIR-V or None) -> None
    ("run",)                                       -> what the run returned
    ("result", returned)                           -> the case's result, to be checked
    ("time", warmup, repeats, budget s)            -> (median seconds, runs)
"""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent


def find_libintelocl() -> Path | None:
    """libintelocl.so: SPIRVJIT_BENCH_INTELOCL, else the intel-opencl-rt wheel's."""
    named = os.environ.get("SPIRVJIT_BENCH_INTELOCL")
    if named:
        return Path(named) if Path(named).is_file() else None
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        dist = distribution("intel-opencl-rt")
    except (ImportError, PackageNotFoundError):
        return None
    for file in dist.files or ():
        if file.name == "libintelocl.so":
            path = Path(dist.locate_file(file)).resolve()
            if path.is_file():
                return path
    return None


class IntelChild:
    """The parent's end: starts the child and forwards requests to it."""

    def __init__(self, from_il: bool) -> None:
        from contenders import Unavailable

        lib = find_libintelocl()
        if lib is None:
            raise Unavailable("libintelocl.so not found (pip install intel-opencl-rt)")
        env = dict(os.environ, OCL_ICD_VENDORS=str(lib))
        # Intel's math and threading libraries (intel-cmplr-lib-rt, tbb) sit next to it.
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (str(lib.parent), os.environ.get("LD_LIBRARY_PATH", "")) if p
        )
        command = [sys.executable, str(Path(__file__).resolve()), "--il" if from_il else "--src"]
        self.proc = subprocess.Popen(
            command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=HERE
        )
        ready = self._answer()
        if isinstance(ready, Exception):
            self.close()
            raise Unavailable(str(ready))
        self.version: str = ready

    def _answer(self) -> object:
        try:
            status, value = pickle.load(self.proc.stdout)
        except EOFError:
            return RuntimeError(f"Intel OpenCL child exited ({self.proc.wait()})")
        if status == "ok":
            return value
        if status == "unavailable":
            from contenders import Unavailable

            return Unavailable(value)
        return RuntimeError(f"in the Intel OpenCL child: {value}")

    def call(self, *request: object) -> object:
        pickle.dump(request, self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        self.proc.stdin.flush()
        answer = self._answer()
        if isinstance(answer, Exception):
            raise answer
        return answer

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def serve(from_il: bool) -> None:
    """The child's end: answer requests until stdin closes."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the runtime's own prints go to stderr
    inp = sys.stdin.buffer
    sys.path.insert(0, str(HERE))

    def send(status: str, value: object) -> None:
        pickle.dump((status, value), out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()

    from bench_lib import median_seconds
    from cases import CASES
    from contenders import IntelDevice, Unavailable

    try:
        device = IntelDevice(from_il)
    except Unavailable as e:
        send("unavailable", str(e))
        return
    except Exception as e:
        send("unavailable", f"{type(e).__name__}: {e}")
        return
    send("ok", device.version)
    prepared, returned = None, None
    while True:
        try:
            request = pickle.load(inp)
        except EOFError:
            return
        try:
            what, *args = request
            if what == "prepare":
                name, params, spirv = args
                prepared = None  # free the previous case's data first
                case = CASES[name]
                prepared = device.prepare(case, case.make_data(params), params, spirv)
                send("ok", None)
            elif what == "run":
                returned = prepared.run()
                send("ok", returned)
            elif what == "result":
                send("ok", prepared.result(args[0]))
            elif what == "time":
                warmup, repeats, budget = args
                send("ok", median_seconds(prepared.run, warmup, repeats, budget))
            else:
                send("error", f"unknown request {what!r}")
        except Unavailable as e:
            send("unavailable", str(e))
        except Exception as e:
            traceback.print_exc()
            send("error", f"{type(e).__name__}: {e}")


if __name__ == "__main__":
    serve(sys.argv[1:] == ["--il"])
