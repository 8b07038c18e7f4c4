"""A loaded record checked against itself: what the pages show must follow from what the record measured.

A checksum proves that a record was not damaged, not that it was written by the code: anyone can edit a
number and recompute it. So every summary the pages use is recomputed from the record's own matrices with
the metrics package (AA, AC, ACA and their curves, self/cross/old self of one update, P_com, P_up and the
update gain from the reference self-test), each matrix entry from its per-query outcomes where they are
stored, and the matrix size from the scenario kind (one update: 2 x 2). The backfilling curves start at the
cross-test C[t][k] and end at the new self-test C[t][t] of the record's matrix, with the areas their trapezoids give
(the oracle bound instead lies on or above every order's curve);
flip rates stored beside a summary (never read: pages recompute them) must be those of the per-query outcomes. A
record that disagrees beyond rounding is refused by the store.
"""
from __future__ import annotations

import math
from typing import Any

from benchbackcompat.scenarios.kinds import kind_class
from benchbackcompat.errors import BenchError
from benchbackcompat.metrics import compatibility as cm
from benchbackcompat.metrics import flips, live
from benchbackcompat.metrics import outcomes as per_query
from benchbackcompat.metrics.summary import summarise
from benchbackcompat.record import FinishedRecord

TOLERANCE = 1e-6  # points (or fraction, for AC): a summary recomputed from the same matrix agrees to rounding
F16_TOLERANCE = 0.05  # points: average precisions are stored as float16 (relative error <= 2^-11 each)
CHECKED = ("AA", "AC", "ACA", "AA_curve", "AC_curve", "self", "cross", "old_self", "reference_self", "p_com", "p_up",
           "update_gain")


def contradiction(record: FinishedRecord) -> str | None:
    """The first field of ``record`` that its own data contradicts, as ``field: why``; None when it holds together."""
    single = kind_class(record.kind).single_update
    for metric, C in record.matrices.items():
        if single and len(C) != 2:
            return f"matrices.{metric}: a {record.kind} record holds one update (2 x 2), not {len(C)} x {len(C)}"
    for metric, stored in record.outcomes.items():
        if (problem := _outcomes_contradict(record, metric, stored)) is not None:
            return problem
    if (problem := _backfill_contradicts(record)) is not None:
        return problem
    for metric, summary in record.metrics.items():
        if metric not in record.matrices:
            return f"metrics.{metric}: no matrix {metric} to recompute it from"
        if (problem := _flips_contradict(record, metric, summary.model_extra or {})) is not None:
            return problem
        expected = expected_summary(record.matrices[metric], summary.reference_self)
        if (metric_outcomes := record.outcomes.get(metric)) and metric_outcomes.get("reference_self"):
            reference = _score(metric_outcomes["reference_self"])
            if not _agree(summary.reference_self, reference, _tolerance(metric_outcomes["reference_self"])):
                return _mismatch(f"metrics.{metric}.reference_self", summary.reference_self, reference,
                                 "its per-query outcomes give")
        for name in CHECKED:  # those the record holds (an absent one is shown as not computed)
            if name == "reference_self" or name not in summary.model_fields_set:
                continue
            stored_value = getattr(summary, name)
            if not _agree(stored_value, expected.get(name), TOLERANCE):
                return _mismatch(f"metrics.{metric}.{name}", stored_value, expected.get(name), "its matrix gives")
    return None


def expected_summary(C: list[list[float | None]], reference_self: float | None) -> dict[str, Any]:
    """The summaries of matrix ``C`` as the engine computes them (``metrics.summary.summarise``), with P_com, P_up
    and the update gain of one update from the reference self-test (HBCT Eqs. 14-15, CoReS Eq. 3)."""
    matrix = [[math.nan if v is None else v for v in row] for row in C]
    expected = summarise(matrix)
    if len(C) == 2 and reference_self is not None:
        cross, old_self, new_self = expected["cross"], expected["old_self"], expected["self"]
        expected["p_com"] = cm.p_com(cross, old_self, reference_self)
        expected["p_up"] = cm.p_up(new_self, reference_self)
        expected["update_gain"] = cm.update_gain(cross, old_self, reference_self)
    return expected


def _outcomes_contradict(record: FinishedRecord, metric: str, stored: dict[str, Any]) -> str | None:
    """Whether the stored per-query outcomes of ``metric`` score the matrix entries they stand behind."""
    C = record.matrices.get(metric)
    entries = stored.get("C") or []
    if entries and C is None:
        return f"outcomes.{metric}: per-query outcomes without a matrix {metric}"
    for t, row in enumerate(entries):
        for k, entry in enumerate(row):
            if entry is None:
                continue
            where = f"matrices.{metric}[{t}][{k}]"
            try:
                value = _score(entry)
            except (BenchError, TypeError, ValueError) as error:
                return f"outcomes.{metric}.C[{t}][{k}]: cannot be decoded ({error})"
            if not _agree(C[t][k], value, _tolerance(entry)):
                return _mismatch(where, C[t][k], value, "its per-query outcomes give")
    return None


def _backfill_contradicts(record: FinishedRecord) -> str | None:
    """Whether a backfilling curve leaves the matrix's cross-test, misses its new self-test or has another area."""
    for pair in (record.backfill or {}).get("pairs", []):
        old, new, x = pair["old"], pair["new"], pair["fractions"]
        for metric, by_order in pair["curves"].items():
            C = record.matrices.get(metric)
            where = f"backfill {old} -> {new} {metric}"
            if C is None:
                return f"{where}: no matrix {metric} for its curves to start and end on"
            for order, curve in by_order.items():
                if order == live.BOUND:
                    if (problem := _bound_contradicts(curve, by_order, where)) is not None:
                        return problem
                for point, expected, what in ((0, C[new][old], "cross-test"), (-1, C[new][new], "new self-test")):
                    if order != live.BOUND and not _agree(curve[point], expected, TOLERANCE):
                        return _mismatch(f"{where}/{order} at {100 * x[point]:g}%", curve[point], expected,
                                         f"the matrix's {what} C[{new}][{old if point == 0 else new}] is")
                area = _trapezoid_mean(x, curve)
                if not _agree(pair["auc"][metric][order], area, TOLERANCE):
                    return _mismatch(f"{where}/{order} area", pair["auc"][metric][order], area, "its curve gives")
    return None


def _bound_contradicts(bound: list[float], by_order: dict[str, list[float]], where: str) -> str | None:
    """Whether the oracle bound falls below another order's curve at some step (it is their ceiling)."""
    for order, curve in by_order.items():
        for point, (ceiling, value) in enumerate(zip(bound, curve)):
            if ceiling is not None and value is not None and ceiling < value - TOLERANCE:
                return (f"{where}/{live.BOUND} at step {point} is {ceiling:.6g}, below the {order} order's "
                        f"{value:.6g}: the bound must be the ceiling of every order")
    return None


def _trapezoid_mean(x: list[float], y: list[float | None]) -> float | None:
    """The trapezoidal mean of ``y`` over ``x`` (``metrics.backfill.area_under_curve``); None where a point is not
    computable."""
    if any(v is None or math.isnan(v) for v in y):
        return None
    return sum((x[i + 1] - x[i]) * (y[i + 1] + y[i]) / 2 for i in range(len(x) - 1)) / (x[-1] - x[0])


def _flips_contradict(record: FinishedRecord, metric: str, stored: dict[str, Any]) -> str | None:
    """Whether flip rates stored in a summary differ from those of the per-query outcomes (or have none behind them)."""
    found = {key: stored[key] for key in flips.KEYS if key in stored}
    if not found:
        return None
    try:
        expected = flips.summary(record.outcomes.get(metric) or {}) if flips.defined_for(metric) else {}
    except (BenchError, TypeError, ValueError, KeyError):
        expected = {}
    for key, value in found.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            return f"metrics.{metric}.{key} is {str(value)[:20]!r}, not a rate"
        if not _agree(value, expected.get(key), F16_TOLERANCE):
            return _mismatch(f"metrics.{metric}.{key}", value, expected.get(key), "its per-query outcomes give")
    return None


def _score(entry: Any) -> float:
    if not isinstance(entry, dict):
        raise TypeError(f"expected an encoded outcome, got {type(entry).__name__}")
    return per_query.score(per_query.decode(entry))


def _tolerance(entry: Any) -> float:
    return F16_TOLERANCE if isinstance(entry, dict) and entry.get("encoding") == "f16" else TOLERANCE


def _agree(stored: Any, expected: Any, tolerance: float) -> bool:
    """Equal to rounding; None and NaN (not computable) agree with each other only. Lists element-wise."""
    if isinstance(stored, list) or isinstance(expected, list):
        return (isinstance(stored, list) and isinstance(expected, list) and len(stored) == len(expected)
                and all(_agree(a, b, tolerance) for a, b in zip(stored, expected)))
    missing = [v is None or (isinstance(v, float) and math.isnan(v)) for v in (stored, expected)]
    if any(missing):
        return all(missing)
    return math.isclose(float(stored), float(expected), rel_tol=1e-9, abs_tol=tolerance)


def _mismatch(field: str, stored: Any, expected: Any, source: str) -> str:
    return f"{field} is {_text(stored)} but {source} {_text(expected)}"


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "none"
    return f"{float(value):.6g}"

