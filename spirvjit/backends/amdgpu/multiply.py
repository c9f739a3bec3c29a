"""Sign-extended operands for AMD's 32x32->64 multiply, where O3 wrote one as ``zext nneg``.

``(size_t)i * n`` with ``int i`` and ``int n`` is ``mul i64 (sext i), (sext n)``: one
``v_mad_i64_i32`` on gfx9+. Where ``n`` is known non-negative (the multiply sits after a
``n > 0`` loop guard, which is where a SPIR-V producer's loop strength reduction puts a
row offset such as matvec's ``a + (size_t)i * cols``), InstCombine rewrites ``sext n``
as ``zext nneg n``. AMDGPU's 64-bit multiply lowering then sees one operand with 33 sign
bits and one with 32 known-zero upper bits, fits neither ``v_mad_i64_i32`` (both
sign-extended) nor ``v_mad_u64_u32`` (both zero-extended), and multiplies 64x64: two
``v_mad_u64_u32`` and their moves (matvec on gfx942: 8 VGPRs, clang's native build 6).

``zext nneg x`` and ``sext x`` are the same value (``zext nneg`` of a negative ``x`` is
poison), so where every use of one is such a multiply it is written back as the sign
extension the source had. Only then: a zero extension is what ``v_mad_u64_u32`` and
plain 64-bit adds want, so others stay.
"""

from __future__ import annotations

import re

_NAME = r"%[-\w$.]+"
_ZEXT_NNEG = re.compile(rf"^(\s*({_NAME}) = )zext nneg (i32 {_NAME}) to i64$", re.M)
# A 64-bit value with at least 33 sign bits: a sign extension from i32, or the
# shl/ashr-by-32 pair InstCombine makes of sext(trunc(x)).
_SIGNED = re.compile(
    rf"^\s*({_NAME}) = (?:sext i32 {_NAME} to i64|ashr exact i64 {_NAME}, 32)$", re.M
)
_MUL = re.compile(rf"^\s*{_NAME} = mul (?:nuw |nsw )*i64 ({_NAME}), ({_NAME})$", re.M)


def _uses(text: str, name: str) -> int:
    """How often ``name`` appears as an operand (not counting its definition)."""
    return len(re.findall(rf"{re.escape(name)}(?![-\w$.])", text)) - 1


def sign_extend_multiplies(text: str) -> tuple[str, int]:
    """``text`` (a function's or module's IR) with every ``zext nneg i32 -> i64`` whose
    only uses are 64-bit multiplies by a sign-extended i32 written as ``sext``; and how
    many were."""
    signed = set(_SIGNED.findall(text))
    # zext nneg value -> how many of its uses are multiplies by a signed operand.
    by_signed: dict[str, int] = {}
    for a, b in _MUL.findall(text):
        for mine, other in ((a, b), (b, a)):
            if other in signed:
                by_signed[mine] = by_signed.get(mine, 0) + 1
    changed = 0

    def rewrite(match: re.Match) -> str:
        nonlocal changed
        name = match[2]
        if by_signed.get(name, 0) == 0 or by_signed[name] != _uses(text, name):
            return match[0]
        changed += 1
        return f"{match[1]}sext {match[3]} to i64"

    return _ZEXT_NNEG.sub(rewrite, text), changed
