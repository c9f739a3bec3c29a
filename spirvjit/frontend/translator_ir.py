"""Keep llvm-spirv-15 from losing the saturation and rounding of ``convert_*`` calls.

llvm-spirv-15 translates ``convert_int_sat_rtz(x)`` to ``OpConvertFToS`` decorated
``SaturatedConversion`` and ``FPRoundingMode RTZ``. When the call's result is used before
the call is translated (a phi fed from a loop's back edge, or a use in a block that LLVM
lists before the call's block), the translator first hands out a forward id for the
result; the conversion later takes that id, but its decorations stay on the id it was
created with, which nothing defines (``OpDecorate %173 SaturatedConversion`` next to an
undecorated ``%154 = OpConvertFToS``). The conversion then no longer saturates or rounds
as asked. Dropping the dangling decoration would turn that into a silently wrong result;
the meaning cannot be recovered from the SPIR-V with certainty either.

:func:`copy_conversion_results` avoids the forward reference instead: each
``%r = call ... @_Z..convert_...(...)`` becomes ``%sjc.r = call ...`` followed by
``%r = select i1 true, T %sjc.r, T %sjc.r`` (a vector of true for a vector T). The call's
only use is the select right after it, translated next, so no forward id is ever handed
out for it; the select may be forward-referenced, and has no decorations to lose. The
value numbering stays as it was (``%sjc.r`` is a name, ``%r`` keeps its number and
position).
"""

from __future__ import annotations

import re

_PREFIX = "sjc."
# `%r = [tail] call [cc] [ret attrs] T @_Z<n>convert_<...>(` where T is the result type.
_CALL = re.compile(
    r"^(\s*)(%[-\w$.]+) = ((?:tail |musttail |notail )?call [^@\n]*?"
    r"(<\d+ x (?:i\d+|half|float|double)>|i\d+|half|float|double) "
    r"@_Z\d+convert_\w+\(.*)$",
    re.MULTILINE,
)


_VECTOR = re.compile(r"<(\d+) x ")


def select_condition(ty: str) -> str:
    """The all-true condition of an identity ``select`` of type ``ty``: ``i1 true``, or a
    vector of them for a vector (a scalar condition on vectors is SPIR-V 1.4 and later,
    and llvm-spirv-15 writes older modules)."""
    m = _VECTOR.match(ty)
    if m is None:
        return "i1 true"
    lanes = int(m.group(1))
    return f"<{lanes} x i1> <" + ", ".join(["i1 true"] * lanes) + ">"


def copy_conversion_results(ir_text: str) -> tuple[str, int]:
    """``ir_text`` with the result of every ``convert_*`` call passed through a select
    (see the module docstring), and how many calls were rewritten."""

    def copy(m: re.Match) -> str:
        indent, name, call, ty = m.groups()
        raw = f"%{_PREFIX}{name[1:]}"
        cond = select_condition(ty)
        return f"{indent}{raw} = {call}\n{indent}{name} = select {cond}, {ty} {raw}, {ty} {raw}"

    return _CALL.subn(copy, ir_text)


_FMULADD_DECLARE = re.compile(r"^declare [^\n]*@llvm\.fmuladd\.(\w+)\([^\n]*\n", re.MULTILINE)


def fuse_fmuladd(ir_text: str) -> tuple[str, int]:
    """``ir_text`` with ``llvm.fmuladd`` (``a * b + c`` that may be fused, as clang emits
    it under ``FP_CONTRACT ON``) turned into ``llvm.fma``, and how many uses changed.

    llvm-spirv-15 writes fmuladd as OpenCL.std ``mad``, which spirvjit computes unfused,
    while clang-22's SPIR-V back end writes it as ``fma``: the two producers would round
    the same source differently. Fusing is what fmuladd allows, and what the default
    producer does, so both now give the same bits.
    """
    if "@llvm.fmuladd." not in ir_text:
        return ir_text, 0

    def declaration(m: re.Match) -> str:
        # An llvm.fma of the same type may be declared already: one declaration is enough.
        return "" if f"@llvm.fma.{m.group(1)}(" in ir_text else m.group(0)

    text = _FMULADD_DECLARE.sub(declaration, ir_text)
    return text.replace("@llvm.fmuladd.", "@llvm.fma."), text.count("@llvm.fmuladd.")
