"""The flip rates of a method's rows as one Markdown table (its method page): per table, the negative and positive
flip rates of each hit metric (``metrics.flips``), the negative ones with their 95% intervals, and, for one update,
the cross-test's margin over the old self-test, which equals PFR - NFR old self -> cross."""
from __future__ import annotations

import copy
from collections.abc import Sequence

from tabulate import tabulate

from benchbackcompat.metrics import flips
from benchbackcompat.report.seed_statistics import margin
from benchbackcompat.report.table_data import Missing, Row, Stat, Table
from benchbackcompat.report.columns import STATISTICS, Column, metric_name
from benchbackcompat.report.markdown import PAGE_WIDTH, escape, widest_line
from benchbackcompat.report.tables import Footnotes, format_stat


def flips_markdown(rows: Sequence[tuple[Table, Row]], notes: Footnotes) -> str:
    """One line per (table, row) and hit metric: NFR and PFR old self -> cross and old self -> new self (mean over the
    consecutive pairs of a sequence) and, for one update, cross - old self; the NFRs with their 95% intervals, or
    every value without where that does not fit ``PAGE_WIDTH``."""
    for intervals in (True, False):
        text = _flips_table(rows, copy.deepcopy(notes), intervals)
        if widest_line(text) <= PAGE_WIDTH:
            break
    return _flips_table(rows, notes, intervals)


def _flips_table(rows: Sequence[tuple[Table, Row]], notes: Footnotes, intervals: bool) -> str:
    """The table; its title names the row's setting only where the method has rows of several settings (else the
    row is the page's own method)."""
    lines = []
    labelled = len({row.label for _, row in rows}) > 1
    for table, row in rows:
        hit_metrics = [m for m in table.metrics if flips.defined_for(m)]
        for metric in hit_metrics:
            cells = []
            for key in flips.KEYS:
                column = Column(metric, STATISTICS[key])
                cell = row.cells.get(column.id)
                shown = intervals and key.startswith("nfr")
                cells.append(_text(cell, column, len(row.finished), shown) if isinstance(cell, Stat)
                             else cell.text + notes.mark(cell.reason) if isinstance(cell, Missing) else "-")
            gap = margin(row, metric) if table.single_update else None
            cells.append(f"{gap[0]:.2f}" if gap is not None else "-")  # points, as the cross-test
            title = table.title + (f" · {row.label}" if labelled else "") + (
                f" · {metric_name(metric)}" if len(hit_metrics) > 1 else "")
            lines.append([escape(title), *cells])
    if not lines:
        return "No flip rates: no table of this method stores per-query hits."
    headers = ["table", *(STATISTICS[key].header for key in flips.KEYS), "cross − old self"]
    return tabulate(lines, headers=headers, tablefmt="github", disable_numparse=True)


def first_gallery_markdown(rows: Sequence[tuple[Table, Row]], notes: Footnotes) -> str:
    """A team that never backfills (sequences): per (table, row) and hit metric, NFR and PFR of the last model's
    queries on the first gallery, C[0][0] -> C[T-1][0], with their 95% intervals (without, where that does not fit
    ``PAGE_WIDTH``); "" where no row is a sequence."""
    for intervals in (True, False):
        text = _first_gallery_table(rows, copy.deepcopy(notes), intervals)
        if widest_line(text) <= PAGE_WIDTH:
            break
    return _first_gallery_table(rows, notes, intervals)


def _first_gallery_table(rows: Sequence[tuple[Table, Row]], notes: Footnotes, intervals: bool) -> str:
    lines = []
    labelled = len({row.label for _, row in rows}) > 1
    for table, row in rows:
        hit_metrics = [m for m in table.metrics if flips.defined_for(m)]
        for metric in (m for m in hit_metrics if any(c.id == f"{m}:nfr_first" for c in table.columns)):
            cells = []
            for key in flips.FIRST_KEYS:
                column = Column(metric, STATISTICS[key])
                cell = row.cells.get(column.id)
                cells.append(_text(cell, column, len(row.finished), intervals) if isinstance(cell, Stat)
                             else cell.text + notes.mark(cell.reason) if isinstance(cell, Missing) else "-")
            models = {len(r.matrices.get(metric) or []) for r in row.finished} - {0}
            title = table.title + (f" · {row.label}" if labelled else "") + (
                f" · {metric_name(metric)}" if len(hit_metrics) > 1 else "")
            lines.append([escape(title), ", ".join(map(str, sorted(models))) or "-", *cells])
    if not lines:
        return ""
    headers = ["table", "models T", *(STATISTICS[key].header for key in flips.FIRST_KEYS)]
    return tabulate(lines, headers=headers, tablefmt="github", disable_numparse=True)


def _text(stat: Stat, column: Column, seeds: int, interval: bool) -> str:
    """The mean, with its interval when ``interval`` (``tables.format_stat``)."""
    if interval:
        return format_stat(stat, column, seeds)
    return column.format(stat.mean) + ("" if stat.n == seeds else f" (n={stat.n})")
