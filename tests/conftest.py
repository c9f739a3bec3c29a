"""Fixtures for the whole test suite."""

from __future__ import annotations

import sys

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_kernel_cache(tmp_path_factory: pytest.TempPathFactory):
    """Points the persistent kernel cache at a per-session directory.

    The suite must never read or write the user's real cache: a stale entry there
    could hide a compiler change from a test, and tests must not leave entries behind.
    The environment variable also reaches the subprocesses tests start.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SPIRVJIT_CACHE_DIR", str(tmp_path_factory.mktemp("spirvjit-cache")))
        patch.delenv("SPIRVJIT_CACHE", raising=False)
        patch.delenv("SPIRVJIT_CACHE_MAX_SIZE", raising=False)
        yield


@pytest.fixture(autouse=True)
def _background_compiles_end_with_their_test(monkeypatch: pytest.MonkeyPatch):
    """Each test's tiered kernels finish their optimized tier's background compile
    before the test ends. The compile runs with the settings of its launch (tiered.py),
    but must not take the CPU, or its cache directory (a test's tmp_path), into the next
    test. ``monkeypatch`` is requested so that this runs before the test's environment
    is restored."""
    yield
    tiered = sys.modules.get("spirvjit.backends.cpu.tiered")  # (not imported: no kernels)
    if tiered is not None:
        assert tiered.wait_pending(600), "an optimized tier's compile did not end"
