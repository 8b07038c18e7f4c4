"""The leaderboard: tables, figures, exports and provenance rendered from stored records only.

``leaderboard_tables(records)`` is the terminal summary printed after a run;
``publish.write_leaderboard`` writes the published folder (``benchbackcompat leaderboard --out``).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from benchbackcompat.record import CellRecord
from benchbackcompat.report.grouping import build_tables
from benchbackcompat.report.tables import tables_markdown


def leaderboard_tables(records: Iterable[CellRecord | dict[str, Any]], grids: bool = False, plain: bool = False) -> str:
    """One Markdown table per (scenario, dataset, preset, configuration), with footnotes (records in their stored
    form are parsed first); ``grids``: the whole grid of every method whose hyperparameters were selected;
    ``plain``: terminal text instead of Markdown."""
    return tables_markdown(build_tables(records), grids, plain)


__all__ = ["leaderboard_tables"]
