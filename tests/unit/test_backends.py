"""The backend interface: the core names no backend, every backend implements the whole
contract, launch records have named fields, keyword arguments bind by name."""

from __future__ import annotations

import ast
import ctypes
import subprocess
import sys
from pathlib import Path

import pytest

import spirvjit
from spirvjit.arguments import ArgumentPacker
from spirvjit.backends import BACKEND_MODULES, backend
from spirvjit.backends.base import Backend
from spirvjit.backends.cpu.abi import LaunchRecord, launch_word
from spirvjit.translate.signature import KernelArg, KernelSignature

PACKAGE = Path(spirvjit.__file__).parent
CORE = ["jit.py", "program.py", "target.py", "device.py", "arguments.py", "ndrange.py"]
VENDOR_WORDS = {"amdgpu", "nvptx", "amd", "nvidia", "cuda", "hip", "gpu", "cpu"}


def _imports(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found.append("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
    return found


@pytest.mark.parametrize("name", CORE)
def test_the_core_imports_no_backend(name):
    tree = ast.parse((PACKAGE / name).read_text())
    for module in _imports(tree):
        parts = module.lstrip(".").split(".")
        assert not (parts[0] == "backends" and len(parts) > 1 and parts[1] != "base"), (
            f"{name} imports {module}: the core must reach backends through the registry"
        )


@pytest.mark.parametrize("name", ["jit.py", "program.py", "target.py"])
def test_the_core_has_no_target_kind_branches(name):
    tree = ast.parse((PACKAGE / name).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            assert node.attr != "is_gpu", f"{name}:{node.lineno} branches on is_gpu"
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                if isinstance(side, ast.Constant) and isinstance(side.value, str):
                    assert side.value.lower() not in VENDOR_WORDS, (
                        f"{name}:{node.lineno} compares with {side.value!r}"
                    )


@pytest.mark.parametrize("kind", list(BACKEND_MODULES))
def test_every_backend_implements_the_contract(kind):
    found = backend(kind)
    assert isinstance(found, Backend) and found.kind == kind
    assert not getattr(type(found), "__abstractmethods__", None)


def test_unknown_kind_is_an_error():
    with pytest.raises(ValueError, match="no backend"):
        backend("tpu")


def test_a_cpu_launch_imports_no_gpu_backend():
    code = """
import sys, numpy as np, spirvjit
from spirvjit.spirv.reader import read_module
prog = spirvjit.load_spirv(open(sys.argv[1], "rb").read())
a, b, c = np.ones(64, np.float32), np.ones(64, np.float32), np.zeros(64, np.float32)
prog.kernel("add")(a, b, c, np.float32(1), global_size=64)
assert (c == 3.5).all(), c
# Only the GPU target-name parsers (no code generator, no driver) may be imported.
loaded = [m for m in sys.modules if m.startswith(("spirvjit.backends.gpu",
          "spirvjit.backends.amdgpu.", "spirvjit.backends.nvptx."))
          and not m.endswith(".target")]
assert not loaded, loaded
print("ok")
"""
    data = Path(__file__).parents[1] / "data" / "reader_kernels.llvm-spirv15.spv"
    out = subprocess.run(
        [sys.executable, "-c", code, str(data)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "ok"


def test_launch_record_fields_are_named_and_match_the_ir_words():
    record = LaunchRecord()
    assert ctypes.sizeof(record) == 19 * 8
    assert [launch_word("global_size", d) for d in range(3)] == [0, 1, 2]
    assert launch_word("local_size", 2) == 5 and launch_word("groups", 0) == 9
    assert launch_word("work_dim") == 12 and launch_word("next_group") == 14
    assert launch_word("frames_offset") == 16 and launch_word("abort") == 17
    assert launch_word("check") == 18  # checked mode's table (translate/checks.py)
    record.frames_offset = 4096
    assert (ctypes.c_int64 * 17).from_buffer(record)[16] == 4096


def _signature(*extra: KernelArg) -> KernelSignature:
    out = KernelArg(0, "out", "global", 8, 4, "float", 32)
    scale = KernelArg(1, "scale", "value", 4, 4, "float", 32)
    return KernelSignature("k", (out, scale, *extra))


def test_keyword_arguments_bind_by_parameter_name():
    packer = ArgumentPacker(_signature())
    assert packer.bind((), {"scale": 2.0, "out": "o"}) == ["o", 2.0]
    assert packer.bind(("o",), {"scale": 2.0}) == ["o", 2.0]
    assert packer.bind(("o", 2.0), {}) == ("o", 2.0)
    with pytest.raises(spirvjit.LaunchError, match="no parameter named 'scal'"):
        packer.bind(("o",), {"scal": 2.0})
    with pytest.raises(spirvjit.LaunchError, match="given twice"):
        packer.bind(("o", 1.0), {"scale": 2.0})
    unnamed = ArgumentPacker(_signature(KernelArg(2, "#2", "value", 4, 4, "int", 32)))
    with pytest.raises(spirvjit.LaunchError, match=r"missing arguments: #2"):
        unnamed.bind(("o",), {"scale": 2.0})
    with pytest.raises(spirvjit.LaunchError, match="no parameter named '#2'"):
        unnamed.bind(("o",), {"scale": 2.0, "#2": 1})
