"""The unified binary subcommands of ``spirvjit``: build, inspect, extract, add-target,
strip and run (``dis`` lives in spirvjit/cli.py and accepts .ubin files too).

Each ``register_<name>`` adds a parser whose defaults carry ``handler`` and ``error``
(the subparser's own ``error``, so a bad argument found late still exits 2 with that
subcommand's usage). Handlers import what they need when they run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..errors import EXIT_BAD_INPUT, EXIT_OK


def _targets(args: argparse.Namespace, text: str | None) -> list:
    """``--target host,x86-64-v3,gfx942,sm_90`` as Targets; a bad name is a usage error."""
    from ..target import parse_targets

    try:
        return parse_targets(text) if text is not None else []
    except ValueError as exc:
        args.error(str(exc))


def _add_output(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument("-o", "--output", metavar="OUT", help=help_text)


def _new(subparsers, name: str, help_text: str, description: str, handler):
    parser = subparsers.add_parser(name, help=help_text, description=description)
    parser.set_defaults(handler=handler, error=parser.error)
    return parser


# --- build -----------------------------------------------------------------------------------


def _add_launch_variants(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--launch-variants",
        choices=("common", "none"),
        default="common",
        help="GPU targets: besides the generic code (right for every launch), also ship "
        "code for the common launch: whole work-groups, no global offset, ids below 2**31 "
        "(common, the default); or the generic code only (none: a smaller file that "
        "spirvjit 0.1's version-1 readers also read)",
    )


def register_build(subparsers: argparse._SubParsersAction) -> None:
    """``spirvjit build SRC... -o app.ubin [--target T,...]``."""
    parser = _new(
        subparsers,
        "build",
        "compile sources into a unified binary (.ubin)",
        "Compile OpenCL C (.cl), HIP (.hip), SPIR-V (.spv), SPIR-V assembly (.spvasm) or LLVM IR "
        "(.ll/.bc) into one SPIR-V module (several inputs are linked) and write a unified "
        "binary with it, its kernel table, a build record and native code for --target.",
        _run_build,
    )
    parser.add_argument("sources", nargs="+", metavar="SRC", help="input files")
    parser.add_argument("-o", "--output", required=True, metavar="OUT.ubin", help="output file")
    parser.add_argument(
        "--target",
        metavar="T[,T...]",
        help="native variants to include: host, generic, x86-64[-v2|-v3|-v4] (CPUs), "
        "gfx942, gfx90a:xnack+, ... (AMD GPUs), sm_80, sm_90, ... (NVIDIA GPUs)",
    )
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VAL]")
    parser.add_argument("-I", dest="includes", action="append", default=[], metavar="DIR")
    parser.add_argument(
        "--option",
        dest="options",
        action="append",
        default=[],
        metavar="OPT",
        help="another clang option, e.g. --option=-cl-fast-relaxed-math",
    )
    parser.add_argument("--embed-source", action="store_true", help="embed the inputs")
    parser.add_argument("--producer", choices=("clang", "translator"), default="clang")
    _add_launch_variants(parser)


def _run_build(args: argparse.Namespace) -> int:
    from ..ubin.build import Input, build_contents
    from ..ubin.writer import write_file

    targets = _targets(args, args.target)
    options = [f"-D{d}" for d in args.defines] + [f"-I{i}" for i in args.includes] + args.options
    inputs = [Input.from_path(path) for path in args.sources]
    from ..progress import Progress

    steps = len(inputs) + len(set(targets))  # a bar only where there is a wait worth one
    with Progress(steps, "spirvjit build", "step", enabled=None if targets else False) as bar:
        contents = build_contents(
            inputs,
            options=options,
            producer=args.producer,
            targets=targets,
            embed_source=args.embed_source,
            progress=lambda what: bar.advance(1, what),
            launch_variants=args.launch_variants,
        )
    write_file(contents, args.output)
    return EXIT_OK


# --- inspect ---------------------------------------------------------------------------------


def register_inspect(subparsers: argparse._SubParsersAction) -> None:
    """``spirvjit inspect app.ubin [--json]``."""
    parser = _new(
        subparsers,
        "inspect",
        "show a unified binary's kernels, variants and build record",
        "Show the kernels and their arguments, the native variants with their sizes, "
        "which one this machine would run and why, and the build record. Every section's "
        "checksum is verified.",
        _run_inspect,
    )
    parser.add_argument("file", metavar="FILE.ubin")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


def _run_inspect(args: argparse.Namespace) -> int:
    from ..offload_bundle import describe_entries, native_trust, open_offload_file
    from ..ubin.describe import describe, render
    from ..ubin.reader import read_file

    offload = open_offload_file(args.file)  # ROCm's bundles and .hip_fatbin sections
    if offload is not None:
        from .. import devices

        trust = native_trust(offload.location_problem, None)
        listing = describe_entries(
            offload.entries, offload.name, offload.elf, trust, devices=devices()
        )
        sys.stdout.write(listing)
        return EXIT_OK
    info = describe(read_file(args.file))
    sys.stdout.write(json.dumps(info, indent=2) + "\n" if args.json else render(info))
    return EXIT_OK


# --- extract ---------------------------------------------------------------------------------


def register_extract(subparsers: argparse._SubParsersAction) -> None:
    """``spirvjit extract app.ubin --spirv OUT | --variant T -o OUT | --source DIR``."""
    parser = _new(
        subparsers,
        "extract",
        "write a unified binary's SPIR-V, native objects or sources to files",
        "Write one part of a unified binary to files: the SPIR-V module (--spirv), a "
        "variant's object files (--variant; -o a file for one kernel, or a directory for "
        "KERNEL.o each), or the embedded sources (--source DIR).",
        _run_extract,
    )
    parser.add_argument("file", metavar="FILE.ubin")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--spirv", metavar="OUT.spv", help="write the SPIR-V module")
    what.add_argument(
        "--variant", metavar="TARGET", help="a variant: host, x86-64-v3, cpu:..., sm_90, gfx942"
    )
    what.add_argument("--source", metavar="DIR", help="write the embedded sources into DIR")
    _add_output(parser, "with --variant: the object file, or a directory")
    parser.add_argument("--kernel", help="with --variant: only this kernel's object")
    add_launch_facts_argument(parser, "with --variant")
    parser.add_argument("--module", type=int, default=0, help="module index (default 0)")


def _run_extract(args: argparse.Namespace) -> int:
    from ..errors import BinaryFormatError
    from ..ubin.describe import find_variant
    from ..ubin.names import path_in, printable
    from ..ubin.reader import read_file

    binary = read_file(args.file)
    if not 0 <= args.module < binary.module_count:
        args.error(f"{binary.name} has modules 0..{binary.module_count - 1}")
    if args.spirv:
        _write(args.spirv, binary.module(args.module))
    elif args.source:
        if not binary.source_names:
            raise BinaryFormatError(f"{binary.name} has no embedded sources (build --embed-source)")
        os.makedirs(args.source, exist_ok=True)
        for name in binary.source_names:  # the reader checked these; path_in checks again
            _write(path_in(args.source, name, "source"), binary.source(name))
    else:
        if not args.output:
            args.error("--variant needs -o OUT (a file, or a directory)")
        variant = find_variant(binary, args.variant, args.module, launch_facts_arg(args))
        kernels = sorted(variant.objects)
        if args.kernel:
            if args.kernel not in variant.objects:
                listed = [printable(k) for k in kernels]
                args.error(
                    f"variant {printable(variant.name)} has no kernel {args.kernel!r}: {listed}"
                )
            kernels = [args.kernel]
        if os.path.isdir(args.output) or args.output.endswith(os.sep):
            # Kernel names come from the file: check them all before writing anything.
            paths = [path_in(args.output, f"{kernel}.o", "kernel") for kernel in kernels]
            os.makedirs(args.output, exist_ok=True)
            for kernel, path in zip(kernels, paths, strict=True):
                _write(path, variant.objects[kernel])
        elif len(kernels) == 1:
            _write(args.output, variant.objects[kernels[0]])
        else:
            args.error(f"the variant has {len(kernels)} kernels: pass --kernel K or -o a directory")
    return EXIT_OK


def add_launch_facts_argument(parser: argparse.ArgumentParser, when: str) -> None:
    """``--launch-facts``: which of a target's GPU variants (``launch_facts_arg``)."""
    parser.add_argument(
        "--launch-facts",
        default="",
        metavar="F[,F...]",
        help=f"{when}: the GPU code specialised for these launch facts (ids32, uniform, "
        "zero_offset; 'common' for all three) instead of the generic code",
    )


def launch_facts_arg(args: argparse.Namespace) -> tuple[str, ...]:
    """``--launch-facts``: sorted names ("common": every launch fact)."""
    from ..backends.gpu.abi import LAUNCH_FACTS

    if args.launch_facts == "common":
        return LAUNCH_FACTS
    facts = sorted({f.strip() for f in args.launch_facts.split(",") if f.strip()})
    unknown = [f for f in facts if f not in LAUNCH_FACTS]
    if unknown:
        args.error(f"unknown launch fact {unknown[0]!r}; expected {', '.join(LAUNCH_FACTS)}")
    return tuple(facts)


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


# --- add-target and strip --------------------------------------------------------------------


def register_add_target(subparsers: argparse._SubParsersAction) -> None:
    """``spirvjit add-target app.ubin --target T[,T...] [-o OUT]``."""
    parser = _new(
        subparsers,
        "add-target",
        "compile and add native variants to a unified binary",
        "Compile every kernel of every module for each target and add (or replace) that "
        "target's native variants (for a GPU, the generic one and, unless --launch-variants "
        "none, the one for the common launch). Variants are built for the spec constants "
        "of an existing variant of the module, else for the module's defaults.",
        _run_add_target,
    )
    parser.add_argument("file", metavar="FILE.ubin")
    parser.add_argument(
        "--target", required=True, metavar="T[,T...]", help="e.g. host,x86-64-v3,gfx942,sm_90"
    )
    _add_launch_variants(parser)
    _add_output(parser, "write here instead of replacing FILE")


def _run_add_target(args: argparse.Namespace) -> int:
    import dataclasses

    from ..ubin.build import native_variants
    from ..ubin.reader import read_file
    from ..ubin.writer import write_file

    targets = _targets(args, args.target)
    contents = read_file(args.file).contents()
    # A target's new variants replace all of its old ones (whatever their launch facts).
    variants = {v.identity(): v for v in contents.variants if v.target not in targets}
    for index, spirv in enumerate(contents.modules):
        spec = next((dict(v.spec_constants) for v in contents.variants if v.module == index), {})
        for target in targets:
            for variant in native_variants(spirv, target, spec, index, args.launch_variants):
                variants[variant.identity()] = variant
    write_file(dataclasses.replace(contents, variants=tuple(variants.values())), _out(args))
    return EXIT_OK


def _out(args: argparse.Namespace) -> str:
    return args.output or args.file


def register_strip(subparsers: argparse._SubParsersAction) -> None:
    """``spirvjit strip app.ubin [--native] [--sources] [-o OUT]``."""
    parser = _new(
        subparsers,
        "strip",
        "drop native variants and/or embedded sources",
        "Drop the native variants (--native), the embedded sources (--sources), or both "
        "when neither is given. The SPIR-V, kernel table and build record stay.",
        _run_strip,
    )
    parser.add_argument("file", metavar="FILE.ubin")
    parser.add_argument("--native", action="store_true", help="drop the native variants")
    parser.add_argument("--sources", action="store_true", help="drop the embedded sources")
    _add_output(parser, "write here instead of replacing FILE")


def _run_strip(args: argparse.Namespace) -> int:
    import dataclasses

    from ..ubin.reader import read_file
    from ..ubin.writer import write_file

    both = not (args.native or args.sources)
    contents = read_file(args.file).contents()
    if both or args.native:
        contents = dataclasses.replace(contents, variants=())
    if both or args.sources:
        contents = dataclasses.replace(contents, sources=())
    write_file(contents, _out(args))
    return EXIT_OK


# --- run -------------------------------------------------------------------------------------


def register_run(subparsers: argparse._SubParsersAction) -> None:
    """``spirvjit run app.ubin KERNEL --global N [--local L] [--args ...]``."""
    parser = _new(
        subparsers,
        "run",
        "launch a kernel on generated inputs and time it",
        "Load FILE (.ubin, or .spv), launch KERNEL on generated inputs and report the "
        "first launch (JIT or native load included) and the steady-state time. Buffers "
        "get --size ARG=N random elements, else one per work-item: a guess, so the "
        "launches are then preceded by one in checked mode, which reports an access "
        "past the guessed size instead of crashing. By-value arguments take --args "
        "values (positional, or NAME=VALUE with an argument's name or index), else "
        "integers default to the work-item count and floats to 1.0.",
        _run_run,
    )
    parser.add_argument("file", metavar="FILE")
    parser.add_argument("kernel", metavar="KERNEL")
    parser.add_argument("--global", dest="global_size", required=True, metavar="N[,N[,N]]")
    parser.add_argument("--local", dest="local_size", metavar="L[,L[,L]]")
    parser.add_argument("--args", nargs="*", default=[], metavar="VALUE")
    parser.add_argument("--repeat", type=int, default=10, help="steady-state launches (10)")
    parser.add_argument(
        "--size",
        dest="buffer_sizes",
        action="append",
        default=[],
        metavar="ARG=N",
        help="elements of buffer argument ARG (name or index); repeat for each buffer",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="run every launch in checked mode (bounds-checked, host CPU; slower)",
    )


def _sizes(args: argparse.Namespace, text: str | None, what: str) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        args.error(f"{what} must be 1 to 3 comma-separated integers, got {text!r}")
    if not 1 <= len(sizes) <= 3 or min(sizes) < 1:
        args.error(f"{what} must be 1 to 3 positive integers, got {text!r}")
    return sizes


def _run_run(args: argparse.Namespace) -> int:
    import math

    from ..errors import LaunchError
    from ..ndrange import choose_local_size, normalize_sizes
    from ..program import Program
    from ..ubin.api import open_program
    from ..ubin.names import printable
    from ..ubin.quickrun import guessed, make_args, parse_sizes, time_kernel

    global_size = _sizes(args, args.global_size, "--global")
    local_size = _sizes(args, args.local_size, "--local")
    if args.repeat < 0:
        args.error("--repeat must be 0 or more")
    if args.file.endswith(".spv"):
        with open(args.file, "rb") as f:
            program, picked = Program(f.read(), name=os.path.basename(args.file)), "SPIR-V (JIT)"
    else:
        program, choice = open_program(args.file)
        picked = choice.variant.name if choice.variant else "SPIR-V (JIT)"
        picked += f" ({choice.how}: {choice.reason})"
    kernel = program.kernel(args.kernel)
    # The local size the launch will use, so __local buffers can be sized for it.
    gs, ls, _, dims = normalize_sizes(kernel.name, global_size, local_size, None)
    ls = ls or kernel.signature.required_local_size or choose_local_size(gs, dims)
    try:
        sizes = parse_sizes(kernel, args.buffer_sizes)
        launch_args = make_args(kernel, math.prod(gs), math.prod(ls), args.args, sizes)
    except ValueError as exc:
        args.error(str(exc))
    print(printable(f"{kernel!r} from {program.name}: runs {picked}"))
    unknown = guessed(kernel, sizes)
    try:
        if unknown and not args.check:
            # Sizes spirvjit made up: a checked launch first, so that a kernel reaching
            # past them is reported instead of crashing the process.
            print(
                f"buffer sizes guessed (one element per work-item) for {', '.join(unknown)}: "
                "checking a first launch (give --size ARG=N for each to skip this)"
            )
            kernel(*launch_args, global_size=gs[:dims], local_size=tuple(ls)[:dims], check=True)
        timing = time_kernel(
            kernel, launch_args, gs[:dims], tuple(ls)[:dims], args.repeat, args.check
        )
    except LaunchError as exc:
        hint = " (give the buffers' sizes with --size ARG=N)" if unknown else ""
        print(f"spirvjit run: {exc}{hint}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"first launch: {timing.first_s * 1e3:.3f} ms ({timing.origin})")
    if timing.repeats:
        print(f"steady state: {timing.steady_s * 1e3:.3f} ms (median of {timing.repeats})")
    return EXIT_OK
