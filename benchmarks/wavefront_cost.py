"""The host CPU's cost of lock-step wavefronts (docs/hip.md): a block sum with
``__shfl_down`` warp reductions against the corpus's shared-memory tree reduction.

    PYTHONPATH=$PWD python3 benchmarks/wavefront_cost.py [--log2n 22] [--repeat 5]

Prints, per element, the best wall time and the best CPU time (user time of the
process: all launch threads together, which a loaded machine disturbs less) of each
kernel's launches after a warm-up launch; both results are checked against NumPy.
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import numpy as np

import spirvjit

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "kernels" / "hip_corpus"


def _best(run, repeat: int) -> tuple[float, float]:
    """(best wall seconds, best CPU seconds) of ``run``."""
    run()  # warm-up: compiles and loads the kernel
    walls, cpus = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_utime
        run()
        walls.append(time.perf_counter() - start)
        cpus.append(resource.getrusage(resource.RUSAGE_SELF).ru_utime - cpu)
    return min(walls), min(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2n", type=int, default=22)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n = 1 << args.log2n
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    wave = spirvjit.compile_hip(CORPUS / "wavefront.hip")
    tree = spirvjit.compile_hip(CORPUS / "reduction.hip").kernel("reduce<float, 256>")
    for kernel in (wave.block_reduce_shfl, tree):
        kernel.compile()  # the optimized code (no quick tier: steady-state launches)
    shfl_out = np.zeros(n // 256, np.float32)
    tree_out = np.zeros(n // 512, np.float32)  # each block sums 2 x 256 elements
    t_shfl = _best(
        lambda: wave.block_reduce_shfl(x, shfl_out, np.int32(n), grid=n // 256, block=256),
        args.repeat,
    )
    t_tree = _best(lambda: tree(x, tree_out, np.uint32(n), grid=n // 512, block=256), args.repeat)
    np.testing.assert_allclose(shfl_out, x.reshape(-1, 256).sum(1), rtol=1e-4)
    np.testing.assert_allclose(tree_out, x.reshape(-1, 512).sum(1), rtol=1e-4)
    print(f"n = 2**{args.log2n} floats, blocks of 256; ns per element: wall, CPU")
    for name, (wall, cpu) in (
        ("block_reduce_shfl (lock-step __shfl_down)", t_shfl),
        ("reduce<float, 256> (shared-memory tree)  ", t_tree),
    ):
        print(f"{name}: {wall / n * 1e9:8.1f} {cpu / n * 1e9:8.1f}")
    print(f"ratio: wall {t_shfl[0] / t_tree[0]:.1f}, CPU {t_shfl[1] / t_tree[1]:.1f}")


if __name__ == "__main__":
    main()
