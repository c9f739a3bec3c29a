"""One implementation per libm function and target: every call of a libm function that
has a libmvec variant computes through one variant, the target's widest.

Without this an element's bits depended on where it was computed. The translator calls
the C library (``logf``, ``pow``, ...) and names libmvec's variants in the declarations
(translate/mathlib.py); whole-function vectorization calls the W-lane variant
(``_ZGVdN8v_logf`` on AVX2), LLVM's loop and SLP vectorizers any declared width
(``_ZGVdN8v_logf`` in a loop's body, ``_ZGVbN4v_logf`` in its vectorized remainder or
for a float4), while the scalar remainder of a work-group whose size is no multiple of
the vector width, a group too small for the vectorized loop, a kernel no vectorizer takes
and the quick tier (tiered.py) called libm's scalar function. These round differently
(glibc 2.36, AVX2, random float bit patterns: ``logf`` and ``_ZGVdN8v_logf`` differ in 2%
of them, the SSE and AVX2 variants of ``logf`` in 11%, ``erff`` and its AVX2 variant in
31%), so an element's bits depended on the work-group size, its place in the group and
the tier; a quick tier could not give the optimized tier's bits.

:func:`one_variant` (at translation, both tiers) makes every such call compute each lane
with the target's widest variant ``V`` (AVX-512 ``e``, AVX2 ``d``, else SSE ``b``). A
lane's result depends on its own arguments only (tests/kernels/test_tiered_math.py
compares lanes among arbitrary neighbours with the argument alone in every lane):

- a scalar call calls ``spirvjit.libm.<name>``: the argument in every lane of ``V``,
  lane 0 of the result. ``noinline``, so that LLVM's vectorizers still see a scalar call;
  its ``vector-function-abi-variant`` names ``V`` for ``V``'s lane count and, for the
  others (2 up to twice ``V``'s), adapters (``spirvjit.libm.N4.logf``: the lanes repeated
  to fill ``V``, or ``V`` a chunk at a time) that :func:`vector_adapters` defines for the
  optimized pipeline only (codegen.optimize_here);
- a call of another variant (none is made today: whole-function vectorization's W is
  ``V``'s lane count) calls such an adapter.

Where libmvec's ``V`` is out of OpenCL's bounds (translate/mathlib.OUT_OF_BOUNDS: ``logf``
on every ISA, ``exp10f`` on AVX-512, ``exp``), a float function's ``V`` is
``spirvjit.libm.<isa>.<name>``, which computes in double through the double variant; a
double function is not wrapped and stays libm's scalar function, which no vectorizer widens
(double ``exp``, the one such function, is replaced before by vecmath.py's inline definition).
Float ``log`` never gets here either: vecmath.py's inline definition replaces its calls first.

A wrapped call is no longer a library function LLVM knows: O3 no longer folds one with
constant arguments with the compiler's own math nor rewrites ``pow(x, 2)``, which the
quick tier's few passes never did either. Cost (benchmarks/mathcalls_ab.py, one thread):
vectorized loops as before (a float4's ``log`` in 4-lane chunks of the 8-lane variant
too); a work-item on the scalar path pays one 8-lane call for one result: ``logf`` 1.1x,
``powf`` 1.75x, ``sinf`` 0.8x, double ``sin`` 0.65x the scalar function's time.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import llvmlite.binding as llvm
from llvmlite import ir

from ...translate.mathlib import _ISAS, LIBMVEC, StringAttributes, within_bounds
from .vecmath import retarget_calls

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
            scalar = ir.FunctionType(lane, [lane] * arity)
            if fn.function_type == scalar and _has_variant(name, isa):
                targets[fn] = _wrapper(module, name, isa)
        elif (found := _VARIANT.match(name)) and found.group(4) in _SCALAR:
            # (Whole-function vectorization, the one maker of such calls, makes float ones.)
            assert _has_variant(found.group(4), isa), name
            arity, lane = _SCALAR[found.group(4)]
            lanes = int(found.group(2))
            vector = ir.VectorType(lane, lanes)
            wanted = ir.FunctionType(vector, [vector] * arity)
            canonical = _canonical(found.group(4), isa)
            if len(found.group(3)) == arity and fn.function_type == wanted and name != canonical:
                targets[fn] = _chunked(module, found.group(4), lanes, isa)
    if not targets:
        return 0
    return retarget_calls(module, targets, targets)


def _has_variant(c_name: str, isa: tuple[str, int]) -> bool:
    """Whether ``c_name`` computes through a vector function on ISA ``isa``: its libmvec
    variant, or for float the double one (:func:`_through_double`). A double function whose
    variant is out of OpenCL's bounds (translate/mathlib.OUT_OF_BOUNDS) stays libm's scalar
    function everywhere: no variant of it is declared, so no vectorizer calls one."""
    _, lane = _SCALAR[c_name]
    return within_bounds(c_name, isa[0]) or isinstance(lane, ir.FloatType)


def _canonical(c_name: str, isa: tuple[str, int]) -> str:
    """The name of the function every lane of ``c_name`` computes through (:func:`_variant`)."""
    if not within_bounds(c_name, isa[0]):
        return f"{WRAPPER_PREFIX}{isa[0]}.{c_name}"
    return _libmvec_name(c_name, isa)


def _libmvec_name(c_name: str, isa: tuple[str, int]) -> str:
    arity, lane = _SCALAR[c_name]
    return f"_ZGV{isa[0]}N{_count(lane, isa)}{'v' * arity}_{c_name}"


def _count(lane: ir.Type, isa: tuple[str, int]) -> int:
    return isa[1] // (64 if isinstance(lane, ir.DoubleType) else 32)


def _variant(module: ir.Module, c_name: str, isa: tuple[str, int]) -> ir.Function:
    """``c_name``'s widest variant: the declaration of libmvec's (pure, as the scalar
    function) or, where that one is out of OpenCL's bounds, :func:`_through_double`."""
    if not within_bounds(c_name, isa[0]):
        return _through_double(module, c_name, isa)
    arity, lane = _SCALAR[c_name]
    return _declared(module, _libmvec_name(c_name, isa), arity, lane, _count(lane, isa))


def _declared(module: ir.Module, symbol: str, arity: int, lane: ir.Type, lanes: int) -> ir.Function:
    vector = ir.VectorType(lane, lanes)
    fn = module.globals.get(symbol)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(vector, [vector] * arity), symbol)
    fn.attributes.add("nounwind")
    fn.attributes.add("readnone")
    _will_return(fn)
    return fn


def _through_double(module: ir.Module, c_name: str, isa: tuple[str, int]) -> ir.Function:
    """``spirvjit.libm.<isa>.<c_name>``: float ``c_name``'s lanes of the widest register,
    computed in double by libmvec's double variant of the same ISA (two calls) and rounded
    once to float. For float variants out of OpenCL's bounds (logf's are off by up to 3.95
    ulp where 3 are allowed): the double variant's few double ulps of error stay far below
    half a float ulp. ``noinline``: an inlined copy would leave nothing for the vectorizers'
    variant mappings (wrapper) to name."""
    symbol = _canonical(c_name, isa)
    existing = module.globals.get(symbol)
    if existing is not None:
        return existing
    arity, lane = _SCALAR[c_name]
    stem = c_name.removesuffix("f")
    count = _count(lane, isa)
    half = count // 2
    double = _declared(module, _libmvec_name(stem, isa), arity, ir.DoubleType(), half)
    vector = ir.VectorType(lane, count)
    fn = _pure_internal(module, symbol, vector, arity, "noinline")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    wide = [b.fpext(arg, ir.VectorType(ir.DoubleType(), count)) for arg in fn.args]
    halves = []
    for first in (0, half):
        lanes = ir.Constant(ir.VectorType(I32, half), list(range(first, first + half)))
        chunk = [b.shuffle_vector(arg, ir.Constant(arg.type, ir.Undefined), lanes) for arg in wide]
        halves.append(b.call(double, chunk))
    joined = b.shuffle_vector(
        halves[0], halves[1], ir.Constant(ir.VectorType(I32, count), list(range(count)))
    )
    b.ret(b.fptrunc(joined, vector))
    return fn


def _pure_internal(
    module: ir.Module, name: str, vector: ir.VectorType, arity: int, inlining: str
) -> ir.Function:
    """A new internal function ``name`` of ``arity`` ``vector`` arguments returning one,
    pure as the libm function it computes, ``inlining`` "noinline" or "alwaysinline"."""
    fn = ir.Function(module, ir.FunctionType(vector, [vector] * arity), name)
    fn.linkage = "internal"
    for attribute in (inlining, "nounwind", "readnone"):
        fn.attributes.add(attribute)
    _will_return(fn)
    return fn


def _will_return(fn: ir.Function) -> None:
    """Marks ``fn`` ``willreturn`` (llvmlite knows no such attribute): without it a call
    may not return, and LLVM's SLP vectorizer does not join calls that may have such a
    side effect (measured: a float4's four ``log`` calls stayed four)."""
    set.add(fn.attributes, "willreturn")


def _widths(lane: ir.Type, isa: tuple[str, int]) -> list[int]:
    """The lane counts LLVM's vectorizers may call a wrapper with: 2 up to twice the
    widest variant's (a float4's lanes, an interleaved or unrolled loop)."""
    count = _count(lane, isa)
    return [width for width in (2, 4, 8, 16, 32) if width <= 2 * count]


def _adapter_name(c_name: str, lanes: int) -> str:
    return f"{WRAPPER_PREFIX}N{lanes}.{c_name}"


def _wrapper(module: ir.Module, c_name: str, isa: tuple[str, int]) -> ir.Function:
    """``spirvjit.libm.<c_name>``: the scalar function, as lane 0 of the widest variant
    (the argument in every lane: no other lane takes a special-case path)."""
    name = WRAPPER_PREFIX + c_name
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    arity, lane = _SCALAR[c_name]
    variant = _variant(module, c_name, isa)
    fn = ir.Function(module, ir.FunctionType(lane, [lane] * arity), name)
    fn.linkage = "internal"  # (not while O3 runs: wrappers_exposed)
    fn.attributes = StringAttributes(["noinline", "nounwind", "readnone"])
    _will_return(fn)
    count = variant.function_type.return_type.count
    # The widest variant for its lane count, adapters (vector_adapters, defined for
    # LLVM's vectorizers only) for the others; LLVM ignores those not in the module.
    mappings = ",".join(
        f"_ZGV_LLVM_N{width}{'v' * arity}_{name}"
        f"({variant.name if width == count else _adapter_name(c_name, width)})"
        for width in _widths(lane, isa)
    )
    fn.attributes.add(f'"vector-function-abi-variant"="{mappings}"')
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
    """``spirvjit.libm.N<lanes>.<c_name>``: ``lanes`` lanes of ``c_name`` computed by the
    widest variant: fewer lanes repeated to fill it (no lane takes a special-case path
    its arguments do not), more a chunk at a time."""
    name = _adapter_name(c_name, lanes)
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    arity, lane = _SCALAR[c_name]
    variant = _variant(module, c_name, isa)
    count = variant.function_type.return_type.count
    vector = ir.VectorType(lane, lanes)
    fn = _pure_internal(module, name, vector, arity, "alwaysinline")
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    def shuffle(value, indices: list[int], other=None):
        mask = ir.Constant(ir.VectorType(I32, len(indices)), indices)
        other = ir.Constant(value.type, ir.Undefined) if other is None else other
        return b.shuffle_vector(value, other, mask)

    # The arguments repeated to a multiple of the variant's lanes, then called a chunk
    # at a time; the chunks' results joined (lane counts are powers of two) and cut.
    padded = max(count, -(-lanes // count) * count)
    args = [shuffle(arg, [i % lanes for i in range(padded)]) for arg in fn.args]
    outs = [
        b.call(variant, [shuffle(arg, list(range(first, first + count))) for arg in args])
        for first in range(0, padded, count)
    ]
    while len(outs) > 1:
        if len(outs) % 2:  # (no libmvec lane count makes an odd number of chunks)
            outs.append(outs[-1])
        width = outs[0].type.count
        outs = [
            shuffle(outs[k], list(range(2 * width)), outs[k + 1]) for k in range(0, len(outs), 2)
        ]
    b.ret(shuffle(outs[0], list(range(lanes))))
    return fn


def vector_adapters(features: str, defined: set[str]) -> str:
    """IR defining, for every scalar wrapper among the module's functions ``defined``, its
    adapters of other lane counts than the widest variant's (named in its
    ``vector-function-abi-variant``), for LLVM's loop and SLP vectorizers
    (codegen.optimize_here; the quick tier runs neither). ``llvm.compiler.used`` keeps
    them until the vectorizers have run. "" when there is none to define."""
    isa = widest_isa(features)
    if isa is None:
        return ""
    module = ir.Module("spirvjit.libm")
    names = []
    for name in sorted(defined):
        c_name = name.removeprefix(WRAPPER_PREFIX)
        if not name.startswith(WRAPPER_PREFIX) or c_name not in _SCALAR:
            continue
        lane = _SCALAR[c_name][1]
        for width in _widths(lane, isa):
            adapter = _adapter_name(c_name, width)
            if width != _count(lane, isa) and adapter not in defined:
                _chunked(module, c_name, width, isa)
                names.append(adapter)
    if not names:
        return ""
    lines = [str(value) for value in module.global_values]
    used = ", ".join(f'ptr @"{name}"' for name in names)
    lines.append(
        f"@llvm.compiler.used = appending global [{len(names)} x ptr] [{used}], "
        'section "llvm.metadata"'
    )
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def wrappers_exposed(module: llvm.ModuleRef) -> Iterator[None]:
    """The scalar wrappers of ``module`` are ``linkonce_odr`` inside the block (LLVM's O3
    pipeline), internal again after it. An internal function's arguments are O3's to
    change: an argument that is the same constant at every call (``pow(x, 1.7f)``) would
    be dropped, and the wrapper would then no longer fit its vector variants (measured:
    that ``pow`` ran 6x slower, not vectorized). The object keeps only the kernel's
    runner global (objcheck.py)."""
    names = [
        fn.name
        for fn in module.functions
        if fn.name.startswith(WRAPPER_PREFIX)
        and fn.name.removeprefix(WRAPPER_PREFIX) in _SCALAR
        and fn.linkage == llvm.Linkage.internal
    ]
    for name in names:
        module.get_function(name).linkage = llvm.Linkage.linkonce_odr
    try:
        yield
    finally:
        for name in names:
            try:
                fn = module.get_function(name)
            except NameError:  # inlined or unused: gone
                continue
            fn.linkage = llvm.Linkage.internal
