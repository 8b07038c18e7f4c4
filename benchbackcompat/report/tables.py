"""Markdown tables (GitHub flavour, via tabulate): mean over seeds with its 95% interval [low, high] (± std
over seeds where no per-query outcomes were stored), rank, in bold every value not significantly worse than
the best, "-", "–" or "nan" cells with a footnote saying why."""
from __future__ import annotations

from dataclasses import dataclass, field

from tabulate import tabulate

from benchbackcompat.report.aggregate import Missing, Stat, Table, best_ids
from benchbackcompat.report.columns import Column
from benchbackcompat.report.markdown import escape
from benchbackcompat.report.selection import selection_markdown


@dataclass
class Footnotes:
    """Numbered footnotes of one page; the same text gets the same number."""

    texts: list[str] = field(default_factory=list)

    def mark(self, text: str) -> str:
        if text not in self.texts:
            self.texts.append(text)
        return f"[^{self.texts.index(text) + 1}]"

    def render(self) -> str:
        return "\n".join(f"[^{i}]: {escape(text)}" for i, text in enumerate(self.texts, 1))


def format_stat(stat: Stat, column: Column, seeds: int) -> str:
    text = column.format(stat.mean)
    if stat.interval is not None:
        low, high = stat.interval
        text += f" [{column.format(low)}, {column.format(high)}]"
    elif stat.std is not None:
        text += f" ± {column.format(stat.std)}"
    return text if stat.n == seeds else f"{text} (n={stat.n})"


def table_markdown(table: Table, notes: Footnotes) -> str:
    headers = ["method", "rank", *(f"{c.statistic.header} ({escape(c.metric)})" for c in table.columns), "seeds"]
    best = {c.id: best_ids(table, c) for c in table.columns}
    rows = []
    for i, row in enumerate(table.rows):
        flags = [*row.notes, *([row.chance] if row.chance else [])]
        label = escape(row.label) + (" (chance level)" if row.chance else "") + "".join(
            notes.mark(f"{row.label}: {note}") for note in flags)
        finished = len(row.finished)
        cells = []
        for column in table.columns:
            cell = row.cells[column.id]
            if isinstance(cell, Missing):
                cells.append(cell.text + notes.mark(f"{row.label}: {cell.reason}"))
            else:
                text = format_stat(cell, column, finished)
                cells.append(f"**{text}**" if i in best[column.id] else text)
        seeds = str(finished) if finished == len(row.records) else f"{finished} of {len(row.records)}"
        rows.append([label, str(row.rank) if row.rank is not None else "-", *cells, seeds])
    text = tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)
    return f"{table.unranked}\n\n{text}" if table.unranked else text


def tables_markdown(tables: list[Table], grids: bool = False) -> str:
    """Every table with a heading, how grid rows were selected (and with ``grids`` their whole grids) and the
    footnotes (the terminal summary after a run)."""
    notes = Footnotes()
    parts = [f"### {escape(t.title)} · {escape(t.dataset)} · preset {escape(t.preset)}\n\n{table_markdown(t, notes)}"
             + (f"\n\n{chosen}" if (chosen := selection_markdown(t, grids)) else "")
             for t in tables]
    if notes.texts:
        parts.append(notes.render())
    return "\n\n".join(parts)
