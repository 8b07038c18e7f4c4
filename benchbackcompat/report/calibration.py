"""Calibration evidence beside the records: did a scale's training converge?

``benchbackcompat calibrate --summary`` trains a preset's cells as given and with 50% more epochs and
writes what it measured as JSON; ``benchbackcompat leaderboard`` reads every ``calibration/*.json``
of its results folders, and the claims page names, for each scenario it tests, how far the
self-tests moved (a converged scale: 50% more training moves no self-test by more than the tolerance, 2 points).

One seed's self-test on 1,000 queries has a 95% interval of about +-3 points, wider than the tolerance, so a
point change decides nothing. Each self-test's change is therefore averaged over the calibrated seeds with a
95% interval (``metrics.bootstrap``: both lengths answer the same queries, so one resample of the queries serves
both, combined with the spread over seeds): *within* the tolerance when the interval lies inside
[-tolerance, +tolerance], *beyond* it when the interval lies entirely outside, else *undecided*.
"""
from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ValidationError

from benchbackcompat.errors import BenchError
from benchbackcompat.metrics import bootstrap, outcomes
from benchbackcompat.record import FinishedRecord

FOLDER = "calibration"
WITHIN, BEYOND, UNDECIDED = "within", "beyond", "undecided"


class CalibratedCell(BaseModel):
    """One cell trained at both lengths: each self-test (model t, old_self, reference_self) as (as given, longer)."""

    scenario: str
    method: str
    seed: int
    self_tests: dict[str, tuple[float, float]]

    @property
    def largest_change(self) -> float:
        return max(abs(longer - given) for given, longer in self.self_tests.values())


class ChangeInterval(BaseModel):
    """One self-test's change (points, longer - as given) averaged over ``seeds``, with its 95% interval."""

    scenario: str
    method: str
    model: str
    seeds: list[int]
    mean: float
    low: float
    high: float
    queries: int | None = None  # per seed, the queries each self-test answered (older summaries: not recorded)

    def verdict(self, tolerance: float) -> str:
        if -tolerance <= self.low and self.high <= tolerance:
            return WITHIN
        if self.low > tolerance or self.high < -tolerance:
            return BEYOND
        return UNDECIDED

    @property
    def change(self) -> str:
        return f"{self.mean:+.1f} [{self.low:+.1f}, {self.high:+.1f}]"

    def describe(self) -> str:
        return f"{self.method} {self.model} {self.change}"


class Calibration(BaseModel):
    """What one ``benchbackcompat calibrate`` run measured on one preset and dataset."""

    preset: str
    dataset: str
    metric: str
    epochs: tuple[int, int]
    min_steps: tuple[int, int] | None = None  # the step floor (train.min_steps) at both lengths, where set
    tolerance: float
    command: str
    cells: list[CalibratedCell]
    changes: list[ChangeInterval] = []  # per scenario, method and self-test, over the seeds (older summaries: none)

    @property
    def start(self) -> tuple[int, int]:
        """The length the calibration started from, (train.epochs, train.min_steps), as the tables it judges trained."""
        return self.epochs[0], self.min_steps[0] if self.min_steps else 0


def self_test_outcomes(record: FinishedRecord, metric: str) -> dict[str, np.ndarray]:
    """The per-query outcomes behind each self-test of ``record``, named as ``CalibratedCell.self_tests``: model t
    (diagonal entry C[t][t]; the old model P_com uses is model 0) and reference_self ({} without outcomes)."""
    stored = record.outcomes.get(metric) or {}
    entries = stored.get("C") or []
    found = {f"model {t}": outcomes.decode(entries[t][t]) for t in range(len(entries)) if entries[t][t]}
    if stored.get("reference_self"):
        found["reference_self"] = outcomes.decode(stored["reference_self"])
    return found


def change_intervals(pairs: Sequence[tuple[FinishedRecord, FinishedRecord]], metric: str) -> list[ChangeInterval]:
    """Each self-test's change from the record as given to its longer run, over the seeds of ``pairs`` (records
    of the same scenario, method, hyperparameters and seed, evaluated on the same queries)."""
    per_seed: dict[tuple[str, str, str, str], list[tuple[int, float, np.ndarray, int]]] = defaultdict(list)
    for given, longer in pairs:
        before, after = self_test_outcomes(given, metric), self_test_outcomes(longer, metric)
        for model in before.keys() & after.keys():
            if len(before[model]) != len(after[model]):
                raise BenchError(f"{given.label} {model}: the two lengths were evaluated on different queries "
                                 f"({len(before[model])} and {len(after[model])}); calibrate the same data")
            weights = bootstrap.query_weights(len(before[model]), int(given.seed))
            scores = bootstrap.resampled_scores(np.stack([before[model], after[model]]), weights)
            change = outcomes.score(after[model]) - outcomes.score(before[model])
            key = (given.scenario, given.method, json.dumps(given.params, sort_keys=True), model)
            per_seed[key].append((int(given.seed), change, scores[:, 1] - scores[:, 0], len(before[model])))
    changes = []
    for (scenario, method, _, model), seeds in sorted(per_seed.items()):
        seeds.sort(key=lambda seed: seed[0])
        low, high = bootstrap.interval(bootstrap.over_seeds([s[1] for s in seeds], [s[2] for s in seeds],
                                                            [s[0] for s in seeds]))
        changes.append(ChangeInterval(scenario=scenario, method=method, model=model, seeds=[s[0] for s in seeds],
                                      mean=statistics.fmean(s[1] for s in seeds), low=low, high=high,
                                      queries=max(s[3] for s in seeds)))
    return changes


def read_calibrations(roots: list[Path]) -> list[Calibration]:
    """The calibration summaries stored in ``ROOT/calibration/*.json`` of the results folders."""
    found = []
    for path in sorted(p for root in roots for p in (Path(root) / FOLDER).glob("*.json")):
        try:
            found.append(Calibration.model_validate(json.loads(path.read_text())))
        except (ValueError, ValidationError) as error:
            first = str(error).splitlines()[0]
            raise BenchError(f"{path}: not a calibration summary ({first}); rewrite it with "
                             "`benchbackcompat calibrate --summary` or delete it") from None
    return found


def _length_text(epochs: int, min_steps: int) -> str:
    return f"{epochs} epochs" + (f", at least {min_steps:,} steps" if min_steps else "")


def convergence(calibrations: Sequence[Calibration], dataset: str, preset: str, scenario: str,
                methods: Collection[str] = (), length: tuple[int, int] | None = None) -> str:
    """The "training converged" line of a claim tested on this table: measured changes, or why there are none.
    ``methods``: the claim's rows; the verdict rests on those of them that were calibrated (see
    ``_interval_verdict``). ``length``: the table's (train.epochs, train.min_steps); a calibration that started
    from another length says nothing about it (the floor's 4,000 -> 6,000 steps do not judge a 12,000-step table)."""
    matching = [c for c in calibrations if (c.dataset, c.preset) == (dataset, preset)]
    measured = [(c, cell) for c in matching for cell in c.cells if cell.scenario == scenario]
    if not measured:
        return "training converged: not measured for this scenario (benchbackcompat calibrate)"
    if length is not None:
        if all(c.start != length for c, _ in measured):
            calibrated = sorted({_length_text(*c.start) for c, _ in measured})
            return (f"training converged: not measured at this table's length ({_length_text(*length)}; "
                    f"calibrated from {' and '.join(calibrated)})")
        matching = [c for c in matching if c.start == length]
        measured = [(c, cell) for c, cell in measured if c.start == length]
    tolerance = min(c.tolerance for c, _ in measured)
    lengths = ", ".join(sorted({f"{c.epochs[0]} -> {c.epochs[1]} epochs" + (
        f" (at least {c.min_steps[0]:,} -> {c.min_steps[1]:,} steps)" if c.min_steps else "") for c, _ in measured}))
    changes = [change for c in matching for change in c.changes if change.scenario == scenario]
    if changes:
        return _interval_verdict(changes, tolerance, lengths, methods)
    moved = [f"{cell.method} {cell.largest_change:.1f}" for _, cell in measured]
    worst = max(cell.largest_change for _, cell in measured)
    verdict = "yes" if worst <= tolerance else "no"
    return (f"training converged: {verdict} ({lengths} moved the self-tests of {', '.join(moved)} points at "
            f"most, seed {', '.join(sorted({str(cell.seed) for _, cell in measured}))}; tolerance {tolerance:g})")


def _interval_verdict(changes: list[ChangeInterval], tolerance: float, lengths: str,
                      methods: Collection[str] = ()) -> str:
    """yes when every judged change lies within the tolerance, no when one lies beyond it, else undecidable; then
    each calibrated method's own verdict with the change that decides it (the largest beyond, else the largest
    undecided, else the largest). Judged: the claim's ``methods`` that were calibrated; where none was,
    independent's models (the old model and reference that P_com divides by, shared by the methods that train
    the standard models); else every calibrated method. So HBCT's Lorentz models do not decide a claim about BCT."""
    by_method: dict[str, dict[str, list[ChangeInterval]]] = defaultdict(lambda: defaultdict(list))
    for change in sorted(changes, key=lambda c: -abs(c.mean)):
        by_method[change.method][change.verdict(tolerance)].append(change)
    decided = {}
    for method, verdicts in sorted(by_method.items()):
        verdict = next(v for v in (BEYOND, UNDECIDED, WITHIN) if verdicts[v])
        decided[method] = (verdict, verdicts[verdict][0])
    judged = ([m for m in decided if m in methods] or [m for m in decided if m == "independent"]) if methods else []
    judged = judged or list(decided)
    overall = {decided[m][0] for m in judged}
    verdict = "no" if BEYOND in overall else "undecidable" if UNDECIDED in overall else "yes"
    seeds = sorted({seed for change in changes for seed in change.seeds})
    sizes = sorted({change.queries for change in changes if change.queries})
    span = "" if not sizes else f"{sizes[0]:,}" if len(sizes) == 1 else f"{sizes[0]:,}-{sizes[-1]:,}"
    queries = f" ({span} queries a seed)" if span else ""
    basis = "" if len(judged) == len(decided) else f"judged on {', '.join(judged)}; "
    listed = "; ".join(f"{method}: {v}, {c.model} {c.change}" for method, (v, c) in decided.items())
    return (f"training converged: {verdict} ({basis}{lengths}, mean change of each self-test over seed "
            f"{', '.join(map(str, seeds))}{queries} with its 95% interval against ±{tolerance:g} points; {listed})")
