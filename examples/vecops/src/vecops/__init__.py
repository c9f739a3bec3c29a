"""vecops: a tiny vector library whose kernels ship as a spirvjit unified binary.

The binary (vecops/kernels/vecops.ubin) is built from kernels/vecops.cl when the wheel
is built; ``spirvjit precompile vecops`` after installing compiles its kernels for this
machine, so that the first call below takes no JIT.
"""

from __future__ import annotations

import numpy as np

import spirvjit

__all__ = ["axpy", "norm", "normalize", "program"]

_CHUNK = 256


def program() -> spirvjit.Program:
    """The package's kernels (loaded once, on first use)."""
    return spirvjit.load_package_kernels("vecops", "vecops")


def _vector(x) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32)


def axpy(a: float, x, y) -> np.ndarray:
    """``a * x + y`` as a new float32 array."""
    x, out = _vector(x), _vector(y).copy()
    if x.shape != out.shape or x.ndim != 1:
        raise ValueError("x and y must be vectors of the same length")
    program().axpy(np.float32(a), x, out, np.uint32(x.size), global_size=max(x.size, 1))
    return out


def norm(x) -> float:
    """The Euclidean norm of ``x`` (float32 partial sums, added in float64)."""
    x = _vector(x)
    groups = max(1, -(-x.size // _CHUNK))
    partial = np.zeros(groups, dtype=np.float32)
    program().sum_squares(x, partial, np.uint32(x.size), np.uint32(_CHUNK), global_size=groups)
    return float(np.sqrt(partial.sum(dtype=np.float64)))


def normalize(x) -> np.ndarray:
    """``x / norm(x)`` as a new float32 array (zeros stay zeros)."""
    out = _vector(x).copy()
    length = norm(out)
    if length > 0:
        program().scale(
            out, np.float32(1.0 / length), np.uint32(out.size), global_size=max(out.size, 1)
        )
    return out
