"""Statistics of a backfilling curve's per-step outcomes (``FinishedRecord.backfill``: the per-query hits at every
refresh step): negative and positive flips along the curve against the old self-test (Hot-Refresh, ICLR 2022,
counts the negative flips of a refresh), each query's area under its own curve, and a bootstrap of the area over
queries and over the random order's permutations.

NFR at a step: % of the queries right under the old model's self-test C[k][k] and wrong at that step; PFR the
reverse (``metrics.flips.rates``). At 0% refreshed the step is the cross-test C[t][k], at 100% the new self-test
C[t][t], so the curve's ends are the record's two flip rates old self -> cross and old self -> new self.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from benchbackcompat.metrics import flips, outcomes

REPLICATES = 2000
CHUNK = 250  # replicates drawn at once (replicates x queries weights)


def decoded(steps: Sequence[dict[str, Any]]) -> np.ndarray:
    """Steps x queries outcomes of a curve's stored per-step outcomes."""
    return np.stack([outcomes.decode(stored) for stored in steps])


def step_rates(old_self: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(NFR, PFR) at every step (%) against the old self-test's per-query hits ``old_self``: ``metrics.flips.rates``
    of each step, all steps at once."""
    before, after = np.asarray(old_self, dtype=np.float64)[None, :], np.asarray(steps, dtype=np.float64)
    negative, positive, counted = flips.flip_masks(np.broadcast_to(before, after.shape), after)
    n = counted.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 100.0 * negative.sum(1) / n, 100.0 * positive.sum(1) / n


def query_areas(fractions: Sequence[float], steps: np.ndarray) -> np.ndarray:
    """Each query's area under its own curve (steps x queries outcomes, trapezoidal over the refreshed fraction,
    in [0, 1]; NaN for a query no step counts): their mean x 100 is the curve's area."""
    x = np.asarray(fractions, dtype=float)
    widths = (x[1:] - x[:-1])[:, None] / (x[-1] - x[0])
    return np.sum(widths * (steps[1:] + steps[:-1]) / 2, axis=0)


def at_fraction(fractions: Sequence[float], values: Sequence[float], fraction: float) -> float:
    """A curve's value at ``fraction`` refreshed, linear between its steps."""
    return float(np.interp(fraction, np.asarray(fractions, dtype=float), np.asarray(values, dtype=float)))


def resample_counts(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    """``size`` resamples of ``n`` items with replacement, as counts (size x n, float): each row draws n indices
    uniformly and counts them (a multinomial draw, at the cost of n integers instead of n binomials)."""
    drawn = rng.integers(0, n, size=(size, n)) + n * np.arange(size)[:, None]
    return np.bincount(drawn.ravel(), minlength=size * n).reshape(size, n).astype(float)


def bootstrap_area(areas: np.ndarray, seed: int = 0, replicates: int = REPLICATES) -> tuple[float, float, float]:
    """Mean area (%) of permutations x queries per-query areas with its 95% percentile interval, resampling the
    queries and, with more than one row, the permutations (each with replacement): the interval holds the refresh
    order's randomness as well as the queries'."""
    areas = np.atleast_2d(np.asarray(areas, dtype=float))
    counted = ~np.isnan(areas[0])
    values = np.nan_to_num(areas[:, counted])
    perms, n = values.shape
    found = [((values @ queries.T).T * rows).sum(1) / (rows.sum(1) * queries.sum(1))
             for queries, rows in _resamples(seed, n, perms, replicates)]
    resampled = 100.0 * np.concatenate(found)
    low, high = np.percentile(resampled, [2.5, 97.5])
    return 100.0 * float(values.mean()), float(low), float(high)


@lru_cache(maxsize=4)
def _resamples(seed: int, n: int, perms: int, replicates: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """The resamples of :func:`bootstrap_area`, chunk by chunk (queries, permutations): a function of their sizes
    and the seed alone, so the curves of a table, which share them, draw them once (read-only)."""
    rng = np.random.default_rng(seed)
    chunks = []
    for start in range(0, replicates, CHUNK):
        size = min(CHUNK, replicates - start)
        queries = resample_counts(rng, n, size)
        rows = resample_counts(rng, perms, size) if perms > 1 else np.ones((size, 1))
        for array in (queries, rows):
            array.setflags(write=False)
        chunks.append((queries, rows))
    return tuple(chunks)
