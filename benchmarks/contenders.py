"""The runtimes the suite compares: spirvjit, Intel's and PoCL's OpenCL (PyOpenCL), C, NumPy.

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
INTEL_PLATFORM = "Intel(R) OpenCL"
NATIVE_FLAGS = ["-O3", "-march=native", "-fopenmp", "-fPIC", "-shared"]


@dataclass
class Prepared:
    run: Callable[[], object]
    result: Callable[[object], object]
    # (warmup, repeats, budget s) -> (median s, runs): where the timing happens elsewhere
    # (a child process); None: the suite times ``run`` itself.
    timer: Callable[[int, int, float], tuple[float, int]] | None = None


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


class OpenCLRuntime:
    """An OpenCL CPU device through PyOpenCL (PoCL, or Intel's runtime in a child process).

    Buffers wrap the arrays (USE_HOST_PTR, page-aligned, so the runtime works on them in
    place); results are read back with enqueue_copy after the timed runs, except what the
    host finish needs, which is read inside the timed run. ``from_il``: build the SPIR-V
    spirvjit runs (clCreateProgramWithIL) instead of the OpenCL C source."""

    name = "opencl"
    platform_name = ""
    install_hint = ""

    def __init__(self, from_il: bool = False) -> None:
        import pyopencl as cl

        self.cl = cl
        self.from_il = from_il
        platforms = [p for p in cl.get_platforms() if p.name == self.platform_name]
        if not platforms:
            raise Unavailable(f"{self.platform_name!r} platform not found ({self.install_hint})")
        self.platform = platforms[0]
        self.ctx = cl.Context(platforms[0].get_devices())
        self.queue = cl.CommandQueue(self.ctx)
        self.kernels: dict[str, object] = {}

    @property
    def version(self) -> str:
        return re.sub(r"\s+", " ", self.platform.version).strip()

    def kernel(self, case: Case, spirv: bytes | None = None):
        if case.name not in self.kernels:
            if self.from_il:
                if spirv is None:
                    raise Unavailable("no SPIR-V given")
                program = self.cl.Program(self.ctx, spirv).build()
            else:
                program = self.cl.Program(self.ctx, case.source).build(options=list(case.options))
            self.kernels[case.name] = getattr(program, case.name)
        return self.kernels[case.name]

    def prepare(self, case: Case, d: Data, p: Params, spirv: bytes | None = None) -> Prepared:
        cl, queue = self.cl, self.queue
        kernel = self.kernel(case, spirv)
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


class Pocl(OpenCLRuntime):
    """PoCL's CPU device, in the suite's own process."""

    name = "pocl"
    platform_name = POCL_PLATFORM
    install_hint = "apt-get install pocl-opencl-icd"


class IntelDevice(OpenCLRuntime):
    """Intel's CPU runtime; only ever made in a child process (benchmarks/intel_cl.py)."""

    name = "intel"
    platform_name = INTEL_PLATFORM
    install_hint = "pip install intel-opencl-rt intel-cmplr-lib-rt"


class Intel:
    """Intel's CPU OpenCL runtime (PyPI intel-opencl-rt) from OpenCL C source.

    It runs in a child process whose ICD loader sees only libintelocl.so
    (OCL_ICD_VENDORS, set before PyOpenCL is imported there); its CL_CONFIG_* settings
    stay at their defaults. The child makes its own copy of the data (the cases' data
    are deterministic), runs and times the kernel itself (no pipe round trip in the
    times) and sends the result back for the check here."""

    name = "intel"
    from_il = False

    def __init__(self) -> None:
        from intel_cl import IntelChild

        self.child = IntelChild(self.from_il)
        self.version = self.child.version
        self.spirv: dict[str, bytes] = {}

    def _spirv(self, case: Case) -> bytes | None:
        if not self.from_il:
            return None
        if case.name not in self.spirv:
            import spirvjit

            program = spirvjit.compile_opencl(case.source, options=list(case.options))
            self.spirv[case.name] = program.spirv
        return self.spirv[case.name]

    def prepare(self, case: Case, d: Data, p: Params) -> Prepared:
        child = self.child
        child.call("prepare", case.name, p, self._spirv(case))
        return Prepared(
            lambda: child.call("run"),
            lambda returned: child.call("result", returned),
            timer=lambda warmup, repeats, budget: child.call("time", warmup, repeats, budget),
        )


class IntelSpirv(Intel):
    """Intel's CPU runtime on the SPIR-V spirvjit runs (clCreateProgramWithIL)."""

    name = "intel-spv"
    from_il = True


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


CONTENDERS = {
    "spirvjit": Spirvjit,
    "intel": Intel,
    "intel-spv": IntelSpirv,
    "pocl": Pocl,
    "native": Native,
    "numpy": Numpy,
}
