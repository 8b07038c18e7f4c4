"""Every test draws its figures: the user's figure cache is left alone (its own tests point it at a folder)."""
from __future__ import annotations

import pytest

from benchbackcompat.report import figures


@pytest.fixture(autouse=True)
def no_figure_cache(monkeypatch):
    monkeypatch.setattr(figures, "FIGURE_CACHE", None)
