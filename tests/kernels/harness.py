"""Build/run helpers for the end-to-end kernel tests (imported by conftest and tests).

Kernels live in ``sources.py`` (one registry: name -> source, options, runner) so that the
topical tests, the differential test and the spirv-val test all use the same programs.
Compiling dominates the suite's run time, so programs and launch results are cached per
(source, options, producer) for the whole session.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import numpy as np
import pytest
from sources import CASES

import spirvjit

PRODUCERS = ("clang", "translator")


def _tool(name: str, *fallbacks: str) -> str | None:
    """Path of a toolchain program, or None; prefers spirvjit's own lookup."""
    try:
        from spirvjit.toolchain import find_tool

        found = find_tool(name)
        if found:
            return str(found)
    except Exception:  # toolchain module missing or tool not found: fall back to PATH
        pass
    for candidate in fallbacks:
        path = shutil.which(candidate)
        if path:
            return path
    return None


def translator_missing() -> str | None:
    """Why the clang-15 + llvm-spirv-15 producer can't run here, or None."""
    missing = [
        label
        for label, found in (
            ("clang-15", _tool("clang15", "clang-15")),
            ("llvm-spirv-15", _tool("llvm-spirv", "llvm-spirv-15")),
        )
        if not found
    ]
    return f"{' and '.join(missing)} not installed" if missing else None


def spirv_val_path() -> str | None:
    return _tool("spirv-val", "spirv-val")


def spirv_as_path() -> str | None:
    return _tool("spirv-as", "spirv-as")


@functools.cache
def _build_cached(source: str, options: tuple[str, ...], producer: str):
    return spirvjit.compile_opencl(source, options=list(options), producer=producer)


def build(source: str, options=("-cl-std=CL3.0",), producer: str = "clang"):
    """Compile OpenCL C source into a Program (cached; skips if the producer is absent)."""
    if producer == "translator":
        why = translator_missing()
        if why:
            pytest.skip(why)
    return _build_cached(source, tuple(options), producer)


@functools.cache
def _run_cached(name: str, producer: str) -> dict[str, np.ndarray]:
    case = CASES[name]
    results = case.runner(_build_cached(case.source, case.options, producer))
    for array in results.values():
        # Results are shared between tests: freeze them so no test can change another's input.
        array.flags.writeable = False
    return results


def run_case(name: str, producer: str = "clang") -> dict[str, np.ndarray]:
    """Build and run registered kernel ``name``; returns its inputs and outputs by name."""
    case = CASES[name]
    if producer == "translator":
        why = translator_missing() or case.translator
        if why:
            pytest.skip(f"translator pair: {why}")
    return _run_cached(name, producer)


# --- spirv-val ----------------------------------------------------------------------------

# clang-22's in-tree SPIR-V backend emits a few constructs spirv-val rejects although the
# intent is clear and every consumer we know of handles them. Each entry is a regular
# expression matched against spirv-val's error line; anything else spirv-val reports is a
# real failure. Keep this list as short as the backend allows.
KNOWN_CLANG22_SPIRV_VAL_ERRORS: tuple[tuple[str, str], ...] = (
    # OpAny/OpAll are only defined on boolean vectors, but the backend applies them to the
    # integer vector that OpenCL's any()/all() take (it does not compare with zero first).
    (r"Expected operand to be vector bool: (Any|All)", "OpAny/OpAll on integer vector"),
    # OpenCL.std ldexp on vectors: the backend passes a scalar exponent where the extended
    # instruction set wants a vector of the same component count (or vice versa).
    (r"OpenCL\.std ldexp:", "vector ldexp operand shape"),
    # convert_uchar(char) & co.: the backend emits OpUConvert/OpSConvert between integer types
    # of the same width (a no-op) where SPIR-V requires a different width.
    (
        r"Expected input to have different bit width from Result Type: [SU]Convert",
        "same-width integer conversion",
    ),
)

# llvm-spirv-15 places OpVariable instructions for struct copies (memcpy temporaries) after
# other instructions of the entry block; the SPIR-V rule is they come first.
KNOWN_TRANSLATOR15_SPIRV_VAL_ERRORS: tuple[tuple[str, str], ...] = (
    (
        r"All OpVariable instructions in a function must be the first instructions",
        "OpVariable not at the start of the entry block",
    ),
)


def spirv_val(spirv: bytes, env: str = "spv1.4") -> tuple[int, str]:
    """Run spirv-val on a module; returns (returncode, diagnostics)."""
    path = spirv_val_path()
    if path is None:
        pytest.skip("spirv-val not installed")
    with tempfile.NamedTemporaryFile(suffix=".spv") as f:
        f.write(spirv)
        f.flush()
        proc = subprocess.run(
            [path, "--target-env", env, f.name], capture_output=True, text=True, check=False
        )
    return proc.returncode, (proc.stdout + proc.stderr).strip()


def known_spirv_val_error(diagnostics: str, producer: str = "clang") -> str | None:
    """The allow-list entry that explains spirv-val's complaint, or None.

    spirv-val stops at the first error, so only that one can be matched."""
    known = (
        KNOWN_CLANG22_SPIRV_VAL_ERRORS
        if producer == "clang"
        else KNOWN_TRANSLATOR15_SPIRV_VAL_ERRORS
    )
    errors = [line for line in diagnostics.splitlines() if line.startswith("error")]
    if not errors:
        return None
    for line in errors:
        for pattern, why in known:
            if re.search(pattern, line):
                return why
    return None


def assemble(text: str, target_env: str = "spv1.2") -> bytes:
    """Assemble SPIR-V assembly text (skips when spirv-as is absent)."""
    path = spirv_as_path()
    if path is None:
        pytest.skip("spirv-as not installed")
    with tempfile.TemporaryDirectory() as d:
        src, out = Path(d, "m.spvasm"), Path(d, "m.spv")
        src.write_text(text)
        proc = subprocess.run(
            [path, "--target-env", target_env, str(src), "-o", str(out)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, f"spirv-as rejected the test's assembly:\n{proc.stderr}"
        return out.read_bytes()


def program_with_vectorizer(
    monkeypatch, programs: dict, source: str, enabled: bool, on: str = "all", options=()
) -> spirvjit.Program:
    """``source`` translated with the vectorizer on (SPIRVJIT_WFV=``on``: "all" takes the
    loop-free kernels too, "loops" only kernels with loops) or off, once per test
    session (kept in ``programs``); the variable stays set while the caller launches (it
    is part of the cache key)."""
    monkeypatch.setenv("SPIRVJIT_WFV", on if enabled else "0")
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    if enabled not in programs:
        program = spirvjit.compile_opencl(source, list(options))
        program.translation()  # now, under this setting
        programs[enabled] = program
    return programs[enabled]


def vector_and_scalar_arrays(
    program_for, name: str, make_args, *, bitwise: bool = False, **launch
) -> list[np.ndarray]:
    """The array arguments of kernel ``name`` after a launch of ``program_for(True)`` (the
    vectorizer on), asserted equal to those after a launch of ``program_for(False)`` (off):
    value for value, or byte for byte with ``bitwise``. ``make_args()`` gives fresh
    arguments for each launch."""
    results = []
    for enabled in (True, False):
        program = program_for(enabled)
        args = make_args()
        program.kernel(name)(*args, **launch)
        results.append([a.copy() for a in args if isinstance(a, np.ndarray)])
    for on, off in zip(*results, strict=True):
        if bitwise:
            on, off = on.view(np.uint8), off.view(np.uint8)
        np.testing.assert_array_equal(on, off)
    return results[0]


# Floats without libm calls (the quick and optimized tiers round them the same) and an
# integer hash: the tiered JIT's tests launch it under names of their own (``% name``).
TIERED_ARITH = """
kernel void arith_%s(global const float *x, global float *y, global uint *h, uint n)
{
    size_t i = get_global_id(0);
    if (i >= n) return;
    float v = x[i];
    for (int k = 0; k < 5; ++k)
        v = v * 1.0001f + 0.5f / (1.0f + v * v);
    y[i] = v;
    uint s = (uint)i * 2654435761u;
    h[i] = (s ^ (s >> 13)) * 0x5bd1e995u;
}
"""


def hold_optimized_compiles(monkeypatch, seconds: float = 120) -> threading.Event:
    """Holds every optimized-tier compile, before it reads anything, until the returned
    event is set (at most ``seconds``)."""
    from spirvjit.backends.cpu import tiered

    release = threading.Event()
    optimize = tiered.TieredKernel._optimize

    def held(self, build):
        assert release.wait(seconds)
        optimize(self, build)

    monkeypatch.setattr(tiered.TieredKernel, "_optimize", held)
    return release
