"""Compiling inputs into a unified binary's contents: one linked SPIR-V module, its
kernel table, the build record and native variants.

Inputs by extension: OpenCL C (.cl), HIP (.hip, device code: frontend/hip.py), SPIR-V
(.spv), SPIR-V assembly (.spvasm, through spirv-as), LLVM IR or bitcode (.ll/.bc, through
clang-22's SPIR-V back end), Python modules (.py: their @spirvjit.kernel functions, through
llvmlite's SPIR-V back end). Several inputs are linked into one module with spirv-link.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..errors import CompileError, SpirvError
from ..program import Program
from ..spirv import grammar
from ..target import Target
from ..toolchain import require_tool, run_checked, run_on_bytes
from .format import ArgInfo, BuildRecord, Contents, KernelInfo, Variant
from .schema import file_name_ok, source_digest

EXTENSIONS = (".cl", ".hip", ".spv", ".spvasm", ".ll", ".bc", ".py")
_NO_WRITE, _NO_READ_WRITE = 6, 7  # FunctionParameterAttribute values
_FUNC_PARAM_ATTR = 38  # Decoration.FuncParamAttr
_ASM_VERSION = re.compile(rb"^; Version: (1\.[0-6])\s*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Input:
    """One input: its file name (kept in the build record and as embedded source), bytes
    and kind (its extension without the dot)."""

    name: str
    data: bytes
    kind: str
    directory: str | None = None  # where the file was: its #include "..." are found there

    @classmethod
    def from_path(cls, path: str | os.PathLike) -> Input:
        path = os.fspath(path)
        ext = os.path.splitext(path)[1].lower()
        if ext not in EXTENSIONS:
            raise CompileError(
                f"{path}: unknown input type {ext or '(no extension)'!r}; "
                f"expected one of {', '.join(EXTENSIONS)}"
            )
        with open(path, "rb") as f:
            data = f.read()
        return cls(os.path.basename(path), data, ext[1:], os.path.dirname(os.path.abspath(path)))


def to_spirv(item: Input, options: Sequence[str], producer: str) -> bytes:
    """One input as a SPIR-V module (CompileError naming the input when that fails)."""
    if item.kind == "spv":
        if item.data[:4] not in (b"\x03\x02\x23\x07", b"\x07\x23\x02\x03"):
            raise CompileError(f"{item.name}: not a SPIR-V binary (bad magic number)")
        return item.data
    if item.kind == "cl":
        from ..frontend.source_cache import opencl_to_spirv  # clang once per source

        try:
            text = item.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CompileError(f"{item.name}: not UTF-8 text (byte {exc.start})") from exc
        return opencl_to_spirv(text, options, producer=producer, filename=_safe_name(item.name))
    if item.kind == "hip":
        from ..frontend.source_cache import hip_to_spirv  # clang once per source

        try:
            text = item.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CompileError(f"{item.name}: not UTF-8 text (byte {exc.start})") from exc
        dirs = [item.directory] if item.directory else []
        return hip_to_spirv(text, options, filename=_safe_name(item.name), include_dirs=dirs)
    if item.kind == "py":
        from ..frontend.python import python_to_spirv

        return python_to_spirv(item.data, item.name)
    if item.kind == "spvasm":
        tool = require_tool("spirv-as", f"assembling {item.name}")
        return _run_tool([tool, *_asm_version(item.data)], item)
    clang = require_tool("clang", f"compiling {item.name} to SPIR-V")
    return _run_tool([clang, "--target=spirv64", "-c", "-O2"], item)


def _run_tool(cmd: list[str], item: Input) -> bytes:
    return run_on_bytes(cmd, item.data, _safe_name(item.name), "spv", item.name)


def _asm_version(text: bytes) -> list[str]:
    """spirv-as writes SPIR-V 1.6 unless told otherwise; keep the version disassemblers
    record in their ``; Version: 1.4`` header, so the module links with clang's."""
    match = _ASM_VERSION.search(text[:4096])
    return ["--target-env", f"spv{match.group(1).decode()}"] if match else []


def _safe_name(name: str) -> str:
    return name if file_name_ok(name) else "input" + os.path.splitext(name)[1]


def link(modules: Sequence[bytes], names: Sequence[str]) -> bytes:
    """Links SPIR-V modules into one with spirv-link.

    Partial linkage is allowed because clang leaves some OpenCL built-ins
    (``convert_double_rtz``, the ``__spirv_BuiltIn*`` variables) as imports that only
    the JIT resolves; a user function no input defines fails later, at translation.
    """
    if len(modules) == 1:
        return modules[0]
    tool = require_tool("spirv-link", "linking several inputs into one SPIR-V module")
    with tempfile.TemporaryDirectory(prefix="spirvjit-") as tmp:
        paths = []
        for i, module in enumerate(modules):
            paths.append(os.path.join(tmp, f"{i}.spv"))
            with open(paths[-1], "wb") as f:
                f.write(module)
        out = os.path.join(tmp, "linked.spv")
        run_checked([tool, "--allow-partial-linkage", *paths, "-o", out], " + ".join(names), tmp)
        with open(out, "rb") as f:
            return f.read()


@functools.cache
def _version_line(tool: str) -> str:
    proc = subprocess.run([tool, "--version"], capture_output=True, text=True, check=False)
    lines = proc.stdout.strip().splitlines()
    return lines[0] if lines else "unknown"


def build_record(inputs: Sequence[Input], options: Sequence[str], producer: str) -> BuildRecord:
    """What made the module: producer, compiler version, flags and input digests."""
    from .. import __version__

    compiled = [i for i in inputs if i.kind in ("cl", "hip", "ll", "bc")]
    if not compiled and any(i.kind == "py" for i in inputs):
        from ..frontend.python.backend import compiler_version

        producer, compiler, version = "python", "llvmlite SPIR-V back end", compiler_version()
    elif not compiled:
        producer, compiler, version = "spirv", None, None
    elif producer == "translator" and any(i.kind == "cl" for i in compiled):
        tool = require_tool("clang15", "compiling OpenCL C with the translator producer")
        compiler, version = "clang-15 + llvm-spirv-15", _version_line(tool)
    else:
        producer = "clang"
        compiler, version = "clang-22", _version_line(require_tool("clang", "compiling"))
    digests = tuple((i.name, hashlib.sha256(i.data).hexdigest()) for i in inputs)
    return BuildRecord(
        producer=producer,
        compiler=compiler,
        compiler_version=version,
        flags=tuple(options),
        inputs=digests,
        source_digest=source_digest(digests),
        spirvjit_version=__version__,
    )


def kernel_table(program: Program, module: int = 0) -> tuple[KernelInfo, ...]:
    """The kernel table entries of ``program``'s kernels (they live in module ``module``)."""
    spirv = program.module
    signatures = program.signatures
    modes = grammar.ENUMERANTS["ExecutionMode"]
    kernels = []
    for entry in spirv.entry_points:
        if entry.name not in signatures:
            continue
        signature = signatures[entry.name]
        params = spirv.function(entry.function_id).parameters
        args = []
        for arg in signature.args:
            access = None
            if arg.index < len(params):
                attrs = {
                    d.operands[0]
                    for d in spirv.decorations_of(params[arg.index].result_id, _FUNC_PARAM_ATTR)
                }
                access = "none" if _NO_READ_WRITE in attrs else None
                access = "read_only" if _NO_WRITE in attrs else access
            type_ = None
            if arg.element_kind is not None:
                type_ = f"{arg.element_kind}{arg.element_bits}"
                type_ += f"x{arg.lanes}" if arg.lanes > 1 else ""
            args.append(ArgInfo(arg.name, arg.kind, type_, access, arg.size, arg.align))
        execution_modes = tuple(
            " ".join([modes.get(m.mode, (str(m.mode),))[0], *map(str, m.operands)])
            for m in spirv.execution_modes.get(entry.function_id, ())
        )
        kernels.append(
            KernelInfo(
                name=entry.name,
                module=module,
                args=tuple(args),
                required_work_group_size=signature.required_local_size,
                work_group_size_hint=signature.local_size_hint,
                execution_modes=tuple(sorted(execution_modes)),
                static_local_bytes=signature.static_local_bytes,
            )
        )
    return tuple(kernels)


# What ``build --launch-variants`` takes: which launch-specialised GPU code to ship next
# to the generic code (docs/ubin.md#variants).
LAUNCH_VARIANTS = ("common", "none")


def launch_variants_of(target: Target, which: str = "common") -> tuple[tuple[str, ...], ...]:
    """The launch facts of each variant to build for ``target``: () (the generic code,
    right for every launch) and, for a GPU under "common", every fact: the launch most
    programs make (whole groups, no global offset, ids below 2**31). CPU code has no
    launch facts."""
    from ..backends.gpu.abi import LAUNCH_FACTS

    if which not in LAUNCH_VARIANTS:
        raise ValueError(f"launch_variants must be one of {LAUNCH_VARIANTS}, got {which!r}")
    if target.kind == "cpu" or which == "none":
        return ((),)
    return ((), tuple(LAUNCH_FACTS))


def native_variant(
    spirv: bytes,
    target: Target,
    spec_constants: Mapping[int, object],
    module: int = 0,
    launch_facts: tuple[str, ...] = (),
    program: Program | None = None,
) -> Variant:
    """Every kernel of ``spirv`` compiled for ``target`` (CompileError/SpirvError on failure),
    specialised for ``launch_facts`` (GPU targets; () the generic code). ``program``: the
    Program of ``spirv`` on ``target`` to compile with (its translation is shared)."""
    from .. import __version__
    from ..backends.gpu.abi import launch_specialization
    from ..cache.key import compiler_digest, llvm_version

    if program is None:
        program = Program(spirv, spec_constants, target=target)
    specialization = launch_specialization(launch_facts)
    objects = {
        name: program.object_code(name, None, specialization)[0] for name in program.kernel_names
    }
    return Variant(
        target=target,
        module=module,
        spirv_sha256=program.spirv_digest,
        spec_constants=tuple(sorted(program.spec_constants.items())),
        compiler_digest=compiler_digest(),
        llvm_version=llvm_version(),
        spirvjit_version=__version__,
        objects=objects,
        launch_facts=tuple(launch_facts),
    )


def native_variants(
    spirv: bytes,
    target: Target,
    spec_constants: Mapping[int, object],
    module: int = 0,
    launch_variants: str = "common",
) -> list[Variant]:
    """The variants of ``target`` that ``launch_variants`` asks for (``launch_variants_of``),
    compiled from one translation."""
    program = Program(spirv, spec_constants, target=target)
    return [
        native_variant(spirv, target, spec_constants, module, facts, program)
        for facts in launch_variants_of(target, launch_variants)
    ]


def build_contents(
    inputs: Sequence[Input],
    *,
    options: Sequence[str] = (),
    producer: str = "clang",
    targets: Sequence[Target] = (),
    embed_source: bool = False,
    spec_constants: Mapping[int, object] | None = None,
    progress: Callable[[str], None] | None = None,
    launch_variants: str = "common",
) -> Contents:
    """Compiles and links ``inputs``, then builds a native variant per target (a GPU
    target under ``launch_variants`` "common": the generic variant and the one for the
    common launch; "none": the generic one).

    ``progress(what)``, if given, is called after each input is compiled and each
    variant built (``len(inputs) + len(set(targets))`` calls), for a progress display.
    """
    if not inputs:
        raise CompileError("nothing to build: give at least one input")
    if launch_variants not in LAUNCH_VARIANTS:  # before any compiling
        raise ValueError(
            f"launch_variants must be one of {LAUNCH_VARIANTS}, got {launch_variants!r}"
        )
    tick = progress or (lambda what: None)
    modules = []
    for item in inputs:
        modules.append(to_spirv(item, options, producer))
        tick(item.name)
    spirv = link(modules, [i.name for i in inputs])
    spec = dict(spec_constants or {})
    try:
        program = Program(spirv, spec, name=inputs[0].name)
    except SpirvError as exc:
        raise CompileError(f"the linked module cannot be run: {exc}") from exc
    variants = []
    for target in dict.fromkeys(targets):  # duplicates in --target build once
        variants += native_variants(spirv, target, spec, 0, launch_variants)
        tick(target.name)
    sources = ()
    if embed_source:
        sources = tuple(_unique_names([(i.name, i.data) for i in inputs]))
    return Contents(
        modules=(spirv,),
        kernels=kernel_table(program),
        build=build_record(inputs, options, producer),
        variants=tuple(variants),
        sources=sources,
    )


def _unique_names(files: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """Embedded sources need distinct, bare names: a.cl, a.cl from elsewhere → 1-a.cl."""
    seen: set[str] = set()
    named = []
    for i, (name, data) in enumerate(files):
        name = _safe_name(name)
        if name in seen:
            name = f"{i}-{name}"
        seen.add(name)
        named.append((name, data))
    return named
