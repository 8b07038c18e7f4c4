"""The evaluation options a scenario may set beside its retrieval metrics, in one registry.

An option is off unless set (None), so a scenario without it dumps, and keys its cells, as before the option
existed. Its name is the scenario field that sets it (a configuration model of ``benchbackcompat.config``), the
record field that holds what it measured (a payload model of ``benchbackcompat.record``) and the timing phase
that computes it (``engine.cell``); its statistics per retrieval metric (``metrics.live``) are shown in a
leaderboard view of their own (``report.columns``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from benchbackcompat.config import BackfillConfig, IndexConfig
from benchbackcompat.metrics import live
from benchbackcompat.record import Backfill, FinishedRecord, IndexScores
from benchbackcompat.runtime.memo import IdentityMemo

Values = Callable[[dict[str, Any] | None, Sequence[Sequence[float | None]] | None, str], dict[str, float]]


@dataclass(frozen=True)
class EvaluationOption:
    """One evaluation option: its name, its configuration and payload models, the statistics its payload yields
    per retrieval metric (their keys, and the function that reads them from a payload and the metric's matrix)
    and the title of the leaderboard view that shows them."""

    name: str
    config: type[BaseModel]
    payload: type[BaseModel]
    keys: tuple[str, ...]
    values: Values
    view: str


EVALUATION_OPTIONS = (
    EvaluationOption("backfill", BackfillConfig, Backfill, live.BACKFILL_KEYS, live.backfill_values, "backfilling"),
    EvaluationOption("index", IndexConfig, IndexScores, live.INDEX_KEYS, live.index_values,
                     "retrieval through an index"),
)
NAMES = tuple(option.name for option in EVALUATION_OPTIONS)


def option(name: str) -> EvaluationOption:
    """The evaluation option ``name``."""
    return next(entry for entry in EVALUATION_OPTIONS if entry.name == name)


_STATISTICS = IdentityMemo(4096)  # (record, metric) pairs kept: the published leaderboard asks for 1,333 x 2


def statistics(record: FinishedRecord, metric: str) -> dict[str, float]:
    """Every statistic of ``metric`` that the record's evaluation options yield, in the registry's order; computed
    once per record object and metric (a table asks for each of them in turn, and per-step flips are not cheap)."""
    return dict(_STATISTICS.get((id(record), metric), (record,), lambda: {
        key: value for entry in EVALUATION_OPTIONS
        for key, value in entry.values(getattr(record, entry.name), record.matrices.get(metric), metric).items()}))
