"""Tool discovery and the OpenCL C front end (both producers)."""

from __future__ import annotations

import os
import subprocess
import tempfile

import pytest

from spirvjit import toolchain
from spirvjit.errors import CompileError
from spirvjit.frontend import PRODUCERS, opencl_to_spirv

SPIRV_MAGIC = bytes.fromhex("03022307")  # 0x07230203, little-endian

SAXPY = """
kernel void saxpy(float a, global const float *x, global float *y)
{
    size_t i = get_global_id(0);
    y[i] = a * x[i] + y[i];
}
"""

# Which tools each producer needs, to skip with a reason when one is missing.
NEEDS = {"clang": ("clang",), "translator": ("clang15", "llvm-spirv")}


@pytest.fixture(autouse=True)
def fresh_tool_cache():
    """find_tool caches; tests that change the environment need a clean slate."""
    toolchain.find_tool.cache_clear()
    yield
    toolchain.find_tool.cache_clear()


def skip_unless_tools(*names: str) -> None:
    missing = [n for n in names if toolchain.find_tool(n) is None]
    if missing:
        pytest.skip(f"tools not installed: {', '.join(missing)} (run scripts/setup.sh)")


@pytest.fixture(params=PRODUCERS)
def producer(request) -> str:
    skip_unless_tools(*NEEDS[request.param])
    return request.param


# --- tool discovery -------------------------------------------------------------


def test_env_var_names():
    assert toolchain.env_var("clang") == "SPIRVJIT_CLANG"
    assert toolchain.env_var("llvm-spirv") == "SPIRVJIT_LLVM_SPIRV"
    assert toolchain.env_var("ld.lld") == "SPIRVJIT_LD_LLD"


def test_unknown_tool_is_a_value_error():
    with pytest.raises(ValueError, match="known tools"):
        toolchain.find_tool("gcc")


def test_found_tools_are_absolute_executables():
    for name in toolchain.TOOL_NAMES:
        path = toolchain.find_tool(name)
        if path is not None:
            assert os.path.isabs(path) and os.access(path, os.X_OK), name


def test_env_override_wins(monkeypatch, tmp_path):
    fake = tmp_path / "my-clang"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("SPIRVJIT_CLANG", str(fake))
    assert toolchain.find_tool("clang") == str(fake)


def test_broken_env_override_does_not_fall_back(monkeypatch, tmp_path):
    monkeypatch.setenv("SPIRVJIT_CLANG", str(tmp_path / "missing"))
    assert toolchain.find_tool("clang") is None
    with pytest.raises(CompileError, match="SPIRVJIT_CLANG"):
        toolchain.require_tool("clang", "compiling OpenCL C")


def test_missing_tool_error_says_what_and_how(monkeypatch):
    monkeypatch.delenv("SPIRVJIT_CLANG", raising=False)
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(toolchain, "_CANDIDATES", {**toolchain._CANDIDATES, "clang": ("clang-0",)})
    with pytest.raises(CompileError) as info:
        toolchain.require_tool("clang", "compiling OpenCL C to SPIR-V")
    message = str(info.value)
    assert "compiling OpenCL C to SPIR-V" in message
    assert "apt-get install clang-22" in message
    assert "SPIRVJIT_CLANG" in message


def test_frontend_reports_missing_tool(monkeypatch, tmp_path):
    monkeypatch.setenv("SPIRVJIT_CLANG", str(tmp_path / "missing"))
    with pytest.raises(CompileError, match="needed for compiling OpenCL C"):
        opencl_to_spirv(SAXPY)


# --- compiling ------------------------------------------------------------------


def spirv_val(spirv: bytes) -> subprocess.CompletedProcess:
    val = toolchain.find_tool("spirv-val")
    if val is None:
        pytest.skip("spirv-val not installed (apt-get install spirv-tools)")
    return subprocess.run([val, "-"], input=spirv, capture_output=True, timeout=60)


def test_simple_kernel_is_valid_spirv(producer):
    spirv = opencl_to_spirv(SAXPY, producer=producer)
    assert spirv[:4] == SPIRV_MAGIC
    result = spirv_val(spirv)
    assert result.returncode == 0, result.stderr.decode()


def test_broken_kernel_gives_file_line_col(producer):
    source = "kernel void f(global float *x)\n{\n    x[0] = undeclared;\n}\n"
    with pytest.raises(CompileError) as info:
        opencl_to_spirv(source, producer=producer, filename="broken.cl")
    err = info.value
    assert "failed to compile broken.cl: 1 error" in err.message
    assert "\n" not in err.message
    assert "broken.cl:3:12: error: use of undeclared identifier 'undeclared'" in err.log
    assert tempfile.gettempdir() not in err.log


def test_defines_are_passed_through(producer):
    source = "kernel void f(global int *x) { x[0] = VALUE; }"
    one = opencl_to_spirv(source, ["-DVALUE=1"], producer=producer)
    two = opencl_to_spirv(source, ["-DVALUE=123456"], producer=producer)
    assert one != two
    # The constant 123456 appears as a literal word in the module.
    assert (123456).to_bytes(4, "little") in two
    with pytest.raises(CompileError):
        opencl_to_spirv(source, producer=producer)


def test_user_cl_std_replaces_the_default(producer):
    # Program-scope variables need OpenCL C 2.0+; 1.2 must reject them.
    source = "global int counter;\nkernel void f(global int *x) { x[0] = counter; }"
    opencl_to_spirv(source, producer=producer)
    with pytest.raises(CompileError):
        opencl_to_spirv(source, ["-cl-std=CL1.2"], producer=producer)


def test_opencl3_optional_features_compile():
    skip_unless_tools("clang")
    # half arithmetic still needs its pragma, as the OpenCL C spec requires.
    source = """
    #pragma OPENCL EXTENSION cl_khr_fp16 : enable
    global int counter;
    kernel void f(global double *d, global half *h, global long *l, global float *p)
    {
        size_t i = get_global_id(0);
        d[i] = sqrt(d[i]);
        h[i] = h[i] * (half)2;
        atom_add(l, 1L);
        generic float *g = p;
        g[i] += counter;
    }
    """
    assert spirv_val(opencl_to_spirv(source)).returncode == 0


def test_warnings_are_logged(caplog):
    skip_unless_tools("clang")
    source = "kernel void f(global int *x) { int z = 1.5; x[0] = z; }"
    with caplog.at_level("WARNING", logger="spirvjit"):
        opencl_to_spirv(source)
    assert "kernel.cl:1:" in caplog.text and "warning" in caplog.text


def test_no_temp_files_left_behind(producer, monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    opencl_to_spirv(SAXPY, producer=producer)
    with pytest.raises(CompileError):
        opencl_to_spirv("this is not OpenCL", producer=producer)
    assert list(tmp_path.iterdir()) == []


def test_timeout_becomes_compile_error(monkeypatch):
    skip_unless_tools("clang")

    def hang(*args, **kwargs):
        raise subprocess.TimeoutExpired(args[0], 120)

    monkeypatch.setattr(subprocess, "run", hang)
    with pytest.raises(CompileError, match="timed out"):
        opencl_to_spirv(SAXPY)


# --- argument checking ----------------------------------------------------------


def test_unknown_producer_lists_the_valid_ones():
    with pytest.raises(ValueError, match="clang, translator"):
        opencl_to_spirv(SAXPY, producer="gcc")


def test_options_must_not_be_one_string():
    with pytest.raises(TypeError):
        opencl_to_spirv(SAXPY, "-DN=4")


@pytest.mark.parametrize("name", ["../kernel.cl", "dir/kernel.cl", ""])
def test_filename_must_be_bare(name):
    with pytest.raises(ValueError):
        opencl_to_spirv(SAXPY, filename=name)
