"""What a table's records say about upgrading a live gallery, where they hold it (scenario options ``backfill`` and
``index``): the backfilling curves per method (a figure; Hot-Refresh, ICLR 2022), their areas (FastFill, ICLR 2023)
and the gap between exact retrieval and retrieval through a FAISS index. Means over a row's seeds that have them."""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from tabulate import tabulate

from benchbackcompat.report import figures
from benchbackcompat.report.aggregate import Row, Table
from benchbackcompat.report.columns import metric_name
from benchbackcompat.report.markdown import escape, plain_label

ORDER_STYLES = {"random": "-", "class-distance": "--"}
MAX_PANELS = 6  # updates drawn for a long sequence (evenly spaced, the first and the last included)


def mean_curves(row: Row, metric: str) -> list[dict]:
    """Per consecutive pair: old and new model, fractions, and per order the mean curve and area over seeds."""
    pairs: dict[tuple[int, int], dict] = {}
    for record in row.finished:
        for pair in (record.backfill or {}).get("pairs", []):
            if metric not in pair["curves"]:
                continue
            found = pairs.setdefault((pair["old"], pair["new"]), {"fractions": pair["fractions"], "curves": {}, "auc": {}})
            for order, curve in pair["curves"][metric].items():
                found["curves"].setdefault(order, []).append(curve)
                found["auc"].setdefault(order, []).append(pair["auc"][metric][order])
    return [{"old": k, "new": t, "fractions": p["fractions"],
             "curves": {o: np.mean(c, axis=0) for o, c in p["curves"].items()},
             "auc": {o: float(np.mean(a)) for o, a in p["auc"].items()}, "seeds": len(next(iter(p["auc"].values())))}
            for (k, t), p in sorted(pairs.items())]


def backfill_figure(table: Table, metric: str, path: Path) -> Path | None:
    """One panel per consecutive update: each method's backfilling curves (solid: random order, dashed:
    class-distance order), its old self-test C[k][k] marked at 0% (hollow) and its new self-test C[t][t] at 100%;
    at most ``MAX_PANELS`` updates of a long sequence."""
    rows = [(row, mean_curves(row, metric)) for row in table.rows]
    rows = [(row, pairs) for row, pairs in rows if pairs]
    if not rows:
        return None
    updates = sorted({(p["old"], p["new"]) for _, pairs in rows for p in pairs})
    if len(updates) > MAX_PANELS:
        updates = [updates[round(i)] for i in np.linspace(0, len(updates) - 1, MAX_PANELS)]
    fig = Figure(figsize=(max(6.4, min(4.2 * len(updates), 12.6)), 4.0), dpi=figures.DPI, layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(updates), sharey=True))
    for i, (row, pairs) in enumerate(rows):
        colour, marker, _ = figures.method_style(i, len(rows))
        M = figures.mean_matrix(row, metric)
        for pair in (p for p in pairs if (p["old"], p["new"]) in updates):
            ax = axes[updates.index((pair["old"], pair["new"]))]
            x = 100 * np.asarray(pair["fractions"])
            for order, curve in pair["curves"].items():
                ax.plot(x, curve, ORDER_STYLES.get(order, ":"), color=colour, linewidth=1.5,
                        label=plain_label(row.label) if order == "random" else None)
            if M is not None:
                ax.plot([0], [M[pair["old"]][pair["old"]]], marker, color=colour, fillstyle="none", clip_on=False)
                ax.plot([100], [M[pair["new"]][pair["new"]]], "*", color=colour, markersize=9, clip_on=False)
    for ax, (k, t) in zip(axes, updates):
        ax.set_title(f"model {k} → {t}", fontsize=9)
        ax.set_xlabel("gallery refreshed (%)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"{metric_name(metric)}, new queries (%)")
    axes[-1].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"{textwrap.shorten(plain_label(table.title), 100)}: backfilling curves\nsolid: random order, dashed: class-distance "
                 "order; hollow: old self-test, star: new self-test", fontsize=9)
    return figures._save(fig, path)


def backfill_markdown(table: Table, metric: str) -> str:
    """The area under each method's backfilling curve per order, beside the curve's ends (mean over updates)."""
    lines = []
    for row in table.rows:
        pairs = mean_curves(row, metric)
        if not pairs:
            continue
        orders = list(pairs[0]["auc"])
        first = float(np.mean([p["curves"][orders[0]][0] for p in pairs]))
        last = float(np.mean([p["curves"][orders[0]][-1] for p in pairs]))
        lines.append([escape(row.label), f"{first:.1f}", *(f"{np.mean([p['auc'][o] for p in pairs]):.1f}" for o in orders),
                      f"{last:.1f}", pairs[0]["seeds"]])
    if not lines:
        return ""
    headers = ["method", "0% (cross)", *(f"AUC {o}" for o in orders), "100% (new self)", "seeds"]
    return (f"Backfilling, {escape(metric_name(metric))}: area under the curve (mean accuracy over the refresh, %)\n\n"
            + tabulate(lines, headers=headers, tablefmt="github", disable_numparse=True))


def index_gaps(row: Row, metric: str) -> dict[str, dict[str, tuple[float, float]]]:
    """Per index kind: (exact, through the index) of the cross-tests (k < t) and of the self-tests (k = t), mean
    over entries and seeds."""
    found: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for record in row.finished:
        exact = np.array(record.matrices.get(metric, []), dtype=float)
        for kind, by_metric in ((record.index or {}).get("matrices") or {}).items():
            if metric not in by_metric:
                continue
            through = np.array(by_metric[metric], dtype=float)
            t, k = np.tril_indices(len(exact))
            for which, mask in (("cross", k < t), ("self", k == t)):
                both = np.isfinite(exact[t[mask], k[mask]]) & np.isfinite(through[t[mask], k[mask]])
                pairs = zip(exact[t[mask], k[mask]][both], through[t[mask], k[mask]][both])
                found.setdefault(kind, {}).setdefault(which, []).extend(pairs)
    return {kind: {which: tuple(np.mean(v, axis=0)) for which, v in by.items() if v} for kind, by in found.items()}


def index_markdown(table: Table, metric: str) -> str:
    """Exact scores, scores through each index and their gap (exact − index, points) per method."""
    lines = []
    for row in table.rows:
        for kind, by in index_gaps(row, metric).items():
            cells = [f"{by[w][0]:.1f} / {by[w][1]:.1f} / {by[w][0] - by[w][1]:+.1f}" if w in by else "–"
                     for w in ("cross", "self")]
            lines.append([escape(row.label), kind, *cells])
    if not lines:
        return ""
    headers = ["method", "index", "cross-tests (k < t)", "self-tests (k = t)"]
    return (f"Retrieval through an index, {escape(metric_name(metric))}: exact / index / gap (points), mean over the "
            "entries C[t][k]\n\n" + tabulate(lines, headers=headers, tablefmt="github", disable_numparse=True))


def upgrade_sections(table: Table, page: str, out: Path) -> list[str]:
    """The Markdown parts of a table's page for the records that hold curves or index scores (none otherwise)."""
    parts = []
    for metric in table.metrics:
        if text := backfill_markdown(table, metric):
            parts.append(text)
            path = backfill_figure(table, metric, out / "figures" / figures.figure_name(page, table, metric, "backfill"))
            if path is not None:
                parts.append(f"![{escape(table.title)}: backfilling curves, {escape(metric_name(metric))}]"
                             f"(figures/{path.name})")
        if text := index_markdown(table, metric):
            parts.append(text)
    return parts
