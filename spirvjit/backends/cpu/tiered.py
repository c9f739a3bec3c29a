"""Tiered JIT on the host CPU (SPIRVJIT_TIERED=1): quick code first, optimized code later.

A kernel's full compile (whole-function vectorization, LLVM's O3/O2, -O3 code generation)
takes 100-500 ms of CPU on the suite's kernels with llvmlite's LLVM (benchmarks/results/
jit_times.md), most of it in LLVM passes that no pipeline tuning removes. The quick tier
compiles the scalar translation (no whole-function vectorization) with a few passes
(``codegen.quick_optimize``) and -O0 code generation: ~20-40 ms. Its code runs the first
launches while a background thread compiles the optimized tier, which then replaces it:

- the swap is one reference store (``TieredKernel._current``); a launch reads it once,
  so it runs wholly on one tier, and the tier it runs stays alive until it returns;
- the optimized tier is compiled once, by the one background thread started when the
  kernel is loaded (``Kernel._loaded_on`` loads a kernel once per device, whichever
  threads launch it first);
- only the optimized tier goes into the cache (the quick tier's specialization,
  ``jit.QUICK_TIER``, is never looked up or stored), so a later process starts optimized;
- both tiers compute the same results: the quick tier is the same translation without
  the vectorizer, and a kernel whose program calls a libm function that has a libmvec
  variant (which the vectorized code would call, rounding differently) is not tiered
  (``worth_it``): it is compiled optimized at once, as without SPIRVJIT_TIERED.

Off by default: a big first launch on the quick tier can take longer than compiling the
optimized code would have (the quick code is 3-90x slower, docs/design.md, and a launch
does not change tiers midway), and a background thread compiling competes for the cores.
``Kernel.wait_optimized()`` waits for the optimized tier.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ...jit import QUICK_TIER
from ...translate.mathlib import vector_declarations

log = logging.getLogger("spirvjit")


def worth_it(program, kernel: str) -> bool:
    """Whether ``kernel`` may run a quick tier: its results must be the optimized tier's,
    so not where the program calls libm functions that have vector variants."""
    translation = program.translation_for((QUICK_TIER,))
    called = {fn.name for fn in translation.module.functions}
    return not vector_declarations(program.target.features, called)


class TieredKernel:
    """A LoadedKernel that launches the quick tier until the optimized one is loaded.

    ``compile_seconds``, ``times`` and ``origin`` are the quick tier's (what the first
    launch waited for); ``optimized_seconds`` and ``optimized_times`` the optimized tier's,
    None until it is in; ``tier``: 0 or 1, the tier the next launch runs."""

    def __init__(self, quick, optimize: Callable[[], object], name: str) -> None:
        self._current = quick
        self.tier = 0
        self.signature = quick.signature
        self.origin = quick.origin
        self.times = quick.times
        self.compile_seconds = quick.compile_seconds
        self.optimized_seconds: float | None = None
        self.optimized_times = None
        self.error: BaseException | None = None  # why the optimized tier is missing
        self._optimized = threading.Event()
        # Not a daemon: the interpreter waits for it at exit rather than stopping it in
        # the middle of LLVM.
        self._thread = threading.Thread(
            target=self._optimize, args=(optimize,), name=f"spirvjit optimize {name}"
        )
        self._thread.start()

    def _optimize(self, optimize: Callable[[], object]) -> None:
        try:
            full = optimize()
        except Exception as exc:  # the quick tier keeps running: slower, still right
            self.error = exc
            log.warning("spirvjit: optimizing %s failed, it keeps its quick code: %s", self, exc)
        else:
            self.optimized_seconds = full.compile_seconds
            self.optimized_times = full.times
            self._current = full  # the swap: launches from now on run the optimized code
            self.tier = 1
        finally:
            self._optimized.set()

    def wait_optimized(self, timeout: float | None = None) -> bool:
        """Waits until the optimized tier is in (or failed); False if ``timeout`` passed."""
        return self._optimized.wait(timeout)

    def launch(self, *args, **kwargs) -> None:
        # One read: the whole launch runs on the tier it found.
        return self._current.launch(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<spirvjit tiered kernel {self._thread.name.removeprefix('spirvjit optimize ')}>"
