"""Ranks and bold: a row's rank is a tier of rows that no row is significantly better than on the kind's primary
statistic, and bold marks a column's rank-1 tier."""
from __future__ import annotations

import math

from benchbackcompat.metrics import bootstrap
from benchbackcompat.report.columns import Column, metric_name, ranking
from benchbackcompat.report.markdown import escape
from benchbackcompat.report.table_data import Missing, Stat, Table
from benchbackcompat.runtime.memo import IdentityMemo


def rank_rows(table: Table) -> None:
    """Rank by the scenario kind's primary statistic on the first metric (``columns.ranking``): a row's rank is 1 +
    the number of rows significantly better than it (paired bootstrap of the difference), so rows that no row
    beats share rank 1 and a rank is a tier, not an order of noisy means. Without per-query replicates the
    displayed means decide, ties broken by the kind's second statistic. Rows are listed by rank, then mean. Only rows with a displayed
    primary statistic are ranked: rows at chance level, without numbers or with an undecidable P_com are not.
    When no row has one, nothing is ranked and ``table.unranked`` says why: no other statistic ranks
    compatibility (the cross-test alone would put an incompatible model, e.g. ``independent`` at chance-level
    cross, above compatible ones)."""
    if not table.columns:
        return
    metric = table.columns[0].metric
    by_key = {c.statistic.key: c for c in table.columns if c.metric == metric}
    primary, secondary = (by_key.get(key) for key in ranking(table.kind))
    eligible = [i for i, row in enumerate(table.rows) if not row.chance]

    def shown(i: int, column: Column | None) -> float | None:
        return _display_value(table.rows[i].cells.get(column.id), column) if column is not None else None

    candidates = [i for i in eligible if shown(i, primary) is not None]
    if not candidates and primary is not None and any(row.finished for row in table.rows):
        table.unranked = (f"Not ranked: no row has a decidable {primary.statistic.header} ({escape(metric_name(metric))}), "
                          f"the primary statistic of `{table.kind}`; no other statistic ranks compatibility.")

    def sort_key(i: int) -> tuple[float, ...]:
        key = []
        for column in (primary, secondary):
            value = shown(i, column)
            sign = -1.0 if column is None or column.statistic.higher_is_better else 1.0
            key.append(math.inf if value is None else sign * value)
        return tuple(key)

    keys = {i: sort_key(i) for i in candidates}
    higher = primary.statistic.higher_is_better if primary is not None else True

    def beats(j: int, i: int) -> bool:
        """Row j is significantly better than row i on the primary statistic (paired bootstrap of the difference);
        without replicates, on the displayed values and the tie-breaker."""
        a, b = table.rows[j].cells.get(primary.id), table.rows[i].cells.get(primary.id)
        if isinstance(a, Stat) and isinstance(b, Stat) and a.replicates is not None and b.replicates is not None:
            return bootstrap.significantly_worse(a.replicates, b.replicates, higher)
        return keys[j] < keys[i]

    for i, row in enumerate(table.rows):
        row.rank = 1 + sum(1 for j in keys if j != i and beats(j, i)) if i in keys else None
    order = {id(table.rows[i]): keys[i] for i in keys}
    table.rows.sort(key=lambda r: (r.rank is None, r.rank or 0, order.get(id(r), ()), r.label))


def _display_value(cell: Stat | Missing | None, column: Column) -> float | None:
    return float(column.format(cell.mean)) if isinstance(cell, Stat) else None


def best_ids(table: Table, column: Column) -> set[int]:
    """Rows (by index) that no other row is significantly better than on ``column`` (paired bootstrap of their
    difference; without replicates, those with the best displayed mean): the column's rank-1 tier, so that on the
    ranked column bold is exactly rank 1. Rows at chance level and context columns never count, nor a value with a
    zero-width interval (:attr:`Stat.exact`: exact by construction, not a measurement) below the best mean. Empty when
    fewer than two rows have a value. Remembered for the last :data:`MEMO` tables (the pages and the site bold the
    same columns), by the table's rows and their cells as they stand."""
    standing = (table, *table.rows, *(row.cells.get(column.id) for row in table.rows))
    return set(_BEST.get((id(table), column.id), standing, lambda: frozenset(_best_ids(table, column))))


MEMO = 4096  # (table, column) pairs whose rank-1 tier is kept: the published leaderboard bolds about 900
_BEST = IdentityMemo(MEMO)


def _best_ids(table: Table, column: Column) -> set[int]:
    if column.statistic.context:
        return set()
    scored = [(i, row.cells.get(column.id)) for i, row in enumerate(table.rows) if not row.chance]
    scored = [(i, cell) for i, cell in scored if isinstance(cell, Stat)]
    if len(scored) < 2:
        return set()
    higher = column.statistic.higher_is_better
    scored.sort(key=lambda item: -item[1].mean if higher else item[1].mean)  # the best mean first: it beats most
    shown = _display_value(scored[0][1], column)
    chosen = set()
    for i, cell in scored:
        if cell.exact and _display_value(cell, column) != shown:
            continue
        if cell.replicates is None:
            if _display_value(cell, column) == shown:
                chosen.add(i)
            continue
        better = (other for j, other in scored if j != i and other.replicates is not None)  # as ``rank_rows``
        if not any(bootstrap.significantly_worse(other.replicates, cell.replicates, higher) for other in better):
            chosen.add(i)
    return chosen
