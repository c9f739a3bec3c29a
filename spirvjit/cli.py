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

from .errors import SpirvJitError

EXIT_OK = 0
EXIT_BAD_INPUT = 1
EXIT_USAGE = 2


def register_dis(subparsers: argparse._SubParsersAction) -> None:
    """``spirvjit dis FILE.spv [-o OUT]``: print a module as SPIR-V assembly."""
    parser = subparsers.add_parser(
        "dis",
        help="disassemble a SPIR-V binary",
        description="Print a SPIR-V binary module as text that spirv-as can reassemble.",
    )
    parser.add_argument("file", metavar="FILE.spv", help="the SPIR-V binary to disassemble")
    parser.add_argument("-o", "--output", metavar="OUT", help="write the text to OUT, not stdout")
    parser.set_defaults(handler=_run_dis)


def _run_dis(args: argparse.Namespace) -> int:
    from .spirv.disasm import disassemble

    with open(args.file, "rb") as f:
        text = disassemble(f.read())
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return EXIT_OK


SUBCOMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (register_dis,)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand in ``SUBCOMMANDS`` registered."""
    parser = argparse.ArgumentParser(
        prog="spirvjit",
        description="Run OpenCL kernels compiled to SPIR-V on the CPU and GPUs.",
    )
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
