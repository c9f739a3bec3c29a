"""The example package (examples/vecops) end to end: its wheel is built with spirvjit's
setuptools hook, installed into a fresh virtual environment, precompiled, and its first
call in a new process takes no JIT. Also: the hook's configuration and reproducible bytes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from spirvjit import setuptools_hook
from spirvjit.toolchain import find_tool

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "vecops"

pytestmark = pytest.mark.skipif(find_tool("clang") is None, reason="needs clang-22")


def run(cmd: list[str], env: dict, cwd: Path | None = None) -> str:
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=300, env=env, cwd=cwd, check=False
    )
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_wheel_install_precompile_then_no_jit_in_a_fresh_process(tmp_path):
    pytest.importorskip("wheel", reason="setuptools < 70.1 builds wheels with the wheel package")
    project = tmp_path / "vecops"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    env = {
        **os.environ,
        # spirvjit (this checkout), llvmlite and numpy come from the outer environment.
        "PYTHONPATH": str(ROOT),
        "SPIRVJIT_CACHE_DIR": str(tmp_path / "cache"),
        "SPIRVJIT_PROGRESS": "0",
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    dist = tmp_path / "dist"
    run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps"]
        + [str(project), "-w", str(dist)],
        env,
    )
    (wheel,) = dist.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "vecops/kernels/vecops.ubin" in names
    # A fresh environment that sees the outer one's packages; pip from there installs.
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], env)
    python = str(venv / "bin" / "python")
    run([python, "-m", "pip", "install", "--no-deps", str(wheel)], env)
    installed = run([python, "-c", "import vecops; print(vecops.__file__)"], env)
    assert installed.startswith(str(venv))
    out = run([python, "-m", "spirvjit", "precompile", "vecops", "-j", "1"], env)
    assert "3 compiled" in out, out
    assert "nothing to do" in run([python, "-m", "spirvjit", "precompile", "--all"], env)
    check = (
        "import numpy as np, time, vecops\n"
        "x = np.arange(1000, dtype=np.float32)\n"
        "t = time.perf_counter()\n"
        "y = vecops.axpy(2.0, x, np.ones_like(x))\n"
        "n = vecops.normalize(x)\n"
        "ms = (time.perf_counter() - t) * 1e3\n"
        "np.save('y.npy', y); np.save('n.npy', n)\n"
        "p = vecops.program()\n"
        "print(','.join(p.origins[k] for k in ('axpy', 'sum_squares', 'scale')), ms)\n"
    )
    origins, ms = run([python, "-c", check], env, cwd=tmp_path).split()
    assert origins == "disk,disk,disk"
    x = np.arange(1000, dtype=np.float32)
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), 2 * x + 1)
    np.testing.assert_allclose(np.load(tmp_path / "n.npy"), x / np.linalg.norm(x), rtol=1e-5)
    print(f"first calls of 3 kernels after precompile: {float(ms):.1f} ms")


def test_hook_builds_reproducible_bytes(tmp_path):
    (kernel_set,) = setuptools_hook.read_config(EXAMPLE / "pyproject.toml")
    with_variant = setuptools_hook.KernelSet(**{**kernel_set.__dict__, "targets": ("x86-64-v3",)})
    if not sys.platform.startswith("linux") or os.uname().machine != "x86_64":
        with_variant = kernel_set
    outputs = []
    for i in range(2):
        out = tmp_path / str(i) / "vecops.ubin"
        setuptools_hook.build_kernel_set(with_variant, EXAMPLE, out)
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize(
    "table, message",
    [
        ('package = "p"\nsources = ["a.cl"]', "name is required"),
        ('package = "p"\nname = "n"\nsources = []', "at least one file"),
        ('package = "p"\nname = "n"\nsources = ["a.c"]', "expected one of"),
        ('package = "p"\nname = "n"\nsources = ["a.cl"]\ndirectory = "../x"', "inside the package"),
        ('package = "p"\nname = "n"\nsources = ["a.cl"]\noptions = "-DX"', "list of strings"),
        ('package = "p"\nname = "n"\nsources = ["a.cl"]\ntarget = ["host"]', "unknown field"),
        ('package = "p"\nname = "n"\nsources = ["a.cl"]\nlaunch_variants = "all"', '"common" or'),
    ],
)
def test_hook_configuration_errors_name_the_field(tmp_path, table, message):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(f"[[tool.spirvjit.kernels]]\n{table}\n")
    with pytest.raises(ValueError, match=message):
        setuptools_hook.read_config(pyproject)


HATCH_PROJECT = """
[build-system]
requires = ["hatchling", "spirvjit"]
build-backend = "hatchling.build"

[project]
name = "hatchops"
version = "0.1.0"

[tool.hatch.build.targets.wheel]
packages = ["src/hatchops"]

[tool.hatch.build.hooks.custom]

[[tool.spirvjit.kernels]]
package = "hatchops"
name = "ops"
sources = ["kernels/vecops.cl"]
"""


def test_hatchling_hook_builds_the_same_wheel_twice(tmp_path):
    pytest.importorskip("hatchling")
    project = tmp_path / "hatchops"
    (project / "src" / "hatchops").mkdir(parents=True)
    (project / "src" / "hatchops" / "__init__.py").write_text("")
    (project / "kernels").mkdir()
    shutil.copy(EXAMPLE / "kernels" / "vecops.cl", project / "kernels")
    (project / "pyproject.toml").write_text(HATCH_PROJECT)
    (project / "hatch_build.py").write_text("from spirvjit.hatch_hook import get_build_hook\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SPIRVJIT_CACHE_DIR": str(tmp_path / "c")}
    wheels = []
    for i in range(2):
        out = tmp_path / f"dist{i}"
        build = f"import hatchling.build as b; print(b.build_wheel({str(out)!r}))"
        name = run([sys.executable, "-c", build], env, cwd=project).split()[-1]
        wheels.append((out / name).read_bytes())
    assert wheels[0] == wheels[1]  # hatchling fixes zip times; the .ubin is reproducible
    archive = zipfile.ZipFile(tmp_path / "dist0" / name)
    assert "hatchops/kernels/ops.ubin" in archive.namelist()
    from spirvjit.ubin.reader import UnifiedBinary

    binary = UnifiedBinary(archive.read("hatchops/kernels/ops.ubin"))
    assert {k.name for k in binary.kernels} == {"axpy", "sum_squares", "scale"}


def test_hook_builds_hip_sources(tmp_path):
    if find_tool("clang-offload-bundler") is None:
        pytest.skip("needs clang-offload-bundler-22")
    from spirvjit.ubin.reader import read_file

    kernel_set = setuptools_hook.KernelSet("pkg", "hip", ("tests/data/hip/builtins.hip",))
    setuptools_hook.build_kernel_set(kernel_set, ROOT, tmp_path / "hip.ubin")
    assert {k.name for k in read_file(tmp_path / "hip.ubin").kernels} == {
        "red",
        "sizes",
        "swizzle",
        "vadd",
    }
