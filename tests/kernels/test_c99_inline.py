"""Helpers declared plain `inline` (no `static`), as many public samples write them (NVIDIA's
oclBlackScholes, AMD APP SDK kernels): under C99's rule such a definition is "inline only",
clang emits no body for it, and a call it does not inline left the SPIR-V importing a
function nobody defines ("calls 'BlackScholesBody', which the module imports but does not
define"). Whether clang inlines depends on its heuristics (the size of the helper, how many
callers), so the kernels below force the call with `noinline`. See frontend/opencl.py
_GNU_INLINE."""

from __future__ import annotations

import numpy as np
import pytest
from harness import build

PLAIN = r"""
inline __attribute__((noinline)) int thrice(int x) { return 3 * x; }
static inline __attribute__((noinline)) int four(int x) { return 4 * x; }

inline __attribute__((noinline)) void body(global int *out, int a) { *out = thrice(a) + 1; }

kernel void k(global int *a, global int *out)
{
    size_t i = get_global_id(0);
    body(&out[i], a[i]);
    out[i] += four(a[i]);
}
"""

# C99's `extern inline` is an external definition: it worked before and must still work.
EXTERN = r"""
extern inline __attribute__((noinline)) int twice(int x) { return 2 * x; }

kernel void k(global int *a, global int *out)
{
    out[get_global_id(0)] = twice(a[get_global_id(0)]);
}
"""

LEVELS = pytest.mark.parametrize("level", [(), ("-O0",)], ids=["O2", "O0"])


def _run(source: str, producer: str, level: tuple) -> tuple[np.ndarray, np.ndarray]:
    program = build(source, options=("-cl-std=CL3.0", *level), producer=producer)
    a = np.arange(-5, 11, dtype=np.int32)
    out = np.zeros_like(a)
    program.kernel("k")(a, out, global_size=a.size)
    return a, out


@LEVELS
def test_plain_inline_helpers_that_are_not_inlined(producer: str, level: tuple) -> None:
    a, out = _run(PLAIN, producer, level)
    np.testing.assert_array_equal(out, 3 * a + 1 + 4 * a)


@LEVELS
def test_extern_inline_stays_an_external_definition(producer: str, level: tuple) -> None:
    a, out = _run(EXTERN, producer, level)
    np.testing.assert_array_equal(out, 2 * a)


def test_only_user_functions_ask_for_the_second_compile() -> None:
    """Built-ins a module declares (mangled ones, intrinsics, printf, __to_global) are not
    inline-only helpers: they must not make the front end compile a program twice."""
    from spirvjit.frontend.opencl import inline_only_functions

    ir_text = "\n".join(
        [
            "declare spir_func void @body(ptr addrspace(1) noundef, i32 noundef)",
            'declare spir_func i32 @"odd.name"(i32)',
            "declare spir_func ptr addrspace(1) @__to_global(ptr addrspace(4))",
            "declare spir_func i32 @printf(ptr addrspace(2), ...)",
            "declare void @llvm.lifetime.start.p0(ptr)",
            "declare spir_func i64 @_Z13get_global_idj(i32 noundef)",
            "define spir_func i32 @thrice(i32 %0) {",
        ]
    )
    assert inline_only_functions(ir_text) == ["body", "odd.name"]
