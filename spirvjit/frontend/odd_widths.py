"""Widen odd-width integers (``i2``, ``i3``, ``i63``, ...) in clang-15's LLVM IR for llvm-spirv-15.

SPIR-V without ``SPV_INTEL_arbitrary_precision_integers`` has 8, 16, 32 and 64-bit integers
only, and llvm-spirv-15 stops on any other width ("InvalidBitWidth"). clang-15 -O2 makes
them anyway: spir64's data layout names no native integer widths, so InstCombine narrows a
``switch`` on ``x % 5`` to ``switch i3`` (``trunc`` to feed it), and SimplifyCFG then turns
parts of that switch into ``add i3``/``icmp ult i3`` range checks.

:func:`widen_odd_integers` rewrites each odd-width value to the next legal width (``i3`` to
``i8``, ``i63`` to ``i64``) and keeps it *zero-extended* there: the wide value always equals
the narrow value's unsigned reading. That is exact for every instruction it accepts:

* ``and``/``or``/``xor``/``udiv``/``urem``/``lshr``, unsigned compares, ``select``,
  ``phi``, ``switch`` and ``zext`` keep a zero-extended value zero-extended;
* ``add``/``sub``/``mul``/``shl`` and ``trunc`` to an odd width are followed by an ``and``
  with the narrow width's mask (wrap-around at the narrow width);
* ``sdiv``/``srem``/``ashr``, signed compares and ``sext`` first sign-extend their operands
  inside the wide register (``shl`` then ``ashr``), and mask the result;
* constants are written as their unsigned reading (``i3 -1`` becomes ``i8 7``).

``nuw``/``nsw``/``exact`` flags are dropped (they speak of the narrow width; dropping a flag
only removes poison). Odd-width vectors are taken apart before, where their shape is known:
:func:`load_odd_vectors_whole` (a load through a cast pointer) and
:func:`split_odd_vector_casts` (lanes of a bitcast). Anything else with an odd width
(memory, calls, other vector uses, function signatures, ``getelementptr`` indices) raises
:class:`UnsupportedWidth`: the caller then hands the IR on unchanged, and llvm-spirv-15
reports it as before.
"""

from __future__ import annotations

import re

_LEGAL = (8, 16, 32, 64)
# `iN` as a type: not part of a name (%i3, @i3, label i3:) nor of a longer word.
_INT_TYPE = re.compile(r"(?<![%@\w.$\"-])i(\d+)(?![\w.$:])")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_VALUE = r"(%[-\w$.]+|-?\d+|undef|poison|true|false)"
_NAME = r"(%[-\w$.]+)"
_FLAGS = r"((?: (?:nuw|nsw|exact))*)"
_TAIL = r"((?:, ![-\w.]+ ![-\w.]+)*)$"  # metadata attachments, kept as they are

_BINARY = re.compile(
    rf"^(\s*){_NAME} = (add|sub|mul|shl|and|or|xor|udiv|urem|lshr|sdiv|srem|ashr){_FLAGS} "
    rf"i(\d+) {_VALUE}, {_VALUE}{_TAIL}"
)
_ICMP = re.compile(rf"^(\s*){_NAME} = icmp (\w+) i(\d+) {_VALUE}, {_VALUE}{_TAIL}")
_CAST = re.compile(rf"^(\s*){_NAME} = (trunc|zext|sext) i(\d+) {_VALUE} to i(\d+){_TAIL}")
_SELECT = re.compile(
    rf"^(\s*){_NAME} = select i1 {_VALUE}, i(\d+) {_VALUE}, i(\d+) {_VALUE}{_TAIL}"
)
_PHI = re.compile(rf"^(\s*){_NAME} = phi i(\d+) ((?:\[ {_VALUE}, {_NAME} \](?:, )?)+){_TAIL}")
_PHI_PAIR = re.compile(rf"\[ {_VALUE}, {_NAME} \]")
_SWITCH = re.compile(rf"^(\s*)switch i(\d+) {_VALUE}, label {_NAME} \[\s*(\]?)(.*)$")
_CASE = re.compile(rf"^(\s*)i(\d+) {_VALUE}, label {_NAME}\s*$")

_WRAPPING = frozenset({"add", "sub", "mul", "shl"})
_SIGNED = frozenset({"sdiv", "srem", "ashr"})
_SIGNED_PREDICATES = frozenset({"slt", "sle", "sgt", "sge"})
_TEMP = "spvjit.w"


_VECTOR_CAST = re.compile(
    rf"^(\s*){_NAME} = bitcast <(\d+) x i(\d+)> {_NAME} to <(\d+) x i(\d+)>{_TAIL}"
)
_EXTRACT = re.compile(
    rf"^(\s*){_NAME} = extractelement <(\d+) x i(\d+)> {_NAME}, i(?:32|64) (\d+){_TAIL}"
)
_SPLIT = "spvjit.v"


def split_odd_vector_casts(ir_text: str) -> tuple[str, int]:
    """Rewrites ``extractelement (bitcast <N x iM> %x to <K x iB>), C`` with an odd ``B``
    into ``trunc (lshr (extractelement %x, C*B/M), C*B%M) to iB``; returns the text and
    how many extracts were rewritten.

    InstCombine makes that shape of ``trunc (extractelement <N x iM> %v, c)`` (a switch on
    ``v.s2 & 3`` narrowed to ``i2``); :func:`widen_odd_integers` takes ``trunc`` to an odd
    width, not odd-width vectors. spir64 is little-endian: element C of the narrow vector is
    bits [C*B, C*B+B) of the wide one. A cast with any other use is left as it is (and the
    widener then refuses it, as before). The cast itself becomes a no-op bitcast to its own
    type, so that clang's numbering of unnamed values stays intact."""
    if _SPLIT in ir_text:
        return ir_text, 0
    return _each_function(ir_text, _split_in)


def _each_function(ir_text: str, rewrite) -> tuple[str, int]:
    """``rewrite(lines, first)`` applied to the body of each function in ``ir_text``
    (value names are the function's own); ``first`` numbers its temporaries on from the
    functions before. Returns the text and the sum of the counts ``rewrite`` returned."""
    lines = ir_text.split("\n")
    out: list[str] = []
    body: list[str] | None = None
    total = 0
    for line in lines:
        if body is None:
            out.append(line)
            if line.startswith("define ") and line.rstrip().endswith("{"):
                body = []
        elif line.startswith("}"):
            total += rewrite(body, total)
            out += body
            out.append(line)
            body = None
        else:
            body.append(line)
    if body is not None:  # not a whole function: left as it is
        out += body
    return "\n".join(out), total


def _uses(lines: list[str], names) -> dict[str, int]:
    """How often each of ``names`` occurs in ``lines`` (its definition included)."""
    uses = dict.fromkeys(names, 0)
    for line in lines:
        for name in uses:
            if name in line:
                uses[name] += len(re.findall(re.escape(name) + r"(?![-\w$.])", line))
    return uses


def _split_in(lines: list[str], first: int) -> int:
    """:func:`split_odd_vector_casts` on one function's body, in place."""
    casts: dict[str, tuple[int, str, int, int]] = {}  # result -> (line, source, lanes, width)
    for index, line in enumerate(lines):
        m = _VECTOR_CAST.match(line)
        if m is None:
            continue
        lanes, width, narrow = int(m.group(3)), int(m.group(4)), int(m.group(7))
        if _is_odd(narrow) and not _is_odd(width) and width % narrow == 0:
            casts[m.group(2)] = (index, m.group(5), lanes, width)
    if not casts:
        return 0
    uses = _uses(lines, casts)
    extracts: list[tuple[int, re.Match]] = []
    for index, line in enumerate(lines):
        m = _EXTRACT.match(line)
        if m is not None and m.group(5) in casts:
            extracts.append((index, m))
    extracted: dict[str, int] = dict.fromkeys(casts, 0)
    for _, m in extracts:
        extracted[m.group(5)] += 1
    # Each cast appears once as its own definition, then only as extracts' operand.
    usable = {name for name in casts if uses[name] == 1 + extracted[name]}
    rewritten = 0
    for index, m in extracts:
        name = m.group(5)
        if name not in usable:
            continue
        _, source, lanes, width = casts[name]
        narrow = int(m.group(4))
        bit = int(m.group(6)) * narrow
        indent, result, temp = m.group(1), m.group(2), f"%{_SPLIT}{first + rewritten}"
        lines[index] = (
            f"{indent}{temp}.e = extractelement <{lanes} x i{width}> {source}, i64 {bit // width}\n"
            f"{indent}{temp}.s = lshr i{width} {temp}.e, {bit % width}\n"
            f"{indent}{result} = trunc i{width} {temp}.s to i{narrow}"
        )
        rewritten += 1
    for name in usable:
        index, source, lanes, width = casts[name]
        indent = _VECTOR_CAST.match(lines[index]).group(1)
        vector = f"<{lanes} x i{width}>"
        lines[index] = f"{indent}{name} = bitcast {vector} {source} to {vector}"
    return rewritten


_POINTER = r"((?: addrspace\(\d+\))?\*)"
_POINTER_CAST = re.compile(
    rf"^(\s*){_NAME} = bitcast <(\d+) x i(\d+)>{_POINTER} {_NAME} "
    rf"to <(\d+) x i(\d+)>{_POINTER}{_TAIL}"
)
_VECTOR_LOAD = re.compile(
    rf"^(\s*){_NAME} = load (volatile )?<(\d+) x i(\d+)>, <\4 x i\5>{_POINTER} {_NAME}(,.*)?$"
)
_LOADED = "spvjit.l"


def load_odd_vectors_whole(ir_text: str) -> tuple[str, int]:
    """Rewrites ``load <K x iB>`` (``B`` odd) through ``bitcast <N x iM>* %p to <K x iB>*``
    into a load of ``<N x iM>`` from ``%p`` and a ``bitcast`` of the value to ``<K x iB>``;
    returns the text and how many loads were rewritten.

    InstCombine reads ``switch (v.s1 & 3)`` on a ``uchar4 v`` loaded from memory as lane 4
    of such a load of ``<16 x i2>``. The value bitcast that takes its place is then split
    by :func:`split_odd_vector_casts` (same bits, same lanes: exact). A pointer cast with any
    other use, or a cast between sizes that differ, is left as it is (and the widener then
    refuses it). The pointer cast becomes a no-op cast to its own type, so that clang's
    numbering of unnamed values stays intact.

    This needs clang-15 run with ``-disable-vector-combine``: otherwise VectorCombine turns
    the load and extract into ``load i2`` from ``getelementptr <16 x i2>, p, 0, 4``, and a
    getelementptr counts non-byte-sized lanes as whole bytes, so that address is 4 bytes
    on instead of 1 (llvm/llvm-project#67060, the load side of it): no rewrite can recover
    the lane from there."""
    if _LOADED in ir_text:
        return ir_text, 0
    return _each_function(ir_text, _load_whole_in)


def _load_whole_in(lines: list[str], first: int) -> int:
    """:func:`load_odd_vectors_whole` on one function's body, in place."""
    casts: dict[str, tuple[int, str, str, str]] = {}  # name -> (line, source, wide, narrow)
    for index, line in enumerate(lines):
        m = _POINTER_CAST.match(line)
        if m is None:
            continue
        lanes, width, narrow_lanes, narrow = (int(m.group(i)) for i in (3, 4, 7, 8))
        if (
            _is_odd(narrow)
            and not _is_odd(width)
            and width != 1
            and lanes * width == narrow_lanes * narrow
            and m.group(5) == m.group(9)  # one address space
        ):
            wide_type = f"<{lanes} x i{width}>"
            casts[m.group(2)] = (index, m.group(6), wide_type, f"<{narrow_lanes} x i{narrow}>")
    if not casts:
        return 0
    uses = _uses(lines, casts)
    loads: list[tuple[int, re.Match]] = []
    for index, line in enumerate(lines):
        m = _VECTOR_LOAD.match(line)
        if m is not None and m.group(7) in casts:
            loads.append((index, m))
    loaded: dict[str, int] = dict.fromkeys(casts, 0)
    for _, m in loads:
        loaded[m.group(7)] += 1
    # Each cast appears once as its own definition, then only as loads' address.
    usable = {name for name in casts if loaded[name] and uses[name] == 1 + loaded[name]}
    rewritten = 0
    for index, m in loads:
        indent, result, volatile, _, _, pointer, address, rest = m.groups()
        if address not in usable:
            continue
        _, _, wide_type, narrow_type = casts[address]
        temp = f"%{_LOADED}{first + rewritten}"
        lines[index] = (
            f"{indent}{temp} = load {volatile or ''}{wide_type}, {wide_type}{pointer} "
            f"{address}{rest or ''}\n"
            f"{indent}{result} = bitcast {wide_type} {temp} to {narrow_type}"
        )
        rewritten += 1
    for name in usable:
        index, source, wide_type, _ = casts[name]
        m = _POINTER_CAST.match(lines[index])
        pointer = f"{wide_type}{m.group(5)}"
        lines[index] = f"{m.group(1)}{name} = bitcast {pointer} {source} to {pointer}{m.group(10)}"
    return rewritten


class UnsupportedWidth(ValueError):
    """An odd-width integer in a place :func:`widen_odd_integers` does not rewrite."""


def _is_odd(bits: int) -> bool:
    return bits != 1 and bits not in _LEGAL


def _wide(bits: int) -> int:
    """The legal width an integer of ``bits`` bits is kept in."""
    if bits == 1 or bits in _LEGAL:
        return bits
    for legal in _LEGAL:
        if bits < legal:
            return legal
    raise UnsupportedWidth(f"i{bits} is wider than 64 bits")


def _odd_types(line: str) -> list[int]:
    return [int(b) for b in _INT_TYPE.findall(_STRING.sub('""', line)) if _is_odd(int(b))]


class _Function:
    """The rewrite of one function body; ``out`` collects the lines."""

    def __init__(self, counter: list[int]) -> None:
        self.out: list[str] = []
        self.counter = counter
        self.in_switch: int | None = None  # width of the odd switch whose cases follow

    def temp(self) -> str:
        self.counter[0] += 1
        return f"%{_TEMP}{self.counter[0]}"

    @staticmethod
    def const(value: str, bits: int) -> str:
        """A constant operand of an iN ``bits``-wide value, as its unsigned reading."""
        if value.startswith("%") or value in ("undef", "poison"):
            return value
        if value in ("true", "false"):  # only i1 spells constants so
            return value
        return str(int(value) & ((1 << bits) - 1)) if _is_odd(bits) else value

    def sext_in_reg(self, indent: str, value: str, bits: int) -> str:
        """``value`` (i``bits``, kept zero-extended) sign-extended inside its wide register."""
        wide = _wide(bits)
        if not _is_odd(bits):
            return value
        if not value.startswith("%"):
            if value in ("undef", "poison"):
                return value
            v = int(value) & ((1 << bits) - 1)
            return str(v - (1 << bits) if v >> (bits - 1) else v)
        up, down = self.temp(), self.temp()
        shift = wide - bits
        self.out.append(f"{indent}{up} = shl i{wide} {value}, {shift}")
        self.out.append(f"{indent}{down} = ashr i{wide} {up}, {shift}")
        return down

    def masked(self, indent: str, name: str, bits: int, expr: str, tail: str) -> None:
        """``name = expr`` wrapped to ``bits`` bits (``expr`` computes in the wide type)."""
        if not _is_odd(bits):
            self.out.append(f"{indent}{name} = {expr}{tail}")
            return
        raw = self.temp()
        self.out.append(f"{indent}{raw} = {expr}{tail}")
        self.out.append(f"{indent}{name} = and i{_wide(bits)} {raw}, {(1 << bits) - 1}")

    # -- one line ---------------------------------------------------------------------

    def line(self, line: str) -> None:
        if self.in_switch is not None:
            self.case(line)
            return
        if not _odd_types(line):
            self.out.append(line)
            return
        for pattern, handler in (
            (_BINARY, self.binary),
            (_ICMP, self.icmp),
            (_CAST, self.cast),
            (_SELECT, self.select),
            (_PHI, self.phi),
            (_SWITCH, self.switch),
        ):
            m = pattern.match(line)
            if m:
                handler(m)
                return
        raise UnsupportedWidth(f"odd-width integer in: {line.strip()}")

    def binary(self, m: re.Match) -> None:
        indent, name, op, _flags, bits, a, b, tail = m.groups()
        bits = int(bits)
        wide = _wide(bits)
        a, b = self.const(a, bits), self.const(b, bits)
        if op in _SIGNED:
            a = self.sext_in_reg(indent, a, bits)
            if op != "ashr":
                b = self.sext_in_reg(indent, b, bits)
            self.masked(indent, name, bits, f"{op} i{wide} {a}, {b}", tail)
        elif op in _WRAPPING:
            self.masked(indent, name, bits, f"{op} i{wide} {a}, {b}", tail)
        else:
            self.out.append(f"{indent}{name} = {op} i{wide} {a}, {b}{tail}")

    def icmp(self, m: re.Match) -> None:
        indent, name, pred, bits, a, b, tail = m.groups()
        bits = int(bits)
        a, b = self.const(a, bits), self.const(b, bits)
        if pred in _SIGNED_PREDICATES:
            a, b = self.sext_in_reg(indent, a, bits), self.sext_in_reg(indent, b, bits)
        self.out.append(f"{indent}{name} = icmp {pred} i{_wide(bits)} {a}, {b}{tail}")

    def cast(self, m: re.Match) -> None:
        indent, name, op, src, value, dst, tail = m.groups()
        src, dst = int(src), int(dst)
        value = self.const(value, src)
        ws, wd = _wide(src), _wide(dst)
        if op == "sext":
            value = self.sext_in_reg(indent, value, src)
        # Within one register (i3 to i8, i5 to i3) the value is kept as it is, then masked.
        expr = f"or i{wd} {value}, 0" if ws == wd else f"{op} i{ws} {value} to i{wd}"
        if op == "zext":
            self.out.append(f"{indent}{name} = {expr}{tail}")  # zero-extended stays so
        else:
            self.masked(indent, name, dst, expr, tail)

    def select(self, m: re.Match) -> None:
        indent, name, cond, bits, a, bits_b, b, tail = m.groups()
        bits = int(bits)
        if int(bits_b) != bits:
            raise UnsupportedWidth(f"select of two widths: {m.group(0).strip()}")
        a, b = self.const(a, bits), self.const(b, bits)
        wide = _wide(bits)
        self.out.append(f"{indent}{name} = select i1 {cond}, i{wide} {a}, i{wide} {b}{tail}")

    def phi(self, m: re.Match) -> None:
        indent, name, bits, pairs, *_, tail = m.groups()
        bits = int(bits)
        incoming = ", ".join(
            f"[ {self.const(v, bits)}, {block} ]" for v, block in _PHI_PAIR.findall(pairs)
        )
        self.out.append(f"{indent}{name} = phi i{_wide(bits)} {incoming}{tail}")

    def switch(self, m: re.Match) -> None:
        indent, bits, value, default, closed, rest = m.groups()
        bits = int(bits)
        if rest.strip():
            raise UnsupportedWidth(f"switch on one line: {m.group(0).strip()}")
        value = self.const(value, bits)
        self.out.append(f"{indent}switch i{_wide(bits)} {value}, label {default} [{closed}")
        if not closed:
            self.in_switch = bits

    def case(self, line: str) -> None:
        bits = self.in_switch
        if line.strip() == "]":
            self.in_switch = None
            self.out.append(line)
            return
        m = _CASE.match(line)
        if m is None or int(m.group(2)) != bits:
            raise UnsupportedWidth(f"unexpected line in a switch: {line.strip()}")
        indent, _, value, label = m.groups()
        self.out.append(f"{indent}i{_wide(bits)} {self.const(value, bits)}, label {label}")


def widen_odd_integers(ir_text: str) -> tuple[str, int]:
    """``ir_text`` with every odd-width integer kept in the next legal width, and how many
    lines were rewritten. Raises UnsupportedWidth where one appears in a construct this
    rewrite does not handle (see the module docstring); the text is then not changed."""
    if not any(_odd_types(line) for line in ir_text.splitlines()):
        return ir_text, 0
    if _TEMP in ir_text:
        raise UnsupportedWidth(f"the IR already uses the name prefix {_TEMP!r}")
    out: list[str] = []
    counter = [0]
    function: _Function | None = None
    rewritten = 0
    for line in ir_text.splitlines():
        if function is None:
            if line.startswith("define ") and line.rstrip().endswith("{"):
                if _odd_types(line):
                    raise UnsupportedWidth(f"odd-width integer in a signature: {line.strip()}")
                function = _Function(counter)
                out.append(line)
            elif _odd_types(line) and not line.startswith("!") and not line.startswith(";"):
                raise UnsupportedWidth(f"odd-width integer outside a function: {line.strip()}")
            else:
                out.append(line)
            continue
        if line.startswith("}"):
            if function.in_switch is not None:
                raise UnsupportedWidth("a switch's case list runs past its function")
            out += function.out
            out.append(line)
            function = None
            continue
        before = len(function.out)
        function.line(line)
        if len(function.out) != before + 1 or function.out[-1] != line:
            rewritten += 1
    if function is not None:
        raise UnsupportedWidth("a function body runs past the end of the module")
    return "\n".join(out) + ("\n" if ir_text.endswith("\n") else ""), rewritten
