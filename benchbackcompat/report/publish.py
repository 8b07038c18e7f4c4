"""Writes the leaderboard folder: README.md (index), one page per (dataset, preset), one per method
(``methods/``), figures, CSV and JSON.

Everything is a function of the merged records and the command line, except the date in the
provenance headers and the method pages' descriptions and papers, which the installed plugins declare:
rendering the same results again gives the same bytes apart from that date.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchbackcompat.runtime.faults import fault_point
from benchbackcompat.runtime.files import outside
from benchbackcompat.runtime.terminal import printable
from benchbackcompat.store.checkpoint import atomic_write_bytes
from benchbackcompat.store.columnar import MANIFEST as PACKED_MANIFEST, TABLES, is_packed
from benchbackcompat.store.locks import process_running
from benchbackcompat.report import figures
from benchbackcompat.report.refresh import refresh_sections
from benchbackcompat.report.upgrade import upgrade_sections
from benchbackcompat.scenarios.kinds import SCENARIO_CLASSES, kind_class
from benchbackcompat.record import CellRecord, FinishedRecord
from benchbackcompat.report.grouping import build_tables
from benchbackcompat.report.seed_statistics import CHANCE_FACTOR, CHANCE_SHARE, MIN_UPDATE_GAIN
from benchbackcompat.report.table_data import Table
from benchbackcompat.report.calibration import Calibration
from benchbackcompat.report.columns import STATISTICS, metric_name
from benchbackcompat.report.claims import ClaimsFile, PlannedScenario, claims_pages
from benchbackcompat.report.claims.page import judge_files
from benchbackcompat.report.exports import csv_export, json_export
from benchbackcompat.report.markdown import escape, slug
from benchbackcompat.report.methods import FOLDER as METHODS_FOLDER, MethodInfo, method_pages, methods_index, page_path
from benchbackcompat.report.merge import Merged
from benchbackcompat.report.overview import by_headline, methods_with_results, overview_markdown, primary_column, ranked
from benchbackcompat.report.owned import MANIFEST, check_no_clash, owned_files, write_manifest
from benchbackcompat.report.reproduce import reproductions
from benchbackcompat.report.provenance import Verification, header_markdown, provenance
from benchbackcompat.report.selection import selection_markdown
from benchbackcompat.report.site import FOLDER as SITE_FOLDER, site_files
from benchbackcompat.report.tables import Footnotes, views_markdown

Planned = Callable[[set[str]], list[PlannedScenario]]  # preset names -> the scenarios they define

SINGLE_MEASURES = ("whether queries of the new model can search the gallery indexed by the old model (cross vs the old "
                   "self-test, P_com) and what compatibility costs the new model (self, P_up)")
MULTI_MEASURES = ("how compatible every later model is with every earlier gallery (AC), the accuracy over all "
                  "query/gallery pairs (AA) and the accuracy of the compatible pairs (ACA)")


@dataclass
class Page:
    dataset: str
    preset: str
    tables: list[Table]

    @property
    def name(self) -> str:
        return f"{slug(self.dataset)}-{slug(self.preset)}"

    @property
    def records(self) -> list[CellRecord]:
        return [r for t in self.tables for r in t.records]


def kind_text(kind: str) -> str:
    """A scenario kind as code when it is a known one, else as escaped text (records are not trusted)."""
    return f"`{kind}`" if kind in SCENARIO_CLASSES else escape(kind)


def pages_of(tables: list[Table]) -> list[Page]:
    grouped: dict[tuple[str, str], list[Table]] = defaultdict(list)
    for table in tables:
        grouped[(table.dataset, table.preset)].append(table)
    return [Page(dataset, preset, members) for (dataset, preset), members in sorted(grouped.items())]


def scale(table: Table) -> str:
    """The size of the experiment behind a table, so CPU-scale runs are not mistaken for the papers' runs."""
    data, train = table.config.get("data", {}), table.config.get("train", {})
    steps = next((r.steps for r in table.records if isinstance(r, FinishedRecord) and r.steps), [])
    backbones = list(dict.fromkeys(s["backbone"] for s in steps))
    parts = [f"{data.get('name', table.dataset)}"]
    if data.get("num_classes"):
        parts.append(f"{data['num_classes']} classes")
    if data.get("train_per_class"):
        parts.append(f"{data['train_per_class']} training images per class")
    if steps:
        parts.append(f"T = {len(steps)} models")
    if backbones:
        parts.append(" → ".join(backbones))
    if train.get("epochs"):
        parts.append(training_length(table))
    return ", ".join(parts)


def training_length(table: Table) -> str:
    """The table's own training per model: its epochs, or its step floor with the epochs its models trained."""
    train = table.config.get("train", {})
    epochs, floor = train.get("epochs"), train.get("min_steps")
    if not floor:
        return f"{epochs} epoch{'s' if epochs != 1 else ''} per model"
    # curves are stored beside records now (curves.json.gz, not published); older records hold them inline
    inline = [getattr(r, "curves", None) or {} for r in table.records if isinstance(r, FinishedRecord)]
    trained = sorted({len(c) for curves in inline for c in curves.values() if c})
    span = (f"{trained[0]}–{trained[-1]}" if trained[0] != trained[-1] else f"{trained[0]}") if trained else f"≥ {epochs}"
    return f"at least {floor:,} SGD steps per model ({span} epochs)"


def headline_tables(tables: list[Table]) -> dict[str, tuple[Table, str]]:
    """Per scenario of one page, the table that answers "best on this scenario" (:func:`overview.by_headline`) and
    why; "" when there is one table."""
    chosen = {}
    for scenario, members in by_headline(tables).items():
        best = members[0]
        if len(members) == 1:
            chosen[scenario] = (best, "")
            continue
        column = primary_column(best)
        name = f"{column.statistic.header} ({metric_name(column.metric)})" if column else "its primary statistic"
        tied = [t for t in members if (ranked(t), methods_with_results(t)) == (ranked(best), methods_with_results(best))]
        why = (f"it holds the most methods with a decidable {name} ({ranked(best)} of the {methods_with_results(best)} "
               "with results)" + (", and the longest training among those" if len(tied) > 1 else ""))
        others = "; ".join(f"{escape(t.variant)}: {ranked(t)} of {methods_with_results(t)} methods decidable, "
                           f"{training_length(t)}" for t in members[1:])
        chosen[scenario] = (best, f"Headline configuration of {escape(scenario)}: **{escape(best.variant)}** "
                                  f"({training_length(best)}), because {escape(why)}. Also stored, below it: {others}.")
    return chosen


def figure_links(table: Table, page: Page, out: Path) -> list[str]:
    lines = []
    for metric in table.metrics:
        def path(what: str) -> Path:
            return out / "figures" / figures.figure_name(page.name, table, metric, what)

        made = [("compatibility matrices", figures.matrices_figure(table, metric, path("matrices")))]
        if table.single_update:
            made.append(("cross − old self", figures.margin_figure(table, metric, path("margin"))))
        else:
            made.append(("AA_tau over tasks", figures.aa_curve_figure(table, metric, path("aa"))))
        lines += [f"![{escape(table.title)}: {what}, {escape(metric_name(metric))}](figures/{path.name})"
                  for what, path in made if path]
    return lines


def page_markdown(page: Page, out: Path, date: str, verification: Verification | None = None) -> str:
    notes = Footnotes()
    parts = [f"# Leaderboard: {escape(page.dataset)} · preset {escape(page.preset)}",
             header_markdown(page.records, date, verification), "[Index and how to regenerate](README.md)"]
    headlines = headline_tables(page.tables)
    parts.append(overview_markdown(page.tables))
    methods = list(dict.fromkeys(row.method for table in page.tables for row in table.rows))
    parts.append("Each method's own page (every table it ran in, hyperparameters, paper, cost, matrices): "
                 + " · ".join(f"[{escape(m)}]({page_path(m)})" for m in sorted(methods)) + ".")
    ordered = sorted(page.tables, key=lambda t: (t.scenario, headlines[t.scenario][0] is not t, t.variant))
    for table in ordered:
        description = table.config.get("description", "")
        parts.append(f"## {escape(table.title)}")
        if headlines[table.scenario][0] is table and headlines[table.scenario][1]:
            parts.append(headlines[table.scenario][1])
        parts.append(f"{escape(description)}  \nKind: {kind_text(table.kind)} ({kind_class(table.kind).measures or escape(table.kind)}).  \n"
                     f"Scale: {escape(scale(table))}.")
        if table.data:
            parts.append(data_split_text(table.data))
        parts.append(views_markdown(table, notes, fold=True))
        if chosen := selection_markdown(table, grids=True):
            parts.append(chosen)
        parts.extend(figure_links(table, page, out))
        parts.extend(upgrade_sections(table, page.name, out))
        parts.extend(refresh_sections(table, page.name, out))
    if notes.texts:
        parts.append(notes.render())
    return "\n\n".join(parts) + "\n"


def data_split_text(data: str) -> str:
    """Why a configuration's records stand in several tables: they were computed on different data."""
    which = ("records written before results stored their dataset's fingerprint" if data == "unknown"
             else f"records of the dataset whose fingerprint begins {data}")
    return (f"Data: {which}. This configuration's records were computed on different data (e.g. on machines that "
            "decode the images into other bytes), so its seeds are never pooled across them: one table per dataset.")


def left_out_markdown(left_out: Sequence[tuple[CellRecord, str]]) -> str:
    """The index section naming the stored cells that the pages leave out, by reason and scenario."""
    by_reason: dict[str, Counter[str]] = defaultdict(Counter)
    for record, why in left_out:
        by_reason[why.split(" (")[0]][record.scenario] += 1
    lines = [f"## Left out\n\n{len(left_out)} stored cells are not on these pages: the code of this commit would not "
             "compute them again (its method's code or the core's results version differ), or they were computed from "
             "an uncommitted tree. `benchbackcompat status --results DIR` lists them; running their command again "
             "recomputes them.\n"]
    for why, scenarios in sorted(by_reason.items()):
        lines.append(f"- {escape(why)}: " + ", ".join(f"{escape(s)} ({n})" for s, n in sorted(scenarios.items())))
    return "\n".join(lines)


def readme_markdown(pages: list[Page], merged: Merged, command: str, date: str, runs: list[str],
                    stored: Sequence[tuple[str, str, bool]] = (), claims: bool = False) -> str:
    """The index. ``stored``: (folder relative to the index, its own README's body, whether it is a packed store) for
    every results folder kept inside the leaderboard folder; ``claims``: whether a claims page was rendered."""
    records = [r for page in pages for r in page.records]
    shown = {c.statistic.key for page in pages for table in page.tables for c in table.columns}
    parts = ["# Leaderboard", header_markdown(records, date, merged.verification),
             "Backward-compatible representation learning: after a model update, can queries embedded by the new "
             "model be searched against the gallery that an old model indexed? Every number below is computed by "
             "`benchbackcompat` from stored results; no number is copied from the papers."]
    if claims:
        parts.append("[The papers' claims, tested on these results](claims.md): each claim of the claims files with the "
                     "paper's numbers, ours with 95% intervals and exact tests, and a verdict on its deciding table.")
    parts.append("## Pages")  # what a reader came for first; how to regenerate it after
    parts.append("\n".join(
        f"- [{page.name}]({page.name}.md): dataset {escape(page.dataset)}, preset {escape(page.preset)}, "
        f"{len(page.records)} cells in {len(page.tables)} tables; scenarios: "
        f"{escape(', '.join(dict.fromkeys(t.scenario for t in page.tables)))}" for page in pages))
    parts += ["## How to regenerate",
              f"This folder is rendered from stored results only (no training):\n\n{code_block(command)}\n\n"
              "The same results give the same files, byte for byte, apart from the date in the headers "
              "(set `SOURCE_DATE_EPOCH` to fix that too). The stored results come from:"]
    parts.append(code_block("\n".join(runs)))
    parts.append("(Each preset file under `reproduce/` holds the configurations and hyperparameters stored in the records "
                 "it recomputes, not today's presets; add `--data-root` where the data is not in the default cache.)")
    if merged.left_out:
        parts.append(left_out_markdown(merged.left_out))
    if merged.superseded:
        parts.append(f"{len(merged.superseded)} older records of the same cells (computed by other code or on other data: "
                     f"{escape(', '.join(sorted({r.scenario for r in merged.superseded})))}) are left out in favour of the "
                     "most recently computed one; `benchbackcompat status` lists them as stale.")
    parts.append("## Methods")
    parts.append("Each method's page lists every table it ran in with its primary statistic and rank, its "
                 "hyperparameters, paper, cost and compatibility matrices.\n\n"
                 + methods_index([(page.name, page.tables) for page in pages]))
    parts.append("## Scenarios")
    seen: dict[tuple[str, str], Table] = {}
    for page in pages:
        for table in page.tables:
            seen.setdefault((table.scenario, table.config.get("description", "")), table)
    items = []
    for (scenario, description), table in sorted(seen.items()):
        measures = SINGLE_MEASURES if table.single_update else MULTI_MEASURES
        items.append(f"- **{escape(scenario)}** ({kind_text(table.kind)}): {escape(description).rstrip('.')}. Measures "
                     f"{kind_class(table.kind).measures or escape(table.kind)}: {measures}.")
    parts.append("Each scenario's setup (from its preset) and what it measures:\n\n" + "\n".join(items))
    parts.append("## Reading the tables")
    parts.append("\n".join([
        "- A cell is the mean over the seeds in the `seeds` column with its 95% confidence interval `[low, high]`: "
        "over several seeds a t-interval on the seeds' values (n − 1 degrees of freedom), never narrower than the "
        "percentile bootstrap over the evaluation queries within a seed (each record stores every query's hit or "
        "average precision); for one seed, that query bootstrap. An interval stays inside what its statistic can be "
        "(AC in [0, 1], accuracies, AA and ACA in [0, 100], P_up at least −1): the part outside is cut off, which "
        "keeps its 95% coverage since the true value is always inside. Records without per-query outcomes show mean ± "
        "standard deviation over seeds instead. `(n=2)` when fewer seeds produced that number. Seeds are pooled only "
        "across identical configurations.",
        "- **Bold** means one thing on every page: no row of the column is significantly better (no paired bootstrap "
        "interval of a difference lies on its side of 0), the column's rank-1 tier; on the ranked column bold is "
        "exactly rank 1 (the overview's bold too). Several rows can be bold and a lone best mean is not bold by "
        "noise. `ranks` is the rank's stability: the range (2.5th to 97.5th percentile) of the ranks by mean over "
        "bootstrap replicates that resample each row's seeds and, within a seed, its queries (as mteb's rank "
        "stability). `old self` and `ref self` (the self-tests P_com divides by) are context and never bold, and neither is "
        "a value whose interval has zero width below the best (exact by construction, e.g. P_up 0.000 [0.000, 0.000] "
        "of a new model that is its own reference).",
        f"- `rank` is a tier on each scenario kind's primary statistic (P_com, then cross for one update; AC, then "
        f"AA for a sequence): 1 + the number of rows significantly better on it (paired bootstrap of the "
        f"difference), so the rows that no row beats significantly share rank 1, and rank 3 means two rows are "
        f"significantly better. Rows are listed by rank, then mean: a row with a higher mean can sit in a lower "
        f"tier when its interval is narrower (more rows are significantly above it). P_com is shown only when the update it "
        f"divides by, reference self − old self, is significantly positive and at least {MIN_UPDATE_GAIN:g} "
        f"points; otherwise `–` with a footnote giving that update, and the row is not ranked (when no row has "
        f"a P_com, the table says so and ranks nothing: the cross-test alone would rank an incompatible model "
        f"first). A model whose weakest self-test is below {CHANCE_FACTOR:g} × chance (or, where that exceeds it, "
        f"{CHANCE_SHARE:g} of the way from chance to 100%: 60% for pair verification) is flagged "
        f"`(chance level)` and not ranked or bolded.",
        "- `-` marks a value that could not be computed and `nan` a run that diverged (as in the papers); "
        "each carries a footnote saying why.",
        "- Columns and their direction:",
        *(f"  - {s.header}: {escape(s.meaning)}; {'higher' if s.higher_is_better else 'lower'} is better"
          for s in STATISTICS.values() if s.always_listed or s.key in shown),
        "- Figures: the mean compatibility matrix of each method (incompatible entries framed in red, with a red "
        "corner), AA_tau over tasks for sequences of models (one panel per method, over the others in grey and their "
        "median), and for single updates each method's compatibility margin, "
        "cross-test minus its own old self-test, with its 95% interval (right of 0: compatible).",
    ]))
    parts.append("## Merging results")
    parts.append("Results of several `--results` directories (or machines) are merged by cell key (the hash of the "
                 "resolved configuration, seed, method code and data content); a duplicate key is kept once: a finished record wins over an "
                 "unfinished one, otherwise the directory listed first wins. Nothing is counted twice.")
    if merged.duplicates:
        differing = sum(d.differs for d in merged.duplicates)
        parts.append(f"{len(merged.duplicates)} duplicate cells were discarded ({differing} with different numbers).")
    parts.append("## Exports\n\n[leaderboard.csv](leaderboard.csv) and [leaderboard.json](leaderboard.json) hold the "
                 "same numbers at full precision, with per-seed values in the JSON.")
    parts.append("## Files")
    files = ["- This index, " + ("[claims.md](claims.md), " if claims else "") + "the pages and the method pages (`methods/*.md`) above; `figures/`: "
             "the figures the pages show; "
             "`leaderboard.csv` and `leaderboard.json`: the exports; `reproduce/*.toml`: the presets of the commands "
             "that recompute the stored results.",
             f"- `{SITE_FOLDER}/*`: the same numbers as a static HTML site, [{SITE_FOLDER}/index.html]({SITE_FOLDER}/index.html) "
             "(sortable, filterable tables, the figures, a page per method; no server needed, nothing fetched).",
             f"- `{MANIFEST}`: the files this rendering wrote; the next rendering into this folder replaces and removes "
             "only those.",
             "- Training curves are not published (no page reads them): a run writes each cell's curves beside its "
             "record, in `cells/<key>/curves.json.gz` of its results folder, and `benchbackcompat show KEY` summarises "
             "them."]
    for folder, body, packed in stored:
        records = (f"`{folder}/{TABLES}/*.parquet` and `{folder}/{PACKED_MANIFEST}`: the stored results these pages "
                   "are rendered from, a packed store: Parquet parts per scenario, one row per cell (configuration, "
                   "versions, matrices, every query's outcome, timings); `benchbackcompat unpack "
                   f"{folder} DIR` writes them back as record files" if packed else
                   f"`{folder}/cells/*/record.json.gz`: the stored results these pages are rendered from, one record "
                   "per cell (configuration, versions, matrices, every query's outcome, timings), gzip-compressed JSON "
                   "(`gzip -dc` prints one)")
        files.append(f"- {records}; `{folder}/calibration/*.json`: the convergence summaries (`benchbackcompat "
                     "calibrate`) that the claims page names" + (f"; `{folder}/README.md`: their notes, quoted below."
                                                                 if body else "."))
    parts.append("\n".join(files))
    parts += [body for _, body, _ in stored if body]
    return "\n\n".join(parts) + "\n"


def stored_folders(out: Path) -> list[tuple[str, str, bool]]:
    """The results folders kept inside ``out`` (those with ``cells/``, and packed stores), each with the body of its
    README.md (its description, without the title line; "" when it has none) and whether it is a packed store."""
    found = []
    for folder in sorted(p for p in out.glob("*") if p.is_dir() and ((p / "cells").is_dir() or is_packed(p))):
        readme = folder / "README.md"
        text = readme.read_text(encoding="utf-8") if readme.is_file() else ""
        body = text.split("\n", 1)[1] if text.startswith("# ") else text
        found.append((folder.name, body.strip(), is_packed(folder)))
    return found


def reproduction_files(pages: list[Page], out: Path) -> list[tuple[Path, str, str]]:
    """(preset file, its TOML, the ``run`` commands that use it, a line each) for every page, from the records alone."""
    files = []
    for page in pages:
        found = reproductions(page.tables)
        for i, reproduction in enumerate(found):
            path = out / "reproduce" / f"{page.name}{f'-{i + 1}' if len(found) > 1 else ''}.toml"
            title = f"The stored configurations of leaderboard page {page.name} (written by `benchbackcompat leaderboard`)"
            files.append((path, reproduction.preset(title), "\n".join(reproduction.commands(str(path)))))
    return files


def code_block(text: str) -> str:
    """A fenced block that no backtick run inside ``text`` can close, with control characters from records shown as
    escapes (a reader's terminal would obey them)."""
    text = printable(text, lines=True)
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return f"{fence}\n{text}\n{fence}"


def write_leaderboard(merged: Merged, out: Path, command: str, date: str,
                      calibrations: Sequence[Calibration] = (), methods: Mapping[str, MethodInfo] | None = None,
                      planned: Planned = lambda presets: [], claims: Sequence[ClaimsFile] = ()) -> list[Path]:
    """Render everything into ``out``; returns the files written. ``calibrations``: the scale's convergence evidence,
    named in the claims page; ``methods``: what each method's class declares (description, paper,
    hyperparameters), for its page; ``planned``: the scenarios the tables' presets define (by preset name), which
    the claims page lists where they were not run; ``claims``: the claims files judged in ``claims.md`` (none: no
    claims page).

    The files are rendered into a hidden folder inside ``out`` (the same file system, whatever is mounted where, and
    no write beside ``out``) and then moved in (``swap_in``), so that a kill or an error while rendering leaves the
    previous rendering as it was. ``out`` must be empty, new or a rendering's (``report.owned``); it may hold files
    the renderer does not own (stored records, archives) besides: only the rendered files are replaced, and of the
    earlier rendering only what this one does not write is removed, as its manifest names them. A file that cannot
    be written (a full disk) is named as it would be published."""
    out = Path(out)
    stage = out / f"{STAGE_PREFIX}{os.getpid()}"
    try:
        out.mkdir(parents=True, exist_ok=True)
        earlier = owned_files(out, legacy_files, STAGE_PREFIX)
        remove_orphan_stages(out)
        shutil.rmtree(stage, ignore_errors=True)
        try:
            rendered = render(merged, out, stage, command, date, calibrations, methods or {}, planned, claims)
            check_no_clash(out, rendered, earlier)
            write_manifest(out, earlier | set(rendered))  # a kill while moving in leaves every file named
            swap_in(stage, out, rendered, earlier)
            write_manifest(out, rendered)
        finally:
            shutil.rmtree(stage, ignore_errors=True)
    except OSError as error:
        where = str(error.filename or out)
        published = out / Path(where).relative_to(stage) if Path(where).is_relative_to(stage) else Path(where)
        raise OSError(error.errno, error.strerror or str(error), str(published)) from error
    return [out / name for name in rendered]


STAGE_PREFIX = ".rendering-"  # + the pid of the rendering process; a folder inside the output folder
PAGE_LINK = re.compile(r"^- \[([a-z0-9][a-z0-9.-]*)\]\(\1\.md\)", re.M)  # a page in the index's list of pages
CLAIMS_LINK = re.compile(r"\]\(claims/([A-Za-z0-9][A-Za-z0-9_.-]*)\.md\)")  # a paper's page in claims.md


def earlier_pages(out: Path) -> set[Path]:
    """The pages (relative to ``out``) that the earlier rendering's index, ``out/README.md``, lists as its own."""
    try:
        index = (out / "README.md").read_text(encoding="utf-8")
    except (OSError, ValueError):  # no earlier rendering, or an index that is not the renderer's
        return set()
    section = index.partition("\n## Pages\n")[2].partition("\n## ")[0]
    claims = {Path("claims.md")} if "](claims.md)" in index else set()
    if claims:  # and the papers' pages the earlier claims.md links to
        try:
            claims |= {Path("claims", f"{name}.md") for name in CLAIMS_LINK.findall((out / "claims.md").read_text(encoding="utf-8"))}
        except (OSError, ValueError):
            pass
    return {Path(f"{name}.md") for name in PAGE_LINK.findall(section)} | claims


def render(merged: Merged, out: Path, stage: Path, command: str, date: str,
           calibrations: Sequence[Calibration], methods: Mapping[str, MethodInfo], planned: Planned,
           claims: Sequence[ClaimsFile] = ()) -> list[Path]:
    """Write the leaderboard of ``out`` into ``stage`` (text that names a file names it under ``out``); returns the
    files written, relative to ``stage``: figures and presets first, the pages that link to them after."""
    tables = build_tables([r for r in merged.records if not untrained_zoo(r)])
    pages = pages_of(tables)
    written = []
    for page in pages:
        written.append(_write(stage / f"{page.name}.md", page_markdown(page, stage, date, merged.verification)))
    for path, text in method_pages([(page.name, page.tables) for page in pages], methods, stage, date,
                                   merged.verification).items():
        written.append(_write(stage / path, text))
    judged = judge_files(claims, tables, calibrations) if claims else []  # once, for the claims pages and the site
    for path, text in site_files([(page.name, page.tables) for page in pages], stage, date, methods, claims,
                                 calibrations, merged.verification, judged).items():
        written.append(_write(stage / path, text))
    runs = []
    for path, text, run in reproduction_files(pages, out):
        written.append(_write(stage / path.relative_to(out), text))
        runs.append(run)
    if claims:
        for path, text in claims_pages(claims, tables, header_markdown(merged.records, date, merged.verification),
                                       calibrations, planned({t.preset for t in tables}), judged).items():
            written.append(_write(stage / path, text))
    written.append(_write(stage / "leaderboard.csv", csv_export(tables)))
    written.append(_write(stage / "leaderboard.json", json_export(tables, provenance(merged.records, date))))
    written.append(_write(stage / "README.md", readme_markdown(pages, merged, command, date, runs,
                                                                   stored_folders(out), bool(claims))))
    linked = sorted((stage / "figures").glob("*.png")) + [p for p in written if p.parent != stage]
    return [p.relative_to(stage) for p in linked + [p for p in written if p.parent == stage]]


def legacy_files(out: Path) -> set[Path]:
    """The files of a rendering from before manifests (``report.owned``), as that version found them: the pages its
    index lists, the exports and the index, figures, reproduction presets, method pages and the HTML site."""
    globbed = [*(out / "figures").glob("*.png"), *(out / "reproduce").glob("*.toml"),
               *(out / METHODS_FOLDER).glob("*.md"), *(p for p in (out / SITE_FOLDER).rglob("*") if p.is_file())]
    return (earlier_pages(out) | {Path("README.md"), Path("leaderboard.csv"), Path("leaderboard.json")}
            | {path.relative_to(out) for path in globbed})


def swap_in(stage: Path, out: Path, rendered: list[Path], earlier: set[Path] = frozenset()) -> None:
    """Move the ``rendered`` files (relative paths, in order) from ``stage`` into ``out``, each with one atomic rename,
    figures and presets before the pages that link to them and the index last; then remove the files of the
    ``earlier`` rendering that this one does not write (never through a folder that leads outside ``out``). No page
    ever links to a missing figure."""
    for name in rendered:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        fault_point(f"swap:{name}")
        os.replace(stage / name, out / name)
    for old in sorted(earlier - set(rendered)):
        path = out / old
        if outside(out, path.parent) is None and (path.is_file() or path.is_symlink()):
            path.unlink()


def remove_orphan_stages(out: Path) -> None:
    """Delete the folders that renderings of ``out`` killed before their swap left in it (their process is gone)."""
    for stage in out.glob(f"{STAGE_PREFIX}*"):
        pid = stage.name[len(STAGE_PREFIX):]
        if pid.isdigit() and not process_running(int(pid)):
            shutil.rmtree(stage, ignore_errors=True)


def untrained_zoo(record: CellRecord) -> bool:
    """A model-zoo record without real pretrained weights (randomly initialised models): plumbing, not a result,
    so it is not published."""
    trained_elsewhere = kind_class(record.kind).family == "already trained"
    return trained_elsewhere and not record.config.get("pretrained") and not record.config.get("weights")


def _write(path: Path, text: str) -> Path:
    atomic_write_bytes(path, text.encode())
    return path


def command_line(results: list[Path], out: Path, verified_only: bool = False, claims: Sequence[Path] = ()) -> str:
    return shlex.join(["benchbackcompat", "leaderboard", *(a for r in results for a in ("--results", str(r))),
                       *(a for c in claims for a in ("--claims", str(c))), "--out", str(out),
                       *(["--verified-only"] if verified_only else [])])
