"""Negative and positive flips between two matrix entries, from their stored per-query outcomes.

A negative flip is a query that the earlier entry answers correctly and the later one wrongly; the negative flip
rate (NFR) is their share of the queries, the positive flip rate (PFR) the share of the reverse (Yan et al.,
"Positive-Congruent Training: Towards Regression-Free Model Updates", CVPR 2021; used for compatible training by
Zhang et al., "Hot-Refresh Model Upgrades with Regression-Free Compatible Training in Image Retrieval", ICLR 2022).

Each update pair k -> t has two: old self -> cross (C[k][k] -> C[t][k], what the upgrade breaks before any
backfill) and old self -> new self (C[k][k] -> C[t][t], what stays broken after a full backfill). A sequence of
models reports its consecutive pairs (k = t - 1) and their mean, and, for a team that never backfills and so keeps
the first gallery, the first-gallery pairs (t, 0): C[0][0] -> C[t][0] for every later model t (``FIRST_KEYS``: that of
the last model). Rates are in % of the queries that both entries
count (an entry skips a query with NaN, e.g. one of a class its gallery model has not seen: then the old model's
queries); on them, cross - old self = PFR - NFR. Defined for hit outcomes only (0/1: CMC@k, top-1, verification
pairs); for average precisions (mAP) a flip is not defined.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from benchbackcompat.errors import BenchError
from benchbackcompat.metrics import outcomes

KEYS = ("nfr_cross", "pfr_cross", "nfr_self", "pfr_self")
FIRST_KEYS = ("nfr_first", "pfr_first")  # C[0][0] -> C[T-1][0]: the last model's queries on the first gallery
AVERAGE_PRECISION = ("map", "map@r")  # metrics whose outcomes are average precisions, not hits


def defined_for(metric: str) -> bool:
    """Whether ``metric`` scores hits (flips defined) rather than average precisions."""
    return metric not in AVERAGE_PRECISION


def is_hits(values: np.ndarray) -> bool:
    """Whether per-query outcomes are hits: every counted (non-NaN) value is 0 or 1."""
    counted = values[~np.isnan(values)]
    return bool(np.isin(counted, (0.0, 1.0)).all())


def flip_masks(before: np.ndarray, after: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(negative, positive, counted) per query: correct before and wrong after, the reverse, and counted by both
    entries. A BenchError when the entries hold different numbers of queries or are not hits."""
    before, after = np.asarray(before, dtype=np.float64), np.asarray(after, dtype=np.float64)
    if before.shape != after.shape:
        raise BenchError(f"flips compare the same queries: the entries hold {before.shape[0]} and {after.shape[0]}")
    if not (is_hits(before) and is_hits(after)):
        raise BenchError("flips are defined for hit outcomes (0/1) only, not average precisions")
    counted = ~np.isnan(before) & ~np.isnan(after)
    return counted & (before == 1) & (after == 0), counted & (before == 0) & (after == 1), counted


def rates(before: np.ndarray, after: np.ndarray) -> tuple[float, float]:
    """(NFR, PFR) in % of the queries both entries count; NaN when they count none."""
    return masked_rates(*flip_masks(before, after))


def masked_rates(negative: np.ndarray, positive: np.ndarray, counted: np.ndarray) -> tuple[float, float]:
    """(NFR, PFR) of :func:`flip_masks`' masks, in % of the counted queries; NaN when none is counted."""
    n = int(counted.sum())
    return (100.0 * negative.sum() / n, 100.0 * positive.sum() / n) if n else (float("nan"), float("nan"))


def pairs(T: int, first: bool = False) -> list[tuple[int, int]]:
    """The update pairs (t, k) flips are reported for: the consecutive ones, k = t - 1; with ``first`` those on the
    first gallery, k = 0 (a team that never backfills)."""
    return [(t, 0 if first else t - 1) for t in range(1, T)]


def pair_masks(stored: dict[str, Any], first: bool = False) -> list[tuple[int, int, dict[str, tuple[np.ndarray, ...]]]]:
    """For each pair (t, k) of :func:`pairs` whose three entries C[k][k], C[t][k], C[t][t] are stored: its flip masks
    old self -> cross and old self -> new self, from a record's stored outcomes of one metric (``{"C": [[encoded]]}``)."""
    entries = stored.get("C") or []
    found = []
    for t, k in pairs(len(entries), first):
        old, cross, new = entries[k][k], entries[t][k], entries[t][t]
        if old is None or cross is None or new is None:
            continue
        old_self = outcomes.decode(old)
        found.append((t, k, {"cross": flip_masks(old_self, outcomes.decode(cross)),
                             "self": flip_masks(old_self, outcomes.decode(new))}))
    return found


def pair_rates(stored: dict[str, Any], first: bool = False) -> list[dict[str, float | int]]:
    """One dict per pair of :func:`pairs`: ``query_model`` t, ``gallery_model`` k, the four rates (%) of ``KEYS`` and
    the number of queries old self -> cross compares (``queries``)."""
    rows = []
    for t, k, masks in pair_masks(stored, first):
        row: dict[str, float | int] = {"query_model": t, "gallery_model": k, "queries": int(masks["cross"][2].sum())}
        for target, found in masks.items():
            row[f"nfr_{target}"], row[f"pfr_{target}"] = masked_rates(*found)
        rows.append(row)
    return rows


def last_first_pair(stored: dict[str, Any]) -> tuple[np.ndarray, ...] | None:
    """The flip masks C[0][0] -> C[T-1][0] of a sequence of at least three models (for one update they are the cross
    pair's), None where T < 3 or either entry is not stored."""
    entries = stored.get("C") or []
    if len(entries) < 3 or entries[0][0] is None or entries[-1][0] is None:
        return None
    return flip_masks(outcomes.decode(entries[0][0]), outcomes.decode(entries[-1][0]))


def summary(stored: dict[str, Any]) -> dict[str, float]:
    """The four rates of ``KEYS`` (%): of the one update pair, or the mean over a sequence's consecutive pairs; then,
    for a sequence, ``FIRST_KEYS``: the last model's queries on the first gallery; {} when no pair is stored."""
    rows = pair_rates(stored)
    found = {key: float(np.mean([row[key] for row in rows])) for key in KEYS} if rows else {}
    first = last_first_pair(stored)
    if first is not None:
        found.update(zip(FIRST_KEYS, map(float, masked_rates(*first))))
    return found


def resampled(stored: dict[str, Any], weights: np.ndarray) -> dict[str, np.ndarray]:
    """The rates of :func:`summary` in every bootstrap replicate (``weights``: replicates x queries, as
    ``bootstrap.query_weights``): one array of replicates per key. Every mask of every pair is counted in one matrix
    product (integer weights times 0/1 masks: exact sums, whatever their order)."""
    found, first = pair_masks(stored), last_first_pair(stored)
    if not found and first is None:
        return {}
    masks = np.stack([mask for _, _, pair in found for target in ("cross", "self") for mask in pair[target]]
                     + list(first or ()))
    # replicates x (pairs x 2 targets x (negative, positive, counted), then the first gallery's three)
    counts = weights @ masks.T.astype(np.float64)
    firsts, counts = counts[:, 6 * len(found):], counts[:, :6 * len(found)].reshape(len(weights), len(found), 2, 3)
    negative, positive, counted = counts[..., 0], counts[..., 1], counts[..., 2]
    with np.errstate(invalid="ignore", divide="ignore"):
        nfr = np.where(counted > 0, 100.0 * negative / counted, np.nan)
        pfr = np.where(counted > 0, 100.0 * positive / counted, np.nan)
        # the mean over pairs as pairs x replicates, axis 0: the summation order of summary's mean
        values = {f"{name}_{target}": np.mean(np.ascontiguousarray(rates[:, :, i].T), axis=0)
                  for name, rates in (("nfr", nfr), ("pfr", pfr)) for i, target in enumerate(("cross", "self"))} \
            if found else {}
        if first is not None:
            values.update({key: np.where(firsts[:, 2] > 0, 100.0 * firsts[:, i] / firsts[:, 2], np.nan)
                           for i, key in enumerate(FIRST_KEYS)})
    return values
