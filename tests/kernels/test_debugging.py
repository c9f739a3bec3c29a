"""Debugging aids: ``spirvjit dis --source`` (source lines from OpLine interleaved with
the SPIR-V) and the line table checked-mode reports use."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import spirvjit
from spirvjit.debuginfo import interleave_source, line_table
from spirvjit.toolchain import find_tool

ROOT = Path(__file__).resolve().parents[2]
SOURCE = """__kernel void add(__global float *b, int n) {
    int i = get_global_id(0);
    b[i + n] = 2.0f * i;
}
"""
translator = pytest.mark.skipif(
    not (find_tool("clang15") and find_tool("llvm-spirv")),
    reason="line information needs the translator producer (clang-22's SPIR-V back end "
    "emits no OpLine for -g)",
)


def test_interleave_source_puts_each_line_before_its_first_opline():
    text = "\n".join(
        [
            '%5 = OpString "/src/k.cl"',
            "OpLine %5 2 13",
            "%19 = OpLoad %4 %x",
            "OpLine %5 2 7",
            "OpLine %5 0 0",
            "OpLine %5 3 1",
            "OpReturn",
        ]
    )
    out = interleave_source(text, {"k.cl": SOURCE.splitlines()})
    assert out.splitlines() == [
        '%5 = OpString "/src/k.cl"',
        "; k.cl:2: int i = get_global_id(0);",
        "OpLine %5 2 13",
        "%19 = OpLoad %4 %x",
        "OpLine %5 2 7",
        "OpLine %5 0 0",
        "; k.cl:3: b[i + n] = 2.0f * i;",
        "OpLine %5 3 1",
        "OpReturn",
    ]


@translator
def test_dis_source_and_line_table(tmp_path):
    program = spirvjit.compile_opencl(SOURCE, options=["-g", "-O2"], producer="translator")
    table = line_table(program.module)
    stores = [i for i in program.module.instructions if i.opname == "OpStore"]
    assert table[stores[0].offset][1:] == (3, 14)  # b[i + n] = ...: line 3, column 14
    spv = tmp_path / "k.spv"
    spv.write_bytes(program._spirv)
    src = tmp_path / "kernel.cl"
    src.write_text(SOURCE)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "spirvjit", "dis", str(spv), "--source", str(src)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    at = lines.index("; kernel.cl:3: b[i + n] = 2.0f * i;")
    assert "OpLine" in lines[at + 1] and " 3 " in lines[at + 1]
    assert "; kernel.cl:2: int i = get_global_id(0);" in lines


def test_dis_source_without_line_information_says_why(tmp_path):
    spv = tmp_path / "k.spv"
    spv.write_bytes(spirvjit.compile_opencl(SOURCE)._spirv)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "spirvjit", "dis", str(spv), "--source"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert proc.returncode == 0
    assert "no OpLine" in proc.stderr and "OpFunction" in proc.stdout
