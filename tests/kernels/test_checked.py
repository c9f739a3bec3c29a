"""Checked mode (``check=True``, ``SPIRVJIT_CHECK=1``): each bad access the issue names
ends in a LaunchError that says which kernel, work-item, argument, element and line; the
launch writes nothing outside its arrays; correct kernels give the same results."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import spirvjit
from spirvjit.toolchain import find_tool

ROOT = Path(__file__).resolve().parents[2]

OOB = r"""
__kernel void shift(__global const float *a, __global float *b, int n) {
    int i = get_global_id(0);
    b[i + n] = a[i] * 2.0f;
}
__kernel void read_back(__global const float *a, __global float *b, int n) {
    int i = get_global_id(0);
    b[i] = a[i - n];
}
__kernel void constant_arg(__constant int *t, __global int *out) {
    int i = get_global_id(0);
    out[i] = t[i];
}
__constant int TABLE[4] = {1, 2, 3, 4};
__kernel void program_table(__global int *out) {
    int i = get_global_id(0);
    out[i] = TABLE[i];
}
__kernel void local_arg(__local float *tile, __global float *out) {
    int l = get_local_id(0);
    tile[l * 2] = 1.0f;
    out[get_global_id(0)] = tile[l * 2];
}
__kernel void local_static(__global float *out) {
    __local float tile[16];
    int l = get_local_id(0);
    tile[l + 1] = (float)l;
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = tile[l];
}
__kernel void private_array(__global int *out, int n) {
    int p[8];
    int i = get_global_id(0);
    for (int k = 0; k < 8; ++k) p[k] = out[k];
    p[(i + n) & 15] = i;
    out[i] = p[i & 7];
}
__kernel void either(__global float *a, __global float *b, int pick, int n) {
    __global float *p = pick ? a : b;
    p[get_global_id(0) + n] = 1.0f;
}
__kernel void divergent(__global int *out) {
    int l = get_local_id(0);
    if (l < 2) barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = l;
}
"""


@pytest.fixture(scope="module")
def prog():
    return spirvjit.compile_opencl(OOB)


def _error(call) -> str:
    with pytest.raises(spirvjit.LaunchError) as info:
        call()
    return str(info.value)


def test_write_past_the_end_is_stopped_before_it_reaches_the_neighbour(prog):
    # Two adjacent arrays: without checks b[8] is next[0], and the write lands there.
    memory = np.zeros(16, np.float32)
    b, neighbour = memory[:8], memory[8:]
    a = np.arange(8, dtype=np.float32)
    prog.shift(a, b, 1, global_size=8)
    assert neighbour[0] == 14.0  # unchecked: silently overwritten

    neighbour[0] = -1.0
    message = _error(lambda: prog.shift(a, b, 1, global_size=8, check=True))
    assert neighbour[0] == -1.0
    assert "kernel 'shift'" in message
    assert "out-of-bounds write of 4 bytes" in message
    assert "global id (7, 0, 0), local id (7, 0, 0)" in message
    assert "argument 1 'b', element index 8" in message
    assert "the array has 8 elements (32 bytes)" in message


def test_read_before_the_start(prog):
    a, b = np.ones(8, np.float32), np.zeros(8, np.float32)
    message = _error(lambda: prog.read_back(a, b, 3, global_size=8, check=True))
    assert "out-of-bounds read of 4 bytes" in message
    assert "global id (0, 0, 0)" in message
    assert "argument 0 'a', element index -3" in message


def test_correct_launches_run_unchanged_when_checked(prog):
    a = np.arange(8, dtype=np.float32)
    b = np.zeros(8, np.float32)
    prog.shift(a, b, 0, global_size=8, check=True)
    np.testing.assert_array_equal(b, a * 2)
    b2 = np.zeros(4, np.float32)
    prog.read_back(a, b2, 0, global_size=4, check=True)
    np.testing.assert_array_equal(b2, a[:4])


def test_null_buffer(prog):
    # None is NULL, as OpenCL allows (an optional buffer the kernel tests); dereferencing
    # it is reported in checked mode (unchecked: the crash report, tested below).
    a = np.ones(8, np.float32)
    message = _error(lambda: prog.shift(a, None, 0, global_size=8, check=True))
    assert "NULL dereference: write of 4 bytes" in message
    assert "through argument 1 'b', given None" in message


def test_constant_argument(prog):
    t = np.arange(4, dtype=np.int32)
    out = np.zeros(6, np.int32)
    message = _error(lambda: prog.constant_arg(t, out, global_size=6, check=True))
    assert "read" in message and "argument 0 " in message and "element index 4" in message
    assert "the array has 4 elements" in message


def test_program_scope_constant_table(prog):
    out = np.zeros(6, np.int32)
    message = _error(lambda: prog.program_table(out, global_size=6, check=True))
    assert "global id (4, 0, 0)" in message
    assert "program-scope __constant variable" in message
    assert "byte offset 16, the variable has 16 bytes" in message


def test_local_argument(prog):
    out = np.zeros(8, np.float32)
    tile = spirvjit.LocalMemory(8 * 4)
    message = _error(lambda: prog.local_arg(tile, out, global_size=8, local_size=8, check=True))
    assert "out-of-bounds write" in message
    assert "local id (4, 0, 0)" in message
    assert "element index 8" in message


def test_static_local_array(prog):
    out = np.zeros(16, np.float32)
    message = _error(lambda: prog.local_static(out, global_size=16, local_size=16, check=True))
    assert "__local variable" in message
    assert "byte offset 64, the variable has 64 bytes" in message
    assert "local id (15, 0, 0)" in message


def test_private_array(prog):
    out = np.arange(8, dtype=np.int32)
    prog.private_array(out.copy(), 0, global_size=8, check=True)  # in bounds
    message = _error(lambda: prog.private_array(out.copy(), 8, global_size=8, check=True))
    assert "private variable" in message
    assert "global id (0, 0, 0)" in message
    assert "the variable has 32 bytes" in message


def test_pointer_of_unknown_origin(prog):
    # A select between two arguments: checked against every buffer argument.
    a, b = np.zeros(4, np.float32), np.zeros(4, np.float32)
    prog.either(a, b, 1, 0, global_size=4, check=True)
    assert a.tolist() == [1.0] * 4
    message = _error(lambda: prog.either(a, b, 0, 1, global_size=4, check=True))
    assert "inside no array passed to the kernel" in message
    assert "nearest: argument 1, element index 4 of 4" in message


def test_divergent_barrier(prog):
    out = np.zeros(8, np.int32)
    message = _error(lambda: prog.divergent(out, global_size=8, local_size=8, check=True))
    assert "divergent barrier" in message
    assert "local id (2, 0, 0)" in message


def test_environment_variable_turns_checks_on(prog, monkeypatch):
    a, b = np.ones(8, np.float32), np.zeros(8, np.float32)
    monkeypatch.setenv("SPIRVJIT_CHECK", "1")
    assert "out-of-bounds" in _error(lambda: prog.shift(a, b, 1, global_size=8))
    # check=False overrides it.
    prog.shift(a, b, 0, global_size=8, check=False)


def test_checked_variant_has_its_own_cache_key(prog):
    plain = prog.kernel_key("shift")
    checked = prog.kernel_key("shift", (("check", "1"),))
    assert plain != checked


@pytest.mark.skipif(
    not (find_tool("clang15") and find_tool("llvm-spirv")),
    reason="line information needs the translator producer (clang-22's SPIR-V back end "
    "emits no OpLine)",
)
def test_source_location_with_g():
    source = OOB.split("__kernel void read_back")[0]
    p = spirvjit.compile_opencl(source, options=["-g"], producer="translator")
    a, b = np.ones(8, np.float32), np.zeros(8, np.float32)
    message = _error(lambda: p.shift(a, b, 1, global_size=8, check=True))
    # b[i + n] = ... is line 4 of the source; the store's column is clang's.
    assert re.search(r", at kernel\.cl:4:\d+$", message), message
    # Failed before: -O0 code reloads b from a private variable before each use, and the
    # report said "a pointer inside no array" instead of naming the argument.
    assert "argument 1 'b', element index 8 (byte offset 32), the array has 8" in message


HELPERS = """float load_at(__global const float *p, int i)
{
    return p[i];
}

void store_at(__global float *p, int i, float v)
{
    p[i] = v;
}

void store_twice(__global float *p, int i, float v)
{
    store_at(p, i, v);
}

__kernel void once(__global const float *a, __global float *b, int n)
{
    int i = get_global_id(0);
    store_twice(b, i + n, load_at(a, i));
}

__kernel void twice(__global const float *a, __global float *b, int n)
{
    int i = get_global_id(0);
    float v = load_at(a, i);
    b[i] = v;
    b[i + n] = load_at(a, i + n);
}
"""


@pytest.mark.skipif(
    not (find_tool("clang15") and find_tool("llvm-spirv")),
    reason="line information needs the translator producer",
)
def test_access_in_a_helper_names_the_kernel_line_that_called_it():
    # Failed before: the report named the helper's line only.
    p = spirvjit.compile_opencl(HELPERS, options=["-g"], producer="translator")
    a, b = np.ones(8, np.float32), np.zeros(8, np.float32)
    message = _error(lambda: p.once(a, b, 1, global_size=8, check=True))
    # p[i] = v in store_at (line 8), reached through store_twice from the kernel's line 19.
    assert re.search(r", at kernel\.cl:8:\d+, in a function called from kernel\.cl:19:5$", message)
    # load_at has two call sites: which one ran is not known statically.
    message = _error(lambda: p.twice(a, b, 1, global_size=8, check=True))
    assert re.search(r", at kernel\.cl:3:\d+$", message), message


BLUR = r"""
// A 2D box blur over a width x height image (row-major floats).
__kernel void blur(__global const float *src, __global float *dst, int width, int height) {
    int x = get_global_id(0), y = get_global_id(1);
    if (x >= width || y >= height) return;
    float s = 0.0f;
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
            int xx = clamp(x + dx, 0, width - 1), yy = clamp(y + dy, 0, height - 1);
            s += src[yy * width + xx];
        }
    dst[y * width + x] = s / 9.0f;
}
"""


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("SPIRVJIT_CHECK", None)
    return subprocess.run(
        [sys.executable, "-m", "spirvjit", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )


def test_cli_run_does_not_crash_on_guessed_buffer_sizes(tmp_path):
    # An image kernel: with the old defaults (width = height = work-item count, one
    # element per work-item) it read and wrote far outside its buffers and the process
    # died (glibc: "double free or corruption"). Now the first launch is checked.
    spv = tmp_path / "blur.spv"
    spv.write_bytes(spirvjit.compile_opencl(BLUR)._spirv)
    proc = _cli("run", str(spv), "blur", "--global", "64,64", "--repeat", "1")
    assert proc.returncode == 1, proc.stderr
    assert "buffer sizes guessed" in proc.stdout
    assert "out-of-bounds read" in proc.stderr and "argument 0" in proc.stderr
    assert "--size ARG=N" in proc.stderr
    # Sizes from the command line: no checked launch, the kernel runs.
    sized = ("--size", "0=4096", "--size", "1=4096", "--args", "64", "64", "--repeat", "1")
    proc = _cli("run", str(spv), "blur", "--global", "64,64", *sized)
    assert proc.returncode == 0, proc.stderr
    assert "guessed" not in proc.stdout and "steady state" in proc.stdout
    proc = _cli("run", str(spv), "blur", "--global", "64,64", *sized, "--check")
    assert proc.returncode == 0, proc.stderr
    proc = _cli("run", str(spv), "blur", "--global", "64,64", "--size", "2=5")
    assert proc.returncode == 2 and "its buffers: 0:src, 1:dst" in proc.stderr


WILD = r"""
__kernel void wild(__global float *b, long where) {
    __global float *p = (__global float *)where;
    p[get_global_id(0)] = 1.0f;
}
"""

CRASHER = f"""
import faulthandler, sys
import numpy as np
import spirvjit
if sys.argv[1] == "faulthandler":
    faulthandler.enable()
prog = spirvjit.compile_opencl({WILD!r})
b = np.zeros(8, np.float32)
print(f"address {{b.ctypes.data:#018x}}", flush=True)
prog.wild(b, 12, global_size=(4, 2), local_size=(2, 1))
print("not reached")
"""


@pytest.mark.parametrize("chained", ["faulthandler", "default"])
def test_a_faulting_kernel_names_itself_before_the_process_dies(chained):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("SPIRVJIT_CHECK", None)
    proc = subprocess.run(
        [sys.executable, "-c", CRASHER, chained],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert proc.returncode != 0 and "not reached" not in proc.stdout
    err = proc.stderr
    assert "fatal signal while kernel 'wild'(__global float32*, int64) was running" in err, err
    assert "global_size=(4, 2), local_size=(2, 1), global_offset=(0, 0)" in err
    address = proc.stdout.split()[1]
    assert f"not shown): {address} 0x000000000000000c\n" in err, err
    assert "rerun with SPIRVJIT_CHECK=1" in err
    if chained == "faulthandler":  # the previous handler still runs: Python's stacks
        assert "Fatal Python error: Segmentation fault" in err
    else:
        assert proc.returncode == -11  # SIGSEGV, the default action


def test_wild_pointer_in_checked_mode():
    prog = spirvjit.compile_opencl(WILD)
    b = np.zeros(8, np.float32)
    message = _error(lambda: prog.wild(b, 0, global_size=8, check=True))
    assert "a __global/__constant pointer to 0x0, which is inside no array" in message


BENCHMARKS = ROOT / "benchmarks"


@pytest.mark.parametrize(
    "name",
    ["saxpy", "stencil", "sgemm", "mandelbrot", "nbody", "blackscholes", "reduction", "histogram"],
)
def test_benchmark_kernels_run_clean_and_right_when_checked(name, monkeypatch):
    # Kernels written for the benchmark suite (local memory, barriers, atomics): no false
    # report, and the results still match the suite's references.
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    from cases import CASES, Local

    case = CASES[name]
    p = case.sizes["first"]
    d = case.make_data(p)
    args = [
        spirvjit.LocalMemory(a.nbytes) if isinstance(a, Local) else a for a in case.ocl_args(d, p)
    ]
    want = case.reference(d, p)
    for key in case.zeroed:
        d[key].fill(0)
    prog = spirvjit.compile_opencl(case.source, options=list(case.options))
    global_size, local_size = case.ndrange(p)
    prog.kernel(name)(*args, global_size=global_size, local_size=local_size, check=True)
    assert case.compare(case.result(d, case.host_finish(d, p)), want) is None


HIP_OOB = r"""
#include <hip/hip_runtime.h>
__global__ void shifted_copy(float *out, const float *in) {
    int t = threadIdx.x;
    out[t + 2] = in[t];
}
__global__ void reversed_tile(float *out, const float *in) {
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = in[t];
    __syncthreads();
    out[t + 2] = s[63 - t];
}
"""


@pytest.mark.parametrize("name", ["shifted_copy", "reversed_tile"])
def test_hip_pointer_arguments_are_checked(name):
    # clang-22 casts a HIP kernel's pointer arguments to generic pointers through an
    # integer (OpConvertPtrToU, OpConvertUToPtr): every access had an unknown origin and
    # went unchecked, so these writes past `out` were not reported.
    if find_tool("clang") is None:
        pytest.skip("needs clang-22")
    prog = spirvjit.compile_hip(HIP_OOB)
    out = np.zeros(64, np.float32)
    with pytest.raises(spirvjit.LaunchError) as info:
        prog.kernel(name)(out, np.arange(64, dtype=np.float32), grid=(1,), block=(64,), check=True)
    message = str(info.value)
    assert "out-of-bounds write" in message and "argument 0" in message
    assert "global id (62, 0, 0)" in message and "element index 64" in message
