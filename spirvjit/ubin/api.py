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
from .trust import check_policy, judge
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
    launch_variants: str = "common",
) -> None:
    """Writes a unified binary to ``path``.

    ``sources_or_spirv``: OpenCL C source text (``str``), a SPIR-V module (``bytes``), a
    file (``pathlib.Path``: .cl, .spv, .spvasm, .ll or .bc), or a list of these, linked
    into one module. ``targets``: native variants to include, as ``Target`` objects or
    names ("host", "generic", "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4").
    ``options`` go to clang. The variants are built for ``spec_constants`` (loading
    with other values falls back to the JIT). ``launch_variants``: for GPU targets,
    "common" (default) ships, next to the generic code, code specialised for the common
    launch (whole work-groups, no global offset, ids below 2**31), which such launches
    run; "none" ships the generic code only (a smaller, version-1 file). Raises
    CompileError, SpirvError, ValueError (an unknown target name or launch_variants) or
    OSError.
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
        launch_variants=launch_variants,
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


def gpu_variants(
    binary: UnifiedBinary, module: int, spirv_sha256: str, spec: Mapping[int, object]
) -> tuple[dict, tuple[tuple[str, str], ...]]:
    """The GPU code of ``module`` that can run here, by target, then by specialization
    (``KernelKey.specialization`` of the variant's launch facts; () the generic code),
    then kernel; and the variants passed over, with why: stale, or launch facts this
    spirvjit cannot use (its writer never writes such: a warning names file and entry)."""
    from ..backends.gpu.abi import launch_specialization

    found: dict = {}
    rejected = []
    for v in binary.variants:
        if v.module != module or v.target.kind == "cpu":
            continue
        why = stale_reason(v, spirv_sha256, spec_key(spec))
        if why is None and v.problem is not None:
            why = v.problem
            log.warning(
                "spirvjit: %s: ignoring a native variant: %s; launches it would serve run "
                "the generic code, or JIT",
                printable(binary.name),
                printable(why),
            )
        if why is not None:
            rejected.append((v.name, why))
            continue
        found.setdefault(v.target, {})[launch_specialization(v.launch_facts)] = v.objects
    return found, tuple(rejected)


_warned: set[str] = set()


def overrule(choice: Choice, why: str) -> Choice:
    """``choice`` with its native variant refused by the trust policy: the kernels JIT."""
    rejected = ((choice.variant.name, f"not trusted: {why}"),) if choice.variant else ()
    return Choice(None, "jit", f"native code not trusted: {why}", choice.rejected + rejected)


def _warn_untrusted(binary: UnifiedBinary, why: str) -> None:
    """One warning per file and process: its native code is not used, and what to do."""
    topic = binary.path or "<bytes>"
    if topic in _warned:
        return
    _warned.add(topic)
    log.warning(
        "spirvjit: %s: not running its native code (%s); its kernels JIT from the SPIR-V. "
        "Sign it (spirvjit sign), or trust it with SPIRVJIT_NATIVE=always or "
        "load(..., native='always') if you know where it came from",
        printable(binary.name),
        printable(why),
    )


def _warn_untrusted_bundle(source, name: str, why: str) -> None:
    """One warning per file and process: a bundle's native entries are not used."""
    topic = os.path.realpath(source) if not isinstance(source, (bytes, bytearray)) else name
    if topic in _warned:
        return
    _warned.add(topic)
    log.warning(
        "spirvjit: %s: not running its native gfx code objects (%s); its kernels JIT from "
        "the amdgcnspirv entry. Trust it with SPIRVJIT_NATIVE=always or "
        "load(..., native='always') if you know where it came from",
        printable(name),
        printable(why),
    )


def open_program(
    source: str | os.PathLike | bytes | UnifiedBinary,
    spec_constants: Mapping[int, object] | None = None,
    module: int | None = None,
    native: str | None = None,
) -> tuple[Program, Choice]:
    """The Program of a unified binary with the selected native objects, and the choice.

    ``native`` is the trust policy (``trust.judge``; None: ``SPIRVJIT_NATIVE``).
    """
    policy = check_policy(native)  # a bad value fails before any file is read
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
    gpus, gpu_rejected = gpu_variants(binary, index, hashlib.sha256(spirv).hexdigest(), spec)
    if choice.variant is not None or gpus:
        trust = judge(binary, policy)
        if not trust.allowed:
            if policy == "trusted":  # "never" is the user's own choice: no warning
                _warn_untrusted(binary, trust.reason)
            choice, gpus = overrule(choice, trust.reason), {}
    objects = dict(choice.variant.objects) if choice.variant is not None else {}
    if config.debug():
        picked = choice.variant.name if choice.variant is not None else "SPIR-V (JIT)"
        where = printable(binary.name)
        log.info("spirvjit: %s: runs %s: %s", where, printable(picked), printable(choice.reason))
        for name, why in choice.rejected + gpu_rejected:
            log.info("spirvjit: %s: passed over %s: %s", where, printable(name), printable(why))
    program = Program(spirv, spec, name=binary.name, native_objects=objects, other_targets=gpus)
    return program, choice


def load(
    path_or_bytes: str | os.PathLike | bytes,
    spec_constants: Mapping[int, object] | None = None,
    *,
    module: int | None = None,
    native: str | None = None,
) -> Program:
    """Loads a unified binary: the same Program as ``compile_opencl`` gives, with the
    native variant chosen for this machine (exact, then compatible, else the JIT).

    ``native`` says whose native code may run (default: ``SPIRVJIT_NATIVE``, else
    "trusted"): "never"; "trusted", only from a file no other user can write or swap, or
    signed by a trusted key (bytes have no location: only a signature vouches for them);
    "always". Untrusted native code is not loaded: the kernels JIT from the SPIR-V, with
    one warning. See docs/threat-model.md.

    Also reads ROCm's files: a clang offload bundle, or an ELF object, executable or
    shared object with a ``.hip_fatbin`` section: their amdgcnspirv entry runs on every
    device, and a native ``gfx*`` entry on the AMD GPUs it matches when ``native`` allows
    (a bundle has no signature: under "trusted" only its location vouches for it).

    Raises BinaryFormatError for a corrupted or hostile file, OSError when it cannot
    be read, SpirvError when its module cannot be translated, ValueError for an unknown
    ``native``.
    """
    if not isinstance(path_or_bytes, UnifiedBinary):
        from ..offload_bundle import native_trust, open_offload_file, spirv_entry

        offload = open_offload_file(path_or_bytes)
        if offload is not None:
            spirv = spirv_entry(offload.entries, offload.name)
            gfx = [e for e in offload.entries if e.kind == "gfx" and e.data]
            allowed, why = native_trust(offload.location_problem, native)
            if gfx and not allowed:
                if check_policy(native) == "trusted":  # "never" is the user's own choice
                    _warn_untrusted_bundle(path_or_bytes, offload.name, why)
                gfx = []
            return Program(spirv, spec_constants, name=offload.name, offload_code=gfx)
    return open_program(path_or_bytes, spec_constants, module, native)[0]
