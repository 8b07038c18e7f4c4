"""A live gallery's numbers as scalar statistics of a record, where its scenario set the evaluation options: the area
under each order's backfilling curve, the curve's lowest point against the old self-test and where it lies
(``metrics.backfill``; Hot-Refresh, ICLR 2022; FastFill, ICLR 2023), and the gap between exact retrieval and retrieval
through each FAISS index (``metrics.index``). For a sequence of models, the mean over its consecutive updates (the
curves) or over its entries (the index), as the flip rates are.

Keys: ``auc_<order>`` (%), ``dip_<order>`` (the curve's lowest point minus the old self-test C[k][k], points: below 0
the refresh regresses below what the old model served), ``dip_at_<order>`` (% of the gallery refreshed at that point),
``nfr_max_<order>`` (the highest NFR along the curve against the old self-test, %: ``metrics.curve_steps``; records
with per-step outcomes), ``auc_permutations_random`` (the random order's area, mean over its permutations; records
with several), ``gap_cross_<kind>`` and ``gap_self_<kind>`` (exact − index, points, over the cross-tests k < t and the
self-tests k = t).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from benchbackcompat.metrics import curve_steps, flips, outcomes

BOUND = "oracle-bound"  # the ceiling of every refresh order's curve (``metrics.refresh.least_refreshes``)
ORDERS = ("random", "class-distance", "class-balanced", "uncertainty", "hbct-uncertainty", "learned", "oracle", BOUND)
INDEX_KINDS = ("flat", "ivf-pq")
BACKFILL_KEYS = tuple(f"{what}_{order}" for order in ORDERS for what in ("auc", "dip", "dip_at", "nfr_max")) \
    + ("auc_permutations_random",)
INDEX_KEYS = tuple(f"gap_{which}_{kind}" for kind in INDEX_KINDS for which in ("cross", "self"))
KEYS = BACKFILL_KEYS + INDEX_KEYS

Matrix = Sequence[Sequence[float | None]]


def backfill_values(backfill: dict[str, Any] | None, matrix: Matrix | None, metric: str) -> dict[str, float]:
    """``auc_<order>``, ``dip_<order>`` and ``dip_at_<order>`` of ``metric`` (means over the updates), {} without curves.
    ``matrix``: the record's compatibility matrix of ``metric`` (the old self-tests the dips are measured from)."""
    found: dict[str, list[float]] = {}
    for pair in (backfill or {}).get("pairs", []):
        curves = (pair.get("curves") or {}).get(metric) or {}
        old = _entry(matrix, pair["old"], pair["old"])
        fractions = np.asarray(pair["fractions"], dtype=float)
        for order, curve in curves.items():
            found.setdefault(f"auc_{order}", []).append(float(pair["auc"][metric][order]))
            values = np.asarray(curve, dtype=float)
            if old is not None and len(values) == len(fractions) and np.isfinite(values).all():
                lowest = int(np.argmin(values))
                found.setdefault(f"dip_{order}", []).append(float(values[lowest]) - old)
                found.setdefault(f"dip_at_{order}", []).append(100.0 * float(fractions[lowest]))
        for key, value in step_values(pair, metric).items():
            found.setdefault(key, []).append(value)
    return {key: float(np.mean(values)) for key, values in found.items()}


def step_values(pair: dict[str, Any], metric: str) -> dict[str, float]:
    """``nfr_max_<order>`` (not of the oracle bound) and ``auc_permutations_random`` of one update's curves of
    ``metric``, where the record holds per-step outcomes and further permutations ({} for records written before
    them)."""
    found = {}
    old_self = (pair.get("old_self") or {}).get(metric)
    if old_self is not None and flips.defined_for(metric):
        reference = outcomes.decode(old_self)
        for order, steps in ((pair.get("outcomes") or {}).get(metric) or {}).items():
            if order == BOUND:  # each query with its own refresh: no flips of one gallery
                continue
            found[f"nfr_max_{order}"] = float(np.nanmax(curve_steps.step_rates(reference, curve_steps.decoded(steps))[0]))
    drawn = (pair.get("permutations") or {}).get(metric)
    if drawn and "random" in pair["auc"].get(metric, {}):
        found["auc_permutations_random"] = float(np.mean([pair["auc"][metric]["random"], *(p["auc"] for p in drawn)]))
    return found


def index_values(index: dict[str, Any] | None, matrix: Matrix | None, metric: str) -> dict[str, float]:
    """``gap_cross_<kind>`` and ``gap_self_<kind>`` of ``metric``: exact − through the index, mean over the entries
    both score (points); {} without index scores."""
    found = {}
    exact = _array(matrix)
    for kind, by_metric in ((index or {}).get("matrices") or {}).items():
        through = _array(by_metric.get(metric))
        if exact is None or through is None or through.shape != exact.shape:
            continue
        t, k = np.tril_indices(len(exact))
        for which, mask in (("cross", k < t), ("self", k == t)):
            e, i = exact[t[mask], k[mask]], through[t[mask], k[mask]]
            both = np.isfinite(e) & np.isfinite(i)
            if both.any():
                found[f"gap_{which}_{kind}"] = float(np.mean(e[both] - i[both]))
    return found


def _entry(matrix: Matrix | None, t: int, k: int) -> float | None:
    try:
        value = matrix[t][k] if matrix is not None else None
    except IndexError:
        return None
    return float(value) if value is not None and math.isfinite(float(value)) else None


def _array(matrix: Matrix | None) -> np.ndarray | None:
    if not matrix:
        return None
    return np.array([[math.nan if v is None else float(v) for v in row] for row in matrix], dtype=float)
