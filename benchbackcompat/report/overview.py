"""A page's overview: methods x scenarios on each scenario's primary statistic, and what each scenario decides.

One table per statistic (single updates rank by P_com, sequences by AC). A scenario's column shows its headline
configuration (:func:`by_headline`); a method whose primary statistic is not decidable there but is in another
stored configuration of the scenario (same metric) is shown from that one, marked. A cell is the primary statistic
of the first metric with its 95% interval and the row's rank (a tier: 1 + the rows significantly better), bold at
rank 1; a cell without a ranked value says why in a few words. Then one sentence per scenario naming the method(s)
ranked first, those at rank 1 in another configuration, and, for one update, the methods significantly compatible
by their margin (cross − old self above 0) whose P_com is not shown.
"""
from __future__ import annotations

from collections import defaultdict

from tabulate import tabulate

from benchbackcompat.report.aggregate import Missing, Row, Stat, Table, margin
from benchbackcompat.report.columns import Column, metric_name, ranking
from benchbackcompat.report.markdown import PAGE_WIDTH, escape, widest_line
from benchbackcompat.report.tables import format_stat

MARKS = ("†", "‡", "§", "¶")


def primary_column(table: Table) -> Column | None:
    """The first metric's column of the kind's primary statistic (the one ranks follow)."""
    key = ranking(table.kind)[0]
    return next((c for c in table.columns if c.statistic.key == key), None)


def ranked(table: Table) -> int:
    """The rows with a decidable primary statistic (those ranked)."""
    return sum(row.rank is not None for row in table.rows)


def methods_with_results(table: Table) -> int:
    return sum(1 for row in table.rows if row.finished)


def _length(table: Table) -> tuple[int, int]:
    train = table.config.get("train", {})
    return int(train.get("min_steps") or 0), int(train.get("epochs") or 0)


def by_headline(tables: list[Table]) -> dict[str, list[Table]]:
    """Per scenario (in order of appearance), its tables, the headline configuration first: the most methods with a
    decidable primary statistic, then the most methods with results, then the longest training (step floor, then
    epochs)."""
    grouped: dict[str, list[Table]] = defaultdict(list)
    for table in tables:
        grouped[table.scenario].append(table)
    return {scenario: sorted(members, key=lambda t: (ranked(t), methods_with_results(t), _length(t), t.variant),
                             reverse=True)
            for scenario, members in grouped.items()}


def comparable(members: list[Table]) -> list[Table]:
    """The headline (first) and the other configurations ranked on the same column (statistic and metric)."""
    column = primary_column(members[0])
    return [members[0]] + [t for t in members[1:] if column is not None and
                           getattr(primary_column(t), "id", None) == column.id]


def shown_row(label: str, members: list[Table]) -> tuple[Table, Row] | None:
    """The row a method's overview cell shows: the headline's where it is ranked, else the first other configuration
    where it is, else the headline's (or the first) unranked one; None where the method has no row."""
    rows = [(table, row) for table in members for row in table.rows if row.label == label]
    return next(((t, r) for t, r in rows if r.rank is not None), rows[0] if rows else None)


def _cell(table: Table, row: Row, column: Column, mark: str) -> str:
    cell = row.cells.get(column.id)
    if isinstance(cell, Missing):
        return f"{escape(cell.text)} ({escape(cell.word)})"
    if not isinstance(cell, Stat):
        return ""
    text = format_stat(cell, column, len(row.finished))
    if row.rank is None:
        return f"{text} ({'chance level' if row.chance else 'not ranked'})"
    return (f"**{text}**" if row.rank == 1 else text) + f" ({row.rank}{mark})"


def overview_tables(tables: list[Table]) -> str:
    """One methods x scenarios table per primary statistic over the page's ``tables``, with a note naming the other
    configurations that marked cells come from."""
    groups: dict[str, list[list[Table]]] = defaultdict(list)
    for members in by_headline(tables).values():
        column = primary_column(members[0])
        if column is not None:
            groups[column.statistic.header].append(comparable(members))
    parts = []
    for header, scenarios in groups.items():
        labels = list(dict.fromkeys(row.label for members in scenarios for table in members for row in table.rows))
        cells: dict[str, list[str]] = {label: [] for label in labels}
        ranks: dict[str, list[int]] = defaultdict(list)
        marks: dict[int, str] = {}
        for members in scenarios:
            column = primary_column(members[0])
            for label in labels:
                found = shown_row(label, members)
                if found is None:
                    cells[label].append("")
                    continue
                table, row = found
                mark = ""
                if table is not members[0] and row.rank is not None:
                    mark = marks.setdefault(id(table), MARKS[len(marks) % len(MARKS)] * (1 + len(marks) // len(MARKS)))
                cells[label].append(_cell(table, row, column, mark))
                if row.rank is not None:
                    ranks[label].append(row.rank)

        def order(label: str) -> tuple:
            mine = ranks.get(label, [])
            return (-sum(r == 1 for r in mine), -len(mine), sum(mine) / len(mine) if mine else 0, label)

        labels = sorted(labels, key=order)
        headers = [f"{escape(m[0].scenario)} ({escape(metric_name(primary_column(m[0]).metric))})" for m in scenarios]
        tables_by_id = {id(t): t for members in scenarios for t in members}
        note = ""
        if marks:
            note = ("\n\nA marked rank comes from another stored configuration of the scenario, where the method's "
                    f"{escape(header)} is decidable and the headline's is not; the rank is among that table's rows: "
                    + "; ".join(f"{mark} {escape(tables_by_id[key].title)}" for key, mark in marks.items()) + ".")
        parts.append(f"{escape(header)}, each scenario's headline configuration (rank in brackets: a tier, 1 + the "
                     "rows significantly better, so the rows nobody beats significantly share rank 1; bold: rank 1; "
                     "a cell without a rank says why):\n\n"
                     + "\n\n".join(_fitted_tables([escape(label) for label in labels], headers,
                                                  [cells[label] for label in labels])) + note)
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


def _names(labels: list[str]) -> str:
    return ", ".join(map(escape, labels))


def compatible_by_margin(table: Table) -> list[tuple[Row, float, tuple[float, float]]]:
    """The unranked rows of a one-update table (P_com not shown; not at chance level) whose margin, cross − old
    self on the primary column's metric, has a 95% interval above 0: compatible, whatever P_com cannot say."""
    column = primary_column(table)
    if column is None or not table.single_update:
        return []
    found = []
    for row in table.rows:
        shown = margin(row, column.metric) if row.rank is None and not row.chance else None
        if shown is not None and shown[1] is not None and shown[1][0] > 0:
            found.append((row, shown[0], shown[1]))
    return found


def verdict(members: list[Table]) -> str:
    """One sentence on a scenario (its tables, the headline first): the method(s) ranked first there; those at rank 1
    in another configuration where the headline leaves their primary statistic undecidable; and the methods
    significantly compatible by their margin whose P_com is not shown."""
    members = comparable(members)
    headline = members[0]
    column = primary_column(headline)
    name = escape(f"{column.statistic.header} ({metric_name(column.metric)})" if column else "its primary statistic")
    winners = [row.label for row in headline.rows if row.rank == 1]
    count = ranked(headline)
    if not winners:
        parts = [f"no method is ranked: no row has a decidable {name}" if headline.unranked else "no row is ranked"]
    elif len(winners) == 1:
        parts = [f"{escape(winners[0])} is best on {name} ({count} methods ranked)"]
    else:
        parts = [f"{len(winners)} of {count} ranked methods share rank 1 on {name} (none is significantly better than "
                 f"another): {_names(winners)}"]
    named = set(winners)
    for table in members[1:]:
        moved = [label for label in dict.fromkeys(r.label for r in table.rows) if label not in named and
                 (found := shown_row(label, members)) is not None and found[0] is table and found[1].rank == 1]
        if moved:
            parts.append(f"at {escape(table.variant)}, where the headline leaves {'its' if len(moved) == 1 else 'their'} "
                         f"{name} undecidable, {_names(moved)} {'is' if len(moved) == 1 else 'are'} at rank 1 "
                         f"(of {ranked(table)} ranked)")
            named.update(moved)
    compatible = [(row, mean, interval) for row, mean, interval in compatible_by_margin(headline)
                  if row.label not in named]
    if compatible:
        parts.append("significantly compatible by the margin, cross − old self above 0, though P\\_com is not shown: "
                     + ", ".join(f"{escape(row.label)} ({mean:+.2f} [{low:+.2f}, {high:+.2f}] points)"
                                 for row, mean, (low, high) in compatible))
    elif headline.single_update and not winners:
        parts.append("no method is significantly compatible by the margin, cross − old self, either")
    return f"**{escape(headline.scenario)}**: " + "; ".join(parts) + "."


def overview_markdown(tables: list[Table]) -> str:
    """The overview section of a page over all its ``tables``."""
    return "\n\n".join(["## Overview", overview_tables(tables),
                        "\n".join(f"- {verdict(members)}" for members in by_headline(tables).values())])
