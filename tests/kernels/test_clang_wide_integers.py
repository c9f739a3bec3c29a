"""clang-22 -O2 can make integers SPIR-V lacks (an i128 load of a private array's 16
bytes after unrolling); its SPIR-V back end then stops. The front end compiles such a
program again without the front end's loop unrolling (frontend/opencl.py,
``_WIDTH_WORKAROUND``). The program is the differential tester's (seed 26200 kernel 3),
kept in tests/fuzz/findings/."""

from pathlib import Path

import numpy as np
import pytest

import spirvjit
from spirvjit.frontend import opencl
from tests.fuzz.differential import inputs

FINDING = Path(__file__).resolve().parents[1] / "fuzz" / "findings" / "clang_i128_private_array.cl"
OPTIONS = ["-cl-std=CL3.0", "-cl-fp32-correctly-rounded-divide-sqrt", "-w"]


def _run(producer: str) -> tuple[np.ndarray, np.ndarray]:
    prog = spirvjit.compile_opencl(FINDING.read_text(), OPTIONS, producer=producer)
    words, gat = inputs(26200, 3, 4)
    out = np.zeros(32 * 2, np.uint64)
    struct = bytes((i * 37 + 11) % 256 for i in range(64))
    prog.kernel("k3")(out, words, gat, struct, global_size=(4, 8), local_size=(2, 4))
    return out, gat


def test_the_clang_producer_compiles_it_and_agrees_with_the_translator():
    # Before: CompileError, clang-22 "requires ... SPV_ALTERA_arbitrary_precision_integers".
    out, gat = _run("clang")
    ref_out, ref_gat = _run("translator")
    np.testing.assert_array_equal(out, ref_out)
    np.testing.assert_array_equal(gat, ref_gat)


def test_other_clang_failures_are_not_retried(monkeypatch):
    calls = []

    def failing(src, spv, options, tmp):
        calls.append(list(options))
        raise spirvjit.CompileError(
            "clang-22 failed to compile kernel.cl: 1 error", "x.cl:1:1: error: nope"
        )

    monkeypatch.setattr(opencl, "_compile_clang_once", failing)
    with pytest.raises(spirvjit.CompileError, match="1 error"):
        opencl._compile_clang("kernel.cl", "out.spv", ["-DX"], "/tmp")
    assert calls == [["-DX"]]


def test_a_width_failure_left_after_the_retry_names_the_way_out(monkeypatch):
    calls = []

    def failing(src, spv, options, tmp):
        calls.append(list(options))
        raise spirvjit.CompileError(
            "clang-22 failed to compile kernel.cl: exit status 1",
            "fatal error: error in backend: ... SPV_ALTERA_arbitrary_precision_integers",
        )

    monkeypatch.setattr(opencl, "_compile_clang_once", failing)
    with pytest.raises(spirvjit.CompileError, match="producer='translator'"):
        opencl._compile_clang("kernel.cl", "out.spv", ["-DX"], "/tmp")
    assert calls == [["-DX"], [*opencl._WIDTH_WORKAROUND, "-DX"]]


I256 = FINDING.with_name("clang_i256_vector_combine.cl")


@pytest.mark.parametrize("producer", ["clang", "translator"])
def test_an_i256_from_vector_combine_is_compiled_again(producer):
    # Before: CompileError, clang-22 "error in backend: Unsupported Integer width!".
    prog = spirvjit.compile_opencl(I256.read_text(), ["-cl-std=CL3.0"], producer=producer)
    n = 24
    x = np.random.default_rng(29103).integers(-(2**15), 2**15, n + 16).astype(np.int16)
    out = np.zeros(n, np.int16)
    prog.kernel("k")(out, x, global_size=(n,), local_size=(8,))
    # every lane of b becomes b[0] + b[3] (wrapping in short), so b[5] = in[gid] + in[gid + 3]
    np.testing.assert_array_equal(out, (x[:n] + x[3 : n + 3]).astype(np.int16))
