"""The runtime around the translator: loading, JIT dumps and logs, local memory, safety."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys

import numpy as np
import pytest

import spirvjit

COPY = """
kernel void copy(global const int* a, global int* b) { size_t i = get_global_id(0); b[i] = a[i]; }
"""


def test_same_module_loaded_twice_runs_twice():
    # Regression: the second load reused the first one's JIT library name and failed.
    spirv = spirvjit.compile_opencl(COPY).spirv
    for _ in range(2):
        a, b = np.arange(100, dtype=np.int32), np.zeros(100, np.int32)
        spirvjit.load_spirv(spirv).kernel("copy")(a, b, global_size=100)
        assert (a == b).all()


def test_integer_division_by_zero_does_not_kill_the_process():
    prog = spirvjit.compile_opencl(
        "kernel void d(global int* a, global int* b) {"
        " size_t i = get_global_id(0); a[i] = a[i] / b[i] + a[i] % b[i]; }"
    )
    a = np.array([7, -(2**31), 5], np.int32)
    b = np.array([0, -1, 2], np.int32)
    prog.kernel("d")(a, b, global_size=3)
    assert a[2] == 5 // 2 + 5 % 2  # defined lanes are right; the others are unspecified


def test_stage_dumps_and_debug_log(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("SPIRVJIT_DUMP", str(tmp_path))
    monkeypatch.setenv("SPIRVJIT_DEBUG", "1")
    prog = spirvjit.compile_opencl(COPY.replace("copy", "dumped"))
    a, b = np.arange(8, dtype=np.int32), np.zeros(8, np.int32)
    with caplog.at_level(logging.INFO, logger="spirvjit"):
        prog.kernel("dumped")(a, b, global_size=8)
    names = sorted(p.name for p in tmp_path.iterdir())
    stem = f"dumped.{prog.spirv_digest[:12]}.{prog.target.name}"
    assert names == [f"{stem}.{s}" for s in ("ll", "opt.ll", "s", "spv", "spvasm")]
    assert "OpEntryPoint Kernel" in (tmp_path / f"{stem}.spvasm").read_text()
    assert "define" in (tmp_path / f"{stem}.opt.ll").read_text()
    message = " ".join(r.getMessage() for r in caplog.records)
    for stage in ("translate", "opt", "obj", "load"):
        assert f"{stage} " in message


def test_dumps_of_same_named_kernels_do_not_overwrite_each_other(tmp_path, monkeypatch):
    monkeypatch.setenv("SPIRVJIT_DUMP", str(tmp_path))
    for value in (1, 2):
        prog = spirvjit.compile_opencl(f"kernel void k(global int* a) {{ a[0] = {value}; }}")
        prog.kernel("k")(np.zeros(1, np.int32), global_size=1)
    assert len(list(tmp_path.glob("k.*.spv"))) == 2


def test_debug_lines_reach_stderr_without_logging_configured(tmp_path):
    code = (
        "import numpy as np, spirvjit\n"
        "p = spirvjit.compile_opencl('kernel void k(global int* a, int n) {"
        " size_t i = get_global_id(0); if (i < n) a[i] = 5; }')\n"
        "p.kernel('k')(np.zeros(64, np.int32), 60, global_size=64)\n"
    )
    env = {**__import__("os").environ, "SPIRVJIT_DEBUG": "1", "SPIRVJIT_CACHE": "0"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "spirvjit: compile k for" in proc.stderr and "translate" in proc.stderr
    # Debug-level decisions too (they were filtered out at INFO).
    assert "ranges before masks" in proc.stderr


def test_unknown_kernel_name_lists_the_kernels():
    prog = spirvjit.compile_opencl(COPY)
    with pytest.raises(spirvjit.LaunchError, match="this program has copy"):
        prog.kernel("nope")


def test_static_local_array_and_local_memory_argument():
    # Without barriers each work-item may only use its own slots, which is enough to
    # check that both kinds of local memory are addressable and distinct.
    prog = spirvjit.compile_opencl(
        """
        kernel void k(global int* out, local int* scratch) {
            local int fixed[64];
            size_t l = get_local_id(0);
            fixed[l] = (int)l * 2;
            scratch[l] = (int)l * 3;
            out[get_global_id(0)] = fixed[l] + scratch[l];
        }
        """
    )
    out = np.zeros(256, np.int32)
    prog.kernel("k")(out, spirvjit.LocalMemory(64 * 4), global_size=256, local_size=64)
    assert (out == 5 * (np.arange(256) % 64)).all()


def test_local_memory_beyond_the_device_limit_is_refused():
    prog = spirvjit.compile_opencl("kernel void k(local int* s) { s[0] = 1; }")
    with pytest.raises(spirvjit.LaunchError, match="bytes of local memory"):
        prog.kernel("k")(spirvjit.LocalMemory(1 << 30), global_size=1)


def test_program_scope_variable_is_shared_by_the_programs_kernels():
    prog = spirvjit.compile_opencl(
        """
        global int counter = 40;
        kernel void bump(void) { counter += 2; }
        kernel void read(global int* out) { out[0] = counter; }
        """
    )
    prog.kernel("bump")(global_size=1)
    out = np.zeros(1, np.int32)
    prog.kernel("read")(out, global_size=1)
    assert out[0] == 42


def test_large_launch_uses_all_groups_exactly_once():
    prog = spirvjit.compile_opencl("kernel void inc(global int* a) { a[get_global_id(0)] += 1; }")
    a = np.zeros(1 << 20, np.int32)
    prog.kernel("inc")(a, global_size=a.size)
    assert (a == 1).all()


def test_host_device_reports_its_limits():
    host = spirvjit.devices()[0]
    assert host.kind == "cpu" and host.compute_units >= 1
    assert host.local_memory_bytes >= 32 * 1024 and host.max_work_group_size >= 256


def test_physical32_module_runs(tmp_path):
    # clang's spirv32 target writes Physical32 addressing: size_t and pointers are 32-bit
    # in the module, while the host's pointers stay 64-bit.
    clang = shutil.which("clang-22")
    if clang is None:
        pytest.skip("clang-22 is not installed")
    source = tmp_path / "k.cl"
    source.write_text(
        "kernel void k(global float* y, global const float* x, float a) {"
        " size_t i = get_global_id(0); y[i] = a * x[i] + y[i] + (float)(sizeof(size_t)); }"
    )
    spv = tmp_path / "k.spv"
    subprocess.run(
        [clang, "--target=spirv32", "-cl-std=CL3.0", "-O2", "-c", str(source), "-o", str(spv)],
        check=True,
    )
    prog = spirvjit.load_spirv(spv)
    x, y = np.arange(100, dtype=np.float32), np.ones(100, np.float32)
    prog.kernel("k")(y, x, 2.0, global_size=100)
    assert np.array_equal(y, 2 * np.arange(100, dtype=np.float32) + 1 + 4)


def test_frexp_on_double_vectors_compiles_for_baseline_x86_64():
    # Regression: llvm.frexp on <N x double> aborted the whole process in LLVM 22's
    # x86 back end without AVX ("Invalid type for widened vector"). Run it in a child
    # process so a crash fails this test instead of killing the test run.
    code = """
import spirvjit
from spirvjit.target import parse_cpu_target
src = '''kernel void f(global const double* a, global double* o, global int* e) {
    size_t i = get_global_id(0); int k; o[i] = frexp(a[i], &k) + rootn(a[i], 3); e[i] = k; }'''
spirv = spirvjit.compile_opencl(src).spirv
for level in ("x86-64", "x86-64-v2"):
    spirvjit.Program(spirv, target=parse_cpu_target(level)).object_code("f")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]


def test_frexp_matches_numpy():
    prog = spirvjit.compile_opencl(
        """kernel void f(global const double* a, global double* o, global int* e) {
        size_t i = get_global_id(0); int k; o[i] = frexp(a[i], &k); e[i] = k; }"""
    )
    a = np.array([0.0, -0.0, 1.0, -3.5, 5e-324, 2.2e-308, 1e300, np.inf, -np.inf, np.nan])
    o, e = np.zeros_like(a), np.zeros(a.size, np.int32)
    prog.kernel("f")(a, o, e, global_size=a.size)
    m_ref, e_ref = np.frexp(a)
    np.testing.assert_array_equal(o, m_ref)
    assert list(e[:7]) == list(e_ref[:7])


CTRL_C = """
import os, signal, threading, time
import numpy as np, spirvjit
prog = spirvjit.compile_opencl('''
kernel void spin(global float* out, int n) {
    size_t i = get_global_id(0);
    float v = (float)i;
    for (int k = 0; k < n; ++k) v = v * 0.999f + 1.0f;
    out[i] = v;
}''')
out = np.zeros(1 << 22, np.float32)
prog.spin(out, 1, global_size=out.size)  # compiled before the clock starts
# A process started in the background by a non-interactive shell inherits SIGINT
# ignored, and Python then installs no handler: restore the terminal's behaviour.
signal.signal(signal.SIGINT, signal.default_int_handler)
threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
start = time.perf_counter()
try:
    # 16384 groups of 2**22 steps each: about an hour of work, 0.1-1 s per group.
    prog.spin(out, 1 << 14, global_size=out.size)
    print("finished")
except KeyboardInterrupt:
    print(f"interrupted {time.perf_counter() - start:.1f}")
"""


def test_ctrl_c_stops_a_long_launch():
    # Before: the KeyboardInterrupt came when the kernel ended (731 s in one report).
    env = {**__import__("os").environ, "SPIRVJIT_NUM_THREADS": "2"}
    proc = subprocess.run(
        [sys.executable, "-c", CTRL_C], capture_output=True, text=True, timeout=240, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("interrupted"), proc.stdout
