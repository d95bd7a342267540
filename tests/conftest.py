"""Shared test set-up: no test writes to the user's cache, and none may reach the network."""

from __future__ import annotations

import pytest

import localeval  # noqa: F401  (sets the offline switches before any HF import)


@pytest.fixture(autouse=True, scope="session")
def isolated_cache(tmp_path_factory):
    """One answer cache for the whole session, away from the user's (~/.cache/localeval)."""
    patch = pytest.MonkeyPatch()
    patch.setenv("LOCALEVAL_CACHE_DIR", str(tmp_path_factory.mktemp("answer-cache")))
    yield
    patch.undo()
