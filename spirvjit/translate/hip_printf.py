"""HIP's device printf, as clang lowers it for AMD targets: the hostcall protocol.

``printf("x=%d %s\\n", x, name)`` becomes a chain of calls to ROCm device-library
functions that fill a buffer the ROCm runtime prints:

    d0 = __ockl_printf_begin(0)
    d1 = __ockl_printf_append_string_n(d0, format, strlen(format) + 1, 0)
    d2 = __ockl_printf_append_string_n(d1, name, strlen(name) + 1, 0)     (each %s)
    d3 = __ockl_printf_append_args(d2, n, a0, ..., a6, is_last)          (up to 7 u64)

Arguments travel as 64-bit words: integers widened, floating point as double bits.
On the host CPU the chain is followed while translating (each call's descriptor is the
previous call's result): the format must be a constant string, which says how to read
each word back, and the last call becomes one C ``printf`` with those arguments. GPU
targets have no printf yet: a kernel that reaches one fails to compile, saying so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from llvmlite import ir

from ..spirv.module import Instruction
from .function import FunctionTranslator
from .printf import constant_string

PREFIX = "__ockl_printf_"
I32, I64, DOUBLE = ir.IntType(32), ir.IntType(64), ir.DoubleType()
UNSUPPORTED = "spirvjit.unsupported.amdgcn.printf"
_SPEC = re.compile(
    r"%%|%[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(hh|h|ll|l|j|z|t|L)?([diouxXfFeEgGaAcsp])"
)


@dataclass
class _Call:
    format: bytes | None = None
    words: list[tuple[str, ir.Value]] = field(default_factory=list)  # ("word"|"string", v)


# Kept on each function's translator: descriptor result id -> the printf it belongs to.
_CHAINS = "_hip_printf_chains"


def is_hip_printf(name: str) -> bool:
    return name.startswith(PREFIX)


def call_hip_printf(
    t: FunctionTranslator, inst: Instruction, name: str, args: list[int]
) -> ir.Value:
    ty = t.llvm_type(inst.result_type)
    if not t.mt.abi.host_libc:
        stub = t.mt.declare(UNSUPPORTED, ir.FunctionType(ty, []))
        return t.b.call(stub, [])
    chains: dict[int, _Call] = t.__dict__.setdefault(_CHAINS, {})
    step = name[len(PREFIX) :]
    if step == "begin":
        chains[inst.result_id] = _Call()
        return ir.Constant(ty, 0)
    call = chains.get(args[0])
    if call is None:
        raise t.error(f"'{name}' continues a printf whose start spirvjit did not see")
    chains[inst.result_id] = call
    if step == "append_string_n":
        if call.format is None:
            call.format = constant_string(t, args[1])
            if call.format is None:
                raise t.error("printf's format must be a constant string")
        else:
            call.words.append(("string", t.value(args[1])))
        last = args[3]
    elif step == "append_args":
        count = t.mt.constants.int_value(args[1])
        call.words += [("word", t.value(a)) for a in args[2 : 2 + count]]
        last = args[-1]
    else:
        raise t.error(f"calls '{name}', a ROCm printf function spirvjit does not know")
    if t.mt.constants.int_value(last):
        _emit(t, call)
    return ir.Constant(ty, 0)


def _emit(t: FunctionTranslator, call: _Call) -> None:
    """One C printf for the whole chain, each word converted as its conversion says."""
    b = t.b
    text = call.format.decode("latin-1")
    words = iter(call.words)
    values: list[ir.Value] = []
    for match in _SPEC.finditer(text):
        if match.group(0) == "%%":
            continue
        length, conversion = match.groups()
        stars = match.group(0).count("*")  # field width / precision arguments: ints
        for _ in range(stars):
            values.append(b.trunc(_word(t, next(words, None)), I32))
        kind, value = next(words, (None, None))
        if value is None:
            break  # fewer arguments than conversions: C's printf reads garbage; stop
        if conversion == "s":
            values.append(value if kind == "string" else b.inttoptr(value, ir.PointerType()))
        elif conversion in "fFeEgGaA":
            values.append(b.bitcast(value, DOUBLE))
        elif conversion == "p":
            values.append(b.inttoptr(value, ir.PointerType()))
        elif length in ("l", "ll", "j", "z", "t"):
            values.append(value)
        else:
            values.append(b.trunc(value, I32))
    fmt = _string(t, call.format + b"\0")
    printf_fn = t.mt.declare("printf", ir.FunctionType(I32, [ir.PointerType()], var_arg=True))
    b.call(printf_fn, [fmt, *values])
    fflush = t.mt.declare("fflush", ir.FunctionType(I32, [ir.PointerType()]))
    b.call(fflush, [ir.Constant(ir.PointerType(), None)])


def _word(t: FunctionTranslator, entry) -> ir.Value:
    if entry is None or entry[0] != "word":
        return ir.Constant(I64, 0)
    return entry[1]


def _string(t: FunctionTranslator, data: bytes) -> ir.Value:
    ty = ir.ArrayType(ir.IntType(8), len(data))
    gv = ir.GlobalVariable(t.mt.llmodule, ty, f"hip.printf.fmt.{len(t.mt.llmodule.globals)}")
    gv.type = ir.PointerType()  # opaque pointers, as everywhere
    gv.global_constant = True
    gv.linkage = "internal"
    gv.initializer = ir.Constant(ty, bytearray(data))
    return gv
