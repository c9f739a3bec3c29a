"""Block order of llvm-spirv-15's output, repaired for the translator producer only.

SPIR-V (2.16.1) wants every block of a function after the blocks that dominate it.
llvm-spirv-15 writes the blocks in LLVM's block order, which need not be one (found by the
differential tester, ``tests/fuzz/findings/translator_block_order.cl``); a value is then
used, in the file, before its definition, and spirv-val and spirvjit's reader rightly
reject the module. The control-flow graph says what the function means, so
:func:`order_blocks` moves blocks into a dominance order: the original order wherever it
is one already, each block put off only until its immediate dominator is placed;
unreachable blocks go last.

This is a repair of the translator producer's own output, where the cause is known: a
SPIR-V file from elsewhere with blocks out of order is still an error at ``load_spirv``.
(The other defect of that kind, decorations of ids never defined, is not repaired here:
it means a ``convert_*`` lost its saturation or rounding, see ``translator_ir``.)
"""

from __future__ import annotations

import heapq
import struct

from spirvjit.spirv import grammar
from spirvjit.spirv.reader import (
    OP_FUNCTION,
    OP_FUNCTION_END,
    OP_LABEL,
    OP_SWITCH,
    OP_TYPE_INT,
    TERMINATORS,
)

_OP = grammar.OPCODES
_INSTRUCTIONS = grammar.INSTRUCTIONS
_MAGIC = 0x07230203
_OP_BRANCH = _OP["OpBranch"]
_OP_BRANCH_CONDITIONAL = _OP["OpBranchConditional"]
Instruction = list[int]  # the words of one instruction


def _split(words: list[int]) -> list[Instruction] | None:
    """The module's instructions (header excluded), or None when it is malformed."""
    out = []
    pos = 5
    while pos < len(words):
        count = words[pos] >> 16
        if count == 0 or pos + count > len(words):
            return None
        out.append(words[pos : pos + count])
        pos += count
    return out


def _result_id(inst: Instruction) -> int | None:
    info = _INSTRUCTIONS.get(inst[0] & 0xFFFF)
    if info is None or not info[3]:
        return None
    at = 2 if info[2] else 1
    return inst[at] if at < len(inst) else None


def _result_type(inst: Instruction) -> int | None:
    info = _INSTRUCTIONS.get(inst[0] & 0xFFFF)
    if info is None or not info[2] or len(inst) < 2:
        return None
    return inst[1]


def _successors(term: Instruction, literal_words: dict[int, int]) -> list[int]:
    opcode = term[0] & 0xFFFF
    if opcode == _OP_BRANCH:
        return [term[1]]
    if opcode == _OP_BRANCH_CONDITIONAL:
        return [term[2], term[3]]
    if opcode == OP_SWITCH:
        step = literal_words.get(term[1], 1) + 1
        return [term[2], *(term[i + step - 1] for i in range(3, len(term), step))]
    return []


def _dominance_order(
    labels: list[int], succs: dict[int, list[int]]
) -> tuple[list[int], dict[int, int]]:
    """Reverse post-order of the blocks reachable from ``labels[0]``, and their immediate
    dominators (Cooper, Harvey and Kennedy, "A Simple, Fast Dominance Algorithm")."""
    entry = labels[0]
    post: list[int] = []
    seen = {entry}
    stack = [(entry, iter(succs[entry]))]
    while stack:
        block, it = stack[-1]
        for nxt in it:
            if nxt not in seen and nxt in succs:
                seen.add(nxt)
                stack.append((nxt, iter(succs[nxt])))
                break
        else:
            stack.pop()
            post.append(block)
    rpo = post[::-1]
    number = {b: i for i, b in enumerate(rpo)}
    preds: dict[int, list[int]] = {b: [] for b in rpo}
    for b in rpo:
        for s in succs[b]:
            if s in preds:
                preds[s].append(b)
    idom = {entry: entry}
    changed = True
    while changed:
        changed = False
        for b in rpo[1:]:
            new = None
            for p in preds[b]:
                if p not in idom:
                    continue
                if new is None:
                    new = p
                    continue
                x, y = p, new
                while x != y:
                    while number[x] > number[y]:
                        x = idom[x]
                    while number[y] > number[x]:
                        y = idom[y]
                new = x
            if new is not None and idom.get(b) != new:
                idom[b] = new
                changed = True
    return rpo, idom


def _order_function(
    body: list[Instruction], literal_words: dict[int, int]
) -> list[Instruction] | None:
    """The blocks of one function's body (its instructions from the first OpLabel up to
    OpFunctionEnd, excluded) in a dominance order, or None when they are in one already
    (or the body is not a sequence of blocks this understands)."""
    blocks: dict[int, list[Instruction]] = {}
    labels: list[int] = []
    current: list[Instruction] | None = None
    for inst in body:
        if inst[0] & 0xFFFF == OP_LABEL:
            if current is not None or inst[1] in blocks:
                return None  # a block without terminator, or a label defined twice
            current = blocks[inst[1]] = [inst]
            labels.append(inst[1])
            continue
        if current is None:
            return None
        current.append(inst)
        if inst[0] & 0xFFFF in TERMINATORS:
            current = None
    if current is not None or len(labels) < 2:
        return None
    succs = {b: _successors(blocks[b][-1], literal_words) for b in labels}
    _, idom = _dominance_order(labels, succs)
    position = {b: i for i, b in enumerate(labels)}
    if all(position[idom[b]] < position[b] for b in idom if b != labels[0]):
        return None
    # Original order wherever possible: place the earliest block whose immediate
    # dominator is placed already (a topological order of the dominator tree).
    children: dict[int, list[int]] = {b: [] for b in idom}
    for b, d in idom.items():
        if b != d:
            children[d].append(b)
    order: list[int] = []
    ready = [(0, labels[0])]
    while ready:
        _, b = heapq.heappop(ready)
        order.append(b)
        for c in children[b]:
            heapq.heappush(ready, (position[c], c))
    order += [b for b in labels if b not in idom]  # unreachable blocks, last
    return [inst for b in order for inst in blocks[b]]


def order_blocks(insts: list[Instruction]) -> tuple[list[Instruction], int]:
    """``insts`` with each function's blocks in a dominance order, and how many functions
    were reordered."""
    types: dict[int, int] = {}
    int_widths: dict[int, int] = {}
    for inst in insts:
        if inst[0] & 0xFFFF == OP_TYPE_INT and len(inst) > 2:
            int_widths[inst[1]] = inst[2]
        rid, rtype = _result_id(inst), _result_type(inst)
        if rid is not None and rtype is not None:
            types[rid] = rtype
    # OpSwitch literals take as many words as the selector's type.
    literal_words = {
        rid: 2 if int_widths.get(t, 32) > 32 else 1 for rid, t in types.items() if t in int_widths
    }
    out: list[Instruction] = []
    reordered = 0
    i = 0
    while i < len(insts):
        inst = insts[i]
        if inst[0] & 0xFFFF != OP_FUNCTION:
            out.append(inst)
            i += 1
            continue
        end = i
        while end < len(insts) and insts[end][0] & 0xFFFF != OP_FUNCTION_END:
            end += 1
        first_label = next((j for j in range(i, end) if insts[j][0] & 0xFFFF == OP_LABEL), end)
        out += insts[i:first_label]
        body = insts[first_label:end]
        ordered = _order_function(body, literal_words) if body else None
        if ordered is not None:
            reordered += 1
            body = ordered
        out += body
        i = end
    return out, reordered


def fix_translator_spirv(spirv: bytes) -> tuple[bytes, int]:
    """``spirv`` (llvm-spirv's output, little-endian) with each function's blocks in a
    dominance order, and how many functions were reordered. A module this cannot split
    is returned unchanged."""
    if len(spirv) < 20 or len(spirv) % 4:
        return spirv, 0
    words = list(struct.unpack(f"<{len(spirv) // 4}I", spirv))
    insts = _split(words) if words[0] == _MAGIC else None
    if insts is None:
        return spirv, 0
    insts, reordered = order_blocks(insts)
    if not reordered:
        return spirv, reordered
    out = words[:5] + [w for inst in insts for w in inst]
    return struct.pack(f"<{len(out)}I", *out), reordered
