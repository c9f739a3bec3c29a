"""OpenCL C printf on the host CPU, through a formatter spirvjit controls.

The format string never reaches the C library as the kernel wrote it. At JIT time
the (constant) format is parsed by OpenCL C's printf rules (flags, width, precision,
vector specifier ``vN``, length modifiers ``hh h hl l``, conversions
``d i o u x X f F e E g G a A c s p %``) and checked against the argument types: a
``%n``, an unknown conversion, a missing argument, or an argument of the wrong kind
(``%s`` with an int, ``%d`` with a float, a ``%v4hlf`` given a float2, ...) is a
CompileError naming the function. A format that is not a constant string (OpenCL C
requires a literal) is refused the same way.

The generated code then formats each conversion alone with ``snprintf`` and a
specification string spirvjit built from the parsed one, passing exactly one value
of the C type that specification reads (integers converted to the length
modifier's width, floating-point values as double, vectors lane by lane), into a
per-call buffer of ``BUFFER_BYTES`` bytes. The whole line is written with one
``printf("%.*s")`` and flushed, so output from several threads interleaves per call.
Output past the buffer is cut (OpenCL leaves the printf buffer's size to the
implementation).
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ..errors import CompileError
from ..spirv.module import Instruction
from .function import FunctionTranslator
from .opencl_std import lowers

I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
DOUBLE = ir.DoubleType()
BUFFER_BYTES = 4096
# Widths and precisions above this are refused: glibc allocates work space for them
# and nothing a kernel prints needs more than the buffer holds.
MAX_FIELD = BUFFER_BYTES
_FLAGS = "-+ #0"
_INTEGER = "diouxX"
_FLOAT = "fFeEgGaA"
_SIGNED = "di"
_VECTOR_LANES = (2, 3, 4, 8, 16)
# Length modifier -> the argument's width in bits (integers; hl is 32, for vectors).
_INT_BITS = {"hh": 8, "h": 16, "": 32, "hl": 32, "l": 64}
# Length modifier -> C's modifier for the value passed (64-bit as "ll", right on LP64
# and ILP32 alike).
_C_INT_LENGTH = {"hh": "hh", "h": "h", "": "", "hl": "", "l": "ll"}
# Vector length modifier -> the lanes' floating-point width.
_FLOAT_BITS = {"h": 16, "hl": 32, "l": 64}


class FormatError(ValueError):
    """A printf format that breaks OpenCL C's rules (the message says how)."""


@dataclass(frozen=True)
class Conversion:
    """One ``%...`` conversion specification of a format."""

    flags: str
    width: str
    precision: str | None  # the digits after '.', "" for a lone '.'; None without '.'
    lanes: int | None  # the vector specifier's n, None for a scalar
    length: str  # "", "hh", "h", "hl" or "l"
    conversion: str  # one of diouxXfFeEgGaAcsp

    def c_spec(self) -> str:
        """The C specification for one value (one lane) of this conversion."""
        length = _C_INT_LENGTH[self.length] if self.conversion in _INTEGER else ""
        precision = "" if self.precision is None else "." + self.precision
        return f"%{self.flags}{self.width}{precision}{length}{self.conversion}"


def parse_format(text: str) -> list[str | Conversion]:
    """The format's literal text and conversions in order (``%%`` becomes ``%``).

    Raises FormatError for anything OpenCL C's printf does not define.
    """
    pieces: list[str | Conversion] = []
    literal: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char != "%":
            literal.append(char)
            i += 1
            continue
        start = i
        i += 1
        if i < n and text[i] == "%":
            literal.append("%")
            i += 1
            continue
        flags_start = i
        while i < n and text[i] in _FLAGS:
            i += 1
        flags = text[flags_start:i]
        width, i = _digits(text, i)
        precision = None
        if i < n and text[i] == ".":
            precision, i = _digits(text, i + 1)
        if i < n and text[i] == "*":
            raise FormatError(f"'*' width or precision in {text[start : i + 1]!r} is not supported")
        lanes = None
        if i < n and text[i] == "v":
            digits, i = _digits(text, i + 1)
            if not digits or int(digits) not in _VECTOR_LANES:
                raise FormatError(
                    f"vector specifier in {text[start:i]!r}: n must be 2, 3, 4, 8 or 16"
                )
            lanes = int(digits)
        length = ""
        for candidate in ("hh", "hl", "h", "l"):
            if text.startswith(candidate, i):
                length = candidate
                i += len(candidate)
                break
        if i >= n:
            raise FormatError(f"the format ends inside the conversion {text[start:]!r}")
        conversion = text[i]
        i += 1
        spec = text[start:i]
        if conversion == "n":
            raise FormatError(f"{spec!r}: %n is not allowed (it writes through its argument)")
        if conversion in "lLjzt" or (length == "l" and conversion == "l"):
            raise FormatError(f"{spec!r}: length modifier not in OpenCL C (use hh, h, hl or l)")
        if conversion not in _INTEGER + _FLOAT + "csp":
            raise FormatError(f"{spec!r}: unknown conversion {conversion!r}")
        if len(width) > 4 or (width and int(width) > MAX_FIELD):
            raise FormatError(f"{spec!r}: field width above {MAX_FIELD}")
        if precision and (len(precision) > 4 or int(precision) > MAX_FIELD):
            raise FormatError(f"{spec!r}: precision above {MAX_FIELD}")
        if lanes is not None and conversion in "csp":
            raise FormatError(f"{spec!r}: a vector specifier cannot be used with %{conversion}")
        if length == "hl" and lanes is None:
            raise FormatError(f"{spec!r}: the hl length modifier needs a vector specifier")
        if length and conversion in "csp":
            raise FormatError(f"{spec!r}: a length modifier cannot be used with %{conversion}")
        if conversion in _FLOAT and length and lanes is None and length != "l":
            raise FormatError(f"{spec!r}: length modifier {length!r} with a scalar %{conversion}")
        if conversion in _FLOAT and length == "hh":
            raise FormatError(f"{spec!r}: hh cannot be used with %{conversion}")
        if literal:
            pieces.append("".join(literal))
            literal = []
        pieces.append(Conversion(flags, width, precision, lanes, length, conversion))
    if literal:
        pieces.append("".join(literal))
    return pieces


def _digits(text: str, i: int) -> tuple[str, int]:
    start = i
    # ASCII digits only: str.isdigit() also takes the Latin-1 superscripts, which int()
    # and C's printf do not.
    while i < len(text) and text[i] in "0123456789":
        i += 1
    return text[start:i], i


def constant_string(t: FunctionTranslator, value_id: int) -> bytes | None:
    """The bytes of a constant string a pointer id refers to, or None when not constant."""
    inst = t.module.defs.get(value_id)
    while inst is not None and inst.opname in ("OpBitcast", "OpPtrCastToGeneric", "OpCopyObject"):
        inst = t.module.defs.get(inst.operands[0])
    if inst is not None and inst.opname in ("OpInBoundsPtrAccessChain", "OpPtrAccessChain"):
        ops = inst.operands
        if any(t.mt.constants.int_value(i) for i in ops[1:] if _is_constant(t, i)) or not all(
            _is_constant(t, i) for i in ops[1:]
        ):
            return None
        inst = t.module.defs.get(ops[0])
    if inst is None or inst.opname != "OpVariable" or len(inst.operands) < 2:
        return None
    chars = t.mt.constants.python(inst.operands[1])
    if not isinstance(chars, list) or not all(isinstance(c, int) for c in chars):
        return None
    return bytes(c & 0xFF for c in chars).split(b"\0", 1)[0]


def _is_constant(t: FunctionTranslator, value_id: int) -> bool:
    inst = t.module.defs.get(value_id)
    return inst is not None and inst.opname in ("OpConstant", "OpConstantNull")


@lowers("printf")
def printf(t: FunctionTranslator, ty: ir.Type, args: list[ir.Value], inst: Instruction) -> ir.Value:
    if not t.mt.abi.host_libc:
        raise t.error(
            "printf is not supported on GPU targets yet; remove it or run on the host CPU"
        )
    # The arguments are variadic: take them from the instruction itself.
    values = [t.value(i) for i in inst.operands[3:]]
    text = constant_string(t, inst.operands[2])
    if text is None:
        raise _refuse(t, "the format is not a constant string (OpenCL C requires a literal)")
    decoded = text.decode("latin-1")
    try:
        calls = _format_calls(t, parse_format(decoded), values)
    except FormatError as exc:
        raise _refuse(t, f"{exc} in the format {decoded!r}") from None
    return _emit(t, ty, calls)


def _refuse(t: FunctionTranslator, problem: str) -> CompileError:
    return CompileError(f"printf in {t.module.name_of(t.fn.id)}: {problem}")


def _escape(literal: str) -> str:
    return literal.replace("%", "%%")


def _format_calls(
    t: FunctionTranslator, pieces: list[str | Conversion], values: list[ir.Value]
) -> list[tuple[str, list[ir.Value]]]:
    """(C format with at most one conversion, its argument) pairs that print the format."""
    calls: list[tuple[str, list[ir.Value]]] = []
    pending = ""  # literal text not yet attached to a call
    index = 0
    for piece in pieces:
        if isinstance(piece, str):
            pending += _escape(piece)
            continue
        if index >= len(values):
            raise FormatError(f"no argument for conversion {index + 1} ({_spec_text(piece)!r})")
        value = values[index]
        index += 1
        for lane, scalar in enumerate(_lanes(t, piece, value)):
            separator = "," if lane else ""
            calls.append((pending + separator + piece.c_spec(), [scalar]))
            pending = ""
    if pending or not calls:
        calls.append((pending, []))
    return calls


def _spec_text(c: Conversion) -> str:
    precision = "" if c.precision is None else "." + c.precision
    lanes = "" if c.lanes is None else f"v{c.lanes}"
    return f"%{c.flags}{c.width}{precision}{lanes}{c.length}{c.conversion}"


def _lanes(t: FunctionTranslator, c: Conversion, value: ir.Value) -> list[ir.Value]:
    """The C values conversion ``c`` prints for ``value`` (one per lane), checked."""
    ty = value.type
    spec = repr(_spec_text(c))
    if c.lanes is None:
        if isinstance(ty, ir.VectorType):
            raise FormatError(f"{spec} is given a vector; use a vector specifier such as %v4hlf")
        return [_scalar(t, c, value, spec)]
    if not isinstance(ty, ir.VectorType) or ty.count != c.lanes:
        what = f"a {ty.count}-element vector" if isinstance(ty, ir.VectorType) else "a scalar"
        raise FormatError(f"{spec} needs a {c.lanes}-element vector, not {what}")
    element = ty.element
    if c.length:
        bits = _FLOAT_BITS.get(c.length) if c.conversion in _FLOAT else _INT_BITS[c.length]
        if _bits(element) != bits:
            raise FormatError(f"{spec} needs {bits}-bit lanes, not {_bits(element)}-bit ones")
    return [
        _scalar(t, c, t.b.extract_element(value, ir.Constant(I32, lane)), spec)
        for lane in range(c.lanes)
    ]


def _bits(ty: ir.Type) -> int:
    if isinstance(ty, ir.IntType):
        return ty.width
    return {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}.get(type(ty), 0)


def _scalar(t: FunctionTranslator, c: Conversion, value: ir.Value, spec: str) -> ir.Value:
    """``value`` as the C type ``c.c_spec()`` reads, or FormatError when it is the wrong kind."""
    ty = value.type
    floating = isinstance(ty, (ir.HalfType, ir.FloatType, ir.DoubleType))
    if c.conversion in "sp":
        if not isinstance(ty, ir.PointerType):
            raise FormatError(f"{spec} needs a pointer argument, not {ty}")
        return value
    if c.conversion in _FLOAT:
        if not floating:
            raise FormatError(f"{spec} needs a floating-point argument, not {ty}")
        return value if isinstance(ty, ir.DoubleType) else t.b.fpext(value, DOUBLE)
    if not isinstance(ty, ir.IntType):
        raise FormatError(f"{spec} needs an integer argument, not {ty}")
    # Integers take the width their length modifier names (as C's va_arg would read
    # them), then C's default promotion to int; %d/%i sign-extend, the others zero-extend.
    signed = c.conversion in _SIGNED
    bits = 32 if c.conversion == "c" else _INT_BITS[c.length]
    value = _resize(t, value, bits, signed)
    return _resize(t, value, 32, signed) if bits < 32 else value


def _resize(t: FunctionTranslator, value: ir.Value, bits: int, signed: bool) -> ir.Value:
    width = value.type.width
    if width == bits:
        return value
    if width > bits:
        return t.b.trunc(value, ir.IntType(bits))
    extend = t.b.sext if signed and width > 1 else t.b.zext
    return extend(value, ir.IntType(bits))


def _emit(t: FunctionTranslator, ty: ir.Type, calls: list[tuple[str, list[ir.Value]]]) -> ir.Value:
    """snprintf each call's piece into the function's buffer, then print it at once."""
    b = t.b
    buffer = _buffer(t)
    snprintf = t.mt.declare(
        "snprintf", ir.FunctionType(I32, [ir.PointerType(), I64, ir.PointerType()], var_arg=True)
    )
    last = ir.Constant(I64, BUFFER_BYTES - 1)
    position = ir.Constant(I64, 0)
    failed = ir.Constant(ir.IntType(1), 0)
    for spec, arguments in calls:
        at = b.gep(buffer, [position], source_etype=I8)
        room = b.sub(ir.Constant(I64, BUFFER_BYTES), position)
        fmt = _string_constant(t, spec.encode("latin-1") + b"\0")
        written = b.call(snprintf, [at, room, fmt, *arguments])
        negative = b.icmp_signed("<", written, ir.Constant(I32, 0))
        failed = b.or_(failed, negative)
        grown = b.add(position, b.sext(b.select(negative, ir.Constant(I32, 0), written), I64))
        # snprintf returns what it would have written: stop at the buffer's last byte.
        position = b.select(b.icmp_unsigned(">", grown, last), last, grown)
    printf_fn = t.mt.declare("printf", ir.FunctionType(I32, [ir.PointerType()], var_arg=True))
    print_all = _string_constant(t, b"%.*s\0")
    written = b.call(printf_fn, [print_all, b.trunc(position, I32), buffer])
    fflush = t.mt.declare("fflush", ir.FunctionType(I32, [ir.PointerType()]))
    b.call(fflush, [ir.Constant(ir.PointerType(), None)])
    # OpenCL's printf returns 0 on success and -1 on failure, not a character count.
    failed = b.or_(failed, b.icmp_signed("<", written, ir.Constant(I32, 0)))
    result = b.select(failed, ir.Constant(I32, -1), ir.Constant(I32, 0))
    return b.trunc(result, ty) if ty.width < 32 else result


def _buffer(t: FunctionTranslator) -> ir.Value:
    """The function's printf buffer: one stack slot in its entry block, shared by its calls."""
    found = getattr(t, "printf_buffer", None)
    if found is None:
        found = t.alloca(ir.ArrayType(I8, BUFFER_BYTES), "printf.buffer")
        t.printf_buffer = found
    return found


def _string_constant(t: FunctionTranslator, data: bytes) -> ir.Value:
    ty = ir.ArrayType(I8, len(data))
    name = f"printf.fmt.{len(t.mt.llmodule.globals)}"
    gv = ir.GlobalVariable(t.mt.llmodule, ty, name)
    gv.type = ir.PointerType()  # opaque pointers, as everywhere
    gv.global_constant = True
    gv.linkage = "internal"
    gv.initializer = ir.Constant(ty, bytearray(data))
    return gv
