"""NVIDIA: a two-way branch's taken block laid out right after it, as clang lays out ``if``.

LLVM's block placement, between two successors it cannot tell apart (no profile, no
heuristic says which is likelier), keeps the branch's first successor, the ``true``
one, as the fall-through. clang's IR lists an ``if``'s then-block right after the
branch, so that choice keeps clang's order. The SPIR-V producer (its structurizer) often
puts the else-block first, and the translator keeps the SPIR-V's order: placement then
moves the then-block up, and NVPTX rewrites the branch as a conditional branch to the
block that now follows and a ``bra.uni`` to the other, one instruction more per such
``if`` (stencil's launch-specialised variant: 51 PTX instructions, clang's 50; now 50).
AMD's back end inverts such a branch (``s_cbranch_scc0``/``scc1``, ``vccz``/``vccnz``):
NVIDIA's only.

The rewrite, after O3 on the IR text: where a block ends in ``br i1 %c, label %T, label
%F``, the next block in the text is ``F``, ``T`` comes later and every other branch into
``T`` is above the branch, ``T`` moves right after the branch. Order in the text is not
meaning in LLVM IR (dominance is by the branches), so this changes nothing but the
starting layout. Numbered values and blocks (``%7``, ``12:``) must appear in order, so
a move that would take one past another is not made.
"""

from __future__ import annotations

import re

_FUNCTION = re.compile(r"^define [^\n]*\{\n(.*?)^\}$", re.M | re.S)
_LABEL = re.compile(r"^([-\w$.]+):")
_BRANCH = re.compile(r"^\s+br i1 %[-\w$.]+, label %([-\w$.]+), label %([-\w$.]+)$")
_EDGE = re.compile(r"label %([-\w$.]+)")
_NUMBERED = re.compile(r"^\s*%\d+ = |^\d+:", re.M)


def _blocks(body: str) -> list[list[str]]:
    """The function body's blocks, each a list of lines (its label line first, where it
    has one; the entry block may have none)."""
    blocks: list[list[str]] = [[]]
    for line in body.splitlines(keepends=True):
        if _LABEL.match(line) and any(ln.strip() for ln in blocks[-1]):
            blocks.append([])
        blocks[-1].append(line)
    return blocks


def _name(block: list[str]) -> str | None:
    match = _LABEL.match(block[0]) if block else None
    return match[1] if match else None


def _terminator(block: list[str]) -> str:
    lines = [ln for ln in block if ln.strip()]
    return lines[-1].rstrip("\n") if lines else ""


def _reorder(body: str) -> tuple[str, int]:
    blocks = _blocks(body)
    # Which blocks branch to each block, by name (a phi names its predecessors, not its
    # own block, so `label %T` finds exactly the edges into T); names do not move.
    into: dict[str, set[str | None]] = {}
    for block in blocks:
        for line in block:
            for target in _EDGE.findall(line):
                into.setdefault(target, set()).add(_name(block))
    where = {_name(b): k for k, b in enumerate(blocks)}
    moved = 0
    for i in range(len(blocks) - 1):
        branch = _BRANCH.match(_terminator(blocks[i]))
        if branch is None or branch[2] != _name(blocks[i + 1]):
            continue
        taken = branch[1]
        j = where.get(taken, -1)
        # Every branch into the block comes from this one or one above it, as clang's
        # blocks are ordered (a loop header, with its back edge from below, stays).
        above = all(where.get(source, len(blocks)) <= i for source in into.get(taken, ()))
        passed = "".join(ln for b in blocks[i + 1 : j + 1] for ln in b)
        if j > i + 1 and above and not _NUMBERED.search(passed):
            blocks.insert(i + 1, blocks.pop(j))
            where = {_name(b): k for k, b in enumerate(blocks)}
            moved += 1
    if not moved:
        return body, 0
    # The last block's lines keep their own ending; every block ends in a newline.
    return "".join(ln if ln.endswith("\n") else ln + "\n" for b in blocks for ln in b), moved


def taken_blocks_after_branches(text: str) -> tuple[str, int]:
    """``text`` with each conditional branch's taken block right after it where the
    not-taken one was (see the module's doc); and how many blocks moved."""
    total = 0

    def function(match: re.Match) -> str:
        nonlocal total
        body, moved = _reorder(match[1])
        total += moved
        if not moved:
            return match[0]
        start, end = match.start(1) - match.start(), match.end(1) - match.start()
        return match[0][:start] + body + match[0][end:]

    text = _FUNCTION.sub(function, text)
    return text, total
