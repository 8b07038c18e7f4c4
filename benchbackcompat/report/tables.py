"""Markdown tables (GitHub flavour, via tabulate): mean over seeds with its 95% interval [low, high] (± std
over seeds where no per-query outcomes were stored), rank, in bold every value that no row is significantly better than
(the column's rank-1 tier), "-", "–" or "nan" cells with a footnote saying why."""
from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

from tabulate import tabulate

from benchbackcompat.report.ranking import best_ids
from benchbackcompat.report.seed_statistics import MIN_UPDATE_GAIN
from benchbackcompat.report.table_data import Missing, Row, Stat, Table
from benchbackcompat.report.columns import LIVE, Column, metric_name, ranking
from benchbackcompat.report.markdown import PAGE_WIDTH, escape, unmarked, widest_line
from benchbackcompat.report.selection import selection_markdown
from benchbackcompat.report.stability import range_text, rank_ranges


BEST_NOTE = "*: no row is significantly better in its column (its rank-1 tier; bold on the published pages)"


@dataclass
class Footnotes:
    """Numbered footnotes of one page; the same text gets the same number. ``plain``: the page is terminal text,
    not Markdown (no escapes, notes ``[1]`` listed under the tables, the best values marked ``*``, not bold)."""

    texts: list[str] = field(default_factory=list)
    plain: bool = False
    starred: bool = False  # a plain page marked a best value

    def mark(self, text: str) -> str:
        if text not in self.texts:
            self.texts.append(text)
        number = self.texts.index(text) + 1
        return f"[{number}]" if self.plain else f"[^{number}]"

    def inline(self, text: object) -> str:
        """``text`` as one line of the page: escaped Markdown, or plain."""
        return " ".join(str(text).split()) if self.plain else escape(text)

    def best(self, text: str) -> str:
        self.starred |= self.plain
        return f"{text} *" if self.plain else f"**{text}**"

    def render(self) -> str:
        if self.plain:
            return "Notes:\n" + "\n".join([*(f"[{i}] {self.inline(t)}" for i, t in enumerate(self.texts, 1)),
                                            *([BEST_NOTE] if self.starred else [])])
        return "\n".join(f"[^{i}]: {escape(text)}" for i, text in enumerate(self.texts, 1))


def format_stat(stat: Stat, column: Column, seeds: int) -> str:
    text = column.format(stat.mean)
    if stat.interval is not None:
        low, high = stat.interval
        text += f" [{column.format(low)}, {column.format(high)}]"
    elif stat.std is not None:
        text += f" ± {column.format(stat.std)}"
    return text if stat.n == seeds else f"{text} (n={stat.n})"


UNDECIDED = ("–: P_com not shown: the update it divides by, reference self − old self (ref self and old self in the "
             f"table of self-tests), is not significantly positive or below {MIN_UPDATE_GAIN:g} points")


def _row_reason(row: Row) -> str | None:
    """The one reason behind every cell of a row without numbers (not applicable, diverged), else None."""
    reasons = {cell.reason for cell in row.cells.values() if isinstance(cell, Missing)}
    return reasons.pop() if len(reasons) == 1 and not row.finished else None


def table_markdown(table: Table, notes: Footnotes, columns: list[Column] | None = None, ranked: bool = True,
                   cost: bool = True) -> str:
    """``columns`` of ``table`` (default all) with the rank, minutes of compute per cell (``min``) and seeds. A reason shared by a
    whole row (not applicable) is one footnote on its label; undecidable P_com cells share one footnote."""
    columns = table.columns if columns is None else columns
    headers = ["method", *(["rank", "ranks"] if ranked else []),
               *(f"{c.statistic.header} ({notes.inline(c.metric)})" for c in columns), *(["min"] if cost else []), "seeds"]
    best = {c.id: best_ids(table, c) for c in columns}
    stable = rank_ranges(table) if ranked else {}
    rows = []
    for i, row in enumerate(table.rows):
        whole = _row_reason(row)
        flags = [*row.notes, *([row.chance] if row.chance else []), *([whole] if whole else [])]
        label = notes.inline(row.label) + (" (chance level)" if row.chance else "") + "".join(
            notes.mark(f"{row.label}: {note}") for note in flags)
        finished = len(row.finished)
        cells = []
        for column in columns:
            cell = row.cells[column.id]
            if isinstance(cell, Missing):
                shared = (UNDECIDED.replace("in the table of self-tests", "beside it") if notes.plain else UNDECIDED) \
                    if cell.reason.startswith("P_com not shown") else None
                mark = "" if whole else notes.mark(shared or f"{row.label}: {cell.reason}")
                cells.append(cell.text + mark)
            else:
                text = format_stat(cell, column, finished)
                cells.append(notes.best(text) if i in best[column.id] else text)
        minutes = row.minutes
        seeds = str(finished) if finished == len(row.records) else f"{finished} of {len(row.records)}"
        rows.append([label, *([str(row.rank) if row.rank is not None else "-", range_text(stable.get(id(row)))]
                              if ranked else []), *cells,
                     *([f"{minutes:.1f}" if minutes is not None else "-"] if cost else []), seeds])
    text = tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)
    unranked = unmarked(table.unranked) if notes.plain else table.unranked
    return f"{unranked}\n\n{text}" if unranked and ranked else text


def headline_columns(table: Table) -> list[Column]:
    """The first metric's statistics (context self-tests apart): the default view where it fits a page."""
    metric = table.columns[0].metric if table.columns else None
    return [c for c in table.columns if c.metric == metric and not c.statistic.context and not c.statistic.view]


def ranking_columns(table: Table, keep: int) -> list[Column]:
    """The first metric's ``keep`` ranking statistics (primary, then tie-breaker), or its first column."""
    return [c for c in headline_columns(table) if c.statistic.key in ranking(table.kind)[:keep]] or table.columns[:1]


def default_columns(table: Table, notes: Footnotes, width: int = PAGE_WIDTH) -> list[Column]:
    """The widest of the headline statistics, the ranking pair, or the primary statistic alone whose table fits
    ``width`` characters a row (long labels and wide intervals can push the headline past a screen)."""
    candidates = [headline_columns(table), ranking_columns(table, 2), ranking_columns(table, 1)]
    for columns in candidates:
        if widest_line(table_markdown(table, copy.deepcopy(notes), columns)) <= width:
            return columns
    return candidates[-1]


def other_views(table: Table, shown: list[Column]) -> list[tuple[str, list[Column]]]:
    """The columns left out of the default view (``shown``), as (title, columns): each metric's statistics not all
    shown, then the self-tests the ratios divide by, then each view of its own (the flip rates)."""
    shown_ids = {c.id for c in shown}
    views = [(f"{metric_name(m)} statistics", [c for c in table.columns if c.metric == m and not c.statistic.context
                                                and not c.statistic.view]) for m in table.metrics]
    views = [(title, cols) for title, cols in views if cols and not {c.id for c in cols} <= shown_ids]
    context = [c for c in table.columns if c.statistic.context and not c.statistic.view]
    own = [(view, [c for c in table.columns if c.statistic.view == view])
           for view in dict.fromkeys(c.statistic.view for c in table.columns if c.statistic.view)]
    own = [part for view, columns in own for part in (_by_metric(view, columns) if view in LIVE else [(view, columns)])]
    return views + ([("the self-tests P_com and P_up divide by", context)] if context else []) + own


def _by_metric(view: str, columns: list[Column]) -> list[tuple[str, list[Column]]]:
    """A view of several metrics as one view per metric (the live-gallery statistics: ten columns a metric)."""
    return [(f"{view}, {metric_name(metric)}", [c for c in columns if c.metric == metric])
            for metric in dict.fromkeys(c.metric for c in columns)]


def views_markdown(table: Table, notes: Footnotes, fold: bool = False) -> str:
    """The default view (:func:`default_columns`, ranked, with the cost) then every other view as its own table;
    ``fold``: the other views inside a collapsed ``<details>`` block each (the published pages)."""
    shown = default_columns(table, notes)
    parts = [table_markdown(table, notes, shown)]
    for title, columns in other_views(table, shown):
        if fold and columns[0].statistic.view in LIVE:
            continue  # the pages show them beside the curves and the index scores (``report.upgrade``)
        view = table_markdown(table, notes, columns, ranked=False, cost=False)
        parts.append(f"<details><summary>{escape(title)}</summary>\n\n{view}\n\n</details>" if fold
                     else f"{notes.inline(title[0].upper() + title[1:])}:\n\n{view}")
    return "\n\n".join(parts)


def tables_markdown(tables: list[Table], grids: bool = False, plain: bool = False,
                    views: Callable[[Table, Footnotes], str] = views_markdown) -> str:
    """Every table with a heading, how grid rows were selected (and with ``grids`` their whole grids) and the
    footnotes; ``plain``: terminal text (:class:`Footnotes`); ``views``: the tables of one scenario table."""
    notes = Footnotes(plain=plain)
    parts = []
    for t in tables:
        title = f"{notes.inline(t.title)} · {notes.inline(t.dataset)} · preset {notes.inline(t.preset)}"
        parts.append((f"{title}\n{'=' * len(title)}" if plain else f"### {title}") + f"\n\n{views(t, notes)}"
                     + (f"\n\n{unmarked(chosen) if plain else chosen}" if (chosen := selection_markdown(t, grids)) else ""))
    if notes.texts or notes.starred:
        parts.append(notes.render())
    return "\n\n".join(parts)
