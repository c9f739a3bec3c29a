"""The OpenCL front end's LLVM IR step: freeze for llvm-spirv-15, clang-22's int→int
``convert_*`` (detection of a fixed back end, the definitions), kernel argument strings."""

from __future__ import annotations

import numpy as np
import pytest
from harness import assemble, build

import spirvjit
from spirvjit.frontend import convert_builtins, kernel_args, opencl
from spirvjit.spirv.reader import read_module
from spirvjit.toolchain import find_tool
from spirvjit.translate.arg_types import declared_args, read_declared_args

# clang-15 -O2 computes `x % n` from `x / n` and freezes x first (DivRemPairs); the
# translator producer failed with "Can't translate llvm instruction: freeze".
DIVREM = r"""
kernel void divrem(global int* q, global int* r, int n) {
    int i = get_global_id(0);
    q[i] = i / n;
    r[i] = i % n;
}
kernel void divrem4(global int4* q, global int4* r, int4 n) {
    size_t i = get_global_id(0);
    int4 x = q[i];
    q[i] = x / n;
    r[i] = x % n;
}
kernel void divrem_ulong(global ulong* q, ulong n) {
    size_t i = get_global_id(0);
    ulong x = q[i];
    q[i] = (x / n) * 3 + (x % n);
}
"""


def test_division_with_remainder(producer):
    prog = build(DIVREM, producer=producer)
    q, r = np.zeros(37, np.int32), np.zeros(37, np.int32)
    prog.kernel("divrem")(q, r, np.int32(5), global_size=(37,))
    i = np.arange(37)
    np.testing.assert_array_equal(q, i // 5)
    np.testing.assert_array_equal(r, i % 5)

    x = np.arange(-32, 32, dtype=np.int32).reshape(16, 4)
    n = np.array([3, -7, 11, 2], np.int32)
    q4, r4 = x.copy(), np.zeros_like(x)
    prog.kernel("divrem4")(q4, r4, n, global_size=(16,))
    np.testing.assert_array_equal(q4, np.trunc(x / n).astype(np.int32))  # C truncates
    np.testing.assert_array_equal(r4, x - np.trunc(x / n).astype(np.int32) * n)

    u = np.array([0, 1, 2**64 - 1, 2**63, 12345678901234567], np.uint64)
    expected = (u // np.uint64(97)) * np.uint64(3) + u % np.uint64(97)
    prog.kernel("divrem_ulong")(u, np.uint64(97), global_size=(5,))
    np.testing.assert_array_equal(u, expected)


def test_remove_freeze_keeps_numbering_and_metadata():
    text = (
        "  %6 = freeze i32 %5\n"
        "  %7 = freeze <4 x i32> %6, !dbg !12\n"
        "  %p.fr = freeze ptr addrspace(1) %p\n"
        "  %8 = add i32 %6, 1 ; freeze in a comment stays\n"
    )
    assert opencl.remove_freeze(text) == (
        "  %6 = select i1 true, i32 %5, i32 %5\n"
        "  %7 = select <4 x i1> <i1 true, i1 true, i1 true, i1 true>, <4 x i32> %6, <4 x i32> %6,"
        " !dbg !12\n"
        "  %p.fr = select i1 true, ptr addrspace(1) %p, ptr addrspace(1) %p\n"
        "  %8 = add i32 %6, 1 ; freeze in a comment stays\n"
    )


def test_backend_options_keep_only_code_generation_flags():
    assert opencl._backend_options(["-DN=4", "-I", "inc", "-cl-fast-relaxed-math"]) == ["-O2"]
    assert opencl._backend_options(["-O0", "-mllvm", "-x=1", "-O3"]) == ["-O3", "-mllvm", "-x=1"]


# --- clang-22's int→int convert_* --------------------------------------------------------------


@pytest.mark.parametrize(
    ("symbol", "expected"),
    [
        ("_Z11convert_intc", (1, 8, True, 32, True, False)),
        ("_Z12convert_uinth", (1, 8, False, 32, False, False)),
        ("_Z17convert_short_satc", (1, 8, True, 16, True, True)),
        ("_Z23convert_uchar16_sat_rtzDv16_l", (16, 64, True, 8, False, True)),
        ("_Z16convert_long_rtnm", (1, 64, False, 64, True, False)),
        ("_Z13convert_char3Dv3_j", (3, 32, False, 8, True, False)),
    ],
)
def test_parse_int_conversion(symbol, expected):
    c = convert_builtins.parse_int_conversion(symbol)
    assert c is not None
    assert (c.lanes, c.src_bits, c.src_signed, c.dst_bits, c.dst_signed, c.saturate) == expected


@pytest.mark.parametrize(
    "symbol",
    [
        "_Z11convert_intf",  # float source: the back end gets those right
        "_Z13convert_floati",  # float destination
        "_Z12convert_int2Dv4_c",  # lanes disagree
        "_Z13get_global_idj",
        "_Z11convert_inti_extra",
    ],
)
def test_parse_int_conversion_rejects_others(symbol):
    assert convert_builtins.parse_int_conversion(symbol) is None


def test_define_int_conversions_replaces_only_matching_declarations():
    text = (
        "declare spir_func i32 @_Z11convert_intc(i8 noundef signext) local_unnamed_addr #2\n"
        "declare spir_func <2 x i32> @_Z20convert_int2_sat_rtnDv2_f(<2 x float> noundef) #2\n"
        "declare spir_func signext i16 @_Z17convert_short_satc(i16 noundef) #2\n"
    )
    out, count = convert_builtins.define_int_conversions(text)
    assert count == 1
    assert "define internal spir_func i32 @_Z11convert_intc(i8 %x)" in out
    assert "sext i8 %x to i32" in out
    # float source and a parameter type that contradicts the name stay declarations
    assert text.splitlines()[1] in out and text.splitlines()[2] in out


def test_installed_clang22_is_detected_as_buggy():
    clang = find_tool("clang")
    if clang is None:
        pytest.skip("clang-22 not installed")
    import subprocess

    version = subprocess.run([clang, "--version"], capture_output=True, text=True).stdout
    if " 22." not in version.splitlines()[0]:
        pytest.skip(f"not clang 22: {version.splitlines()[0]}")
    assert not convert_builtins.backend_converts_correctly(clang, opencl.run_compiler)


_TYPES = {"char": "%u8", "uchar": "%u8", "short": "%u16", "ushort": "%u16"}
_TYPES |= {"int": "%u32", "uint": "%u32", "char2": "%v2u8", "int2": "%v2u32"}


def _probe_module(opcode_for, decorate=True) -> bytes:
    """The probe's module as a back end writing ``opcode_for(probe)`` would emit it."""
    probes = convert_builtins._PROBES
    head = ["OpCapability Addresses", "OpCapability Kernel", "OpCapability Int8"]
    head += ["OpCapability Int16", "OpMemoryModel Physical64 OpenCL"]
    head += [f'OpEntryPoint Kernel %k{i} "p{i}"' for i in range(len(probes))]
    if decorate:
        head += [f"OpDecorate %r{i} SaturatedConversion" for i, p in enumerate(probes) if p[4]]
    head += ["%void = OpTypeVoid", "%u8 = OpTypeInt 8 0", "%u16 = OpTypeInt 16 0"]
    head += ["%u32 = OpTypeInt 32 0", "%v2u8 = OpTypeVector %u8 2", "%v2u32 = OpTypeVector %u32 2"]
    sources = sorted({p[0] for p in probes})
    head += [f"%fn_{src} = OpTypeFunction %void {_TYPES[src]}" for src in sources]
    body = []
    for i, probe in enumerate(probes):
        src, dst = probe[0], probe[1]
        body += [
            f"%k{i} = OpFunction %void None %fn_{src}",
            f"%a{i} = OpFunctionParameter {_TYPES[src]}",
            f"%l{i} = OpLabel",
            f"%r{i} = {opcode_for(probe)} {_TYPES[dst]} %a{i}",
            "OpReturn",
            "OpFunctionEnd",
        ]
    return assemble("\n".join(head + body) + "\n", "spv1.4")


def _clang22(probe) -> str:
    """clang 22.1's choice: the destination's signedness picks the opcode."""
    _, dst, sat, _, _ = probe
    signed = not dst.startswith("u")
    if sat:
        return "OpSatConvertUToS" if signed else "OpSatConvertSToU"
    return "OpUConvert" if signed else "OpSConvert"


def test_probe_accepts_a_fixed_back_end_only():
    assert convert_builtins.converts_correctly(_probe_module(lambda p: p[3]))
    assert not convert_builtins.converts_correctly(_probe_module(_clang22))
    # Right opcodes but clamping narrowings without SaturatedConversion: still wrong.
    assert not convert_builtins.converts_correctly(_probe_module(lambda p: p[3], False))
    # One wrong probe is enough.
    first_sat = next(p for p in convert_builtins._PROBES if p[2])
    assert not convert_builtins.converts_correctly(
        _probe_module(lambda p: _clang22(p) if p is first_sat else p[3])
    )


def test_fixed_clang_is_used_as_is(monkeypatch):
    """With a back end that converts correctly, the IR goes to it unchanged."""
    monkeypatch.setattr(opencl, "backend_converts_correctly", lambda clang, run: True)
    calls = []
    monkeypatch.setattr(
        opencl, "define_int_conversions", lambda text: calls.append(text) or (text, 0)
    )
    spirv = opencl.opencl_to_spirv(
        "kernel void k(global const char* a, global int* o) { *o = convert_int(*a); }"
    )
    assert not calls
    module = read_module(spirv)
    ops = [i.opname for fn in module.functions for b in fn.blocks for i in b.instructions]
    # clang 22 as it is: the wrong extension is what the installed back end writes.
    assert "OpUConvert" in ops or "OpSConvert" in ops


# --- kernel argument strings -------------------------------------------------------------------

ARG_SRC = r"""
typedef float4 vec;
kernel void k(global const vec* restrict a, global float* b, local int* c, uint n) {
    b[get_global_id(0)] = a[n].x + c[0];
}
"""


def test_kernel_arg_strings_and_names_in_clang_module():
    spirv = opencl.opencl_to_spirv(ARG_SRC)
    module = read_module(spirv)
    strings = {i.operands[0] for i in module.instructions if i.opname == "OpString"}
    assert "kernel_arg_type.k.vec*,float*,int*,uint," in strings
    assert "kernel_arg_base_type.k.float4*,float*,int*,uint," in strings
    assert "kernel_arg_type_qual.k.restrict const,,,," in strings
    declared = declared_args(read_declared_args(module), "k", 4)
    assert [d.pointee() for d in declared] == [
        ("float", 32, 4),
        ("float", 32, 1),
        ("int", 32, 1),
        None,
    ]
    assert [d.const for d in declared] == [True, False, False, False]
    entry = module.entry_points[0]
    params = module.function(entry.function_id).parameters
    assert [module.names.get(p.result_id) for p in params] == ["a", "b", "c", "n"]
    sig = spirvjit.load_spirv(spirv).kernel("k").signature
    assert [a.name for a in sig.args] == ["a", "b", "c", "n"]
    assert sig.args[0].lanes == 4 and sig.args[0].read_only and not sig.args[1].read_only


def test_read_kernel_arg_info_unescapes_and_skips_functions():
    ir = (
        "define spir_kernel void @k(ptr addrspace(1) %0) #0 !kernel_arg_name !4 "
        "!kernel_arg_type !5 !kernel_arg_base_type !6 !kernel_arg_type_qual !7 {\n"
        "define spir_func void @__clang_ocl_kern_imp_k(ptr addrspace(1) %0) !kernel_arg_type !5 {\n"
        '!4 = !{!"x\\22y"}\n!5 = !{!"real*"}\n'
        '!6 = !{!"float __attribute__((ext_vector_type(3)))*"}\n!7 = !{!"const"}\n'
    )
    infos = kernel_args.read_kernel_arg_info(ir)
    assert list(infos) == ["k"]
    info = infos["k"]
    assert (info.names, info.types, info.base_types, info.quals) == (
        ('x"y',),
        ("real*",),
        ("float3*",),
        ("const",),
    )


@pytest.mark.parametrize(
    ("declared", "pointee"),
    [
        ("float*", ("float", 32, 1)),
        ("const double *", ("float", 64, 1)),
        ("half*", ("float", 16, 1)),
        ("uint16*", ("int", 32, 16)),
        ("unsigned int*", ("int", 32, 1)),
        ("size_t*", ("int", 64, 1)),
        ("atomic_int*", ("int", 32, 1)),
        ("char4*", ("int", 8, 4)),
        ("uchar*", (None, 8, 1)),
        ("void*", (None, 8, 1)),
        ("struct S*", None),
        ("Pair*", None),
        ("image2d_t", None),
        ("float", None),
        ("", None),
    ],
)
def test_declared_pointee(declared, pointee):
    from spirvjit.translate.arg_types import DeclaredArg

    assert DeclaredArg(declared, frozenset()).pointee() == pointee


def test_annotate_spirv_is_idempotent_and_skips_mismatches():
    spirv = opencl.opencl_to_spirv(ARG_SRC)
    info = kernel_args.read_kernel_arg_info(
        "define spir_kernel void @k(i32 %0) !kernel_arg_type !1 !kernel_arg_name !2 {\n"
        '!1 = !{!"int"}\n!2 = !{!"x"}\n'
    )
    # Already annotated: nothing added. One parameter for a four-parameter kernel: skipped.
    assert kernel_args.annotate_spirv(spirv, kernel_args.read_kernel_arg_info("")) == spirv
    assert kernel_args.annotate_spirv(spirv, info) == spirv
    assert kernel_args.annotate_spirv(b"not spirv", info) == b"not spirv"
    same = kernel_args.KernelArgInfo(
        "k",
        ("a", "b", "c", "n"),
        ("vec*", "float*", "int*", "uint"),
        ("float4*", "float*", "int*", "uint"),
        ("restrict const", "", "", ""),
    )
    assert kernel_args.annotate_spirv(spirv, {"k": same}) == spirv
