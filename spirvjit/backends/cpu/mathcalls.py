"""One implementation per libm function and target: every call of a libm function that
has a libmvec variant goes through one variant, the target's widest.

Without this a work-item's result depended on where it was computed. The translator
calls the C library (``logf``, ``pow``, ...) and names libmvec's variants in the
declarations (translate/mathlib.py); whole-function vectorization calls the W-lane
variant (``_ZGVdN8v_logf`` on AVX2) and LLVM's loop and SLP vectorizers pick any
declared width (``_ZGVbN4v_logf`` or ``_ZGVdN8v_logf``), while the scalar remainder of a
work-group whose size is no multiple of the vector width, a group too small for the
vectorized loop, a kernel no vectorizer takes and the quick tier (tiered.py) call libm's
scalar function. The three round differently (measured on glibc 2.39, AVX2, over 2^20
random float bit patterns: ``logf`` and ``_ZGVdN8v_logf`` differ in 2% of them, the SSE
and AVX2 variants of ``logf`` in 11%; ``erff`` scalar and AVX2 in 31%), so an element's
bits depended on the work-group size, its place in the group and the tier.

:func:`one_variant` makes every such call compute through the target's widest variant
``V`` (AVX-512 ``e``, AVX2 ``d``, else SSE ``b``; the lanes of libmvec's variants are
independent of each other, tested in tests/kernels/test_mathcalls.py):

- a scalar call calls ``spirvjit.libm.<name>``: the argument in every lane of ``V``,
  lane 0 of the result. ``noinline``, so that LLVM's vectorizers still see a scalar call,
  whose one declared variant (``vector-function-abi-variant``) is ``V`` itself: a
  vectorized loop calls ``V``, its remainder the wrapper, with the same bits;
- a call of another variant (other ISA or lane count) calls ``V`` on its lanes in
  chunks (none is made today: the vectorizer's W is ``V``'s lane count).

A renamed call is also no longer a library function LLVM knows: O3 no longer folds one
with constant arguments with the compiler's own math, nor rewrites ``pow(x, 2)`` or
``sin(-x)``, which the quick tier's few passes never did. Cost: a scalar call is
about one vector call (the remainder of a work-group; measured in docs/design.md).
"""

from __future__ import annotations

import re

from llvmlite import ir

from ...translate.mathlib import _ISAS, LIBMVEC, StringAttributes

I32 = ir.IntType(32)
_LANES = {"f": ir.FloatType(), "": ir.DoubleType()}
# The C names of the functions with libmvec variants: name -> (arity, lane type).
_SCALAR = {
    stem + suffix: (arity, lane)
    for stem, arity in LIBMVEC.items()
    for suffix, lane in _LANES.items()
}
# x86-64 vector function ABI names: ISA letter, lane count, one "v" per argument, C name.
_VARIANT = re.compile(r"_ZGV([bcde])N(\d+)(v+)_(\w+)$")
WRAPPER_PREFIX = "spirvjit.libm."


def widest_isa(features: str) -> tuple[str, int] | None:
    """The ISA letter and register bits of the widest libmvec flavour ``features`` has."""
    flags = set(features.split(","))
    usable = [(letter, bits) for letter, feature, bits in _ISAS if feature in flags]
    return usable[-1] if usable else None


def one_variant(module: ir.Module, features: str) -> int:
    """Points every call in ``module`` of a libm function with a libmvec variant, scalar or
    vector, at code that computes each lane with the widest variant ``features`` has;
    returns how many calls changed. Nothing changes on a target without libmvec."""
    isa = widest_isa(features)
    if isa is None:
        return 0
    targets: dict[ir.Function, ir.Function] = {}
    for fn in list(module.functions):
        if fn.blocks:
            continue
        name = fn.name
        if name in _SCALAR:
            arity, lane = _SCALAR[name]
            if fn.function_type == ir.FunctionType(lane, [lane] * arity):
                targets[fn] = _wrapper(module, name, isa)
        elif (found := _VARIANT.match(name)) and found.group(4) in _SCALAR:
            arity, lane = _SCALAR[found.group(4)]
            lanes = int(found.group(2))
            vector = ir.VectorType(lane, lanes)
            wanted = ir.FunctionType(vector, [vector] * arity)
            canonical = _canonical(found.group(4), isa)
            if len(found.group(3)) == arity and fn.function_type == wanted and name != canonical:
                targets[fn] = _chunked(module, found.group(4), lanes, isa)
    if not targets:
        return 0
    changed, used = 0, set()
    for fn in list(module.functions):
        for block in fn.blocks:
            for inst in block.instructions:
                if isinstance(inst, ir.CallInstr) and inst.callee in targets:
                    inst.replace_callee(targets[inst.callee])
                    changed += 1
                    continue
                used.update(op for op in inst.operands if isinstance(op, ir.Function))
    # Declarations nothing uses any more go: the back end would otherwise declare their
    # other variants for LLVM's vectorizers (codegen.optimize_here).
    for fn in targets:
        if fn not in used:
            module.globals.pop(fn.name, None)
    return changed


def _canonical(c_name: str, isa: tuple[str, int]) -> str:
    arity, lane = _SCALAR[c_name]
    return f"_ZGV{isa[0]}N{_count(lane, isa)}{'v' * arity}_{c_name}"


def _count(lane: ir.Type, isa: tuple[str, int]) -> int:
    return isa[1] // (64 if isinstance(lane, ir.DoubleType) else 32)


def _variant(module: ir.Module, c_name: str, isa: tuple[str, int]) -> ir.Function:
    """The declaration of ``c_name``'s widest variant (pure, as the scalar function)."""
    symbol = _canonical(c_name, isa)
    arity, lane = _SCALAR[c_name]
    vector = ir.VectorType(lane, _count(lane, isa))
    fn = module.globals.get(symbol)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(vector, [vector] * arity), symbol)
    fn.attributes.add("nounwind")
    fn.attributes.add("readnone")
    return fn


def _wrapper(module: ir.Module, c_name: str, isa: tuple[str, int]) -> ir.Function:
    """``spirvjit.libm.<c_name>``: the scalar function, as lane 0 of the widest variant."""
    name = WRAPPER_PREFIX + c_name
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    arity, lane = _SCALAR[c_name]
    variant = _variant(module, c_name, isa)
    fn = ir.Function(module, ir.FunctionType(lane, [lane] * arity), name)
    fn.linkage = "internal"
    fn.attributes = StringAttributes(["noinline", "nounwind", "readnone"])
    count = variant.function_type.return_type.count
    fn.attributes.add(
        f'"vector-function-abi-variant"="_ZGV_LLVM_N{count}{"v" * arity}_{name}({variant.name})"'
    )
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    vector = variant.function_type.return_type
    zeros = ir.Constant(ir.VectorType(I32, count), [0] * count)
    splats = [
        b.shuffle_vector(
            b.insert_element(ir.Constant(vector, ir.Undefined), arg, ir.Constant(I32, 0)),
            ir.Constant(vector, ir.Undefined),
            zeros,
        )
        for arg in fn.args
    ]
    b.ret(b.extract_element(b.call(variant, splats), ir.Constant(I32, 0)))
    return fn


def _chunked(module: ir.Module, c_name: str, lanes: int, isa: tuple[str, int]) -> ir.Function:
    """``lanes`` lanes of ``c_name`` computed by the widest variant, a chunk of its lane
    count at a time (the last one padded with zeros)."""
    name = f"{WRAPPER_PREFIX}N{lanes}.{c_name}"
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    arity, lane = _SCALAR[c_name]
    variant = _variant(module, c_name, isa)
    count = variant.function_type.return_type.count
    vector = ir.VectorType(lane, lanes)
    fn = ir.Function(module, ir.FunctionType(vector, [vector] * arity), name)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
    fn.attributes.add("readnone")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    zero = ir.Constant(lane, 0.0)
    result = ir.Constant(vector, ir.Undefined)
    for first in range(0, lanes, count):
        chunk_args = []
        for arg in fn.args:
            chunk = ir.Constant(variant.function_type.return_type, [zero] * count)
            for k in range(min(count, lanes - first)):
                element = b.extract_element(arg, ir.Constant(I32, first + k))
                chunk = b.insert_element(chunk, element, ir.Constant(I32, k))
            chunk_args.append(chunk)
        out = b.call(variant, chunk_args)
        for k in range(min(count, lanes - first)):
            element = b.extract_element(out, ir.Constant(I32, k))
            result = b.insert_element(result, element, ir.Constant(I32, first + k))
    b.ret(result)
    return fn
