"""The tables the leaderboard pages are written from: a table of rows, a row of cells, a cell a statistic over
seeds (:class:`Stat`) or why there is none (:class:`Missing`). Built by ``report.grouping``; no formatting here."""
from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchbackcompat.metrics import bootstrap
from benchbackcompat.record import CellRecord, FinishedRecord
from benchbackcompat.report.columns import Column
from benchbackcompat.scenarios.kinds import kind_class


@dataclass(frozen=True)
class Stat:
    """A statistic over the seeds that produced a finite value, with their query-bootstrap replicates when every
    such seed stored per-query outcomes (``bootstrap.SeedSample``; its interval is honest for the number of seeds)
    and the range of values it can take (``bounds``; its interval stays inside it)."""

    values: tuple[float, ...]
    replicates: bootstrap.SeedSample | np.ndarray | None = field(default=None, compare=False, repr=False)
    bounds: tuple[float, float] = field(default=(-math.inf, math.inf), compare=False, repr=False)

    @functools.cached_property
    def interval(self) -> tuple[float, float] | None:
        return bootstrap.interval(self.replicates, bounds=self.bounds) if self.replicates is not None else None

    @property
    def exact(self) -> bool:
        """Whether its interval has zero width: no resample of queries or seeds moves it (e.g. P_up of the
        reference model itself, or AC 0 where no pair is ever compatible)."""
        interval = self.interval
        return interval is not None and interval[0] == interval[1]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def std(self) -> float | None:
        return statistics.stdev(self.values) if self.n > 1 else None


@dataclass(frozen=True)
class Missing:
    """A cell that has no number: ``text`` is "-" (not computed), "nan" (diverged) or "–" (P_com not shown),
    ``reason`` says why, ``word`` in a few words (e.g. "update < 10 pts")."""

    text: str
    reason: str
    word: str = "not computed"


@dataclass
class Row:
    method: str
    label: str  # method name, plus the hyperparameters that differ from other rows of the same method
    params: dict[str, Any]
    records: list[CellRecord]
    cells: dict[str, Stat | Missing] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # about the row as a whole (e.g. one seed diverged)
    rank: int | None = None
    chance: str = ""  # why the row is at chance level ("" when it is not)

    @property
    def finished(self) -> list[FinishedRecord]:
        return [r for r in self.records if isinstance(r, FinishedRecord)]

    @property
    def minutes(self) -> float | None:
        """The mean compute of the row's finished cells (training and evaluation,
        ``FinishedRecord.compute_seconds``) in minutes; None without timings."""
        seconds = [r.compute_seconds for r in self.finished if r.timings]
        return statistics.fmean(seconds) / 60 if seconds else None

    data: str = ""  # the short data fingerprint its configuration is split by ("" when all its seeds share the data)

    @property
    def qualifier(self) -> str:
        """The label without the method's name: what tells the row from the method's other rows ("" for its only one)."""
        return self.label.removeprefix(self.method).strip().removeprefix("(").removesuffix(")")


@dataclass
class Table:
    scenario: str
    kind: str
    dataset: str
    preset: str
    config: dict[str, Any]
    variant: str  # "" when the scenario has a single configuration in these results
    columns: list[Column]
    rows: list[Row]
    unranked: str = ""  # why no row is ranked ("" when some are)
    data: str = ""  # the short data fingerprint its configuration is split by ("" when all its seeds share the data)

    @property
    def single_update(self) -> bool:
        return kind_class(self.kind).single_update

    @property
    def metrics(self) -> list[str]:
        return list(dict.fromkeys(c.metric for c in self.columns))

    @property
    def records(self) -> list[CellRecord]:
        return [r for row in self.rows for r in row.records]

    @property
    def title(self) -> str:
        return self.scenario + (f" ({self.variant})" if self.variant else "")
