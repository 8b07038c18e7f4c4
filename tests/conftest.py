"""A rendering in the test's own process draws every figure, without the user's figure cache (the cache's own tests
point it at a folder); a command that a test runs in a process of its own, as a user would, uses the cache as the
user's would (it is keyed by content, so it serves only figures drawn from the same records and code)."""
from __future__ import annotations

import pytest

from benchbackcompat.report import figures


@pytest.fixture(autouse=True)
def no_figure_cache(monkeypatch):
    monkeypatch.setattr(figures, "FIGURE_CACHE", None)
