"""``spirvjit doctor``: what this machine has for spirvjit, and what is missing for what."""

from __future__ import annotations

import argparse
import subprocess
import sys

from ..errors import EXIT_OK

# Tool -> what needs it (the features a user loses without it).
_NEEDED_FOR = {
    "clang": "compile_opencl / compile_hip and `spirvjit build` of .cl/.hip sources",
    "clang15": "compile_opencl(producer='translator'), and options=['-g'] (gdb)",
    "llvm-spirv": "compile_opencl(producer='translator'), and options=['-g'] (gdb)",
    "spirv-val": "validating SPIR-V in the test suite",
    "spirv-as": "building .spvasm inputs",
    "spirv-dis": "disassembly through SPIRV-Tools (spirvjit dis needs none)",
    "spirv-link": "linking several inputs into one module",
    "llvm-objdump": "`spirvjit dis --target` of native code",
    "ld.lld": "AMD GPU code objects (gfx* targets), CPU kernels under gdb (debug mode)",
    "llvm-readelf": "AMD code object metadata in tests and benchmarks",
    "clang-offload-bundler": "HIP offload bundles",
    "ptxas": "NVIDIA cubins (without it sm_* targets ship PTX, compiled by the driver)",
}


def register_doctor(subparsers: argparse._SubParsersAction) -> None:
    """Adds ``spirvjit doctor``."""
    parser = subparsers.add_parser(
        "doctor",
        help="report toolchains, devices, the cache and what is missing",
        description="Report the external tools spirvjit found (with their versions), the "
        "devices present, the kernel cache, and which features lack what they need.",
    )
    parser.set_defaults(handler=_run_doctor, error=parser.error)


def _version(path: str) -> str:
    try:
        proc = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"(does not run: {exc})"
    text = (proc.stdout or proc.stderr).strip().splitlines()
    lines = [line for line in text if "version" in line.lower() or "release" in line] or text
    return lines[0].strip() if lines else "(no version output)"


def _run_doctor(args: argparse.Namespace) -> int:
    from .. import __version__, config
    from ..backends import backend
    from ..cache.key import llvm_version
    from ..device import devices
    from ..toolchain import TOOL_NAMES, find_tool

    out = sys.stdout
    out.write(f"spirvjit {__version__}, LLVM {llvm_version()}, Python {sys.version.split()[0]}\n")
    missing: list[str] = []
    out.write("\ntools:\n")
    for name in TOOL_NAMES:
        path = find_tool(name)
        if path is None:
            out.write(f"  {name:22} missing\n")
            missing.append(f"{name}: {_NEEDED_FOR.get(name, 'some features')}")
        else:
            out.write(f"  {name:22} {path}: {_version(path)}\n")
    out.write("\ndevice libraries:\n")
    for kind in ("amdgpu", "nvptx"):
        library = backend(kind).device_library()
        where = f"{library.kind} at {library.path}" if library else "missing"
        out.write(f"  {kind:22} {where}\n")
        if library is None:
            missing.append(f"{kind} math library: GPU kernels that call math functions")
    out.write("\ndevices:\n")
    for device in devices():
        out.write(
            f"  {device.name} [{device.kind}, target {device.target.name}]: "
            f"{device.compute_units} compute units, groups up to "
            f"{device.max_work_group_size}, {device.local_memory_bytes} B local memory\n"
        )
    out.write("\nkernel cache:\n")
    if not config.cache_enabled():
        out.write("  off (SPIRVJIT_CACHE=0)\n")
    else:
        root = config.cache_dir()
        entries = list((root / "entries").rglob("*")) if (root / "entries").is_dir() else []
        size = sum(p.stat().st_size for p in entries if p.is_file())
        out.write(f"  {root}: {len(entries)} files, {size / 1e6:.1f} MB\n")
    out.write("\nmissing:\n" if missing else "\nnothing missing\n")
    for line in missing:
        out.write(f"  {line}\n")
    return EXIT_OK
