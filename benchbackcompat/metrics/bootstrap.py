"""Bootstrap confidence intervals over queries, combined with the spread over seeds.

A cell's scores are means of per-query outcomes (``metrics.outcomes``). One bootstrap replicate
resamples the queries with replacement (the same resample for every matrix entry of a record, so
a statistic that combines entries, such as P_com, keeps their pairing); resamples depend only on
the seed and the number of queries, so rows of a table evaluated on the same queries and seed are
paired too. Within one seed the interval is the percentile interval of these replicates.

Over seeds (:class:`SeedSample`, :func:`interval`) the interval is a t-interval honest for the number
of seeds n: x̄ ± t_{n-1, 0.975} · sqrt(max(s², w̄) / n), with x̄ and s² the mean and sample variance
(n - 1 denominator) of the seeds' point values, and w̄ the mean within-seed variance of the query
bootstrap (each seed's (P97.5 - P2.5) / (2 · 1.96), squared: robust to the heavy tails of ratios such
as P_com). The seeds are the primary units of a two-stage sample, so s² / n estimates the variance of
x̄ without bias and the t quantile on n - 1 degrees of freedom accounts for estimating it from n
units (Cochran, *Sampling Techniques*, 3rd ed., Wiley 1977, ch. 10); s² estimates between-seed plus
within-seed variance, so it is never taken below the measured within-seed part (the positive-part
rule for variance components). Resampling 3 seeds with replacement instead (10 distinct multisets,
plug-in variance) understates the spread by a factor of about t_2 · sqrt(3/2) / 1.96 ≈ 2.7.

A bounded statistic (AC in [0, 1], accuracies in [0, 100]) gets its interval intersected with its range
(:func:`bounded`): the true value always lies in the range, so removing values outside it removes none that the
interval could cover, and coverage is unchanged (a confidence set intersected with the parameter space).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import stats

REPLICATES = 1000
CONFIDENCE = 0.95
_BASE_SEED = 20_2026


@lru_cache(maxsize=64)
def query_weights(num_queries: int, seed: int, replicates: int = REPLICATES) -> np.ndarray:
    """replicates x num_queries resampling counts (each row sums to ``num_queries``), deterministic in ``seed``; as
    float64 (whole numbers, exact), so that products with outcomes run as BLAS matrix products rather than numpy's
    mixed-type loop (30x slower)."""
    rng = np.random.default_rng([_BASE_SEED, seed, num_queries])
    weights = rng.multinomial(num_queries, np.full(num_queries, 1.0 / num_queries), size=replicates).astype(np.float64)
    weights.setflags(write=False)
    return weights


def resampled_scores(outcomes: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Scores (%) of every bootstrap replicate: ``outcomes`` is entries x queries (NaN = skipped query),
    ``weights`` replicates x queries; returns replicates x entries (NaN where a replicate has no counted query)."""
    values = np.atleast_2d(np.asarray(outcomes, dtype=np.float64))
    counted = ~np.isnan(values)
    totals = weights @ np.where(counted, values, 0.0).T
    if counted.all():  # every query counted: each replicate counts its row sum of weights (exactly, whole numbers)
        counts = np.repeat(weights.sum(axis=1, keepdims=True), values.shape[0], axis=1)
    else:
        counts = weights @ counted.T.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, 100.0 * totals / counts, np.nan)


@dataclass(frozen=True, eq=False)
class SeedSample:
    """A statistic over seeds: each seed's point value and its query-bootstrap replicates (seeds x replicates;
    NaN where a resample leaves the statistic undefined, e.g. P_com of a resample whose update is 0)."""

    seeds: tuple[int, ...]
    values: np.ndarray
    replicates: np.ndarray

    def __sub__(self, other: SeedSample) -> SeedSample:
        """The paired difference, seed by seed, over the seeds both hold (the same seed scores the same queries
        with the same resamples)."""
        common = [seed for seed in self.seeds if seed in other.seeds]
        mine, theirs = [self.seeds.index(s) for s in common], [other.seeds.index(s) for s in common]
        return SeedSample(tuple(common), self.values[mine] - other.values[theirs],
                          self.replicates[mine] - other.replicates[theirs])


def over_seeds(values: list[float], per_seed: list[np.ndarray], seeds: list[int]) -> SeedSample:
    """The seeds' point ``values`` with their query-bootstrap replicates (``per_seed``: one array a seed)."""
    return SeedSample(tuple(int(s) for s in seeds), np.asarray(values, dtype=np.float64),
                      np.stack([np.asarray(r, dtype=np.float64) for r in per_seed]))


def within_seed_variance(replicates: np.ndarray, confidence: float = CONFIDENCE) -> float:
    """A seed's query-bootstrap variance, from the width of its percentile interval: ((high - low) / (2 z))²
    (the variance for normal replicates; robust to a few extreme P_com resamples). NaN without finite replicates."""
    return _variance_from_width(*_percentile_interval(replicates, confidence), confidence)


def _variance_from_width(low: float, high: float, confidence: float) -> float:
    return ((high - low) / (2.0 * _normal_quantile(confidence))) ** 2


@lru_cache(maxsize=16)
def _normal_quantile(confidence: float) -> float:
    return float(stats.norm.ppf(0.5 + confidence / 2.0))


@lru_cache(maxsize=256)
def _t_quantile(confidence: float, df: int) -> float:
    return float(stats.t.ppf(0.5 + confidence / 2.0, df))


def interval(sample: SeedSample | np.ndarray, confidence: float = CONFIDENCE,
             bounds: tuple[float, float] | None = None) -> tuple[float, float]:
    """The interval of a statistic: for several seeds the t-interval of the module docstring, for one seed
    (or bare replicates) the percentile interval of its query-bootstrap replicates; (nan, nan) when undefined.
    ``bounds``: the statistic's range, which the interval is kept inside (:func:`bounded`)."""
    if not isinstance(sample, SeedSample):
        found = _percentile_interval(np.asarray(sample, dtype=np.float64), confidence)
    elif len(sample.seeds) == 0:
        found = float("nan"), float("nan")
    elif len(sample.seeds) == 1:
        found = _percentile_interval(sample.replicates[0], confidence)
    else:
        n = len(sample.seeds)
        within = [v for v in _within_seed_variances(sample.replicates, confidence) if np.isfinite(v)]
        variance = max(float(np.var(sample.values, ddof=1)), float(np.mean(within)) if within else 0.0)
        half = _t_quantile(confidence, n - 1) * np.sqrt(variance / n)
        mean = float(np.mean(sample.values))
        found = mean - half, mean + half
    return bounded(found, bounds) if bounds is not None else found


def _within_seed_variances(replicates: np.ndarray, confidence: float) -> list[float]:
    """:func:`within_seed_variance` of each seed's row; in one call where every replicate is finite (the same
    percentiles, row by row)."""
    if not np.isfinite(replicates).all():
        return [within_seed_variance(r, confidence) for r in replicates]
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(replicates, [tail, 100.0 - tail], axis=1)
    return [_variance_from_width(float(lo), float(h), confidence) for lo, h in zip(low, high)]


def bounded(found: tuple[float, float], bounds: tuple[float, float]) -> tuple[float, float]:
    """``found`` intersected with the statistic's range ``bounds`` (either end may be infinite): the confidence
    set restricted to the values the statistic can take, with the same coverage (module docstring)."""
    return float(np.clip(found[0], *bounds)), float(np.clip(found[1], *bounds))


def _percentile_interval(replicates: np.ndarray, confidence: float) -> tuple[float, float]:
    """The percentile interval of the finite replicates; (nan, nan) when there are none."""
    finite = replicates[np.isfinite(replicates)]
    if not len(finite):
        return float("nan"), float("nan")
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return float(low), float(high)


def significantly_worse(best: SeedSample | np.ndarray, other: SeedSample | np.ndarray, higher_is_better: bool = True,
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
