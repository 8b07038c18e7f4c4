"""Bootstrap confidence intervals over queries, combined with the spread over seeds.

A cell's scores are means of per-query outcomes (``metrics.outcomes``). One bootstrap replicate
resamples the queries with replacement (the same resample for every matrix entry of a record, so
a statistic that combines entries, such as P_com, keeps their pairing); resamples depend only on
the seed and the number of queries, so rows of a table evaluated on the same queries are paired
too. Over seeds the bootstrap is hierarchical: each replicate draws the seeds with replacement and
averages one query-resampled value of each drawn seed (with one seed: the query bootstrap alone).
Intervals are percentile intervals.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

REPLICATES = 1000
CONFIDENCE = 0.95
_BASE_SEED = 20_2026


@lru_cache(maxsize=64)
def query_weights(num_queries: int, seed: int, replicates: int = REPLICATES) -> np.ndarray:
    """replicates x num_queries resampling counts (each row sums to ``num_queries``), deterministic in ``seed``."""
    rng = np.random.default_rng([_BASE_SEED, seed, num_queries])
    weights = rng.multinomial(num_queries, np.full(num_queries, 1.0 / num_queries), size=replicates)
    weights.setflags(write=False)
    return weights


def resampled_scores(outcomes: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Scores (%) of every bootstrap replicate: ``outcomes`` is entries x queries (NaN = skipped query),
    ``weights`` replicates x queries; returns replicates x entries (NaN where a replicate has no counted query)."""
    values = np.atleast_2d(np.asarray(outcomes, dtype=np.float64))
    counted = ~np.isnan(values)
    totals = weights @ np.where(counted, values, 0.0).T
    counts = weights @ counted.T.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, 100.0 * totals / counts, np.nan)


def combine_seeds(per_seed: list[np.ndarray], replicates: int = REPLICATES) -> np.ndarray:
    """Hierarchical bootstrap over seeds: replicate b averages, over n seeds drawn with replacement, each
    drawn seed's replicate b (``per_seed`` holds one array of ``replicates`` values per seed). A seed's
    replicate may be NaN (P_com of a resample whose update is 0): the mean leaves it out, and a replicate
    whose drawn seeds are all NaN stays NaN, which :func:`interval` drops."""
    stacked = np.stack([np.asarray(r, dtype=np.float64) for r in per_seed])  # seeds x replicates
    n = stacked.shape[0]
    if n == 1:
        return stacked[0]
    rng = np.random.default_rng([_BASE_SEED, n, replicates])
    picks = rng.integers(0, n, size=(replicates, n))
    drawn = stacked[picks, np.arange(replicates)[:, None]]  # replicates x n
    defined = ~np.isnan(drawn)
    counts = defined.sum(axis=1)
    with np.errstate(invalid="ignore"):  # +inf and -inf drawn together (P_com of resampled updates of either sign
        totals = np.where(defined, drawn, 0.0).sum(axis=1)  # at 0) average to NaN: undefined, as it should be
    return np.where(counts > 0, totals / np.maximum(counts, 1), np.nan)


def interval(replicates: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The percentile interval of the finite replicates; (nan, nan) when there are none."""
    finite = replicates[np.isfinite(replicates)]
    if not len(finite):
        return float("nan"), float("nan")
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return float(low), float(high)


def significantly_worse(best: np.ndarray, other: np.ndarray, higher_is_better: bool = True,
                        confidence: float = CONFIDENCE) -> bool:
    """Whether ``other`` is significantly worse than ``best``: the (paired) interval of their difference
    in the better direction lies entirely above zero."""
    difference = (best - other) if higher_is_better else (other - best)
    low, _ = interval(difference, confidence)
    return bool(low > 0)


def batched_matrix_statistics(C: np.ndarray) -> dict[str, np.ndarray]:
    """AC (strict), AA and ACA of a batch of matrices (replicates x T x T) at once (CoReS Eqs. 7, IAM-CL2R
    AA, ACA as ``metrics.compatibility``), one value per replicate."""
    T = C.shape[-1]
    rows, cols = np.tril_indices(T)
    values = {"AA": C[:, rows, cols].mean(axis=1)}
    if T >= 2:
        below_rows, below_cols = np.tril_indices(T, k=-1)
        cross = C[:, below_rows, below_cols]
        compatible = cross > C[:, below_cols, below_cols]
        pairs = T * (T - 1) / 2
        values["AC"] = compatible.sum(axis=1) / pairs
        values["ACA"] = np.where(compatible, cross, 0.0).sum(axis=1) / pairs
    return values
