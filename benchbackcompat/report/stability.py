"""How stable a table's ranking is: the range of each ranked row's rank by mean over bootstrap replicates that resample
the row's seeds with replacement and, within each drawn seed, its queries (one query-bootstrap replicate of that seed;
``metrics.bootstrap``). As mteb's rank stability: a rank that moves from 1 to 6 over the replicates is not one a reader
can lean on, whatever the tier says.
"""
from __future__ import annotations

import numpy as np

from benchbackcompat.metrics import bootstrap
from benchbackcompat.report.table_data import Stat, Table
from benchbackcompat.report.columns import Column, ranking

REPLICATES = 1000
SEED = 20_2026  # fixed: the same table gives the same ranges, byte for byte
PERCENTILES = (2.5, 97.5)


def primary(table: Table) -> Column | None:
    """The column the rank follows: the first metric's primary statistic of the scenario kind."""
    metric = table.columns[0].metric if table.columns else None
    key = ranking(table.kind)[0]
    return next((c for c in table.columns if c.metric == metric and c.statistic.key == key), None)


def row_draws(stat: Stat, rng: np.random.Generator, replicates: int = REPLICATES) -> np.ndarray:
    """``replicates`` means of the statistic, each over the row's seeds drawn with replacement, each drawn seed
    scored by one of its query-bootstrap replicates (its point value where that replicate is undefined or the row
    stored no outcomes)."""
    values = np.asarray(stat.values, dtype=float)
    sample = stat.replicates
    if isinstance(sample, bootstrap.SeedSample):
        values, per_seed = sample.values, sample.replicates
    elif sample is not None and len(values) == 1:
        per_seed = np.asarray(sample, dtype=float)[None, :]
    else:
        per_seed = values[:, None]
    n = len(values)
    seeds = rng.integers(0, n, size=(replicates, n))
    queries = rng.integers(0, per_seed.shape[1], size=(replicates, n))
    drawn = per_seed[seeds, queries]
    drawn = np.where(np.isfinite(drawn), drawn, values[seeds])
    return drawn.mean(axis=1)


def rank_ranges(table: Table, replicates: int = REPLICATES) -> dict[int, tuple[int, int]]:
    """Per ranked row (by ``id``): the 2.5th and 97.5th percentile of its rank by mean (1 = best) among the ranked rows
    over ``replicates`` bootstrap replicates (:func:`row_draws`); {} where fewer than two rows are ranked."""
    column = primary(table)
    ranked = [row for row in table.rows if row.rank is not None and isinstance(row.cells.get(column.id if column else ""), Stat)]
    if column is None or len(ranked) < 2:
        return {}
    rng = np.random.default_rng(SEED)
    draws = np.stack([row_draws(row.cells[column.id], rng, replicates) for row in ranked])  # rows x replicates
    if column.statistic.higher_is_better:
        draws = -draws
    ranks = 1 + (draws[None, :, :] < draws[:, None, :]).sum(axis=1)  # 1 + the rows strictly better in that replicate
    low, high = np.percentile(ranks, PERCENTILES, axis=1, method="nearest")
    return {id(row): (int(lo), int(hi)) for row, lo, hi in zip(ranked, low, high)}


def range_text(found: tuple[int, int] | None) -> str:
    """``2–5`` (or ``1`` where the range is one rank); ``-`` for an unranked row."""
    if found is None:
        return "-"
    return str(found[0]) if found[0] == found[1] else f"{found[0]}–{found[1]}"
