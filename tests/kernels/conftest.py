"""Shared fixtures for the end-to-end kernel tests.

Kernels live in ``sources.py`` (one registry: name -> source, options, runner); the build/run
caches and tool helpers live in ``harness.py`` so tests can import them without importing
conftest.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Make sources/refs/harness importable whatever pytest's import mode is.
sys.path.insert(0, str(Path(__file__).parent))

from harness import PRODUCERS, assemble, build, run_case, translator_missing  # noqa: E402


@pytest.fixture(params=PRODUCERS)
def producer(request) -> str:
    """Each topical test runs once per SPIR-V producer (clang-22; clang-15 + llvm-spirv-15)."""
    if request.param == "translator":
        why = translator_missing()
        if why:
            pytest.skip(why)
    return request.param


@pytest.fixture
def run(producer):
    """``run(name)`` runs registered kernel ``name`` built by the current producer."""
    return lambda name: run_case(name, producer)


@pytest.fixture(name="build")
def build_fixture():
    """``build(source, options=..., producer=...)`` -> Program (cached)."""
    return build


@pytest.fixture(name="assemble")
def assemble_fixture():
    return assemble
