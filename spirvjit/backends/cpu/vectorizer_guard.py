"""Detects a miscompile of LLVM 22's loop vectorizer in an optimized kernel.

The loop vectorizer makes an access consecutive under a *wrap predicate* when an index
is a narrow recurrence: ``a[(lid + 7) % 16]`` is ``a[zext({7,+,1} in i4)]``, consecutive
only while the 4-bit value does not wrap, which a runtime check (``vector.scevcheck``)
must test. LLVM 22.1 (llvmlite 0.50's and Debian's opt-22) drops that check when the
loop also needs a wrap predicate of a *wider* recurrence with a start at least as large
(``in[lid + 154u]``, an i32 one): ``SCEVWrapPredicate::implies`` compares start and step
after widening and ignores that the narrower recurrence wraps sooner. The vector loop
then reads ``a[15..18]`` for work-items 8..11 instead of ``a[15], a[0..2]``: a wrong
result with no error (tests/fuzz/findings/barrier_helper_after_branch.cl, where the
words after a ``__local long lm[16]`` are the barrier frames, so work-items read
another work-item's private values). Reduced LLVM reproducer: tests/kernels/
test_vectorizer_wrap.py's ``REDUCED_IR``.

No LLVM option turns the faulty implication off (``-vectorize-scev-check-threshold``
counts the predicates before the consecutive-access ones are added). So ``optimize``
looks at the result: a function whose vector loop (a ``vector.body`` block) makes a
consecutive (wide) load or store at an address computed from an ``and`` with a
small constant (a recurrence narrower than 32 bits, after InstCombine's folds) is
optimized again without the loop vectorizer. Such loops seldom run vectorized anyway:
the check sends every loop longer than the mask's range to the scalar loop. A narrow
index guarded correctly is sent back too (the check cannot tell a dropped predicate
from a kept one); a wrongly dropped *32-bit* predicate (implied by a 64-bit one, which
needs a uint index near 2^32 to matter) is not detected.
"""

from __future__ import annotations

import re

import llvmlite.binding as llvm

# An ``and`` with a constant below this keeps fewer than 31 bits: the trace of a
# recurrence narrower than 32 bits (i32 indices show masks such as 0xffffffff).
_NARROW_MASK_LIMIT = 1 << 31
# The address arithmetic followed back from a wide access, at most this deep.
_DEPTH = 8
_ADDRESS_OPS = frozenset({"getelementptr", "add", "or", "xor", "sub", "shl", "mul", "zext"})
_ADDRESS_OPS |= {"sext", "trunc"}
# llvmlite's operands cannot be followed to their definitions: the walk reads the text.
_DEF = re.compile(r"^\s*(%[-\w.$]+|%\"[^\"]+\") = (.*)$", re.MULTILINE)
_LABEL = re.compile(r"^([-\w.$]+|\"[^\"]+\"):", re.MULTILINE)
_NAME = re.compile(r"%[-\w.$]+|%\"[^\"]+\"")
_OPCODE = re.compile(r"(?:tail |musttail |notail )?(\w+)")
_WIDE_LOAD = re.compile(r"= load <\d+ x [^>]+>, ptr (%[-\w.$]+|%\"[^\"]+\")")
_WIDE_STORE = re.compile(r"^\s*store <\d+ x [^>]+> [^,]+, ptr (%[-\w.$]+|%\"[^\"]+\")", re.M)
_AND_CONSTANT = re.compile(r"\band i\d+ (?:%[-\w.$\"]+, (-?\d+)|(-?\d+), %[-\w.$\"]+)\s*$")


def _narrow_masked(name: str, defs: dict[str, str], depth: int = 0) -> bool:
    """Whether address ``name`` is computed from an ``and`` with a small constant
    (phis and loads end the walk: the recurrence itself is not a mask)."""
    text = defs.get(name)
    if text is None or depth > _DEPTH:
        return False
    opcode = _OPCODE.match(text)
    if opcode is None:
        return False
    if opcode.group(1) == "and":
        found = _AND_CONSTANT.search(text)
        if found:
            constant = int(found.group(1) or found.group(2))
            if 0 <= constant < _NARROW_MASK_LIMIT:
                return True
    elif opcode.group(1) not in _ADDRESS_OPS:
        return False
    operands = _NAME.findall(text)
    return any(_narrow_masked(op, defs, depth + 1) for op in operands if op != name)


def _vector_loop_text(text: str) -> str:
    """The instructions of the loop vectorizer's loops (``vector.body`` blocks) in a
    function's text (its check blocks may be merged away by then)."""
    parts = _LABEL.split(text)
    # parts: [before the first label, label, body, label, body, ...]
    pairs = zip(parts[1::2], parts[2::2], strict=False)
    return "\n".join(body for label, body in pairs if "vector.body" in label)


def suspect_wrap_predicate(module: llvm.ModuleRef) -> str | None:
    """The name of a function the LLVM 22 wrap-predicate bug may have miscompiled, or None."""
    for fn in module.functions:
        if fn.is_declaration:
            continue
        text = str(fn)
        if "vector.body" not in text:
            continue
        loops = _vector_loop_text(text)
        addresses = _WIDE_LOAD.findall(loops) + _WIDE_STORE.findall(loops)
        if not addresses:
            continue
        defs = {m.group(1): m.group(2) for m in _DEF.finditer(text)}
        if any(_narrow_masked(address, defs) for address in addresses):
            return fn.name
    return None
