"""Kernels in installed packages: load_package_kernels, and ``spirvjit precompile``
filling the kernel cache (or the .ubin with --aot) so a fresh process launches without
the JIT (spirvjit/packaging.py, spirvjit/precompile.py, docs/packaging.md)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import spirvjit
from spirvjit import cache, jit, packaging, precompile
from spirvjit.cache import records as cache_records
from spirvjit.cli import main
from spirvjit.toolchain import find_tool

ROOT = Path(__file__).resolve().parents[2]

SOURCE = """
kernel void scale(global float *y, float a) { size_t i = get_global_id(0); y[i] *= a; }
kernel void shift(global float *y, float b) { size_t i = get_global_id(0); y[i] += b; }
kernel void square(global float *y) { size_t i = get_global_id(0); y[i] = y[i] * y[i]; }
"""
KERNELS = ("scale", "shift", "square")

pytestmark = pytest.mark.skipif(find_tool("clang") is None, reason="needs clang-22")


@pytest.fixture(scope="module")
def ops_ubin(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("built") / "ops.ubin"
    spirvjit.build(SOURCE, path)
    return path


def make_package(root: Path, name: str, ubin: Path, directory: str = "kernels") -> Path:
    package = root / name
    (package / directory).mkdir(parents=True)
    (package / "__init__.py").write_text(
        "import os\nif os.environ.get('FORBID_IMPORT'):\n    raise RuntimeError('imported')\n"
    )
    (package / directory / "ops.ubin").write_bytes(ubin.read_bytes())
    return package


def declare_entry_point(root: Path, dist: str, name: str, value: str) -> None:
    info = root / f"{dist}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[spirvjit.kernels]\n{name} = {value}\n")


@pytest.fixture
def site(tmp_path, monkeypatch, ops_ubin):
    """A directory on sys.path with a package shipping ops.ubin by convention, and a
    private, empty kernel cache."""
    monkeypatch.setenv("SPIRVJIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SPIRVJIT_PROGRESS", "0")
    monkeypatch.setenv("FORBID_IMPORT", "1")  # precompile finds packages without importing
    cache.reset()
    packaging.reset()
    root = tmp_path / "site"
    root.mkdir()
    make_package(root, "convpkg", ops_ubin)
    monkeypatch.syspath_prepend(str(root))
    yield root
    cache.reset()
    packaging.reset()
    # The next test's packages of the same names live in another directory.
    for name in [n for n in sys.modules if n.split(".")[0] in ("convpkg", "eppkg")]:
        del sys.modules[name]


def fresh_process_origins(root: Path, package: str, env: dict | None = None) -> str:
    """Launches every kernel of ``package``'s ops in a new interpreter; its origins."""
    code = textwrap.dedent(
        f"""
        import numpy as np, spirvjit
        p = spirvjit.load_package_kernels({package!r}, "ops")
        y = np.arange(4, dtype=np.float32)
        p.scale(y, np.float32(2), global_size=4)
        p.shift(y, np.float32(1), global_size=4)
        p.square(y, global_size=4)
        assert y.tolist() == [1.0, 9.0, 25.0, 49.0], y
        print(",".join(p.origins[k] for k in {KERNELS!r}))
        """
    )
    environment = {k: v for k, v in os.environ.items() if k != "FORBID_IMPORT"}
    environment = {**environment, "PYTHONPATH": os.pathsep.join([str(ROOT), str(root)])}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**environment, **(env or {})},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


# --- finding kernels ---------------------------------------------------------------------------


def test_load_package_kernels_by_convention_runs_and_is_reused(site, monkeypatch):
    monkeypatch.delenv("FORBID_IMPORT")  # at run time the package is imported, as usual
    program = spirvjit.load_package_kernels("convpkg", "ops")
    y = np.arange(8, dtype=np.float32)
    program.kernel("scale")(y, np.float32(3), global_size=8)
    np.testing.assert_array_equal(y, 3 * np.arange(8, dtype=np.float32))
    assert spirvjit.load_package_kernels("convpkg", "ops.ubin") is program
    with pytest.raises(FileNotFoundError, match="it has: ops"):
        spirvjit.load_package_kernels("convpkg", "nope")
    with pytest.raises(ValueError):
        spirvjit.load_package_kernels("convpkg", "../ops")


def test_entry_point_declares_a_directory(site, ops_ubin, monkeypatch):
    make_package(site, "eppkg", ops_ubin, directory="shaders")
    declare_entry_point(site, "ep-dist", "eppkg", "eppkg:shaders")
    # Found by distribution name, entry point name and import name, without importing it.
    for name in ("ep-dist", "ep_dist", "eppkg"):
        assert [p.name for p in packaging.binaries_of(name)] == ["ops.ubin"]
    assert "eppkg" in packaging.all_kernel_packages()
    monkeypatch.delenv("FORBID_IMPORT")
    program = spirvjit.load_package_kernels("eppkg", "ops")
    assert set(program.kernel_names) == set(KERNELS)


# --- precompile --------------------------------------------------------------------------------


def test_precompile_fills_the_cache_then_has_nothing_to_do(site, capsys):
    assert main(["precompile", "convpkg", "-j", "1", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "3 compiled, 0 already cached, 0 native, 0 failed" in out
    # A new process finds every kernel in the persistent cache: no JIT at first launch.
    assert fresh_process_origins(site, "convpkg") == "disk,disk,disk"
    cache.reset()
    stats = site.parent / "cache" / "stats"
    before = cache_records.totals(stats)
    assert main(["precompile", "convpkg", "-j", "1", "--device", "cpu"]) == 0
    assert "nothing to do: all 3 kernel builds" in capsys.readouterr().out
    assert cache_records.totals(stats) == before  # checking is not launching: no hits counted


def test_precompile_in_worker_processes(site, capsys):
    assert main(["precompile", "convpkg", "-j", "2", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "3 compiled" in out and "2 processes" in out
    assert fresh_process_origins(site, "convpkg") == "disk,disk,disk"


def test_a_failing_kernel_is_reported_others_still_compile(site, capsys, monkeypatch):
    real = jit.compile_kernel

    def broken(translation, target, symbol, name, *rest):
        if name == "shift":
            raise RuntimeError("LLVM ERROR: simulated crash\nmore")
        return real(translation, target, symbol, name, *rest)

    monkeypatch.setattr(jit, "compile_kernel", broken)
    assert main(["precompile", "convpkg", "-j", "1", "--device", "cpu"]) == 1
    captured = capsys.readouterr()
    assert "FAILED shift (ops.ubin" in captured.err and "simulated crash" in captured.err
    assert "2 compiled, 0 already cached, 0 native, 1 failed" in captured.out


def test_aot_writes_a_native_variant_into_the_binary(site, capsys):
    before = (site / "convpkg" / "kernels" / "ops.ubin").read_bytes()
    assert main(["precompile", "convpkg", "-j", "1", "--device", "cpu"]) == 0
    capsys.readouterr()
    # The cached code goes into the binary without compiling again.
    assert main(["precompile", "convpkg", "-j", "1", "--device", "cpu", "--aot"]) == 0
    out = capsys.readouterr().out
    assert "0 compiled, 3 already cached" in out and "wrote native variants into" in out
    after = site / "convpkg" / "kernels" / "ops.ubin"
    assert after.read_bytes() != before
    # Even with the cache off, the first launches load the shipped code.
    origins = fresh_process_origins(site, "convpkg", {"SPIRVJIT_CACHE": "0"})
    assert origins == "native,native,native"
    assert main(["precompile", "convpkg", "-j", "1", "--device", "cpu", "--aot"]) == 0
    out = capsys.readouterr().out
    assert "nothing to do" in out and "native (3)" in out


def test_errors_exit_1_with_a_reason(site, capsys, monkeypatch):
    assert main(["precompile", "no_such_pkg_xyz"]) == 1
    assert "is not installed" in capsys.readouterr().err
    (site / "emptypkg").mkdir()
    assert main(["precompile", "emptypkg"]) == 1
    assert "declares no kernels" in capsys.readouterr().err
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    assert main(["precompile", "convpkg"]) == 1
    assert "SPIRVJIT_CACHE=0" in capsys.readouterr().err


def test_all_with_no_declared_kernels_has_nothing_to_do(site, capsys, monkeypatch):
    # An install step running `precompile --all` must not fail in an environment whose
    # packages ship no kernels.
    monkeypatch.setattr(packaging, "all_kernel_packages", lambda: [])
    assert main(["precompile", "--all"]) == 0
    assert "nothing to do: no installed package declares kernels" in capsys.readouterr().out


def test_usage_errors_exit_2(site):
    for argv in (
        ["precompile"],
        ["precompile", "convpkg", "-j", "0"],
        ["precompile", "--device", "zz"],
    ):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2


def test_a_ubin_path_stands_for_itself(site, ops_ubin, capsys):
    assert main(["precompile", str(ops_ubin), "-j", "1", "--device", "cpu"]) == 0
    assert "3 compiled" in capsys.readouterr().out
    report = precompile.precompile([str(ops_ubin)], targets=precompile.resolve_targets("cpu"))
    assert report.count("cached") == 3 and report.count("compiled") == 0


def test_warmup_precompiles_in_the_background(site, monkeypatch):
    monkeypatch.delenv("FORBID_IMPORT")
    monkeypatch.setenv("SPIRVJIT_WARMUP", "1")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(site)]))  # for the child
    program = spirvjit.load_package_kernels("convpkg", "ops")  # returns at once
    assert not program.origins  # nothing compiled here
    (child,) = packaging._warmups
    assert child.wait(timeout=120) == 0
    assert spirvjit.warmup(["convpkg"]) is None  # once per package per process
    assert fresh_process_origins(site, "convpkg") == "disk,disk,disk"


def test_load_package_kernels_from_a_zipped_package(tmp_path, monkeypatch, ops_ubin):
    import zipfile

    archive = tmp_path / "zipped.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zippkg/__init__.py", "")
        z.writestr("zippkg/kernels/ops.ubin", ops_ubin.read_bytes())
    monkeypatch.syspath_prepend(str(archive))
    packaging.reset()
    try:
        program = spirvjit.load_package_kernels("zippkg", "ops")
        y = np.arange(4, dtype=np.float32)
        program.kernel("shift")(y, np.float32(5), global_size=4)
        assert y.tolist() == [5.0, 6.0, 7.0, 8.0]
    finally:
        packaging.reset()
        sys.modules.pop("zippkg", None)
