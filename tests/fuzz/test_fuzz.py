"""The random differential tester in CI: a fixed-seed sample of small programs, and the
properties of the generator that the tester's verdicts rest on."""

from __future__ import annotations

import re

import pytest

from .differential import REFERENCE, run, summary
from .generator import KNOWN_WORKAROUNDS, REFERENCE_WORKAROUNDS, generate

CI_SEED = 20261201
CI_PROGRAMS = 120
# sha256 of generate(1000, 3).source() before the side stream existed (commit 04b59a1)
PINNED_1000 = "72e5ec8bf02adcd6"


def pocl_missing() -> str | None:
    """Why PoCL can't run here, or None."""
    try:
        import pyopencl as cl

        if not any("Portable" in p.name for p in cl.get_platforms()):
            return "PoCL is not installed (pocl-opencl-icd)"
    except Exception as exc:  # noqa: BLE001 - no ICD loader, no platform
        return f"pyopencl/PoCL unavailable: {exc}"
    return None


def _missing() -> str | None:
    """Why the three implementations can't all run here, or None."""
    if why := pocl_missing():
        return why
    from spirvjit.toolchain import find_tool

    for tool in ("clang", "clang15", "llvm-spirv"):
        if not find_tool(tool):
            return f"{tool} not installed"
    return None


def test_generation_is_deterministic():
    a, b = generate(7, 5), generate(7, 5)
    assert a.source() == b.source()
    assert generate(8, 5).source() != a.source()


@pytest.mark.parametrize("workaround", [*KNOWN_WORKAROUNDS, *sorted(REFERENCE_WORKAROUNDS)])
def test_workarounds_only_respell(workaround):
    """A workaround spelling must give the same program: same kernels, segments and
    features, and the same text once helper calls are stripped of their names."""
    for seed in range(10):
        plain, other = generate(seed, 4), generate(seed, 4, frozenset({workaround}))
        for k1, k2 in zip(plain.kernels, other.kernels, strict=True):
            assert (k1.nseg, k1.features, k1.local_size) == (k2.nseg, k2.features, k2.local_size)
            assert len(k1.source().splitlines()) == len(k2.source().splitlines())


def test_programs_use_every_feature():
    """The sample covers what the issue asks for: switches, barrier helpers called from
    several sites, __local exchanges and atomics, global atomics, any/all and integer
    conversions."""
    seen: set[str] = set()
    for seed in range(CI_SEED, CI_SEED + CI_PROGRAMS // 20):
        for k in generate(seed, 20, size="small").kernels:
            seen |= k.features
    want = {"switch", "barrier_helper_multi", "local", "local_atomic", "global_atomic"}
    want |= {"any_all", "convert_int", "vload", "vstore", "component_write"}
    want |= {"divergent_loop", "raw_int_op", "compound_assign", "do_while", "struct"}
    want |= {"struct_arg", "shuffle", "bitselect", "work_item_fn", "cas_loop"}
    want |= {"constant_table", "global_exchange", "half", "pointer", "exact_math"}
    assert want | {"local_reduction", "local_divergent_store"} <= seen


def test_work_group_sizes_leave_a_remainder_to_the_vectorizer():
    """Some work-groups are not a multiple of the CPU's vector width (8 or 16 lanes): the
    vectorized chunks and the scalar remainder run in one group."""
    kernels = [k for seed in range(10) for k in generate(seed, 10).kernels]
    sizes = {k.local_size for k in kernels}
    assert {4, 8, 16} <= sizes and sizes - {4, 8, 16}
    # two-dimensional NDRanges, some with several rows of work-groups
    shapes = {(k.local_shape, k.global_shape) for k in kernels if k.rows > 1}
    assert any(glob[1] > loc[1] for loc, glob in shapes)
    for k in kernels:
        (lx, ly), (gx, gy) = k.local_shape, k.global_shape
        assert lx * ly == k.local_size and gx * gy == k.global_size
        assert gx % lx == 0 and gy % ly == 0


def test_side_stream_keeps_the_main_programs():
    """The constructs drawn from the side stream only add code: with it drawing nothing,
    a seed gives the program it gave before they existed (pinned by its hash), so the
    seeds in earlier reports and findings still name the same programs."""
    import hashlib
    import random

    from . import generator

    class Never(random.Random):
        def random(self) -> float:
            return 1.0

    real = generator.random.Random

    def patched(seed=None):
        extra = isinstance(seed, str) and seed.endswith(("/side", "/third", "/fourth"))
        return Never() if extra else real(seed)

    generator.random.Random = patched
    try:
        text = generate(1000, 3).source()
    finally:
        generator.random.Random = real
    assert hashlib.sha256(text.encode()).hexdigest()[:16] == PINNED_1000
    # and whatever the side stream draws, the main stream makes the same draws
    for seed in range(20):
        ends = []
        for side in (Never(), None):
            g = generator.Generator(seed)
            if side is not None:
                g.side = side
            for i in range(5):
                g.kernel(i)
            ends.append(g.rng.getstate())
        assert ends[0] == ends[1], seed


def _other_streams_unchanged_without(stream: str, others: tuple[str, ...]) -> None:
    """With or without ``stream``'s draws (one that never draws a construct), the
    generator's ``others`` streams make the same draws for seeds 0-19."""
    import random

    from . import generator

    class Never(random.Random):
        def random(self) -> float:
            return 1.0

    for seed in range(20):
        ends = []
        for replacement in (Never(), None):
            g = generator.Generator(seed)
            if replacement is not None:
                setattr(g, stream, replacement)
            for i in range(5):
                g.kernel(i)
            ends.append(tuple(getattr(g, other).getstate() for other in others))
        assert ends[0] == ends[1], seed


def test_third_stream_keeps_the_main_and_side_programs():
    """The same for the third stream (raw operators, compound assignments, do-while,
    structs): with or without its draws, the main and side streams make the same draws,
    so the CI sample and earlier findings keep their programs, only gaining code."""
    _other_streams_unchanged_without("third", ("rng", "side"))


def test_fourth_stream_keeps_the_other_streams_programs():
    """The same for the fourth stream (the exact math built-ins): with or without its
    draws, the main, side and third streams make the same draws."""
    _other_streams_unchanged_without("fourth", ("rng", "side", "third"))


def test_no_float_op_outside_the_exact_set():
    """Floats are compared bit for bit, so only correctly rounded operations appear."""
    inexact = r"\b(mad|native_\w+|half_\w+|sin|cos|exp|log|pow|dot|copysign|signbit)\("
    for seed in range(20):
        assert not re.search(inexact, generate(seed, 5).source())


def test_ci_sample_agrees_with_pocl():
    """120 random programs: spirvjit (clang-22 and clang-15 + llvm-spirv-15) equals PoCL
    bit for bit, except where a known bug that is still present explains the difference."""
    why = _missing()
    if why:
        pytest.skip(why)
    stats = run(CI_PROGRAMS, CI_SEED, jobs=2, batch_size=20, size="small", log=lambda _: None)
    report = summary(stats, CI_PROGRAMS, CI_SEED)
    assert stats["programs"] == CI_PROGRAMS, report
    assert not [f for f in stats["findings"] if f.producer == REFERENCE], report
    assert not stats["unexplained"], report
    assert stats["agree"] >= CI_PROGRAMS * 0.8, report


@pytest.mark.slow
def test_longer_run_agrees_with_pocl():
    why = _missing()
    if why:
        pytest.skip(why)
    stats = run(1000, 1, jobs=2, batch_size=10, log=lambda _: None)
    assert not stats["unexplained"], summary(stats, 1000, 1)


def test_tiered_kernels_are_compared_on_both_tiers(monkeypatch):
    """SPIRVJIT_TIERED=1: the first launch runs the quick tier; the tester then waits for
    the optimized tier and launches it on the same inputs, then once more switching from
    the quick tier to the optimized one after half the work-groups (as a launch running
    at the swap does); a difference of any of them from PoCL is a finding that names it."""
    why = _missing()
    if why:
        pytest.skip(why)
    from .differential import Outcome, compare, run_pocl, run_spirvjit

    monkeypatch.setenv("SPIRVJIT_TIERED", "1")
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    monkeypatch.setenv("SPIRVJIT_NUM_THREADS", "1")
    seed = CI_SEED
    batch = generate(seed, 2, size="small")
    got = run_spirvjit(batch.kernel_source(0), batch, [0], seed, "clang")[0]
    assert got.error is None and got.optimized is not None, got
    assert got.optimized.error is None and got.optimized.out is not None
    ref_batch = generate(seed, 2, REFERENCE_WORKAROUNDS, size="small")
    ref = run_pocl(ref_batch.kernel_source(0), ref_batch, [0], seed)[0]
    nseg = batch.kernels[0].nseg
    assert compare(ref, got, nseg) is None
    # what a miscompile of one tier would look like
    wrong = got.out.copy()
    wrong[0] ^= 1
    diff = compare(ref, Outcome(got.out, got.gat, optimized=Outcome(wrong, got.gat)), nseg)
    assert diff is not None and diff[0].startswith("optimized tier: hash differs")
    diff = compare(ref, Outcome(wrong, got.gat, optimized=got.optimized), nseg)
    assert diff is not None and diff[0].startswith("quick tier: hash differs")
    bad = Outcome(got.out, got.gat, optimized=got.optimized, mixed=Outcome(wrong, got.gat))
    diff = compare(ref, bad, nseg)
    assert diff is not None and diff[0].startswith("mixed tiers: hash differs")


def test_a_mixed_launch_runs_half_the_groups_on_each_tier(monkeypatch):
    """The tester's mixed launch: the quick tier's code runs the first half of the
    work-groups, the optimized tier's the rest, on one packed launch; it equals PoCL."""
    why = _missing()
    if why:
        pytest.skip(why)
    from spirvjit.backends.cpu import launcher

    from .differential import compare, run_pocl, run_spirvjit

    monkeypatch.setenv("SPIRVJIT_TIERED", "1")
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    monkeypatch.setenv("SPIRVJIT_NUM_THREADS", "1")
    runs = []
    run_launch = launcher.CpuKernel.run_launch

    def recording(self, prepared, record=None, threads=0):
        chosen = prepared.record if record is None else record
        runs.append((self, chosen.next_group, chosen.total_groups))
        return run_launch(self, prepared, record, threads)

    monkeypatch.setattr(launcher.CpuKernel, "run_launch", recording)
    seed, index = CI_SEED, 3  # four work-groups of a two-dimensional NDRange
    batch = generate(seed, 4, size="small")
    assert batch.kernels[index].global_size // batch.kernels[index].local_size == 4
    got = run_spirvjit(batch.kernel_source(index), batch, [index], seed, "clang")[index]
    assert got.error is None and got.mixed is not None and got.mixed.error is None, got
    (quick, a, b), (full, c, d) = runs[-2:]
    assert quick is not full and (a, b, c, d) == (0, 2, 2, 4)
    ref_batch = generate(seed, 4, REFERENCE_WORKAROUNDS, size="small")
    ref = run_pocl(ref_batch.kernel_source(index), ref_batch, [index], seed)[index]
    assert compare(ref, got, batch.kernels[index].nseg) is None


# PoCL 3.1 runs a do-while with a varying trip count as often in every work-item as in one
# of them where the kernel has a barrier (findings/pocl_bugs.cl do_while_inner_loop_barrier,
# do_while_before_barrier): the reference gets it as a counted loop ("pocl_dowhile").
DO_WHILE_FINDING = (16, 10, 6)  # seed, count, kernel: "hash differs in segments [0]" before
VARYING_DO_WHILE = re.compile(
    r"\{ int (i\d+) = 0;\n( *)do \{\n\2    \1\+\+;\n(.*?)\n"
    r"\2\} while \(\1 < (\(int\)\(in\[.*?\] % 5U\))\); \}",
    re.S,
)


def _counted(match: re.Match) -> str:
    """The reference's spelling of a varying do-while (``VARYING_DO_WHILE``'s match)."""
    i, pad, body, bound = match.groups()
    return (
        f"{{ int {i} = 0;\n{pad}for (int {i}t = 0; {i}t < 4; {i}t++) "
        f"if ({i} < max({bound}, 1)) {{\n{pad}    {i}++;\n{body}\n{pad}}} }}"
    )


def test_pocl_dowhile_spells_varying_do_whiles_as_counted_loops_for_pocl_only():
    """The reference copy has each do-while whose bound reads ``in`` as a loop of 4 trips
    whose body runs on the first trip and then while the do-while's test holds; spirvjit's
    copy keeps the do-while; a do-while with a constant bound stays one in both."""
    assert "pocl_dowhile" in REFERENCE_WORKAROUNDS
    seed, count, index = DO_WHILE_FINDING
    plain = generate(seed, count).kernels[index].source()
    ref = generate(seed, count, REFERENCE_WORKAROUNDS).kernels[index].source()
    bound = "(int)(in[(lid * 7U + 111U) & 255U] % 5U)"
    assert "        do {\n            i84++;\n" in plain
    assert f"        }} while (i84 < {bound}); }}\n" in plain
    assert "i84t" not in plain
    assert f"for (int i84t = 0; i84t < 4; i84t++) if (i84 < max({bound}, 1)) {{\n" in ref
    assert "while (i84" not in ref
    varying = constant = 0
    for s in range(30):
        other = generate(s, 5, frozenset({"pocl_dowhile"}))
        for k1, k2 in zip(generate(s, 5).kernels, other.kernels, strict=True):
            p, r = k1.source(), k2.source()
            varying += len(VARYING_DO_WHILE.findall(p))
            constant += len(re.findall(r"\} while \(i\d+ < \d\); \}", p))
            assert VARYING_DO_WHILE.sub(_counted, p) == r  # nothing else changes
            assert not VARYING_DO_WHILE.search(r)
    assert varying >= 10 and constant >= 5


def test_pocl_dowhile_means_the_same_on_spirvjit():
    """Kernels whose varying do-whiles hold an inner loop (the finding), a `continue` or
    a `break`: spirvjit gives the same results for both spellings."""
    why = _missing()
    if why:
        pytest.skip(why)
    from .differential import compare, run_spirvjit

    for seed, index, jump in ((16, 6, None), (8, 5, "continue;"), (36, 3, "break;")):
        plain = generate(seed, 10)
        other = generate(seed, 10, frozenset({"pocl_dowhile"}))
        loops = VARYING_DO_WHILE.findall(plain.kernels[index].source())
        assert loops and (jump is None or any(jump in body for _, _, body, _ in loops))
        a = run_spirvjit(plain.kernel_source(index), plain, [index], seed, "clang")[index]
        b = run_spirvjit(other.kernel_source(index), other, [index], seed, "clang")[index]
        assert a.error is None and b.error is None, (a.error, b.error)
        assert compare(a, b, plain.kernels[index].nseg) is None, (seed, index)


def test_pocl_dowhile_finding_agrees_with_pocl(monkeypatch):
    """The finding (seed 16 count 10 kernel 6): PoCL's result of the reference copy equals
    spirvjit's of the plain one (failed before: 12 work-items' hashes and a global atomic
    slot differed); and the counted spelling of pocl_bugs.cl's two do-while reproducers
    gives the spec's result on PoCL, which the do-while does not."""
    why = _missing()
    if why:
        pytest.skip(why)
    import numpy as np
    import pyopencl as cl

    from .classify import FINDINGS, PROBE_OPTIONS
    from .differential import _pocl, compare, run_pocl, run_spirvjit

    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    seed, count, index = DO_WHILE_FINDING
    plain = generate(seed, count)
    ref_batch = generate(seed, count, REFERENCE_WORKAROUNDS)
    ref = run_pocl(ref_batch.kernel_source(index), ref_batch, [index], seed)[index]
    got = run_spirvjit(plain.kernel_source(index), plain, [index], seed, "clang")[index]
    assert ref.error is None and got.error is None, (ref.error, got.error)
    assert compare(ref, got, plain.kernels[index].nseg) is None

    with open(f"{FINDINGS}/pocl_bugs.cl") as f:
        text = f.read()
    prelude = text[text.index("static ulong hmix") : text.index("__kernel", text.index("hmix"))]
    _, ctx, queue = _pocl()
    mask = (1 << 64) - 1

    def hmix(h: int, v: int) -> int:
        return (((h ^ v) * 0x100000001B3) + (h >> 29)) & mask

    def launch(name: str, counted: bool, inp: list[int], glob, loc) -> list[int]:
        src = re.search(rf"^__kernel (?:[^\n]*\n)?void {name}\(.*?^\}}", text, re.M | re.S)[0]
        # the reproducers' do-while, in the generator's shape but for its `lid + 1` bound
        loop = re.compile(
            r"\{ int (i) = 0;\n( *)do \{\n\2    i\+\+;\n(.*?)\n\2\} while \(i < (.*?)\); \}", re.S
        )
        if name == "do_while_before_barrier":  # `int i = 0;` without the block's braces
            src = src.replace("    int i = 0;\n    do {", "    { int i = 0;\n    do {")
            src = src.replace("% 5U));\n", "% 5U)); }\n")
        assert loop.search(src), name
        if counted:
            src = loop.sub(_counted, src)
        prog = cl.Program(ctx, prelude + src).build(options=PROBE_OPTIONS)
        n = glob[0] * (glob[1] if len(glob) > 1 else 1)
        out = np.zeros(n, np.uint64)
        flags = cl.mem_flags
        ob = cl.Buffer(ctx, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=out)
        words = np.array(inp + [0] * 7, np.uint32)
        ib = cl.Buffer(ctx, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=words)
        getattr(prog, name)(queue, glob, loc, ob, ib)
        cl.enqueue_copy(queue, out, ob)
        queue.finish()
        return out.tolist()

    # do_while_inner_loop_barrier: global (8, 2), local (4, 2); lid = x % 4 + 4 * y
    inp = [0, 3, 3, 2, 2, 1, 3, 2, 1]
    by_lid = []
    for lid in range(8):
        h, v = 1, 1
        for _ in range(max(inp[lid + 1] % 5, 1)):
            for j in range(3):
                v = (v * 3 + inp[j]) & 0xFFFFFFFF
            h = hmix(h, 0)
        by_lid.append(hmix(h, v))
    spec = [by_lid[g % 4 + 4 * (g // 8)] for g in range(16)]
    args = ("do_while_inner_loop_barrier", inp, (8, 2), (4, 2))
    assert launch(args[0], True, *args[1:]) == spec
    assert launch(args[0], False, *args[1:]) != spec, "PoCL's bug is gone: update pocl_bugs.cl"
    # do_while_before_barrier: one group of 8
    inp = [3, 0, 1, 2, 3, 4, 5, 6, 7]
    spec = [38, 38, 1185, 36742, 1139009, 38, 38, 1185]
    assert launch("do_while_before_barrier", True, inp, (8,), (8,)) == spec
    assert launch("do_while_before_barrier", False, inp, (8,), (8,)) != spec, "bug gone"
