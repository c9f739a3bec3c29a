"""``spirvjit.build`` and ``spirvjit.load``: unified binaries from Python."""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Mapping, Sequence

from .. import config
from ..errors import BinaryFormatError
from ..program import Program
from ..target import Target, host_target, parse_target
from .build import Input, build_contents
from .names import printable
from .reader import UnifiedBinary, read_file
from .select import Choice, choose, spec_key, stale_reason
from .writer import write_file

log = logging.getLogger("spirvjit")

Source = str | bytes | os.PathLike


def _inputs(sources_or_spirv: Source | Sequence[Source]) -> list[Input]:
    items = (
        [sources_or_spirv]
        if isinstance(sources_or_spirv, (str, bytes, bytearray, os.PathLike))
        else list(sources_or_spirv)
    )
    inputs = []
    for i, item in enumerate(items):
        suffix = "" if len(items) == 1 else str(i)
        if isinstance(item, os.PathLike):
            inputs.append(Input.from_path(item))
        elif isinstance(item, str):
            inputs.append(Input(f"source{suffix}.cl", item.encode("utf-8"), "cl"))
        elif isinstance(item, (bytes, bytearray)):
            inputs.append(Input(f"module{suffix}.spv", bytes(item), "spv"))
        else:
            raise TypeError(f"input {i}: expected str, bytes or a path, got {type(item).__name__}")
    return inputs


def build(
    sources_or_spirv: Source | Sequence[Source],
    path: str | os.PathLike,
    *,
    targets: Sequence[str | Target] = (),
    options: Sequence[str] = (),
    embed_source: bool = False,
    producer: str = "clang",
    spec_constants: Mapping[int, int | float | bool] | None = None,
) -> None:
    """Writes a unified binary to ``path``.

    ``sources_or_spirv``: OpenCL C source text (``str``), a SPIR-V module (``bytes``), a
    file (``pathlib.Path``: .cl, .spv, .spvasm, .ll or .bc), or a list of these, linked
    into one module. ``targets``: native variants to include, as ``Target`` objects or
    names ("host", "generic", "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4").
    ``options`` go to clang. The variants are built for ``spec_constants`` (loading
    with other values falls back to the JIT). Raises CompileError, SpirvError,
    ValueError (an unknown target name) or OSError.
    """
    if isinstance(options, str):
        raise TypeError("options must be a sequence of strings, e.g. ['-DN=4'], not one string")
    for key, value in (spec_constants or {}).items():
        if not isinstance(key, int) or not isinstance(value, (int, float, bool)):
            raise TypeError(f"spec constant {key!r}: ids are ints and values Python numbers")
    resolved = [t if isinstance(t, Target) else parse_target(t) for t in targets]
    contents = build_contents(
        _inputs(sources_or_spirv),
        options=options,
        producer=producer,
        targets=resolved,
        embed_source=embed_source,
        spec_constants=spec_constants,
    )
    write_file(contents, path)


def module_index(binary: UnifiedBinary, module: int | None) -> int:
    """``module``, checked; None means the only module (BinaryFormatError if several)."""
    if module is None:
        if binary.module_count != 1:
            raise BinaryFormatError(
                f"{binary.name} holds {binary.module_count} SPIR-V modules; pass module=INDEX"
            )
        return 0
    if not 0 <= module < binary.module_count:
        raise BinaryFormatError(
            f"{binary.name} has no module {module} (it has {binary.module_count})"
        )
    return module


def choice_for(
    binary: UnifiedBinary, module: int, spirv: bytes, spec: Mapping[int, object]
) -> Choice:
    """The variant this machine runs for ``module`` of ``binary``."""
    variants = [v for v in binary.variants if v.module == module]
    return choose(variants, host_target(), hashlib.sha256(spirv).hexdigest(), spec)


def open_program(
    source: str | os.PathLike | bytes | UnifiedBinary,
    spec_constants: Mapping[int, object] | None = None,
    module: int | None = None,
) -> tuple[Program, Choice]:
    """The Program of a unified binary with the selected native objects, and the choice."""
    if isinstance(source, UnifiedBinary):
        binary = source
    elif isinstance(source, (bytes, bytearray, memoryview)):
        binary = UnifiedBinary(bytes(source))
    else:
        binary = read_file(source)
    index = module_index(binary, module)
    spirv = binary.module(index)
    spec = dict(spec_constants or {})
    choice = choice_for(binary, index, spirv, spec)
    objects = dict(choice.variant.objects) if choice.variant is not None else {}
    if config.debug():
        picked = choice.variant.name if choice.variant is not None else "SPIR-V (JIT)"
        where = printable(binary.name)
        log.info("spirvjit: %s: runs %s: %s", where, printable(picked), printable(choice.reason))
        for name, why in choice.rejected:
            log.info("spirvjit: %s: passed over %s: %s", where, printable(name), printable(why))
    digest = hashlib.sha256(spirv).hexdigest()
    gpus = {
        v.target: v.objects
        for v in binary.variants
        if v.module == index and v.target.is_gpu and stale_reason(v, digest, spec_key(spec)) is None
    }
    program = Program(spirv, spec, name=binary.name, native_objects=objects, other_targets=gpus)
    return program, choice


def load(
    path_or_bytes: str | os.PathLike | bytes,
    spec_constants: Mapping[int, object] | None = None,
    *,
    module: int | None = None,
) -> Program:
    """Loads a unified binary: the same Program as ``compile_opencl`` gives, with the
    native variant chosen for this machine (exact, then compatible, else the JIT).

    Raises BinaryFormatError for a corrupted or hostile file, OSError when it cannot
    be read, SpirvError when its module cannot be translated.
    """
    return open_program(path_or_bytes, spec_constants, module)[0]
