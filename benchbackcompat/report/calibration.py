"""Calibration evidence beside the records: did a scale's training converge?

``benchmarks/calibrate.py --summary`` trains a preset's cells as given and with 50% more epochs and
writes what it measured as JSON; ``benchbackcompat leaderboard`` reads every ``calibration/*.json``
of its results folders, and the claims report names, for each scenario it tests, how far the
self-tests moved (issue 20's criterion: no self-test by more than the tolerance, 2 points).
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ValidationError

from benchbackcompat.errors import BenchError

FOLDER = "calibration"


class CalibratedCell(BaseModel):
    """One cell trained at both lengths: each self-test (model t, old_self, reference_self) as (as given, longer)."""

    scenario: str
    method: str
    seed: int
    self_tests: dict[str, tuple[float, float]]

    @property
    def largest_change(self) -> float:
        return max(abs(longer - given) for given, longer in self.self_tests.values())


class Calibration(BaseModel):
    """What one ``calibrate.py`` run measured on one preset and dataset."""

    preset: str
    dataset: str
    metric: str
    epochs: tuple[int, int]
    min_steps: tuple[int, int] | None = None  # the step floor (train.min_steps) at both lengths, where set
    tolerance: float
    command: str
    cells: list[CalibratedCell]


def read_calibrations(roots: list[Path]) -> list[Calibration]:
    """The calibration summaries stored in ``ROOT/calibration/*.json`` of the results folders."""
    found = []
    for path in sorted(p for root in roots for p in (Path(root) / FOLDER).glob("*.json")):
        try:
            found.append(Calibration.model_validate(json.loads(path.read_text())))
        except (ValueError, ValidationError) as error:
            first = str(error).splitlines()[0]
            raise BenchError(f"{path}: not a calibration summary ({first}); rewrite it with "
                             "`python benchmarks/calibrate.py --summary` or delete it") from None
    return found


def convergence(calibrations: Sequence[Calibration], dataset: str, preset: str, scenario: str) -> str:
    """The "training converged" line of a claim tested on this table: measured changes, or why there are none."""
    measured = [(c, cell) for c in calibrations if (c.dataset, c.preset) == (dataset, preset)
                for cell in c.cells if cell.scenario == scenario]
    if not measured:
        return "training converged: not measured for this scenario (benchmarks/calibrate.py)"
    tolerance = min(c.tolerance for c, _ in measured)
    moved = [f"{cell.method} {cell.largest_change:.1f}" for _, cell in measured]
    worst = max(cell.largest_change for _, cell in measured)
    lengths = ", ".join(sorted({f"{c.epochs[0]} -> {c.epochs[1]} epochs" + (
        f" (at least {c.min_steps[0]:,} -> {c.min_steps[1]:,} steps)" if c.min_steps else "") for c, _ in measured}))
    verdict = "yes" if worst <= tolerance else "no"
    return (f"training converged: {verdict} ({lengths} moved the self-tests of {', '.join(moved)} points at "
            f"most, seed {', '.join(sorted({str(cell.seed) for _, cell in measured}))}; tolerance {tolerance:g})")
