"""The runtimes the suite compares: spirvjit, PoCL (through PyOpenCL), native C and NumPy.

Each contender turns a case (benchmarks/cases.py) and its data into a ``Prepared``: a
``run`` callable (what is timed) and a ``result`` callable (what is checked, given the
value ``run`` returned). Compilation happens in ``prepare`` and is never timed here.
"""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from cases import NATIVE, Case, Data, Local, Params

POCL_PLATFORM = "Portable Computing Language"
NATIVE_FLAGS = ["-O3", "-march=native", "-fopenmp", "-fPIC", "-shared"]


@dataclass
class Prepared:
    run: Callable[[], object]
    result: Callable[[object], object]


class Unavailable(Exception):
    """The contender cannot run this case (not installed, no natural version, ...)."""


class Spirvjit:
    name = "spirvjit"

    def __init__(self) -> None:
        import spirvjit

        self.spirvjit = spirvjit
        self.kernels: dict[str, object] = {}

    def kernel(self, case: Case):
        if case.name not in self.kernels:
            prog = self.spirvjit.compile_opencl(case.source, options=list(case.options))
            kernel = prog.kernel(case.name)
            kernel.compile()
            self.kernels[case.name] = kernel
        return self.kernels[case.name]

    def prepare(self, case: Case, d: Data, p: Params) -> Prepared:
        kernel = self.kernel(case)
        local_memory = self.spirvjit.LocalMemory
        args = [local_memory(a.nbytes) if isinstance(a, Local) else a for a in case.ocl_args(d, p)]
        global_size, local_size = case.ndrange(p)
        zeroed = [d[k] for k in case.zeroed]

        def run() -> object:
            for array in zeroed:
                array.fill(0)
            kernel(*args, global_size=global_size, local_size=local_size)
            return case.host_finish(d, p)

        return Prepared(run, lambda returned: case.result(d, returned))


class Pocl:
    """PoCL's CPU device. Buffers wrap the arrays (USE_HOST_PTR, page-aligned, so PoCL
    works on them in place); results are read back with enqueue_copy after the timed runs,
    except what the host finish needs, which is read inside the timed run."""

    name = "pocl"

    def __init__(self) -> None:
        import pyopencl as cl

        self.cl = cl
        platforms = [p for p in cl.get_platforms() if p.name == POCL_PLATFORM]
        if not platforms:
            raise Unavailable("PoCL platform not found (apt-get install pocl-opencl-icd)")
        self.platform = platforms[0]
        self.ctx = cl.Context(platforms[0].get_devices())
        self.queue = cl.CommandQueue(self.ctx)
        self.kernels: dict[str, object] = {}

    @property
    def version(self) -> str:
        return re.sub(r"\s+", " ", self.platform.version).strip()

    def kernel(self, case: Case):
        if case.name not in self.kernels:
            program = self.cl.Program(self.ctx, case.source).build(options=list(case.options))
            self.kernels[case.name] = getattr(program, case.name)
        return self.kernels[case.name]

    def prepare(self, case: Case, d: Data, p: Params) -> Prepared:
        cl, queue = self.cl, self.queue
        kernel = self.kernel(case)
        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR
        buffers = {k: cl.Buffer(self.ctx, flags, hostbuf=a) for k, a in d.items()}
        by_address = {a.ctypes.data: buffers[k] for k, a in d.items()}

        def arg(a: object) -> object:
            if isinstance(a, Local):
                return cl.LocalMemory(a.nbytes)
            if isinstance(a, np.ndarray):
                return by_address[a.ctypes.data]  # a view of one of the data arrays
            return a

        args = [arg(a) for a in case.ocl_args(d, p)]
        kernel.set_args(*args)
        global_size, local_size = case.ndrange(p)
        zeroed = [(buffers[k], d[k].nbytes) for k in case.zeroed]
        finish_outs = {k: np.empty_like(d[k]) for k in case.finish_reads}

        def run() -> object:
            for buf, nbytes in zeroed:
                cl.enqueue_fill_buffer(queue, buf, np.uint32(0), 0, nbytes)
            cl.enqueue_nd_range_kernel(queue, kernel, global_size, local_size)
            for k, out in finish_outs.items():
                cl.enqueue_copy(queue, out, buffers[k])  # blocking
            queue.finish()
            return case.host_finish(finish_outs, p)

        def result(returned: object) -> object:
            outs = dict(d)
            for k in case.outputs:
                outs[k] = np.empty_like(d[k])
                cl.enqueue_copy(queue, outs[k], buffers[k])
            queue.finish()
            return case.result(outs, returned)

        return Prepared(run, result)


_CTYPES = {
    np.float32: ctypes.c_float,
    np.float64: ctypes.c_double,
    np.int32: ctypes.c_int32,
    np.uint32: ctypes.c_uint32,
    np.int64: ctypes.c_int64,
}


def _c_arg(a: object) -> object:
    if isinstance(a, np.ndarray):
        return ctypes.c_void_p(a.ctypes.data)
    return _CTYPES[type(a)](a)


class Native:
    """The C versions, compiled once per run into a temporary directory."""

    name = "native"

    def __init__(self) -> None:
        if shutil.which("gcc") is None:
            raise Unavailable("gcc not found")
        self.dir = tempfile.TemporaryDirectory(prefix="spirvjit-suite-")
        self.libs: dict[str, ctypes.CDLL] = {}

    def library(self, case: Case) -> ctypes.CDLL:
        if case.name not in self.libs:
            source = NATIVE / f"{case.name}.c"
            # A first line "// cflags: ..." adds flags (e.g. -ffp-contract=off).
            first = source.read_text().splitlines()[0]
            extra = first.split(":", 1)[1].split() if first.startswith("// cflags:") else []
            lib = Path(self.dir.name) / f"lib{case.name}.so"
            command = ["gcc", *NATIVE_FLAGS, *extra, str(source), "-o", str(lib), "-lm"]
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode:
                raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr}")
            self.libs[case.name] = ctypes.CDLL(str(lib))
        return self.libs[case.name]

    def prepare(self, case: Case, d: Data, p: Params) -> Prepared:
        fn = getattr(self.library(case), case.name)
        fn.restype = ctypes.c_float if case.native_restype == "float" else None
        args = [_c_arg(a) for a in case.native_args(d, p)]
        return Prepared(lambda: fn(*args), lambda returned: case.result(d, returned))


class Numpy:
    name = "numpy"

    def prepare(self, case: Case, d: Data, p: Params) -> Prepared:
        run = case.numpy_run(d, p)
        if run is None:
            raise Unavailable("no natural NumPy version")
        return Prepared(run, lambda returned: case.result(d, returned))


CONTENDERS = {"spirvjit": Spirvjit, "pocl": Pocl, "native": Native, "numpy": Numpy}
