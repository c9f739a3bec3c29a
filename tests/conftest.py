"""Fixtures for the whole test suite."""

from __future__ import annotations

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
