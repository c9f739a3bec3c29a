"""What an AMD GPU code object (HSA code object v4/v5, as clang builds for HIP) says
about its kernels: the ``amdhsa.kernels`` list of its NT_AMDGPU_METADATA note.

The note is MessagePack (the AMDGPU backend's "code object metadata"); each kernel has
its ``.name``, ``.symbol`` (the kernel descriptor), ``.args`` (``.offset``, ``.size``,
``.value_kind``: ``global_buffer``, ``by_value``, ``dynamic_shared_pointer``, and the
``hidden_*`` arguments the HIP runtime fills), ``.kernarg_segment_size``,
``.max_flat_workgroup_size``, ``.uniform_work_group_size`` and ``.wavefront_size``.

The file may come from anyone (``spirvjit inspect`` reads it before any trust decision),
so both readers are bounded: every offset and length is checked against the data, the
MessagePack reader nests at most 16 deep, reads at most 2**20 values and never allocates
more elements than there are bytes left; anything else is a BinaryFormatError.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ...errors import BinaryFormatError

NT_AMDGPU_METADATA = 32
_SHT_NOTE = 7
_MAX_DEPTH = 16
_MAX_VALUES = 1 << 20


@dataclass(frozen=True, slots=True)
class KernelArg:
    offset: int
    size: int
    value_kind: str  # "global_buffer", "by_value", "hidden_block_count_x", ...

    @property
    def hidden(self) -> bool:
        """Filled by the HIP runtime, not passed by the caller."""
        return self.value_kind.startswith("hidden_")


@dataclass(frozen=True, slots=True)
class KernelInfo:
    name: str
    symbol: str
    args: tuple[KernelArg, ...]
    kernarg_segment_size: int
    max_flat_workgroup_size: int
    uniform_work_group_size: bool
    group_segment_fixed_size: int
    wavefront_size: int

    @property
    def explicit_args(self) -> tuple[KernelArg, ...]:
        """The arguments a launch passes (kernelParams), in order."""
        return tuple(a for a in self.args if not a.hidden)


def kernels(image: bytes, what: str = "code object") -> dict[str, KernelInfo]:
    """The kernels of the code object ``image`` by name; BinaryFormatError when it is not
    a 64-bit little-endian ELF file with a well-formed AMDGPU metadata note."""
    metadata = decode_msgpack(metadata_note(image, what), what)
    if not isinstance(metadata, dict) or not isinstance(metadata.get("amdhsa.kernels"), list):
        raise BinaryFormatError(f"{what}: its AMDGPU metadata has no amdhsa.kernels list")
    found: dict[str, KernelInfo] = {}
    for entry in metadata["amdhsa.kernels"]:
        if not isinstance(entry, dict):
            raise BinaryFormatError(f"{what}: a kernel's metadata is not a map")
        info = _kernel(entry, what)
        found[info.name] = info
    return found


def _field(entry: dict, key: str, kind: type, what: str, default=None):
    value = entry.get(key, default)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise BinaryFormatError(f"{what}: kernel metadata field {key} is missing or malformed")
    return value


def _kernel(entry: dict, what: str) -> KernelInfo:
    name = _field(entry, ".name", str, what)
    where = f"{what}, kernel {name}"
    args = []
    for arg in _field(entry, ".args", list, where, []):
        if not isinstance(arg, dict):
            raise BinaryFormatError(f"{where}: an argument's metadata is not a map")
        args.append(
            KernelArg(
                _field(arg, ".offset", int, where),
                _field(arg, ".size", int, where),
                _field(arg, ".value_kind", str, where),
            )
        )
    return KernelInfo(
        name=name,
        symbol=_field(entry, ".symbol", str, where),
        args=tuple(args),
        kernarg_segment_size=_field(entry, ".kernarg_segment_size", int, where),
        max_flat_workgroup_size=_field(entry, ".max_flat_workgroup_size", int, where, 1024),
        uniform_work_group_size=bool(_field(entry, ".uniform_work_group_size", int, where, 0)),
        group_segment_fixed_size=_field(entry, ".group_segment_fixed_size", int, where, 0),
        wavefront_size=_field(entry, ".wavefront_size", int, where, 64),
    )


def metadata_note(image: bytes, what: str = "code object") -> bytes:
    """The descriptor of the NT_AMDGPU_METADATA note ("AMDGPU") of an ELF file."""
    data = bytes(image)
    try:
        if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise BinaryFormatError(f"{what}: not a 64-bit little-endian ELF file")
        (shoff,) = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
        if shentsize < 64 or shoff + shnum * shentsize > len(data):
            raise BinaryFormatError(f"{what}: its section table lies outside the file")
        for i in range(shnum):
            _name, kind, _flags, _addr, offset, size = struct.unpack_from(
                "<IIQQQQ", data, shoff + i * shentsize
            )
            if kind != _SHT_NOTE:
                continue
            if offset + size > len(data):
                raise BinaryFormatError(f"{what}: a note section lies outside the file")
            found = _find_note(data[offset : offset + size])
            if found is not None:
                return found
    except struct.error:
        raise BinaryFormatError(f"{what}: truncated ELF headers") from None
    raise BinaryFormatError(f"{what}: no AMDGPU metadata note (not an AMD GPU code object)")


def _find_note(notes: bytes) -> bytes | None:
    pos = 0
    while pos + 12 <= len(notes):
        namesz, descsz, kind = struct.unpack_from("<III", notes, pos)
        name_at = pos + 12
        desc_at = name_at + (namesz + 3) // 4 * 4
        end = desc_at + (descsz + 3) // 4 * 4
        if desc_at + descsz > len(notes):
            return None
        if kind == NT_AMDGPU_METADATA and notes[name_at : name_at + namesz] == b"AMDGPU\0":
            return notes[desc_at : desc_at + descsz]
        pos = end
    return None


# ----- MessagePack, the subset the metadata uses (no extension types) ----------------------

_FIXED = {0xCC: "<B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b", 0xD1: ">h", 0xD2: ">i"}
_FIXED.update({0xD3: ">q", 0xCA: ">f", 0xCB: ">d"})


class _Reader:
    def __init__(self, data: bytes, what: str):
        self.data, self.pos, self.what, self.values = data, 0, what, 0

    def fail(self, why: str) -> BinaryFormatError:
        return BinaryFormatError(f"{self.what}: malformed AMDGPU metadata ({why})")

    def take(self, n: int) -> bytes:
        if n > len(self.data) - self.pos:
            raise self.fail(f"{n} bytes needed at offset {self.pos}, the note ends first")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def count(self, n: int) -> int:
        # Every element takes at least one byte: a count beyond the bytes left is a lie.
        if n > len(self.data) - self.pos:
            raise self.fail(f"a container of {n} elements in {len(self.data) - self.pos} bytes")
        return n

    def value(self, depth: int = 0):
        if depth > _MAX_DEPTH:
            raise self.fail(f"nested more than {_MAX_DEPTH} deep")
        self.values += 1
        if self.values > _MAX_VALUES:
            raise self.fail(f"more than {_MAX_VALUES} values")
        tag = self.take(1)[0]
        if tag <= 0x7F:
            return tag
        if tag >= 0xE0:
            return tag - 0x100
        if 0x80 <= tag <= 0x8F:
            return self.map(tag & 0x0F, depth)
        if 0x90 <= tag <= 0x9F:
            return self.array(tag & 0x0F, depth)
        if 0xA0 <= tag <= 0xBF:
            return self.string(tag & 0x1F)
        if tag in _FIXED:
            return self.unpack(_FIXED[tag])
        simple = {0xC0: None, 0xC2: False, 0xC3: True}
        if tag in simple:
            return simple[tag]
        lengths = {0xD9: ">B", 0xDA: ">H", 0xDB: ">I", 0xC4: ">B", 0xC5: ">H", 0xC6: ">I"}
        if tag in lengths:
            n = self.unpack(lengths[tag])
            return self.string(n) if tag >= 0xD9 else self.take(n)
        if tag in (0xDC, 0xDD):
            return self.array(self.unpack(">H" if tag == 0xDC else ">I"), depth)
        if tag in (0xDE, 0xDF):
            return self.map(self.unpack(">H" if tag == 0xDE else ">I"), depth)
        raise self.fail(f"type byte 0x{tag:02x} at offset {self.pos - 1}")

    def string(self, n: int) -> str:
        try:
            return self.take(n).decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail("a string is not UTF-8") from None

    def array(self, n: int, depth: int) -> list:
        return [self.value(depth + 1) for _ in range(self.count(n))]

    def map(self, n: int, depth: int) -> dict:
        found = {}
        for _ in range(self.count(n)):
            key = self.value(depth + 1)
            if not isinstance(key, (str, int)):
                raise self.fail("a map key is not a string or an integer")
            found[key] = self.value(depth + 1)
        return found


def decode_msgpack(data: bytes, what: str = "code object"):
    """The one MessagePack value ``data`` holds (bounded: see the module docstring)."""
    reader = _Reader(bytes(data), what)
    value = reader.value()
    if reader.pos != len(reader.data):
        raise reader.fail(f"{len(reader.data) - reader.pos} bytes after the value")
    return value
