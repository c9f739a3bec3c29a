"""The JSON of the metadata sections: model → JSON values, and validated JSON → model.

Decoding trusts nothing: every field is checked for presence, type and range, and a
failure raises BinaryFormatError naming the section, its byte offset and the field
(``kernel 2 'saxpy', argument 1: 'align' must be a power of two, got 3``).
"""

from __future__ import annotations

import hashlib
import re

from ..errors import BinaryFormatError
from ..target import Target
from .format import ArgInfo, BuildRecord, KernelInfo

ARG_KINDS = ("global", "constant", "local", "value", "struct")
# The fields of each object of version 1, exactly (readers refuse any other).
KERNEL_FIELDS = (
    "name",
    "module",
    "args",
    "required_work_group_size",
    "work_group_size_hint",
    "execution_modes",
    "static_local_bytes",
)
ARG_FIELDS = ("name", "kind", "type", "access", "size", "align")
BUILD_FIELDS = (
    "producer",
    "compiler",
    "compiler_version",
    "flags",
    "inputs",
    "source_digest",
    "spirvjit_version",
)
VARIANT_FIELDS = (
    "target",
    "module",
    "spirv_sha256",
    "spec_constants",
    "compiler_digest",
    "llvm_version",
    "spirvjit_version",
    "objects",
)
# Version 2 (format.LAUNCH_FACTS_VERSION): every variant also names its launch facts.
VARIANT_FIELDS_V2 = (*VARIANT_FIELDS, "launch_facts")
TARGET_FIELDS = ("kind", "triple", "cpu", "features")
ACCESS = ("read_only", "none")
_TYPE = re.compile(r"(int|float|bool)(8|16|32|64)(x(2|3|4|8|16))?")
_SHA256 = re.compile(r"[0-9a-f]{64}")
# Source file names become paths under `extract --source DIR`: no directories, no dots only.
_FILE_NAME = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]{0,254}")
MAX_DIM = 1 << 31


class Where:
    """Builds errors located in one metadata section."""

    def __init__(self, section: str, offset: int, version: int = 1):
        self.section = section
        self.offset = offset
        self.version = version  # the file's format version

    def error(self, path: str, message: str) -> BinaryFormatError:
        return BinaryFormatError(f"{self.section} section: {path}: {message}", self.offset)

    def field(self, obj: object, key: str, types: type | tuple[type, ...], path: str):
        """``obj[key]``, which must exist and be of ``types`` (bool is never an int here)."""
        if not isinstance(obj, dict):
            raise self.error(path, f"expected an object, got {type(obj).__name__}")
        if key not in obj:
            raise self.error(path, f"missing field {key!r}")
        value = obj[key]
        wanted = types if isinstance(types, tuple) else (types,)
        if isinstance(value, bool) and bool not in wanted:
            raise self.error(path, f"{key!r} must be {_names(wanted)}, got a boolean")
        if not isinstance(value, wanted):
            raise self.error(path, f"{key!r} must be {_names(wanted)}, got {type(value).__name__}")
        return value

    def exact(self, obj: object, keys: tuple[str, ...], path: str) -> dict:
        """``obj``, which must be an object with no field outside ``keys`` (a field this
        version does not define would be silently ignored otherwise; docs/ubin.md)."""
        if not isinstance(obj, dict):
            raise self.error(path, f"expected an object, got {type(obj).__name__}")
        unknown = sorted(set(obj) - set(keys))
        if unknown:
            raise self.error(
                path, f"unknown field {unknown[0]!r} (version {self.version} defines {keys})"
            )
        return obj

    def count(self, obj: object, key: str, path: str, low: int = 0, high: int = MAX_DIM) -> int:
        value = self.field(obj, key, int, path)
        if not low <= value <= high:
            raise self.error(path, f"{key!r} must be in [{low}, {high}], got {value}")
        return value

    def strings(self, obj: object, key: str, path: str) -> tuple[str, ...]:
        values = self.field(obj, key, list, path)
        for i, value in enumerate(values):
            if not isinstance(value, str):
                raise self.error(f"{path}, {key}[{i}]", "must be a string")
        return tuple(values)

    def digest(self, obj: object, key: str, path: str) -> str:
        value = self.field(obj, key, str, path)
        if not _SHA256.fullmatch(value):
            raise self.error(path, f"{key!r} must be 64 lowercase hex digits")
        return value

    def size3(self, obj: object, key: str, path: str) -> tuple[int, int, int] | None:
        value = self.field(obj, key, (list, type(None)), path)
        if value is None:
            return None
        ok = len(value) == 3 and all(
            isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_DIM for v in value
        )
        if not ok:
            raise self.error(path, f"{key!r} must be 3 positive integers, got {value!r}")
        return tuple(value)


def _names(types: tuple[type, ...]) -> str:
    return " or ".join("null" if t is type(None) else t.__name__ for t in types)


def file_name_ok(name: str) -> bool:
    """Whether ``name`` is a safe bare file name for an embedded source."""
    return bool(_FILE_NAME.fullmatch(name)) and name not in (".", "..")


# --- kernel table ----------------------------------------------------------------------------


def kernels_to_json(kernels: tuple[KernelInfo, ...]) -> dict:
    return {
        "kernels": [
            {
                "name": k.name,
                "module": k.module,
                "args": [
                    {
                        "name": a.name,
                        "kind": a.kind,
                        "type": a.type,
                        "access": a.access,
                        "size": a.size,
                        "align": a.align,
                    }
                    for a in k.args
                ],
                "required_work_group_size": list(k.required_work_group_size or ()) or None,
                "work_group_size_hint": list(k.work_group_size_hint or ()) or None,
                "execution_modes": list(k.execution_modes),
                "static_local_bytes": k.static_local_bytes,
            }
            for k in sorted(kernels, key=lambda k: (k.module, k.name))
        ]
    }


def kernels_from_json(value: object, where: Where, modules: int) -> tuple[KernelInfo, ...]:
    kernels = []
    seen: set[tuple[int, str]] = set()
    where.exact(value, ("kernels",), "top level")
    for i, k in enumerate(where.field(value, "kernels", list, "top level")):
        where.exact(k, KERNEL_FIELDS, f"kernel {i}")
        name = where.field(k, "name", str, f"kernel {i}")
        path = f"kernel {i} {name!r}"
        module = where.count(k, "module", path, 0, modules - 1)
        if (module, name) in seen:
            raise where.error(path, f"kernel {name!r} appears twice in module {module}")
        seen.add((module, name))
        args = []
        for j, a in enumerate(where.field(k, "args", list, path)):
            apath = f"{path}, argument {j}"
            where.exact(a, ARG_FIELDS, apath)
            kind = where.field(a, "kind", str, apath)
            if kind not in ARG_KINDS:
                raise where.error(apath, f"unknown kind {kind!r}; expected one of {ARG_KINDS}")
            type_ = where.field(a, "type", (str, type(None)), apath)
            if type_ is not None and not _TYPE.fullmatch(type_):
                raise where.error(apath, f"unknown type {type_!r}")
            access = where.field(a, "access", (str, type(None)), apath)
            if access is not None and access not in ACCESS:
                raise where.error(apath, f"unknown access {access!r}; expected one of {ACCESS}")
            align = where.count(a, "align", apath, 1, 1 << 16)
            if align & (align - 1):
                raise where.error(apath, f"'align' must be a power of two, got {align}")
            args.append(
                ArgInfo(
                    name=where.field(a, "name", str, apath),
                    kind=kind,
                    type=type_,
                    access=access,
                    size=where.count(a, "size", apath, 0, MAX_DIM),
                    align=align,
                )
            )
        kernels.append(
            KernelInfo(
                name=name,
                module=module,
                args=tuple(args),
                required_work_group_size=where.size3(k, "required_work_group_size", path),
                work_group_size_hint=where.size3(k, "work_group_size_hint", path),
                execution_modes=where.strings(k, "execution_modes", path),
                static_local_bytes=where.count(k, "static_local_bytes", path),
            )
        )
    return tuple(kernels)


# --- build record ----------------------------------------------------------------------------


def build_to_json(build: BuildRecord) -> dict:
    return {
        "producer": build.producer,
        "compiler": build.compiler,
        "compiler_version": build.compiler_version,
        "flags": list(build.flags),
        "inputs": [{"name": n, "sha256": d} for n, d in build.inputs],
        "source_digest": build.source_digest,
        "spirvjit_version": build.spirvjit_version,
    }


def build_from_json(value: object, where: Where) -> BuildRecord:
    where.exact(value, BUILD_FIELDS, "top level")
    inputs = []
    for i, item in enumerate(where.field(value, "inputs", list, "top level")):
        path = f"input {i}"
        where.exact(item, ("name", "sha256"), path)
        inputs.append((where.field(item, "name", str, path), where.digest(item, "sha256", path)))
    top = "top level"
    optional = (str, type(None))
    return BuildRecord(
        producer=where.field(value, "producer", str, top),
        compiler=where.field(value, "compiler", optional, top),
        compiler_version=where.field(value, "compiler_version", optional, top),
        flags=where.strings(value, "flags", top),
        inputs=tuple(inputs),
        source_digest=where.digest(value, "source_digest", top),
        spirvjit_version=where.field(value, "spirvjit_version", str, top),
    )


def source_digest(inputs: tuple[tuple[str, str], ...]) -> str:
    """One digest over every input's name and content digest, in order."""
    digest = hashlib.sha256()
    for name, sha in inputs:
        digest.update(f"{len(name)}:{name}:{sha}\n".encode())
    return digest.hexdigest()


# --- variants --------------------------------------------------------------------------------


def variant_to_json(variant, objects: dict[str, int], version: int = 1) -> dict:
    """A variant's index entry; ``objects`` maps its kernels to their section numbers.
    Version 2 entries name the launch facts (``launch_facts``, [] for generic code)."""
    t = variant.target
    extra = {"launch_facts": list(variant.launch_facts)} if version >= 2 else {}
    return {
        **extra,
        "target": {"kind": t.kind, "triple": t.triple, "cpu": t.arch, "features": t.features},
        "module": variant.module,
        "spirv_sha256": variant.spirv_sha256,
        "spec_constants": [[k, v] for k, v in variant.spec_constants],
        "compiler_digest": variant.compiler_digest,
        "llvm_version": variant.llvm_version,
        "spirvjit_version": variant.spirvjit_version,
        "objects": objects,
    }


def launch_facts_from_json(value: object, target: Target) -> tuple[tuple[str, ...], str | None]:
    """A variant's ``launch_facts`` as read (strings; anything else as its JSON), and why
    they are unusable (None if they are fine). Unusable facts reject the variant, not the
    file: a newer spirvjit may specialise on facts this one does not know, and the file's
    other variants and its SPIR-V still serve (docs/ubin.md#variants)."""
    from ..backends.gpu.abi import LAUNCH_FACTS
    from .format import canonical_json

    def spelled(item: object) -> str:
        return item if isinstance(item, str) else canonical_json(item).decode("ascii")

    if not isinstance(value, list):
        return (spelled(value),), f"'launch_facts' must be a list of names, got {spelled(value)}"
    facts = tuple(spelled(item) for item in value)
    for j, item in enumerate(value):
        if not isinstance(item, str):
            return facts, f"launch_facts[{j}] must be a name, got {spelled(item)}"
        if item not in LAUNCH_FACTS:
            known = ", ".join(LAUNCH_FACTS)
            return facts, (
                f"unknown launch fact {item!r} (this spirvjit knows {known}; "
                "written by a newer spirvjit?)"
            )
    if len(set(facts)) != len(facts):
        twice = next(f for j, f in enumerate(facts) if f in facts[:j])
        return facts, f"launch fact {twice!r} appears twice"
    if list(facts) != sorted(facts):
        return facts, f"launch facts must be sorted, got {list(facts)}"
    if facts and target.kind == "cpu":
        return facts, "launch facts apply to GPU code only, this is a CPU variant"
    return facts, None


def variant_from_json(
    value: object, where: Where, i: int, modules: int, version: int = 1
) -> tuple[dict, dict]:
    """The validated fields of variant ``i`` (for ``Variant``) and its kernel → section map.

    The structure is checked strictly (a missing or unknown field refuses the file); the
    launch facts of a version-2 entry only reject the variant (``problem``)."""
    path = f"variant {i}"
    where.exact(value, VARIANT_FIELDS_V2 if version >= 2 else VARIANT_FIELDS, path)
    t = where.field(value, "target", dict, path)
    tpath = f"{path}, target"
    where.exact(t, TARGET_FIELDS, tpath)
    target = Target(
        kind=where.field(t, "kind", str, tpath),
        triple=where.field(t, "triple", str, tpath),
        arch=where.field(t, "cpu", str, tpath),
        features=where.field(t, "features", str, tpath),
    )
    spec = []
    for j, pair in enumerate(where.field(value, "spec_constants", list, path)):
        ok = (
            isinstance(pair, list)
            and len(pair) == 2
            and isinstance(pair[0], int)
            and not isinstance(pair[0], bool)
            and 0 <= pair[0] < 1 << 32
            and isinstance(pair[1], (int, float, bool))
        )
        if not ok:
            raise where.error(f"{path}, spec_constants[{j}]", "must be [SpecId, number]")
        spec.append((pair[0], pair[1]))
    objects = where.field(value, "objects", dict, path)
    for kernel, section in objects.items():
        if not isinstance(section, int) or isinstance(section, bool):
            raise where.error(f"{path}, object {kernel!r}", "section number must be an integer")
    fields = {
        "target": target,
        "module": where.count(value, "module", path, 0, modules - 1),
        "spirv_sha256": where.digest(value, "spirv_sha256", path),
        "spec_constants": tuple(spec),
        "compiler_digest": where.digest(value, "compiler_digest", path),
        "llvm_version": where.field(value, "llvm_version", str, path),
        "spirvjit_version": where.field(value, "spirvjit_version", str, path),
    }
    if version >= 2:
        if "launch_facts" not in value:
            raise where.error(path, "missing field 'launch_facts'")
        facts, problem = launch_facts_from_json(value["launch_facts"], target)
        fields["launch_facts"] = facts
        fields["problem"] = None if problem is None else f"{path} ({target}): {problem}"
    return fields, objects


def sources_from_json(value: object, where: Where) -> dict[str, int]:
    """The embedded sources' names → section numbers."""
    found: dict[str, int] = {}
    where.exact(value, ("sources",), "top level")
    for i, item in enumerate(where.field(value, "sources", list, "top level")):
        path = f"source {i}"
        where.exact(item, ("name", "section"), path)
        name = where.field(item, "name", str, path)
        if not file_name_ok(name):
            raise where.error(path, f"unsafe file name {name!r}")
        if name in found:
            raise where.error(path, f"source {name!r} appears twice")
        found[name] = where.field(item, "section", int, path)
    return found
