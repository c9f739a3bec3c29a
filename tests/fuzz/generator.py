"""Random, well-defined OpenCL C kernels for differential testing (in the style of CLsmith).

One :class:`Batch` is one ``.cl`` file holding several independent kernels; each kernel is
one *program* of the tester. A kernel is a list of independent *segments*; segment ``j``
folds everything it computes into a 64-bit hash that work-item ``gid`` writes to
``out[gid * nseg + j]``, and its global atomics go to slots of ``gat`` that no other
segment uses. A mismatch therefore names its segment, and a reproducer can keep that
segment alone (:meth:`Kernel.source`).

No undefined behaviour by construction:

* integer ``+ - *``, negation and ``<<`` are computed in an unsigned type of at least 32
  bits and converted back (wrapping; the narrowing conversion is implementation-defined,
  and every implementation tested here truncates); ``/`` and ``%`` return the dividend for
  a zero divisor and for MIN / -1; shift counts are masked to the width;
* array indices are masked to the (power-of-two) array size, input reads to the input
  size; every variable and array element is written before it is read; private pointers
  (into arrays, to variables, to a vector's components, walked to an array's end) only
  address what they point into;
* loops have constant or input-derived trip counts of at most 6 and no loop variable is
  assigned in the body;
* ``barrier`` is reached only in work-group-uniform control flow (conditions built from
  constants, the group id and uniform input words), never after a ``break``;
* float to integer conversions are always ``_sat`` (NaN -> 0, out of range clamps);
  ``clamp`` gets ordered constant bounds; ``mul24``/``mad24`` are not used.

Floats are compared bit for bit only where OpenCL makes the result exact, with
``#pragma OPENCL FP_CONTRACT OFF`` (else ``a*b+c`` may or may not be fused) and
``-cl-fp32-correctly-rounded-divide-sqrt`` (else ``/`` and ``sqrt`` may be off by 2.5 and
3 ulp): ``+ - * /``, ``sqrt``, ``fma``, ``fabs``, ``floor``, ``ceil``, ``trunc``, ``rint``,
``round``, ``fmod``, ``ldexp``, ``fmin``/``fmax``, the fourth stream's ``frexp``, ``modf``,
``fract``, ``remquo``, ``remainder``, ``ilogb``, ``logb``, ``nextafter``, ``fdim``,
``maxmag``/``minmag``, comparisons, ``isnan``/``isinf``/``isfinite``, ``select``/``?:``
and every ``convert_*`` with every rounding mode (all correctly rounded by the spec).
Not exact, so not used: ``mad`` (fused or not), ``min``/
``max``/``clamp`` on floats (undefined for NaN), transcendental functions, ``native_*``,
``half_*``, ``dot``. Two things OpenCL leaves open are made unobservable: the payload and
sign of a NaN (a hashed float goes through ``fbits``/``dbits``, which map every NaN to
one pattern; ``copysign``/``signbit``/``as_int(float)`` are not used), and the sign of a
zero returned by ``fmin``/``fmax`` of ``-0`` and ``+0`` (their result passes ``zc``, which
maps -0 to +0).
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass, field

INT_BASES = ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong")
FLOAT_BASES = ("float", "double")
BITS = {"char": 8, "uchar": 8, "short": 16, "ushort": 16, "int": 32, "uint": 32}
BITS |= {"long": 64, "ulong": 64, "float": 32, "double": 64}
INT_VEC_WIDTHS = (2, 3, 4, 8, 16)
VEC_PICK = (2, 2, 3, 4, 4, 8, 16)  # small vectors compile faster: pick them more
FLOAT_VEC_WIDTHS = (2, 4)
IN_WORDS = 256  # uint words of the input buffer (a power of two: indices are masked)
GAT_SLOTS = 16  # global atomic slots per kernel
OPTIONS = ("-cl-std=CL3.0", "-cl-fp32-correctly-rounded-divide-sqrt", "-w")
# work-item functions other than the ids every kernel names (a two-dimensional NDRange's
# y ids, sizes, the linear ids and the (zero) offset)
WORK_ITEM_FNS = (
    "get_local_size(0)", "get_local_size(1)", "get_num_groups(0)", "get_num_groups(1)",
    "get_global_size(0)", "get_global_size(1)", "get_work_dim()", "get_global_offset(0)",
    "get_local_id(1)", "get_group_id(1)", "get_global_id(1)", "get_local_linear_id()",
    "get_global_linear_id()", "get_enqueued_local_size(0)", "get_local_size(2)",
)  # fmt: skip
# the new value of a compare-and-swap loop doing an atomic operation (old {o}, operand {a})
CAS_OPS = {
    "add": "({t})((uint){o} + (uint){a})",
    "sub": "({t})((uint){o} - (uint){a})",
    "min": "min({o}, {a})",
    "max": "max({o}, {a})",
    "and": "({o} & {a})",
    "or": "({o} | {a})",
    "xor": "({o} ^ {a})",
}
ROUNDERS = ("rint", "floor", "ceil", "trunc", "round")
ROUNDINGS = ("", "_rte", "_rtz", "_rtp", "_rtn")
# statements per block, nesting depth, expression depth, segments per kernel
SIZES = {"normal": (3, 2, 2, 2), "small": (3, 1, 2, 1), "large": (4, 3, 3, 3)}
KNOWN_WORKAROUNDS = ("convert_int", "barrier_helper", "pocl_vdiv", "pocl_loop")
# Spellings the reference (PoCL) gets: the same program, around PoCL bugs (see rint_workaround).
REFERENCE_WORKAROUNDS = frozenset(
    {"pocl_rint", "pocl_abs", "pocl_psel", "pocl_fract", "pocl_modf", "pocl_dowhile"}
)


def signed(base: str) -> bool:
    return not base.startswith("u") and base not in FLOAT_BASES


def unsigned_of(base: str) -> str:
    return base if base.startswith("u") else "u" + base


def signed_of(base: str) -> str:
    return base[1:] if base.startswith("u") else base


def int_of_bits(bits: int, is_signed: bool) -> str:
    name = {8: "char", 16: "short", 32: "int", 64: "long"}[bits]
    return name if is_signed else "u" + name


def int_range(base: str) -> tuple[int, int]:
    b = BITS[base]
    return (-(1 << (b - 1)), (1 << (b - 1)) - 1) if signed(base) else (0, (1 << b) - 1)


@dataclass(frozen=True)
class Ty:
    base: str
    n: int = 1

    @property
    def name(self) -> str:
        return self.base if self.n == 1 else f"{self.base}{self.n}"

    @property
    def is_float(self) -> bool:
        return self.base in FLOAT_BASES

    @property
    def bits(self) -> int:
        return BITS[self.base]

    def with_base(self, base: str) -> Ty:
        return Ty(base, self.n)


def int_literal(base: str, v: int) -> str:
    """A literal of exactly type ``base`` with value ``v``."""
    lo, hi = int_range(base)
    assert lo <= v <= hi, (base, v)
    if base in ("long", "ulong"):
        if v == lo and base == "long":
            return "(-9223372036854775807L - 1)"
        return f"{v}UL" if base == "ulong" else f"{v}L"
    if base == "int" and v == lo:
        return "(-2147483647 - 1)"
    text = f"{v}U" if base == "uint" else str(v)
    return text if base in ("int", "uint") else f"(({base}){text})"


def float_literal(base: str, v: float) -> str:
    if v != v:
        return f"(({base})NAN)"
    if v in (float("inf"), float("-inf")):
        return f"(({base}){'-' if v < 0 else ''}INFINITY)"
    text = float.hex(v) if v != 0 else ("-0.0" if str(v).startswith("-") else "0.0")
    return text + ("f" if base == "float" else "")


def struct_size(fields: list[tuple[str, Ty]]) -> int:
    """Bytes of a struct of these fields in OpenCL C: every scalar and vector aligned to
    its size (a 3-vector takes 4 elements), the struct to its largest field."""
    offset, align = 0, 1
    for _, ty in fields:
        size = BITS[ty.base] // 8 * (4 if ty.n == 3 else ty.n)
        offset = (offset + size - 1) // size * size + size
        align = max(align, size)
    return (offset + align - 1) // align * align


def f32(x: float) -> float:
    import struct

    return struct.unpack("<f", struct.pack("<f", x))[0]


@dataclass
class Var:
    name: str
    ty: Ty
    kind: str = "var"  # var | loop (read-only) | array
    size: int = 0


@dataclass
class Kernel:
    name: str
    local_size: int
    global_size: int
    segments: list[str] = field(default_factory=list)
    helpers: list[str] = field(default_factory=list)
    features: set[str] = field(default_factory=set)
    local_decls: list[str] = field(default_factory=list)
    rows: int = 1  # work-group rows (y): a group is local_size // rows by rows
    # a struct passed by value as the kernel's fourth argument: its type and size in bytes
    struct_arg: str | None = None
    struct_size: int = 0
    group_rows: int = 1  # rows of work-groups (y) in the NDRange

    @property
    def nseg(self) -> int:
        return len(self.segments)

    @property
    def local_shape(self) -> tuple[int, int]:
        """(x, y) of a work-group; ``local_size`` work-items in all."""
        return (self.local_size // self.rows, self.rows)

    @property
    def global_shape(self) -> tuple[int, int]:
        """(x, y) of the NDRange; ``global_size`` work-items in all."""
        groups = self.global_size // self.local_size
        x, y = self.local_shape
        return (x * groups // self.group_rows, y * self.group_rows)

    def source(self, keep: set[int] | None = None) -> str:
        """The kernel's helpers and body; segments not in ``keep`` are left out."""
        parts = list(self.helpers)
        ids = "    const uint gid = get_global_id(0), lid = get_local_id(0), grp = get_group_id(0);"
        if self.rows > 1 or self.group_rows > 1:  # the same ids, numbered row by row
            ids = (
                "    const uint gid = get_global_id(0) + get_global_id(1) * get_global_size(0),\n"
                "        lid = get_local_id(0) + get_local_id(1) * get_local_size(0),\n"
                "        grp = get_group_id(0) + get_group_id(1) * get_num_groups(0);"
            )
        body = [
            ids,
            *("    " + d for d in self.local_decls),
            "    ulong h;",
        ]
        for j, seg in enumerate(self.segments):
            if keep is None or j in keep:
                body.append(seg)
        parts.append(
            f"__kernel __attribute__((reqd_work_group_size({self.local_shape[0]}, "
            f"{self.rows}, 1)))\n"
            f"void {self.name}(__global ulong *out, __global const uint *in, "
            f"__global uint *gat{f', {self.struct_arg} sarg' if self.struct_arg else ''})\n"
            "{\n" + "\n".join(body) + "\n}\n"
        )
        return "\n".join(parts)


PRELUDE = """\
#pragma OPENCL FP_CONTRACT OFF
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
static ulong hmix(ulong h, ulong v) { return (h ^ v) * 0x100000001b3UL + (h >> 29); }
static uint fbits(float x) { return isnan(x) ? 0x7fc00000U : as_uint(x); }
static ulong dbits(double x) { return isnan(x) ? 0x7ff8000000000000UL : as_ulong(x); }
static float zcf(float x) { return x == 0.0f ? 0.0f : x; }
static double zcd(double x) { return x == 0.0 ? 0.0 : x; }
"""


@dataclass
class Batch:
    seed: int
    kernels: list[Kernel]
    defs: dict[str, str]  # helper definitions shared by the batch, by name
    workarounds: frozenset[str] = frozenset()
    size: str = "normal"

    def prelude(self) -> str:
        return PRELUDE + "\n".join(self.defs.values()) + "\n"

    def source(self) -> str:
        return self.prelude() + "\n" + "\n".join(k.source() for k in self.kernels)

    def kernel_source(self, index: int, keep: set[int] | None = None) -> str:
        return self.prelude() + "\n" + self.kernels[index].source(keep)


class Generator:
    """Builds one batch; the same seed and size always give the same programs, whatever
    ``workarounds`` says (a workaround only changes how a construct is spelled)."""

    def __init__(
        self, seed: int, workarounds: frozenset[str] = frozenset(), size: str = "normal"
    ) -> None:
        # (statements per block, nesting depth, expression depth, segments per kernel)
        self.stmts, self.nest, self.depth, self.nseg = SIZES[size]
        self.seed = seed
        self.rng = random.Random(seed)
        # A second stream draws the constructs added after the tester's first runs (vload/
        # vstore, writes to vector components, work-group sizes that are not a multiple of
        # the CPU vector width): the main stream, so every earlier seed's program, is
        # unchanged apart from the added statements and expressions.
        self.side = random.Random(f"{seed}/side")
        # A third stream for the constructs added after the side stream's (raw operators,
        # compound assignments, do-while, structs): the main and side streams, so every
        # earlier seed's program, again only gain statements and expressions.
        self.third = random.Random(f"{seed}/third")
        # A fourth stream for the math built-ins added after the third stream's (frexp,
        # modf, fract, remquo, ilogb, ...): the other three streams draw as before.
        self.fourth = random.Random(f"{seed}/fourth")
        self.workarounds = workarounds
        self.defs: dict[str, str] = {}
        self.counter = 0
        self.structs: list[tuple[str, list[tuple[str, Ty]]]] = []  # the batch's structs
        self.sarg: tuple[str, list[tuple[str, Ty]]] | None = None  # the kernel's struct arg
        self.wg, self.one_d, self.segment = 1, False, (0, 1)  # set per kernel and segment

    # -------------------------------------------------------------- utilities
    @contextlib.contextmanager
    def side_stream(self):
        """Draws everything inside from the side stream (see ``__init__``)."""
        saved, self.rng = self.rng, self.side
        try:
            yield
        finally:
            self.rng = saved

    @contextlib.contextmanager
    def third_stream(self):
        """Draws everything inside, side-stream draws included, from the third stream."""
        saved = self.rng, self.side
        self.rng = self.side = self.third
        try:
            yield
        finally:
            self.rng, self.side = saved

    @contextlib.contextmanager
    def fourth_stream(self):
        """Draws everything inside, side- and third-stream draws included, from the fourth."""
        saved = self.rng, self.side, self.third
        self.rng = self.side = self.third = self.fourth
        try:
            yield
        finally:
            self.rng, self.side, self.third = saved

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, seq):
        return self.rng.choice(seq)

    def define(self, name: str, text: str) -> str:
        self.defs.setdefault(name, text)
        return name

    def rand_type(self, allow_vec: bool = True, allow_float: bool = True) -> Ty:
        r = self.rng.random()
        if allow_float and r < 0.2:
            base = "double" if self.chance(0.3) else "float"
            n = self.pick(FLOAT_VEC_WIDTHS) if allow_vec and self.chance(0.25) else 1
            return Ty(base, n)
        base = self.pick(INT_BASES)
        n = self.pick(VEC_PICK) if allow_vec and self.chance(0.3) else 1
        return Ty(base, n)

    def int_value(self, base: str) -> int:
        lo, hi = int_range(base)
        r = self.rng.random()
        if r < 0.35:
            v = self.pick((0, 1, -1, 2, 3, 7, lo, hi, lo + 1, hi - 1, 1 << (BITS[base] - 1)))
        elif r < 0.7:
            v = self.rng.randint(-100, 100)
        else:
            v = self.rng.randint(lo, hi)
        return min(max(v, lo), hi) if not (lo <= v <= hi) else v

    def float_value(self, base: str) -> float:
        r = self.rng.random()
        if r < 0.3:
            v = self.pick((0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, 1e-40, 1.5e38, -7.25))
            v = self.pick((v, v, float("inf"), float("nan")))
        elif r < 0.7:
            v = float(self.rng.randint(-1000, 1000)) / self.pick((1, 2, 4, 8, 3, 10))
        else:
            v = self.rng.uniform(-1e6, 1e6) * 2.0 ** self.rng.randint(-60, 60)
        return f32(v) if base == "float" else v

    def literal(self, ty: Ty) -> str:
        def one(base: str) -> str:
            if base in FLOAT_BASES:
                return float_literal(base, self.float_value(base))
            return int_literal(base, self.int_value(base))

        if ty.n == 1:
            return one(ty.base)
        if self.chance(0.5):
            return f"(({ty.name})({one(ty.base)}))"
        return f"(({ty.name})({', '.join(one(ty.base) for _ in range(ty.n))}))"

    # ------------------------------------------------------------- expressions
    def in_index(self) -> str:
        c = self.rng.randrange(IN_WORDS)
        r = self.rng.random()
        if r < 0.3:
            return str(c)
        if r < 0.7:
            return f"(gid + {c}U) & {IN_WORDS - 1}U"
        return f"(lid * {self.rng.randint(1, 9)}U + {c}U) & {IN_WORDS - 1}U"

    def scalar_leaf(self, base: str, scope: list[Var]) -> str:
        cands = [v for v in scope if v.ty == Ty(base) and v.kind != "array"]
        arrays = [v for v in scope if v.kind == "array" and v.ty == Ty(base)]
        r = self.rng.random()
        if cands and r < 0.45:
            return self.pick(cands).name
        if arrays and r < 0.55:
            a = self.pick(arrays)
            return f"{a.name}[{self.index_expr(scope)} & {a.size - 1}U]"
        if r < 0.7:
            return self.literal(Ty(base))
        if base == "float":
            if self.chance(0.5):
                return f"as_float(in[{self.in_index()}])"
            return f"(float)(int)(in[{self.in_index()}] & 0xffffU)"
        if base == "double":
            if self.chance(0.5):
                hi, lo = self.in_index(), self.in_index()
                return f"as_double(((ulong)in[{hi}] << 32) | in[{lo}])"
            return f"(double)(int)in[{self.in_index()}]"
        if self.chance(0.15):
            return f"(({base}){self.pick(('gid', 'lid', 'grp'))})"
        loops = [v for v in scope if v.kind == "loop"]
        if loops and self.chance(0.2):
            return f"(({base}){self.pick(loops).name})"
        if BITS[base] == 64:
            return f"(({base})(((ulong)in[{self.in_index()}] << 32) | in[{self.in_index()}]))"
        return f"(({base})in[{self.in_index()}])"

    def index_expr(self, scope: list[Var]) -> str:
        return f"(uint)({self.expr(Ty(self.pick(('int', 'uint', 'uchar', 'long'))), scope, 1)})"

    def leaf(self, ty: Ty, scope: list[Var]) -> str:
        text = self.main_leaf(ty, scope)  # drawn first: the main stream stays as it was
        if ty.n > 1 and self.side.random() < 0.12:
            with self.side_stream():
                return self.vload(ty, scope)
        if ty.n == 1 and not ty.is_float and self.third.random() < 0.04:
            with self.third_stream():
                self.features.add("work_item_fn")
                fn = self.pick(WORK_ITEM_FNS)
                return f"(({ty.base}){fn})"
        if ty.n in (1, 2, 4, 8) and self.third.random() < 0.04:
            with self.third_stream():
                return self.constant_read(ty, scope)
        if ty.base == "float" and ty.n in (1, 2, 4, 8) and self.third.random() < 0.04:
            with self.third_stream():  # half-precision words of the input, as floats
                self.features.add("half")
                n = "" if ty.n == 1 else str(ty.n)
                count = IN_WORDS * 2 // ty.n
                idx = f"{self.index_expr(scope)} % {count}U"
                return f"vload_half{n}({idx}, (__global const half *)in)"
        return text

    def constant_read(self, ty: Ty, scope: list[Var]) -> str:
        """An element of a program-scope ``__constant`` table (one per element type and
        batch), read by index, through a pointer, or with ``vloadN``."""
        self.features.add("constant_table")
        name = f"ctab_{ty.base}"
        if name not in self.defs:
            vals = ", ".join(self.literal(Ty(ty.base)) for _ in range(16))
            # NAN is as_float(INT_MAX), not a constant expression an initializer allows
            vals = vals.replace("((float)NAN)", "(0.0f / 0.0f)")
            vals = vals.replace("((double)NAN)", "(0.0 / 0.0)")
            self.define(name, f"__constant {ty.base} {name}[16] = {{ {vals} }};")
        idx = self.index_expr(scope)
        if ty.n > 1:
            return f"vload{ty.n}({idx} % {16 // ty.n}U, {name})"
        if self.chance(0.3):
            return f"*({name} + ({idx} & 15U))"
        return f"{name}[{idx} & 15U]"

    def main_leaf(self, ty: Ty, scope: list[Var]) -> str:
        if ty.n == 1:
            return self.scalar_leaf(ty.base, scope)
        cands = [v for v in scope if v.ty == ty and v.kind == "var"]
        if cands and self.chance(0.5):
            return self.pick(cands).name
        if ty.n > 4 or self.chance(0.4):
            return self.literal(ty)
        if self.chance(0.4):
            return f"(({ty.name})({self.scalar_leaf(ty.base, scope)}))"
        parts = [self.scalar_leaf(ty.base, scope) for _ in range(ty.n)]
        return f"(({ty.name})({', '.join(parts)}))"

    def expr(self, ty: Ty, scope: list[Var], depth: int) -> str:
        if depth <= 0 or self.chance(0.3):
            return self.leaf(ty, scope)
        d = depth - 1
        if ty.is_float:
            return self.float_expr(ty, scope, d)
        return self.int_expr(ty, scope, d)

    def vload(self, ty: Ty, scope: list[Var]) -> str:
        """``vloadN`` from the input (read as ``ty.base`` elements) or a private array."""
        self.features.add("vload")
        arrays = [v for v in scope if v.kind == "array" and v.ty == Ty(ty.base)]
        arrays = [v for v in arrays if v.size >= ty.n]
        if arrays and self.chance(0.5):
            a = self.pick(arrays)
            return f"vload{ty.n}({self.index_expr(scope)} % {a.size // ty.n}U, {a.name})"
        count = IN_WORDS * 4 // (BITS[ty.base] // 8) // ty.n
        idx = self.index_expr(scope)
        if self.chance(0.5):  # consecutive or strided across work-items
            idx = f"({self.pick(('gid', 'lid', 'lid * 3U'))} + {self.rng.randrange(count)}U)"
        idx = f"{idx} % {count}U"
        return f"vload{ty.n}({idx}, (__global const {ty.base} *)in)"

    def component_write(self, lines: list[str], scope: list[Var], pad: str) -> None:
        """A write to some components of a vector variable (``v.zx = ...``, ``v.s3 = ...``)
        or a ``vstoreN`` into a private array."""
        vecs = [v for v in scope if v.kind == "var" and v.ty.n > 1]
        arrays = [v for v in scope if v.kind == "array" and v.ty.n == 1 and v.size >= 2]
        if arrays and (not vecs or self.chance(0.3)):
            a = self.pick(arrays)
            n = self.pick([w for w in INT_VEC_WIDTHS if w <= a.size])
            value = self.expr(Ty(a.ty.base, n), scope, 2)
            idx = f"{self.index_expr(scope)} % {a.size // n}U"
            self.features.add("vstore")
            lines.append(f"{pad}vstore{n}({value}, {idx}, {a.name});")
            return
        if not vecs:
            return
        v = self.pick(vecs)
        n = v.ty.n
        k = self.pick([w for w in (1, 2, 3, 4) if w <= n])
        comps = self.rng.sample(range(n), k)
        if n <= 4 and self.chance(0.5):
            sel = "".join("xyzw"[c] for c in comps)
        else:
            sel = "s" + "".join(f"{c:x}" for c in comps)
        self.features.add("component_write")
        lines.append(f"{pad}{v.name}.{sel} = {self.expr(Ty(v.ty.base, k), scope, 2)};")

    # integer expressions -----------------------------------------------------
    def int_binop(self, op: str, ty: Ty) -> str:
        """Name of a helper computing ``a op b`` in ``ty`` without undefined behaviour."""
        names = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod"}
        names |= {"<<": "shl", ">>": "shr"}
        name = f"{names[op]}_{ty.name}"
        if ty.n > 1 and op in "/%":
            self.features.add("vector_divmod")  # see "pocl_vdiv" below
        if name in self.defs:
            return name
        t, b, bits = ty.name, ty.base, ty.bits
        lo, _ = int_range(b)
        if ty.n == 1:
            wrap = "ulong" if bits == 64 else "uint"
            if op in "+-*":
                body = f"return ({t})(({wrap})a {op} ({wrap})b);"
            elif op in "/%":
                bad = "b == 0"
                if signed(b):
                    bad += f" || (a == {int_literal(b, lo)} && b == ({t})-1)"
                body = f"return ({bad}) ? a : ({t})(a {op} b);"
            elif op == "<<":
                body = f"return ({t})(({wrap})a << (b & {bits - 1}));"
            else:
                body = f"return ({t})(a >> (b & {bits - 1}));"
        else:
            ut = ty.with_base(unsigned_of(b)).name
            mask = f"({t})({bits - 1})"
            if op in "+-*":
                body = (
                    f"return as_{t}(as_{ut}(a) {op} as_{ut}(b));"
                    if signed(b)
                    else f"return a {op} b;"
                )
            elif op in "/%":
                bad = f"b == ({t})0"
                if signed(b):
                    bad = f"({bad}) | ((a == ({t})({int_literal(b, lo)})) & (b == ({t})-1))"
                divisor = f"select(b, ({t})1, bad)"
                if "pocl_vdiv" in self.workarounds:
                    # PoCL 3.1 folds a division by that select to one by 1 (findings/
                    # pocl_bugs.cl vector_div_by_select); the same divisor, bit by bit:
                    divisor = f"(b & ~as_{t}(bad)) | (as_{t}(bad) & ({t})1)"
                body = (
                    f"{ty.with_base(int_of_bits(bits, True)).name} bad = {bad};\n"
                    f"    return select(a {op} ({divisor}), a, bad);"
                )
            elif op == "<<":
                body = (
                    f"return as_{t}(as_{ut}(a) << as_{ut}(b & {mask}));"
                    if signed(b)
                    else f"return a << (b & {mask});"
                )
            else:
                body = f"return a >> (b & {mask});"
        return self.define(name, f"static {t} {name}({t} a, {t} b) {{\n    {body}\n}}")

    def int_expr(self, ty: Ty, scope: list[Var], d: int) -> str:
        text = self.main_int_expr(ty, scope, d)  # drawn first: the main stream stays
        if self.third.random() < 0.1:
            with self.third_stream():
                return self.raw_int_op(ty, text, scope, d)
        return text

    def raw_int_op(self, ty: Ty, a: str, scope: list[Var], d: int) -> str:
        """``a op b`` written with the C operator, not a helper: wrapping unsigned
        arithmetic (scalar ``uchar``/``ushort`` promoted to ``int``) and shifts whose count
        is any value (OpenCL masks it to the width of the promoted scalar type, or of a
        vector's elements). Only where OpenCL defines the result for every operand."""
        b, t = ty.base, ty.name
        if ty.n in (2, 4, 8, 16) and self.chance(0.2):
            return self.shuffle(ty, a, scope, d)
        if self.chance(0.1):
            self.features.add("bitselect")
            return f"bitselect({a}, {self.expr(ty, scope, d)}, {self.expr(ty, scope, d)})"
        self.features.add("raw_int_op")
        r = self.rng.random()
        if r < 0.5:  # a shift by an unmasked count
            op = self.pick(("<<", ">>"))
            if ty.n > 1 and self.chance(0.6):
                count = self.expr(ty.with_base(unsigned_of(b)), scope, d)
                count = f"as_{t}({count})" if signed(b) else count
            else:  # a scalar count of any integer type (a vector's is widened)
                cb = self.pick(INT_BASES)
                count = self.expr(Ty(cb), scope, d)
                if ty.n > 1 and BITS[cb] > BITS[b]:
                    count = f"(({b})({count}))"
            if op == "<<" and signed(b):  # a signed << can overflow: shift the bits
                ut = ty.with_base(unsigned_of(b)).name
                if ty.n > 1:
                    return f"as_{t}(as_{ut}({a}) << as_{ut}(({t})({count})))"
                wide = "ulong" if ty.bits == 64 else "uint"
                return f"(({t})(({wide})({a}) << ({count})))"
            return f"(({t})(({a}) {op} ({count})))"
        ops = ["&", "|", "^"]
        if not signed(b) or (ty.n == 1 and ty.bits < 32):
            # wraps (unsigned) or cannot overflow the int it is promoted to
            ops += ["+", "-", "*"]
            if ty.n == 1 and b == "ushort":
                ops.remove("*")  # 65535 * 65535 overflows the int it is promoted to
        op = self.pick(ops)
        return f"(({t})(({a}) {op} ({self.expr(ty, scope, d)})))"

    def shuffle(self, ty: Ty, a: str, scope: list[Var], d: int) -> str:
        """``shuffle(a, mask)`` or ``shuffle2(a, b, mask)``: only the mask's low bits
        count (log2 of the source's width, or twice it), the rest must be ignored."""
        self.features.add("shuffle")
        mask_ty = Ty(int_of_bits(ty.bits, False), ty.n)
        mask = self.expr(mask_ty, scope, d)
        if self.chance(0.5):
            return f"shuffle({a}, {mask})"
        n = self.pick((2, 4, 8, 16))
        src = self.expr(Ty(ty.base, n), scope, d)
        if n != ty.n:  # the sources may be narrower or wider than the result
            return f"shuffle2({src}, {src}, {mask})"
        return f"shuffle2({a}, {src}, {mask})"

    def main_int_expr(self, ty: Ty, scope: list[Var], d: int) -> str:
        b, t = ty.base, ty.name
        r = self.rng.random()
        if r < 0.3:
            op = self.pick(("+", "-", "*", "/", "%", "<<", ">>"))
            fn = self.int_binop(op, ty)
            return f"{fn}({self.expr(ty, scope, d)}, {self.expr(ty, scope, d)})"
        if r < 0.4:
            op = self.pick(("&", "|", "^"))
            return f"(({t})({self.expr(ty, scope, d)} {op} {self.expr(ty, scope, d)}))"
        if r < 0.45:
            if self.chance(0.5):
                return f"(({t})~{self.expr(ty, scope, d)})"
            ut = ty.with_base(unsigned_of(b)).name
            if ty.n == 1:
                return (
                    f"(({t})(-({'ulong' if ty.bits == 64 else 'uint'}){self.expr(ty, scope, d)}))"
                )
            return f"as_{t}(-as_{ut}({self.expr(ty, scope, d)}))"
        if r < 0.62:
            return self.int_builtin(ty, scope, d)
        if r < 0.77:
            return self.conversion(ty, scope, d)
        if r < 0.85:
            return self.select_expr(ty, scope, d)
        if r < 0.92 and ((ty.n > 1 and signed(b)) or b == "int"):
            return self.compare(ty, scope, d)
        if ty.n > 1:
            return self.swizzle(ty, scope, d)
        # a scalar taken from a vector, a helper call or any()/all()
        r = self.rng.random()
        if r < 0.5:
            n = self.pick(VEC_PICK)
            k = self.rng.randrange(n)
            return f"({self.expr(Ty(b, n), scope, d)}).s{k:x}"
        if r < 0.75 and b == "int":
            n = self.pick(VEC_PICK)
            sb = self.pick(("char", "short", "int", "long"))
            self.features.add("any_all")
            return f"{self.pick(('any', 'all'))}({self.expr(Ty(sb, n), scope, d)})"
        return self.call_helper(ty, scope, d)

    def int_builtin(self, ty: Ty, scope: list[Var], d: int) -> str:
        b = ty.base

        def e(x: Ty = ty) -> str:
            return self.expr(x, scope, d)

        choices = ["add_sat", "sub_sat", "hadd", "rhadd", "max", "min", "mul_hi", "mad_hi"]
        choices += ["mad_sat", "rotate", "popcount", "clz", "ctz", "clamp"]
        if not signed(b):
            choices += ["abs", "abs_diff"]
        if BITS[b] >= 16:
            choices.append("upsample")
        f = self.pick(choices)
        if f in ("popcount", "clz", "ctz"):
            return f"{f}({e()})"
        if f in ("mad_hi", "mad_sat"):
            return f"{f}({e()}, {e()}, {e()})"
        if f == "clamp":
            lo, hi = sorted((self.int_value(b), self.int_value(b)))
            return f"clamp({e()}, {int_literal(b, lo)}, {int_literal(b, hi)})"
        if f == "abs":
            src = ty.with_base(signed_of(b))
            return f"{self.abs_name('abs', src)}({e(src)})"
        if f == "abs_diff":
            src = ty.with_base(self.pick((b, signed_of(b))))
            return f"{self.abs_name('abs_diff', src)}({e(src)}, {e(src)})"
        if f == "upsample":
            half = int_of_bits(ty.bits // 2, signed(b))
            return f"upsample({e(ty.with_base(half))}, {e(ty.with_base(unsigned_of(half)))})"
        return f"{f}({e()}, {e()})"

    def conversion(self, ty: Ty, scope: list[Var], d: int) -> str:
        """``convert_<ty>[_sat][_rounding](x)`` or a cast from another scalar type."""
        src = self.rand_type(allow_vec=False).with_base(self.rand_type(allow_vec=False).base)
        src = Ty(src.base, ty.n)
        x = self.expr(src, scope, d)
        if ty.is_float:
            mode = self.pick(ROUNDINGS)
            if src.is_float and src.base == ty.base:
                mode = ""
            return f"convert_{ty.name}{mode}({x})"
        if src.is_float:
            mode = self.pick(ROUNDINGS)
            if mode not in ("", "_rtz") and "pocl_rint" in self.workarounds:
                return f"{self.sat_round_workaround(ty, src, mode)}({x})"
            return f"convert_{ty.name}_sat{mode}({x})"
        sat = self.pick(("", "_sat"))
        mode = self.pick(("",) * 4 + ROUNDINGS[1:])
        if ty.n == 1 and self.chance(0.2):
            return f"(({ty.name})({x}))"
        self.features.add("convert_int")
        if "convert_int" in self.workarounds:
            return f"{self.convert_workaround(ty, src, sat == '_sat')}({x})"
        return f"convert_{ty.name}{sat}{mode}({x})"

    def convert_workaround(self, dst: Ty, src: Ty, sat: bool) -> str:
        """A helper doing an integer convert_* with casts and compares only (clang-22's
        SPIR-V back end gets the signedness of integer convert_* wrong: issue 12 item 2)."""
        name = f"cvt_{dst.name}{'_sat' if sat else ''}_from_{src.name}"
        if name in self.defs:
            return name
        d, s = dst.base, src.base
        dlo, dhi = int_range(d)
        slo, shi = int_range(s)
        body = "(" + d + ")x"
        if sat:
            if dhi < shi:
                body = f"x > ({s}){int_literal(d, dhi)} ? {int_literal(d, dhi)} : {body}"
            if dlo > slo:
                body = f"x < ({s}){int_literal(d, dlo)} ? {int_literal(d, dlo)} : ({body})"
        scalar = f"static {d} {name}_1({s} x) {{ return {body}; }}"
        if dst.n == 1:
            return self.define(name, scalar.replace(f"{name}_1(", f"{name}("))
        self.define(name + "_1", scalar)
        comps = ", ".join(f"{name}_1(x.s{i:x})" for i in range(dst.n))
        return self.define(
            name, f"static {dst.name} {name}({src.name} x) {{ return ({dst.name})({comps}); }}"
        )

    def condition(self, scope: list[Var], d: int) -> str:
        ty = self.rand_type(allow_vec=False)
        a, b = self.expr(ty, scope, d), self.expr(ty, scope, d)
        if ty.is_float and self.chance(0.2):
            return f"{self.pick(('isnan', 'isinf', 'isfinite'))}({a})"
        return f"({a} {self.pick(('<', '<=', '>', '>=', '==', '!='))} {b})"

    def select_expr(self, ty: Ty, scope: list[Var], d: int) -> str:
        a, b = self.expr(ty, scope, d), self.expr(ty, scope, d)
        if ty.n == 1:
            # a scalar ?: promotes char and short operands to int: cast back
            return f"(({ty.name})({self.condition(scope, d)} ? {a} : {b}))"
        other = ty.with_base(self.pick([x for x in INT_BASES + FLOAT_BASES if BITS[x] == ty.bits]))
        rel = self.pick(("<", ">", "==", "!="))
        c = f"({self.expr(other, scope, d)} {rel} {self.expr(other, scope, d)})"
        if self.chance(0.5):
            return f"select({a}, {b}, {c})"
        return f"({c} ? {a} : {b})"

    def compare(self, ty: Ty, scope: list[Var], d: int) -> str:
        if ty.n == 1:
            return self.condition(scope, d)
        assert signed(ty.base)
        other = ty.with_base(self.pick([x for x in INT_BASES + FLOAT_BASES if BITS[x] == ty.bits]))
        a, b = self.expr(other, scope, d), self.expr(other, scope, d)
        return f"({a} {self.pick(('<', '<=', '>', '>=', '==', '!='))} {b})"

    def swizzle(self, ty: Ty, scope: list[Var], d: int) -> str:
        n = ty.n
        r = self.rng.random()
        if r < 0.3 and n in (2, 4, 8):
            src = Ty(ty.base, 2 * n)
            return f"({self.expr(src, scope, d)}).{self.pick(('lo', 'hi', 'even', 'odd'))}"
        m = self.pick([w for w in INT_VEC_WIDTHS if w >= 2])
        src = Ty(ty.base, m)
        if m <= 4 and n <= 4 and self.chance(0.5):
            comps = "".join(self.pick("xyzw"[:m]) for _ in range(n))
        else:
            comps = "s" + "".join(f"{self.rng.randrange(m):x}" for _ in range(n))
        return f"({self.expr(src, scope, d)}).{comps}"

    # float expressions -------------------------------------------------------
    def float_expr(self, ty: Ty, scope: list[Var], d: int) -> str:
        text = self.main_float_expr(ty, scope, d)  # drawn first: the main stream stays
        if ty.n in (2, 4, 8, 16) and self.third.random() < 0.08:
            with self.third_stream():
                return self.shuffle(ty, text, scope, d)
        return text

    def main_float_expr(self, ty: Ty, scope: list[Var], d: int) -> str:
        t = ty.name
        zc = "zcf" if ty.base == "float" else "zcd"

        def e(x: Ty = ty) -> str:
            return self.expr(x, scope, d)

        r = self.rng.random()
        if r < 0.35:
            return f"({e()} {self.pick(('+', '-', '*', '/'))} {e()})"
        if r < 0.5:
            f = self.pick(("sqrt", "fabs", "floor", "ceil", "trunc", "rint", "round", "-"))
            if f in ROUNDERS and "pocl_rint" in self.workarounds:
                f = self.rint_workaround(ty, f)
            return f"{f}({e()})"
        if r < 0.58:
            return f"fma({e()}, {e()}, {e()})"
        if r < 0.65:
            f = self.pick(("fmin", "fmax"))
            inner = f"{f}({e()}, {e()})"
            if ty.n == 1:
                return f"{zc}({inner})"
            # a vector: map -0 to +0 lane by lane
            return f"(({t})(0) + {inner})"
        if r < 0.7 and ty.n == 1:
            return f"ldexp({e()}, {self.rng.randint(-40, 40)})"
        if r < 0.74:
            return f"fmod({e()}, {e()})"
        if r < 0.88:
            return self.conversion(ty, scope, d)
        if r < 0.95:
            return self.select_expr(ty, scope, d)
        if ty.n > 1:
            n = ty.n
            src = Ty(ty.base, self.pick(FLOAT_VEC_WIDTHS))
            comps = "s" + "".join(f"{self.rng.randrange(src.n):x}" for _ in range(n))
            return f"({self.expr(src, scope, d)}).{comps}"
        return self.call_helper(ty, scope, d)

    def abs_name(self, f: str, src: Ty) -> str:
        """``abs``/``abs_diff``, or for PoCL a helper doing the same: PoCL 3.1 folds
        ``abs(INT_MIN)`` and ``abs_diff(INT_MIN, INT_MAX)`` to 0 and makes a kernel with
        ``abs(LONG_MIN)`` store nothing (its int and long versions overflow)."""
        if "pocl_abs" not in self.workarounds or src.bits < 32 or not signed(src.base):
            return f
        t, u = src.name, src.with_base(unsigned_of(src.base)).name
        name = f"{f}_ref_{t}"
        if f == "abs":
            body = (
                f"return select(as_{u}(x), -as_{u}(x), x < ({t})0);"
                if src.n > 1
                else f"return x < 0 ? ({u})0 - ({u})x : ({u})x;"
            )
            return self.define(name, f"static {u} {name}({t} x) {{ {body} }}")
        body = (
            f"return select(as_{u}(y) - as_{u}(x), as_{u}(x) - as_{u}(y), x > y);"
            if src.n > 1
            else f"return x > y ? ({u})x - ({u})y : ({u})y - ({u})x;"
        )
        return self.define(name, f"static {u} {name}({t} x, {t} y) {{ {body} }}")

    def rint_workaround(self, ty: Ty, f: str = "rint") -> str:
        """rint/floor/ceil/trunc/round that PoCL 3.1 gets right: it miscompiles ``rint``
        of a constant of magnitude 2^31 or more and ``floor`` of a constant NaN (the
        kernel stores nothing, or 0). Every float of magnitude 2^23 (2^52 for double) or
        more is an integer, and NaN and infinities are their own rounding, so such
        values skip the call."""
        s = "f" if ty.base == "float" else ""
        name = f"{f}_ref_{ty.name}"
        if ty.n == 1:
            big = "0x1p23f" if s else "0x1p52"
            return self.define(
                name,
                f"static {ty.name} {name}({ty.name} x) {{\n"
                f"    if (!(fabs(x) < {big})) return x;\n    return {f}(x);\n}}",
            )
        one = self.rint_workaround(Ty(ty.base), f)
        comps = ", ".join(f"{one}(x.s{i:x})" for i in range(ty.n))
        return self.define(
            name, f"static {ty.name} {name}({ty.name} x) {{ return ({ty.name})({comps}); }}"
        )

    def sat_round_workaround(self, dst: Ty, src: Ty, mode: str) -> str:
        """convert_<int>_sat_<rte|rtp|rtn>(float) that PoCL 3.1 gets right: it
        miscompiles them for a constant out of the integer's range (the kernel stores
        nothing), like rint. From 2^23 (2^52) on every float is an integer, so the
        rounding mode does not matter there and the conversion is done with _rtz."""
        name = f"cvt_ref_{dst.name}_sat{mode}_{src.name}"
        if dst.n == 1:
            big = "0x1p23f" if src.base == "float" else "0x1p52"
            return self.define(
                name,
                f"static {dst.name} {name}({src.name} x) {{\n"
                f"    if (!(fabs(x) < {big})) return convert_{dst.name}_sat(x);\n"
                f"    return convert_{dst.name}_sat{mode}(x);\n}}",
            )
        one = self.sat_round_workaround(Ty(dst.base), Ty(src.base), mode)
        comps = ", ".join(f"{one}(x.s{i:x})" for i in range(dst.n))
        return self.define(
            name, f"static {dst.name} {name}({src.name} x) {{ return ({dst.name})({comps}); }}"
        )

    # helpers -------------------------------------------------------------------
    def call_helper(self, ty: Ty, scope: list[Var], d: int) -> str:
        helpers = [h for h in self.kernel_helpers if h[1] == ty]
        if not helpers:
            return self.leaf(ty, scope)
        name, _, params = self.pick(helpers)
        return f"{name}({', '.join(['in'] + [self.expr(p, scope, d) for p in params])})"

    def make_helper(self, kname: str) -> str:
        ret = self.rand_type()
        params = [self.rand_type(allow_vec=self.chance(0.3)) for _ in range(self.rng.randint(1, 3))]
        name = self.fresh(f"{kname}_f")
        scope = [Var(f"p{i}", p) for i, p in enumerate(params)]
        lines = [
            "    const uint gid = get_global_id(0), lid = get_local_id(0), grp = get_group_id(0);"
        ]
        self.block(lines, scope, 1, uniform=False, in_loop=None, indent=1, pure=True)
        lines.append(f"    return {self.expr(ret, scope, 3)};")
        attr = "__attribute__((noinline)) " if self.chance(0.4) else ""
        sig = ", ".join(
            ["__global const uint *in"] + [f"{p.name} p{i}" for i, p in enumerate(params)]
        )
        self.kernel_helpers.append((name, ret, params))
        return f"static {attr}{ret.name} {name}({sig})\n{{\n" + "\n".join(lines) + "\n}\n"

    def make_barrier_helper(self, kname: str, lm_ty: Ty, wg: int) -> str:
        """A helper with barriers, called from several sites (issue 12 item 1)."""
        name = self.fresh(f"{kname}_sync")
        if "barrier_helper" in self.workarounds:
            attr = "inline __attribute__((always_inline))"
        else:
            attr = "__attribute__((noinline))"
        self.barrier_helpers.append(name)
        t = lm_ty.name
        return (
            f"static {attr} {t} {name}(__local {t} *lm, {t} v, uint lid, uint off)\n{{\n"
            f"    barrier(CLK_LOCAL_MEM_FENCE);\n"
            f"    lm[lid] = v;\n"
            f"    barrier(CLK_LOCAL_MEM_FENCE);\n"
            f"    return lm[(lid + off) % {wg}U];\n}}\n"
        )

    # ------------------------------------------------------------- statements
    def observe(self, v: Var) -> str:
        ty = v.ty
        comps = [v.name] if ty.n == 1 else [f"{v.name}.s{i:x}" for i in range(ty.n)]
        if v.kind == "array":
            comps = [f"{v.name}[{i}]" for i in range(v.size)]
            if ty.n > 1:
                comps = [f"{c}.s{j:x}" for c in comps for j in range(ty.n)]
        out = []
        for c in comps:
            if ty.base == "float":
                c = f"fbits({c})"
            elif ty.base == "double":
                c = f"dbits({c})"
            out.append(f"h = hmix(h, (ulong){c});")
        return " ".join(out)

    def block(
        self,
        lines: list[str],
        scope: list[Var],
        depth: int,
        uniform: bool,
        in_loop: str | None,
        indent: int,
        pure: bool = False,
    ) -> None:
        pad = "    " * indent
        declared: list[Var] = []
        local_scope = list(scope)
        for _ in range(self.rng.randint(1, self.stmts)):
            r = self.rng.random()
            assignable = [v for v in local_scope if v.kind in ("var", "array")]
            if r < 0.3 or not assignable:
                ty = self.rand_type()
                v = Var(self.fresh("v"), ty)
                lines.append(f"{pad}{ty.name} {v.name} = {self.expr(ty, local_scope, self.depth)};")
                local_scope.append(v)
                declared.append(v)
            elif r < 0.45:
                v = self.pick(assignable)
                if v.kind == "array":
                    idx = f"{self.index_expr(local_scope)} & {v.size - 1}U"
                    lines.append(f"{pad}{v.name}[{idx}] = {self.expr(v.ty, local_scope, 2)};")
                else:
                    lines.append(f"{pad}{v.name} = {self.expr(v.ty, local_scope, self.depth)};")
            elif r < 0.52 and not pure:
                lines.append(pad + self.observe(self.pick(assignable)))
            elif r < 0.6 and depth > 0:
                # an if on a uniform condition keeps barriers legal in its branches
                uni = uniform and self.chance(0.4)
                cond = self.uniform_condition() if uni else self.condition(local_scope, 2)
                lines.append(f"{pad}if ({cond}) {{")
                self.block(lines, local_scope, depth - 1, uni, in_loop, indent + 1, pure)
                if self.chance(0.5):
                    lines.append(f"{pad}}} else {{")
                    self.block(lines, local_scope, depth - 1, uni, in_loop, indent + 1, pure)
                lines.append(f"{pad}}}")
            elif r < 0.7 and depth > 0:
                self.loop(lines, local_scope, depth, uniform, indent, pure)
            elif r < 0.78 and depth > 0:
                self.switch(lines, local_scope, depth, in_loop, indent, pure)
            elif r < 0.84:
                ty = self.rand_type(allow_vec=self.chance(0.2))
                size = self.pick((2, 4, 8, 16))
                a = Var(self.fresh("a"), ty, "array", size)
                q = self.fresh("q")
                qv = Var(q, Ty("int"), "loop")
                lines.append(f"{pad}{ty.name} {a.name}[{size}];")
                lines.append(f"{pad}for (int {q} = 0; {q} < {size}; {q}++)")
                lines.append(f"{pad}    {a.name}[{q}] = {self.expr(ty, local_scope + [qv], 2)};")
                local_scope.append(a)
                declared.append(a)
            elif r < 0.9 and in_loop == "divergent":
                # only in a loop whose body is not work-group uniform: a break there can
                # never skip a barrier
                jump = self.pick(("break", "continue"))
                lines.append(f"{pad}if ({self.condition(local_scope, 1)}) {jump};")
            elif r < 0.95 and not pure and uniform and self.lm is not None:
                self.local_exchange(lines, local_scope, indent, declared)
            elif not pure:
                self.atomic(lines, local_scope, indent, uniform)
            if uniform and not pure and self.one_d and self.third.random() < 0.05:
                with self.third_stream():
                    self.global_exchange(lines, local_scope, pad)
            if self.side.random() < 0.15:
                with self.side_stream():
                    self.component_write(lines, local_scope, pad)
            if self.third.random() < 0.1:
                with self.third_stream():
                    self.compound_assign(lines, local_scope, pad)
            if self.third.random() < 0.05:
                with self.third_stream():
                    self.struct_statement(lines, local_scope, pad, pure)
            if self.third.random() < 0.04:
                with self.third_stream():
                    self.half_round_trip(lines, local_scope, pad, pure)
            if not pure and self.third.random() < 0.06:
                with self.third_stream():
                    self.pointer_statement(lines, local_scope, pad)
            if not pure and self.fourth.random() < 0.06:
                with self.fourth_stream():
                    self.math_out_statement(lines, local_scope, pad)
        if not pure:
            for v in declared:
                if self.chance(0.7):
                    lines.append(pad + self.observe(v))

    def compound_assign(self, lines: list[str], scope: list[Var], pad: str) -> None:
        """``v op= e``, ``v++``, ``--v`` on a variable, an array element or a vector's
        components, where OpenCL defines the result for every value: wrapping unsigned
        types, ``char``/``short`` scalars (computed in ``int``, converted back), bitwise
        operators and ``>>`` for every integer type, ``+ - * /`` for floats."""
        cands = [v for v in scope if v.kind in ("var", "array")]
        if not cands:
            return
        v = self.pick(cands)
        ty, target = v.ty, v.name
        if v.kind == "array":
            target = f"{v.name}[{self.index_expr(scope)} & {v.size - 1}U]"
        if ty.n > 1 and self.chance(0.3):
            k = self.pick([w for w in (1, 2, 3, 4) if w <= ty.n])
            target += ".s" + "".join(f"{c:x}" for c in self.rng.sample(range(ty.n), k))
            ty = Ty(ty.base, k)
        self.features.add("compound_assign")
        if ty.is_float:
            if ty.n == 1 and self.chance(0.2):  # ++ and -- are not defined on float vectors
                lines.append(f"{pad}{self.pick(('++', '--'))}{target};")
                return
            op = self.pick(("+", "-", "*", "/"))
            lines.append(f"{pad}{target} {op}= {self.expr(ty, scope, 2)};")
            return
        b = ty.base
        wraps = not signed(b) or (ty.n == 1 and ty.bits < 32)
        if wraps and self.chance(0.25):
            inc = self.pick(("++", "--"))
            lines.append(f"{pad}{target}{inc};" if self.chance(0.5) else f"{pad}{inc}{target};")
            return
        ops = ["&", "|", "^", ">>"]
        if wraps:
            ops += ["+", "-", "*"] + (["<<"] if not signed(b) else [])
            if ty.n == 1 and b == "ushort":
                ops.remove("*")  # promoted to int: 65535 * 65535 overflows
        op = self.pick(ops)
        if op in ("<<", ">>"):  # any count: OpenCL masks it
            count = self.expr(Ty(self.pick(("uint", "int", "uchar"))), scope, 1)
            if ty.n > 1:
                count = f"({ty.name})({count})"
            lines.append(f"{pad}{target} {op}= {count};")
            return
        lines.append(f"{pad}{target} {op}= {self.expr(ty, scope, 2)};")

    def half_round_trip(self, lines, scope, pad, pure) -> None:
        """``vstore_half[N][_rte|_rtz|_rtp|_rtn]`` of a float or double value into private
        storage, read back with ``vload_halfN`` as floats (correctly rounded conversions:
        exact; only the floats are observed, so a NaN's half payload never is)."""
        self.features.add("half")
        n = self.pick((1, 2, 4, 8))
        src = Ty(self.pick(("float", "float", "double")), n)
        if src.base == "double" and n > 4:
            src = Ty("double", 4)
            n = 4
        buf, v = self.fresh("hb"), Var(self.fresh("hv"), Ty("float", n))
        suffix = "" if n == 1 else str(n)
        mode = self.pick(ROUNDINGS)
        value = self.expr(src, scope, 2)
        lines.append(f"{pad}ushort {buf}[16];")
        slot = self.rng.randrange(16 // n)
        lines.append(f"{pad}vstore_half{suffix}{mode}({value}, {slot}U, (__private half *){buf});")
        lines.append(
            f"{pad}{v.ty.name} {v.name} = vload_half{suffix}({slot}U, (__private half *){buf});"
        )
        if not pure:  # (not in the block's declarations: observing those draws main-stream)
            lines.append(pad + self.observe(v))

    def math_out_statement(self, lines: list[str], scope: list[Var], pad: str) -> None:
        """An exact math built-in (OpenCL C 3.0 7.4: 0 ulp), most with a result through a
        pointer: ``frexp``, ``modf``, ``fract``, ``remquo`` (the pointer to a private
        variable, a private array element at a computed index, or the work-item's own slot
        of a ``__local`` array; sometimes passed through a helper, some ``noinline``), and
        ``ilogb``, ``logb``, ``nextafter``, ``fdim``, ``remainder``, ``maxmag``,
        ``minmag``; scalars and vectors of float and double. What the spec leaves open is
        not observed: frexp's exponent of an infinity or NaN, ilogb's FP_ILOGB0 and
        FP_ILOGBNAN, remquo's quotient beyond its sign and seven low bits (and where the
        result is NaN), the sign of a zero from maxmag/minmag's fmax/fmin tie."""
        self.features.add("exact_math")
        ty = Ty(self.pick(("float", "float", "double")), self.pick((1, 1, 2, 3, 4)))
        n, t = ty.n, ty.name
        f = self.pick(("frexp", "modf", "fract", "remquo", "frexp", "remquo", "ilogb", "logb",
                       "nextafter", "fdim", "remainder", "maxmag", "minmag"))  # fmt: skip
        lanes = [""] if n == 1 else [f".s{i:x}" for i in range(n)]
        x, r = self.fresh("mx"), self.fresh("mr")
        lines.append(f"{pad}{t} {x} = {self.expr(ty, scope, 2)};")
        hashed: list[str] = []  # ulong expressions the statement folds into the hash

        def fl(e: str) -> str:
            return f"fbits({e})" if ty.base == "float" else f"dbits({e})"

        if f in ("frexp", "modf", "fract", "remquo"):
            oty = Ty("int", n) if f in ("frexp", "remquo") else ty
            o = self.fresh("mo")
            args = [x] + ([self.fresh("my")] if f == "remquo" else [])
            if f == "remquo":
                lines.append(f"{pad}{t} {args[1]} = {self.expr(ty, scope, 2)};")
            where = self.pick(("var", "array", "local"))
            space = "__local" if where == "local" else "__private"
            if where == "var":
                lines.append(f"{pad}{oty.name} {o};")
                ptr, read = f"&{o}", o
            elif where == "array":
                k, q = self.fresh("mk"), self.fresh("mq")
                lines.append(f"{pad}{oty.name} {o}[4];")
                lines.append(f"{pad}for (int {q} = 0; {q} < 4; {q}++) {o}[{q}] = ({oty.name})(0);")
                lines.append(f"{pad}uint {k} = ({self.index_expr(scope)}) & 3U;")
                ptr = self.pick((f"&{o}[{k}]", f"{o} + {k}"))
                read = f"{o}[{k}]"
            else:
                o = f"mo_{oty.name}"
                decl = f"__local {oty.name} {o}[{self.wg}];"
                if decl not in self.local_decls:
                    self.local_decls.append(decl)
                ptr, read = f"&{o}[lid]", f"{o}[lid]"
            call = f
            # (drawn whatever the spelling: a workaround must not move the stream)
            via_helper, noinline = self.chance(0.3), self.chance(0.5)
            if f == "fract" and "pocl_fract" in self.workarounds:
                call = self.fract_workaround(ty, space)
            elif f == "modf" and "pocl_modf" in self.workarounds:
                call = self.modf_workaround(ty, space)
            elif via_helper:  # through a helper taking the pointer
                call = self.math_out_helper(f, ty, oty, space, noinline)
            lines.append(f"{pad}{t} {r} = {call}({', '.join(args)}, {ptr});")
            got = self.fresh("mg")
            lines.append(f"{pad}{oty.name} {got} = {read};")
            for ln in lanes:
                hashed.append(fl(r + ln))
                if f == "frexp":
                    hashed.append(f"(isfinite({x}{ln}) ? (uint){got}{ln} : 0U)")
                elif f == "remquo":
                    q = f"{got}{ln}"
                    low = f"((({q}) < 0 ? 0U - (uint)({q}) : (uint)({q})) & 127U)"
                    hashed.append(f"(isnan({r}{ln}) ? 0U : ({q} < 0 ? 0U - {low} : {low}))")
                else:
                    hashed.append(fl(got + ln))
        elif f in ("ilogb", "logb"):
            rty = Ty("int", n) if f == "ilogb" else ty
            lines.append(f"{pad}{rty.name} {r} = {f}({x});")
            for ln in lanes:
                if f == "logb":
                    hashed.append(fl(r + ln))
                else:  # FP_ILOGB0 and FP_ILOGBNAN are the implementation's
                    hashed.append(f"(({x}{ln} == 0 || isnan({x}{ln})) ? 0U : (uint){r}{ln})")
        else:
            y = self.expr(ty, scope, 2)
            value = f"{f}({x}, {y})"
            if f in ("maxmag", "minmag"):  # an fmax/fmin tie of -0 and +0: either zero
                value = f"zc{ty.base[0]}({value})" if n == 1 else f"(({t})(0) + {value})"
            lines.append(f"{pad}{t} {r} = {value};")
            hashed += [fl(r + ln) for ln in lanes]
        lines.append(pad + " ".join(f"h = hmix(h, (ulong){e});" for e in hashed))

    def math_out_helper(self, f: str, ty: Ty, oty: Ty, space: str, noinline: bool) -> str:
        """``T name(T x[, T y], space OT *p)`` calling the built-in (some ``noinline``)."""
        name = f"m_{f}_{ty.name}_{space[2]}{'_ni' if noinline else ''}"
        two = f == "remquo"
        params = f"{ty.name} x{f', {ty.name} y' if two else ''}, {space} {oty.name} *p"
        attr = "__attribute__((noinline)) " if noinline else ""
        body = f"return {f}(x{', y' if two else ''}, p);"
        return self.define(name, f"static {attr}{ty.name} {name}({params}) {{ {body} }}")

    def fract_workaround(self, ty: Ty, space: str) -> str:
        """``fract`` for PoCL 3.1, which returns +0 for -0 and -inf (OpenCL C 3.0 7.5.1:
        ``fract(-0)`` is -0 and ``fract(-inf)`` -0, the zero keeping x's sign)."""
        t = ty.name
        name = f"fract_ref_{t}_{space[2]}"
        if ty.n == 1:
            fix = f"(x == 0 || isinf(x)) ? copysign(({t})0, x) : r"
        else:
            fix = f"select(r, copysign(({t})(0), x), (x == ({t})(0)) | isinf(x))"
        return self.define(
            name,
            f"static {t} {name}({t} x, {space} {t} *p) {{ {t} r = fract(x, p); return {fix}; }}",
        )

    def modf_workaround(self, ty: Ty, space: str) -> str:
        """``modf`` for PoCL 3.1, which makes a kernel store nothing (neither the result
        nor ``*iptr``) for ``modf`` of a constant NaN: NaN lanes skip the call (both parts
        of modf(NaN) are NaN), as ``rint_workaround`` does for ``floor``."""
        t = ty.name
        name = f"modf_ref_{t}_{space[2]}"
        if ty.n == 1:
            return self.define(
                name,
                f"static {t} {name}({t} x, {space} {t} *p) {{\n"
                f"    if (isnan(x)) {{ *p = x; return x; }}\n    return modf(x, p);\n}}",
            )
        one = self.modf_workaround(Ty(ty.base), "__private")
        lanes = range(ty.n)
        parts = ", ".join(f"{one}(x.s{i:x}, &w[{i}])" for i in lanes)
        whole = ", ".join(f"w[{i}]" for i in lanes)
        return self.define(
            name,
            f"static {t} {name}({t} x, {space} {t} *p) {{\n"
            f"    {ty.base} w[{ty.n}];\n    {t} r = ({t})({parts});\n"
            f"    *p = ({t})({whole});\n    return r;\n}}",
        )

    def pointer_statement(self, lines: list[str], scope: list[Var], pad: str) -> None:
        """Private pointers as real kernels use them (PoCL 3.1 has no generic address
        space, so every pointer is ``__private``): one into an array at a masked offset,
        read and written through with an index; a pointer chosen between two variables by
        a condition; a ``for`` loop walking an array by pointer up to its end; a helper
        updating ``n`` elements through a pointer argument; a vector's components read and
        written as an array of its element type. Every access stays in bounds and every
        element read was written before."""
        arrays = [v for v in scope if v.kind == "array"]
        scalars = [v for v in scope if v.kind == "var"]
        vecs = [v for v in scalars if v.ty.n in (2, 4, 8, 16)]
        forms = ["offset", "walk", "helper"] if arrays else []
        forms += ["select"] * (len(scalars) >= 2) + ["helper_var"] * bool(scalars)
        forms += ["vector"] * bool(vecs)
        if not forms:
            return
        form = self.pick(forms)
        self.features.add("pointer")
        p = self.fresh("pp")
        if form in ("offset", "walk", "helper"):
            a = self.pick(arrays)
            t = a.ty.name
            if form == "offset":
                half = max(a.size // 2, 1)
                lines.append(
                    f"{pad}{t} *{p} = {a.name} + ({self.index_expr(scope)} & {half - 1}U);"
                )
                at = f"{self.index_expr(scope)} & {half - 1}U"
                lines.append(f"{pad}{p}[{at}] = {self.expr(a.ty, scope, 2)};")
                lines.append(
                    pad + self.observe(Var(f"{p}[{self.index_expr(scope)} & {half - 1}U]", a.ty))
                )
            elif form == "walk":
                e = self.fresh("pe")
                lines.append(
                    f"{pad}for ({t} *{p} = {a.name}, *{e} = {a.name} + {a.size}; {p} != {e}; ++{p})"
                )
                lines.append(f"{pad}    *{p} = {self.pointer_update(a.ty, f'*{p}', scope)};")
            else:
                n = self.rng.randint(1, a.size)
                off = self.rng.randint(0, a.size - n)
                value = self.expr(a.ty, scope, 2)
                lines.append(f"{pad}{self.pointer_helper(a.ty)}({a.name} + {off}, {n}U, {value});")
            lines.append(pad + self.observe(a))
            return
        if form == "select":
            v = self.pick(scalars)
            others = [w for w in scalars if w.ty == v.ty and w is not v]
            if not others:
                return
            w = self.pick(others)
            cond = self.condition(scope, 1)
            update = self.pointer_update(v.ty, f"*{p}", scope)
            if "pocl_psel" in self.workarounds:
                # PoCL 3.1 loses the store of a variable whose address such a select takes
                # (findings/pocl_bugs.cl pointer_select_in_work_group): the same update
                # without the pointer, the expression evaluated before either store.
                rest = update.removeprefix(f"*{p}")
                lines.append(f"{pad}const int {p} = ({cond});")
                lines.append(
                    f"{pad}if ({p}) {v.name} = {v.name}{rest}; else {w.name} = {w.name}{rest};"
                )
            else:
                lines.append(f"{pad}{v.ty.name} *{p} = ({cond}) ? &{v.name} : &{w.name};")
                lines.append(f"{pad}*{p} = {update};")
            lines.append(pad + self.observe(v) + " " + self.observe(w))
            return
        if form == "helper_var":
            v = self.pick(scalars)
            lines.append(
                f"{pad}{self.pointer_helper(v.ty)}(&{v.name}, 1U, {self.expr(v.ty, scope, 2)});"
            )
            lines.append(pad + self.observe(v))
            return
        v = self.pick(vecs)
        n, e = v.ty.n, Ty(v.ty.base)
        lines.append(f"{pad}{e.name} *{p} = ({e.name} *)&{v.name};")
        lines.append(f"{pad}{p}[{self.index_expr(scope)} & {n - 1}U] = {self.expr(e, scope, 2)};")
        lines.append(pad + self.observe(Var(f"{p}[{self.index_expr(scope)} & {n - 1}U]", e)))
        lines.append(pad + self.observe(v))

    def pointer_update(self, ty: Ty, old: str, scope: list[Var]) -> str:
        """A new value for ``old`` (of type ``ty``) defined for every value: ``^`` for
        integers, ``* 2 -`` for floats."""
        if ty.is_float:
            return f"{old} * ({ty.name})2 - {self.expr(ty, scope, 1)}"
        return f"{old} ^ {self.expr(ty, scope, 1)}"

    def pointer_helper(self, ty: Ty) -> str:
        """``void ptr_T(T *p, uint n, T v)``: updates ``p[0..n)`` (sometimes noinline)."""
        fn = f"ptr_{ty.name}"
        if fn in self.defs:
            return fn
        upd = "p[k] * 2 - v" if ty.is_float else "(p[k] ^ v) + (p[k] & v)"
        if not ty.is_float and signed(ty.base):  # + may overflow a signed type: keep ^
            upd = "p[k] ^ v ^ (p[k] >> 1)"
        attr = "__attribute__((noinline)) " if self.chance(0.5) else ""
        return self.define(
            fn,
            f"static {attr}void {fn}({ty.name} *p, uint n, {ty.name} v)\n{{\n"
            f"    for (uint k = 0; k < n; k++)\n        p[k] = {upd};\n}}",
        )

    def struct_type(self) -> tuple[str, list[tuple[str, Ty]]]:
        """A struct of 2-5 fields of mixed types (the batch's own, shared by its kernels)."""
        fields = []
        for j in range(self.rng.randint(2, 5)):
            ty = self.rand_type(allow_vec=self.chance(0.3))
            fields.append((f"f{j}", ty))
        name = self.fresh("S")
        body = " ".join(f"{ty.name} {f};" for f, ty in fields)
        self.define(name, f"typedef struct {{ {body} }} {name};")
        self.structs.append((name, fields))
        return name, fields

    def struct_helper(self, name: str, fields: list[tuple[str, Ty]]) -> str:
        """A function taking and returning the struct by value (sometimes noinline)."""
        fn = f"smix_{name}"
        if fn in self.defs:
            return fn
        lines = []
        for f, ty in fields:
            if ty.is_float:
                lines.append(f"    s.{f} = s.{f} * ({ty.name})2 + ({ty.name})k;")
            else:
                lines.append(f"    s.{f} ^= ({ty.name})(k * 2654435761U);")
        attr = "__attribute__((noinline)) " if self.chance(0.5) else ""
        return self.define(
            fn,
            f"static {attr}{name} {fn}({name} s, uint k)\n{{\n"
            + "\n".join(lines)
            + "\n    return s;\n}",
        )

    def struct_statement(self, lines: list[str], scope: list[Var], pad: str, pure: bool) -> None:
        """A private struct (or an array of two) filled from expressions, copied, passed to
        and returned from a helper by value, some fields rewritten; its fields observed."""
        if self.sarg and not pure and self.chance(0.5):
            name, fields = self.sarg
        elif self.structs and self.chance(0.6):
            name, fields = self.pick(self.structs)
        else:
            name, fields = self.struct_type()
        self.features.add("struct")
        s = self.fresh("st")
        if (name, fields) == self.sarg and not pure:
            lines.append(f"{pad}{name} {s} = sarg;")
        elif self.chance(0.4):
            arr = self.fresh("sa")
            lines.append(f"{pad}{name} {arr}[2];")
            for k in range(2):
                for f, ty in fields:
                    lines.append(f"{pad}{arr}[{k}].{f} = {self.expr(ty, scope, 2)};")
            lines.append(f"{pad}{name} {s} = {arr}[{self.index_expr(scope)} & 1U];")
        else:
            init = ", ".join(self.expr(ty, scope, 2) for _, ty in fields)
            lines.append(f"{pad}{name} {s} = {{ {init} }};")
        if self.chance(0.6):
            lines.append(f"{pad}{s} = {self.struct_helper(name, fields)}({s}, gid);")
        f, ty = self.pick(fields)
        lines.append(f"{pad}{s}.{f} = {self.expr(ty, scope, 2)};")
        if not pure:
            for f, ty in fields:
                lines.append(pad + self.observe(Var(f"{s}.{f}", ty)))
        else:  # a helper observes nothing: fold the struct into a variable it returns
            ints = [v for v in scope if v.kind == "var" and v.ty == Ty("ulong")]
            if ints:
                obs = " ^ ".join(
                    f"(ulong){s}.{f}" for f, ty in fields if ty.n == 1 and not ty.is_float
                )
                if obs:
                    lines.append(f"{pad}{self.pick(ints).name} ^= {obs};")

    def uniform_condition(self) -> str:
        r = self.rng.random()
        if r < 0.4:
            return f"(grp & {self.rng.randint(1, 3)}U) != 0"
        if r < 0.8:
            word, mask = self.rng.randrange(IN_WORDS), self.rng.randint(1, 15)
            return f"(in[{word}] & {mask}U) > {self.rng.randint(0, 8)}U"
        return self.pick(("1", "0"))

    def loop(self, lines, scope, depth, uniform, indent, pure) -> None:
        pad = "    " * indent
        i = self.fresh("i")
        lv = Var(i, Ty("int"), "loop")
        if self.chance(0.5):
            bound = str(self.rng.randint(0, 6))
            body_uniform = uniform
        else:
            bound = f"(int)(in[{self.in_index()}] % 5U)"
            body_uniform = False
        is_while = self.chance(0.3)
        # a do-while (the body runs at least once, `continue` jumps to the test)
        do_while = self.third.random() < 0.25
        rotated = False
        counted = False
        if not bound.isdigit():
            self.features.add("divergent_loop")  # see "pocl_loop" below
            # PoCL 3.1 runs a loop with an input-dependent trip count at least once when the
            # kernel has a barrier after it (findings/pocl_bugs.cl loop_before_barrier); a
            # guarded do-while is the same loop (`continue` still steps, then tests), which
            # PoCL gets right where a while or for loop is wrong, but not always: a
            # do-while with a varying trip count is wrong too where a barrier follows it or
            # the kernel has one and its body holds a loop (pocl_bugs.cl
            # do_while_before_barrier, do_while_inner_loop_barrier): "pocl_dowhile" below.
            rotated = "pocl_loop" in self.workarounds
            # PoCL's reference copy of a varying do-while: a loop of as many trips as the
            # bound can reach (`% 5U`: 4), all work-items alike, whose body runs while the
            # do-while would still run: the first trip always, then while `i < bound`
            # (the test of the do-while after its body; `continue` steps to it, `break`
            # leaves both; the bound reads only `in`, so it is the same at every test).
            counted = do_while and "pocl_dowhile" in self.workarounds
        if counted:
            assert bound.endswith(" % 5U)"), bound
            self.features.add("do_while")
            lines.append(f"{pad}{{ int {i} = 0;")
            lines.append(f"{pad}for (int {i}t = 0; {i}t < 4; {i}t++) if ({i} < max({bound}, 1)) {{")
            lines.append(f"{pad}    {i}++;")
        elif do_while:
            self.features.add("do_while")
            lines.append(f"{pad}{{ int {i} = 0;")
            lines.append(f"{pad}do {{")
            lines.append(f"{pad}    {i}++;")
        elif rotated and is_while:  # as many lines as the plain spellings (test_fuzz checks)
            lines.append(f"{pad}{{ int {i} = 0;")
            lines.append(f"{pad}if ({i} < {bound}) do {{")
            lines.append(f"{pad}    {i}++;")
        elif rotated:
            lines.append(f"{pad}{{ int {i} = 0; if ({i} < {bound}) do {{")
        elif is_while:
            # a while loop whose counter is stepped first, so `continue` cannot skip it
            lines.append(f"{pad}{{ int {i} = 0;")
            lines.append(f"{pad}while ({i} < {bound}) {{")
            lines.append(f"{pad}    {i}++;")
        else:
            lines.append(f"{pad}for (int {i} = 0; {i} < {bound}; {i}++) {{")
        loop_kind = "uniform" if body_uniform else "divergent"
        self.block(lines, scope + [lv], depth - 1, body_uniform, loop_kind, indent + 1, pure)
        if counted:
            lines.append(f"{pad}}} }}")
        elif do_while:
            lines.append(f"{pad}}} while ({i} < {bound}); }}")
        elif rotated:
            step = "" if is_while else "++"
            lines.append(f"{pad}}} while ({step}{i} < {bound}); }}")
        else:
            lines.append(f"{pad}}}" + (" }" if is_while else ""))

    def switch(self, lines, scope, depth, in_loop, indent, pure) -> None:
        pad = "    " * indent
        base = self.pick(INT_BASES)
        sel = self.expr(Ty(base), scope, 2)
        lo, hi = int_range(base)
        n = self.rng.randint(1, 6)
        if self.chance(0.5):  # dense: consecutive labels from a small start
            start = self.rng.randint(max(lo, -3), 3) if signed(base) else self.rng.randint(0, 3)
            labels = list(range(start, start + n))
            sel = f"({base})({sel} % {int_literal(base, n + 2) if BITS[base] >= 32 else n + 2})"
            if BITS[base] < 32:
                sel = f"(({base})((int){sel}))"
        else:  # sparse
            labels = sorted({self.int_value(base) for _ in range(n)})
        self.features.add("switch")
        lines.append(f"{pad}switch ({sel}) {{")
        k = 0
        while k < len(labels):
            group = labels[k : k + self.rng.randint(1, 2)]
            k += len(group)
            for lab in group:
                lines.append(f"{pad}case {int_literal(base, lab)}:")
            # braces: a declaration cannot follow a label, nor may a jump skip one
            lines.append(f"{pad}  {{")
            self.block(lines, scope, depth - 1, False, in_loop, indent + 1, pure)
            lines.append(f"{pad}  }}")
            if self.chance(0.7):
                lines.append(f"{pad}    break;")
        if self.chance(0.6):
            lines.append(f"{pad}default: {{")
            self.block(lines, scope, depth - 1, False, in_loop, indent + 1, pure)
            lines.append(f"{pad}  }}")
        lines.append(f"{pad}}}")

    def local_exchange(self, lines, scope, indent, declared, helper: str | None = None) -> None:
        """Work-items exchange values through __local memory (uniform control flow only)."""
        pad = "    " * indent
        lm_ty, wg = self.lm
        v = Var(self.fresh("x"), lm_ty)
        value = self.expr(lm_ty, scope, 2)
        # drawn for the main stream's group size, whatever the side stream made it
        main_wg = self.main_wg
        off = self.rng.randint(1, main_wg - 1) if main_wg > 1 else 0
        off = 1 + (off - 1) % (wg - 1) if wg > 1 else 0
        self.features.add("local")
        if helper or (self.barrier_helpers and self.chance(0.6)):
            fn = helper or self.pick(self.barrier_helpers)
            self.barrier_calls[fn] = self.barrier_calls.get(fn, 0) + 1
            self.features.add("barrier_helper")
            lines.append(f"{pad}{lm_ty.name} {v.name} = {fn}(lm, {value}, lid, {off}U);")
        else:
            lines.append(f"{pad}barrier(CLK_LOCAL_MEM_FENCE);")
            lines.append(f"{pad}lm[lid] = {value};")
            lines.append(f"{pad}barrier(CLK_LOCAL_MEM_FENCE);")
            idx = self.pick((f"(lid + {off}U) % {wg}U", f"{wg - 1}U - lid"))
            with self.side_stream():
                self.local_rewrite(lines, scope, pad, off)
            lines.append(f"{pad}{lm_ty.name} {v.name} = lm[{idx}];")
        scope.append(v)
        declared.append(v)

    def global_exchange(self, lines: list[str], scope: list[Var], pad: str) -> None:
        """Work-items of a group exchange values through global memory: each writes its
        own ``out`` slot of this segment (overwritten by the hash at the segment's end),
        ``barrier(CLK_GLOBAL_MEM_FENCE)``, reads another's. Only in uniform control flow
        and one-dimensional NDRanges (where a group's ``gid``s are consecutive)."""
        self.features.add("global_exchange")
        j, nseg = self.segment
        wg = self.wg
        off = self.rng.randint(1, wg - 1) if wg > 1 else 0
        x = self.fresh("gx")
        lines.append(f"{pad}out[gid * {nseg}U + {j}U] = {self.expr(Ty('ulong'), scope, 2)};")
        lines.append(f"{pad}barrier(CLK_GLOBAL_MEM_FENCE);")
        lines.append(
            f"{pad}ulong {x} = out[(gid - lid + (lid + {off}U) % {wg}U) * {nseg}U + {j}U];"
        )
        lines.append(f"{pad}barrier(CLK_GLOBAL_MEM_FENCE);")
        lines.append(f"{pad}h = hmix(h, {x});")

    def local_rewrite(self, lines, scope, pad, off) -> None:
        """Between the write of ``lm`` and its read: nothing, a tree reduction (a loop with
        a barrier, some work-items idle at each step) or a rewrite of some slots by the
        work-items a divergent condition picks (each slot by one work-item)."""
        lm_ty, wg = self.lm
        r = self.rng.random()
        if r < 0.4:
            s = self.fresh("s")
            if lm_ty.is_float:
                comb = f"lm[lid] + lm[lid + {s}]"
            elif self.chance(0.5):
                comb = f"lm[lid] {self.pick(('^', '|', '&'))} lm[lid + {s}]"
            else:
                comb = f"{self.pick(('max', 'min'))}(lm[lid], lm[lid + {s}])"
            self.features.add("local_reduction")
            lines.append(f"{pad}for (uint {s} = 1U; {s} < {wg}U; {s} <<= 1) {{")
            lines.append(
                f"{pad}    if ((lid & (2U * {s} - 1U)) == 0U && lid + {s} < {wg}U) "
                f"lm[lid] = ({lm_ty.name})({comb});"
            )
            lines.append(f"{pad}    barrier(CLK_LOCAL_MEM_FENCE);")
            lines.append(f"{pad}}}")
        elif r < 0.7:
            self.features.add("local_divergent_store")
            cond = self.condition(scope, 1)
            value = self.expr(lm_ty, scope, 2)
            lines.append(f"{pad}if ({cond}) lm[(lid + {off}U) % {wg}U] = {value};")
            lines.append(f"{pad}barrier(CLK_LOCAL_MEM_FENCE);")

    def atomic(self, lines, scope, indent, uniform) -> None:
        pad = "    " * indent
        if uniform and self.chance(0.5):
            # __local atomics: initialize, combine, read back the deterministic total
            self.features.add("local_atomic")
            t = self.pick(("int", "uint"))
            op = self.pick(("add", "sub", "min", "max", "and", "or", "xor", "inc", "dec"))
            slot = "la" if t == "int" else "lu"
            init = self.int_value(t)
            arg = "" if op in ("inc", "dec") else f", {self.expr(Ty(t), scope, 2)}"
            cond = self.condition(scope, 1) if self.chance(0.4) else None
            call = f"atomic_{op}(&{slot}[0]{arg});"
            if op in CAS_OPS and self.third.random() < 0.4:
                with self.third_stream():
                    call = self.cas_loop(f"&{slot}[0]", t, op, arg[2:])
            lines.append(f"{pad}barrier(CLK_LOCAL_MEM_FENCE);")
            lines.append(f"{pad}if (lid == 0) {slot}[0] = {int_literal(t, init)};")
            lines.append(f"{pad}barrier(CLK_LOCAL_MEM_FENCE);")
            lines.append(f"{pad}{'if (' + cond + ') ' if cond else ''}{call}")
            lines.append(f"{pad}barrier(CLK_LOCAL_MEM_FENCE);")
            lines.append(f"{pad}h = hmix(h, (ulong){slot}[0]);")
            return
        if self.gat_next >= GAT_SLOTS:
            return
        # global atomics: one operation kind per slot, so the final value is order-free
        self.features.add("global_atomic")
        slot = self.gat_next
        self.gat_next += 1
        op = self.pick(("add", "sub", "min", "max", "and", "or", "xor", "inc", "dec"))
        arg = "" if op in ("inc", "dec") else f", {self.expr(Ty('uint'), scope, 2)}"
        call = f"atomic_{op}(&gat[grp * {GAT_SLOTS}U + {slot}U]{arg});"
        if op in CAS_OPS and self.third.random() < 0.4:
            with self.third_stream():
                call = self.cas_loop(f"&gat[grp * {GAT_SLOTS}U + {slot}U]", "uint", op, arg[2:])
        lines.append(pad + call)

    def cas_loop(self, ptr: str, t: str, op: str, value: str) -> str:
        """An atomic ``op`` written as a compare-and-swap loop (how real programs add
        floats or do what no atomic built-in does): the final value is the same in any
        order, as the built-in's is."""
        self.features.add("cas_loop")
        o, a = self.fresh("o"), self.fresh("d")
        space = "__global" if "gat" in ptr else "__local"
        read = f"atomic_or({ptr}, 0)" if self.chance(0.5) else f"*(volatile {space} {t} *)({ptr})"
        new = CAS_OPS[op].format(o=o, a=a, t=t)
        return (
            f"{{ {t} {o}, {a} = {value}; "
            f"do {o} = {read}; while (atomic_cmpxchg({ptr}, {o}, {new}) != {o}); }}"
        )

    # --------------------------------------------------------------- kernels
    def kernel(self, index: int) -> Kernel:
        wg = self.main_wg = self.pick((4, 8, 16))
        if self.side.random() < 0.35:
            # not a multiple of the CPU's vector width: full chunks and a scalar remainder
            wg = self.side.choice((6, 12, 20, 24))
        k = Kernel(f"k{index}", wg, wg * self.pick((1, 2, 4)))
        if self.side.random() < 0.3:
            # a two-dimensional NDRange: rows of work-items and rows of work-groups
            k.rows = self.side.choice([r for r in (2, 3, 4) if wg % r == 0])
            groups = k.global_size // wg
            k.group_rows = self.side.choice([r for r in (1, 2) if groups % r == 0])
        self.features: set[str] = set()
        self.wg, self.one_d = wg, k.rows == 1 and k.group_rows == 1
        self.sarg = None
        if self.third.random() < 0.2:  # a struct argument by value
            with self.third_stream():
                self.sarg = self.struct_type()
                k.struct_arg, k.struct_size = self.sarg[0], struct_size(self.sarg[1])
                self.features.add("struct_arg")
        self.local_decls = k.local_decls  # math_out_statement adds __local out slots
        self.kernel_helpers: list = []
        self.barrier_helpers: list[str] = []
        self.barrier_calls: dict[str, int] = {}
        self.gat_next = 0
        lm_base = self.pick(("uint", "int", "short", "uchar", "long", "float", "ulong"))
        self.lm = (Ty(lm_base), wg) if self.chance(0.6) else None
        if self.lm:
            k.local_decls.append(f"__local {lm_base} lm[{wg}];")
        k.local_decls.append("__local int la[1];")
        k.local_decls.append("__local uint lu[1];")
        for _ in range(self.rng.randint(0, 1)):
            k.helpers.append(self.make_helper(k.name))
        if self.lm and self.chance(0.5):
            k.helpers.append(self.make_barrier_helper(k.name, *self.lm))
        nseg = self.rng.randint(1, self.nseg)
        for j in range(nseg):
            self.segment = (j, nseg)
            lines = [f"    {{ /* segment {j} */", f"    h = {self.rng.getrandbits(32)}UL;"]
            if self.sarg:
                lines += ["    " + self.observe(Var(f"sarg.{f}", ty)) for f, ty in self.sarg[1]]
            self.block(lines, [], self.nest, True, None, 2)
            if j == nseg - 1:
                # every barrier helper is called from two sites at least (issue 12 item 1)
                for fn in self.barrier_helpers:
                    while self.barrier_calls.get(fn, 0) < 2:
                        made: list[Var] = []
                        self.local_exchange(lines, [], 2, made, helper=fn)
                        lines.append("        " + self.observe(made[0]))
            lines.append(f"    out[gid * {nseg}U + {j}U] = h;")
            lines.append("    }")
            k.segments.append("\n".join(lines))
        k.features = set(self.features)
        if any(c >= 2 for c in self.barrier_calls.values()):
            k.features.add("barrier_helper_multi")
        return k


def generate(
    seed: int, count: int, workarounds: frozenset[str] = frozenset(), size: str = "normal"
) -> Batch:
    """``count`` kernels from ``seed``; equal seeds (and sizes) give equal programs."""
    g = Generator(seed, workarounds, size)
    kernels = [g.kernel(i) for i in range(count)]
    return Batch(seed, kernels, g.defs, workarounds, size)
