"""The statistics of a table's cells over seeds, with 95% intervals.

Intervals bootstrap the stored per-query outcomes, combined with the spread over seeds in an interval
honest for their number (``metrics.bootstrap``); the flip rates (``metrics.flips``) are derived from the same
outcomes when the tables are built (records need not store them). P_com is shown only where the update it divides
by (reference self - old self) is significantly positive and at least ``MIN_UPDATE_GAIN`` points. A row whose
self-test is below ``chance_floor`` (twice chance, or a fifth of the way to 100% where chance is high) is flagged
(``report.ranking`` does not rank it).
"""
from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np

from benchbackcompat import evaluations
from benchbackcompat.errors import BenchError
from benchbackcompat.metrics import bootstrap, flips, live, outcomes
from benchbackcompat.record import FinishedRecord
from benchbackcompat.report.columns import STATISTICS, Column
from benchbackcompat.report.table_data import Missing, Row, Stat
from benchbackcompat.runtime.memo import IdentityMemo

MIN_UPDATE_GAIN = 10.0  # points: below this reference self - old self, P_com divides by noise (a 6-point update
# on 600 queries gives P_com intervals two units wide)
CHANCE_FACTOR = 2.0  # a self-test below this multiple of chance marks a model at chance level
CHANCE_SHARE = 0.2  # ... or, where chance is high (pair verification: 50%), below this share of the way to 100%


def chance_floor(chance: float) -> float:
    """The self-test (%) below which a model is at chance level: ``CHANCE_FACTOR`` x chance, or ``CHANCE_SHARE`` of
    the way from chance to 100% where that is lower (twice the 50% of pair verification would be 100%)."""
    return min(CHANCE_FACTOR * chance, chance + CHANCE_SHARE * (100.0 - chance))


def fill_row(row: Row, columns: list[Column]) -> None:
    """The row's cells (a statistic over its finished seeds, or why there is none), notes and chance level."""
    finished = row.finished
    unfinished = [r for r in row.records if not isinstance(r, FinishedRecord)]
    if not finished:
        status = unfinished[0].status
        text = "nan" if status == "diverged" else "-"
        reason = f"{status}: {unfinished[0].reason}".rstrip(": ")
        row.cells = {c.id: Missing(text, reason, status.replace("-", " ")) for c in columns}
        return
    for record in unfinished:
        row.notes.append(f"seed {record.seed} {record.status}: {record.reason}".rstrip(": "))
    replicates = [record_replicates(r) for r in finished]
    flip_rates = [{m: record_flips(r, m) for m in dict.fromkeys(c.metric for c in columns)} for r in finished]
    for column in columns:
        row.cells[column.id] = _stat(finished, replicates, flip_rates, column.metric, column.statistic.key) or Missing(
            "-", _why_missing(finished[0], column))
    for column in columns:
        if column.statistic.key == "p_com":
            hidden = undecidable_update(_stat(finished, replicates, flip_rates, column.metric, "gain"))
            if hidden is not None:
                row.cells[column.id] = hidden
    row.chance = _chance_reason(finished, columns)


def _stat(records: list[FinishedRecord], replicates: list[dict], flip_rates: list[dict[str, dict[str, float]]],
          metric: str, key: str) -> Stat | None:
    """The statistic ``key`` of ``metric`` over the seeds with a finite value; replicates combined over
    those seeds when each of them has some. ``flip_rates``: each record's :func:`record_flips` per metric."""
    values, reps, seeds = [], [], []
    for record, rep, rates in zip(records, replicates, flip_rates):
        value = _metric_value(record, metric, key, rates.get(metric, {}))
        if value is not None:
            values.append(value)
            reps.append(rep.get(metric, {}).get(key))
            seeds.append(record.seed)
    if not values:
        return None
    if key in live.KEYS and len(values) > 1:  # no per-query outcomes: the t-interval over the seeds alone
        reps = [np.full(1, v) for v in values]
    combined = bootstrap.over_seeds(values, reps, seeds) if all(r is not None for r in reps) else None
    statistic = STATISTICS.get(key)
    return Stat(tuple(values), combined, statistic.bounds if statistic else (-math.inf, math.inf))


def records_stat(records: list[FinishedRecord], metric: str, key: str) -> Stat | None:
    """The statistic ``key`` of ``metric`` over ``records`` alone, as a table cell would show it over them (e.g. a
    claim's declared seeds of a row that holds more)."""
    return _stat(records, [record_replicates(r) for r in records], [{metric: record_flips(r, metric)} for r in records],
                 metric, key)


def _metric_value(record: FinishedRecord, metric: str, key: str, flip_rates: dict[str, float]) -> float | None:
    summary = record.metrics.get(metric)
    if summary is None:
        return None
    if key in flips.KEYS + flips.FIRST_KEYS:
        value = flip_rates.get(key)
        return value if value is not None and math.isfinite(value) else None
    if key in live.KEYS:
        return evaluations.statistics(record, metric).get(key)
    if key == "gain":  # the update P_com divides by: the independent new model's self-test minus the old self-test
        new, old = summary.reference_self, summary.old_self
        return None if new is None or old is None else float(new) - float(old)
    value = summary.statistic(key)
    return float(value) if value is not None and math.isfinite(float(value)) else None


def record_flips(record: FinishedRecord, metric: str) -> dict[str, float]:
    """The flip rates of ``metric`` (``metrics.flips.summary``) from the record's per-query outcomes; {} without
    them or where they are not defined (average precisions)."""
    if not flips.defined_for(metric):
        return {}
    try:
        return flips.summary(record.outcomes.get(metric) or {})
    except (BenchError, KeyError, TypeError, ValueError):
        return {}


def undecidable_update(gain: Stat | None) -> Missing | None:
    """The "–" cell of a P_com that is not shown, saying why (None when it is shown): the update it divides by must
    be significantly positive and at least ``MIN_UPDATE_GAIN`` points."""
    if gain is None:
        return Missing("–", "P_com not shown: the record has no reference self-tests", "no reference")
    text = f"{gain.mean:.2f}"
    if gain.interval is not None:
        text += f" [{gain.interval[0]:.2f}, {gain.interval[1]:.2f}]"
    if gain.interval is not None and not gain.interval[0] > 0:
        why, word = "is not significantly positive", "update not > 0"
    elif gain.mean < MIN_UPDATE_GAIN:
        why, word = f"is below the minimum of {MIN_UPDATE_GAIN:g} points", f"update < {MIN_UPDATE_GAIN:g} pts"
    else:
        return None
    return Missing("–", f"P_com not shown: the update it divides by, reference self − old self = {text} points, {why}",
                   word)


def gain_stat(records: list[FinishedRecord], metric: str, replicates: dict[tuple[str, str], np.ndarray]) -> Stat | None:
    """The update P_com divides by (reference self − old self) over one row's seeds, as the tables' "gain" statistic;
    ``replicates``: :func:`gain_replicates` of (at least) these records."""
    values, reps, seeds = [], [], []
    for record in records:
        summary = record.metrics.get(metric)
        if summary is None or summary.reference_self is None or summary.old_self is None:
            continue
        values.append(float(summary.reference_self) - float(summary.old_self))
        reps.append(replicates.get((record.key, metric)))
        seeds.append(record.seed)
    if not values:
        return None
    return Stat(tuple(values), bootstrap.over_seeds(values, reps, seeds) if all(r is not None for r in reps) else None)


def gain_replicates(records: Iterable[FinishedRecord], metrics: Iterable[str]) -> dict[tuple[str, str], np.ndarray]:
    """(record key, metric) -> bootstrap replicates of reference self − old self for one-update records with both
    self-tests' outcomes, as :func:`record_replicates` resamples them (the same query weights) but from those two
    entries only, in one matrix product per query count and seed: cheap enough for every DataFrame."""
    wanted = set(metrics)
    pairs: dict[tuple[int, int], list[tuple[tuple[str, str], np.ndarray, np.ndarray]]] = defaultdict(list)
    for record in records:
        for metric in wanted & set(record.outcomes):
            stored = record.outcomes[metric] or {}
            try:
                entries = stored.get("C") or []
                if len(entries) != 2 or entries[0][0] is None or not stored.get("reference_self"):
                    continue
                old, new = outcomes.decode(entries[0][0]), outcomes.decode(stored["reference_self"])
            except (BenchError, KeyError, TypeError, ValueError):
                continue
            if len(old) == len(new):
                pairs[(len(old), int(record.seed))].append(((record.key, metric), old, new))
    found = {}
    for (n, seed), members in pairs.items():
        stacked = np.stack([vector for _, old, new in members for vector in (old, new)])
        scores = bootstrap.resampled_scores(stacked, bootstrap.query_weights(n, seed))
        found.update({key: scores[:, 2 * i + 1] - scores[:, 2 * i] for i, (key, _, _) in enumerate(members)})
    return found


def margin(row: Row, metric: str) -> tuple[float, tuple[float, float] | None] | None:
    """A one-update row's compatibility margin, cross − its own old self-test (> 0: compatible): (mean over seeds,
    95% interval of the paired difference, None without replicates); None without both tests."""
    cross, old = row.cells.get(f"{metric}:cross"), row.cells.get(f"{metric}:old_self")
    if not (isinstance(cross, Stat) and isinstance(old, Stat)):
        return None
    interval = None
    if cross.replicates is not None and old.replicates is not None:
        interval = bootstrap.interval(cross.replicates - old.replicates)
    return cross.mean - old.mean, interval


def record_replicates(record: FinishedRecord) -> dict[str, dict[str, np.ndarray]]:
    """Bootstrap replicates of every statistic of a record, per metric, from its per-query outcomes
    ({} for a metric without outcomes, e.g. records written before outcomes were stored, verification ones included).
    Computed once per record object while it is among the last :data:`MEMO` asked for (tables, margins and claims
    ask again); the arrays are read-only."""
    return _REPLICATES.get(id(record), (record,), lambda: _record_replicates(record))


MEMO = 2048  # records whose replicates are kept (the published leaderboard has 1,311)
_REPLICATES = IdentityMemo(MEMO)


def _record_replicates(record: FinishedRecord) -> dict[str, dict[str, np.ndarray]]:
    result: dict[str, dict[str, np.ndarray]] = {}
    for metric, stored in record.outcomes.items():
        try:
            result[metric] = _replicates(stored, record.seed)
        except (BenchError, KeyError, TypeError, ValueError):
            continue  # unusable outcomes: the cell keeps its point value, without an interval
    for values in result.values():
        for array in values.values():
            array.setflags(write=False)
    return result


def _replicates(stored: dict[str, Any], seed: int) -> dict[str, np.ndarray]:
    entries = stored.get("C") or []
    T = len(entries)
    cells = [(t, k) for t in range(T) for k in range(t + 1) if entries[t][k] is not None]
    references = [name for name in ("reference_self",) if stored.get(name)]
    decoded = [outcomes.decode(entries[t][k]) for t, k in cells] + [outcomes.decode(stored[n]) for n in references]
    if not decoded:
        return {}
    if len({len(d) for d in decoded}) != 1:
        raise ValueError("entries evaluated on different query sets")
    scores = bootstrap.resampled_scores(np.stack(decoded), bootstrap.query_weights(len(decoded[0]), int(seed)))
    C = np.full((scores.shape[0], T, T), np.nan)
    for i, (t, k) in enumerate(cells):
        C[:, t, k] = scores[:, i]
    values = bootstrap.batched_matrix_statistics(C)
    if all(flips.is_hits(d) for d in decoded):
        values.update(flips.resampled(stored, bootstrap.query_weights(len(decoded[0]), int(seed))))
    if T == 2:
        values.update(self=C[:, 1, 1], cross=C[:, 1, 0], old_self=C[:, 0, 0])
        if references and entries[0][0] is not None:
            old, new = C[:, 0, 0], scores[:, len(cells)]  # P_com divides by the cross-test's gallery model's self-test
            with np.errstate(invalid="ignore", divide="ignore"):
                values.update(reference_self=new, gain=new - old,
                              p_com=(values["cross"] - old) / (new - old), p_up=(values["self"] - new) / new)
    return values


def _chance_reason(records: list[FinishedRecord], columns: list[Column]) -> str:
    """Why a row is at chance level ("" when it is not): its weakest self-test (old and new model for one
    update, every model of a sequence), averaged over seeds, is below ``CHANCE_FACTOR`` x the chance level
    of the table's first metric (:func:`chance_floor`)."""
    metric = columns[0].metric if columns else None
    chances = [r.chance.get(metric) for r in records]
    if metric is None or any(c is None for c in chances):
        return ""
    weakest = []
    for record in records:
        C = record.matrices.get(metric) or []
        diagonal = [C[i][i] for i in range(len(C)) if C[i][i] is not None and math.isfinite(C[i][i])]
        if not diagonal:
            return ""
        weakest.append(min(diagonal))
    chance, self_test = statistics.fmean(chances), statistics.fmean(weakest)
    if self_test >= chance_floor(chance):
        return ""
    return (f"at chance level: its weakest self-test ({self_test:.2f}) is below {chance_floor(chance):.2f} (chance "
            f"{chance:.2f}) in {metric}; not ranked")


def _why_missing(record: FinishedRecord, column: Column) -> str:
    if column.metric not in record.metrics:
        return f"{column.metric} was not measured in this run"
    if record.notes:
        return "not computed: " + "; ".join(record.notes)
    if column.statistic.key in flips.FIRST_KEYS and column.metric in record.outcomes:
        return "first-gallery flips need the per-query hits of C[0][0] and of the last model's C[T-1][0]"
    if column.statistic.key in flips.KEYS + flips.FIRST_KEYS:
        if column.metric not in record.outcomes:
            return "flip rates need per-query outcomes, and this record stored none"
        return "flip rates are defined for hit outcomes (0/1), not for average precisions"
    if column.statistic.key == "p_com":
        return "P_com undefined: the independently trained new model scores the same as the old model (zero denominator)"
    if column.statistic.key == "p_up":
        return "P_up undefined: the independently trained new model scores 0 (zero denominator)"
    return f"{column.header} could not be computed (the stored record has no value)"
