"""Source-level debugging of CPU kernels with gdb (debug mode: backends/cpu/debugload.py,
translate/debuginfo.py): a real gdb session on a real kernel, and the debug-mode
variants computing what the ordinary ones do."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import spirvjit
from spirvjit.frontend.opencl import default_producer, wants_debug_info
from spirvjit.toolchain import find_tool

ROOT = Path(__file__).resolve().parents[2]

translator = pytest.mark.skipif(
    not (find_tool("clang15") and find_tool("llvm-spirv") and find_tool("ld.lld")),
    reason="debug information needs the translator producer (clang-15, llvm-spirv-15) and "
    "ld.lld to link debug-mode kernels",
)
gdb = pytest.mark.skipif(
    shutil.which("gdb") is None, reason="gdb is not installed (Debian package gdb)"
)

# Line 9 is `out[gid] = sum + v.x;`.
KERNEL = """\
__kernel void accumulate(__global const float *in, __global float *out, int n)
{
    int gid = get_global_id(0);
    float4 v = (float4)(gid, 1.0f, 2.0f, 3.0f);
    float sum = 0.0f;
    for (int k = 0; k < n; k++) {
        sum += in[gid * n + k];
    }
    out[gid] = sum + v.x;
    out[gid] += 0.5f;
}
"""

APP = """\
import numpy as np, spirvjit
src = open({source!r}).read()
prog = spirvjit.compile_opencl(src, options=["-g"])
n = 4
data = np.arange(8 * n, dtype=np.float32)
out = np.zeros(8, np.float32)
prog.accumulate(data, out, np.int32(n), global_size=8, local_size=4)
print("result", out.tolist())
"""


def _gdb(tmp_path: Path, commands: list[str], app_text: str | None = None) -> str:
    (tmp_path / "kernel.cl").write_text(KERNEL)
    app = tmp_path / "app.py"
    app.write_text(app_text or APP.format(source=str(tmp_path / "kernel.cl")))
    # -nx: no gdbinit of the user; no debuginfod (no network in CI, nothing to fetch).
    cmd = ["gdb", "-q", "-nx", "-batch", "-iex", "set debuginfod enabled off"]
    cmd += ["-ex", "set breakpoint pending on"]
    for command in commands:
        cmd += ["-ex", command]
    cmd += ["--args", sys.executable, str(app)]
    run_env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run_env.pop("SPIRVJIT_DEBUG_INFO", None)  # under gdb: debug mode by itself
    done = subprocess.run(
        cmd, capture_output=True, text=True, timeout=240, env=run_env, cwd=tmp_path
    )
    return done.stdout + done.stderr


@translator
@gdb
def test_gdb_breaks_at_the_kernel_line_with_the_work_items_values(tmp_path):
    out = _gdb(
        tmp_path,
        [
            "break kernel.cl:9 if spirvjit_gid[0] == 5",
            "run",
            "print sum",
            "print gid",
            "print v",
            "print n",
            "print spirvjit_gid",
            "print spirvjit_lid",
            "print in[gid * n + 1]",
            "info locals",
            "bt 1",
            "next",
            "print out[gid]",
            "delete",
            "break kernel.cl:7 if spirvjit_gid[0] == 6",
            "continue",
            "step",
            "step",
            "delete",
            "continue",
        ],
    )
    assert re.search(r"hit Breakpoint 1, accumulate \(.*\) at kernel\.cl:9\n", out), out
    values = re.findall(r"^\$(\d+) = (.*)$", out, re.MULTILINE)
    # Work-item 5 of groups of 4: in[20..23] summed; its local id is 1.
    assert [v for _, v in values] == [
        "86",
        "5",
        "{5, 1, 2, 3}",
        "4",
        "{5, 0, 0}",
        "{1, 0, 0}",
        "21",
        "91",
    ], out
    assert re.search(r"^spirvjit_gid = \{5, 0, 0\}\n(.*\n)*sum = 86$", out, re.MULTILINE), out
    assert re.search(
        r"^#0 +accumulate \(in=0x[0-9a-f]+, out=0x[0-9a-f]+, n=4\) at kernel\.cl:9", out, re.M
    ), out
    # gdb shows the source (kernel.cl is in its current directory); `next` went to line
    # 10; the second breakpoint, in the loop, then `step` back to the loop's head.
    assert re.search(r"^10\t +out\[gid\] \+= 0\.5f;$", out, re.MULTILINE), out
    assert re.search(r"hit Breakpoint 2, accumulate .* at kernel\.cl:7\n7\t +sum \+= ", out), out
    assert re.search(r"^6\t +for \(int k = 0; k < n; k\+\+\) \{$", out, re.MULTILINE), out
    # Other work-items passed the breakpoints (their condition false) without harm.
    expected = [float(sum(range(g * 4, g * 4 + 4)) + g + 0.5) for g in range(8)]
    assert f"result {expected}" in out, out


BARRIER = """\
typedef struct { float lo; int count; } pair;
float twice(float x) { return 2.0f * x; }
__kernel void reverse(__global float *a, __global pair *p, __local float *tile)
{
    size_t l = get_local_id(0), n = get_local_size(0);
    float8 w = (float8)(a[get_global_id(0)]);
    tile[l] = twice(w.s3);
    barrier(CLK_LOCAL_MEM_FENCE);
    pair q = { tile[n - 1 - l], (int)l };
    a[get_global_id(0)] = q.lo;
    p[get_global_id(0)] = q;
}
"""

# A barrier kernel (compiled from reverse.cl, recorded as kernel.cl), a kernel of
# hand-written SPIR-V with NonSemantic.Shader.DebugInfo.100 (twice.cl) and one calling a
# helper function (helper.cl).
THREE_KERNELS_APP = """\
import numpy as np, spirvjit
prog = spirvjit.compile_opencl(open({source!r}).read(), options=["-g"])
a = np.arange(16, dtype=np.float32)
p = np.zeros(16, np.dtype([("lo", np.float32), ("count", np.int32)]))
prog.reverse(a, p, spirvjit.LocalMemory(4 * 8), global_size=16, local_size=8)
print("result", a.tolist())
prog = spirvjit.load_spirv(open({spirv!r}, "rb").read())
a = np.array([21.0], np.float32)
prog.twice(a, global_size=1)
print("result", a.tolist())
prog = spirvjit.compile_opencl({helper!r}, options=["-g"], filename="helper.cl")
a = np.arange(4, dtype=np.float32) + 10
prog.use(a, global_size=4)
print("result", a.tolist())
"""

# A helper function (not inlined at -O0): gdb stops on it after its prologue, with its
# parameter stored.
HELPER = """\
float halve(float x)
{
    float y = x / 2.0f;
    return y;
}
__kernel void use(__global float *a) { a[get_global_id(0)] = halve(a[get_global_id(0)]); }
"""


@translator
@gdb
@pytest.mark.skipif(find_tool("spirv-as") is None, reason="needs spirv-as (spirv-tools)")
def test_gdb_in_a_barrier_kernel_nonsemantic_debug_info_and_a_helper(tmp_path):
    """A barrier kernel runs as step functions with its variables in a per-work-item
    frame: after the barrier they are still found (declared through their slot). SPIR-V
    from elsewhere: DebugLine, DebugFunctionDefinition and DebugDeclare of
    NonSemantic.Shader.DebugInfo.100 (literals as constants)."""
    (tmp_path / "reverse.cl").write_text(BARRIER)
    spirv = tmp_path / "twice.spv"
    asm = ROOT / "tests" / "data" / "debuginfo" / "twice_nonsemantic.spvasm"
    subprocess.run(
        [find_tool("spirv-as"), "--target-env", "spv1.2", str(asm), "-o", str(spirv)],
        check=True,
    )
    app = THREE_KERNELS_APP.format(
        source=str(tmp_path / "reverse.cl"), spirv=str(spirv), helper=HELPER
    )
    commands = ["break kernel.cl:10 if spirvjit_gid[0] == 10", "break twice.cl:4", "run"]
    commands += ["print q", "print w", "print l", "print tile[0]@8", "print spirvjit_lid"]
    commands += ["delete 1", "break halve if spirvjit_gid[0] == 2", "continue", "print x"]
    commands += ["continue", "print x", "print spirvjit_gid", "next", "print y", "delete"]
    commands += ["continue"]
    out = _gdb(tmp_path, commands, app)
    assert re.search(r"hit Breakpoint 1, reverse \(\) at kernel\.cl:10\n", out), out
    assert re.search(r"hit Breakpoint 2, twice \(\) at twice\.cl:4\n", out), out
    values = [v for _, v in re.findall(r"^\$(\d+) = (.*)$", out, re.MULTILINE)]
    assert values == [
        "{lo = 26, count = 2}",  # tile[8 - 1 - 2] of the second group: 2 * 13
        "{10, 10, 10, 10, 10, 10, 10, 10}",
        "2",
        "{16, 18, 20, 22, 24, 26, 28, 30}",
        "{2, 0, 0}",
        "21",
        "12",  # a[2] + 10, on entering halve (its prologue skipped)
        "{2, 0, 0}",
        "6",
    ], out
    assert re.search(r"hit Breakpoint 3, halve \(x=12\) at helper\.cl:3\n", out), out
    assert "result [14.0, 12.0, 10.0" in out, out
    assert "result [42.0]" in out, out
    assert "result [5.0, 5.5, 6.0, 6.5]" in out, out


@translator
def test_debug_mode_kernels_compute_what_ordinary_ones_do(monkeypatch):
    """A barrier kernel (step functions), a helper function, a struct and a float8 in
    debug mode, loaded as a shared object: the same results as without."""
    results = []
    for setting in ("0", "1"):
        monkeypatch.setenv("SPIRVJIT_DEBUG_INFO", setting)
        prog = spirvjit.compile_opencl(BARRIER, options=["-g"])
        a = np.arange(16, dtype=np.float32)
        p = np.zeros(16, np.dtype([("lo", np.float32), ("count", np.int32)]))
        prog.reverse(a, p, spirvjit.LocalMemory(4 * 8), global_size=16, local_size=8)
        results.append((a, p))
    with open("/proc/self/maps") as f:  # the debug-mode kernel is a shared object
        assert "/reverse." in f.read()
    (a0, p0), (a1, p1) = results
    np.testing.assert_array_equal(a1, a0)
    np.testing.assert_array_equal(p1, p0)
    expected = np.concatenate([2 * np.arange(8)[::-1], 2 * np.arange(8, 16)[::-1]])
    np.testing.assert_array_equal(a1, expected.astype(np.float32))
    np.testing.assert_array_equal(p1["count"], np.tile(np.arange(8), 2))


GLOBALS = """\
__global int counter = 7;
__kernel void bump(__global int *out) { out[get_global_id(0)] = counter; counter += 1; }
__kernel void read(__global int *out) { out[0] = counter; }
"""


@translator
def test_debug_mode_kernels_share_program_scope_variables(monkeypatch):
    """Program-scope variables live in the program's data library (JIT-linked): the
    debug-mode shared object binds to the same addresses."""
    monkeypatch.setenv("SPIRVJIT_DEBUG_INFO", "1")
    prog = spirvjit.compile_opencl(GLOBALS, options=["-g"])
    out = np.zeros(1, np.int32)
    prog.bump(out, global_size=1)
    assert out[0] == 7
    monkeypatch.setenv("SPIRVJIT_DEBUG_INFO", "0")  # an ordinary kernel sees the write
    prog.read(out, global_size=1)
    assert out[0] == 8
    assert prog.global_variable("counter")[()] == 8


@translator
def test_debug_mode_is_chosen_by_the_setting_the_debugger_and_line_information(monkeypatch):
    from spirvjit.backends.cpu import debugload

    with_lines = spirvjit.compile_opencl(GLOBALS, options=["-g"]).module
    without = spirvjit.compile_opencl(GLOBALS).module  # clang-22: no OpLine
    monkeypatch.setattr(debugload, "traced", lambda: False)
    monkeypatch.delenv("SPIRVJIT_DEBUG_INFO", raising=False)
    assert not debugload.wanted(with_lines)
    monkeypatch.setattr(debugload, "traced", lambda: True)  # under gdb
    assert debugload.wanted(with_lines) and not debugload.wanted(without)
    monkeypatch.setenv("SPIRVJIT_DEBUG_INFO", "0")
    assert not debugload.wanted(with_lines)
    monkeypatch.setattr(debugload, "traced", lambda: False)
    monkeypatch.setenv("SPIRVJIT_DEBUG_INFO", "1")
    assert debugload.wanted(with_lines) and not debugload.wanted(without)


def test_traced_reads_this_process_status():
    from spirvjit.backends.cpu.debugload import traced

    with open("/proc/self/status") as f:
        tracer = next(line.split()[1] for line in f if line.startswith("TracerPid:"))
    assert traced() == (tracer != "0")


def test_minus_g_chooses_the_translator_producer():
    assert wants_debug_info(["-g"]) and wants_debug_info(["-DX=1", "-gdwarf-5"])
    assert not wants_debug_info(["-g", "-g0"]) and not wants_debug_info(["-O2"])
    assert default_producer(["-g"]) == "translator"
    assert default_producer(["-O2"]) == "clang"


@translator
def test_dis_source_interleaves_the_target_assembly(tmp_path):
    (tmp_path / "kernel.cl").write_text(KERNEL)
    spv = tmp_path / "k.spv"
    spv.write_bytes(spirvjit.compile_opencl(KERNEL, options=["-g"]).spirv)
    cmd = [sys.executable, "-m", "spirvjit", "dis", str(spv), "--target", "host"]
    cmd += ["--source", str(tmp_path / "kernel.cl")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    # Each source line once before the first instruction of its run, then the code.
    assert re.search(r"; kernel\.cl:9: out\[gid\] = sum \+ v\.x;\n(\s*\.loc[^\n]*\n)?\s+\w+", text)
    assert "; kernel.cl:7: sum += in[gid * n + k];" in text


def test_dis_source_with_target_needs_line_information(tmp_path):
    spv = tmp_path / "k.spv"
    spv.write_bytes(spirvjit.compile_opencl(textwrap.dedent(KERNEL)).spirv)  # clang: no -g
    cmd = [sys.executable, "-m", "spirvjit", "dis", str(spv), "--target", "host", "--source"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode != 0
    assert "no line information" in done.stderr


@pytest.mark.skipif(find_tool("spirv-as") is None, reason="needs spirv-as (spirv-tools)")
def test_dis_source_reads_nonsemantic_debug_lines(tmp_path):
    spirv = tmp_path / "twice.spv"
    asm = ROOT / "tests" / "data" / "debuginfo" / "twice_nonsemantic.spvasm"
    subprocess.run(
        [find_tool("spirv-as"), "--target-env", "spv1.2", str(asm), "-o", str(spirv)],
        check=True,
    )
    source = tmp_path / "twice.cl"
    source.write_text(
        "__kernel void twice(__global float *a)\n{\n    float x = a[0];\n    a[0] = x * 2.0f;\n}\n"
    )
    cmd = [sys.executable, "-m", "spirvjit", "dis", str(spirv), "--source", str(source)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0 and not done.stderr, done.stderr
    lines = done.stdout.splitlines()
    at = lines.index("; twice.cl:4: a[0] = x * 2.0f;")
    assert " 103 " in lines[at + 1]  # the DebugLine naming line 4
    assert "; twice.cl:3: float x = a[0];" in lines
