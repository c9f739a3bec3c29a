"""Tests of spirvjit.spirv.disasm and the ``spirvjit dis`` command."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from test_reader import (
    ASSEMBLY,
    CLANG22_FIXTURE,
    FIXTURES,
    LLVM_SPIRV15_FIXTURE,
    VALID,
    assemble,
    build,
    inst,
    need,
)

from spirvjit.spirv.disasm import disassemble, format_float, format_int, friendly_names, quote
from spirvjit.spirv.reader import read_module

REPO = Path(__file__).resolve().parents[2]


def body(text: str) -> list[str]:
    """The instruction lines (the header comments name the generator and bound)."""
    return [line for line in text.splitlines() if not line.startswith(";")]


def test_clang22_text() -> None:
    text = disassemble(CLANG22_FIXTURE.read_bytes())
    assert text.startswith("; SPIR-V\n; Version: 1.4\n")
    lines = [line.strip() for line in text.splitlines()]
    assert 'OpEntryPoint Kernel %add "add" %__spirv_BuiltInGlobalInvocationId' in text
    assert "OpExecutionMode %dbl LocalSize 8 1 1" in lines
    assert "OpMemoryModel Physical64 OpenCL" in lines
    assert "OpDecorate %__spirv_BuiltInGlobalInvocationId BuiltIn GlobalInvocationId" in lines
    assert any(" = OpExtInst " in line and " %1 fma " in line for line in lines)
    assert any(line.endswith("= OpConstant %2 1.5") for line in lines)
    assert any(" = OpFunction " in line and " None " in line for line in lines)
    assert "%add = OpFunction" in text


def test_module_and_bytes_give_the_same_text() -> None:
    data = LLVM_SPIRV15_FIXTURE.read_bytes()
    assert disassemble(read_module(data)) == disassemble(data)
    assert "OpSwitch" in disassemble(data) and " 5000000000 " in disassemble(data)


def test_layout() -> None:
    lines = disassemble(build(*VALID)).splitlines()
    assert lines[5] == " " * 15 + "OpCapability Addresses"
    assert lines[8] == "          %1 = OpTypeVoid"
    assert lines[10] == "          %3 = OpFunction %1 None %2"


def test_friendly_names_are_unique_and_sanitized(tmp_path: Path) -> None:
    module = read_module(assemble(ASSEMBLY, tmp_path))
    names = friendly_names(module)
    assert "main" in names.values() and "a_b_c" in names.values()
    assert "x" not in names.values()  # two ids are named "x"
    text = disassemble(module)
    assert "%a_b_c = OpSpecConstantComposite" in text
    assert "OpStore %" in text and " Volatile|Aligned 4" in text
    assert " u_max " in text and "OpSpecConstantOp %" in text and " IAdd " in text
    assert "OpDecorateString %" in text and ' UserSemantic "hello"' in text


def test_digit_names_stay_numeric() -> None:
    insts = [*VALID[:3], inst("OpName", 1, "2"), *VALID[3:]]
    assert friendly_names(read_module(build(*insts))) == {}


@pytest.mark.parametrize(
    ("bits", "width", "text"),
    [
        (0x3FC00000, 32, "1.5"),
        (0x3DCCCCCD, 32, "0.1"),
        (0x80000000, 32, "-0"),
        (0x7F800000, 32, "0x1p+128"),
        (0xFF800000, 32, "-0x1p+128"),
        (0x7FC00000, 32, "0x1.8p+128"),
        (0x00000001, 32, "1e-45"),
        (0x3C00, 16, "1"),
        (0x7E00, 16, "0x1.8p+16"),
        (struct.unpack("<Q", struct.pack("<d", 0.1))[0], 64, "0.1"),
        (0x7FF0000000000000, 64, "0x1p+1024"),
    ],
)
def test_format_float(bits: int, width: int, text: str) -> None:
    assert format_float(bits, width) == text


def test_format_int_and_quote() -> None:
    assert format_int(0xFFFFFFFF, 32, signed=True) == "-1"
    assert format_int(0xFFFFFFFF, 32, signed=False) == "4294967295"
    assert format_int(0xFFFFFF80, 8, signed=True) == "-128"
    assert quote('a"b\\c') == '"a\\"b\\\\c"'


# -- round trip through spirv-as ------------------------------------------------------


def round_trip(data: bytes, tmp_path: Path) -> bytes:
    """Our text reassembled by spirv-as (ids kept) and checked by spirv-val."""
    spirv_as, spirv_val = need("spirv-as"), need("spirv-val")
    module = read_module(data)
    source, binary = tmp_path / "rt.spvasm", tmp_path / "rt.spv"
    source.write_text(disassemble(module))
    env = f"spv{module.version[0]}.{module.version[1]}"
    cmd = [spirv_as, "--preserve-numeric-ids", "--target-env", env, str(source), "-o", str(binary)]
    subprocess.run(cmd, check=True)
    subprocess.run([spirv_val, str(binary)], check=True)
    return binary.read_bytes()


@pytest.mark.parametrize("path", [CLANG22_FIXTURE, LLVM_SPIRV15_FIXTURE], ids=lambda p: p.name)
def test_round_trip_fixture(path: Path, tmp_path: Path) -> None:
    data = path.read_bytes()
    again = round_trip(data, tmp_path)
    assert body(disassemble(again)) == body(disassemble(data))


def test_round_trip_hand_assembled(tmp_path: Path) -> None:
    data = assemble(ASSEMBLY, tmp_path)
    assert body(disassemble(round_trip(data, tmp_path))) == body(disassemble(data))


def test_round_trip_special_constants(tmp_path: Path) -> None:
    text = ASSEMBLY.replace(
        "%dd = OpConstant %double -2.5e-300",
        "%dd = OpConstant %double -2.5e-300\n"
        "%inf = OpConstant %float 0x1p+128\n%nan = OpConstant %float -0x1.0002p+128\n"
        "%nz = OpConstant %float -0\n%tiny = OpConstant %float 1e-45\n"
        "%dnan = OpConstant %double 0x1.8p+1024\n%big2 = OpConstant %ulong 18446744073709551615",
    )
    data = assemble(text, tmp_path)
    constants = [i.operands[0] for i in read_module(data).globals if i.opname == "OpConstant"]
    again = round_trip(data, tmp_path)
    assert [i.operands[0] for i in read_module(again).globals if i.opname == "OpConstant"] == (
        constants
    )
    assert 0x7F800000 in constants and 0x80000000 in constants


def test_fresh_clang22_round_trip(tmp_path: Path) -> None:
    clang = need("clang-22")
    source = tmp_path / "k.cl"
    source.write_text(
        "__kernel void k(__global float *o, __global const double *d, int n) {\n"
        "  int i = get_global_id(0);\n"
        "  float acc = 0.0f;\n"
        "  for (int j = 0; j < n; ++j) acc += native_sin((float)d[j]) * INFINITY;\n"
        "  o[i] = i < 0 ? NAN : acc - 1e-3f;\n"
        "}\n"
    )
    out = tmp_path / "k.spv"
    cmd = [clang, "-cl-std=CL3.0", "--target=spirv64", "-O2", "-c", str(source), "-o", str(out)]
    subprocess.run(cmd, check=True)
    data = out.read_bytes()
    assert body(disassemble(round_trip(data, tmp_path))) == body(disassemble(data))


# -- the command line ------------------------------------------------------------------


def spirvjit(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "spirvjit", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=60,
    )


def test_cli_dis_prints_the_disassembly() -> None:
    result = spirvjit("dis", str(FIXTURES[0]))
    assert result.returncode == 0, result.stderr
    assert result.stdout == disassemble(FIXTURES[0].read_bytes())


def test_cli_dis_output_file(tmp_path: Path) -> None:
    out = tmp_path / "out.spvasm"
    result = spirvjit("dis", str(CLANG22_FIXTURE), "-o", str(out))
    assert (result.returncode, result.stdout) == (0, "")
    assert out.read_text() == disassemble(CLANG22_FIXTURE.read_bytes())


def test_cli_dis_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.spv"
    data = bytearray(build(*VALID))
    data[20:22] = (0xFFFE).to_bytes(2, "little")  # word 5's opcode becomes unknown
    bad.write_bytes(bytes(data))
    result = spirvjit("dis", str(bad))
    assert result.returncode == 1 and result.stdout == ""
    assert "word 5" in result.stderr and "unknown opcode" in result.stderr
    missing = spirvjit("dis", str(tmp_path / "missing.spv"))
    assert missing.returncode == 1 and "missing.spv" in missing.stderr


def test_cli_usage_errors() -> None:
    assert spirvjit().returncode == 2
    assert spirvjit("dis").returncode == 2
    assert spirvjit("nosuchcommand").returncode == 2
    assert spirvjit("dis", "a.spv", "--bogus").returncode == 2


@pytest.mark.parametrize("args", [("--help",), ("dis", "--help")])
def test_cli_help(args: tuple[str, ...]) -> None:
    result = spirvjit(*args)
    assert result.returncode == 0 and "usage: spirvjit" in result.stdout


def test_cli_import_is_light() -> None:
    """The CLI's modules import nothing heavy (what the package's __init__ imports aside):
    subcommands import the translator, the JIT or a compressor only when they run."""
    code = (
        "import sys, spirvjit; before = set(sys.modules); import spirvjit.cli; "
        "new = set(sys.modules) - before; "
        "print(sorted(m for m in new if m.split('.')[0] in ('llvmlite', 'numpy', 'zstandard') "
        "or m.startswith(('spirvjit.translate', 'spirvjit.backends', 'spirvjit.jit'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert result.stdout.strip() == "[]"


def test_spirv_dis_agrees_on_instruction_count() -> None:
    """spirv-dis (where installed) sees as many instructions as we print."""
    spirv_dis = need("spirv-dis")
    data = CLANG22_FIXTURE.read_bytes()
    theirs = subprocess.run(
        [spirv_dis, "--raw-id", str(CLANG22_FIXTURE)], capture_output=True, text=True, check=True
    ).stdout
    assert len(body(theirs)) == len(body(disassemble(data)))
