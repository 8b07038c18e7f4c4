"""A page's overview: methods x scenarios on each scenario's primary statistic, and who wins each scenario.

One table per statistic (single updates rank by P_com, sequences by AC), each scenario's headline
configuration only; a cell is the primary statistic of the first metric with its 95% interval and the
row's rank (a tier: 1 + the rows significantly better), bold at rank 1. Then one sentence per scenario naming the method(s) ranked first, or saying
that nothing is decided.
"""
from __future__ import annotations

from collections import defaultdict

from tabulate import tabulate

from benchbackcompat.report.aggregate import Missing, Row, Stat, Table
from benchbackcompat.report.columns import Column, metric_name, ranking
from benchbackcompat.report.markdown import PAGE_WIDTH, escape, widest_line
from benchbackcompat.report.tables import format_stat


def primary_column(table: Table) -> Column | None:
    """The first metric's column of the kind's primary statistic (the one ranks follow)."""
    key = ranking(table.kind)[0]
    return next((c for c in table.columns if c.statistic.key == key), None)


def _cell(row: Row, column: Column) -> str:
    cell = row.cells.get(column.id)
    if isinstance(cell, Missing):
        return cell.text
    if not isinstance(cell, Stat):
        return ""
    text = format_stat(cell, column, len(row.finished))
    return (f"**{text}**" if row.rank == 1 else text) + (f" ({row.rank})" if row.rank is not None else "")


def overview_tables(tables: list[Table]) -> str:
    """One methods x scenarios table per primary statistic, over the given (headline) tables."""
    groups: dict[str, list[tuple[Table, Column]]] = defaultdict(list)
    for table in tables:
        column = primary_column(table)
        if column is not None:
            groups[column.statistic.header].append((table, column))
    parts = []
    for header, members in groups.items():
        labels = list(dict.fromkeys(row.label for table, _ in members for row in table.rows))
        cells: dict[str, list[str]] = {label: [] for label in labels}
        ranks: dict[str, list[int]] = defaultdict(list)
        for table, column in members:
            by_label = {row.label: row for row in table.rows}
            for label in labels:
                row = by_label.get(label)
                cells[label].append(_cell(row, column) if row else "")
                if row is not None and row.rank is not None:
                    ranks[label].append(row.rank)

        def order(label: str) -> tuple:
            mine = ranks.get(label, [])
            return (-sum(r == 1 for r in mine), -len(mine), sum(mine) / len(mine) if mine else 0, label)

        labels = sorted(labels, key=order)
        headers = [f"{escape(t.scenario)} ({escape(metric_name(c.metric))})" for t, c in members]
        parts.append(f"{escape(header)}, each scenario's headline configuration (rank in brackets; bold: rank 1, "
                     "not significantly worse than any other):\n\n"
                     + "\n\n".join(_fitted_tables([escape(label) for label in labels], headers,
                                                  [cells[label] for label in labels])))
    return "\n\n".join(parts)


def _fitted_tables(labels: list[str], headers: list[str], cells: list[list[str]]) -> list[str]:
    """The methods x scenarios table split by scenario columns into tables of at most ``PAGE_WIDTH`` characters a
    row (in order; a column too wide alone gets its own table)."""
    def render(columns: list[int]) -> str:
        rows = [[label, *(row[i] for i in columns)] for label, row in zip(labels, cells)
                if any(row[i] for i in columns)]
        return tabulate(rows, headers=["method", *(headers[i] for i in columns)], tablefmt="github",
                        disable_numparse=True)

    tables, current = [], []
    for i in range(len(headers)):
        if current and widest_line(render(current + [i])) > PAGE_WIDTH:
            tables.append(render(current))
            current = []
        current.append(i)
    return tables + ([render(current)] if current else [])


def verdict(table: Table) -> str:
    """One sentence: the method(s) ranked first on ``table``, or that nothing is decided."""
    column = primary_column(table)
    name = f"{column.statistic.header} ({metric_name(column.metric)})" if column else "its primary statistic"
    winners = [row.label for row in table.rows if row.rank == 1]
    if not winners:
        why = "no row has a decidable " + name if table.unranked else "no row is ranked"
        return f"**{escape(table.scenario)}**: nothing is decided ({why})."
    ranked = sum(row.rank is not None for row in table.rows)
    if len(winners) == 1:
        return f"**{escape(table.scenario)}**: {escape(winners[0])} is best on {escape(name)} ({ranked} methods ranked)."
    return (f"**{escape(table.scenario)}**: {len(winners)} of {ranked} ranked methods share rank 1 on {escape(name)} "
            f"(none is significantly better than another): {', '.join(map(escape, winners))}.")


def overview_markdown(tables: list[Table]) -> str:
    """The overview section of a page over each scenario's headline table."""
    return "\n\n".join(["## Overview", overview_tables(tables), "\n".join(f"- {verdict(t)}" for t in tables)])
