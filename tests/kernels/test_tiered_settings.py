"""The tiered JIT's background compile runs with the settings of the launch that asked
for it (backends/cpu/tiered.py, ``config.snapshot`` / ``config.using``), and the kernel
caches' layers under SPIRVJIT_CACHE=0 (docs/cache.md)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from harness import hold_optimized_compiles

import spirvjit
from spirvjit import cache, config, jit
from spirvjit.backends.cpu import codegen, tiered

SOURCE = """
kernel void settings_%s(global const float *x, global float *y, uint n)
{
    size_t i = get_global_id(0);
    if (i >= n) return;
    float v = x[i];
    for (int k = 0; k < 4; ++k)
        v = v * 0.75f + 1.0f / (2.0f + v * v);
    y[i] = v;
}
"""


def _launch(kernel, n: int = 300) -> np.ndarray:
    x = np.linspace(-2, 2, n, dtype=np.float32)
    y = np.zeros(n, np.float32)
    kernel(x, y, np.uint32(n), global_size=n)
    return y


def test_the_background_compile_uses_the_settings_of_its_launch(monkeypatch, tmp_path) -> None:
    """Settings changed after the launch (a dump directory, another pipeline level and
    vectorizer mode, another cache directory) do not reach the optimized tier's compile:
    nothing is dumped, the O3 pipeline runs, the code is stored under the launch's key in
    the launch's cache directory. (Before: the compile read them when it ran; it dumped
    the kernel, ran the O1 pipeline and stored the code under another key elsewhere.)"""
    monkeypatch.setenv("SPIRVJIT_TIERED", "1")
    for name in ("SPIRVJIT_DUMP", "SPIRVJIT_OPT_LEVEL", "SPIRVJIT_WFV"):
        monkeypatch.delenv(name, raising=False)
    launch_cache = tmp_path / "launch-cache"
    monkeypatch.setenv("SPIRVJIT_CACHE_DIR", str(launch_cache))
    release = hold_optimized_compiles(monkeypatch)
    levels: list[int] = []
    optimize = codegen.optimize
    monkeypatch.setattr(
        codegen, "optimize", lambda m, t, level=3: (levels.append(level), optimize(m, t, level))[1]
    )
    stored: list = []
    store = cache.store
    monkeypatch.setattr(cache, "store", lambda key, obj: (stored.append(key), store(key, obj)))

    program = spirvjit.compile_opencl(SOURCE % "later")
    kernel = program.kernel("settings_later")
    first = _launch(kernel)
    loaded = kernel._default
    assert isinstance(loaded, tiered.TieredKernel) and loaded.tier == 0
    want_key = program.kernel_key("settings_later")  # the key in the launch's settings

    dumps, other_cache = tmp_path / "dumps", tmp_path / "other-cache"
    monkeypatch.setenv("SPIRVJIT_DUMP", str(dumps))
    monkeypatch.setenv("SPIRVJIT_OPT_LEVEL", "1")
    monkeypatch.setenv("SPIRVJIT_WFV", "0")
    monkeypatch.setenv("SPIRVJIT_CACHE_DIR", str(other_cache))
    release.set()
    assert kernel.wait_optimized(120)
    assert loaded.tier == 1 and loaded.error is None

    assert not dumps.exists() or not any(dumps.iterdir())
    assert levels == [3]
    assert stored == [want_key]
    assert list(launch_cache.glob("entries/*/settings_later.*.sjc"))
    assert not list(other_cache.glob("entries/*/settings_later.*.sjc"))
    np.testing.assert_array_equal(_launch(kernel), first)  # (both tiers: the same bits)


def test_settings_of_a_thread_do_not_leak_to_others(monkeypatch) -> None:
    """``config.using`` is this thread's: another thread reads the environment."""
    monkeypatch.setenv("SPIRVJIT_OPT_LEVEL", "2")
    monkeypatch.delenv("SPIRVJIT_DUMP", raising=False)
    taken = config.snapshot()
    assert taken["SPIRVJIT_OPT_LEVEL"] == "2" and "SPIRVJIT_DUMP" not in taken
    monkeypatch.setenv("SPIRVJIT_OPT_LEVEL", "1")
    monkeypatch.setenv("SPIRVJIT_DUMP", "/nonexistent/dumps")
    seen: dict[str, object] = {}
    inside, done = threading.Event(), threading.Event()

    def other() -> None:
        assert inside.wait(60)
        seen["other"] = (config.opt_level(), config.dump_dir())
        done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with config.using(taken):
        inside.set()
        assert done.wait(60)
        seen["this"] = (config.opt_level(), config.dump_dir())
        assert config.snapshot() == taken
    thread.join(60)
    assert seen["this"] == (2, None)
    assert seen["other"][0] == 1 and str(seen["other"][1]) == "/nonexistent/dumps"
    assert config.opt_level() == 1  # the environment again, after ``using``


@pytest.mark.parametrize(
    "value, seconds",
    [("", config.DEFAULT_EXIT_WAIT), ("0", 0.0), ("0.25", 0.25), ("inf", float("inf"))]
    + [(bad, config.DEFAULT_EXIT_WAIT) for bad in ("-1", "nan", "soon")],
)
def test_exit_wait_setting(monkeypatch, value: str, seconds: float) -> None:
    monkeypatch.setenv("SPIRVJIT_EXIT_WAIT", value)
    assert config.exit_wait() == seconds


def test_cache_off_keeps_the_memory_layer_and_its_kernels_load_optimized(
    monkeypatch, tmp_path
) -> None:
    """SPIRVJIT_CACHE=0 turns the disk layer off, not the process's memory layer (docs/
    cache.md, README): a second Program of the same SPIR-V gets the kernel's optimized
    code from memory, loaded without a quick tier, and nothing is written to disk."""
    monkeypatch.setenv("SPIRVJIT_TIERED", "1")
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    monkeypatch.setenv("SPIRVJIT_CACHE_DIR", str(tmp_path / "cache"))
    program = spirvjit.compile_opencl(SOURCE % "memory_only")
    kernel = program.kernel("settings_memory_only")
    first = _launch(kernel)
    assert isinstance(kernel._default, tiered.TieredKernel)
    assert kernel.wait_optimized(120) and kernel._default.tier == 1
    assert not cache.persistent()

    compiles: list[tuple] = []
    compile_kernel = jit.compile_kernel

    def counting(translation, target, symbol, dump_as, times, specialization=(), *rest):
        compiles.append(tuple(specialization))
        return compile_kernel(translation, target, symbol, dump_as, times, specialization, *rest)

    monkeypatch.setattr(jit, "compile_kernel", counting)
    again = spirvjit.Program(program.spirv)
    kernel_again = again.kernel("settings_memory_only")
    np.testing.assert_array_equal(_launch(kernel_again), first)
    assert again.origins["settings_memory_only"] == "memory"
    assert not isinstance(kernel_again._default, tiered.TieredKernel)
    assert compiles == []
    assert not (tmp_path / "cache").exists()
