"""Finding the external tools spirvjit drives (clang, the SPIR-V translator, SPIRV-Tools, lld).

Tools are looked up by *logical* name so callers never hard-code a version suffix.
For each name the search order is: the environment override ``SPIRVJIT_<NAME>``
(``-`` and ``.`` become ``_``: ``SPIRVJIT_CLANG``, ``SPIRVJIT_LLVM_SPIRV``,
``SPIRVJIT_LD_LLD``), then the versioned command on ``PATH``, then Debian's
versioned install directory, then the unversioned command where that is safe.

Results are cached for the life of the process; call ``find_tool.cache_clear()``
after changing the environment (tests do).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile

from spirvjit.errors import CompileError

# Candidates in search order. The versions are pinned because the SPIR-V that
# clang-22 emits and the LLVM IR llvmlite (LLVM 22) reads must agree, and
# llvm-spirv-15 only accepts clang-15's bitcode.
_CANDIDATES: dict[str, tuple[str, ...]] = {
    "clang": ("clang-22", "/usr/lib/llvm-22/bin/clang"),
    "clang15": ("clang-15", "/usr/lib/llvm-15/bin/clang"),
    "llvm-spirv": ("llvm-spirv-15", "/usr/lib/llvm-15/bin/llvm-spirv", "llvm-spirv"),
    "spirv-val": ("spirv-val",),
    "spirv-as": ("spirv-as",),
    "spirv-dis": ("spirv-dis",),
    "spirv-link": ("spirv-link",),
    "llvm-objdump": ("llvm-objdump-22", "/usr/lib/llvm-22/bin/llvm-objdump"),
    "ld.lld": ("ld.lld-22", "/usr/lib/llvm-22/bin/ld.lld", "ld.lld"),
    "llvm-readelf": ("llvm-readelf-22", "/usr/lib/llvm-22/bin/llvm-readelf"),
    "llvm-cxxfilt": ("llvm-cxxfilt-22", "/usr/lib/llvm-22/bin/llvm-cxxfilt", "llvm-cxxfilt"),
    "opt": ("opt-22", "/usr/lib/llvm-22/bin/opt"),
    "llc": ("llc-22", "/usr/lib/llvm-22/bin/llc"),
    "clang-offload-bundler": (
        "clang-offload-bundler-22",
        "/usr/lib/llvm-22/bin/clang-offload-bundler",
    ),
    "ptxas": ("ptxas", "/usr/local/cuda/bin/ptxas"),
}

# Where each tool comes from, for the error message when it is missing.
_PACKAGES: dict[str, str] = {
    "clang": "clang-22",
    "clang15": "clang-15",
    "llvm-spirv": "llvm-spirv-15",
    "spirv-val": "spirv-tools",
    "spirv-as": "spirv-tools",
    "spirv-dis": "spirv-tools",
    "spirv-link": "spirv-tools",
    "llvm-objdump": "llvm-22",
    "ld.lld": "lld-22",
    "llvm-readelf": "llvm-22",
    "llvm-cxxfilt": "llvm-22",
    "opt": "llvm-22",
    "llc": "llvm-22",
    "clang-offload-bundler": "clang-22",
    "ptxas": "nvidia-cuda-toolkit",
}

TOOL_NAMES: tuple[str, ...] = tuple(_CANDIDATES)


def env_var(name: str) -> str:
    """Return the environment variable that overrides the tool ``name``."""
    return "SPIRVJIT_" + name.upper().replace("-", "_").replace(".", "_")


def _check_name(name: str) -> None:
    if name not in _CANDIDATES:
        raise ValueError(f"unknown tool {name!r}; known tools: {', '.join(TOOL_NAMES)}")


@functools.cache
def find_tool(name: str) -> str | None:
    """Return the absolute path of the tool ``name``, or None when it is not installed.

    ``name`` is a logical name from ``TOOL_NAMES`` (ValueError otherwise). When the
    override variable is set it alone decides: a value that does not resolve to an
    executable gives None rather than silently falling back to another version.
    """
    _check_name(name)
    override = os.environ.get(env_var(name))
    if override:
        path = shutil.which(override)
        return os.path.abspath(path) if path else None
    for candidate in _CANDIDATES[name]:
        path = shutil.which(candidate)
        if path:
            return os.path.abspath(path)
    return None


def require_tool(name: str, purpose: str) -> str:
    """Return the path of the tool ``name``; raise CompileError saying how to get it if missing.

    ``purpose`` completes the sentence "needed for ..." (e.g. "compiling OpenCL C to
    SPIR-V").
    """
    path = find_tool(name)
    if path is not None:
        return path
    var = env_var(name)
    override = os.environ.get(var)
    if override:
        raise CompileError(
            f"{var}={override!r} is not an executable; {name} is needed for {purpose}",
        )
    tried = ", ".join(_CANDIDATES[name])
    raise CompileError(
        f"{name} not found (tried {tried}); it is needed for {purpose}. "
        f"Install it with `apt-get install {_PACKAGES[name]}` or set {var} to its path.",
    )


# Generous: a pathological input can take a while, but a hung tool must not hang
# the caller forever.
TOOL_TIMEOUT_S = 120


def run_checked(cmd: list[str], what: str, tmp: str, blame: str = "") -> None:
    """Runs ``cmd``; CompileError naming the tool and ``what`` on failure or timeout.

    Paths under ``tmp`` are shown without it in the tool's log. ``blame`` is appended to
    a failure's message (e.g. "; this is a spirvjit bug").
    """
    tool = os.path.basename(cmd[0])
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise CompileError(f"{tool} timed out after {TOOL_TIMEOUT_S} s on {what}") from exc
    if proc.returncode != 0:
        log = (proc.stderr + proc.stdout).replace(tmp + os.sep, "")
        raise CompileError(f"{tool} failed on {what} (exit status {proc.returncode}){blame}", log)


def run_on_bytes(
    cmd: list[str], data: bytes, input_name: str, out_ext: str, what: str, blame: str = ""
) -> bytes:
    """Runs ``cmd INPUT -o OUTPUT`` on ``data`` in a temporary directory; OUTPUT's bytes."""
    with tempfile.TemporaryDirectory(prefix="spirvjit-") as tmp:
        src, out = os.path.join(tmp, input_name), os.path.join(tmp, f"out.{out_ext}")
        with open(src, "wb") as f:
            f.write(data)
        run_checked([*cmd, src, "-o", out], what, tmp, blame)
        with open(out, "rb") as f:
            return f.read()
