"""Leaderboard figures (matplotlib, PNG): compatibility matrices, AA_tau curves, compatibility margins.

Figures use matplotlib's object API (no pyplot state, no display needed); each function writes one
PNG and returns its path. Values are means over the finished seeds of a row. PNGs are stored with a palette of at
most 256 colours (``_save``), a third of the bytes of matplotlib's RGBA files at the same size and legibility.

Drawing is most of a leaderboard's rendering time, and a figure is a pure function of its table's records, its
arguments and the code: :func:`cached` keeps each drawn figure in the user cache (:data:`FIGURE_CACHE`) under a key
of all three, so rendering the same records again copies the figures instead of drawing them.
"""
from __future__ import annotations

import functools
import hashlib
import io
import json
import logging
import math
import os
import textwrap
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.patches import Polygon, Rectangle
from PIL import Image

from benchbackcompat.report.seed_statistics import margin
from benchbackcompat.report.table_data import Row, Table
from benchbackcompat.report.columns import metric_name
from benchbackcompat.report.markdown import plain_label, slug
from benchbackcompat.runtime.memo import IdentityMemo
from benchbackcompat.store.checkpoint import atomic_write_bytes

log = logging.getLogger("benchbackcompat")

FIGURE_CACHE: Path | None = Path.home() / ".cache" / "benchbackcompat" / "figures"  # None: draw every time
CACHE_FILES = 4000  # figures kept in the cache, the most recently used (a published site draws about a hundred)
DPI = 100
COLOURS = 256  # palette size of a stored PNG
HEATMAP = ("YlGnBu", 64)  # matrix colour map, in even steps: a palette keeps each one, so the colour bar shows no bands
ANNOTATE_UP_TO = 10  # write the values into the cells of matrices up to this size


def cached(draw: Callable[..., Path | None]) -> Callable[..., Path | None]:
    """``draw(table, metric, path, *args)``, a figure function, with its figures kept in :data:`FIGURE_CACHE`: a
    figure drawn before from the same records (every record of the table, whole), arguments and code is copied
    from the cache, byte for byte; a cache that cannot be read or written is passed by."""
    @functools.wraps(draw)
    def drawn_or_cached(table: Table, metric: str, path: Path, *args: Any) -> Path | None:
        folder = FIGURE_CACHE
        if folder is None:
            return draw(table, metric, path, *args)
        key = figure_key(draw, table, metric, args)
        stored, nothing = folder / f"{key}.png", folder / f"{key}.none"  # .none: the function drew no figure
        try:
            if stored.is_file():
                atomic_write_bytes(path, stored.read_bytes())
                os.utime(stored)  # recently used: kept when the cache is pruned
                return path
            if nothing.is_file():
                return None
        except OSError as error:
            log.debug(f"figure cache {folder}: {error}; drawing {path.name}")
        made = draw(table, metric, path, *args)
        _keep(folder, stored if made is not None else nothing, made)
        return made
    return drawn_or_cached


def figure_key(draw: Callable[..., Any], table: Table, metric: str, args: tuple[Any, ...]) -> str:
    """What a figure depends on, hashed: the function, the code of the package and the plotting libraries, the
    metric and arguments, the table's fields and every record of its rows, whole."""
    digest = hashlib.sha256()
    fields = [draw.__module__, draw.__qualname__, _code_digest(), metric, repr(args), table.scenario, table.kind,
              table.dataset, table.preset, table.variant, table.unranked, table.data,
              json.dumps(table.config, sort_keys=True, default=str)]
    for row in table.rows:
        fields += [row.method, row.label, json.dumps(row.params, sort_keys=True, default=str), str(row.rank),
                   row.chance, row.data, *row.notes, *map(_record_digest, row.records)]
    for field in fields:
        digest.update(field.encode() + b"\0")
    return digest.hexdigest()


@functools.cache
def _code_digest() -> str:
    """The package's source and the versions of the libraries that draw and store a figure."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parents[1]
    for source in sorted(package.rglob("*.py")):
        digest.update(source.relative_to(package).as_posix().encode() + b"\0" + source.read_bytes())
    for library in ("matplotlib", "numpy", "pillow"):
        digest.update(metadata.version(library).encode())
    return digest.hexdigest()


def _record_digest(record: Any) -> str:
    """The hash of a record's JSON, once per record object (each table draws several figures)."""
    def digest() -> str:
        content = record.to_json() if hasattr(record, "to_json") else record
        return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()
    return _DIGESTS.get(id(record), (record,), digest)


_DIGESTS = IdentityMemo(4096)  # records whose hash is kept: the published leaderboard has 1,333


def _keep(folder: Path, stored: Path, made: Path | None) -> None:
    """Store what a figure function made (its PNG, or an empty marker where it drew none) as ``stored``; the least
    recently used entries go beyond :data:`CACHE_FILES`."""
    try:
        atomic_write_bytes(stored, made.read_bytes() if made is not None else b"")
        entries = list(folder.iterdir())
        if len(entries) > CACHE_FILES:
            entries.sort(key=lambda entry: entry.stat().st_mtime)
            for entry in entries[:len(entries) - CACHE_FILES]:
                entry.unlink(missing_ok=True)
    except OSError as error:
        log.debug(f"figure cache {folder}: {error}; {stored.name} not kept")


def with_figure(text: str, path: Path | None, alt: str) -> list[str]:
    """A page's section ``text``, then its figure at ``path`` (written under the page's ``figures/``; none where no
    figure was drawn) as a Markdown image with the (escaped) ``alt`` text."""
    return [text, *([f"![{alt}](figures/{path.name})"] if path is not None else [])]


def figure_name(page: str, table: Table, metric: str, what: str) -> str:
    """The file name (under ``figures/``) of figure ``what`` ("matrices", "aa", "margin") of one table and metric."""
    return f"{page}-{slug(table.title)}-{slug(metric)}-{what}.png"


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


CELL_IN = 0.44  # inches per matrix entry: room for "100.0" at FONT_PT points beside the corner mark
MATRIX_MIN_IN, MATRIX_MAX_IN = 2.2, 5.0  # a panel's matrix side, however few or many models
FONT_PT = 9  # numbers in the cells, panel titles; tick and axis labels are 8 pt (nothing smaller)
CORNER = 0.3  # the side of the red corner mark of an incompatible entry, in entries


@cached
def matrices_figure(table: Table, metric: str, path: Path) -> Path | None:
    """Every method's mean compatibility matrix, one panel each, written to ``path``; see :func:`matrices_plot`."""
    fig = matrices_plot(table, metric)
    return None if fig is None else _save(fig, path)


def matrices_plot(table: Table, metric: str) -> Figure | None:
    """One heatmap panel per method on a shared colour scale. Every entry is CELL_IN wide, so the values written in
    the cells keep their FONT_PT size up to T = 10 (three panels a row from T = 6 on); an incompatible entry is
    framed in red with a red triangle in its top-right corner, beside its number, not over it."""
    entries = [(row, M) for row in table.rows if (M := mean_matrix(row, metric)) is not None]
    if not entries:
        return None
    lower = np.concatenate([M[np.tril_indices(len(M))] for _, M in entries])
    lower = lower[np.isfinite(lower)]
    vmin, vmax = (float(lower.min()), float(lower.max())) if lower.size else (0.0, 100.0)
    T = max(len(M) for _, M in entries)
    side = min(MATRIX_MAX_IN, max(MATRIX_MIN_IN, CELL_IN * T))
    cols = min(4 if T <= 5 else 3, len(entries))
    rows = math.ceil(len(entries) / cols)
    fig = Figure(figsize=((side + 0.8) * cols + 1.0, (side + 0.85) * rows + 0.7), dpi=DPI, layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    image = None
    for ax, (row, M) in zip(axes.flat, entries):
        image = _heatmap(ax, M, vmin, vmax)
        ax.set_title(plain_label(row.label), fontsize=FONT_PT + 1)
    for ax in list(axes.flat)[len(entries):]:
        ax.set_axis_off()
    bar = fig.colorbar(image, ax=axes, shrink=0.8 if rows > 1 else 1.0)
    bar.set_label(f"{metric_name(metric)} (%)", fontsize=FONT_PT)
    bar.ax.tick_params(labelsize=8)
    fig.suptitle(f"{plain_label(table.title)}: {metric_name(metric)} compatibility matrices, mean over seeds\n"
                 f"row t = query model, column k = gallery model; red frame and corner = incompatible "
                 f"(C[t][k] <= C[k][k])", fontsize=FONT_PT + 1)
    return fig


def _heatmap(ax, M: np.ndarray, vmin: float, vmax: float):
    T = len(M)
    shown = np.ma.masked_where(np.triu(np.ones((T, T), bool), 1) | ~np.isfinite(M), M)
    image = ax.imshow(shown, cmap=colormaps[HEATMAP[0]].resampled(HEATMAP[1]), vmin=vmin, vmax=vmax)
    ax.set_facecolor("white")
    bad = incompatible(M)
    numbers = T <= ANNOTATE_UP_TO
    # the marks and numbers below lie inside their cells: left out of the constrained layout's bounding boxes (the
    # same pixels, a fraction of the layout's work)
    size = FONT_PT + 1 if T <= 3 else FONT_PT
    for t in range(T):
        for k in range(t + 1):
            if not np.isfinite(M[t][k]):
                ax.add_patch(Rectangle((k - 0.5, t - 0.5), 1, 1, facecolor="0.85", edgecolor="none", in_layout=False))
                if numbers:
                    ax.text(k, t, "n/a", ha="center", va="center", fontsize=size, color="0.3", in_layout=False)
                continue
            if bad[t][k]:
                ax.add_patch(Rectangle((k - 0.45, t - 0.45), 0.9, 0.9, fill=False, edgecolor="red",
                                       linewidth=2 if numbers else 0.8, in_layout=False))
                if numbers:  # top-right corner (row t is drawn downwards): clear of the centred number
                    ax.add_patch(Polygon([(k + 0.5, t - 0.5), (k + 0.5 - CORNER, t - 0.5), (k + 0.5, t - 0.5 + CORNER)],
                                         closed=True, facecolor="red", edgecolor="none", label="incompatible",
                                         in_layout=False))
            if numbers:
                dark = M[t][k] > vmin + 0.6 * (vmax - vmin)
                ax.text(k, t, f"{M[t][k]:.1f}", ha="center", va="center", fontsize=size,
                        color="white" if dark else "black", in_layout=False)
    ticks = range(T) if T <= 12 else range(0, T, max(1, T // 8))
    ax.set_xticks(list(ticks), [str(i + 1) for i in ticks], fontsize=8)
    ax.set_yticks(list(ticks), [str(i + 1) for i in ticks], fontsize=8)
    ax.set_xlabel("gallery model k", fontsize=8)
    ax.set_ylabel("query model t", fontsize=8)
    return image


@cached
def aa_curve_figure(table: Table, metric: str, path: Path) -> Path | None:
    """AA_tau of every method, one small panel each, written to ``path``; see :func:`aa_curve_plot`."""
    fig = aa_curve_plot(table, metric)
    return None if fig is None else _save(fig, path)


def aa_curves(table: Table, metric: str) -> list[tuple[Row, np.ndarray]]:
    """(row, seeds x T array of AA_tau) for every row whose finished seeds stored the curve."""
    found = []
    for row in table.rows:
        stacked = [m.AA_curve for r in row.finished if (m := r.metrics.get(metric)) and m.AA_curve]
        if stacked:
            found.append((row, np.array(stacked, dtype=float)))
    return found


def aa_curve_plot(table: Table, metric: str) -> Figure | None:
    """AA_tau (IAM-CL2R Fig. 4), the average accuracy of the leading tau x tau block, tau = 1..T, as small multiples:
    one panel per method in the table's order (best rank first) with its mean and ± std band over seeds, over the
    other methods in light grey and their median (dashed), on shared axes."""
    curves = aa_curves(table, metric)
    if not curves:
        return None
    length = max(values.shape[1] for _, values in curves)
    means = np.array([np.pad(np.nanmean(v, axis=0), (0, length - v.shape[1]), constant_values=np.nan)
                      for _, v in curves])
    x = np.arange(1, length + 1)
    with np.errstate(all="ignore"):
        median = np.nanmedian(means, axis=0)
    cols = min(4, len(curves))
    rows = math.ceil(len(curves) / cols)
    fig = Figure(figsize=(2.6 * cols + 0.6, 2.0 * rows + 1.1), dpi=DPI, layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharex=True, sharey=True)
    for i, (ax, (row, values)) in enumerate(zip(axes.flat, curves)):
        for j, other in enumerate(means):
            if j != i:
                ax.plot(x, other, color="0.8", linewidth=0.8, label="other methods" if (i, j) == (0, 1) else None)
        ax.plot(x, median, color="0.25", linestyle="--", linewidth=1, label="median of all methods")
        own = x[: values.shape[1]]
        ax.plot(own, means[i][: len(own)], color="tab:blue", marker="o", markersize=3, linewidth=1.8,
                label="this method (mean ± std over seeds)")
        if len(values) > 1:
            std = np.nanstd(values, axis=0, ddof=1)
            ax.fill_between(own, means[i][: len(own)] - std, means[i][: len(own)] + std, color="tab:blue", alpha=0.2,
                            linewidth=0)
        ax.set_title(f"{plain_label(row.label)}: {means[i][len(own) - 1]:.1f} at tau = {len(own)}", fontsize=FONT_PT)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=8)
    for ax in list(axes.flat)[len(curves):]:
        ax.set_axis_off()
    if length <= 12:
        axes.flat[0].set_xticks(list(x))
    for col in range(cols):  # the lowest panel of each column carries the x axis (the last row may be short)
        ax = axes[(len(curves) - 1 - col) // cols, col]
        ax.set_xlabel("tau (models so far)", fontsize=8)
        ax.xaxis.set_tick_params(labelbottom=True)
    for ax in axes[:, 0]:
        ax.set_ylabel(f"AA_tau, {metric_name(metric)} (%)", fontsize=8)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    # one panel is too narrow for the three entries side by side, or for the title on one line
    fig.legend(handles, labels, loc="outside lower center", ncols=3 if cols > 1 else 1, fontsize=8, frameon=False)
    title = f"{plain_label(table.title)}: AA_tau over tasks, each method against the others"
    fig.suptitle(textwrap.fill(title, width=max(24, int(11 * fig.get_figwidth()))), fontsize=FONT_PT + 1)
    return fig


@cached
def margin_figure(table: Table, metric: str, path: Path) -> Path | None:
    """Each method's compatibility margin, cross-test minus its own old model's self-test (> 0: compatible), with
    its 95% interval; see :func:`margins`."""
    fig = margin_plot(table, metric)
    return None if fig is None else _save(fig, path)


def margins(table: Table, metric: str) -> list[tuple[Row, float, tuple[float, float] | None]]:
    """(row, mean of cross - old self over seeds, its 95% interval) for every row with both; the interval is the
    bootstrap of the paired difference (both come from the same resampled queries), None without replicates."""
    return [(row, *found) for row in table.rows if (found := margin(row, metric)) is not None]


def margin_plot(table: Table, metric: str) -> Figure | None:
    """The figure of :func:`margin_figure`, methods in the table's order (best rank on top). A margin far below the
    others (an incompatible model, e.g. ``independent`` at chance-level cross) is clipped at the axis' left edge
    with its value written, so it does not squeeze the compared methods."""
    found = margins(table, metric)
    if not found:
        return None
    lows = np.array([iv[0] if iv else m for _, m, iv in found])
    highs = np.array([iv[1] if iv else m for _, m, iv in found])
    spread = max(1.0, float(np.percentile(highs, 90) - np.percentile(lows, 10)))
    inliers = lows[lows >= float(np.percentile(lows, 10)) - 1.5 * spread]  # never empty: the 10th percentile's own
    left = min(0.0, float(inliers.min())) - 0.08 * spread
    right = max(0.0, float(highs.max())) + 0.1 * spread
    fig = Figure(figsize=(8.0, 1.2 + 0.32 * len(found)), dpi=DPI, layout="constrained")
    ax = fig.subplots()
    for y, (row, mean, interval) in enumerate(found):
        color = "tab:blue" if (interval[0] > 0 if interval else mean > 0) else "tab:red" if (
            interval[1] < 0 if interval else mean <= 0) else "0.45"
        low, high = interval if interval else (mean, mean)
        if mean < left:
            ax.annotate(f"← {mean:.1f} (clipped)", (left, y), xytext=(4, 0), textcoords="offset points", va="center",
                        fontsize=8, color=color)
            continue
        ax.plot([max(low, left), high], [y, y], color=color, linewidth=2)
        ax.plot([mean], [y], "o", color=color, markersize=5)
    ax.axvline(0.0, color="0.3", linewidth=1)
    ax.set_xlim(left, right)
    ax.set_yticks(range(len(found)), [plain_label(row.label) for row, _, _ in found], fontsize=8)
    ax.invert_yaxis()
    ax.grid(axis="x", alpha=0.3)
    ax.set_xlabel(f"cross-test − its own old self-test, {metric_name(metric)} (points; > 0: compatible)")
    ax.set_title(f"{plain_label(table.title)}\ncompatibility margin, mean and 95% interval "
                 "(blue: above 0, red: below 0, grey: undecided)", fontsize=9)
    return fig


MARKERS = ("o", "s", "^", "D", "v", "P", "*", "h")
LINESTYLES = ("-", "--", ":", "-.")


def method_style(i: int, n: int) -> tuple[tuple[float, ...], str, str]:
    """Colour, marker and line style of the i-th of n methods; no two methods share a colour: tab10 up to 10,
    tab20 up to 20, beyond that n evenly spaced colours of a continuous map (markers and line styles then
    cycle too, to tell neighbouring colours apart)."""
    if n <= 10:
        return colormaps["tab10"](i), MARKERS[0], LINESTYLES[0]
    if n <= 20:
        return colormaps["tab20"](i), MARKERS[i // 10], LINESTYLES[i // 10]
    return colormaps["turbo"](i / (n - 1)), MARKERS[i % len(MARKERS)], LINESTYLES[i % len(LINESTYLES)]


def _save(fig: Figure, path: Path) -> Path:
    """Write ``fig`` as a palette PNG: matplotlib renders it (opaque, white background), Pillow maps it to at most
    ``COLOURS`` colours by median cut without dithering (flat fills, lines and anti-aliased text keep their look;
    a heatmap cell's colour moves by at most a quantisation step, and its value is written in it) and stores it
    optimised, atomically (a failed write names the file). The bytes depend only on the pixels: no time and no
    software version in the file."""
    rendered = io.BytesIO()
    fig.savefig(rendered, format="png")
    image = Image.open(rendered).convert("RGB")
    palette = image.quantize(colors=COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    png = io.BytesIO()
    palette.save(png, format="PNG", optimize=True)
    atomic_write_bytes(path, png.getvalue())
    return path
