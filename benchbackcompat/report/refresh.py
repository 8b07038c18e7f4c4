"""The cost of a refresh (backfilling the gallery): the new model's forward pass over every gallery item, then the
index built again on the new features. Read from what a cell timed while it evaluated (``FinishedRecord.timings``:
``embed``, images embedded per backbone and their seconds, on the cell's device and in its precision; ``reindex``,
per index kind, the gallery items indexed over the matrix entries, the queries searched and the seconds of both):
throughput = items / seconds, the index's pooled over a row's seeds, the embedding's over a table's records of one
backbone and precision. Records without these timings have no refresh cost: their pages are as before.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter
from matplotlib.transforms import offset_copy
from tabulate import tabulate

from benchbackcompat.record import FinishedRecord
from benchbackcompat.report import figures
from benchbackcompat.report.columns import metric_name
from benchbackcompat.report.markdown import escape, plain_label
from benchbackcompat.report.table_data import Row, Table
from benchbackcompat.report.upgrade import seed_aucs

REFRESH_ITEMS = 10_000_000  # N: the gallery a refresh is priced for (a deployed gallery, not the benchmark's)
SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class RefreshCost:
    """A row's refresh cost: the new (last) model's backbone and precision, its images/s, and per index kind the
    seconds per gallery item indexed (building the index, with the search of the entry's queries)."""

    backbone: str
    precision: str
    images_per_second: float
    reindex: dict[str, float]  # kind -> seconds per gallery item

    def embed_hours(self, items: int = REFRESH_ITEMS) -> float:
        """Hours to embed ``items`` gallery images with the new model: items / throughput / 3600."""
        return items / self.images_per_second / SECONDS_PER_HOUR

    def reindex_hours(self, kind: str, items: int = REFRESH_ITEMS) -> float:
        """Hours to index ``items`` gallery features, linear in the items from the measured builds: items x seconds
        per item / 3600 (an IVF-PQ's training and a flat index's search grow otherwise: a first-order estimate)."""
        return items * self.reindex[kind] / SECONDS_PER_HOUR


def refresh_cost(row: Row, rates: dict[tuple[str, str], float] | None = None) -> RefreshCost | None:
    """The row's :class:`RefreshCost` over its finished seeds that timed the last model's backbone; None without.
    ``rates``: images/s per (backbone, precision) pooled wider (:func:`embedding_rates` of its table), else the
    row's own. The index seconds are the row's own: they depend on its features' size."""
    records = [r for r in row.finished if r.steps and (r.timings.get("embed") or {}).get(new_backbone(r))]
    if not records:
        return None
    backbone = new_backbone(records[0])
    records = [r for r in records if new_backbone(r) == backbone]
    precision = records[0].timings["embed"][backbone].get("precision", "")
    found = (rates if rates is not None else embedding_rates(records)).get((backbone, precision))
    if found is None:
        return None
    reindex = {}
    for kind in dict.fromkeys(k for r in records for k in r.timings.get("reindex") or {}):
        timed = [r.timings["reindex"][kind] for r in records if kind in (r.timings.get("reindex") or {})]
        if indexed := sum(f["items"] for f in timed):
            reindex[kind] = sum(f["seconds"] for f in timed) / indexed
    return RefreshCost(backbone, precision, found, reindex)


def embedding_rates(records: list[FinishedRecord]) -> dict[tuple[str, str], float]:
    """Images/s per (backbone, precision): every image the records embedded with it over the seconds it took."""
    pooled: dict[tuple[str, str], list[float]] = {}
    for record in records:
        for backbone, timed in (record.timings.get("embed") or {}).items():
            found = pooled.setdefault((backbone, timed.get("precision", "")), [0.0, 0.0])
            found[0] += timed["items"]
            found[1] += timed["seconds"]
    return {key: items / seconds for key, (items, seconds) in pooled.items() if items and seconds > 0}


def new_backbone(record: FinishedRecord) -> str:
    """The backbone of the record's last model, the one a refresh embeds the gallery with."""
    return str(record.steps[-1].get("backbone", ""))


def mean_auc(row: Row, metric: str) -> tuple[str, float] | None:
    """(order, the area under the backfilling curve in that order, mean over updates and seeds, %): random where the
    row has it, else its first order; None without curves."""
    aucs = seed_aucs(row, metric)
    if not aucs:
        return None
    order = "random" if "random" in aucs else next(iter(aucs))
    return order, float(np.mean(list(aucs[order].values())))


def refresh_rows(table: Table) -> list[tuple[Row, RefreshCost]]:
    """Each row with its refresh cost, the embedding throughput pooled over the table: a forward pass costs what its
    backbone and precision cost, whichever method trained the weights (pooling spreads the noise of other jobs on the
    machine over every row alike)."""
    rates = embedding_rates([r for row in table.rows for r in row.finished])
    return [(row, cost) for row in table.rows if (cost := refresh_cost(row, rates)) is not None]


def refresh_markdown(table: Table, metric: str, items: int = REFRESH_ITEMS) -> str:
    """Per method: the new model's images/s, each index kind's seconds per 1,000 gallery items, the hours to refresh
    ``items`` items (embedding, then each kind's re-index) and, where backfilling curves of ``metric`` exist, their
    area per hour of re-embedding; "" where no row timed its embeddings."""
    rows = refresh_rows(table)
    if not rows:
        return ""
    kinds = list(dict.fromkeys(kind for _, cost in rows for kind in cost.reindex))
    with_auc = any(mean_auc(row, metric) for row, _ in rows)
    lines = []
    for row, cost in rows:
        embed = cost.embed_hours(items)
        cells = [escape(row.label), escape(f"{cost.backbone}, {cost.precision}"), f"{cost.images_per_second:,.0f}",
                 *(f"{1000 * cost.reindex[k]:.3f}" if k in cost.reindex else "-" for k in kinds),
                 f"{embed:.2f}", *(f"{embed + cost.reindex_hours(k, items):.2f}" if k in cost.reindex else "-"
                                   for k in kinds)]
        if with_auc:
            found = mean_auc(row, metric)
            cells.append(f"{found[1] / embed:.1f} ({found[0]})" if found else "-")
        lines.append(cells)
    n = _items_text(items)
    headers = ["method", "new model", "images/s", *(f"{escape(k)} s/1k" for k in kinds),
               f"h/{n}: embed", *(f"+ {escape(k)}" for k in kinds), *(["AUC/embed-h"] if with_auc else [])]
    device = "; ".join(dict.fromkeys(str(r.device).split(";")[0] for row, _ in rows for r in row.finished if r.device))
    return (f"Cost of a refresh: re-embedding the gallery with the new model, then indexing it again, measured while "
            f"the cells evaluated ({escape(device)}; images/s of the new model's backbone and precision, pooled over every "
            f"query and gallery pass of this table's records with them). "
            f"s/1k: seconds to build each kind's index on the gallery of every matrix entry (with the "
            f"search of the entry's queries) per 1,000 gallery items indexed. "
            f"h/{n}: hours to refresh {items:,} gallery items = {items:,} / images/s / 3600, plus each index kind's "
            f"re-index (+ kind), extrapolated linearly from its builds (a first-order estimate: IVF-PQ training and flat search "
            f"do not grow linearly)."
            + (f" AUC/embed-h: AUC per embed-hour, the area under the backfilling curve ({escape(metric_name(metric))}, %, mean over "
               f"updates and seeds; its order in brackets) divided by the hours of re-embedding {n} (re-index "
               "excluded: it depends on the index kind)." if with_auc else "")
            + "\n\n" + tabulate(lines, headers=headers, tablefmt="github", disable_numparse=True))


def _items_text(items: int) -> str:
    """``10 M items`` for 10,000,000."""
    return f"{items / 1e6:g} M items" if items >= 1e6 else f"{items:,} items"


def final_scores(row: Row, metric: str) -> tuple[float, float] | None:
    """(final cross-test, final self-test): the last model's queries on the previous model's gallery C[T-1][T-2] and
    on its own C[T-1][T-1], means over seeds (%); None without both."""
    M = figures.mean_matrix(row, metric)
    if M is None or len(M) < 2 or not (np.isfinite(M[-1][-2]) and np.isfinite(M[-1][-1])):
        return None
    return float(M[-1][-2]), float(M[-1][-1])


@figures.cached
def refresh_figure(table: Table, metric: str, path: Path, items: int = REFRESH_ITEMS) -> Path | None:
    """Accuracy against the compute of a refresh, one colour per method: at x = the hours to re-embed ``items``
    gallery items with its new model, its final cross-test (hollow: before the refresh), its final self-test (filled:
    after it) and, where backfilling curves exist, their area (cross: the mean accuracy during it)."""
    found = [(row, cost, scores) for row, cost in refresh_rows(table) if (scores := final_scores(row, metric))]
    if not found:
        return None
    fig = Figure(figsize=(7.5, 4.6), dpi=figures.DPI, layout="constrained")
    ax = fig.subplots()
    ax.set_xscale("log")
    step = min(6.0, 120.0 / len(found))  # points between methods drawn side by side (one backbone: one x)
    xs, ys_all = [], []
    for i, (row, cost, (cross, own)) in enumerate(found):
        colour, marker, _ = figures.method_style(i, len(found))
        shifted = offset_copy(ax.transData, fig=fig, x=(i - (len(found) - 1) / 2) * step, units="points")
        x = cost.embed_hours(items)
        auc = mean_auc(row, metric)
        ys = [cross, own, *([auc[1]] if auc else [])]
        xs.append(x)
        ys_all += ys
        ax.plot([x] * len(ys), ys, color=colour, linewidth=1, alpha=0.6, transform=shifted)
        ax.plot([x], [cross], marker, color=colour, fillstyle="none", markersize=7, transform=shifted)
        ax.plot([x], [own], marker, color=colour, markersize=7, label=plain_label(row.label), transform=shifted)
        if auc:
            ax.plot([x], [auc[1]], "x", color=colour, markersize=8, transform=shifted)
    ax.set_xlim(min(xs) / 2, max(xs) * 2)  # drawn through offset transforms, which autoscaling does not see
    low, high = min(ys_all), max(ys_all)
    ax.set_ylim(low - 0.1 * (high - low) - 0.5, high + 0.1 * (high - low) + 0.5)
    for axis in (ax.xaxis.set_major_formatter, ax.xaxis.set_minor_formatter):
        axis(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.grid(alpha=0.3, which="both")
    ax.set_xlabel(f"hours to re-embed {_items_text(items)} with the new model (log scale)", fontsize=8)
    ax.set_ylabel(f"{metric_name(metric)} (%)", fontsize=8)
    ax.tick_params(labelsize=8)
    ax.legend(fontsize=7, loc="best")
    fig.suptitle(textwrap.fill(f"{plain_label(table.title)}: accuracy against the compute of a refresh. Hollow: final "
                               "cross-test C[T-1][T-2] (before), filled: final self-test C[T-1][T-1] (after), "
                               "x: area under the backfilling curve (during); methods of one x side by side",
                               width=100), fontsize=9)
    return figures._save(fig, path)


def refresh_sections(table: Table, page: str, out: Path) -> list[str]:
    """The Markdown parts of a table's page on the cost of a refresh, with the areas and the figure of its first
    metric, the headline's (none where no record timed it)."""
    parts = []
    for metric in table.metrics[:1]:
        if text := refresh_markdown(table, metric):
            path = refresh_figure(table, metric, out / "figures" / figures.figure_name(page, table, metric, "refresh"))
            parts += figures.with_figure(text, path, f"{escape(table.title)}: accuracy against the compute of a "
                                                     f"refresh, {escape(metric_name(metric))}")
    return parts
