"""NVIDIA's unroll counts for pointer-walking loops (backends/nvptx/pointer_loops.py): the
index form the trial optimizes is the same program, checked by running both on the host;
the loops it leaves alone; how the counts are read back and attached."""

from __future__ import annotations

import ctypes
import re

import llvmlite.binding as llvm
import numpy as np
import pytest

from spirvjit.backends.nvptx.pointer_loops import (
    index_form,
    unroll_counts,
    with_unroll_counts,
)

# What the SPIR-V producer's strength reduction makes of `for (k = 0; k < n; k++) sum +=
# a[k] * b[k * stride]`, in the translator's style: two pointers stepped in the latch (a
# typed GEP by one float, an i8 GEP by a loop-invariant byte stride, possibly negative),
# a counter down to zero; the sum of the products, and a value after the loop that uses
# the last increment.
WALK = """

define float @"f"(ptr %"a", ptr %"b", i64 %"stride", i32 %"n", ptr %"last") {
entry:
  %"bytes" = shl i64 %"stride", 2
  %"go" = icmp sgt i32 %"n", 0
  br i1 %"go", label %".pre", label %"exit"
.pre:
  br label %"loop"
loop:
  %"pa" = phi  ptr [%"a", %".pre"], [%"pa.next", %"loop"]
  %"pb" = phi  ptr [%"pb.next", %"loop"], [%"b", %".pre"]
  %"c" = phi  i32 [%"n", %".pre"], [%"c.next", %"loop"]
  %"sum" = phi  float [0.0, %".pre"], [%"sum.next", %"loop"]
  %"x" = load float, ptr %"pa", align 4
  %"y" = load float, ptr %"pb", align 4
  %"sum.next" = call float @"llvm.fma.f32"(float %"x", float %"y", float %"sum")
  %"c.next" = add i32 %"c", -1
  %"pb.next" = getelementptr inbounds i8, ptr %"pb", i64 %"bytes"
  %"pa.next" = getelementptr float, ptr %"pa", i64 1
  %"done" = icmp eq i32 %"c.next", 0
  br i1 %"done", label %"after", label %"loop"
after:
  store ptr %"pb.next", ptr %"last", align 8
  br label %"exit"
exit:
  %"r" = phi float [0.0, %"entry"], [%"sum.next", %"after"]
  ret float %"r"
}

declare float @"llvm.fma.f32"(float, float, float)
"""


def _run(text: str):
    """``f`` of ``text`` compiled for the host, and its engine (which must outlive it)."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    machine = llvm.Target.from_default_triple().create_target_machine()
    module = llvm.parse_assembly(text)
    module.verify()
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    signature = ctypes.CFUNCTYPE(
        ctypes.c_float, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32,
        ctypes.c_void_p,
    )  # fmt: skip
    return signature(engine.get_function_address("f")), engine


@pytest.mark.parametrize("spelling", ["translator", "llvm"])
def test_index_form_computes_the_same_values(spelling):
    # The translator's text (llvmlite's spelling), or LLVM's printing of the module,
    # which is what the NVIDIA backend rewrites.
    text = WALK if spelling == "translator" else str(llvm.parse_assembly(WALK))
    indexed, loops = index_form(text)
    assert [(loop.header, loop.latch, sorted(loop.phis)) for loop in loops] == [
        ("loop", "loop", ["pa", "pb"])
    ]
    # No pointer phi left: both are the start plus the counter times the step.
    assert not re.search(r"= phi\s+ptr", indexed)
    assert re.search(r'%"?pb"? = getelementptr i8, ptr %"?b"?, i64 %"pb.offset"', indexed)
    assert re.search(r'%"?pa"? = getelementptr float, ptr %"?a"?, i64 %"pa.offset"', indexed)
    original, keep1 = _run(WALK)
    rewritten, keep2 = _run(indexed)
    rng = np.random.default_rng(7)
    a = rng.standard_normal(64).astype(np.float32)
    b = rng.standard_normal(64 * 7).astype(np.float32)
    cases = ((0, 1, 0), (1, 3, 0), (5, 1, 0), (17, 3, 0), (9, -7, 63 * 7), (64, 7, 0))
    for n, stride, start in cases:
        lasts = []
        results = []
        for f in (original, rewritten):
            last = ctypes.c_void_p(0)
            base = b.ctypes.data + 4 * start
            results.append(f(a.ctypes.data, base, stride, n, ctypes.addressof(last)))
            lasts.append(last.value)
        expected = sum(float(a[k]) * float(b[start + k * stride]) for k in range(n))
        assert results[0] == results[1] == pytest.approx(expected, rel=1e-5, abs=1e-5)
        assert lasts[0] == lasts[1]  # the pointer after the loop as well
        if n:
            assert lasts[0] == b.ctypes.data + 4 * (start + n * stride)


def test_tagged_trial_is_valid_ir():
    tagged, loops = index_form(WALK, tag=True)
    llvm.parse_assembly(tagged).verify()
    # Each instruction of the loop that names a value, once: the loop's 7, the two
    # offsets and GEPs, the counter's increment (not the phis, not the branch).
    marked = re.findall(r"^\s*(%\S+) = .*, !spirvjit\.copy !\d+$", tagged, re.M)
    assert len(marked) == len(set(marked)) == 7 + 4 + 1


@pytest.mark.parametrize(
    "change, why",
    [
        # The step changes inside the loop: a different amount each iteration.
        (
            ('%"pb.next" = getelementptr inbounds i8, ptr %"pb", i64 %"bytes"',
             '%"s" = sext i32 %"c" to i64\n'
             '  %"pb.next" = getelementptr inbounds i8, ptr %"pb", i64 %"s"'),
            "varying step",
        ),
        # An i32 index on a 64-bit pointer is sign-extended at each step: k * step in
        # 32 bits would wrap where the sum of the steps does not.
        (('getelementptr float, ptr %"pa", i64 1', 'getelementptr float, ptr %"pa", i32 1'), "i32"),
        # The source's own loop controls stay.
        (('br i1 %"done", label %"after", label %"loop"',
          'br i1 %"done", label %"after", label %"loop", !llvm.loop !0\n'), "pragma"),
    ],
)  # fmt: skip
def test_loops_left_alone(change, why):
    text = WALK.replace(*change)
    if why == "pragma":
        text += '!0 = distinct !{!0, !1}\n!1 = !{!"llvm.loop.unroll.count", i32 2}\n'
    llvm.parse_assembly(text).verify()
    indexed, loops = index_form(text)
    if why == "pragma":
        assert (indexed, loops) == (text, [])
    else:  # the other pointer still is rewritten
        assert [loop.phis for loop in loops] == [["pb" if why == "i32" else "pa"]]
        llvm.parse_assembly(indexed).verify()


NESTED = """
define void @"g"(ptr %"p", i64 %"s", i32 %"m", i32 %"n", ptr %"out") {
entry:
  br label %"outer"
outer:
  %"q" = phi  ptr [%"p", %"entry"], [%"q.next", %"outer.latch"]
  %"i" = phi  i32 [0, %"entry"], [%"i.next", %"outer.latch"]
  br label %"inner"
inner:
  %"j" = phi  i32 [0, %"outer"], [%"j.next", %"inner"]
  %"v" = load float, ptr %"q", align 4
  store float %"v", ptr %"out", align 4
  %"j.next" = add i32 %"j", 1
  %"more" = icmp ult i32 %"j.next", %"n"
  br i1 %"more", label %"inner", label %"outer.latch"
outer.latch:
  %"q.next" = getelementptr i8, ptr %"q", i64 %"s"
  %"i.next" = add i32 %"i", 1
  %"again" = icmp ult i32 %"i.next", %"m"
  br i1 %"again", label %"outer", label %"exit"
exit:
  ret void
}
"""


def test_outer_loops_are_left_alone():
    # The unroller decides for innermost loops: a pointer walked by an outer loop stays.
    llvm.parse_assembly(NESTED).verify()
    assert index_form(NESTED) == (NESTED, [])
    # Without the inner loop, the same loop is innermost and rewritten.
    inner = NESTED[NESTED.index("inner:") : NESTED.index("outer.latch:")]
    flat = NESTED.replace(
        inner,
        'inner:\n  %"v" = load float, ptr %"q", align 4\n'
        '  store float %"v", ptr %"out", align 4\n  br label %"outer.latch"\n',
    )
    llvm.parse_assembly(flat).verify()
    indexed, loops = index_form(flat)
    assert [(loop.header, loop.latch, loop.phis) for loop in loops] == [
        ("outer", "outer.latch", ["q"])
    ]
    llvm.parse_assembly(indexed).verify()


# An optimized module as the trial gives it back: the loop runtime-unrolled by 2 (two
# copies of instruction 0 of loop 0), its remainder loop (one copy), and a copy of
# instruction 1 outside any loop.
OPTIMIZED = """
define void @k(ptr %p, i32 %n) {
entry:
  br label %main

main:
  %i = phi i32 [ 0, %entry ], [ %i2, %main ]
  %x1 = load float, ptr %p, align 4, !spirvjit.copy !3
  %x2 = load float, ptr %p, align 4, !spirvjit.copy !3
  %i2 = add i32 %i, 2
  %d = icmp eq i32 %i2, %n
  br i1 %d, label %rem, label %main

rem:
  %j = phi i32 [ 0, %main ], [ %j1, %rem ]
  %x3 = load float, ptr %p, align 4, !spirvjit.copy !3
  %j1 = add i32 %j, 1
  %e = icmp eq i32 %j1, %n
  br i1 %e, label %out, label %rem

out:
  %y = load float, ptr %p, align 4, !spirvjit.copy !4
  ret void
}

!3 = !{i32 0, i32 0}
!4 = !{i32 1, i32 1}
"""


def test_counts_are_the_copies_in_one_loop():
    loops = index_form(WALK)[1]
    assert [loop.number for loop in loops] == [0]
    # Loop 1's only copy is outside any loop: unrolled fully (no count).
    assert unroll_counts(OPTIMIZED, loops) == {0: 2}


def test_counts_go_on_the_latch_branch():
    loops = index_form(WALK)[1]
    annotated = with_unroll_counts(WALK, loops, {0: 4})
    assert 'br i1 %"done", label %"after", label %"loop", !llvm.loop !0' in annotated
    assert '!1 = !{!"llvm.loop.unroll.count", i32 4}' in annotated
    llvm.parse_assembly(annotated).verify()
