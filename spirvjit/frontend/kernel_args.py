"""Kernel argument names, types and qualifiers: from clang's LLVM IR into the SPIR-V.

With opaque pointers clang's SPIR-V back end guesses each pointer parameter's element
type from how the kernel uses it: ``global float* a`` that is never read, or only read
through byte offsets, comes out as ``uchar*``, and the runtime could not refuse a
float64 array for it. Names are dropped unless every value keeps its name.

clang records what the source said in the kernel's metadata (``-cl-kernel-arg-info``):
``kernel_arg_name``, ``kernel_arg_type`` (as spelled), ``kernel_arg_base_type``
(typedefs resolved) and ``kernel_arg_type_qual`` (``const``, ``restrict``,
``volatile``). This module reads them from the IR text and writes them into the SPIR-V
module the way llvm-spirv's ``--preserve-ocl-kernel-arg-type-metadata-through-string``
does, so both producers give the runtime the same information:

* ``OpString "kernel_arg_type.<kernel>.<type>,<type>,...,"`` and
  ``OpString "kernel_arg_type_qual.<kernel>.<qual>,...,"`` (llvm-spirv's spelling);
* ``OpString "kernel_arg_base_type.<kernel>.<type>,...,"`` (spirvjit's addition, with
  clang's ``float __attribute__((ext_vector_type(4)))`` spelled ``float4``), so a
  typedef'd element type is still known;
* ``OpName`` for each kernel parameter that has none.

``spirvjit.translate.arg_types`` reads them back.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

_KINDS = ("kernel_arg_name", "kernel_arg_type", "kernel_arg_base_type", "kernel_arg_type_qual")
_DEFINE = re.compile(r"^define\b[^\n]*\bspir_kernel\b[^\n]*$", re.MULTILINE)
_FUNCTION_NAME = re.compile(r'@(?:"((?:[^"\\]|\\.)*)"|([-\w$.]+))\(')
_ATTACHMENT = re.compile(r"!(kernel_arg_\w+) !(\d+)")
_NODE = re.compile(r"^!(\d+) = (?:distinct )?!\{([^\n]*)\}$", re.MULTILINE)
_STRING = re.compile(r'!"((?:[^"\\]|\\[0-9A-Fa-f]{2})*)"')
_VECTOR = re.compile(r"(\w+) __attribute__\(\(ext_vector_type\((\d+)\)\)\)")


@dataclass(frozen=True, slots=True)
class KernelArgInfo:
    """What clang's metadata says about one kernel's parameters (one entry per parameter)."""

    kernel: str
    names: tuple[str, ...]
    types: tuple[str, ...]
    base_types: tuple[str, ...]
    quals: tuple[str, ...]


def _unescape(text: str) -> str:
    """LLVM's metadata string escapes: ``\\HH`` for any byte outside printable ASCII."""
    if "\\" not in text:
        return text
    raw = re.sub(rb"\\([0-9A-Fa-f]{2})", lambda m: bytes([int(m.group(1), 16)]), text.encode())
    return raw.decode("utf-8", "replace")


def _vector_spelling(base_type: str) -> str:
    """'float __attribute__((ext_vector_type(4)))*' -> 'float4*' (OpenCL's spelling)."""
    return _VECTOR.sub(lambda m: m.group(1) + m.group(2), base_type)


def read_kernel_arg_info(ir_text: str) -> dict[str, KernelArgInfo]:
    """The kernel argument metadata of every ``spir_kernel`` in LLVM IR text, by kernel name."""
    nodes: dict[str, list[str]] = {}
    for m in _NODE.finditer(ir_text):
        strings = _STRING.findall(m.group(2))
        nodes[m.group(1)] = [_unescape(s) for s in strings]
    kernels = {}
    for define in _DEFINE.finditer(ir_text):
        line = define.group(0)
        fname = _FUNCTION_NAME.search(line)
        if fname is None:
            continue
        name = fname.group(2) or _unescape(fname.group(1))
        found = {kind: nodes.get(node, []) for kind, node in _ATTACHMENT.findall(line)}
        types = found.get("kernel_arg_type", [])
        count = len(types)
        fields = {}
        for kind in _KINDS:
            values = found.get(kind, [])
            fields[kind] = tuple(values) if len(values) == count else ("",) * count
        kernels[name] = KernelArgInfo(
            name,
            fields["kernel_arg_name"],
            fields["kernel_arg_type"],
            tuple(_vector_spelling(t) for t in fields["kernel_arg_base_type"]),
            fields["kernel_arg_type_qual"],
        )
    return kernels


# --- writing into a SPIR-V module ---------------------------------------------------------------

_OP_STRING, _OP_NAME, _OP_MEMBER_NAME = 7, 5, 6
_OP_ENTRY_POINT, _OP_FUNCTION, _OP_FUNCTION_PARAMETER = 15, 54, 55
# Logical layout (SPIR-V 2.4): what may precede debug names, and what precedes OpString.
_BEFORE_STRINGS = frozenset({17, 10, 11, 14, 15, 16, 331})  # capability ... execution modes
_DEBUG_SOURCE = frozenset({2, 3, 4, 7})  # OpSourceContinued, OpSource, OpSourceExtension, OpString


def _string_words(text: str) -> list[int]:
    data = text.encode("utf-8") + b"\0"
    data += b"\0" * (-len(data) % 4)
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def _instruction(opcode: int, operands: list[int]) -> list[int]:
    return [(len(operands) + 1) << 16 | opcode, *operands]


def _decode_string(words: list[int]) -> str:
    data = struct.pack(f"<{len(words)}I", *words)
    return data.split(b"\0", 1)[0].decode("utf-8", "replace")


def annotate_spirv(spirv: bytes, infos: dict[str, KernelArgInfo]) -> bytes:
    """``spirv`` with the kernel argument strings and parameter names of ``infos`` added.

    Kernels the module does not define, and infos whose parameter count differs from the
    kernel's, are skipped. The module must be little-endian (as clang writes it).
    """
    if not infos or len(spirv) < 20 or len(spirv) % 4:
        return spirv
    words = list(struct.unpack(f"<{len(spirv) // 4}I", spirv))
    if words[0] != 0x07230203:
        return spirv
    bound = words[3]
    # Walk the instructions once: entry points, functions' parameters, existing names,
    # and where the debug-name section starts.
    entries: dict[int, str] = {}
    params: dict[int, list[int]] = {}
    named: set[int] = set()
    strings: set[str] = set()
    current = None
    names_at = strings_at = None
    pos = 5
    while pos < len(words):
        count, opcode = words[pos] >> 16, words[pos] & 0xFFFF
        if count == 0 or pos + count > len(words):
            return spirv  # malformed: leave it to the reader to report
        if strings_at is None and opcode not in _BEFORE_STRINGS and opcode not in _DEBUG_SOURCE:
            strings_at = pos
        if (
            names_at is None
            and strings_at is not None
            and opcode
            not in (
                _OP_NAME,
                _OP_MEMBER_NAME,
            )
        ):
            names_at = pos
        if opcode == _OP_ENTRY_POINT:
            entries[words[pos + 2]] = _decode_string(words[pos + 3 : pos + count])
        elif opcode == _OP_STRING:
            strings.add(_decode_string(words[pos + 2 : pos + count]))
        elif opcode == _OP_NAME:
            named.add(words[pos + 1])
        elif opcode == _OP_FUNCTION:
            current = words[pos + 2]
            params[current] = []
        elif opcode == _OP_FUNCTION_PARAMETER and current is not None:
            params[current].append(words[pos + 2])
        pos += count
    if strings_at is None or names_at is None:
        return spirv
    new_strings: list[int] = []
    new_names: list[int] = []
    for function_id, kernel in entries.items():
        info = infos.get(kernel)
        ids = params.get(function_id, [])
        if info is None or len(info.types) != len(ids):
            continue
        for kind, values in (
            ("kernel_arg_type", info.types),
            ("kernel_arg_base_type", info.base_types),
            ("kernel_arg_type_qual", info.quals),
        ):
            text = f"{kind}.{kernel}." + "".join(v + "," for v in values)
            if text not in strings:
                new_strings += _instruction(_OP_STRING, [bound, *_string_words(text)])
                strings.add(text)
                bound += 1
        for param_id, name in zip(ids, info.names, strict=True):
            if name and param_id not in named:
                new_names += _instruction(_OP_NAME, [param_id, *_string_words(name)])
                named.add(param_id)
    if not new_strings and not new_names:
        return spirv
    words[3] = bound
    # names_at >= strings_at; insert the later one first so the earlier offset holds.
    words[names_at:names_at] = new_names
    words[strings_at:strings_at] = new_strings
    return struct.pack(f"<{len(words)}I", *words)
