"""Correct ``convert_<int type>[_sat][_rounding]`` from an integer, for clang's SPIR-V back end.

clang 22's SPIR-V back end picks OpSConvert/OpUConvert (and OpSatConvert*) from the
signedness of the *destination* of ``convert_<T>``, where SPIR-V (and OpenCL) mean the
source: ``convert_int(char)`` becomes OpUConvert (zero extension), ``convert_uint(uchar)``
OpSConvert (sign extension), ``convert_short_sat(char)`` OpSatConvertUToS (-1 becomes
255). Fixed upstream by llvm-project pull requests 200791 and 201116 (LLVM 23).

The front end therefore compiles OpenCL C to LLVM IR first. Each int→int ``convert_*``
the IR still *declares* is a built-in the back end would lower; this module replaces
such declarations with ``internal alwaysinline`` definitions in plain LLVM IR (icmp,
select, sext/zext/trunc), whose meaning comes from the mangled name alone, before the
back end runs. The optimizer then inlines them like any other code.

``backend_converts_correctly`` compiles a tiny probe with the given clang once per
binary and looks at the opcodes it wrote, so a fixed clang is used as it is.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
from dataclasses import dataclass

from spirvjit.errors import CompileError, SpirvError

# Itanium mangling of OpenCL's integer types: code -> (bits, signed).
_INT_CODES: dict[str, tuple[int, bool]] = {
    "c": (8, True),  # char
    "a": (8, True),  # signed char
    "h": (8, False),
    "s": (16, True),
    "t": (16, False),
    "i": (32, True),
    "j": (32, False),
    "l": (64, True),
    "m": (64, False),
}
_INT_NAMES: dict[str, tuple[int, bool]] = {
    "char": (8, True),
    "uchar": (8, False),
    "short": (16, True),
    "ushort": (16, False),
    "int": (32, True),
    "uint": (32, False),
    "long": (64, True),
    "ulong": (64, False),
}
_VECTOR_SIZES = (2, 3, 4, 8, 16)

# _Z<length><convert_...><parameter>; the parameter is a scalar code or Dv<N>_<code>.
_MANGLED = re.compile(r"_Z(\d+)(convert_\w+)")
_NAME = re.compile(r"convert_([a-z]+?)(2|3|4|8|16)?(_sat)?(_rt[eznp])?")
_PARAM = re.compile(r"(?:Dv(\d+)_)?([a-z])")
_DECLARE = re.compile(r"^declare\b[^@\n]*@(_Z\d+convert_\w+)\(([^)\n]*)\)[^\n]*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class IntConversion:
    """One int→int ``convert_*`` built-in, as its mangled name spells it."""

    symbol: str
    lanes: int  # 1 for scalars
    src_bits: int
    src_signed: bool
    dst_bits: int
    dst_signed: bool
    saturate: bool


def parse_int_conversion(symbol: str) -> IntConversion | None:
    """The int→int conversion ``symbol`` names, or None for any other function.

    Rounding suffixes (``_rte`` ...) are accepted and mean nothing between integers.
    """
    m = _MANGLED.match(symbol)
    if m is None:
        return None
    length = int(m.group(1))
    ident_start = m.start(2)
    ident = symbol[ident_start : ident_start + length]
    param = symbol[ident_start + length :]
    name = _NAME.fullmatch(ident)
    arg = _PARAM.fullmatch(param)
    if name is None or arg is None or name.group(1) not in _INT_NAMES:
        return None
    if arg.group(2) not in _INT_CODES:
        return None
    lanes = int(name.group(2) or 1)
    if int(arg.group(1) or 1) != lanes or (lanes != 1 and lanes not in _VECTOR_SIZES):
        return None
    src_bits, src_signed = _INT_CODES[arg.group(2)]
    dst_bits, dst_signed = _INT_NAMES[name.group(1)]
    return IntConversion(
        symbol, lanes, src_bits, src_signed, dst_bits, dst_signed, bool(name.group(3))
    )


def _type(bits: int, lanes: int) -> str:
    return f"i{bits}" if lanes == 1 else f"<{lanes} x i{bits}>"


def _constant(value: int, bits: int, lanes: int) -> str:
    if lanes == 1:
        return str(value)
    return "<" + ", ".join([f"i{bits} {value}"] * lanes) + ">"


def definition(conv: IntConversion) -> str:
    """An LLVM IR definition of ``conv`` with OpenCL's meaning (spec 6.4.3)."""
    src, dst = _type(conv.src_bits, conv.lanes), _type(conv.dst_bits, conv.lanes)
    lines = []
    value = "%x"
    if conv.saturate:
        bits, signed = conv.src_bits, conv.src_signed
        src_min = -(1 << (bits - 1)) if signed else 0
        src_max = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
        dst_min = -(1 << (conv.dst_bits - 1)) if conv.dst_signed else 0
        dst_max = (1 << (conv.dst_bits - 1)) - 1 if conv.dst_signed else (1 << conv.dst_bits) - 1
        # Both bounds are compared in the source type, where they are representable
        # whenever they clamp anything (a bound outside the source range clamps nothing).
        if dst_max < src_max:
            limit = _constant(dst_max, bits, conv.lanes)
            lines.append(f"%hi = icmp {'sgt' if signed else 'ugt'} {src} {value}, {limit}")
            lines.append(f"%x1 = select {_type(1, conv.lanes)} %hi, {src} {limit}, {src} {value}")
            value = "%x1"
        if dst_min > src_min:  # only for a signed source
            limit = _constant(dst_min, bits, conv.lanes)
            lines.append(f"%lo = icmp slt {src} {value}, {limit}")
            lines.append(f"%x2 = select {_type(1, conv.lanes)} %lo, {src} {limit}, {src} {value}")
            value = "%x2"
    if conv.dst_bits < conv.src_bits:
        lines.append(f"%r = trunc {src} {value} to {dst}")
        value = "%r"
    elif conv.dst_bits > conv.src_bits:
        # The source's signedness decides the extension (after saturation the value fits
        # both types, so either would do there).
        lines.append(f"%r = {'sext' if conv.src_signed else 'zext'} {src} {value} to {dst}")
        value = "%r"
    body = "".join(f"  {line}\n" for line in lines)
    return (
        f"define internal spir_func {dst} @{conv.symbol}({src} %x) "
        "alwaysinline nounwind willreturn memory(none) {\n"
        f"{body}  ret {dst} {value}\n}}\n"
    )


def _declared_types(params: str) -> str:
    """The parameter list of a declaration without attributes, e.g. 'i8' or '<4 x i32>'."""
    params = params.strip()
    if params.startswith("<"):
        return params[: params.index(">") + 1]
    return params.split()[0] if params else ""


def define_int_conversions(ir_text: str) -> tuple[str, int]:
    """Replaces every declared int→int ``convert_*`` in ``ir_text`` with a definition.

    Returns the new text and how many were replaced. A declaration whose parameter type
    does not match its mangled name is left alone (the back end lowers it as before).
    """
    count = 0

    def replace(m: re.Match) -> str:
        nonlocal count
        conv = parse_int_conversion(m.group(1))
        if conv is None or _declared_types(m.group(2)) != _type(conv.src_bits, conv.lanes):
            return m.group(0)
        count += 1
        return definition(conv).rstrip("\n")

    return _DECLARE.sub(replace, ir_text), count


# --- detecting a fixed back end ----------------------------------------------------------------

# One kernel per conversion, so each kernel holds exactly one conversion instruction:
# (source type, destination type, _sat?) and the opcode a correct back end uses, and
# whether it must carry the SaturatedConversion decoration (a clamping narrowing).
_PROBES: tuple[tuple[str, str, bool, str, bool], ...] = (
    ("char", "int", False, "OpSConvert", False),
    ("uchar", "uint", False, "OpUConvert", False),
    ("char", "uint", False, "OpSConvert", False),
    ("uchar", "int", False, "OpUConvert", False),
    ("char2", "int2", False, "OpSConvert", False),
    ("char", "short", True, "OpSConvert", False),
    ("uchar", "ushort", True, "OpUConvert", False),
    ("short", "char", True, "OpSConvert", True),
    ("ushort", "uchar", True, "OpUConvert", True),
    ("char", "uchar", True, "OpSatConvertSToU", False),
    ("uchar", "char", True, "OpSatConvertUToS", False),
)

_CONVERSIONS = frozenset({"OpSConvert", "OpUConvert", "OpSatConvertSToU", "OpSatConvertUToS"})


def probe_source() -> str:
    """The OpenCL C the probe compiles (one kernel per conversion)."""
    return "".join(
        f"kernel void p{i}(global const {src}* a, global {dst}* o) "
        f"{{ *o = convert_{dst}{'_sat' if sat else ''}(*a); }}\n"
        for i, (src, dst, sat, _, _) in enumerate(_PROBES)
    )


def converts_correctly(spirv: bytes) -> bool:
    """Whether the probe module ``spirv`` converts every probe the way SPIR-V means it."""
    from spirvjit.spirv.grammar import Decoration
    from spirvjit.spirv.reader import read_module

    module = read_module(spirv)
    functions = {fn.id: fn for fn in module.functions}
    entries = {e.name: e.function_id for e in module.entry_points}
    for index, (_, _, _, opcode, saturated) in enumerate(_PROBES):
        fn = functions.get(entries.get(f"p{index}", -1))
        if fn is None:
            return False
        found = [i for b in fn.blocks for i in b.instructions if i.opname in _CONVERSIONS]
        if len(found) != 1 or found[0].opname != opcode:
            return False
        if saturated and not module.decorations_of(
            found[0].result_id, Decoration.SaturatedConversion
        ):
            return False
    return True


def backend_converts_correctly(clang: str, run) -> bool:
    """Whether ``clang``'s SPIR-V back end gets int→int ``convert_*`` right (cached per binary).

    ``run(cmd, verb, filename, tmp)`` runs a compiler command (the front end's runner).
    A probe that fails to compile counts as a buggy back end: the workaround is always
    correct, only a little slower to compile.
    """
    st = os.stat(clang)
    return _probe(os.path.realpath(clang), st.st_size, st.st_mtime_ns, run)


@functools.lru_cache(maxsize=8)
def _probe(clang: str, _size: int, _mtime: int, run) -> bool:
    with tempfile.TemporaryDirectory(prefix="spirvjit-probe-") as tmp:
        src, spv = os.path.join(tmp, "probe.cl"), os.path.join(tmp, "probe.spv")
        with open(src, "w", encoding="utf-8") as f:
            f.write(probe_source())
        try:
            run([clang, "--target=spirv64", "-c", "-O2", "-cl-std=CL3.0", src, "-o", spv],
                "compile", "probe.cl", tmp)  # fmt: skip
            with open(spv, "rb") as f:
                return converts_correctly(f.read())
        except (CompileError, SpirvError, OSError, ValueError):
            return False
