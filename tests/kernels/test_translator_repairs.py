"""The translator producer (clang-15 + llvm-spirv-15) on what the differential tester found
(tests/fuzz/findings/translator_*.cl): odd-width integers, blocks out of dominance order,
and ``convert_*`` decorations left on ids nothing defines. Each program is run, against
the clang producer and NumPy where a reference is simple."""

from __future__ import annotations

import ctypes
import itertools
from pathlib import Path

import numpy as np
import pytest
from harness import build, known_spirv_val_error, spirv_val, spirv_val_path, translator_missing

import spirvjit
from spirvjit.errors import SpirvError
from spirvjit.frontend import opencl
from spirvjit.frontend.odd_widths import (
    UnsupportedWidth,
    load_odd_vectors_whole,
    split_odd_vector_casts,
    widen_odd_integers,
)
from spirvjit.frontend.translator_fixups import fix_translator_spirv
from spirvjit.frontend.translator_ir import copy_conversion_results

FINDINGS = Path(__file__).resolve().parents[1] / "fuzz" / "findings"
FUZZ_OPTIONS = ("-cl-std=CL3.0", "-w")


def _finding(name: str) -> str:
    return (FINDINGS / name).read_text()


def _needs_translator() -> None:
    why = translator_missing()
    if why:
        pytest.skip(why)


# --- odd-width integers: the rewrite is exact --------------------------------------------------

_BINARY = ("add", "sub", "mul", "shl", "and", "or", "xor", "udiv", "urem", "lshr")
_BINARY += ("sdiv", "srem", "ashr", "add nuw nsw", "shl nsw", "lshr exact")
_PREDICATES = ("eq", "ne", "ult", "ule", "ugt", "uge", "slt", "sle", "sgt", "sge")


def _function(bits: int, body: str, result: str, ext: str = "sext") -> str:
    """``define i64 @f(i64 %a, i64 %b)``: %x, %y are %a, %b truncated to i``bits``."""
    out = f"or {result}, 0" if result.startswith("i64 ") else f"{ext} {result} to i64"
    return (
        "define i64 @f(i64 %a, i64 %b) {\n"
        "entry:\n"
        f"  %x = trunc i64 %a to i{bits}\n"
        f"  %y = trunc i64 %b to i{bits}\n"
        f"{body}"
        f"  %out = {out}\n"
        "  ret i64 %out\n"
        "}\n"
    )


def _programs(bits: int):
    """(name, IR, defined(x, y)) covering every form the rewrite accepts."""
    sign = 1 << (bits - 1)
    for op in _BINARY:
        name = op.split()[0]

        def defined(x, y, name=name, op=op):
            if name in ("udiv", "urem", "sdiv", "srem") and y == 0:
                return False
            if name in ("sdiv", "srem") and x == sign and y == (1 << bits) - 1:
                return False  # INT_MIN / -1 overflows
            if name in ("shl", "lshr", "ashr") and y >= bits:
                return False  # poison
            if op == "add nuw nsw":
                return x + y < (1 << bits) and -sign <= _s(x, bits) + _s(y, bits) < sign
            if op == "shl nsw":
                return y < bits and -sign <= _s(x, bits) << y < sign
            if op == "lshr exact":
                return y < bits and x & ((1 << y) - 1) == 0
            return True

        for ext in ("sext", "zext"):
            ir = _function(bits, f"  %r = {op} i{bits} %x, %y\n", f"i{bits} %r", ext)
            yield f"{op}/{ext}", ir, defined
        for k in (-1, 1, sign, 3):
            if name in ("shl", "lshr", "ashr") and not 0 <= k < bits:
                continue
            ir = _function(bits, f"  %r = {op} i{bits} %x, {k}\n", f"i{bits} %r")
            yield f"{op} {k}", ir, (lambda x, y, d=defined, k=k: d(x, k % (1 << bits)))
    for pred in _PREDICATES:
        ir = _function(bits, f"  %r = icmp {pred} i{bits} %x, %y\n", "i1 %r", "zext")
        yield f"icmp {pred}", ir, None
        ir = _function(bits, f"  %r = icmp {pred} i{bits} %x, -2\n", "i1 %r", "zext")
        yield f"icmp {pred} -2", ir, None
    casts = [
        ("trunc i1", "  %r = trunc i{b} %x to i1\n", "i1 %r"),
        ("zext i1", "  %c = trunc i64 %b to i1\n  %r = zext i1 %c to i{b}\n", "i{b} %r"),
        ("sext i1", "  %c = trunc i64 %b to i1\n  %r = sext i1 %c to i{b}\n", "i{b} %r"),
        ("zext i64", "  %r = zext i{b} %x to i64\n", "i64 %r"),
        ("sext i64", "  %r = sext i{b} %x to i64\n", "i64 %r"),
    ]
    if bits < 8:
        casts += [
            ("trunc i8", "  %c = trunc i64 %b to i8\n  %r = trunc i8 %c to i{b}\n", "i{b} %r"),
            ("sext i8", "  %r = sext i{b} %x to i8\n", "i8 %r"),
            ("zext i8", "  %r = zext i{b} %x to i8\n", "i8 %r"),
        ]
    elif bits < 32:
        casts += [
            ("trunc i32", "  %c = trunc i64 %b to i32\n  %r = trunc i32 %c to i{b}\n", "i{b} %r"),
            ("sext i32", "  %r = sext i{b} %x to i32\n", "i32 %r"),
        ]
    if bits > 2:
        casts += [
            ("trunc i2", "  %r = trunc i{b} %x to i2\n", "i2 %r"),
            ("sext to", "  %c = trunc i{b} %x to i2\n  %r = sext i2 %c to i{b}\n", "i{b} %r"),
            ("zext to", "  %c = trunc i{b} %x to i2\n  %r = zext i2 %c to i{b}\n", "i{b} %r"),
        ]
    for name, body, result in casts:
        yield name, _function(bits, body.format(b=bits), result.format(b=bits)), None
    # switch (cases given as negative and positive literals), phi and select
    body = (
        f"  %c = trunc i64 %b to i1\n"
        f"  switch i{bits} %x, label %d [\n"
        f"    i{bits} 0, label %l0\n"
        f"    i{bits} -1, label %l1\n"
        f"    i{bits} {sign}, label %l2\n"
        f"  ]\n"
        f"l0:\n  br label %j\nl1:\n  br label %j\nl2:\n  br label %j\nd:\n  br label %j\n"
        f"j:\n"
        f"  %p = phi i{bits} [ 1, %l0 ], [ -2, %l1 ], [ %y, %l2 ], [ -1, %d ]\n"
        f"  %r = select i1 %c, i{bits} %p, i{bits} -3\n"
    )
    for ext in ("sext", "zext"):
        yield f"switch/phi/select/{ext}", _function(bits, body, f"i{bits} %r", ext), None


def _s(v: int, bits: int) -> int:
    return v - (1 << bits) if v >> (bits - 1) & 1 else v


def _inputs(bits: int) -> list[tuple[int, int]]:
    if bits <= 5:
        values = list(range(1 << bits))
    else:
        rng = np.random.default_rng(bits)
        values = [0, 1, 2, (1 << bits) - 1, 1 << (bits - 1), (1 << (bits - 1)) - 1]
        values += [int(v) for v in rng.integers(0, 1 << min(bits, 62), 10)]
    # The bits above the narrow width must not matter.
    high = (0x5A5A << bits) & 0x7FFFFFFFFFFFFFFF
    return [(x | high, y) for x, y in itertools.product(values, values)]


_ENGINE: list = []  # one MCJIT engine for the session (engines torn down early can crash)


@pytest.fixture(scope="module")
def jit():
    llvm = pytest.importorskip("llvmlite.binding")
    if not _ENGINE:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_default_triple().create_target_machine()
        _ENGINE.extend([llvm.create_mcjit_compiler(llvm.parse_assembly(""), target), target])
    engine = _ENGINE[0]
    count = itertools.count()

    def compile_ir(ir: str):
        name = f"odd_width_{len(_ENGINE)}_{next(count)}"
        module = llvm.parse_assembly(ir.replace("@f(", f"@{name}("))
        module.verify()
        engine.add_module(module)
        engine.finalize_object()
        _ENGINE.append(module)
        f = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
        return f(engine.get_function_address(name))

    return compile_ir


@pytest.mark.parametrize("bits", [2, 3, 5, 7, 24, 63])
def test_widened_odd_integers_compute_the_same(jit, bits):
    # LLVM itself computes in i``bits``; the rewrite in the next legal width must agree
    # wherever the narrow program is defined.
    inputs = _inputs(bits)
    for name, ir, defined in _programs(bits):
        widened, count = widen_odd_integers(ir)
        assert count > 0 and f"i{bits} " not in widened, (name, widened)
        narrow, wide = jit(ir), jit(widened)
        for x, y in inputs:
            xs, ys = x & ((1 << bits) - 1), y & ((1 << bits) - 1)
            if defined is not None and not defined(xs, ys):
                continue
            assert wide(x, y) == narrow(x, y), (name, xs, ys, widened)


def test_widening_refuses_what_it_does_not_handle():
    for line in (
        "  %v = load i3, ptr %p, align 1",
        "  %v = call i3 @g(i3 %x)",
        "  %v = add <2 x i3> %x, %y",
    ):
        ir = f"define void @f() {{\n{line}\n  ret void\n}}\n"
        with pytest.raises(UnsupportedWidth):
            widen_odd_integers(ir)
    with pytest.raises(UnsupportedWidth):
        widen_odd_integers("define i3 @f() {\n  ret i3 0\n}\n")
    # Names, labels and strings that look like types are not types.
    text = '@i3 = global [3 x i8] c"i3 \\00"\ndefine void @f(i32 %i3) {\ni5:\n  ret void\n}\n'
    assert widen_odd_integers(text) == (text, 0)


SWITCH_MOD5 = np.array([11, 27, 5, 91, 40], np.int32)


@pytest.mark.parametrize("producer", ["clang", "translator"])
def test_switch_narrowed_to_i3_runs(producer):
    # clang-15 -O2 narrows switch (x % 5) to `switch i3`; llvm-spirv-15 failed with
    # "InvalidBitWidth: Invalid bit width in input: 3".
    if producer == "translator":
        _needs_translator()
    prog = build(_finding("translator_switch_i3.cl"), producer=producer)
    x = np.concatenate([np.arange(64), [2**32 - 1, 2**31, 2**31 - 1, 12345678]]).astype(np.uint32)
    out = np.zeros(x.size, np.int32)
    prog.kernel("k")(out, x, global_size=x.size)
    np.testing.assert_array_equal(out, SWITCH_MOD5[x % 5])


VECTOR_LANE_SWITCH = """
kernel void k(global const uchar4 *a, global const uchar4 *b, global const int16 *w,
              global int *out) {
    size_t i = get_global_id(0);
    uchar4 v = max(a[i], b[i]);
    int16 u = max(w[2 * i], w[2 * i + 1]);
    int r;
    switch (v.s2 & 3) { case 1: r = 5; break; case 2: r = 7; break; default: r = 9; }
    switch (u.s0 % 4) { case 2: case 3: r += 100; break; default: r += 300; }
    out[i] = r;
}
"""


@pytest.mark.parametrize("producer", ["clang", "translator"])
def test_switch_on_low_bits_of_a_vector_lane_runs(producer):
    # clang-15 -O2 reads `v.s2 & 3` as lane 10 of `bitcast <4 x i8> to <16 x i2>`; the
    # widener refused odd-width vectors and llvm-spirv-15 failed ("InvalidBitWidth: ... 2").
    # Found by the differential tester (seeds 5018, 5235, 5259).
    if producer == "translator":
        _needs_translator()
    prog = build(VECTOR_LANE_SWITCH, producer=producer)
    rng = np.random.default_rng(3)
    n = 256
    a = rng.integers(0, 256, (n, 4), dtype=np.uint8)
    b = rng.integers(0, 256, (n, 4), dtype=np.uint8)
    w = rng.integers(-(2**31), 2**31, (2 * n, 16), dtype=np.int64).astype(np.int32)
    out = np.zeros(n, np.int32)
    prog.kernel("k")(a, b, w, out, global_size=n)
    low = np.maximum(a, b)[:, 2] & 3
    expected = np.select([low == 1, low == 2], [5, 7], 9)
    u0 = np.maximum(w[0::2, 0], w[1::2, 0]).astype(np.int64)
    remainder = np.fmod(u0, 4)  # C's %: the sign of the dividend
    expected += np.where((remainder == 2) | (remainder == 3), 100, 300)
    np.testing.assert_array_equal(out, expected)


def test_odd_vector_casts_with_other_uses_are_left_alone():
    text = (
        "define void @f(<4 x i8> %x) {\n"
        "  %y = bitcast <4 x i8> %x to <16 x i2>\n"
        "  %z = extractelement <16 x i2> %y, i64 9\n"
        "  %w = shufflevector <16 x i2> %y, <16 x i2> %y, <2 x i32> <i32 0, i32 1>\n"
        "  ret void\n}\n"
    )
    assert split_odd_vector_casts(text) == (text, 0)
    only_extracts = text.replace(
        "  %w = shufflevector <16 x i2> %y, <16 x i2> %y, <2 x i32> <i32 0, i32 1>\n", ""
    )
    rewritten, count = split_odd_vector_casts(only_extracts)
    assert count == 1 and "<16 x i2>" not in rewritten
    # Lane 9 of the i2 view is bits 18..19: element 2 of the i8 vector, shifted right by 2.
    assert "extractelement <4 x i8> %x, i64 2" in rewritten and "lshr i8" in rewritten


LANE_OF_A_LOAD = """
#define PICK(e) switch (e) { case 1: r = 5; break; case 2: r = 7; break; case 3: r = 13; break; \\
                             default: r = 9; }
kernel void u8_s1(global int *out, global const uchar4 *in) {
    size_t g = get_global_id(0); uchar4 v = in[g]; int r; PICK(v.y & 3) out[g] = r;
}
kernel void u8_s3(global int *out, global const uchar4 *in) {
    size_t g = get_global_id(0); uchar4 v = in[g]; int r; PICK(v.w & 3) out[g] = r;
}
kernel void u16_s2(global int *out, global const ushort4 *in) {
    size_t g = get_global_id(0); ushort4 v = in[g]; int r; PICK(v.z % 4) out[g] = r;
}
kernel void u32_s3(global int *out, global const uint4 *in) {
    size_t g = get_global_id(0); uint4 v = in[g]; int r; PICK(v.w & 3) out[g] = r;
}
kernel void u8x8_s5(global int *out, global const uchar8 *in) {
    size_t g = get_global_id(0); uchar8 v = in[g]; int r; PICK(v.s5 & 3) out[g] = r;
}
kernel void nibble(global int *out, global const uchar4 *in) {
    size_t g = get_global_id(0); uchar4 v = in[g]; int r;
    switch (v.y & 15) { case 1: r = 4; break; case 7: r = 2; break; case 12: r = 9; break;
                        default: r = 6; }
    out[g] = r;
}
kernel void from_local(global int *out, global const uchar4 *in) {
    local uchar4 t[64];
    size_t g = get_global_id(0), l = get_local_id(0);
    t[l] = in[g];
    barrier(CLK_LOCAL_MEM_FENCE);
    uchar4 v = t[63 - l]; int r; PICK(v.y & 3) out[g] = r;
}
kernel void from_constant(global int *out, constant uchar4 *in) {
    size_t g = get_global_id(0); uchar4 v = in[g]; int r; PICK(v.y & 3) out[g] = r;
}
"""


def _pick(x: np.ndarray) -> np.ndarray:
    return np.select([x == 1, x == 2, x == 3], [5, 7, 13], 9)


@pytest.mark.parametrize("producer", ["clang", "translator"])
def test_switch_on_low_bits_of_a_loaded_vector_lane(producer):
    # clang-15 -O2 reads `v.y & 3` of a uchar4 loaded from memory as lane 4 of a load of
    # <16 x i2>; VectorCombine then made that `load i2` from getelementptr <16 x i2>, p, 0, 4,
    # which is 4 bytes on (one lane counted as one byte): llvm-spirv-15 failed with
    # InvalidBitWidth, and widening that load would have read the next element's .x.
    rng = np.random.default_rng(20261201)
    n = 128
    u8 = rng.integers(0, 256, (n, 4), dtype=np.uint8)
    u16 = rng.integers(0, 2**16, (n, 4), dtype=np.uint16)
    u32 = rng.integers(0, 2**32, (n, 4), dtype=np.uint32)
    u8x8 = rng.integers(0, 256, (n, 8), dtype=np.uint8)
    nibble = u8[:, 1] & 15
    cases = {
        "u8_s1": (u8, _pick(u8[:, 1] & 3)),
        "u8_s3": (u8, _pick(u8[:, 3] & 3)),
        "u16_s2": (u16, _pick(u16[:, 2] % 4)),
        "u32_s3": (u32, _pick(u32[:, 3] & 3)),
        "u8x8_s5": (u8x8, _pick(u8x8[:, 5] & 3)),
        "nibble": (u8, np.select([nibble == 1, nibble == 7, nibble == 12], [4, 2, 9], 6)),
        "from_local": (u8, _pick(u8.reshape(-1, 64, 4)[:, ::-1, 1].reshape(-1) & 3)),
        "from_constant": (u8, _pick(u8[:, 1] & 3)),
    }
    prog = build(LANE_OF_A_LOAD, producer=producer)
    for name, (data, expected) in cases.items():
        out = np.zeros(n, np.int32)
        prog.kernel(name)(out, data, global_size=n, local_size=64)
        np.testing.assert_array_equal(out, expected, err_msg=name)


def test_odd_vector_loads_with_other_uses_are_left_alone():
    def function(extra: str) -> str:
        return (
            "define void @f(<4 x i8> addrspace(1)* %p) {\n"
            "  %c = bitcast <4 x i8> addrspace(1)* %p to <16 x i2> addrspace(1)*\n"
            "  %v = load <16 x i2>, <16 x i2> addrspace(1)* %c, align 4, !tbaa !9\n"
            f"{extra}"
            "  %e = extractelement <16 x i2> %v, i64 4\n"
            "  ret void\n}\n"
        )

    stored = function("  store <16 x i2> %v, <16 x i2> addrspace(1)* %c, align 4\n")
    assert load_odd_vectors_whole(stored) == (stored, 0)
    rewritten, count = load_odd_vectors_whole(function(""))
    assert count == 1 and "x i2> addrspace" not in rewritten
    assert "load <4 x i8>, <4 x i8> addrspace(1)* %c, align 4, !tbaa !9" in rewritten
    # The same value name in two functions is two values: each function is its own.
    two = function("").replace("@f(", "@g(") + function("") + stored.replace("@f(", "@h(")
    rewritten, count = load_odd_vectors_whole(two)
    assert count == 2 and rewritten.count("store <16 x i2>") == 1
    split, extracts = split_odd_vector_casts(rewritten)
    assert extracts == 2 and split.count("extractelement <4 x i8>") == 2


# --- blocks out of dominance order --------------------------------------------------------------


def _raw_translator_spirv(source: str, monkeypatch) -> bytes:
    """What llvm-spirv-15 wrote, before the block-order repair."""
    with monkeypatch.context() as m:
        m.setattr(opencl, "fix_translator_spirv", lambda spirv: (spirv, 0))
        return opencl.opencl_to_spirv(source, list(FUZZ_OPTIONS), producer="translator")


def _run_fuzz_kernel(prog, kernel: str, local: int, outputs: int, groups: int = 4):
    rng = np.random.default_rng(20261201)
    words = rng.integers(0, 2**32, 256, dtype=np.uint64).astype(np.uint32)
    words[::7] &= 0xFF  # small values too: loop counts, divisors, switch selectors
    n = local * groups
    out = np.zeros(n * outputs, np.uint64)
    gat = np.zeros(groups * 16, np.uint32)
    prog.kernel(kernel)(out, words, gat, global_size=n, local_size=local)
    return out, gat


def test_blocks_out_of_dominance_order(monkeypatch):
    _needs_translator()
    source = _finding("translator_block_order.cl")
    raw = _raw_translator_spirv(source, monkeypatch)
    # From outside, such a module stays an error ...
    with pytest.raises(SpirvError, match="is used before its definition"):
        spirvjit.load_spirv(raw)
    # ... the translator producer's own output is repaired, and valid.
    fixed, reordered = fix_translator_spirv(raw)
    assert reordered >= 1
    spirvjit.load_spirv(fixed)
    assert fix_translator_spirv(fixed) == (fixed, 0)  # already in order: left alone
    if spirv_val_path():
        rc, diagnostics = spirv_val(raw)
        assert rc != 0 and "has not been defined" in diagnostics
        rc, diagnostics = spirv_val(fixed)
        assert rc == 0 or known_spirv_val_error(diagnostics, "translator"), diagnostics
    got = _run_fuzz_kernel(build(source, FUZZ_OPTIONS, "translator"), "k5", 8, 3)
    want = _run_fuzz_kernel(build(source, FUZZ_OPTIONS, "clang"), "k5", 8, 3)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


# --- convert_* decorations on ids never defined -------------------------------------------------


def test_forward_referenced_conversion_keeps_saturation(monkeypatch):
    # The conversion's decorations were left on an id nothing defines; the module was
    # rejected, and dropping them would have given unsaturated results (seen against PoCL).
    _needs_translator()
    source = _finding("translator_undefined_decoration.cl")
    got = _run_fuzz_kernel(build(source, FUZZ_OPTIONS, "translator"), "k7", 4, 2)
    want = _run_fuzz_kernel(build(source, FUZZ_OPTIONS, "clang"), "k7", 4, 2)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


LOOP_SAT = r"""
kernel void loop_sat(global int* out, global const float* f, int n) {
    int acc = 0;
    for (int i = 0; i < n; i++)  // the conversion feeds the loop's phi: a forward reference
        acc = convert_int_sat_rtz(f[i] + (float)(acc & 7));
    out[get_global_id(0)] = acc;
}
kernel void loop_sat_vec(global short4* out, global const float4* f, int n) {
    short4 acc = 0;
    for (int i = 0; i < n; i++)
        acc = convert_short4_sat_rte(f[i] + convert_float4(acc & (short4)3));
    out[get_global_id(0)] = acc;
}
"""


def _sat_rtz_int(values: np.ndarray) -> np.ndarray:
    v = np.nan_to_num(np.trunc(values.astype(np.float64)), nan=0.0)
    return np.clip(v, -(2**31), 2**31 - 1).astype(np.int32)


@pytest.mark.parametrize("producer", ["clang", "translator"])
def test_saturating_conversion_in_a_loop(producer):
    if producer == "translator":
        _needs_translator()
    prog = build(LOOP_SAT, producer=producer)
    f = np.array([3e9, -1.75, -3e9, 2.5, np.nan, 1.5e10, 6.9, -0.5], np.float32)
    for n in range(len(f) + 1):
        out = np.zeros(1, np.int32)
        prog.kernel("loop_sat")(out, f, np.int32(n), global_size=1)
        acc = np.int32(0)
        for i in range(n):
            acc = _sat_rtz_int(np.float32(f[i]) + np.float32(acc & 7))
        assert out[0] == acc, (n, out[0], acc)
    f4 = np.array(
        [[1e6, -1e6, 2.5, 3.5], [-2.5, np.nan, 40000.0, -40000.0], [0.5, 1.5, -0.5, 32766.5]],
        np.float32,
    )
    for n in range(len(f4) + 1):
        out4 = np.zeros((1, 4), np.int16)
        prog.kernel("loop_sat_vec")(out4, f4, np.int32(n), global_size=1)
        acc4 = np.zeros(4, np.int16)
        for i in range(n):
            v = f4[i] + (acc4 & 3).astype(np.float32)
            acc4 = np.clip(np.nan_to_num(np.rint(v), nan=0.0), -32768, 32767).astype(np.int16)
        np.testing.assert_array_equal(out4[0], acc4, err_msg=f"n={n}")


def test_conversion_copies_keep_numbering():
    text = (
        "  %5 = tail call spir_func signext i16 @_Z17convert_short_satf(float noundef %4) #3\n"
        "  %v = call spir_func <3 x i16> @_Z22convert_short3_sat_rtzDv3_f(<3 x float> %w)\n"
        "  %6 = call spir_func float @_Z5floorf(float %x)\n"
    )
    out, count = copy_conversion_results(text)
    assert count == 2
    assert out == (
        "  %sjc.5 = tail call spir_func signext i16 @_Z17convert_short_satf(float noundef %4) #3\n"
        "  %5 = select i1 true, i16 %sjc.5, i16 %sjc.5\n"
        "  %sjc.v = call spir_func <3 x i16> @_Z22convert_short3_sat_rtzDv3_f(<3 x float> %w)\n"
        "  %v = select <3 x i1> <i1 true, i1 true, i1 true>, <3 x i16> %sjc.v, <3 x i16> %sjc.v\n"
        "  %6 = call spir_func float @_Z5floorf(float %x)\n"
    )
