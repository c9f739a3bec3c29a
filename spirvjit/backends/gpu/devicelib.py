"""Device math libraries for GPU targets, bound to the C math calls the translator emits.

The translator lowers OpenCL.std transcendental functions to C library calls
(``sinf``, ``pow``, ``remquof``; see ``translate/mathlib.py``). On a GPU there is no
C library, so each declared call gets a small always-inlined definition that calls
the GPU's math library:

* AMD: libclc, LLVM's OpenCL library, built for ``amdgcn-amd-amdhsa`` (Debian's
  libclc-22, from the same LLVM as llvmlite). Its functions are OpenCL-mangled
  (``_Z3sinf``).
* NVIDIA: libdevice from the CUDA toolkit (``__nv_sinf``); NVVMReflect, which the
  NVPTX back end runs, resolves its ``__nvvm_reflect`` queries for the target.

A library is bitcode of thousands of functions; linking all of it costs seconds per
kernel. It is parsed once per process and cut down to the functions this module can
bind (internalize the rest, drop what is dead); each kernel then links that small
library only if it calls math at all, and O3 keeps what the kernel reaches.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path

import llvmlite.binding as llvm
from llvmlite import ir

from ...errors import CompileError
from ...translate.mathlib import LIBMVEC
from ...translate.module import declare

# The C math functions the translator calls, with their arity; "lgamma_r" and "remquo"
# also take an int pointer for a second result, "ilogb" returns an int.
MATH_FUNCTIONS: dict[str, int] = {
    **LIBMVEC,
    "lgamma": 1,
    "tgamma": 1,
    "logb": 1,
    "remainder": 2,
    "ilogb": 1,
}
WITH_INT_OUT: dict[str, int] = {"lgamma_r": 1, "remquo": 2}


@dataclass(frozen=True)
class DeviceLibrary:
    """A math library in bitcode: where it is and how it names a C math function."""

    kind: str  # "libclc" or "libdevice"
    path: Path
    fingerprint: str  # goes into cache keys: another library compiles differently

    def symbol(self, base: str, lane: ir.Type, out_space: int | None = None) -> str | None:
        """The library's name for C function ``base`` on ``lane`` (float or double), or
        None where it has none. ``out_space``: address space of the int out-pointer."""
        is_float = isinstance(lane, ir.FloatType)
        if self.kind == "libdevice":
            if base == "lgamma_r":
                return None
            return f"__nv_{base}{'f' if is_float else ''}"
        arity = MATH_FUNCTIONS.get(base) or WITH_INT_OUT[base]
        mangled = f"_Z{len(base)}{base}" + ("f" if is_float else "d") * arity
        if out_space is not None:
            mangled += f"PU3AS{out_space}i" if out_space else "Pi"
        return mangled

    def all_symbols(self, out_spaces: tuple[int, ...]) -> set[str]:
        names = set()
        for lane in (ir.FloatType(), ir.DoubleType()):
            names |= {self.symbol(base, lane) for base in MATH_FUNCTIONS}
            names |= {self.symbol(b, lane, s) for b in WITH_INT_OUT for s in out_spaces}
        names.discard(None)
        return names


def _fingerprint(path: Path) -> str:
    st = path.stat()
    return hashlib.sha256(f"{path}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:16]


@functools.cache
def first_library(kind: str, candidates: tuple[Path, ...]) -> DeviceLibrary | None:
    """The first of ``candidates`` that exists, as library ``kind`` ("libclc" or
    "libdevice"); None if none does. The vendor backends list where to look."""
    for path in candidates:
        if path.is_file():
            return DeviceLibrary(kind, path, _fingerprint(path))
    return None


_trim_lock = threading.Lock()


@functools.cache
def _trimmed_bitcode(library: DeviceLibrary, triple: str, data_layout: str) -> bytes:
    """The library cut down to the functions :class:`DeviceLibrary` can name."""
    with _trim_lock:
        try:
            module = llvm.parse_bitcode(library.path.read_bytes())
        except (OSError, RuntimeError) as exc:
            raise CompileError(f"cannot read the device library {library.path}: {exc}") from None
        module.triple = triple
        module.data_layout = data_layout
        keep = library.all_symbols((0, 5))
        for fn in module.functions:
            if not fn.is_declaration and fn.name not in keep:
                fn.linkage = "internal"
        for gv in module.global_variables:
            if not gv.is_declaration:
                gv.linkage = "internal"
        pm = llvm.create_new_module_pass_manager()
        pm.add_global_dead_code_eliminate_pass()
        pm.add_strip_dead_prototype_pass()
        pb = llvm.create_pass_builder(
            llvm.Target.from_triple(triple).create_target_machine(),
            llvm.create_pipeline_tuning_options(),
        )
        pm.run(module, pb)
        return module.as_bitcode()


def library_module(
    library: DeviceLibrary, triple: str, data_layout: str, context=None
) -> llvm.ModuleRef:
    """A fresh copy of the trimmed library, to link into one kernel's module: parsed in
    that module's LLVM ``context`` (kernels are parsed into contexts of their own, and
    linking across contexts breaks LLVM's type uniquing)."""
    bitcode = _trimmed_bitcode(library, triple, data_layout)
    return llvm.parse_bitcode(bitcode, context=context) if context else llvm.parse_bitcode(bitcode)


def math_calls(module: ir.Module) -> list[ir.Function]:
    """The C math functions ``module`` declares (calls without a definition)."""
    found = []
    for fn in module.functions:
        # spirvjit.unsupported.*: AMD built-ins a kernel may not reach (translate/amdgcn.py);
        # spirvjit.launch.*: launch facts, defined per variant (abi.LAUNCH_FACTS).
        if fn.blocks or fn.name.startswith(("llvm.", "spirvjit.unsupported.", "spirvjit.launch.")):
            continue
        found.append(fn)
    return found


def bind(module: ir.Module, library: DeviceLibrary | None, target_name: str) -> None:
    """Defines every C math function ``module`` declares through ``library``.

    Raises CompileError naming a call no GPU library provides. Without a library the
    declarations stay; a kernel that reaches one fails to compile (:func:`missing_library`).
    """
    for fn in math_calls(module):
        base, lane = _c_function(fn)
        if base is None:
            raise CompileError(
                f"{fn.name} is called but has no implementation on {target_name}; "
                "spirvjit's GPU targets have no C library"
            )
        if library is not None:
            _define(module, fn, base, lane, library)


def missing_library(function: str, target_name: str, how: str) -> CompileError:
    """The error of a kernel that needs math where no library is installed; ``how``
    says how to install it."""
    return CompileError(
        f"{function} needs a device math library for {target_name} and none is installed: {how}"
    )


def _c_function(fn: ir.Function) -> tuple[str | None, ir.Type]:
    args = fn.function_type.args
    lane = args[0] if args else fn.function_type.return_type
    base = fn.name
    if isinstance(lane, ir.FloatType):  # sinf, remquof; but lgammaf_r (glibc's spelling)
        base = base[:-3] + "_r" if base.endswith("f_r") else base[:-1]
    if base in MATH_FUNCTIONS or base in WITH_INT_OUT:
        return base, lane
    return None, lane


def _define(
    module: ir.Module, fn: ir.Function, base: str, lane: ir.Type, library: DeviceLibrary
) -> None:
    fn.attributes = ir.FunctionAttributes()
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    args = list(fn.args)
    out_space = args[-1].type.addrspace if base in WITH_INT_OUT else None
    symbol = library.symbol(base, lane, out_space)
    if symbol is None:  # lgamma_r where the library has only lgamma
        b.ret(_lgamma_r(b, module, library, lane, args[0], args[1]))
        return
    callee = declare(module, symbol, fn.function_type)
    b.ret(b.call(callee, args))


def _lgamma_r(b, module, library, lane, x, sign_out) -> ir.Value:
    """lgamma_r from lgamma: Γ(x) < 0 exactly for x in (-2k-1, -2k), k ≥ 0, where
    floor(x) is odd; the sign is +1 everywhere else (poles and NaN included)."""
    symbol = library.symbol("lgamma", lane)
    unary = ir.FunctionType(lane, [lane])
    result = b.call(declare(module, symbol, unary), [x])
    suffix = "f32" if isinstance(lane, ir.FloatType) else "f64"
    floor = b.call(declare(module, f"llvm.floor.{suffix}", unary), [x])
    i64 = ir.IntType(64)
    odd = b.trunc(b.fptosi(floor, i64), ir.IntType(1))
    negative = b.fcmp_ordered("<", x, ir.Constant(lane, 0.0))
    not_pole = b.fcmp_ordered("!=", x, floor)
    # select, not and: fptosi of a huge x is poison, and only its unselected arm may be
    minus = b.select(b.and_(negative, not_pole), odd, ir.Constant(ir.IntType(1), 0))
    i32 = ir.IntType(32)
    b.store(b.select(minus, ir.Constant(i32, -1), ir.Constant(i32, 1)), sign_out)
    return result
