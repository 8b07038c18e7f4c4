"""What the study tools share: the finished records of one scenario's rows, grouped as the leaderboard's tables group
them (one configuration on one dataset: records that predate the dataset's fingerprint join the dataset their seed's
other cells name), and a value's mean with its 95% t-interval over seeds as they print it."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchbackcompat.record import CellRecord, FinishedRecord
from benchbackcompat.report.grouping import build_tables
from benchbackcompat.report.merge import read_results
from benchbackcompat.report.upgrade import seed_interval


def leaderboard_rows(folder: Path, scenario: str, keep: Callable[[CellRecord], bool] = lambda record: True,
                     ) -> dict[str, list[FinishedRecord]]:
    """{row label (with its table's variant, if any): finished records by seed} of ``scenario`` in ``folder``,
    over the records ``keep`` accepts."""
    records = [r for r in read_results([folder]).records if r.scenario == scenario and keep(r)]
    return {row.label + (f" ({table.variant})" if table.variant else ""): sorted(row.finished, key=lambda r: r.seed)
            for table in build_tables(records) for row in table.rows if row.finished}


def interval(values: dict[int, float]) -> str:
    """The mean over seeds with its 95% t-interval (none with one seed)."""
    mean, low, high = seed_interval(values)
    return f"{mean:.3f}" + (f" [{low:.3f}, {high:.3f}]" if np.isfinite(low) else "")
