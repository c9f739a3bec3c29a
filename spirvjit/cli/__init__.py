"""The ``spirvjit`` command.

Each subcommand is a ``register_<name>(subparsers)`` function below that adds its
parser and sets ``handler`` (``handler(args) -> exit status``); add new ones to
``SUBCOMMANDS``. Handlers import what they need when they run, so that importing this
module (and ``spirvjit --help``) stays cheap.

Exit status: 0 success, 1 bad input (the error goes to stderr), 2 usage error.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from .. import config
from ..errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_USAGE, SpirvJitError
from ..precompile import register_precompile
from ..ubin.signing import register_sign, register_verify
from .cache import register_cache
from .doctor import register_doctor
from .ubin import (
    add_launch_facts_argument,
    launch_facts_arg,
    register_add_target,
    register_build,
    register_extract,
    register_inspect,
    register_run,
    register_strip,
)


def register_dis(subparsers: argparse._SubParsersAction) -> None:
    """``spirvjit dis FILE [--target T] [-o OUT]``: SPIR-V assembly, or a variant's code."""
    parser = subparsers.add_parser(
        "dis",
        help="disassemble a SPIR-V binary or a unified binary",
        description="Print a SPIR-V module (a .spv file, or a .ubin's module) as text that "
        "spirv-as can reassemble; with --target, a .ubin native variant's machine code "
        "(through llvm-objdump).",
    )
    parser.add_argument("file", metavar="FILE", help="a SPIR-V binary or a unified binary")
    parser.add_argument("-o", "--output", metavar="OUT", help="write the text to OUT, not stdout")
    parser.add_argument(
        "--target",
        metavar="T",
        help="show machine code for T (host, x86-64-v3, gfx942, sm_90, ...): a .ubin's "
        "variant, or a .spv compiled for T now",
    )
    parser.add_argument("--module", type=int, default=0, help="a .ubin's module index (0)")
    add_launch_facts_argument(parser, "with --target, a .ubin's")
    parser.add_argument(
        "--source",
        nargs="*",
        metavar="SRC",
        default=None,
        help="interleave the source lines that OpLine names (modules compiled with -g by "
        "the translator producer) with the SPIR-V, or with --target (a CPU target) with the "
        "kernels' assembly compiled in debug mode: from the SRC files given, a .ubin's "
        "embedded sources, or the paths the module names",
    )
    parser.set_defaults(handler=_run_dis, error=parser.error)


def _run_dis(args: argparse.Namespace) -> int:
    from ..spirv.disasm import disassemble
    from ..ubin.format import MAGIC

    with open(args.file, "rb") as f:
        data = f.read()
    if args.source is not None and args.target:
        text = _dis_compiled_with_source(args, data)
        if text is None:
            return EXIT_BAD_INPUT
    elif data.startswith(MAGIC):
        text = _dis_ubin(args, data)
    elif args.target:
        text = _dis_compiled(args, data)
    else:
        text = disassemble(data)
    if args.source is not None and not args.target:
        text = _with_source(args, data, text)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        from ..ubin.names import printable_lines  # names and strings come from the file

        sys.stdout.write(printable_lines(text))
        sys.stdout.flush()
    return EXIT_OK


def _with_source(args: argparse.Namespace, data: bytes, text: str) -> str:
    from ..debuginfo import has_lines, interleave_source, source_files

    extra = _source_texts(args, data)
    if not has_lines(text):
        sys.stderr.write(
            "spirvjit dis: the module has no OpLine nor DebugLine (compile with -g: "
            "clang-22's SPIR-V back end emits no line information, the translator "
            "producer does)\n"
        )
    return interleave_source(text, source_files(text, extra))


def _source_texts(args: argparse.Namespace, data: bytes) -> dict[str, str]:
    """Source texts for --source: a .ubin's embedded sources and the SRC files given."""
    from ..ubin.format import MAGIC

    extra: dict[str, str] = {}
    if data.startswith(MAGIC):
        from ..ubin.reader import UnifiedBinary

        binary = UnifiedBinary(data, os.path.basename(args.file))
        for name in binary.source_names:
            extra[name] = binary.source(name).decode("utf-8", "replace")
    for path in args.source:
        with open(path, encoding="utf-8") as f:
            extra[path] = f.read()
    return extra


def _dis_compiled_with_source(args: argparse.Namespace, data: bytes) -> str | None:
    """``--target T --source``: every kernel compiled for CPU target T now, in debug mode
    (translate/debuginfo.py), its assembly interleaved with the source lines. None (after
    saying why) when the module has no line information."""
    from ..backends.cpu.debugload import DEBUG_SPECIALIZATION
    from ..debuginfo import interleave_assembly, source_files
    from ..program import Program
    from ..spirv.disasm import disassemble
    from ..target import parse_target
    from ..translate.debuginfo import has_debug_info
    from ..ubin.format import MAGIC

    try:
        target = parse_target(args.target)
    except ValueError as exc:
        args.error(str(exc))
    if target.kind != "cpu":
        args.error("--source with --target interleaves the assembly of CPU targets only")
    spirv = data
    if data.startswith(MAGIC):
        from ..ubin.reader import UnifiedBinary

        spirv = UnifiedBinary(data, os.path.basename(args.file)).module(args.module)
    program = Program(spirv, target=target)
    if not has_debug_info(program.module):
        sys.stderr.write(
            f"spirvjit dis: {args.file} has no line information (no OpLine or DebugLine): "
            "compile it with -g (compile_opencl(..., options=['-g']) uses the translator "
            "producer; clang-22's SPIR-V back end emits none)\n"
        )
        return None
    sources = source_files(disassemble(program.module), _source_texts(args, data))
    parts = []
    for kernel in program.kernel_names:
        assembly = program.assembly(kernel, DEBUG_SPECIALIZATION)
        parts.append(f"; kernel {kernel}, {target.name}, debug mode (not optimized)")
        parts.append(interleave_assembly(assembly, sources))
    return "\n".join(parts)


def _dis_ubin(args: argparse.Namespace, data: bytes) -> str:
    import subprocess
    import tempfile

    from ..errors import CompileError
    from ..spirv.disasm import disassemble
    from ..toolchain import require_tool
    from ..ubin.describe import find_variant
    from ..ubin.reader import UnifiedBinary

    binary = UnifiedBinary(data, os.path.basename(args.file))
    if not 0 <= args.module < binary.module_count:
        args.error(f"{binary.name} has modules 0..{binary.module_count - 1}")
    if not args.target:
        return disassemble(binary.module(args.module))
    variant = find_variant(binary, args.target, args.module, launch_facts_arg(args))
    if variant.target.kind == "nvptx":
        return _dis_nvidia(variant)
    # llvmlite cannot disassemble object files; llvm-objdump can.
    objdump = require_tool("llvm-objdump", "disassembling native variants")
    mcpu = [f"--mcpu={variant.target.arch}"] if variant.target.kind == "amdgpu" else []
    parts = []
    with tempfile.TemporaryDirectory(prefix="spirvjit-") as tmp:
        for kernel in sorted(variant.objects):
            path = os.path.join(tmp, "kernel.o")
            with open(path, "wb") as f:
                f.write(variant.objects[kernel])
            cmd = [objdump, "-d", "--no-show-raw-insn", *mcpu, path]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise CompileError(f"llvm-objdump failed on kernel {kernel}", proc.stderr)
            parts.append(f"; kernel {kernel}, {variant.name}\n{proc.stdout.replace(path, kernel)}")
    return "\n".join(parts)


def _dis_nvidia(variant) -> str:
    """PTX as stored, or a cubin's SASS through cuobjdump (CUDA toolkit)."""
    import shutil
    import subprocess
    import tempfile

    from ..errors import CompileError

    parts = []
    for kernel in sorted(variant.objects):
        image = variant.objects[kernel]
        if not image.startswith(b"\x7fELF"):
            parts.append(f"// kernel {kernel}, {variant.name} (PTX)\n{image.decode()}")
            continue
        cuobjdump = shutil.which("cuobjdump")
        if cuobjdump is None:
            raise CompileError(
                f"kernel {kernel} of {variant.name} is a cubin; showing its SASS needs "
                "cuobjdump from the CUDA toolkit (or disassemble the .spv with --target)"
            )
        with tempfile.TemporaryDirectory(prefix="spirvjit-") as tmp:
            path = os.path.join(tmp, "kernel.cubin")
            with open(path, "wb") as f:
                f.write(image)
            proc = subprocess.run([cuobjdump, "-sass", path], capture_output=True, text=True)
            if proc.returncode != 0:
                raise CompileError(f"cuobjdump failed on kernel {kernel}", proc.stderr)
            parts.append(f"// kernel {kernel}, {variant.name}\n{proc.stdout}")
    return "\n".join(parts)


def _dis_compiled(args: argparse.Namespace, spirv: bytes) -> str:
    """Every kernel of a SPIR-V module compiled for ``--target`` now, as assembly."""
    from ..program import Program
    from ..target import parse_target

    try:
        target = parse_target(args.target)
    except ValueError as exc:
        args.error(str(exc))
    program = Program(spirv, target=target)
    parts = []
    for kernel in program.kernel_names:
        # The CPU back end's whole-function vectorization outcome (backends/cpu/abi.py).
        function = program.translation().kernel_functions.get(kernel)
        note = getattr(function, "wfv_note", None)
        note = f"; {note}\n" if note else ""
        rows = getattr(function, "rows_note", None)  # blocks of y rows (backends/cpu/yjam.py)
        note += f"; {rows}\n" if rows else ""
        parts.append(f"; kernel {kernel}, {target.name}\n{note}{program.assembly(kernel)}")
    return "\n".join(parts)


SUBCOMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    register_build,
    register_inspect,
    register_run,
    register_dis,
    register_extract,
    register_add_target,
    register_strip,
    register_cache,
    register_sign,
    register_verify,
    register_doctor,
    register_precompile,
)


class _VersionAction(argparse.Action):
    """``--version``: spirvjit's, and the LLVM it compiles with (read only when asked)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        from .. import __version__
        from ..cache.key import llvm_version

        sys.stdout.write(f"spirvjit {__version__} (LLVM {llvm_version()})\n")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand in ``SUBCOMMANDS`` registered."""
    parser = argparse.ArgumentParser(
        prog="spirvjit",
        description="Run OpenCL kernels compiled to SPIR-V on the CPU and GPUs.",
    )
    parser.add_argument("--version", action=_VersionAction)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for register in SUBCOMMANDS:
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    config.debug()  # SPIRVJIT_DEBUG: the variant choice and JIT times go to stderr
    try:
        return args.handler(args)
    except (SpirvJitError, OSError) as exc:
        if isinstance(exc, BrokenPipeError):
            # The reader of stdout went away (`| head`): not an error of ours.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return EXIT_OK
        print(f"spirvjit {args.command}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
