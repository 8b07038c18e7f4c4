"""One page per method (``methods/<name>.md``): every table it ran in, with its primary statistic, 95% interval and
rank; its hyperparameters as its records resolved them; its paper as its plugin declares it; its cost; and its
mean compatibility matrices, as Markdown, beside the figures that show every method's.

The numbers come from the tables (:mod:`benchbackcompat.report.grouping`), the description and paper from the
method's class (:class:`MethodInfo`, what ``benchbackcompat describe METHOD`` prints); a method whose plugin is not
installed where the pages are rendered gets its page without them.
"""
from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tabulate import tabulate

from benchbackcompat.report.describe import paper, parameter_rows
from benchbackcompat.method import Method
from benchbackcompat.record import CellRecord
from benchbackcompat.report import figures
from benchbackcompat.report.table_data import Missing, Row, Stat, Table
from benchbackcompat.report.columns import metric_name
from benchbackcompat.report.flip_tables import first_gallery_markdown, flips_markdown
from benchbackcompat.report.markdown import escape, slug
from benchbackcompat.report.overview import primary_column
from benchbackcompat.report.provenance import Verification, header_markdown
from benchbackcompat.report.tables import Footnotes, format_stat

FOLDER = "methods"


@dataclass(frozen=True)
class MethodInfo:
    """What a method's class declares: its one-line description, its paper (the first paragraph of its module's
    docstring) and, per hyperparameter, its default and description."""

    description: str
    paper: str
    params: dict[str, tuple[str, str]] = field(default_factory=dict)

    @classmethod
    def of(cls, method: type[Method]) -> MethodInfo:
        return cls(method.description, paper(method),
                   {row["name"]: (row["default"], row["description"]) for row in parameter_rows(method.Params)})


def page_path(method: str) -> str:
    """The page of ``method``, relative to the leaderboard folder."""
    return f"{FOLDER}/{slug(method)}.md"


@dataclass
class Entry:
    """One row of ``method`` in one table of one page."""

    page: str
    table: Table
    row: Row


def entries_of(pages: Sequence[tuple[str, Sequence[Table]]]) -> dict[str, list[Entry]]:
    """Every method's rows, by method name, in the pages' order."""
    found: dict[str, list[Entry]] = {}
    for page, tables in pages:
        for table in tables:
            for row in table.rows:
                found.setdefault(row.method, []).append(Entry(page, table, row))
    return dict(sorted(found.items()))


def _rank(entry: Entry) -> str:
    ranked = sum(row.rank is not None for row in entry.table.rows)
    if entry.row.rank is not None:
        return f"{entry.row.rank} of {ranked}"
    return "chance level" if entry.row.chance else "not ranked"


def _value(entry: Entry, notes: Footnotes) -> tuple[str, str]:
    """(statistic, its value with interval) of the row on the table's primary column."""
    column = primary_column(entry.table)
    if column is None:
        return "", ""
    cell = entry.row.cells.get(column.id)
    name = f"{column.statistic.header} ({metric_name(column.metric)})"
    if isinstance(cell, Missing):
        return name, cell.text + notes.mark(cell.reason)
    if not isinstance(cell, Stat):
        return name, ""
    text = format_stat(cell, column, len(entry.row.finished))
    return name, f"**{text}**" if entry.row.rank == 1 else text


def results_markdown(entries: list[Entry], notes: Footnotes) -> str:
    """One table per leaderboard page: the row's primary statistic, rank, seeds and minutes per cell in each table."""
    parts = []
    for page in dict.fromkeys(entry.page for entry in entries):
        rows = []
        for entry in (e for e in entries if e.page == page):
            statistic, value = _value(entry, notes)
            minutes, finished, total = entry.row.minutes, len(entry.row.finished), len(entry.row.records)
            label = entry.table.title + (f" · {entry.row.qualifier}" if entry.row.qualifier else "")
            rows.append([escape(label), escape(statistic), value, _rank(entry), str(finished) if finished == total else f"{finished} of {total}",
                         f"{minutes:.1f}" if minutes is not None else "-"])
        parts.append(f"### [{escape(page)}](../{page}.md)\n\n" + tabulate(
            rows, headers=["table", "statistic", "value [95% interval]", "rank", "seeds", "min"],
            tablefmt="github", disable_numparse=True))
    return "\n\n".join(parts)


def never_backfilled_markdown(entries: list[Entry], notes: Footnotes) -> list[str]:
    """The flips of a team that keeps the first gallery (its sequences' rows; [] without any): a sentence and
    :func:`~benchbackcompat.report.flip_tables.first_gallery_markdown`."""
    table = first_gallery_markdown([(entry.table, entry.row) for entry in entries], notes)
    if not table:
        return []
    return ["A team that never backfills keeps the first gallery: the flips of the last model T's queries on it, "
            "C[0][0] → C[T−1][0], with their 95% intervals (per model: `load_flips`, its rows of pairs = first gallery).",
            table]


def hyperparameters_markdown(records: list[CellRecord], info: MethodInfo | None) -> str:
    """Each hyperparameter with the values its records resolved (several when rows differ), its default and
    description (a list: descriptions are sentences)."""
    names = list(dict.fromkeys(name for r in records for name in r.params))
    if not names:
        return "No hyperparameters."
    lines = []
    for name in names:
        values = sorted(dict.fromkeys(repr(r.params[name]) for r in records if name in r.params))
        default, description = info.params.get(name, ("", "")) if info else ("", "")
        lines.append(f"- **{escape(name)}** = {escape(', '.join(values))}" + (f" (default {escape(default)})" if default else "")
                     + (f": {escape(description)}" if description else ""))
    return "\n".join(lines)


def cost_markdown(records: list[CellRecord]) -> str:
    seconds = [r.compute_seconds for r in records if r.finished and r.timings]
    if not seconds:
        return "No timings were recorded."
    return (f"{len(seconds)} finished cells with timings: {statistics.fmean(seconds) / 60:.1f} minutes of compute per "
            f"cell on average (training, including the shared models a cell trained, and evaluation), "
            f"{sum(seconds) / 60:.1f} minutes in all; per table in the `min` column above.")


def matrix_markdown(M: np.ndarray) -> str:
    """C[t][k] (row t = query model, column k = gallery model), an incompatible entry marked ×."""
    bad = figures.incompatible(M)
    T = len(M)
    rows = [[str(t + 1), *(("n/a" if not np.isfinite(M[t][k]) else f"{M[t][k]:.1f}" + (" ×" if bad[t][k] else ""))
                           if k <= t else "" for k in range(T))] for t in range(T)]
    return tabulate(rows, headers=["t \\ k", *(str(k + 1) for k in range(T))], tablefmt="github",
                    disable_numparse=True)


def matrices_markdown(entries: list[Entry], out: Path) -> str:
    parts = []
    for entry in entries:
        metric = entry.table.metrics[0] if entry.table.metrics else None
        M = figures.mean_matrix(entry.row, metric) if metric else None
        if M is None:
            continue
        heading = f"### {escape(entry.table.title)} · {escape(entry.page)} · {escape(entry.row.label)}"
        figure = figures.figure_name(entry.page, entry.table, metric, "matrices")
        link = (f" ([every method's matrices](../figures/{figure}))" if (out / "figures" / figure).is_file() else "")
        parts.append(f"{heading}\n\n{escape(metric_name(metric))}, mean over seeds{link}:\n\n{matrix_markdown(M)}")
    if not parts:
        return "No compatibility matrices were stored."
    return ("Row t = query model, column k = gallery model; × marks an incompatible entry, C[t][k] <= C[k][k] "
            "(strict criterion).\n\n" + "\n\n".join(parts))


def method_markdown(method: str, entries: list[Entry], info: MethodInfo | None, out: Path, date: str,
                    verification: Verification | None = None) -> str:
    notes = Footnotes()
    records = [r for entry in entries for r in entry.row.records]
    pages = list(dict.fromkeys(entry.page for entry in entries))
    parts = [f"# Method: {escape(method)}", header_markdown(records, date, verification),
             "[Index](../README.md) · pages: " + " · ".join(f"[{escape(p)}](../{p}.md)" for p in pages)]
    if info is None:
        parts.append("Its plugin was not installed where these pages were rendered: no description or paper.")
    else:
        parts.append(f"{escape(info.description)}  \nPaper: {escape(info.paper)}")
    firsts = sum(entry.row.rank == 1 for entry in entries)
    parts += ["## Results",
              f"Its primary statistic in every table it ran in ({len(entries)} rows; rank 1 in {firsts}): the mean "
              "over seeds with its 95% interval; the rank is a tier, 1 + the rows significantly better, of the rows "
              "ranked (bold: rank 1); `min`: minutes of compute per cell.",
              results_markdown(entries, notes),
              "## Flips",
              "Negative flip rate (NFR): % of the queries right under the old self-test and wrong after the update, "
              "with its 95% interval; positive (PFR): the reverse; cross: the new model's queries on the old "
              "gallery, before any backfill; self: after a full backfill (the mean over consecutive pairs for "
              "a sequence). Cross − old self = PFR cross − NFR cross: a positive margin can hide many broken queries.",
              flips_markdown([(entry.table, entry.row) for entry in entries], notes),
              *never_backfilled_markdown(entries, notes),
              "## Hyperparameters", "As resolved in its records; default and description from its code.",
              hyperparameters_markdown(records, info),
              "## Cost", cost_markdown(records),
              "## Compatibility matrices", matrices_markdown(entries, out)]
    if notes.texts:
        parts.append(notes.render())
    return "\n\n".join(parts) + "\n"


def method_pages(pages: Sequence[tuple[str, Sequence[Table]]], info: Mapping[str, MethodInfo], out: Path,
                 date: str, verification: Verification | None = None) -> dict[str, str]:
    """Page path (relative to ``out``, the folder the figures are rendered into) -> Markdown, one per method with a
    row in ``pages`` ((page name, tables))."""
    return {page_path(method): method_markdown(method, entries, info.get(method), out, date, verification)
            for method, entries in entries_of(pages).items()}


def methods_index(pages: Sequence[tuple[str, Sequence[Table]]], prefix: str = "") -> str:
    """A table of the methods with links to their pages: tables, rank-1 tables, cells, minutes per cell."""
    rows = []
    for method, entries in entries_of(pages).items():
        records = [r for entry in entries for r in entry.row.records]
        seconds = [r.compute_seconds for r in records if r.finished and r.timings]
        rows.append([f"[{escape(method)}]({prefix}{page_path(method)})", str(len(entries)),
                     str(sum(entry.row.rank == 1 for entry in entries)), str(len(records)),
                     f"{statistics.fmean(seconds) / 60:.1f}" if seconds else "-"])
    return tabulate(rows, headers=["method", "table rows", "rank 1", "cells", "min per cell"], tablefmt="github",
                    disable_numparse=True)
