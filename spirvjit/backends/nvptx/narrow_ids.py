"""NVIDIA: 32-bit ids in the generic variant, where a kernel uses a 64-bit id as an ``int``.

The generic variant's global id is ``offset + zext(group * size + local)``, 64-bit because
the global offset is. ``int x = get_global_id(0)`` truncates it, and where the int is
sign-extended again (``(size_t)y * n + x``, an index) InstCombine writes
``sext(trunc(id))`` as ``ashr(shl(id, 32), 32)``, which keeps the 64-bit sum alive: on
NVIDIA a widening, a 64-bit add and a narrowing per id (mandelbrot: 61 PTX instructions,
clang's native build 58; stencil3d 82 against 72). The low half of the sum is
``core + trunc(offset)`` whatever the carry, so where every use of the sum is such a
truncation it is computed in 32 bits: ``trunc(id)`` becomes that sum, ``ashr(shl(id, 32),
k)`` becomes ``shl(sext(sum), 32 - k)`` (``sext(sum)`` for 32), and the 64-bit sum is
dead (the back end drops it; on NVIDIA the offset's load narrows to ``ld.param.b32``).

NVIDIA only: on AMD the same rewrite measured mixed (mandelbrot's generic variant 2-3
instructions fewer, matvec's 1-3 more; both below clang's native build either way).

After O3, on the IR text, because O3 is what writes the shifts (it would undo the
rewrite); the rewritten module is parsed again (a few milliseconds, only where the
pattern is).
"""

from __future__ import annotations

import re

_NAME = r"%[-\w$.]+"
_ZEXT = re.compile(rf"^[ \t]*({_NAME}) = zext (?:nneg )?i32 ({_NAME}) to i64$", re.M)
_SUM = re.compile(rf"^([ \t]*)({_NAME}) = add (?:nuw |nsw )*i64 ({_NAME}), ({_NAME})$", re.M)


def _uses(text: str, name: str) -> list[re.Match]:
    """Every place ``name`` appears (its definition included), as matches of its line."""
    return list(re.finditer(rf"^.*{re.escape(name)}(?![-\w$.]).*$", text, re.M))


def narrow_truncated_sums(text: str) -> tuple[str, int]:
    """``text`` with every 64-bit ``x + zext(c)`` whose uses are all truncations to i32
    (``trunc``, or the ``shl 32``/``ashr exact`` sign extension) computed in 32 bits; and
    how many sums were."""
    zexts = dict(_ZEXT.findall(text))
    changed = 0
    for match in list(_SUM.finditer(text)):
        indent, total, a, b = match.groups()
        if b in zexts:
            wide, core = a, zexts[b]
        elif a in zexts:
            wide, core = b, zexts[a]
        else:
            continue
        edits = _narrowing_edits(text, total, core)
        if edits is None:
            continue
        low, offset = f"{total}.lo32", f"{total}.off32"
        added = (
            f"{indent}{offset} = trunc i64 {wide} to i32\n{indent}{low} = add i32 {core}, {offset}"
        )
        # All or nothing: each rewritten line (and the definition) exactly once.
        edits.append((match[0], f"{match[0]}\n{added}"))
        lines = [re.compile(rf"^{re.escape(old)}$", re.M) for old, _ in edits]
        if low in text or offset in text or any(len(ln.findall(text)) != 1 for ln in lines):
            continue
        for line, (_, new) in zip(lines, edits, strict=True):
            text = line.sub(lambda _m, new=new: new, text)
        changed += 1
    return text, changed


def _narrowing_edits(text: str, total: str, core: str) -> list[tuple[str, str]] | None:
    """The line rewrites that take every use of the 64-bit ``total`` to its low half
    (``{total}.lo32``), or None where some use needs the upper half."""
    low = f"{total}.lo32"
    edits = []
    lines = _uses(text, total)
    for line in lines[1:]:  # the first is the definition
        s = line[0]
        found = re.fullmatch(rf"([ \t]*{_NAME}) = trunc i64 {re.escape(total)} to i32", s)
        if found:
            edits.append((s, f"{found[1]} = add i32 {low}, 0"))
            continue
        found = re.fullmatch(
            rf"([ \t]*)({_NAME}) = shl (?:nuw |nsw )*i64 {re.escape(total)}, 32", s
        )
        if found is None:
            return None
        shifted = found[2]
        users = _uses(text, shifted)[1:]
        if not users:
            return None
        edits.append((s, f"{found[1]}{shifted} = sext i32 {low} to i64"))
        for user in users:
            shift = re.fullmatch(
                rf"([ \t]*{_NAME}) = ashr (?:exact )?i64 {re.escape(shifted)}, (\d+)", user[0]
            )
            if shift is None or int(shift[2]) > 32:
                return None
            k = int(shift[2])
            # By 32 the sign extension itself (which AMD's multiply lowering recognises).
            narrow = f"sext i32 {low} to i64" if k == 32 else f"shl i64 {shifted}, {32 - k}"
            edits.append((user[0], f"{shift[1]} = {narrow}"))
    return edits if lines[1:] else None
