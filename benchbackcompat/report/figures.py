"""Leaderboard figures (matplotlib, PNG): compatibility matrices, AA_tau curves, self-vs-cross scatter.

Figures use matplotlib's object API (no pyplot state, no display needed); each function writes one
PNG and returns its path. Values are means over the finished seeds of a row.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from benchbackcompat.report.aggregate import Row, Table
from benchbackcompat.report.columns import metric_name
from benchbackcompat.report.markdown import plain_label

DPI = 100
METADATA = {"Software": None}  # no matplotlib version in the file: same results, same bytes
ANNOTATE_UP_TO = 10  # write the values into the cells of matrices up to this size


def mean_matrix(row: Row, metric: str) -> np.ndarray | None:
    """The element-wise mean over seeds of C[t][k] (NaN above the diagonal and where no seed has a value)."""
    stacked = [np.array(r.matrices[metric], dtype=float) for r in row.finished if metric in r.matrices]
    if not stacked:
        return None
    stack = np.stack(stacked)
    counts = np.isfinite(stack).sum(0)
    total = np.where(np.isfinite(stack), stack, 0.0).sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, total / np.maximum(counts, 1), np.nan)


def incompatible(M: np.ndarray) -> np.ndarray:
    """Entries k < t where the update is not compatible: C[t][k] <= C[k][k] (strict criterion; NaN counts as not)."""
    T = len(M)
    t, k = np.indices((T, T))
    with np.errstate(invalid="ignore"):
        ok = M > np.diag(M)[None, :]
    return (k < t) & ~(ok & np.isfinite(M))


def matrices_figure(table: Table, metric: str, path: Path) -> Path | None:
    entries = [(row, M) for row in table.rows if (M := mean_matrix(row, metric)) is not None]
    if not entries:
        return None
    lower = np.concatenate([M[np.tril_indices(len(M))] for _, M in entries])
    lower = lower[np.isfinite(lower)]
    vmin, vmax = (float(lower.min()), float(lower.max())) if lower.size else (0.0, 100.0)
    cols = min(4, len(entries))
    rows = math.ceil(len(entries) / cols)
    fig = Figure(figsize=(2.9 * cols + 0.9, 3.0 * rows + 0.6), dpi=DPI, layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    image = None
    for ax, (row, M) in zip(axes.flat, entries):
        image = _heatmap(ax, M, vmin, vmax)
        ax.set_title(plain_label(row.label), fontsize=9)
    for ax in list(axes.flat)[len(entries):]:
        ax.set_axis_off()
    fig.colorbar(image, ax=axes, shrink=0.8, label=f"{metric_name(metric)} (%)")
    fig.suptitle(f"{plain_label(table.title)}: {metric_name(metric)} compatibility matrices, mean over seeds\n"
                 f"row t = query model, column k = gallery model; red × = incompatible (C[t][k] <= C[k][k])", fontsize=9)
    return _save(fig, path)


def _heatmap(ax, M: np.ndarray, vmin: float, vmax: float):
    T = len(M)
    shown = np.ma.masked_where(np.triu(np.ones((T, T), bool), 1) | ~np.isfinite(M), M)
    image = ax.imshow(shown, cmap="YlGnBu", vmin=vmin, vmax=vmax)
    ax.set_facecolor("white")
    bad = incompatible(M)
    size = 9 if T <= 3 else 7 if T <= 5 else 5
    for t in range(T):
        for k in range(t + 1):
            if not np.isfinite(M[t][k]):
                ax.add_patch(Rectangle((k - 0.5, t - 0.5), 1, 1, facecolor="0.85", edgecolor="none"))
                if T <= ANNOTATE_UP_TO:
                    ax.text(k, t, "n/a", ha="center", va="center", fontsize=size, color="0.3")
                continue
            if bad[t][k]:
                ax.add_patch(Rectangle((k - 0.46, t - 0.46), 0.92, 0.92, fill=False, edgecolor="red",
                                       linewidth=2 if T <= ANNOTATE_UP_TO else 0.8))
            if T <= ANNOTATE_UP_TO:
                dark = M[t][k] > vmin + 0.6 * (vmax - vmin)
                ax.text(k, t, f"{M[t][k]:.1f}", ha="center", va="center", fontsize=size,
                        color="white" if dark else "black")
            if bad[t][k] and T <= ANNOTATE_UP_TO:
                ax.text(k + 0.3, t - 0.28, "×", ha="center", va="center", fontsize=size + 2, color="red",
                        fontweight="bold", bbox={"boxstyle": "circle,pad=0.05", "facecolor": "white", "edgecolor": "none"})
    ticks = range(T) if T <= 12 else range(0, T, max(1, T // 8))
    ax.set_xticks(list(ticks), [str(i + 1) for i in ticks], fontsize=7)
    ax.set_yticks(list(ticks), [str(i + 1) for i in ticks], fontsize=7)
    ax.set_xlabel("gallery model k", fontsize=8)
    ax.set_ylabel("query model t", fontsize=8)
    return image


def aa_curve_figure(table: Table, metric: str, path: Path) -> Path | None:
    """AA_tau (IAM-CL2R Fig. 4): the average accuracy of the leading tau x tau block, tau = 1..T."""
    curves = []
    for row in table.rows:
        stacked = [m.AA_curve for r in row.finished if (m := r.metrics.get(metric)) and m.AA_curve]
        if stacked:
            curves.append((row, np.array(stacked, dtype=float)))
    if not curves:
        return None
    fig = Figure(figsize=(8.5, 4.6), dpi=DPI, layout="constrained")
    ax = fig.subplots()
    for i, (row, values) in enumerate(curves):
        x = np.arange(1, values.shape[1] + 1)
        mean = np.nanmean(values, axis=0)
        color, marker, style = method_style(i, len(curves))
        ax.plot(x, mean, color=color, linestyle=style, marker=marker, markersize=3, label=plain_label(row.label))
        if len(values) > 1:
            std = np.nanstd(values, axis=0, ddof=1)
            ax.fill_between(x, mean - std, mean + std, color=color, alpha=0.12, linewidth=0)
    ax.set_xlabel("tau (models so far)")
    ax.set_ylabel(f"AA_tau, {metric_name(metric)} (%)")
    ax.set_xticks(list(range(1, curves[0][1].shape[1] + 1)) if curves[0][1].shape[1] <= 20 else ax.get_xticks())
    ax.grid(alpha=0.3)
    ax.set_title(f"{plain_label(table.title)}: AA_tau over tasks (mean ± std over seeds)", fontsize=10)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    return _save(fig, path)


def scatter_figure(table: Table, metric: str, path: Path) -> Path | None:
    """Self-test against cross-test of the new model, one point per method (mean ± std over seeds)."""
    fig = scatter(table, metric)
    return None if fig is None else _save(fig, path)


def scatter(table: Table, metric: str) -> Figure | None:
    """The scatter of :func:`scatter_figure`. A method is compatible when its cross-test beats its own old model's
    self-test, so each point carries its own threshold: a dotted segment at that old self-test, in its colour."""
    points = []
    for row in table.rows:
        values = [(m.self, m.cross, m.old_self) for r in row.finished
                  if (m := r.metrics.get(metric)) and m.self is not None and m.cross is not None]
        if values:
            points.append((row, np.array([[v if v is not None else np.nan for v in p] for p in values], dtype=float)))
    if not points:
        return None
    fig = Figure(figsize=(8.5, 5.2), dpi=DPI, layout="constrained")
    ax = fig.subplots()
    centres = [np.nanmean(values[:, 0]) for _, values in points]
    half_width = 0.04 * max(1.0, float(np.ptp(centres)))  # threshold segments span a fixed share of the x range
    for i, (row, values) in enumerate(points):
        self_, cross, old = (np.nanmean(values[:, j]) for j in range(3))
        errors = [np.nanstd(values[:, j], ddof=1) if len(values) > 1 else 0.0 for j in range(2)]
        color, marker, _ = method_style(i, len(points))
        compatible = bool(cross > old)
        ax.errorbar(self_, cross, xerr=errors[0], yerr=errors[1], color=color, marker=marker,
                    markersize=8, markerfacecolor=color if compatible else "white", capsize=2, linestyle="none",
                    label=plain_label(row.label) + ("" if compatible else " (cross <= its old self)"))
        if np.isfinite(old):
            ax.hlines(old, self_ - half_width, self_ + half_width, colors=[color], linestyles=":", linewidth=1.5,
                      label="its old model's self-test (the threshold)" if i == 0 else None)
        ax.annotate(plain_label(row.label), (self_, cross), xytext=(5, 4), textcoords="offset points", fontsize=7)
    low = min(ax.get_xlim()[0], ax.get_ylim()[0])
    high = max(ax.get_xlim()[1], ax.get_ylim()[1])
    ax.plot([low, high], [low, high], color="0.7", linewidth=1, label="cross = self")
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_xlabel(f"self-test: new query vs new gallery, {metric_name(metric)} (%)")
    ax.set_ylabel(f"cross-test: new query vs old gallery, {metric_name(metric)} (%)")
    ax.grid(alpha=0.3)
    ax.set_title(f"{plain_label(table.title)}: self vs cross ({metric_name(metric)}; hollow = cross below the "
                 "method's own old self-test, dotted)", fontsize=10)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    return fig


MARKERS = ("o", "s", "^", "D", "v", "P", "*", "h")
LINESTYLES = ("-", "--", ":", "-.")


def method_style(i: int, n: int) -> tuple[tuple[float, ...], str, str]:
    """Colour, marker and line style of the i-th of n methods; no two methods share a colour: tab10 up to 10,
    tab20 up to 20, beyond that n evenly spaced colours of a continuous map (markers and line styles then
    cycle too, to tell neighbouring colours apart)."""
    from matplotlib import colormaps

    if n <= 10:
        return colormaps["tab10"](i), MARKERS[0], LINESTYLES[0]
    if n <= 20:
        return colormaps["tab20"](i), MARKERS[i // 10], LINESTYLES[i // 10]
    return colormaps["turbo"](i / (n - 1)), MARKERS[i % len(MARKERS)], LINESTYLES[i % len(LINESTYLES)]


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", metadata=METADATA)
    return path
