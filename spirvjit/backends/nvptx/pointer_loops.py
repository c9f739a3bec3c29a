"""NVIDIA: loops that walk pointers unrolled as LLVM unrolls their index form.

clang's SPIR-V back end runs loop strength reduction, a code generation pass for
targets without addressing modes: its SPIR-V loops step pointers (``p = phi [a, pre],
[p + 4, latch]``) where clang's native GPU IR still indexes (``a + k * 4``). NVPTX's
partial unrolling divides a budget (75: a quarter of O3's 300) by the loop's size, and
the pointer-walking loop looks smaller: gemm_naive's k loop was unrolled 8 times where
clang's native build unrolls it 4 times, 32 registers against 28-30.

Written back in index form before O3 (``index_form``), LLVM unrolls such a loop as
clang's native build does, but the code it then makes of the index form is worse where
the pointers were right (colmean: 78 PTX instructions instead of 68, matvec 84 instead
of 72): a counter that starts at a constant makes the unroller put the remainder
iterations after the loop, which then recomputes the pointers from the counter. So the
index form is only a trial (``unroll_counts``): the kernel with its pointer loops in
index form is optimized, how often each loop's body was copied into one loop is read
from the result, and the real, pointer-walking loop gets that count as its
``llvm.loop.unroll.count`` (``with_unroll_counts``). gemm_naive: 4, 23 registers and 63
PTX instructions (clang's native build: 28-30 and 79); colmean and matvec keep 8 and 4.

Only innermost loops, and only those the source gave no loop metadata (a ``#pragma
unroll`` stays the user's). A loop the trial unrolled fully or deleted is left alone.
AMD: not done. The same counts there change only n-body, whose inner loop AMD's unroller
(its own thresholds) unrolls in index form, as in clang's native build: 238 instructions
on gfx90a (generic variant; 229 launch-specialised) where spirvjit has 112 (103) and
clang 214, alike on gfx942/gfx1100/gfx1201; gemm_naive's loop stays as it is, and AMD's
code generation strength-reduces the index form back into the same pointer steps.

The index form (``index_form``): a pointer phi in a loop header ``H`` with two incoming
values, ``init`` from the block ``P`` and ``next = getelementptr T, ptr %phi, iN step``
(one index) from the latch ``L``, where ``next`` is computed in ``L`` and ``init`` and
``step`` are defined before the loop (their blocks strictly dominate ``H``, or they are
arguments or constants), becomes ``getelementptr T, ptr init, iN (k * step)`` right
after ``H``'s phis, with a counter ``k = phi iN [0, P], [k + 1, L]`` (one per loop and
index type, ``k + 1`` at the end of ``L``). The same addresses: ``next`` in ``L`` reads
the ``%phi`` of the same iteration as ``k + 1`` reads ``k``, so ``phi = init + k *
step`` holds at every entry to ``H``; a GEP without flags is modular arithmetic in the
address space's index width, and the product is computed in the step's type, which must
be at least that wide. The new GEP carries no flags (fewer poison values than the
original, never more). It is only ever optimized to be measured, but it must be the
same program for the measure to mean anything. The kernel that runs differs from the
translator's only by the loop metadata: a mistake in the trial costs speed, never a
wrong result (and a trial LLVM rejects leaves O3 to decide alone).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

_FUNCTION = re.compile(r"^define [^\n]*\n?\{\n(.*?)^\}$", re.M | re.S)
_NAME = r'%(?:"[^"]*"|[-\w$.]+)'
_LABEL = re.compile(r'^("[^"]*"|[-\w$.]+):')
_EDGE = re.compile(rf"label ({_NAME})")
_DEFINES = re.compile(rf"^\s*({_NAME}) = ")
_POINTER = r"ptr(?: addrspace\((\d+)\))?"
_PHI = re.compile(
    rf"^(\s*)({_NAME}) = phi\s+({_POINTER}) \[\s*([^,\]]+), ({_NAME})\s*\], "
    rf"\[\s*([^,\]]+), ({_NAME})\s*\]\s*$"
)
_STEP = re.compile(
    rf"^\s*({_NAME}) = getelementptr (?:(?:inbounds|nuw|nusw) )*([^,]+), ({_POINTER}) "
    rf"({_NAME}), (i\d+) ([^,\s]+)\s*$"
)
_DATALAYOUT = re.compile(r'^target datalayout = "([^"]*)"', re.M)
_METADATA_ID = re.compile(r"^!(\d+) = ", re.M)
_TAG = "spirvjit.copy"  # the trial's mark on each instruction of a loop: !{i32 loop, i32 n}


def _bare(name: str) -> str:
    """A local name without ``%`` and quotes: ``%".5"`` and ``%.5`` are one value."""
    name = name.removeprefix("%")
    return name[1:-1] if name.startswith('"') else name


def _index_widths(text: str) -> dict[int, int]:
    """The index width of each address space the data layout names (bits)."""
    widths: dict[int, int] = {}
    layout = _DATALAYOUT.search(text)
    for spec in layout[1].split("-") if layout else ():
        found = re.fullmatch(r"p(\d*):(\d+):\d+(?::\d+)?(?::(\d+))?", spec)
        if found:
            widths[int(found[1] or 0)] = int(found[3] or found[2])
    return widths


def _is_code(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith(";") and not _LABEL.match(line)


class _Function:
    """A function body's blocks, who defines what, dominators and natural loops."""

    def __init__(self, header: str, body: str) -> None:
        self.labels: list[str] = []
        self.lines: dict[str, list[str]] = {}
        current = "%entry-block"  # the entry block may have no label
        for line in body.splitlines():
            label = _LABEL.match(line)
            if label:
                current = label[1].strip('"')
            if current not in self.lines:
                self.labels.append(current)
                self.lines[current] = []
            self.lines[current].append(line)
        self.defined_in: dict[str, str] = {}
        for label, lines in self.lines.items():
            for line in lines:
                found = _DEFINES.match(line)
                if found:
                    self.defined_in[_bare(found[1])] = label
        arguments = header.split("(", 1)[1] if "(" in header else ""
        self.arguments = {_bare(n) for n in re.findall(_NAME, arguments)}
        # Every `label %x` of the block's code: the terminator's (a switch spans lines);
        # phis name their predecessors without the keyword.
        self.successors = {
            label: [
                _bare(e)
                for line in self.lines[label]
                if _is_code(line) and " = phi " not in line
                for e in _EDGE.findall(line)
            ]
            for label in self.labels
        }
        self.predecessors: dict[str, set[str]] = {label: set() for label in self.labels}
        for label, targets in self.successors.items():
            for target in targets:
                if target in self.predecessors:
                    self.predecessors[target].add(label)
        self.dominators = self._dominators()
        # Natural loops, by (header, latch): their blocks.
        self.loops = {
            (target, label): self._natural_loop(target, label)
            for label in self.labels
            for target in self.successors[label]
            if target in self.dominators[label]
        }

    def terminator(self, label: str) -> str:
        code = [ln for ln in self.lines[label] if _is_code(ln)]
        return code[-1] if code else ""

    def _dominators(self) -> dict[str, set[str]]:
        every = set(self.labels)
        entry = self.labels[0]
        dominators = {label: set(every) for label in self.labels}
        dominators[entry] = {entry}
        changed = True
        while changed:
            changed = False
            for label in self.labels[1:]:
                preds = [dominators[p] for p in self.predecessors[label]]
                new = {label} | (set.intersection(*preds) if preds else set())
                if new != dominators[label]:
                    dominators[label], changed = new, True
        return dominators

    def _natural_loop(self, header: str, latch: str) -> set[str]:
        body, work = {header}, [latch]
        while work:
            label = work.pop()
            if label not in body:
                body.add(label)
                work.extend(self.predecessors[label])
        return body

    def innermost(self, header: str, latch: str) -> bool:
        """The loop has no other loop inside it."""
        body = self.loops[(header, latch)]
        return (
            not any(
                h in body and (h, lt) != (header, latch) and h != header for h, lt in self.loops
            )
            and sum(1 for h, _ in self.loops if h == header) == 1
        )

    def before_loop(self, value: str, header: str) -> bool:
        """``value`` (an operand) is fixed before the loop at ``header`` is entered: a
        constant, a global, an argument, or defined in a block strictly dominating it."""
        if not value.startswith("%"):
            return bool(re.fullmatch(r"-?\d+|null|@[-\w$.\"]+", value.strip()))
        name = _bare(value)
        if name in self.arguments:
            return True
        block = self.defined_in.get(name)
        return block is not None and block != header and block in self.dominators[header]


@dataclass
class PointerLoop:
    """An innermost loop with pointer phis that ``index_form`` rewrites."""

    function: str  # the function's header line
    header: str
    latch: str
    number: int  # its number in the module (the trial's tags)
    phis: list[str] = field(default_factory=list)


def index_form(text: str, tag: bool = False) -> tuple[str, list[PointerLoop]]:
    """``text`` (a module's IR) with every pointer phi of an innermost loop that steps by
    a loop-invariant amount written as its start plus a counter times the step; and the
    loops. ``tag``: every instruction of those loops also carries ``!spirvjit.copy
    !{i32 loop, i32 instruction}`` (for ``unroll_counts``)."""
    widths = _index_widths(text)
    loops: list[PointerLoop] = []
    tags: list[str] = []
    first_id = 1 + max((int(n) for n in _METADATA_ID.findall(text)), default=-1)

    def rewrite(match: re.Match) -> str:
        header = match[0].split("\n", 1)[0]
        body, found = _rewrite_function(header, match[1], widths, len(loops))
        if tag:
            body = _tag(body, header, found, tags, first_id)
        loops.extend(found)
        return match[0].replace(match[1], body, 1) if found else match[0]

    text = _FUNCTION.sub(rewrite, text)
    return text + "".join(f"{t}\n" for t in tags), loops


def _rewrite_function(
    header: str, body: str, widths: dict[int, int], numbered: int
) -> tuple[str, list[PointerLoop]]:
    function = _Function(header, body)
    taken = set(function.defined_in) | function.arguments
    # (header, preheader, latch, index type) -> the counter's name.
    counters: dict[tuple[str, str, str, str], str] = {}
    loops: dict[tuple[str, str], PointerLoop] = {}
    # block -> lines to put after its phis / before its terminator.
    after_phis: dict[str, list[str]] = {}
    before_end: dict[str, list[str]] = {}
    removed: set[str] = set()
    for label in function.labels:
        for line in function.lines[label]:
            found = _PHI.match(line)
            if found is None:
                continue
            indent, phi, pointer, space, *incoming = found.groups()
            if _bare(phi).isdigit():
                continue  # numbered values must stay in order: this one cannot move
            for (init, pre), (nxt, latch) in (
                (incoming[0:2], incoming[2:4]),
                (incoming[2:4], incoming[0:2]),
            ):
                pre, latch = _bare(pre), _bare(latch)
                if (label, latch) not in function.loops or pre == latch:
                    continue  # not a loop whose header is this block
                if pre not in function.lines or not function.innermost(label, latch):
                    continue
                if "!llvm.loop" in function.terminator(latch):
                    continue  # the source's loop controls (#pragma unroll) stay its own
                step = _step_of(function, _bare(nxt), latch, phi, pointer)
                if step is None:
                    continue
                element, index, amount = step
                bits = int(index[1:])
                if bits < widths.get(int(space or 0), 64) or bits > 64:
                    continue
                if not (function.before_loop(init, label) and function.before_loop(amount, label)):
                    continue
                key = (label, pre, latch, index)
                counter = counters.get(key)
                if counter is None:
                    counter = _fresh(f"{_bare(phi)}.k", taken)
                    counters[key] = counter
                    counted = _fresh(f"{counter}.next", taken)
                    after_phis.setdefault(label, []).insert(
                        0,
                        f'{indent}%"{counter}" = phi {index} [0, %"{pre}"], '
                        f'[%"{counted}", %"{latch}"]',
                    )
                    before_end.setdefault(latch, []).append(
                        f'{indent}%"{counted}" = add {index} %"{counter}", 1'
                    )
                offset = _fresh(f"{_bare(phi)}.offset", taken)
                after_phis.setdefault(label, []).extend(
                    [
                        f'{indent}%"{offset}" = mul {index} %"{counter}", {amount}',
                        f"{indent}{phi} = getelementptr {element}, {pointer} {init}, "
                        f'{index} %"{offset}"',
                    ]
                )
                removed.add(line)
                loop = loops.get((label, latch))
                if loop is None:
                    loop = PointerLoop(header, label, latch, numbered + len(loops))
                    loops[(label, latch)] = loop
                loop.phis.append(_bare(phi))
                break
    if not removed:
        return body, []
    return _assemble(function, after_phis, before_end, removed), list(loops.values())


def _step_of(
    function: _Function, nxt: str, latch: str, phi: str, pointer: str
) -> tuple[str, str, str] | None:
    """(element type, index type, index) of ``nxt`` where it is computed in ``latch`` as
    a one-index GEP from ``phi`` in the same address space; else None."""
    if function.defined_in.get(nxt) != latch:
        return None
    for line in function.lines[latch]:
        found = _STEP.match(line)
        if found and _bare(found[1]) == nxt:
            _, element, walked, _space, base, index, amount = found.groups()
            if _bare(base) != _bare(phi) or walked != pointer:
                return None
            return element.strip(), index, amount
    return None


def _fresh(name: str, taken: set[str]) -> str:
    candidate, n = name, 0
    while candidate in taken:
        n += 1
        candidate = f"{name}{n}"
    taken.add(candidate)
    return candidate


def _assemble(
    function: _Function,
    after_phis: dict[str, list[str]],
    before_end: dict[str, list[str]],
    removed: set[str],
) -> str:
    out: list[str] = []
    for label in function.labels:
        lines = [ln for ln in function.lines[label] if ln not in removed]
        code = [i for i, ln in enumerate(lines) if _is_code(ln)]
        # Past the label and the phis (the counter's phi is a phi too).
        first = next((i for i in code if " = phi " not in lines[i]), len(lines))
        last = code[-1] if code else len(lines)
        out += [
            *lines[:first],
            *after_phis.get(label, []),
            *lines[first:last],
            *before_end.get(label, []),
            *lines[last:],
        ]
    return "\n".join(out) + "\n"


def _tag(body: str, header: str, loops: list[PointerLoop], tags: list[str], first_id: int) -> str:
    """``body`` with each instruction of ``loops`` (not phis, not terminators) marked."""
    if not loops:
        return body
    function = _Function(header, body)
    lines = {}
    for loop in loops:
        for label in function.loops[(loop.header, loop.latch)]:
            code = [ln for ln in function.lines[label] if _is_code(ln)]
            for line in code[:-1]:
                # Lines that name a value (unique); not the phis, which unrolling drops.
                if " = phi " in line or not _DEFINES.match(line) or line in lines:
                    continue
                node = first_id + len(tags)
                tags.append(f"!{node} = !{{i32 {loop.number}, i32 {len(tags)}}}")
                lines[line] = f"{line}, !{_TAG} !{node}"
    return "\n".join(lines.get(ln, ln) for ln in body.splitlines()) + "\n"


def unroll_counts(optimized: str, loops: list[PointerLoop]) -> dict[int, int]:
    """How often the optimized module (``index_form(..., tag=True)`` after O3) has each
    loop's body in one loop: the most copies of one of its instructions in one innermost
    loop. Runtime unrolling by ``n`` leaves ``n`` copies in the loop and one in the
    remainder's; a loop unrolled fully or deleted has none (and no count)."""
    nodes = {
        int(n): (int(a), int(b))
        for n, a, b in re.findall(r"^!(\d+) = !\{i32 (\d+), i32 (\d+)\}$", optimized, re.M)
    }
    wanted = {loop.number for loop in loops}
    counts: dict[int, int] = {}
    for match in _FUNCTION.finditer(optimized):
        function = _Function(match[0].split("\n", 1)[0], match[1])
        innermost = [body for key, body in function.loops.items() if function.innermost(*key)]
        for body in innermost:
            copies: dict[tuple[int, int], int] = {}
            for label in body:
                for line in function.lines[label]:
                    found = re.search(rf"!{re.escape(_TAG)} !(\d+)", line)
                    if found and int(found[1]) in nodes:
                        copies[nodes[int(found[1])]] = copies.get(nodes[int(found[1])], 0) + 1
            for (loop, _), n in copies.items():
                if loop in wanted:
                    counts[loop] = max(counts.get(loop, 0), n)
    return counts


def with_unroll_counts(text: str, loops: list[PointerLoop], counts: dict[int, int]) -> str:
    """``text`` (the module ``index_form`` read) with each loop that has a count carrying
    it as ``llvm.loop.unroll.count`` on its latch's branch."""
    next_id = 1 + max((int(n) for n in _METADATA_ID.findall(text)), default=-1)
    added: list[str] = []
    by_function: dict[str, list[PointerLoop]] = {}
    for loop in loops:
        if counts.get(loop.number):
            by_function.setdefault(loop.function, []).append(loop)

    def annotate(match: re.Match) -> str:
        nonlocal next_id
        header = match[0].split("\n", 1)[0]
        mine = by_function.get(header)
        if not mine:
            return match[0]
        function = _Function(header, match[1])
        edits = {}
        for loop in mine:
            branch = function.terminator(loop.latch)
            if not branch.lstrip().startswith("br ") or "!llvm.loop" in branch:
                continue
            loop_id, count_id = next_id, next_id + 1
            next_id += 2
            added.append(f"!{loop_id} = distinct !{{!{loop_id}, !{count_id}}}")
            added.append(f'!{count_id} = !{{!"llvm.loop.unroll.count", i32 {counts[loop.number]}}}')
            edits[branch] = f"{branch}, !llvm.loop !{loop_id}"
        body = "\n".join(edits.get(ln, ln) for ln in match[1].splitlines()) + "\n"
        return match[0].replace(match[1], body, 1)

    text = _FUNCTION.sub(annotate, text)
    return text + "".join(f"{a}\n" for a in added)


def unroll_like_index_form(text: str, optimize: Callable[[str], str]) -> tuple[str, int]:
    """``text`` (a kernel's IR before O3) with each innermost pointer-walking loop
    carrying the unroll count LLVM gives its index form, which ``optimize`` (the IR
    text to its optimized text) measures; and how many loops got one."""
    trial, loops = index_form(text, tag=True)
    if not loops:
        return text, 0
    counts = unroll_counts(optimize(trial), loops)
    if not counts:
        return text, 0
    return with_unroll_counts(text, loops, counts), len(counts)
