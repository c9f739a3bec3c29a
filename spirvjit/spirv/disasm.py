"""Disassemble a SPIR-V module to text in the style of ``spirv-dis``.

The text is meant to be read by people and reassembled by ``spirv-as``: ids print as
``%name`` when the module gives them a unique OpName (sanitized to ``[A-Za-z0-9_]``)
and as ``%<id>`` otherwise; enumerants print by their grammar name (bit enums joined
with ``|``); literal numbers print in decimal, floats as floats (hex floats for inf and
NaN); OpExtInst prints the extended instruction's name when the set is known.
"""

from __future__ import annotations

import re
import struct

from . import grammar
from .module import Instruction, Module
from .reader import read_module

_CATEGORY = grammar.OPERAND_KINDS
_ENUMERANTS = grammar.ENUMERANTS
_INSTRUCTIONS = grammar.INSTRUCTIONS
_OPENCL_STD = grammar.OPENCL_STD_INSTRUCTIONS
_OP_TYPE_INT = grammar.OPCODES["OpTypeInt"]
_OP_TYPE_FLOAT = grammar.OPCODES["OpTypeFloat"]
_OP_SWITCH = grammar.OPCODES["OpSwitch"]
_RESULT_WIDTH = 12  # `%id` right-aligned so that every opname starts in column 16
_NOT_NAME_CHAR = re.compile(r"[^A-Za-z0-9_]")
# struct format, exponent bits, mantissa bits of the IEEE binary formats by width.
_FLOAT_FORMATS = {16: ("<e", 5, 10), 32: ("<f", 8, 23), 64: ("<d", 11, 52)}


def disassemble(module_or_bytes: Module | bytes | bytearray | memoryview) -> str:
    """The text of a module, one instruction per line after a header comment.

    Bytes are read with :func:`read_module` first (so malformed input raises SpirvError).
    """
    module = (
        module_or_bytes if isinstance(module_or_bytes, Module) else read_module(module_or_bytes)
    )
    return _Disassembler(module).text()


def friendly_names(module: Module) -> dict[int, str]:
    """id -> printed name (without ``%``) for ids whose sanitized OpName is unique."""
    by_name: dict[str, list[int]] = {}
    for target, name in module.names.items():
        clean = _NOT_NAME_CHAR.sub("_", name)
        # Digits-only names would read as (and clash with) numeric ids.
        if clean and not clean.isdigit():
            by_name.setdefault(clean, []).append(target)
    return {ids[0]: name for name, ids in by_name.items() if len(ids) == 1}


def quote(text: str) -> str:
    """A string literal as spirv-as reads it: in double quotes, ``"`` and ``\\`` escaped."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def format_int(value: int, width: int, signed: bool) -> str:
    """The low ``width`` bits of ``value`` in decimal, as a signed number if ``signed``."""
    value &= (1 << width) - 1
    if signed and value >> (width - 1):
        value -= 1 << width
    return str(value)


def format_float(bits: int, width: int) -> str:
    """An IEEE float given by its bits: the shortest decimal that reads back to the same
    bits, or a hex float (``0x1p+128``) for infinities and NaNs, as spirv-dis prints them."""
    fmt, exponent_bits, mantissa_bits = _FLOAT_FORMATS[width]
    bits &= (1 << width) - 1
    sign = "-" if bits >> (width - 1) else ""
    exponent = (bits >> mantissa_bits) & ((1 << exponent_bits) - 1)
    mantissa = bits & ((1 << mantissa_bits) - 1)
    if exponent == (1 << exponent_bits) - 1:
        digits = -(-mantissa_bits // 4)
        fraction = f"{mantissa << (4 * digits - mantissa_bits):0{digits}x}".rstrip("0")
        point = f".{fraction}" if fraction else ""
        return f"{sign}0x1{point}p+{1 << (exponent_bits - 1)}"
    packed = bits.to_bytes(width // 8, "little")
    value = struct.unpack(fmt, packed)[0]
    for precision in range(1, 18):
        text = f"{value:.{precision}g}"
        if struct.pack(fmt, float(text)) == packed:
            return text
    return repr(value)


class _Disassembler:
    def __init__(self, module: Module):
        self.module = module
        self.names = friendly_names(module)

    def text(self) -> str:
        m = self.module
        lines = [
            "; SPIR-V",
            f"; Version: {m.version[0]}.{m.version[1]}",
            f"; Generator: {m.generator:#010x} (tool {m.generator >> 16}, "
            f"version {m.generator & 0xFFFF})",
            f"; Bound: {m.bound}",
            f"; Schema: {m.schema}",
        ]
        lines += [self.line(inst) for inst in m.instructions]
        return "\n".join(lines) + "\n"

    def id(self, value: int) -> str:
        return "%" + self.names.get(value, str(value))

    def line(self, inst: Instruction) -> str:
        parts = [inst.opname]
        if inst.result_type is not None:
            parts.append(self.id(inst.result_type))
        parts += self.operands(inst)
        text = " ".join(parts)
        if inst.result_id is None:
            return " " * (_RESULT_WIDTH + 3) + text
        return f"{self.id(inst.result_id):>{_RESULT_WIDTH}} = {text}"

    def operands(self, inst: Instruction) -> list[str]:
        """The operands' text; a bit enum's parameters follow the joined flag names."""
        out = []
        for index, (value, kind) in enumerate(zip(inst.operands, inst.kinds, strict=True)):
            category = _CATEGORY.get(kind)
            if category == "Id":
                out.append(self.id(value))
            elif kind == "LiteralString":
                out.append(quote(value))
            elif kind == "LiteralContextDependentNumber":
                out.append(self.number(value, inst.result_type))
            elif inst.opcode == _OP_SWITCH and kind == "LiteralInteger":
                selector = self.module.defs.get(inst.operands[0])
                out.append(self.number(value, selector.result_type if selector else None))
            elif kind == "LiteralExtInstInteger":
                out.append(self.ext_inst_name(inst.operands[index - 1], value))
            elif kind == "LiteralSpecConstantOpInteger":
                out.append(_INSTRUCTIONS[value][0][2:])
            elif kind == "LiteralFloat":
                out.append(format_float(value, 32))
            elif category == "ValueEnum":
                out.append(_ENUMERANTS[kind][value][0])
            elif category == "BitEnum":
                out.append(self.flags(kind, value))
            else:
                out.append(str(value))
        return out

    def number(self, value: int, type_id: int | None) -> str:
        """A literal number of the type ``type_id`` (integer or float)."""
        type_inst = self.module.defs.get(type_id) if type_id is not None else None
        if type_inst is None:
            return str(value)
        width = type_inst.operands[0]
        if type_inst.opcode == _OP_TYPE_INT:
            return format_int(value, width, bool(type_inst.operands[1]))
        # A float with an explicit encoding (bfloat16, fp8, ...) is not IEEE: keep the bits.
        is_ieee = len(type_inst.operands) == 1 and width in _FLOAT_FORMATS
        if type_inst.opcode == _OP_TYPE_FLOAT and is_ieee:
            return format_float(value, width)
        return str(value)

    def flags(self, kind: str, value: int) -> str:
        table = _ENUMERANTS[kind]
        if value == 0:
            return table[0][0] if 0 in table else "0"
        names = []
        rest = value
        while rest:
            bit = rest & -rest
            rest ^= bit
            names.append(table[bit][0])
        return "|".join(names)

    def ext_inst_name(self, set_id: int, number: int) -> str:
        if self.module.ext_inst_imports.get(set_id) == "OpenCL.std" and number in _OPENCL_STD:
            return _OPENCL_STD[number][0]
        return str(number)
