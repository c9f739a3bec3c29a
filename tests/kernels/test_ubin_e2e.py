"""Unified binaries end to end: build → inspect → load → run, from the command line
(``python -m spirvjit``) and the Python API, on the example kernels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import spirvjit
from spirvjit.target import X86_64_LEVELS, enabled_features, host_target
from spirvjit.toolchain import require_tool
from spirvjit.ubin.reader import read_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "kernels"
SOURCES = sorted(EXAMPLES.glob("*.cl"))
HAS_V3 = host_target().triple.startswith("x86_64") and X86_64_LEVELS["x86-64-v3"] <= (
    enabled_features(host_target().features)
)


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "spirvjit", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
        check=False,
    )


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> Path:
    """The example kernels with native code for this CPU, built by the CLI."""
    path = tmp_path_factory.mktemp("ubin") / "app.ubin"
    proc = cli("build", *map(str, SOURCES), "-o", str(path), "--target", "host", "--embed-source")
    assert proc.returncode == 0, proc.stderr
    return path


def saxpy(program: spirvjit.Program) -> np.ndarray:
    x = np.arange(1000, dtype=np.float32)
    y = np.ones(1000, dtype=np.float32)
    program.kernel("saxpy")(np.float32(2), x, y, np.uint32(1000), global_size=1000)
    np.testing.assert_array_equal(y, 2 * np.arange(1000, dtype=np.float32) + 1)
    return y


def test_inspect_shows_kernels_variants_and_choice(app):
    proc = cli("inspect", str(app), "--json")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert {k["name"] for k in info["kernels"]} == {"mandelbrot", "saxpy", "stencil", "vec4_math"}
    saxpy_args = next(k for k in info["kernels"] if k["name"] == "saxpy")["args"]
    assert [a["kind"] for a in saxpy_args] == ["value", "global", "global", "value"]
    assert saxpy_args[1]["access"] == "read_only"
    assert [v["cpu"] for v in info["variants"]] == [host_target().arch]
    assert info["selection"][0]["how"] == "exact"
    assert info["build"]["producer"] == "clang"
    assert [s["name"] for s in info["sources"]] == [p.name for p in SOURCES]
    text = cli("inspect", str(app)).stdout
    assert "this machine" in text and "exact" in text


def test_load_runs_the_native_variant(app):
    program = spirvjit.load(app)
    assert isinstance(program, spirvjit.Program)
    saxpy(program)
    assert program.origins["saxpy"] == "native"


def test_forced_jit_runs_the_spirv(app, monkeypatch, caplog):
    monkeypatch.setenv("SPIRVJIT_FORCE_JIT", "1")
    monkeypatch.setenv("SPIRVJIT_DEBUG", "1")
    with caplog.at_level("INFO", logger="spirvjit"):
        program = spirvjit.load(str(app))
    assert "SPIRVJIT_FORCE_JIT" in caplog.text
    saxpy(program)
    assert program.origins["saxpy"] != "native"


@pytest.mark.skipif(not HAS_V3, reason="needs an x86-64-v3 host")
def test_compatible_level_variant_is_used(tmp_path):
    path = tmp_path / "v3.ubin"
    spirvjit.build(EXAMPLES / "saxpy.cl", path, targets=["x86-64-v3"])
    program = spirvjit.load(path)
    saxpy(program)
    assert program.origins["saxpy"] == "native"
    info = json.loads(cli("inspect", str(path), "--json").stdout)
    assert info["selection"][0]["how"] == "compatible"


def test_cli_run_reports_times(app):
    proc = cli("run", str(app), "saxpy", "--global", "4096", "--args", "2.5", "--repeat", "3")
    assert proc.returncode == 0, proc.stderr
    assert "first launch" in proc.stdout and "(native)" in proc.stdout
    assert "steady state" in proc.stdout
    proc = cli(
        "run",
        str(app),
        "stencil",
        "--global",
        "256",
        env={"SPIRVJIT_FORCE_JIT": "1", "SPIRVJIT_DEBUG": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "SPIRVJIT_FORCE_JIT is set" in proc.stderr
    assert "(native)" not in proc.stdout


def test_extract_strip_and_add_target(app, tmp_path):
    spv = tmp_path / "out.spv"
    assert cli("extract", str(app), "--spirv", str(spv)).returncode == 0
    assert spv.read_bytes() == read_file(app).module(0)
    assert spirvjit.load_spirv(spv).kernel_names
    assert cli("extract", str(app), "--source", str(tmp_path / "src")).returncode == 0
    assert (tmp_path / "src" / "saxpy.cl").read_bytes() == (EXAMPLES / "saxpy.cl").read_bytes()
    obj = tmp_path / "saxpy.o"
    proc = cli("extract", str(app), "--variant", "host", "--kernel", "saxpy", "-o", str(obj))
    assert proc.returncode == 0, proc.stderr
    assert obj.read_bytes()[:4] == b"\x7fELF"

    stripped = tmp_path / "stripped.ubin"
    assert cli("strip", str(app), "-o", str(stripped)).returncode == 0
    binary = read_file(stripped)
    assert binary.variants == () and binary.source_names == ()
    assert stripped.stat().st_size < app.stat().st_size
    assert spirvjit.load(stripped).kernel_names == spirvjit.load(app).kernel_names

    assert cli("add-target", str(stripped), "--target", "host").returncode == 0
    program = spirvjit.load(stripped)
    saxpy(program)
    assert program.origins["saxpy"] == "native"


def test_build_is_deterministic(app, tmp_path):
    again = tmp_path / "again.ubin"
    args = ["build", *map(str, SOURCES), "-o", str(again), "--target", "host", "--embed-source"]
    assert cli(*args).returncode == 0
    assert again.read_bytes() == app.read_bytes()


def test_inputs_of_every_kind_link_into_one_module(tmp_path):
    (tmp_path / "a.cl").write_text(
        "float helper(float x);\n"
        "kernel void twice(global float *y) { size_t i = get_global_id(0); y[i] = helper(y[i]); }\n"
    )
    (tmp_path / "b.cl").write_text("float helper(float x) { return 2.0f * x; }\n")
    ll = tmp_path / "c.ll"
    clang = subprocess.run(
        ["clang-22", "--target=spirv64", "-cl-std=CL3.0", "-O2", "-S", "-emit-llvm", "-o", str(ll),
         "-x", "cl", "-"],
        input="kernel void fill(global int *y) { y[get_global_id(0)] = 7; }\n",
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert clang.returncode == 0, clang.stderr
    spvasm = tmp_path / "d.spvasm"
    from spirvjit.spirv.disasm import disassemble

    spvasm.write_text(
        disassemble(spirvjit.compile_opencl("kernel void nop(global int *y) {}").spirv)
    )
    out = tmp_path / "linked.ubin"
    inputs = ["a.cl", "b.cl", "c.ll", "d.spvasm"]
    proc = cli("build", *(str(tmp_path / n) for n in inputs), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    program = spirvjit.load(out)
    assert set(program.kernel_names) == {"twice", "fill", "nop"}
    y = np.arange(8, dtype=np.float32)
    program.kernel("twice")(y, global_size=8)
    np.testing.assert_array_equal(y, 2 * np.arange(8, dtype=np.float32))
    assert [name for name, _ in read_file(out).build.inputs] == inputs


def test_dis_accepts_unified_binaries(app):
    proc = cli("dis", str(app))
    assert proc.returncode == 0 and "OpEntryPoint Kernel" in proc.stdout
    try:
        require_tool("llvm-objdump", "this test")
    except spirvjit.CompileError:
        pytest.skip("llvm-objdump-22 is not installed")
    proc = cli("dis", str(app), "--target", "host")
    assert proc.returncode == 0, proc.stderr
    assert "; kernel saxpy" in proc.stdout and "ret" in proc.stdout


def test_errors_and_exit_codes(app, tmp_path):
    bad = tmp_path / "bad.cl"
    bad.write_text("kernel void k(global int *y) { y[0] = undefined_name; }\n")
    proc = cli("build", str(bad), "-o", str(tmp_path / "x.ubin"))
    assert proc.returncode == 1 and "bad.cl:1:" in proc.stderr
    proc = cli("build", str(bad), "-o", str(tmp_path / "x.ubin"), "--target", "x86-64-v9")
    assert proc.returncode == 2 and "valid targets" in proc.stderr
    proc = cli("inspect", str(EXAMPLES / "saxpy.cl"))
    assert proc.returncode == 1 and "byte 0: not a unified binary" in proc.stderr
    truncated = tmp_path / "cut.ubin"
    truncated.write_bytes(app.read_bytes()[:-10])
    proc = cli("run", str(truncated), "saxpy", "--global", "8")
    assert proc.returncode == 1 and "truncated" in proc.stderr
    proc = cli("extract", str(app), "--variant", "x86-64-v2", "-o", str(tmp_path / "o"))
    assert proc.returncode == 1 and "no native variant matches" in proc.stderr
    assert cli("run", str(app)).returncode == 2


def test_gpu_variants_build_show_and_serve_gpus(tmp_path):
    out = tmp_path / "gpu.ubin"
    saxpy_cl = str(EXAMPLES / "saxpy.cl")
    proc = cli("build", saxpy_cl, "-o", str(out), "--target", "gfx942,gfx90a:xnack+,sm_90")
    assert proc.returncode == 0, proc.stderr
    binary = read_file(out)
    names = sorted({v.target.name for v in binary.variants})
    assert names == ["gfx90a:xnack+", "gfx942", "sm_90"]
    # Each GPU: its generic code and the code for the common launch.
    common = ("ids32", "uniform", "zero_offset")
    assert sorted((v.target.name, v.launch_facts) for v in binary.variants) == [
        (name, facts) for name in names for facts in ((), common)
    ]
    shown = cli("inspect", str(out)).stdout
    assert "nvptx:nvptx64-nvidia-cuda:sm_90 [ids32,uniform,zero_offset]: 1 kernels" in shown
    # extract/dis pick the generic code, or with --launch-facts the specialised one.
    generic, special = tmp_path / "g.cubin", tmp_path / "s.cubin"
    assert cli("extract", str(out), "--variant", "sm_90", "-o", str(generic)).returncode == 0
    proc = cli(
        "extract", str(out), "--variant", "sm_90", "--launch-facts", "common", "-o", str(special)
    )
    assert proc.returncode == 0, proc.stderr
    by_facts = {
        v.launch_facts: v.objects["saxpy"] for v in binary.variants if v.target.name == "sm_90"
    }
    assert generic.read_bytes() == by_facts[()] and special.read_bytes() == by_facts[common]
    proc = cli("extract", str(out), "--variant", "sm_90", "--launch-facts", "ids64", "-o", "x")
    assert proc.returncode == 2 and "unknown launch fact 'ids64'" in proc.stderr
    proc = cli("extract", str(out), "--variant", "sm_90", "--launch-facts", "ids32", "-o", "x")
    assert proc.returncode == 1 and "no native variant matches" in proc.stderr
    special_dis = cli("dis", "--target", "gfx942", "--launch-facts", "common", str(out)).stdout
    assert (
        "s_endpgm" in special_dis
        and special_dis != cli("dis", "--target", "gfx942", str(out)).stdout
    )
    dis = cli("dis", "--target", "gfx90a:xnack+", str(out)).stdout
    assert "s_endpgm" in dis and "global_load_dword" in dis
    # A .spv disassembles for a GPU target by compiling it now: PTX for NVIDIA.
    spv = tmp_path / "saxpy.spv"
    assert cli("extract", str(out), "--spirv", str(spv)).returncode == 0
    ptx = cli("dis", "--target", "sm_90", str(spv)).stdout
    assert ".target sm_90" in ptx and ".visible .entry saxpy" in ptx
    # Loaded, the program takes a GPU's code from the binary instead of compiling it.
    program = spirvjit.load(out)
    for name in names:
        gpu = program.for_target(spirvjit.parse_target(name))
        assert gpu.object_code("saxpy")[1] == "native"
    bad = cli("build", saxpy_cl, "-o", str(out), "--target", "gfx9999")
    assert bad.returncode == 2 and "not a processor LLVM knows" in bad.stderr
    # --launch-variants none: the generic code only; add-target replaces a target's
    # variants, with the common launch's code again by default.
    proc = cli("build", saxpy_cl, "-o", str(out), "--target", "sm_90", "--launch-variants", "none")
    assert proc.returncode == 0, proc.stderr
    assert [v.launch_facts for v in read_file(out).variants] == [()]
    assert read_file(out).version == 1
    assert cli("add-target", str(out), "--target", "sm_90").returncode == 0
    assert [v.launch_facts for v in read_file(out).variants] == [(), common]


# -- whose native code runs (issue 13, item 2) -------------------------------------------------


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]


@pytest.fixture
def shared_dir(tmp_path, monkeypatch) -> Path:
    """A directory every user may write (no sticky bit): anyone could swap a file in it.

    The disk cache is off: these tests count warnings, and a cache directory this
    machine refuses would add one.
    """
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    return shared


def test_native_code_from_a_writable_place_is_not_run(app, shared_dir, caplog):
    """Before, any file's native code ran at the first launch, wherever it came from."""
    path = shared_dir / "app.ubin"
    path.write_bytes(app.read_bytes())
    with caplog.at_level("WARNING", logger="spirvjit"):
        program = spirvjit.load(path)
        saxpy(program)
        saxpy(spirvjit.load(path))  # a second load of the same file: no second warning
    assert program.origins["saxpy"] != "native"
    warnings = _warnings(caplog)
    assert len(warnings) == 1, warnings
    assert "not running its native code" in warnings[0] and str(shared_dir) in warnings[0]
    proc = cli("inspect", str(path))
    assert "NOT trusted" in proc.stdout and "writable by group or others" in proc.stdout
    assert "runs module 0: JIT from SPIR-V" in proc.stdout
    caplog.clear()
    with caplog.at_level("WARNING", logger="spirvjit"):
        always = spirvjit.load(path, native="always")
        saxpy(always)
        never = spirvjit.load(app, native="never")
        saxpy(never)
    assert always.origins["saxpy"] == "native" and never.origins["saxpy"] != "native"
    assert _warnings(caplog) == []
    env_run = cli("run", str(path), "saxpy", "--global", "64", env={"SPIRVJIT_NATIVE": "always"})
    assert env_run.returncode == 0 and "(native)" in env_run.stdout


def test_signed_by_a_trusted_key_runs_from_a_writable_place(app, shared_dir, tmp_path):
    pytest.importorskip("cryptography")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    key = ed25519.Ed25519PrivateKey.generate()
    (tmp_path / "key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    (tmp_path / "key.pub").write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
    )
    path = shared_dir / "app.ubin"
    path.write_bytes(app.read_bytes())
    assert cli("sign", str(path), "--key", str(tmp_path / "key")).returncode == 0
    env = {"SPIRVJIT_TRUSTED_KEYS": str(tmp_path / "key.pub")}
    proc = cli("run", str(path), "saxpy", "--global", "64", env=env)
    assert proc.returncode == 0 and "(native)" in proc.stdout, proc.stdout + proc.stderr
    assert cli("verify", str(path), env=env).returncode == 0
    assert "(native)" not in cli("run", str(path), "saxpy", "--global", "64").stdout


def _forged(app: Path, tmp_path: Path, change) -> Path:
    """``app`` with saxpy's object replaced by ``change(objects)`` (digests recomputed,
    as an attacker or a broken tool would)."""
    import dataclasses

    from spirvjit.ubin.writer import write_file

    contents = read_file(app).contents()
    variant = contents.variants[0]
    objects = dict(variant.objects)
    objects["saxpy"] = change(objects)
    forged = dataclasses.replace(variant, objects=objects)
    path = tmp_path / "forged.ubin"
    write_file(dataclasses.replace(contents, variants=(forged,)), path)
    return path


def _runner(obj: bytes) -> str:
    from spirvjit.backends.cpu.objcheck import read_symbols

    (symbol,) = read_symbols(obj).defined
    return symbol


def _object(ir_text: str) -> bytes:
    import llvmlite.binding as llvm

    from spirvjit.backends.cpu import codegen

    module = llvm.parse_assembly(ir_text)
    return codegen.emit_object(module, host_target())


@pytest.mark.parametrize(
    "make, why",
    [
        (lambda objects: objects["stencil"], "defines 0 symbols"),  # another kernel's code
        (
            lambda objects: _object(
                f'define void @"{_runner(objects["saxpy"])}"(ptr %0) {{ ret void }}\n'
                "define void @malloc() { ret void }\n"
            ),
            "also defines 'malloc'",
        ),
        (
            lambda objects: _object(
                "declare void @spirvjit_no_such_function()\n"
                f'define void @"{_runner(objects["saxpy"])}"(ptr %0) {{\n'
                "  call void @spirvjit_no_such_function()\n  ret void\n}\n"
            ),
            "does not link",
        ),
        (lambda objects: b"\x7fELF" + bytes(200), "unreadable object file"),
    ],
)
def test_native_object_that_is_not_the_kernel_is_refused_and_jitted(
    app, tmp_path, caplog, monkeypatch, make, why
):
    """Before: a wrong object ran (another kernel's code) or the launch failed for good."""
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")  # warnings are counted: see shared_dir
    path = _forged(app, tmp_path, make)
    with caplog.at_level("WARNING", logger="spirvjit"):
        program = spirvjit.load(path)
        saxpy(program)  # right results, from the JIT
        saxpy(program)
    assert program.origins["saxpy"] != "native"
    warnings = _warnings(caplog)
    assert len(warnings) == 1 and "refused" in warnings[0] and why in warnings[0], warnings
    other = program.kernel("vec4_math")
    other.compile()
    assert program.origins["vec4_math"] == "native"  # the other kernels' code is fine
