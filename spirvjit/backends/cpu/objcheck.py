"""Checks on a host object file before it is linked into the process: that it is the
kernel it claims to be.

A kernel's object (from a unified binary or a cache entry) must be an ELF relocatable
file that defines exactly one global symbol, the kernel's runner, and no initializer or
finalizer sections. Anything else (another kernel's runner, an object that also defines
``malloc`` or ``PyEval_*`` for other code to bind to, constructors) is refused before
LLVM sees it: the caller JITs the kernel from its SPIR-V instead. The ELF is read here,
in Python, with every offset and count bounded, so a damaged object cannot crash the
process in LLVM's object reader on the way to being refused.

Objects of non-ELF platforms (Mach-O, COFF) are not checked here.
"""

from __future__ import annotations

import ctypes
import hashlib
import re
import struct
from dataclasses import dataclass

import llvmlite.binding as llvm

from ...errors import CompileError

_SHT_SYMTAB = 2
_SHT_INIT_ARRAY, _SHT_FINI_ARRAY, _SHT_PREINIT_ARRAY = 14, 15, 16
_INIT_SECTIONS = (
    ".init_array",
    ".fini_array",
    ".preinit_array",
    ".ctors",
    ".dtors",
    ".init",
    ".fini",
)
_STB_LOCAL = 0
_SHN_UNDEF = 0
_MAX_SECTIONS = 1 << 16
_MAX_SYMBOLS = 1 << 20


class NativeCodeRefused(CompileError):
    """Object code from a unified binary or the cache that must not be (or could not be)
    linked: the kernel is JIT-compiled from its SPIR-V instead."""


@dataclass(frozen=True, slots=True)
class ObjectSymbols:
    defined: tuple[str, ...]  # global and weak symbols the object defines
    undefined: tuple[str, ...]  # symbols it needs from elsewhere
    init_sections: tuple[str, ...]  # initializer/finalizer sections it has


def _elf_target(triple: str) -> bool:
    return not any(os in triple for os in ("darwin", "macos", "ios", "windows", "win32"))


# (ELF class, byte order) -> file header (after e_ident), section header, symbol.
_LAYOUTS = {
    (bits, order): tuple(
        struct.Struct(("<" if order == 1 else ">") + layout)
        for layout in (
            ("HHIQQQIHHHHHH", "IIQQQQIIQQ", "IBBHQQ")
            if bits == 2
            else ("HHIIIIIHHHHHH", "IIIIIIIIII", "IIIBBH")
        )
    )
    for bits in (1, 2)
    for order in (1, 2)
}


def read_symbols(obj: bytes) -> ObjectSymbols:
    """The symbols of an ELF relocatable object; ValueError saying what is wrong."""
    if len(obj) < 64 or obj[:4] != b"\x7fELF":
        raise ValueError("not an ELF object")
    bits, order = obj[4], obj[5]
    if bits not in (1, 2) or order not in (1, 2):
        raise ValueError("bad ELF class or byte order")
    header, section, symbol = _LAYOUTS[bits, order]
    fields = header.unpack_from(obj, 16)
    e_type, shoff, shentsize, shnum, shstrndx = (
        fields[0],
        fields[5],
        fields[10],
        fields[11],
        fields[12],
    )
    if e_type != 1:
        raise ValueError(f"ELF type {e_type}, not a relocatable object")
    if shentsize != section.size or not 0 < shnum <= _MAX_SECTIONS:
        raise ValueError("bad ELF section header table")
    if shoff + shnum * shentsize > len(obj) or shstrndx >= shnum:
        raise ValueError("ELF section header table out of bounds")

    def sect(i: int) -> tuple:
        return section.unpack_from(obj, shoff + i * shentsize)

    def blob(offset: int, size: int, what: str) -> bytes:
        if offset + size > len(obj):
            raise ValueError(f"ELF {what} out of bounds")
        return obj[offset : offset + size]

    def string(table: bytes, at: int) -> str:
        if at >= len(table):
            raise ValueError("ELF string out of bounds")
        stop = table.find(b"\0", at)
        return table[at : stop if stop >= 0 else len(table)].decode("utf-8", "replace")

    names = sect(shstrndx)
    shstrtab = blob(names[4], names[5], "section names")
    symtabs, inits = [], []
    for i in range(shnum):
        name, kind, _, _, offset, size, link, _, _, entsize = sect(i)
        section_name = string(shstrtab, name) if i else ""
        base = section_name.removeprefix(".rela").removeprefix(".rel")
        named = base in _INIT_SECTIONS or any(base.startswith(p + ".") for p in _INIT_SECTIONS)
        if named or kind in (_SHT_INIT_ARRAY, _SHT_FINI_ARRAY, _SHT_PREINIT_ARRAY):
            inits.append(section_name)
        if kind == _SHT_SYMTAB:
            symtabs.append((offset, size, link, entsize))
    if len(symtabs) != 1:
        raise ValueError(f"{len(symtabs)} symbol tables, expected 1")
    offset, size, link, entsize = symtabs[0]
    if entsize != symbol.size or size % symbol.size or size // symbol.size > _MAX_SYMBOLS:
        raise ValueError("bad ELF symbol table")
    if link >= shnum:
        raise ValueError("ELF symbol table names no string table")
    strings = sect(link)
    strtab = blob(strings[4], strings[5], "symbol names")
    table = blob(offset, size, "symbol table")
    defined, undefined = [], []
    for i in range(1, size // symbol.size):
        values = symbol.unpack_from(table, i * symbol.size)
        if bits == 2:
            st_name, info, _, shndx = values[0], values[1], values[2], values[3]
        else:
            st_name, info, shndx = values[0], values[3], values[5]
        if info >> 4 == _STB_LOCAL:
            continue
        (defined if shndx != _SHN_UNDEF else undefined).append(string(strtab, st_name))
    return ObjectSymbols(tuple(defined), tuple(undefined), tuple(inits))


def problem(obj: bytes, symbol: str | re.Pattern, triple: str) -> str | None:
    """Why ``obj`` is not a kernel object defining ``symbol`` (a name or a pattern) and
    nothing else, or None."""
    if not _elf_target(triple):
        return None
    try:
        found = read_symbols(obj)
    except (ValueError, struct.error) as exc:
        return f"unreadable object file: {exc}"
    if found.init_sections:
        return f"it has initializer sections ({', '.join(found.init_sections)})"
    matches = (
        (lambda name: name == symbol)
        if isinstance(symbol, str)
        else (lambda name: symbol.fullmatch(name) is not None)
    )
    wanted = [name for name in found.defined if matches(name)]
    others = sorted({name for name in found.defined if not matches(name)})
    what = symbol if isinstance(symbol, str) else re.sub(r"\\(.)", r"\1", symbol.pattern)
    if len(wanted) != 1:
        return f"it defines {len(wanted)} symbols {what!r}, expected exactly 1"
    if others:
        shown = ", ".join(repr(name) for name in others[:5])
        return f"it also defines {shown}" + (
            f" and {len(others) - 5} more" if len(others) > 5 else ""
        )
    return None


def runner_prefix(spirv_digest: str, spec_constants: list | tuple) -> str:
    """The symbol prefix of a program's kernels (``Program.symbol_prefix``) from a cache key's
    parts: its SPIR-V digest and its spec constants as (id, repr(value)) pairs."""
    digest = hashlib.sha256(spirv_digest.encode())
    digest.update(
        ("[" + ", ".join(f"({k}, {v})" for k, v in sorted(spec_constants)) + "]").encode()
    )
    return f"spirvjit.{digest.hexdigest()[:16]}"


def runner_pattern(prefix: str) -> re.Pattern:
    """Any kernel runner of the program with this prefix (``CpuBackend.kernel_symbol``)."""
    return re.compile(re.escape(prefix) + r"\.k[0-9]+\.run")


_placeholder = (ctypes.c_uint8 * 4096)()  # stands in for program data in a trial link


def trial_load(obj: bytes, prefix: str, triple: str) -> str | None:
    """Why ``obj``, a kernel object of the program with symbol ``prefix``, would not load
    into this process, or None. Checks the symbols, then (on this machine's triple) links
    it into a throw-away JIT library, with the program's data symbols pointing at a
    placeholder; linking runs no code of the object (no initializers: none are allowed)."""
    from ...target import host_target
    from . import codegen

    why = problem(obj, runner_pattern(prefix), triple)
    if why is not None or not _elf_target(triple):
        return why
    host = host_target()
    if triple != host.triple:
        return None  # another machine's entry (a shared cache): its symbols were checked
    found = read_symbols(obj)
    builder = llvm.JITLibraryBuilder().add_object_img(obj).add_current_process()
    data = re.compile(re.escape(prefix) + r"\.g[0-9]+")
    for name in found.undefined:
        if data.fullmatch(name):
            builder.import_symbol(name, ctypes.addressof(_placeholder))
    try:
        tracker = codegen.link(builder.export_symbol(found.defined[0]), host, "verify")
    except RuntimeError as exc:
        return f"does not link: {exc}"
    del tracker  # unloads it
    return None
