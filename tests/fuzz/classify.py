"""Explains the differential tester's findings by known spirvjit bugs, while they last.

A known bug is listed with

* a *probe*: a small program that shows whether the bug is still present in the spirvjit
  under test (run once per tester run). Once the fix merges, the probe passes, the entry
  goes inactive, and every finding it used to explain counts as unexplained again;
* for wrong results and hangs, a *workaround*: the generator spells the same program
  without the construct (``generator.KNOWN_WORKAROUNDS``). A finding is explained only
  if the kernel uses the construct and the rewritten program agrees with PoCL on the same
  producer: the construct is then shown to be the cause;
* for errors, the message the bug produces.

A bug of the reference (PoCL) is listed the same way, with ``reference_bug``: its probe
runs PoCL, and a finding is explained only if, besides, spirvjit gives the same result for
the original spelling as for the rewritten one (so it is PoCL's result that moved).

Anything else is ``unexplained``: a new spirvjit bug, a PoCL bug or a generator bug, to be
triaged by hand (``--keep`` saves the program).
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass

import numpy as np

PROBE_OPTIONS = ["-cl-std=CL3.0"]


@dataclass(frozen=True)
class Known:
    key: str
    title: str
    producers: tuple[str, ...]
    feature: str | None = None  # kernel feature (Kernel.features) the bug needs
    workaround: str | None = None  # generator spelling that avoids it
    message: str | None = None  # regular expression matching the error it causes
    reference_bug: bool = False  # a bug of PoCL, not of spirvjit (see the module docstring)


KNOWN = (
    Known(
        "item2",
        "known: issue 12 item 2 (clang-22 SPIR-V back end inverts the signedness of "
        "integer convert_*)",
        ("clang",),
        feature="convert_int",
        workaround="convert_int",
    ),
    Known(
        "item1",
        "known: issue 12 item 1 (barrier in a helper called from several sites)",
        ("clang", "translator"),
        feature="barrier_helper_multi",
        workaround="barrier_helper",
    ),
    Known(
        "item7",
        "known: issue 12 item 7 (OpSwitch case literals sharing a target: phi entries)",
        ("clang", "translator"),
        feature="switch",
        message=r"PHINode should have one entry for each predecessor",
    ),
    Known(
        "item8",
        "known: issue 12 item 8 (OpAny/OpAll on integer vectors)",
        ("clang", "translator"),
        feature="any_all",
        message=r"OpAny|OpAll",
    ),
    Known(
        "tr-i3",
        "known: translator producer: llvm-spirv-15 rejects the i3 switch clang-15 -O2 makes of "
        "switch (x % 5) (findings/translator_switch_i3.cl; fixed: odd widths are widened)",
        ("translator",),
        message=r"InvalidBitWidth",
    ),
    Known(
        "tr-order",
        "known: translator producer: llvm-spirv-15 writes blocks out of dominance order "
        "(findings/translator_block_order.cl; fixed: blocks are reordered)",
        ("translator",),
        message=r"is used before its definition",
    ),
    Known(
        "tr-decoration",
        "known: translator producer: llvm-spirv-15 leaves a forward-referenced convert_*'s "
        "SaturatedConversion/FPRoundingMode on an id it never defines "
        "(findings/translator_undefined_decoration.cl; fixed: no forward reference to the call)",
        ("translator",),
        message=r"OpDecorate: id %\d+ is never defined",
    ),
    Known(
        "pocl-vdiv",
        "known: PoCL 3.1 folds a vector division or remainder by select(b, 1, bad) to one by 1 "
        "(findings/pocl_bugs.cl vector_div_by_select)",
        ("clang", "translator"),
        feature="vector_divmod",
        workaround="pocl_vdiv",
        reference_bug=True,
    ),
    Known(
        "pocl-loop",
        "known: PoCL 3.1 runs a loop with a work-item dependent trip count at least once when a "
        "barrier follows it (findings/pocl_bugs.cl loop_before_barrier)",
        ("clang", "translator"),
        feature="divergent_loop",
        workaround="pocl_loop",
        reference_bug=True,
    ),
    Known(
        "item9",
        "known: issue 12 item 9 (clang-15 -O2 emits freeze, which llvm-spirv-15 rejects)",
        ("translator",),
        message=r"Can't translate llvm instruction:\s+%\S+ = freeze",
    ),
)


# ----------------------------------------------------------------- probes
def _message(key: str) -> str:
    return next(k.message for k in KNOWN if k.key == key)


def _run(src: str, producer: str, n: int, local: int, dtype=np.int32) -> np.ndarray:
    import spirvjit

    prog = spirvjit.compile_opencl(src, PROBE_OPTIONS, producer=producer)
    out = np.zeros(n, dtype)
    prog.kernel("probe")(out, global_size=n, local_size=local)
    return out


def probe_item2(producer: str) -> bool:
    src = """__kernel void probe(__global int *o) {
        volatile char c = -1; volatile ushort u = 40000;
        o[0] = convert_int(c); o[1] = convert_ushort_sat(u); }"""
    out = _run(src, producer, 2, 1)  # one work-item writes o[0] and o[1]
    return bool(out[0] != -1 or out[1] != 40000)


def probe_item1(producer: str) -> bool:
    src = """
    __attribute__((noinline)) void sync(void) { barrier(CLK_LOCAL_MEM_FENCE); }
    __kernel __attribute__((reqd_work_group_size(8, 1, 1))) void probe(__global int *o) {
        __local int t[8]; int l = get_local_id(0);
        t[l] = l; sync();
        int a = t[7 - l]; sync();
        t[l] = a * 10; sync();
        o[l] = t[(l + 1) % 8]; }"""
    out = _run(src, producer, 8, 8)
    expected = [(7 - (i + 1) % 8) * 10 for i in range(8)]
    return out.tolist() != expected


def probe_item7(producer: str) -> bool:
    src = """__kernel void probe(__global int *o) {
        int x = o[0], y = 0;
        switch (x) { case 1: case 2: case 7: y = 3; break; case 100000: y = 4;
                     case -5: y += 1; break; default: y = 9; }
        switch ((uint)x) { case 3u: case 4000000000u: y += 2; default: y += 1; }
        o[1] = y; }"""
    try:
        _run(src, producer, 1, 1)
    except Exception as exc:  # noqa: BLE001
        return bool(re.search(_message("item7"), str(exc)))
    return False


def probe_item8(producer: str) -> bool:
    src = """__kernel void probe(__global int *o) {
        int4 v = (int4)(o[0], -1, 0, 0); short8 w = (short8)((short)o[0]);
        o[0] = any(v) + 2 * all(v) + 4 * any(w); }"""
    try:
        out = _run(src, producer, 1, 1)
    except Exception as exc:  # noqa: BLE001
        return bool(re.search(_message("item8"), str(exc)))
    return bool(out[0] != 1)


def probe_item9(producer: str) -> bool:
    src = """__kernel void probe(__global int *o) {
        int i = get_global_id(0), n = o[1] + 3; o[i] = i / n + i % n; }"""
    try:
        _run(src, producer, 1, 1)
    except Exception as exc:  # noqa: BLE001
        return bool(re.search(_message("item9"), str(exc)))
    return False


def probe_tr_decoration(producer: str) -> bool:
    # The conversion feeds the loop's phi, so llvm-spirv-15 translates a use before the call:
    # the module is rejected (dangling decoration) or, were the decoration dropped, the
    # conversion no longer saturates (3e9 would not become INT_MAX).
    src = """__kernel void probe(__global int *o) {
        int acc = 0;
        for (int i = 0; i < o[0]; i++) acc = convert_int_sat_rtz(as_float(o[1]) + (float)acc);
        o[2] = acc; }"""
    out = np.array([2, np.float32(3e9).view(np.int32), 0], np.int32)
    try:
        import spirvjit

        prog = spirvjit.compile_opencl(src, PROBE_OPTIONS, producer=producer)
        prog.kernel("probe")(out, global_size=1)
    except Exception as exc:  # noqa: BLE001
        return bool(re.search(_message("tr-decoration"), str(exc)))
    return bool(out[2] != 2**31 - 1)


FINDINGS = os.path.join(os.path.dirname(__file__), "findings")


def _run_pocl_bug(name: str, size: int) -> list[int]:
    """Runs kernel ``name`` of findings/pocl_bugs.cl on PoCL (one work-group of ``size``)."""
    import pyopencl as cl

    with open(os.path.join(FINDINGS, "pocl_bugs.cl")) as f:
        src = re.search(rf"^__kernel void {name}\(.*?^\}}", f.read(), re.M | re.S)[0]
    platform = next(p for p in cl.get_platforms() if "Portable" in p.name)
    ctx = cl.Context(platform.get_devices())
    queue = cl.CommandQueue(ctx)
    prog = cl.Program(ctx, src).build(options=PROBE_OPTIONS)
    out = np.zeros(4, np.uint64)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=out)
    getattr(prog, name)(queue, (size,), (size,), buf)
    cl.enqueue_copy(queue, out, buf)
    queue.finish()
    return out.astype(np.int64).tolist()


@functools.cache
def probe_pocl_vdiv(producer: str) -> bool:
    """PoCL's result of findings/pocl_bugs.cl ``vector_div_by_select`` is wrong (the same for
    every producer: it is the reference's bug)."""
    return _run_pocl_bug("vector_div_by_select", 1) != [2, 2, 0, 7]  # the spec's quotients


@functools.cache
def probe_pocl_loop(producer: str) -> bool:
    """PoCL's result of findings/pocl_bugs.cl ``loop_before_barrier`` is wrong."""
    return _run_pocl_bug("loop_before_barrier", 4) != [2**32 - 1, 4, 2**32 - 1, 4]


def _probe_file(key: str, name: str):
    """A probe that compiles a saved reproducer and looks for the known bug's message."""
    known = next(k for k in KNOWN if k.key == key)

    def probe(producer: str) -> bool:
        import spirvjit

        with open(os.path.join(FINDINGS, name)) as f:
            src = f.read()
        try:
            spirvjit.compile_opencl(src, ["-cl-std=CL3.0", "-w"], producer=producer)
        except Exception as exc:  # noqa: BLE001
            return bool(re.search(known.message, str(exc)))
        return False

    return probe


PROBES = {
    "tr-i3": _probe_file("tr-i3", "translator_switch_i3.cl"),
    "tr-order": _probe_file("tr-order", "translator_block_order.cl"),
    "tr-decoration": probe_tr_decoration,
    "item1": probe_item1,
    "item2": probe_item2,
    "item7": probe_item7,
    "item8": probe_item8,
    "item9": probe_item9,
    "pocl-vdiv": probe_pocl_vdiv,
    "pocl-loop": probe_pocl_loop,
}


@dataclass(frozen=True)
class ProbeJob:
    """Runs every probe on every producer (in a worker: a probe may hang)."""

    def run(self) -> dict[tuple[str, str], bool]:
        active = {}
        for k in KNOWN:
            for p in k.producers:
                try:
                    active[(k.key, p)] = PROBES[k.key](p)
                except Exception:  # noqa: BLE001 - a crashing probe shows the bug is there
                    active[(k.key, p)] = True
        return active
