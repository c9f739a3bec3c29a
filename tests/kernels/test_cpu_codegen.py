"""CPU code generation: ranges before masks (backends/cpu/guards.py).

A guard comparing the x global id with a group-uniform bound splits the x work-item loop
into a main range, where the guard's value is known and the body is plain vector code,
and the rest. The results must not change for any bound, predicate, offset or group
shape; the assembly of the guarded kernels must have no masked loads/stores (vmaskmov)
where an AVX2 host would otherwise use them.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import spirvjit
from spirvjit.backends.cpu import abi
from spirvjit.target import host_target, parse_cpu_target

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "kernels"

# One kernel per guard shape; each writes out[i] = f(i) where the guard holds and leaves
# the rest untouched. ``cond`` is the guard as written, ``model`` its NumPy twin (on the
# global id x, with the bounds ``n`` (int) and ``u`` (ulong)).
GUARDS = {
    "lt_uint": ("x < (uint)n", lambda x, n, u: x < n % 2**32),
    "le_int": ("(int)x <= n", lambda x, n, u: x <= n),
    "swapped": ("n > (int)x", lambda x, n, u: x < n),
    "ge_return": ("!((int)x >= n)", lambda x, n, u: x < n),
    "lower_const": ("(int)x > 3", lambda x, n, u: x > 3),
    "ge_const": ("(int)x >= 5", lambda x, n, u: x >= 5),
    "eq_zero": ("(int)x != 0", lambda x, n, u: x != 0),
    "eq_bound": ("(int)x != n - 1", lambda x, n, u: x != n - 1),
    "two_sided": ("(int)x > 2 && (int)x < n - 1", lambda x, n, u: (x > 2) & (x < n - 1)),
    "ulong": ("x < u", lambda x, n, u: x < u if u < 2**63 else x >= 0),
    "mul_bound": ("(int)x < 2 * n + 1", lambda x, n, u: x < 2 * n + 1),
    "eq_only": ("(int)x == n", lambda x, n, u: x == n),
}


def _source(cond: str) -> str:
    return f"""
kernel void guarded(global int *out, int n, ulong u)
{{
    size_t x = get_global_id(0);
    size_t slot = x - get_global_offset(0);
    if ({cond})
        out[slot] = 3 * (int)x + 1;
    if ((int)get_global_id(0) >= n)
        return;
    out[slot] += 1000;
}}
"""


def _expected(model, global_size: int, offset: int, n: int, u: int) -> np.ndarray:
    x = np.arange(global_size, dtype=np.int64) + offset
    out = np.full(global_size, -7, np.int64)
    hit = model(x, n, u)
    out[hit] = 3 * x[hit] + 1
    out[x < n] += 1000
    return out.astype(np.int32)


LAUNCHES = [
    # (global size, local size or None, offset, n)
    (1000, None, 0, 997),
    (1000, 64, 0, 997),
    (1000, 48, 0, 500),  # non-uniform last group, bound mid-range
    (256, 256, 0, 0),
    (256, 32, 0, -5),  # negative bound: the signed guards never hold
    (300, 100, 40, 200),  # global offset
    (512, 128, 0, 10**6),  # bound past the range
    (64, 64, 7, 33),
]


@pytest.mark.parametrize("guard", list(GUARDS))
def test_guard_split_results(guard: str) -> None:
    cond, model = GUARDS[guard]
    kernel = spirvjit.compile_opencl(_source(cond)).kernel("guarded")
    for global_size, local, offset, n in LAUNCHES:
        for u in (n if n >= 0 else 0, 2**64 - 1):
            out = np.full(global_size, -7, np.int32)
            kernel(
                out,
                np.int32(n),
                np.uint64(u),
                global_size=(global_size,),
                local_size=None if local is None else (local,),
                global_offset=(offset,),
            )
            want = _expected(model, global_size, offset, n, u)
            np.testing.assert_array_equal(
                out, want, err_msg=f"{guard}: g={global_size} l={local} off={offset} n={n} u={u}"
            )


def test_guard_split_2d_stencil_matches_numpy() -> None:
    """The demo's 5-point stencil (guards x >= nx || y >= ny, x == 0, x == nx - 1)."""
    src = (EXAMPLES / "stencil.cl").read_text()
    kernel = spirvjit.compile_opencl(src).kernel("stencil")
    rng = np.random.default_rng(1)
    for nx, ny, local in ((37, 29, None), (64, 16, (16, 4)), (130, 3, (32, 1))):
        a = rng.uniform(0, 1, (ny, nx)).astype(np.float32)
        out = np.zeros_like(a)
        global_size = (-(-nx // 16) * 16, -(-ny // 4) * 4)
        kernel(a, out, np.int32(nx), np.int32(ny), global_size=global_size, local_size=local)
        want = a.copy()
        want[1:-1, 1:-1] = np.float32(0.25) * (
            (a[1:-1, :-2] + a[1:-1, 2:]) + (a[:-2, 1:-1] + a[2:, 1:-1])
        )
        np.testing.assert_array_equal(out, want)


def test_guards_found_in_saxpy_and_stencil() -> None:
    for name in ("saxpy", "stencil"):
        program = spirvjit.compile_opencl((EXAMPLES / f"{name}.cl").read_text())
        found = []
        original = abi.guard_split.find_guards

        def spy(kernel, slot_of, dim=0, found=found, original=original):
            result = original(kernel, slot_of, dim=dim)
            if dim == 0:  # the x guards (yjam.py asks for the y ones too)
                found.extend(result)
            return result

        abi.guard_split.find_guards = spy
        try:
            program.assembly(name)
        finally:
            abi.guard_split.find_guards = original
        assert found, f"{name}: no guard recognised"


@pytest.mark.skipif(
    not host_target().triple.startswith("x86_64"), reason="the assembly check is for x86-64"
)
@pytest.mark.parametrize("level", ["x86-64-v3", "host"])
@pytest.mark.parametrize("name", ["saxpy", "stencil"])
def test_guarded_kernels_have_no_masked_memory(name: str, level: str) -> None:
    """Before the split, both kernels' work-item loops were vmaskmovps loads and stores
    (AVX2); AVX-512 would mask with a k register. AVX2 code is checked on any x86-64 host
    (only compiled), and the host's own (an AVX-512 one's loops are 16-wide)."""
    if level == "host" and "+avx2" not in host_target().features.split(","):
        pytest.skip("the host has no AVX2: its loops are not 8 or 16 floats wide")
    spirv = spirvjit.compile_opencl((EXAMPLES / f"{name}.cl").read_text()).spirv
    asm = spirvjit.Program(spirv, target=parse_cpu_target(level)).assembly(name)
    assert not re.findall(r"\bv(p)?maskmov|\{%k[1-7]\}", asm)
    assert re.search(r"\bv(fmadd\w*|add|mul)ps\s+[^\n]*[yz]mm", asm), "no vector float arithmetic"


def test_kernel_called_by_another_kernel_keeps_its_guard() -> None:
    """``inner``'s guard is about its own bound; the caller's main range says nothing of it."""
    src = """
kernel void inner(global int *out, int m)
{
    int x = get_global_id(0);
    if (x < m)
        out[x] = x;
}
kernel void outer(global int *out, int n, int m)
{
    if ((int)get_global_id(0) < n)
        inner(out, m);
}
"""
    kernel = spirvjit.compile_opencl(src).kernel("outer")
    out = np.full(256, -1, np.int32)
    kernel(out, np.int32(200), np.int32(100), global_size=(256,), local_size=(64,))
    want = np.where(np.arange(256) < 100, np.arange(256), -1).astype(np.int32)
    np.testing.assert_array_equal(out, want)


ROWSUM = """
kernel void rowsum(global const float *a, global float *out, int rows, int cols)
{
    int r = get_global_id(0);
    if (r < rows) {
        float s = 0.0f;
        for (int c = 0; c < cols; c++)
            s += a[r * cols + c];
        out[r] = s;
    }
}
"""


def test_rest_range_of_a_kernel_with_loops_calls_one_small_copy() -> None:
    """The rest range was a second inlined copy of the kernel whose inner loop was
    vectorized and unrolled like the main range's (cold JIT of matvec/colmean: 2-3x the
    unguarded kernel's); now it calls one out-of-line copy optimized for size."""
    program = spirvjit.compile_opencl(ROWSUM)
    ir_text = str(program.translation().module)
    assert re.search(r"call void @\"spv\.rowsum[^\n]*\bnoinline\b", ir_text)
    assert re.search(r"define internal void @\"spv\.rowsum[^\n]*minsize", ir_text)
    asm = program.assembly("rowsum")
    assert re.search(r"\bcall[q]?\s+spv\.rowsum", asm)
    # Results: rows not a multiple of the group, several group shapes.
    rng = np.random.default_rng(7)
    rows, cols = 203, 37
    a = rng.random((rows, cols), dtype=np.float32)
    for local in (16, 64, 256):
        out = np.full(256 * 2, -1.0, np.float32)
        program.rowsum(a, out, np.int32(rows), np.int32(cols), global_size=512, local_size=local)
        np.testing.assert_allclose(out[:rows], a.sum(axis=1), rtol=1e-5)
        assert (out[rows:] == -1.0).all()


def test_kernel_without_loops_keeps_its_rest_range_inlined() -> None:
    # Out of line, a loop-free kernel costs more (a function of its own) than inlined.
    program = spirvjit.compile_opencl((EXAMPLES / "saxpy.cl").read_text())
    assert not re.search(r"\bcall[q]?\s+spv\.saxpy", program.assembly("saxpy"))


@pytest.fixture
def optimize_levels(monkeypatch) -> list[int]:
    """The LLVM pipeline level of every CPU kernel optimized while the test runs."""
    from spirvjit.backends.cpu import codegen

    levels: list[int] = []
    optimize = codegen.optimize

    def recording(module, target, speed_level=3):
        levels.append(speed_level)
        return optimize(module, target, speed_level)

    monkeypatch.setattr(codegen, "optimize", recording)
    return levels


def test_barrier_kernels_are_optimized_at_o2(optimize_levels) -> None:
    """Barrier kernels (a copy of the step function per region) took 84-230 ms of cold
    JIT at O3; at O2 about a third less, with the same vector code in their hot loops."""
    from spirvjit.backends.cpu import codegen

    levels = optimize_levels
    source = Path(__file__).resolve().parents[2] / "benchmarks" / "kernels" / "reduction.cl"
    # Renamed: kernels of their own, which no cache holds.
    program = spirvjit.compile_opencl(source.read_text().replace("reduction", "reduction_o2"))
    program.kernel("reduction_o2").compile()
    saxpy = (EXAMPLES / "saxpy.cl").read_text().replace("saxpy", "saxpy_o3")
    spirvjit.compile_opencl(saxpy).kernel("saxpy_o3").compile()
    assert levels == [codegen.STEPPED_SPEED_LEVEL, 3] and codegen.STEPPED_SPEED_LEVEL == 2
    # Still right: partial sums of 1..n over groups of 64.
    n = 4096 + 13
    x = np.arange(1, n + 1, dtype=np.float32)
    partial = np.zeros(64, np.float32)
    program.reduction_o2(
        x, partial, spirvjit.LocalMemory(64 * 4), np.uint32(n), global_size=64 * 64, local_size=64
    )
    assert partial.sum() == pytest.approx(n * (n + 1) / 2, rel=1e-6)


def test_opt_level_variable_forces_the_pipeline_level(monkeypatch, optimize_levels) -> None:
    """SPIRVJIT_OPT_LEVEL forces the LLVM pipeline level of every CPU kernel (barrier
    kernels included) and is part of the cache key: code made at one level is not taken
    for another."""
    levels = optimize_levels
    source = Path(__file__).resolve().parents[2] / "benchmarks" / "kernels" / "reduction.cl"
    program = spirvjit.compile_opencl(source.read_text().replace("reduction", "reduction_o1"))
    text = (EXAMPLES / "saxpy.cl").read_text()
    saxpy = spirvjit.compile_opencl(text.replace("saxpy", "saxpy_o1"))
    default_key = saxpy.kernel_key("saxpy_o1")
    monkeypatch.setenv("SPIRVJIT_OPT_LEVEL", "1")
    assert saxpy.kernel_key("saxpy_o1") != default_key
    program.kernel("reduction_o1").compile()
    saxpy.kernel("saxpy_o1").compile()
    assert levels == [1, 1]
    n = 1000
    x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    saxpy.saxpy_o1(np.float32(2.0), x, y, np.uint32(n), global_size=1024, local_size=64)
    np.testing.assert_array_equal(y, 2.0 * np.arange(n, dtype=np.float32) + 1.0)
    monkeypatch.setenv("SPIRVJIT_OPT_LEVEL", "0")
    with pytest.raises(ValueError, match="SPIRVJIT_OPT_LEVEL"):
        saxpy.kernel_key("saxpy_o1")


def test_row_x_loops_are_a_function_and_not_copied_per_empty_range() -> None:
    """The stencil's y loop held the row's main-range and rest x loops, and LLVM's loop
    unswitching copied the y loop for every combination of them being empty: four copies
    of the vector loop (each with its epilogue), a third of the kernel's cold JIT. The
    x loops of a row are now a function of their own: one vector loop for interior rows
    and one for boundary rows (the uniform ``y == 0 || y == ny - 1``)."""
    from spirvjit import jit

    src = (EXAMPLES / "stencil.cl").read_text().replace("stencil", "stencil_rows")
    program = spirvjit.compile_opencl(src)
    translation = program.translation()
    assert re.search(
        r'define internal void @"[^"]*\.wg\.row"[^\n]*noinline', str(translation.module)
    )
    symbol = jit.kernel_symbol(
        program.module, program.symbol_prefix, "stencil_rows", program.target
    )
    optimized = str(
        jit._optimized(translation, program.target, symbol, None, jit.StageTimes(), None)
    )
    assert re.search(r"^define internal [^\n]*\.wg\.row", optimized, re.M), "row inlined"
    vector_loops = re.findall(r"^vector\.body\d*:", optimized, re.M)
    assert 1 <= len(vector_loops) <= 2, vector_loops


POWSUM = """
kernel void powsum(global float *out, int m)
{
    int i = get_global_id(0);
    float s = 0.0f;
    for (int k = 0; k < m; k++)
        s = s * 0.5f + (float)(i + k);
    out[i] = s;
}
"""


def test_vector_remainder_of_a_kernel_with_loops_calls_one_small_copy() -> None:
    """The items after a row's last full W-chunk (whole-function vectorization) ran an
    inlined scalar copy of the kernel, optimized like hot code (its loops unswitched and
    unrolled): a fifth of gemm_naive's cold JIT. Now they call the out-of-line copy."""
    program = spirvjit.compile_opencl(POWSUM)
    module = program.translation().module
    notes = [getattr(fn, "wfv_note", "") for fn in module.functions]
    if not any(note.startswith("vectorized") for note in notes):
        pytest.skip(f"not vectorized across work-items (SPIRVJIT_WFV?): {notes}")
    text = str(module)
    assert re.search(r'call void @"spv\.powsum[^\n]*\bnoinline\b', text)
    assert re.search(r'define internal void @"spv\.powsum[^"]*"[^\n]*minsize', text)
    # Results: local sizes with and without a remainder after the W-chunks.
    m = 9
    for n, local in ((200, 13), (256, 64), (77, 7)):
        out = np.zeros(n, np.float32)
        program.powsum(out, np.int32(m), global_size=n, local_size=local)
        want = np.zeros(n, np.float32)
        for k in range(m):
            want = want * np.float32(0.5) + (np.arange(n) + k).astype(np.float32)
        np.testing.assert_array_equal(out, want)
