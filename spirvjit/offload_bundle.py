"""ROCm's own files: clang offload bundles and the ``.hip_fatbin`` section.

``hipcc``/``clang -x hip`` put device code in a *clang offload bundle*: the magic
``__CLANG_OFFLOAD_BUNDLE__``, a little-endian u64 entry count, then per entry a u64
offset, u64 size, u64 id length and the id (``hip-spirv64-amd-amdhsa--amdgcnspirv``,
``hipv4-amdgcn-amd-amdhsa--gfx942``, ``host-x86_64-unknown-linux-gnu-``). A device-only
compile (``--cuda-device-only -c``) writes the bundle as the file; a host object,
executable or shared object carries it in its ``.hip_fatbin`` ELF section (one bundle
per translation unit, each 4096-byte aligned).

``spirvjit.load()`` runs the ``amdgcnspirv`` entry (SPIR-V) on any target, and a native
``gfx*`` entry (an AMD code object) on an AMD GPU it matches (``native_entry``: the
processor, and each feature setting the entry names, as the HIP runtime matches them)
when the native-code policy allows (``native_trust``; docs/threat-model.md). ``spirvjit
inspect`` lists the entries and which one runs where.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from .errors import BinaryFormatError

MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
COMPRESSED_MAGIC = b"CCOB"
SPIRV_ENTRY = "hip-spirv64-amd-amdhsa--amdgcnspirv"
_ELF_MAGIC = b"\x7fELF"
FATBIN_SECTION = ".hip_fatbin"


@dataclass(frozen=True, slots=True)
class BundleEntry:
    id: str
    data: bytes = field(repr=False)

    @property
    def kind(self) -> str:
        """ "spirv" (amdgcnspirv), "gfx" (a native AMD code object), "host" or "other"."""
        if self.id == SPIRV_ENTRY or self.id.endswith("--amdgcnspirv"):
            return "spirv"
        if self.id.startswith("host-"):
            return "host"
        if "amdgcn-amd-amdhsa" in self.id:
            return "gfx"
        return "other"

    @property
    def processor(self) -> str:
        """The offload arch after ``--`` (``gfx942:xnack+``, ``amdgcnspirv``)."""
        return self.id.split("--", 1)[1] if "--" in self.id else ""


def split_arch(name: str) -> tuple[str, dict[str, str]]:
    """ "gfx942:sramecc+:xnack-" -> ("gfx942", {"sramecc": "+", "xnack": "-"})."""
    processor, *settings = name.split(":")
    return processor, {s[:-1]: s[-1] for s in settings if len(s) > 1 and s[-1] in "+-"}


def entry_matches(entry_arch: str, device_arch: str) -> bool:
    """Whether code built for ``entry_arch`` runs on a device reporting ``device_arch``, as
    the HIP runtime decides: the same processor, and every feature setting the entry
    names (``xnack-``, ``sramecc+``) is the device's; a feature the entry leaves out
    matches either setting."""
    processor, features = split_arch(entry_arch)
    device_processor, device_features = split_arch(device_arch)
    if processor != device_processor:
        return False
    return all(device_features.get(name) == value for name, value in features.items())


def native_entry(entries, device_arch: str) -> BundleEntry | None:
    """The native code object entry for an AMD GPU reporting ``device_arch`` (e.g.
    "gfx942:sramecc+:xnack-"), or None; of several that match, the one naming the most
    feature settings (the HIP runtime prefers the most specific code object)."""
    found = [
        e for e in entries if e.kind == "gfx" and e.data and entry_matches(e.processor, device_arch)
    ]
    return max(found, key=lambda e: len(split_arch(e.processor)[1]), default=None)


def native_trust(location_problem: str | None, policy: str | None) -> tuple[bool, str]:
    """Whether a bundle's native entries may run under the native-code ``policy``
    (``SPIRVJIT_NATIVE`` when None), and why in words. A bundle has no signature, so under
    "trusted" only its location vouches for it (docs/threat-model.md)."""
    from .ubin.trust import check_policy

    policy = check_policy(policy)
    if policy == "never":
        return False, "native code is off (native=never)"
    if policy == "always":
        return True, "native code is always trusted (native=always)"
    if location_problem is None:
        return True, "its location is safe (no other user can write it or swap it)"
    return False, f"{location_problem}; offload bundles carry no signature"


def is_offload_file(data: bytes) -> bool:
    """Whether ``data`` is a bundle or an ELF file with a ``.hip_fatbin`` section."""
    head = bytes(data[:24])
    if head.startswith((MAGIC, COMPRESSED_MAGIC)):
        return True
    return head.startswith(_ELF_MAGIC) and _elf_section(data, FATBIN_SECTION) is not None


def read_entries(data: bytes, what: str = "file") -> list[BundleEntry]:
    """Every entry of the bundle ``data``, or of each bundle in an ELF ``.hip_fatbin``."""
    data = bytes(data)
    if data.startswith(_ELF_MAGIC):
        section = _elf_section(data, FATBIN_SECTION)
        if section is None:
            raise BinaryFormatError(f"{what}: an ELF file without a {FATBIN_SECTION} section")
        entries: list[BundleEntry] = []
        start = section.find(MAGIC)
        while start >= 0:
            found, end = _parse_bundle(section, start, what)
            entries += found
            start = section.find(MAGIC, max(end, start + len(MAGIC)))
        if not entries:
            compressed = COMPRESSED_MAGIC in section[:64]
            raise BinaryFormatError(f"{what}: {FATBIN_SECTION} holds no bundle" + _why(compressed))
        return entries
    if data.startswith(COMPRESSED_MAGIC):
        raise BinaryFormatError(f"{what}: a compressed offload bundle" + _why(True))
    if not data.startswith(MAGIC):
        raise BinaryFormatError(f"{what}: not a clang offload bundle")
    return _parse_bundle(data, 0, what)[0]


def _why(compressed: bool) -> str:
    if not compressed:
        return ""
    return (
        " (compressed bundles are not read yet: unbundle it with clang-offload-bundler-22 "
        "--unbundle --type=o --targets=" + SPIRV_ENTRY + ")"
    )


def _parse_bundle(data: bytes, start: int, what: str) -> tuple[list[BundleEntry], int]:
    """The entries of the bundle at ``start`` and the offset just past its last entry."""
    pos = start + len(MAGIC)
    try:
        (count,) = struct.unpack_from("<Q", data, pos)
        pos += 8
        if count > 4096:
            raise BinaryFormatError(f"{what}: offload bundle claims {count} entries")
        entries, end = [], pos
        for _ in range(count):
            offset, size, id_size = struct.unpack_from("<QQQ", data, pos)
            pos += 24
            ident = data[pos : pos + id_size].decode("ascii")
            pos += id_size
            begin = start + offset
            if id_size > 1024 or begin + size > len(data):
                raise BinaryFormatError(f"{what}: offload bundle entry {ident!r} is cut short")
            entries.append(BundleEntry(ident, data[begin : begin + size]))
            end = max(end, begin + size)
    except (struct.error, UnicodeDecodeError) as exc:
        raise BinaryFormatError(f"{what}: malformed offload bundle ({exc})") from None
    return entries, end


def spirv_entry(entries: list[BundleEntry], what: str = "file") -> bytes:
    """The amdgcnspirv module; BinaryFormatError naming the entries when there is none."""
    found = [e for e in entries if e.kind == "spirv" and e.data]
    if not found:
        ids = ", ".join(e.id for e in entries) or "none"
        raise BinaryFormatError(
            f"{what}: no {SPIRV_ENTRY} entry (entries: {ids}); spirvjit runs HIP code "
            "compiled with --offload-arch=amdgcnspirv"
        )
    if len({e.data for e in found}) > 1:
        raise BinaryFormatError(
            f"{what}: {len(found)} different amdgcnspirv modules (several translation units); "
            "link their device code into one (-fgpu-rdc) or unbundle one of them"
        )
    return found[0].data


def _elf_section(data: bytes, wanted: str) -> bytes | None:
    """The contents of section ``wanted`` of a 64-bit little-endian ELF file, or None."""
    try:
        if data[4] != 2 or data[5] != 1:  # ELFCLASS64, ELFDATA2LSB
            return None
        (shoff,) = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        if not shoff or shentsize < 64:
            return None

        def header(i: int) -> tuple[int, int, int, int]:
            name, kind, _flags, _addr, offset, size = struct.unpack_from(
                "<IIQQQQ", data, shoff + i * shentsize
            )
            return name, kind, offset, size

        _, _, str_off, str_size = header(shstrndx)
        names = data[str_off : str_off + str_size]
        for i in range(shnum):
            name, kind, offset, size = header(i)
            end = names.find(b"\0", name)
            if names[name:end].decode("latin-1") == wanted and kind != 8:  # not SHT_NOBITS
                return data[offset : offset + size]
    except (struct.error, IndexError):
        return None
    return None


def foreign_format(raw: bytes) -> str | None:
    """What ``raw`` is when it is a HIP file rather than SPIR-V, with the command to use."""
    head = bytes(raw[:24])
    if head.startswith((MAGIC, COMPRESSED_MAGIC)):
        return (
            "a clang offload bundle (HIP device code), not SPIR-V; load it with "
            "spirvjit.load(path) or list its entries with `spirvjit inspect FILE`"
        )
    if head.startswith(_ELF_MAGIC) and _elf_section(raw, FATBIN_SECTION) is not None:
        return (
            f"an ELF file with HIP device code ({FATBIN_SECTION}), not SPIR-V; load it with "
            "spirvjit.load(path) or list its entries with `spirvjit inspect FILE`"
        )
    return None


def describe_entries(
    entries: list[BundleEntry],
    name: str,
    elf: bool = False,
    trust: tuple[bool, str] | None = None,
    devices=(),
) -> str:
    """``spirvjit inspect``'s listing of a bundle (``elf``: found in ``.hip_fatbin``):
    its entries, then which entry runs on which device: ``trust`` is ``native_trust``'s
    decision, ``devices`` the devices present (``spirvjit.devices()``)."""
    where = f"ELF file, {FATBIN_SECTION}: " if elf else ""
    lines = [f"{name}: {where}clang offload bundle, {len(entries)} entries"]
    for e in entries:
        note = {
            "spirv": "SPIR-V: JIT-compiled for every device without a native entry",
            "gfx": f"native AMD code object for {e.processor}",
            "host": "host code",
        }.get(e.kind, "")
        lines.append(f"  {e.id}: {len(e.data)} bytes" + (f" ({note})" if note else ""))
    spirv = next((e.id for e in entries if e.kind == "spirv" and e.data), None)
    native = [e for e in entries if e.kind == "gfx" and e.data]
    jit = f"{spirv} (JIT-compiled)" if spirv else "nothing (no amdgcnspirv entry)"
    lines.append("runs:")
    if native and trust is not None:
        verdict = "allowed" if trust[0] else "refused"
        lines.append(f"  native entries: {verdict}: {trust[1]}")
    allowed = trust is None or trust[0]
    for e in native:
        if allowed:
            lines.append(f"  AMD GPUs matching {e.processor}: {e.id} (native code)")
    lines.append(f"  every other device: {jit}")
    for device in devices:
        arch = device.target.name
        found = native_entry(native, arch) if device.kind == "amd" and allowed else None
        what = f"{found.id} (native code)" if found is not None else jit
        where = device.name if device.kind == "cpu" else f"{device.name} ({arch})"
        lines.append(f"  here, {where}: {what}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class OffloadFile:
    entries: list[BundleEntry]
    name: str
    elf: bool  # found in an ELF file's .hip_fatbin
    location_problem: str | None  # why its location does not vouch for it (None: safe)


FROM_BYTES = "it was given as bytes, not read from a file"


def open_offload_file(source) -> OffloadFile | None:
    """The bundle (or ELF file with ``.hip_fatbin``) ``source``, a path or bytes, with its
    location judged from the file actually read (``safe_paths``); None for anything else
    (a unified binary, say)."""
    import os

    from .safe_paths import file_problem, parents_problem

    if isinstance(source, (bytes, bytearray, memoryview)):
        data, name = bytes(source), "bundle"
        if not is_offload_file(data):
            return None
        return OffloadFile(read_entries(data, name), name, data[:4] == _ELF_MAGIC, FROM_BYTES)
    path = os.fspath(source)
    real = os.path.realpath(path)
    with open(real, "rb") as f:
        head = f.read(24)
        if not head.startswith((MAGIC, COMPRESSED_MAGIC, _ELF_MAGIC)):
            return None
        data = head + f.read()
        status = os.fstat(f.fileno())
    if not is_offload_file(data):
        return None
    name = os.path.basename(path)
    try:
        problem = file_problem(status) or parents_problem(real, status)
    except OSError as exc:
        problem = f"its directories cannot be examined ({exc})"
    if problem is not None and not problem.startswith("its "):
        problem = f"the file {problem}"
    return OffloadFile(read_entries(data, name), name, head.startswith(_ELF_MAGIC), problem)


def read_offload_file(source) -> tuple[list[BundleEntry], str] | None:
    """(entries, name) when ``source`` (a path or bytes) is a bundle or an ELF file with
    ``.hip_fatbin``; None for anything else (a unified binary, say)."""
    found = open_offload_file(source)
    return None if found is None else (found.entries, found.name)
