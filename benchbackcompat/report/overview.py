"""A page's overview: methods x scenarios on each scenario's primary statistic, and what each scenario decides.

One table per statistic (single updates rank by P_com, sequences by AC). Each column is one table, the scenario's
headline configuration (:func:`by_headline`), named under the table; a cell is the primary statistic of the first
metric with its 95% interval and the row's rank (a tier: 1 + the rows significantly better), bold at rank 1 (as every
table's bold: no row significantly better); a cell without a ranked value says why in a few words. Then one sentence
per scenario, generated from its tables: the method(s) ranked first, those at rank 1 in another configuration (named)
that the headline leaves undecidable or does not hold, for one update the methods significantly compatible by their
margin whose P_com is not shown, and why two tables of one training disagree (:func:`training_note`). Then which
methods break the most queries (:func:`flip_finding`), on the seeds common to the rows, naming the table.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from tabulate import tabulate

from benchbackcompat.metrics import bootstrap, flips
from benchbackcompat.record import FinishedRecord
from benchbackcompat.report.grouping import table_config
from benchbackcompat.report.seed_statistics import margin, record_flips, records_stat
from benchbackcompat.report.table_data import Missing, Row, Stat, Table
from benchbackcompat.report.columns import Column, metric_name, ranking
from benchbackcompat.report.markdown import PAGE_WIDTH, escape, widest_line
from benchbackcompat.report.tables import format_stat
from benchbackcompat.scenarios.kinds import kind_class


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
    """The row a method's overview cell shows: the headline's (``members[0]``; one table per column); None where the
    headline has no row of the method."""
    return next(((members[0], row) for row in members[0].rows if row.label == label), None)


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


DATA_NOTE = ("\"data unknown\" and \"data\" followed by 8 hex digits name the dataset a table's records were computed "
             "on, where records of one configuration were computed on different data (e.g. on machines whose "
             "libraries render the embedded images into other bytes): such seeds are never pooled. \"data 1a2b3c4d\" "
             "is the start of the data's fingerprint; \"data unknown\" holds records written before records stored "
             "that fingerprint, which cannot be matched to either side.")


@dataclass
class OverviewGrid:
    """One methods x scenarios grid of the overview: the primary statistic's ``header``, per column the scenario's
    comparable tables (its headline first), the row labels in the overview's order, and per label and column the
    (table, row) it shows (None: the headline holds no such row)."""

    header: str
    scenarios: list[list[Table]]
    labels: list[str]
    shown: dict[str, list[tuple[Table, Row] | None]]

    def columns(self) -> list[Column]:
        return [primary_column(members[0]) for members in self.scenarios]


def overview_grids(tables: list[Table]) -> list[OverviewGrid]:
    """The overview's grids, one per primary statistic, each column one table (its scenario's headline); methods
    with more rank-1 cells first, then more ranked cells, then the better mean rank. The Markdown overview and the
    HTML site both render these."""
    groups: dict[str, list[list[Table]]] = defaultdict(list)
    for members in by_headline(tables).values():
        column = primary_column(members[0])
        if column is not None:
            groups[column.statistic.header].append(comparable(members))
    grids = []
    for header, scenarios in groups.items():
        labels = list(dict.fromkeys(row.label for members in scenarios for row in members[0].rows))
        shown = {label: [shown_row(label, members) for members in scenarios] for label in labels}

        def order(label: str) -> tuple:
            mine = [found[1].rank for found in shown[label] if found is not None and found[1].rank is not None]
            return (-sum(r == 1 for r in mine), -len(mine), sum(mine) / len(mine) if mine else 0, label)

        grids.append(OverviewGrid(header, scenarios, sorted(labels, key=order), shown))
    return grids


def overview_tables(tables: list[Table]) -> str:
    """One methods x scenarios table per primary statistic over the page's ``tables``, each column one table (its
    scenario's headline), named in the note under it."""
    parts = []
    for grid in overview_grids(tables):
        scenarios, columns = grid.scenarios, grid.columns()
        cells = [["" if found is None else _cell(found[0], found[1], column, "")
                  for found, column in zip(grid.shown[label], columns)] for label in grid.labels]
        headers = [f"{escape(m[0].scenario)} ({escape(metric_name(column.metric))})" for m, column in zip(scenarios, columns)]
        note = ("\n\nEach column is one table: " + "; ".join(
            f"{escape(m[0].scenario)}: {escape(m[0].title)}" for m in scenarios) + "."
            + (f" {escape(DATA_NOTE)}" if any("data " in m[0].variant for m in scenarios) else ""))
        parts.append(f"{escape(grid.header)}, each scenario's headline configuration (rank in brackets: a tier, 1 + the "
                     "rows significantly better, so the rows nobody beats significantly share rank 1; bold: rank 1, "
                     "no row significantly better, as bold on every table; a cell without a rank says why):\n\n"
                     + "\n\n".join(_fitted_tables([escape(label) for label in grid.labels], headers, cells)) + note)
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
        runner_up = _runner_up(headline, column)
        parts = [f"{escape(winners[0])} is best on {name} ({count} methods ranked"
                 + (f"; {runner_up}" if runner_up else "") + ")"]
    else:
        parts = [f"{len(winners)} of {count} ranked methods share rank 1 on {name} (none is significantly better than "
                 f"another): {_names(winners)}"]
    named = set(winners)
    in_headline = {row.label: row for row in headline.rows}
    for table in members[1:]:
        firsts = [r.label for r in table.rows if r.rank == 1 and r.label not in named]
        undecided = [label for label in firsts if label in in_headline and in_headline[label].rank is None]
        absent = [label for label in firsts if label not in in_headline]
        said = [f"{_names(undecided)} (its {name} undecidable in the headline)" if len(undecided) == 1 else
                f"{_names(undecided)} (their {name} undecidable in the headline)"] if undecided else []
        said += [f"{_names(absent)} (not in the headline table)"] if absent else []
        if said:
            parts.append(f"in the table {escape(table.title)}, " + " and ".join(said)
                         + f" {'is' if len(undecided) + len(absent) == 1 else 'are'} at rank 1 (of {ranked(table)} ranked)")
            named.update(undecided + absent)
    compatible = [(row, mean, interval) for row, mean, interval in compatible_by_margin(headline)
                  if row.label not in named]
    if compatible:
        parts.append("significantly compatible by the margin, cross − old self above 0, though P\\_com is not shown: "
                     + ", ".join(f"{escape(row.label)} ({mean:+.2f} [{low:+.2f}, {high:+.2f}] points)"
                                 for row, mean, (low, high) in compatible))
    elif headline.single_update and not winners:
        parts.append("no method is significantly compatible by the margin, cross − old self, either")
    parts += [escape(note) for note in training_notes(members)]
    return f"**{escape(headline.scenario)}** (table {escape(headline.title)}): " + "; ".join(parts) + "."


def _runner_up(table: Table, column: Column | None) -> str:
    """The rank-1 row against the best-scoring row behind it on ``column``: ``a − b: +0.120 [+0.031, +0.209] paired by
    seed`` (the mean difference over their common seeds and its interval); "" without both rows' replicates."""
    if column is None:
        return ""
    scored = [(row, cell) for row in table.rows if row.rank is not None
              and isinstance(cell := row.cells.get(column.id), Stat) and isinstance(cell.replicates, bootstrap.SeedSample)]
    first = [(row, cell) for row, cell in scored if row.rank == 1]
    rest = sorted(((row, cell) for row, cell in scored if row.rank != 1),
                  key=lambda item: -item[1].mean if column.statistic.higher_is_better else item[1].mean)
    if len(first) != 1 or not rest:
        return ""
    (best, a), (second, b) = first[0], rest[0]
    difference = a.replicates - b.replicates if column.statistic.higher_is_better else b.replicates - a.replicates
    if not len(difference.seeds):
        return ""
    with np.errstate(invalid="ignore"):
        low, high = bootstrap.interval(difference)
    left, right = (best, second) if column.statistic.higher_is_better else (second, best)
    digits = column.statistic.digits
    return (f"{escape(left.label)} − {escape(right.label)}: {float(np.mean(difference.values)):+.{digits}f} "
            f"[{low:+.{digits}f}, {high:+.{digits}f}] paired by seed")


def overview_markdown(tables: list[Table]) -> str:
    """The overview section of a page over all its ``tables``: the tables, a verdict per scenario and which methods
    break the most queries per scenario (its headline table)."""
    found = [text for members in by_headline(tables).values() if (text := flip_finding(members[0]))]
    return "\n\n".join(["## Overview", overview_tables(tables),
                        "\n".join(f"- {verdict(members)}" for members in by_headline(tables).values()),
                        *(["Which methods break the most queries? The negative flip rate old self → cross: % of the "
                           "queries right under the old model and wrong with the new model's queries on the old "
                           "gallery (lower is better):\n\n" + "\n".join(f"- {text}" for text in found)] if found else [])])


def _trained_alike(table: Table) -> str:
    """The table's configuration as tables tell configurations apart (``table_config``: without the class order
    that each seed draws under ``data.order_by_seed``, so that it does not depend on which record comes first),
    without the fields training never reads (``ScenarioBase.untrained_fields``)."""
    fields = set(kind_class(table.kind).untrained_fields)
    config = {k: v for k, v in table_config(table.config).items() if k not in fields}
    return json.dumps(config, sort_keys=True, default=str)


def _devices(table: Table) -> str:
    return ", ".join(sorted({r.device for r in table.records if r.device})) or "not recorded"


def training_notes(members: list[Table]) -> list[str]:
    """Per pair of a scenario's tables that differ only in evaluation options (one training's configuration): whether
    their records hold the same models (every common method and seed has the same matrices: the options only
    evaluated again) or were trained apart (then their numbers differ as two trainings do, with the devices and the
    primary statistic's largest move between them)."""
    notes = []
    for i, first in enumerate(members):
        for other in members[i + 1:]:
            if first.data != other.data or _trained_alike(first) != _trained_alike(other):
                continue
            by_cell = {(r.method, json.dumps(r.params, sort_keys=True), r.seed): r for r in first.records
                       if isinstance(r, FinishedRecord)}
            pairs = [(by_cell[key], r) for r in other.records if isinstance(r, FinishedRecord)
                     and (key := (r.method, json.dumps(r.params, sort_keys=True), r.seed)) in by_cell]
            if not pairs:
                continue
            same = all(a.matrices == b.matrices for a, b in pairs)
            names = f"{first.title} and {other.title}"
            if same:
                notes.append(f"{names} are one training evaluated twice (they differ only in evaluation options and "
                             "their common cells hold the same matrices)")
                continue
            column = primary_column(first)
            moves = []
            if column is not None:
                rows = {row.label: row for row in other.rows}
                for row in first.rows:
                    a, b = row.cells.get(column.id), rows.get(row.label) and rows[row.label].cells.get(column.id)
                    if isinstance(a, Stat) and isinstance(b, Stat) and row.rank and rows[row.label].rank:
                        moves.append((abs(rows[row.label].rank - row.rank), abs(b.mean - a.mean), row.label, a.mean,
                                      b.mean, row.rank, rows[row.label].rank))
            largest = max(moves) if moves else None
            move = (f"; the largest move in rank on {column.statistic.header} ({metric_name(column.metric)}): "
                    f"{largest[2]} {column.format(largest[3])} (rank {largest[5]}) against {column.format(largest[4])} "
                    f"(rank {largest[6]})") if largest else ""
            notes.append(f"{names} differ only in evaluation options, but their records were trained apart (devices "
                         f"{_devices(first)} against {_devices(other)}), so their models, and numbers, differ as two "
                         f"trainings do{move}; a run today evaluates the stored models of the same training again "
                         "(evaluation options are left out of the training key), so the two would agree")
    return notes


def flip_finding(table: Table) -> str:
    """Which methods break the most queries, generated from ``table``: every row with a negative flip rate old self ->
    cross on the first hit metric, over the seeds common to those rows, most first, and the most against the fewest
    with the interval of their difference paired by seed; "" without flip rates."""
    metric = next((m for m in table.metrics if flips.defined_for(m)), None)
    rows = [row for row in table.rows if row.finished]
    if metric is None:
        return ""
    held = [{r.seed for r in row.finished if record_flips(r, metric)} for row in rows]
    rows = [row for row, seeds in zip(rows, held) if seeds]
    common = sorted(set.intersection(*[s for s in held if s])) if rows else []
    if len(rows) < 2 or not common:
        return ""
    stats = []
    for row in rows:
        stat = records_stat([r for r in row.finished if r.seed in common], metric, "nfr_cross")
        if stat is not None:
            stats.append((row, stat))
    stats.sort(key=lambda item: (-item[1].mean, item[0].label))
    if len(stats) < 2:
        return ""
    (most, high), (fewest, low) = stats[0], stats[-1]
    paired = ""
    if isinstance(high.replicates, bootstrap.SeedSample) and isinstance(low.replicates, bootstrap.SeedSample):
        with np.errstate(invalid="ignore"):
            lo, hi = bootstrap.interval(high.replicates - low.replicates)
        paired = f" [{lo:+.1f}, {hi:+.1f}] paired by seed"
    seeds = ", ".join(map(str, common)) if len(common) < 3 or common != list(range(common[0], common[-1] + 1)) \
        else f"{common[0]}-{common[-1]}"
    return (f"**{escape(table.scenario)}** (table {escape(table.title)}, NFR cross ({escape(metric_name(metric))}) "
            f"on seeds {seeds}, common to its {len(stats)} rows with flip rates), most queries broken first: "
            + ", ".join(f"{escape(row.label)} {stat.mean:.1f}" for row, stat in stats)
            + f"; {escape(most.label)} − {escape(fewest.label)}: {high.mean - low.mean:+.1f} points{paired}.")
