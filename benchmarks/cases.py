"""The kernels of the benchmark suite: data, launch geometry, references and checks.

Each case names an OpenCL C kernel (benchmarks/kernels/<name>.cl, kernel <name>) and a C
function of the same name (benchmarks/native/<name>.c). Sizes come in three presets:
``full`` (the published figures), ``quick`` (a smoke run on a busy machine) and ``first``
(tiny, for the first-launch measurements, where compiling dominates).

Kernel arguments are described once, in ``ocl_args``: NumPy arrays for ``__global``
pointers, NumPy scalars for by-value arguments and ``Local(nbytes)`` for ``__local``
pointers; each contender turns them into what its runtime takes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from bench_lib import aligned_copy, aligned_empty

HERE = Path(__file__).resolve().parent
# The suite's own kernels, then the examples' (saxpy, stencil, mandelbrot are shared).
KERNEL_DIRS = (HERE / "kernels", HERE.parent / "examples" / "kernels")
NATIVE = HERE / "native"

Data = dict[str, np.ndarray]
Params = dict[str, int]


@dataclass(frozen=True)
class Local:
    """A ``__local`` pointer argument of ``nbytes`` bytes."""

    nbytes: int


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _uniform(rng: np.random.Generator, n: int | tuple, lo: float, hi: float) -> np.ndarray:
    return aligned_copy(rng.uniform(lo, hi, n).astype(np.float32))


def _close(name: str, got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return f"{name}: shape {got.shape}, expected {want.shape}"
    bad = ~(np.abs(got - want) <= atol + rtol * np.abs(want))  # NaN counts as bad
    if bad.any():
        i = np.flatnonzero(bad.ravel())[0]
        return (
            f"{name}: {bad.sum()} of {bad.size} values off (rtol {rtol:g}, atol {atol:g});"
            f" first at {i}: {got.ravel()[i]!r}, expected {want.ravel()[i]!r}"
        )
    return None


def _exact(name: str, got: np.ndarray, want: np.ndarray) -> str | None:
    if got.shape != want.shape:
        return f"{name}: shape {got.shape}, expected {want.shape}"
    bad = got != want
    if bad.any():
        i = np.flatnonzero(bad.ravel())[0]
        return (
            f"{name}: {bad.sum()} of {bad.size} values differ (exact check);"
            f" first at {i}: {got.ravel()[i]!r}, expected {want.ravel()[i]!r}"
        )
    return None


class Case:
    """One benchmark kernel. Subclasses fill in the data and the algorithm's variants."""

    name = ""
    sizes: dict[str, Params] = {}
    outputs: tuple[str, ...] = ()  # arrays the kernel writes, compared after a run
    zeroed: tuple[str, ...] = ()  # arrays the kernel accumulates into: zeroed before each run
    finish_reads: tuple[str, ...] = ()  # outputs the host finish (below) reads
    native_restype: object = None  # ctypes result type of the C function
    options: tuple[str, ...] = ()  # OpenCL C build options

    @property
    def source(self) -> str:
        for directory in KERNEL_DIRS:
            path = directory / f"{self.name}.cl"
            if path.exists():
                return path.read_text()
        raise FileNotFoundError(f"no {self.name}.cl in {', '.join(map(str, KERNEL_DIRS))}")

    def describe(self, p: Params) -> str:
        raise NotImplementedError

    def make_data(self, p: Params) -> Data:
        """Inputs and (allocated) outputs; the same every call."""
        raise NotImplementedError

    def ocl_args(self, d: Data, p: Params) -> list:
        raise NotImplementedError

    def ndrange(self, p: Params) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
        raise NotImplementedError

    def native_args(self, d: Data, p: Params) -> list:
        raise NotImplementedError

    def host_finish(self, outs: Data, p: Params) -> object:
        """Work the host does after the kernel (part of the timed run); None: nothing."""
        return None

    def numpy_run(self, d: Data, p: Params):
        """A NumPy version (a callable), or None where NumPy has no natural one."""
        return None

    def result(self, d: Data, returned: object) -> object:
        """What is compared: by default the outputs; ``returned`` is the run's value."""
        return tuple(d[k].copy() for k in self.outputs)

    def reference(self, d: Data, p: Params) -> object:
        raise NotImplementedError

    def compare(self, got: object, want: object) -> str | None:
        raise NotImplementedError


class Saxpy(Case):
    name = "saxpy"
    sizes = {"full": {"n": 1 << 24}, "quick": {"n": 1 << 20}, "first": {"n": 1 << 12}}
    outputs = ("y",)
    a = 2.0

    def describe(self, p):
        return f"2^{p['n'].bit_length() - 1} floats"

    def make_data(self, p):
        rng = _rng()
        return {"x": _uniform(rng, p["n"], -1, 1), "y": _uniform(rng, p["n"], -1, 1)}

    def ocl_args(self, d, p):
        return [np.float32(self.a), d["x"], d["y"], np.uint32(p["n"])]

    def ndrange(self, p):
        return (p["n"],), None

    def native_args(self, d, p):
        return [np.int64(p["n"]), np.float32(self.a), d["x"], d["y"]]

    def numpy_run(self, d, p):
        a, x, y = np.float32(self.a), d["x"], d["y"]
        scratch = np.empty_like(x)

        def run():
            np.multiply(x, a, out=scratch)
            np.add(scratch, y, out=y)

        return run

    def reference(self, d, p):
        return (self.a * d["x"].astype(np.float64) + d["y"],)

    def compare(self, got, want):
        return _close("y", got[0], want[0], 1e-6, 1e-6)


class Stencil(Case):
    name = "stencil"
    sizes = {"full": {"n": 4096}, "quick": {"n": 1024}, "first": {"n": 64}}
    outputs = ("out",)

    def describe(self, p):
        return f"{p['n']}x{p['n']} floats"

    def make_data(self, p):
        n = p["n"]
        return {"in": _uniform(_rng(), (n, n), 0, 1), "out": aligned_empty((n, n), np.float32)}

    def ocl_args(self, d, p):
        return [d["in"], d["out"], np.int32(p["n"]), np.int32(p["n"])]

    def ndrange(self, p):
        return (p["n"], p["n"]), None

    def native_args(self, d, p):
        return [d["in"], d["out"], np.int32(p["n"]), np.int32(p["n"])]

    def numpy_run(self, d, p):
        a, out = d["in"], d["out"]

        def run():
            out[0, :], out[-1, :], out[:, 0], out[:, -1] = a[0, :], a[-1, :], a[:, 0], a[:, -1]
            inner = out[1:-1, 1:-1]
            np.add(a[1:-1, :-2], a[1:-1, 2:], out=inner)
            inner += a[:-2, 1:-1] + a[2:, 1:-1]
            inner *= np.float32(0.25)

        return run

    def reference(self, d, p):
        a = d["in"].astype(np.float64)
        out = a.copy()
        out[1:-1, 1:-1] = 0.25 * ((a[1:-1, :-2] + a[1:-1, 2:]) + (a[:-2, 1:-1] + a[2:, 1:-1]))
        return (out,)

    def compare(self, got, want):
        return _close("out", got[0], want[0], 1e-6, 1e-6)


class Sgemm(Case):
    name = "sgemm"
    sizes = {"full": {"n": 1024}, "quick": {"n": 256}, "first": {"n": 64}}
    outputs = ("c",)

    def describe(self, p):
        return f"{p['n']}x{p['n']}, 16x16 tiles"

    def make_data(self, p):
        n, rng = p["n"], _rng()
        return {
            "a": _uniform(rng, (n, n), -1, 1),
            "b": _uniform(rng, (n, n), -1, 1),
            "c": aligned_empty((n, n), np.float32),
        }

    def ocl_args(self, d, p):
        return [d["a"], d["b"], d["c"], np.int32(p["n"])]

    def ndrange(self, p):
        return (p["n"], p["n"]), (16, 16)

    def native_args(self, d, p):
        return [d["a"], d["b"], d["c"], np.int32(p["n"])]

    def numpy_run(self, d, p):
        a, b, c = d["a"], d["b"], d["c"]
        return lambda: np.matmul(a, b, out=c)

    def reference(self, d, p):
        return (d["a"].astype(np.float64) @ d["b"].astype(np.float64),)

    def compare(self, got, want):
        # Sums of n products of values in [-1, 1] in single precision, in any order.
        return _close("c", got[0], want[0], 1e-4, 2e-6 * want[0].shape[0])


class Mandelbrot(Case):
    name = "mandelbrot"
    sizes = {"full": {"n": 2048}, "quick": {"n": 512}, "first": {"n": 64}}
    outputs = ("out",)
    max_iter = 256

    def describe(self, p):
        return f"{p['n']}x{p['n']}, <= {self.max_iter} iterations"

    def _view(self, p):
        n = p["n"]
        return np.float32(-2.0), np.float32(-1.25), np.float32(3.0 / n), np.float32(2.5 / n)

    def make_data(self, p):
        return {"out": aligned_empty((p["n"], p["n"]), np.int32)}

    def ocl_args(self, d, p):
        return [d["out"], *self._view(p), np.int32(self.max_iter)]

    def ndrange(self, p):
        return (p["n"], p["n"]), None

    def native_args(self, d, p):
        n = np.int32(p["n"])
        return [d["out"], n, n, *self._view(p), np.int32(self.max_iter)]

    def reference(self, d, p):
        """Escape-time counts in float32, every operation rounded as in the kernel."""
        n = p["n"]
        x0, y0, dx, dy = self._view(p)
        cr = np.broadcast_to(x0 + np.arange(n, dtype=np.float32) * dx, (n, n)).ravel()
        ci = np.repeat(y0 + np.arange(n, dtype=np.float32) * dy, n)
        counts = np.zeros(n * n, dtype=np.int32)
        live = np.arange(n * n)  # pixels still iterating
        zr = np.zeros(n * n, dtype=np.float32)
        zi = np.zeros(n * n, dtype=np.float32)
        for _ in range(self.max_iter):
            keep = zr * zr + zi * zi <= np.float32(4.0)
            live, zr, zi = live[keep], zr[keep], zi[keep]
            if not live.size:
                break
            t = zr * zr - zi * zi + cr[live]
            zi = np.float32(2.0) * zr * zi + ci[live]
            zr = t
            counts[live] += 1
        return (counts.reshape(n, n),)

    def compare(self, got, want):
        return _exact("out", got[0], want[0])


class NBody(Case):
    name = "nbody"
    sizes = {"full": {"n": 16384}, "quick": {"n": 4096}, "first": {"n": 256}}
    outputs = ("new_pos", "new_vel")
    dt, eps2, local = 0.01, 0.01, 256

    def describe(self, p):
        return f"{p['n']} bodies, 1 step"

    def make_data(self, p):
        n, rng = p["n"], _rng()
        pos = _uniform(rng, (n, 4), -1, 1)
        pos[:, 3] = rng.uniform(0.5, 1.0, n) / n  # masses
        vel = _uniform(rng, (n, 4), -0.1, 0.1)
        vel[:, 3] = 0.0
        empty = aligned_empty((n, 4), np.float32)
        return {"pos": pos, "vel": vel, "new_pos": empty, "new_vel": aligned_copy(empty)}

    def ocl_args(self, d, p):
        return [
            d["pos"],
            d["vel"],
            d["new_pos"],
            d["new_vel"],
            Local(self.local * 16),
            np.int32(p["n"]),
            np.float32(self.dt),
            np.float32(self.eps2),
        ]

    def ndrange(self, p):
        return (p["n"],), (self.local,)

    def native_args(self, d, p):
        args = [d["pos"], d["vel"], d["new_pos"], d["new_vel"], np.int32(p["n"])]
        return [*args, np.float32(self.dt), np.float32(self.eps2)]

    def _sample(self, p):
        """The bodies checked: at most 1024, spread over all (the full check is O(n^2))."""
        return np.unique(np.linspace(0, p["n"] - 1, min(p["n"], 1024)).astype(np.int64))

    def reference(self, d, p):
        rows = self._sample(p)
        pos, vel = d["pos"].astype(np.float64), d["vel"][rows].astype(np.float64)
        acc = np.zeros((rows.size, 3))
        for start in range(0, rows.size, 256):  # rows in chunks: bounded memory
            mine = pos[rows[start : start + 256], None, :3]
            diff = pos[None, :, :3] - mine
            inv = 1.0 / np.sqrt((diff * diff).sum(axis=2) + self.eps2)
            acc[start : start + 256] = (diff * (pos[None, :, 3] * inv**3)[:, :, None]).sum(axis=1)
        new_vel = vel.copy()
        new_vel[:, :3] += acc * self.dt
        new_pos = pos[rows].copy()
        new_pos[:, :3] += new_vel[:, :3] * self.dt
        return rows, new_pos, new_vel

    def compare(self, got, want):
        rows, new_pos, new_vel = want
        # Velocity changes are sums of n terms; 1e-5 of the largest velocity is ample.
        atol = 1e-5 * float(np.abs(new_vel).max())
        return _close("new_pos", got[0][rows], new_pos, 1e-5, atol) or _close(
            "new_vel", got[1][rows], new_vel, 1e-4, atol
        )


class BlackScholes(Case):
    name = "blackscholes"
    sizes = {"full": {"n": 1 << 22}, "quick": {"n": 1 << 18}, "first": {"n": 1 << 12}}
    outputs = ("call", "put")
    r, v = 0.02, 0.30

    def describe(self, p):
        return f"2^{p['n'].bit_length() - 1} options"

    def make_data(self, p):
        n, rng = p["n"], _rng()
        return {
            "call": aligned_empty(n, np.float32),
            "put": aligned_empty(n, np.float32),
            "price": _uniform(rng, n, 5, 30),
            "strike": _uniform(rng, n, 1, 100),
            "years": _uniform(rng, n, 0.25, 10),
        }

    def ocl_args(self, d, p):
        arrays = [d[k] for k in ("call", "put", "price", "strike", "years")]
        return [*arrays, np.float32(self.r), np.float32(self.v)]

    def ndrange(self, p):
        return (p["n"],), None

    def native_args(self, d, p):
        arrays = [d[k] for k in ("call", "put", "price", "strike", "years")]
        return [*arrays, np.int64(p["n"]), np.float32(self.r), np.float32(self.v)]

    @staticmethod
    def _prices(s, x, t, r, v, xp=np):
        def cnd(z):
            k = 1.0 / (1.0 + 0.2316419 * np.abs(z))
            poly = k * (
                0.31938153
                + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429)))
            )
            w = 0.39894228040143267794 * np.exp(-0.5 * z * z) * poly
            return np.where(z > 0, 1.0 - w, w)

        sqrt_t = np.sqrt(t)
        d1 = (np.log(s / x) + (r + 0.5 * v * v) * t) / (v * sqrt_t)
        d2 = d1 - v * sqrt_t
        discount = np.exp(-r * t)
        return s * cnd(d1) - x * discount * cnd(d2), x * discount * cnd(-d2) - s * cnd(-d1)

    def numpy_run(self, d, p):
        s, x, t = d["price"], d["strike"], d["years"]
        r, v = np.float32(self.r), np.float32(self.v)

        def run():
            d["call"][...], d["put"][...] = self._prices(s, x, t, r, v)

        return run

    def reference(self, d, p):
        s, x, t = (d[k].astype(np.float64) for k in ("price", "strike", "years"))
        return self._prices(s, x, t, self.r, self.v)

    def compare(self, got, want):
        # Prices up to ~30 from float32 exp/log and a subtraction of two such terms.
        return _close("call", got[0], want[0], 1e-4, 1e-4) or _close(
            "put", got[1], want[1], 1e-4, 1e-4
        )


class Reduction(Case):
    name = "reduction"
    sizes = {"full": {"n": 1 << 24}, "quick": {"n": 1 << 20}, "first": {"n": 1 << 14}}
    outputs = ("partial",)
    finish_reads = ("partial",)
    native_restype = "float"
    local, per_item = 256, 16

    def describe(self, p):
        return f"2^{p['n'].bit_length() - 1} floats, {self.per_item}/item"

    def _groups(self, p):
        return p["n"] // (self.local * self.per_item)

    def make_data(self, p):
        return {
            "x": _uniform(_rng(), p["n"], 0, 1),
            "partial": aligned_empty(self._groups(p), np.float32),
        }

    def ocl_args(self, d, p):
        return [d["x"], d["partial"], Local(self.local * 4), np.uint32(p["n"])]

    def ndrange(self, p):
        return (self._groups(p) * self.local,), (self.local,)

    def native_args(self, d, p):
        return [d["x"], np.int64(p["n"])]

    def host_finish(self, outs, p):
        return float(outs["partial"].sum(dtype=np.float64))

    def numpy_run(self, d, p):
        x = d["x"]
        return lambda: float(x.sum())

    def result(self, d, returned):
        return float(returned)

    def reference(self, d, p):
        return float(d["x"].sum(dtype=np.float64))

    def compare(self, got, want):
        return _close("sum", np.array(got), np.array(want), 1e-5, 0.0)


class Histogram(Case):
    name = "histogram"
    sizes = {"full": {"n": 1 << 24}, "quick": {"n": 1 << 20}, "first": {"n": 1 << 14}}
    outputs = ("hist",)
    zeroed = ("hist",)
    local, words_per_item = 256, 16

    def describe(self, p):
        return f"2^{p['n'].bit_length() - 1} bytes, 256 bins"

    def make_data(self, p):
        # Skewed (not uniform) so some bins are hot, as in real data.
        rng = _rng()
        data = np.minimum(rng.exponential(48.0, p["n"]), 255).astype(np.uint8)
        return {"data": aligned_copy(data), "hist": aligned_empty(256, np.uint32)}

    def ocl_args(self, d, p):
        return [d["data"].view(np.uint32), d["hist"], np.uint32(p["n"] // 4)]

    def ndrange(self, p):
        items = p["n"] // 4 // self.words_per_item
        return (max(items, self.local),), (self.local,)

    def native_args(self, d, p):
        return [d["data"], np.int64(p["n"]), d["hist"]]

    def numpy_run(self, d, p):
        data, hist = d["data"], d["hist"]

        def run():
            hist[...] = np.bincount(data, minlength=256)

        return run

    def reference(self, d, p):
        return (np.bincount(d["data"], minlength=256).astype(np.uint32),)

    def compare(self, got, want):
        return _exact("hist", got[0], want[0])


def _round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


class SaxpyGuarded(Saxpy):
    """saxpy with n not a multiple of the group size: the global size is rounded up to 256
    and ``if (i < n)`` guards the tail (what ranges-before-masks is about)."""

    name = "saxpy_guarded"
    sizes = {"full": {"n": (1 << 24) - 3}, "quick": {"n": (1 << 20) - 3}, "first": {"n": 4093}}

    def describe(self, p):
        return f"2^{p['n'].bit_length()}-{(1 << p['n'].bit_length()) - p['n']} floats"

    def ndrange(self, p):
        return (_round_up(p["n"], 256),), None


class MatVec(Case):
    name = "matvec"
    sizes = {"full": {"n": 4096}, "quick": {"n": 1024}, "first": {"n": 64}}
    outputs = ("y",)

    def describe(self, p):
        return f"{p['n']}x{p['n']} floats"

    def make_data(self, p):
        n, rng = p["n"], _rng()
        return {
            "a": _uniform(rng, (n, n), -1, 1),
            "x": _uniform(rng, n, -1, 1),
            "y": aligned_empty(n, np.float32),
        }

    def ocl_args(self, d, p):
        return [d["a"], d["x"], d["y"], np.int32(p["n"]), np.int32(p["n"])]

    def ndrange(self, p):
        return (p["n"],), None

    def native_args(self, d, p):
        return self.ocl_args(d, p)

    def numpy_run(self, d, p):
        a, x, y = d["a"], d["x"], d["y"]
        return lambda: np.matmul(a, x, out=y)

    def reference(self, d, p):
        return (d["a"].astype(np.float64) @ d["x"].astype(np.float64),)

    def compare(self, got, want):
        return _close("y", got[0], want[0], 1e-4, 2e-6 * want[0].shape[0])


class GemmNaive(Sgemm):
    """C = A B with an inner k loop per work-item and no local memory."""

    name = "gemm_naive"
    sizes = {"full": {"n": 1024}, "quick": {"n": 256}, "first": {"n": 64}}

    def describe(self, p):
        return f"{p['n']}x{p['n']}, inner k loop"

    def ndrange(self, p):
        return (p["n"], p["n"]), None


class Stencil3d(Case):
    name = "stencil3d"
    sizes = {"full": {"n": 256}, "quick": {"n": 64}, "first": {"n": 16}}
    outputs = ("out",)

    def describe(self, p):
        return f"{p['n']}^3 floats, 7-point"

    def make_data(self, p):
        n = p["n"]
        return {
            "in": _uniform(_rng(), (n, n, n), 0, 1),
            "out": aligned_empty((n, n, n), np.float32),
        }

    def ocl_args(self, d, p):
        return [d["in"], d["out"], np.int32(p["n"])]

    def ndrange(self, p):
        return (p["n"],) * 3, None

    def native_args(self, d, p):
        return self.ocl_args(d, p)

    def reference(self, d, p):
        a = d["in"].astype(np.float64)
        out = a.copy()
        c = (slice(1, -1),) * 3
        lo, hi, mid = slice(None, -2), slice(2, None), slice(1, -1)
        total = (a[mid, mid, lo] + a[mid, mid, hi]) + (a[mid, lo, mid] + a[mid, hi, mid])
        out[c] = (total + (a[lo, mid, mid] + a[hi, mid, mid])) / 6.0
        return (out,)

    def compare(self, got, want):
        return _close("out", got[0], want[0], 1e-6, 1e-6)


class ColMean(Case):
    """Covariance-style column sums: one column per work-item, a loop down the rows."""

    name = "colmean"
    sizes = {"full": {"n": 4096}, "quick": {"n": 1024}, "first": {"n": 64}}
    outputs = ("mean",)

    def describe(self, p):
        return f"{p['n']}x{p['n']} floats"

    def make_data(self, p):
        n = p["n"]
        return {"data": _uniform(_rng(), (n, n), 0, 1), "mean": aligned_empty(n, np.float32)}

    def ocl_args(self, d, p):
        return [d["data"], d["mean"], np.int32(p["n"]), np.int32(p["n"])]

    def ndrange(self, p):
        return (p["n"],), None

    def native_args(self, d, p):
        return self.ocl_args(d, p)

    def numpy_run(self, d, p):
        data, mean = d["data"], d["mean"]
        return lambda: np.mean(data, axis=0, out=mean)

    def reference(self, d, p):
        return (d["data"].astype(np.float64).mean(axis=0),)

    def compare(self, got, want):
        # Means of n values in [0, 1) summed in float32 in order: ~n * 2^-24 relative.
        return _close("mean", got[0], want[0], 1e-4, 1e-6)


CASES: dict[str, Case] = {
    c.name: c
    for c in (
        Saxpy(),
        Stencil(),
        Sgemm(),
        Mandelbrot(),
        NBody(),
        BlackScholes(),
        Reduction(),
        Histogram(),
        SaxpyGuarded(),
        MatVec(),
        GemmNaive(),
        Stencil3d(),
        ColMean(),
    )
}
