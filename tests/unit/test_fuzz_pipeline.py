"""A fixed-seed sample of tests/spirv_fuzz.py in CI: mutants of real modules go through
read -> check -> translate -> compile -> load of every kernel (no launch), and each
ends as a module that compiles or a SpirvError/CompileError/LaunchError.

The long run (crashes, hangs, memory caps, thousands of inputs) is
``python3 -m tests.spirv_fuzz --count N --seed S``; see docs/limits.md.
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from spirvjit.spirv.reader import read_module  # noqa: E402
from tests import spirv_fuzz  # noqa: E402

SAMPLE = 100  # 20-40 s on an idle 2-core machine
SEED = 13


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch) -> None:
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")  # mutants must not fill the test cache


def test_the_corpus_passes_the_checks() -> None:
    """Every seed module reads and validates (the llvm-spirv-15 module with debug info
    is then refused by the translator: OpenCL.DebugInfo.100 in function bodies)."""
    corpus = spirv_fuzz.fixture_corpus()
    assert len(corpus) >= 10
    for data in corpus:
        read_module(data)


def test_mutants_of_real_modules_never_escape() -> None:
    counts: collections.Counter[str] = collections.Counter()
    escapes = []
    for data in spirv_fuzz.mutants(spirv_fuzz.fixture_corpus(), SAMPLE, SEED):
        outcome, signature = spirv_fuzz.classify(data)
        counts[outcome] += 1
        if outcome == "escape":
            escapes.append(signature)
    assert not escapes, escapes
    # The sample reaches code generation, not only the reader's refusals.
    assert counts["ok"] >= 3, counts


def test_a_mutant_is_the_same_for_the_same_seed() -> None:
    corpus = spirv_fuzz.fixture_corpus()
    assert list(spirv_fuzz.mutants(corpus, 5, 1)) == list(spirv_fuzz.mutants(corpus, 5, 1))
    assert list(spirv_fuzz.mutants(corpus, 5, 1)) != list(spirv_fuzz.mutants(corpus, 5, 2))
