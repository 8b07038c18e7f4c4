"""The leaderboard as a static HTML site (``site/`` of the leaderboard folder): the overview, the results as
sortable and filterable tables, the figures, a page per method and the claims digest.

Rendered with Jinja2 templates (``site_templates/``, autoescaped: every text from records, plugins or claims files
is escaped) from the same tables, in the same formats (``tables.format_stat``), as the Markdown pages, so each number
equals the Markdown page's. A small script of its own (``site.js``) sorts and filters the tables in the browser; the
site fetches nothing, needs no server and opens from ``file://`` or any static host (links are relative; the figures
are the leaderboard's own ``figures/*.png``).
"""
from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

import numpy as np
from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from benchbackcompat.record import CellRecord
from benchbackcompat.report import figures
from benchbackcompat.report.ranking import best_ids
from benchbackcompat.report.table_data import Missing, Row, Stat, Table
from benchbackcompat.report.calibration import Calibration
from benchbackcompat.report.claims.declared import ClaimsFile
from benchbackcompat.report.claims.judge import Judgement
from benchbackcompat.report.claims.page import OUTCOMES, judge_files, summary_markdown
from benchbackcompat.report.columns import Column, metric_name
from benchbackcompat.report.markdown import slug, unmarked
from benchbackcompat.report.methods import MethodInfo, entries_of
from benchbackcompat.report.overview import by_headline, overview_grids, verdict
from benchbackcompat.report.provenance import VERSION_KEYS, Verification, provenance, verified_at
from benchbackcompat.report.tables import Footnotes, format_stat
from benchbackcompat.runtime.terminal import printable

FOLDER = "site"
ASSETS = ("site.css", "site.js")
FIGURES = (("matrices", "compatibility matrices"), ("margin", "cross − old self"), ("aa", "AA_tau over tasks"),
           ("backfill", "backfilling curves"))
Judged = Sequence[tuple[ClaimsFile, Sequence[Judgement]]]


@dataclass(frozen=True)
class Cell:
    """One table cell: its text as on the Markdown pages, the number it sorts by (None: none), whether it is bold,
    its footnote mark with the note's text (why it has no number) and text after it (an overview cell's rank)."""

    text: str
    sort: float | None = None
    bold: bool = False
    mark: str = ""
    note: str = ""
    after: str = ""


@dataclass
class TableRow:
    label: str
    method: str
    rank: Cell
    cells: list[Cell]
    minutes: Cell
    seeds: str
    marks: str = ""  # footnote marks of the row as a whole


@dataclass
class TableView:
    """One results table of a page: every column, ranked, with the footnotes its cells point to."""

    id: str
    title: str
    description: str
    kind: str
    unranked: str
    headers: list[str]
    rows: list[TableRow]
    notes: list[str]
    figures: list[tuple[str, str]]  # (path relative to the site folder, caption)


@dataclass(frozen=True)
class ResultLine:
    """One statistic of one row of one table (a line of the results explorer)."""

    page: str
    dataset: str
    preset: str
    scenario: str
    table: str
    method: str
    label: str
    statistic: str
    metric: str
    value: Cell
    rank: Cell
    seeds: str


@dataclass
class OverviewView:
    """Methods x scenarios on one primary statistic: each cell the row the Markdown overview shows."""

    statistic: str
    headers: list[str]
    rows: list[tuple[str, str, list[Cell]]]  # (row label, method, a cell per scenario)


@dataclass
class PageView:
    name: str
    dataset: str
    preset: str
    cells: int
    overviews: list[OverviewView]
    verdicts: list[str]
    tables: list[TableView] = field(default_factory=list)


# ------------------------------------------------------------------ cells, from the Markdown pages' formats
def stat_cell(row: Row, column: Column, bold: bool, notes: Footnotes | None = None) -> Cell:
    """``row``'s value of ``column`` as the Markdown table shows it (``format_stat``), or its "-", "–", "nan" saying
    why (pointed at, and in a footnote of ``notes`` when given)."""
    cell = row.cells.get(column.id)
    if isinstance(cell, Missing):
        return Cell(cell.text, mark=notes.mark(cell.reason) if notes else "", note=cell.reason)
    if not isinstance(cell, Stat):
        return Cell("")
    return Cell(format_stat(cell, column, len(row.finished)), cell.mean, bold)


def rank_cell(row: Row) -> Cell:
    return Cell(str(row.rank), row.rank) if row.rank is not None else Cell("-")


def seeds_text(row: Row) -> str:
    finished = len(row.finished)
    return str(finished) if finished == len(row.records) else f"{finished} of {len(row.records)}"


def minutes_cell(row: Row) -> Cell:
    minutes = row.minutes
    return Cell(f"{minutes:.1f}", minutes) if minutes is not None else Cell("-")


def figure_files(page: str, table: Table, out: Path) -> list[tuple[str, str]]:
    """The figures of ``table`` that the rendering wrote into ``out/figures``, as (link from the site, caption)."""
    found = []
    for metric in table.metrics:
        for what, caption in FIGURES:
            name = figures.figure_name(page, table, metric, what)
            if (out / "figures" / name).is_file():
                found.append((f"../figures/{name}", f"{table.title}: {caption}, {metric_name(metric)}"))
    return found


def bold_rows(table: Table) -> dict[str, set[int]]:
    """Per column of ``table``, the rows (by index) bold on the Markdown pages (``ranking.best_ids``)."""
    return {c.id: best_ids(table, c) for c in table.columns}


def table_view(page: str, table: Table, out: Path, best: dict[str, set[int]]) -> TableView:
    """Every column of ``table``, with the rank, minutes of compute per cell and seeds, bold in the ``best`` rows
    (:func:`bold_rows`)."""
    notes = Footnotes(plain=True)
    rows = []
    for i, row in enumerate(table.rows):
        flags = [*row.notes, *([row.chance] if row.chance else [])]
        rows.append(TableRow(row.label + (" (chance level)" if row.chance else ""), row.method, rank_cell(row),
                             [stat_cell(row, c, i in best[c.id], notes) for c in table.columns], minutes_cell(row),
                             seeds_text(row), "".join(notes.mark(f"{row.label}: {note}") for note in flags)))
    return TableView(f"{page}-{slug(table.title)}", table.title, table.config.get("description", ""), table.kind,
                     unmarked(table.unranked), [f"{c.statistic.header} ({metric_name(c.metric)})" for c in table.columns],
                     rows, notes.texts, figure_files(page, table, out))


def result_lines(page: str, tables: Sequence[Table], bold: Mapping[int, dict[str, set[int]]]) -> list[ResultLine]:
    """Every statistic of every row of ``tables``, one line each, bold in the rows ``bold[id(table)]`` names."""
    lines = []
    for table in tables:
        best = bold[id(table)]
        for i, row in enumerate(table.rows):
            for column in table.columns:
                lines.append(ResultLine(page, table.dataset, table.preset, table.scenario, table.title, row.method,
                                        row.label, column.statistic.header, metric_name(column.metric),
                                        stat_cell(row, column, i in best[column.id]), rank_cell(row),
                                        seeds_text(row)))
    return lines


# ------------------------------------------------------------------ the overview (overview.py's choices)
def overview_cell(table: Table, row: Row, column: Column, headline: Table) -> Cell:
    """The cell of the Markdown overview: the primary statistic with its rank (bold at rank 1), the configuration it
    comes from where that is not the headline's, or why it has no rank."""
    cell = row.cells.get(column.id)
    if isinstance(cell, Missing):
        return Cell(f"{cell.text} ({cell.word})", note=cell.reason)
    if not isinstance(cell, Stat):
        return Cell("")
    text = format_stat(cell, column, len(row.finished))
    if row.rank is None:
        return Cell(f"{text} ({'chance level' if row.chance else 'not ranked'})", cell.mean)
    source = "" if table is headline else f", in {table.title}"
    return Cell(text, cell.mean, row.rank == 1, after=f"({row.rank}{source})")


def overview_views(tables: Sequence[Table]) -> list[OverviewView]:
    """The Markdown overview's grids (``overview.overview_grids``: each scenario's column from its headline
    configuration, the methods in the same order) with the site's cells."""
    views = []
    for grid in overview_grids(list(tables)):
        columns = grid.columns()
        rows = []
        for label in grid.labels:
            shown = grid.shown[label]
            method = next(found[1].method for found in shown if found is not None)
            rows.append((label, method, [Cell("") if found is None else overview_cell(found[0], found[1], column, m[0])
                                         for found, column, m in zip(shown, columns, grid.scenarios)]))
        views.append(OverviewView(grid.header, [f"{m[0].scenario} ({metric_name(column.metric)})"
                                                for m, column in zip(grid.scenarios, columns)], rows))
    return views


def page_view(name: str, tables: Sequence[Table], out: Path, bold: Mapping[int, dict[str, set[int]]]) -> PageView:
    headlines = by_headline(list(tables))
    ordered = sorted(tables, key=lambda t: (t.scenario, headlines[t.scenario][0] is not t, t.variant))
    return PageView(name, tables[0].dataset, tables[0].preset, sum(len(t.records) for t in tables),
                    overview_views(tables), [unmarked(verdict(members)) for members in headlines.values()],
                    [table_view(name, t, out, bold[id(t)]) for t in ordered])


# ------------------------------------------------------------------ methods and claims
@dataclass
class MethodView:
    name: str
    path: str  # relative to the site folder
    info: MethodInfo | None
    lines: list[ResultLine]
    entries: int  # its rows, one per table it ran in
    firsts: int  # of which at rank 1
    params: list[tuple[str, str, str, str]]  # name, resolved values, default, description
    cost: str
    matrices: list[tuple[str, list[list[str]]]]  # heading, rows of C[t][k] (× marks an incompatible entry)


def method_path(method: str) -> str:
    return f"methods/{slug(method)}.html"


def matrix_rows(M: np.ndarray) -> list[list[str]]:
    """C[t][k] for k <= t as the method pages' Markdown shows it (one decimal, × where incompatible)."""
    bad = figures.incompatible(M)
    return [[("n/a" if not np.isfinite(M[t][k]) else f"{M[t][k]:.1f}" + (" ×" if bad[t][k] else "")) if k <= t else ""
             for k in range(len(M))] for t in range(len(M))]


def parameter_lines(records: list[CellRecord], info: MethodInfo | None) -> list[tuple[str, str, str, str]]:
    names = list(dict.fromkeys(name for r in records for name in r.params))
    lines = []
    for name in names:
        values = sorted(dict.fromkeys(repr(r.params[name]) for r in records if name in r.params))
        default, description = info.params.get(name, ("", "")) if info else ("", "")
        lines.append((name, ", ".join(values), default, description))
    return lines


def method_views(pages: Sequence[tuple[str, Sequence[Table]]], info: Mapping[str, MethodInfo],
                 lines: Sequence[ResultLine]) -> list[MethodView]:
    """Each method's page: its lines of the results explorer (``lines``), hyperparameters, cost and matrices."""
    views = []
    for method, entries in entries_of(pages).items():
        records = [r for entry in entries for r in entry.row.records]
        seconds = [r.compute_seconds for r in records if r.finished and r.timings]
        cost = (f"{len(seconds)} finished cells with timings: {statistics.fmean(seconds) / 60:.1f} minutes of compute "
                f"per cell on average, {sum(seconds) / 60:.1f} minutes in all." if seconds else "No timings were recorded.")
        matrices = []
        for entry in entries:
            metric = entry.table.metrics[0] if entry.table.metrics else None
            M = figures.mean_matrix(entry.row, metric) if metric else None
            if M is not None:
                matrices.append((f"{entry.table.title} · {entry.page} · {entry.row.label} · {metric_name(metric)}",
                                 matrix_rows(M)))
        views.append(MethodView(method, method_path(method), info.get(method),
                                [line for line in lines if line.method == method], len(entries),
                                sum(entry.row.rank == 1 for entry in entries), parameter_lines(records, info.get(method)),
                                cost, matrices))
    return views


@dataclass(frozen=True)
class ClaimLine:
    id: str
    paper: str
    verdict: str
    summary: str  # the claims page's summary line of the claim, as plain text


def claims_view(judged: Judged) -> tuple[list[str], list[tuple[str, list[int]]], list[ClaimLine]]:
    """The claims page's tally (the tally kinds present, then per outcome and for all the count of each kind) and,
    per claim, its verdict and the claims page's summary line (``claims.page.summary_markdown``)."""
    kinds = [(kind, name) for kind, name in (("paper", "paper claims"), ("variant", "variants the papers did not tabulate"))
             if any(j.claim.tally == kind for _, judgements in judged for j in judgements)]
    verdicts = {kind: [j.verdict for _, judgements in judged for j in judgements if j.claim.tally == kind]
                for kind, _ in kinds}
    tally = [(outcome, [verdicts[kind].count(outcome) for kind, _ in kinds]) for outcome in OUTCOMES]
    tally.append(("all", [len(verdicts[kind]) for kind, _ in kinds]))
    lines = []
    for file, judgements in judged:
        for j in judgements:
            summary = summary_markdown([(file, [j])])
            line = next(line for line in summary.splitlines() if line.startswith("- "))
            lines.append(ClaimLine(j.claim.id, file.paper.title.split(":")[0], j.verdict, unmarked(line[2:])))
    return [name for _, name in kinds], tally, lines


# ------------------------------------------------------------------ the site
def environment() -> Environment:
    """The templates, autoescaped (every text is escaped unless a template marks it safe, and none does), control and
    format characters of record text shown as escapes (``\\x1b``), as on the terminal."""
    env = Environment(loader=PackageLoader("benchbackcompat.report", "site_templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                      finalize=lambda value: value if isinstance(value, Markup) or not isinstance(value, str)
                      else printable(value, lines=True))
    env.globals["method_path"] = method_path
    return env


def header(records: list[CellRecord], date: str, verification: Verification | None) -> list[tuple[str, str]]:
    """The provenance of the Markdown pages' headers, as (field, value) pairs."""
    p = provenance(records, date)
    commit = verified_at(records, verification) if verification is not None else f"{p['commit']} ({p['method_code']})"
    return [("generated", f"{p['date']} from {p['cells']} stored cells"), ("dataset", p["datasets"]),
            ("preset", p["presets"]), ("commit", commit),
            ("versions", " · ".join(f"{key} {p[key]}" for key in VERSION_KEYS)), ("devices", p["devices"])]


def site_files(pages: Sequence[tuple[str, Sequence[Table]]], out: Path, date: str,
               methods: Mapping[str, MethodInfo] | None = None, claims: Sequence[ClaimsFile] = (),
               calibrations: Sequence[Calibration] = (), verification: Verification | None = None,
               judged: Judged | None = None) -> dict[str, str]:
    """Path (relative to the leaderboard folder) -> text of every file of the site, for ``pages`` ((page name,
    tables), as the Markdown pages); ``out``: the folder the figures were rendered into (``out/figures``);
    ``methods``: what each method's class declares; ``claims``: the claims files judged on these tables, with the
    scale's ``calibrations``, as on the claims page (none: no claims page); ``judged``: their judgements, where the
    caller has them already (the claims are judged once per rendering)."""
    env = environment()
    if judged is None:
        judged = judge_files(claims, [t for _, tables in pages for t in tables], calibrations) if claims else []
    records = [r for _, tables in pages for table in tables for r in table.records]
    bold = {id(t): bold_rows(t) for _, tables in pages for t in tables}
    views = [page_view(name, tables, out, bold) for name, tables in pages]
    lines = [line for name, tables in pages for line in result_lines(name, tables, bold)]
    methods_shown = method_views(pages, methods or {}, lines)
    common = {"header": header(records, date, verification), "claims": bool(judged), "pages": views,
              "methods": methods_shown}
    rendered = {"index.html": env.get_template("index.html").render(root="", **common),
                "results.html": env.get_template("results.html").render(root="", lines=lines, **common)}
    for view in views:
        rendered[f"{view.name}.html"] = env.get_template("page.html").render(root="", page=view, **common)
    for view in methods_shown:
        rendered[view.path] = env.get_template("method.html").render(root="../", method=view, **common)
    if judged:
        kinds, tally, claim_lines = claims_view(judged)
        rendered["claims.html"] = env.get_template("claims.html").render(
            root="", kinds=kinds, tally=tally, lines=claim_lines, **common)
    assets = files("benchbackcompat.report") / "site_templates"
    for name in ASSETS:
        rendered[name] = assets.joinpath(name).read_text(encoding="utf-8")
    return {f"{FOLDER}/{path}": text for path, text in rendered.items()}
