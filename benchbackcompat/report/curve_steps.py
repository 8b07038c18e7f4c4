"""The backfilling curves along their steps, where a table's records hold per-step outcomes (``metrics.curve_steps``):
per method and refresh order the area with a bootstrap interval over queries (and, for the random order, over its
permutations too), the negative flips along the curve against the old self-test (Hot-Refresh, ICLR 2022) and a
figure per method with every order's curve and NFR. Records written before the per-step outcomes yield nothing here,
so their pages are what they were."""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure
from tabulate import tabulate

from benchbackcompat.metrics import curve_steps, flips, live, outcomes
from benchbackcompat.report import figures
from benchbackcompat.report.columns import metric_name
from benchbackcompat.report.markdown import escape, plain_label
from benchbackcompat.report.table_data import Row, Table

FRACTIONS = (0.1, 0.2, 0.5)  # refreshed fractions whose NFR the table shows
COLLAPSED_ORDERS = 3  # with more orders than this, the table (a row per method and order) is collapsed
PANELS_PER_LINE = 7  # methods side by side in the figure


def row_steps(row: Row, metric: str) -> dict[str, dict]:
    """Per order, over the row's seeds and updates with per-step outcomes: ``fractions``, the mean ``curve``,
    ``nfr`` and ``pfr`` curves (%), and ``areas``: permutations x queries per-query areas, the queries of every seed
    and update side by side (the random order: one row per permutation; the others one row)."""
    found: dict[str, dict] = {}
    for record in row.finished:
        for pair in (record.backfill or {}).get("pairs", []):
            stored, old_self = (pair.get("outcomes") or {}).get(metric), (pair.get("old_self") or {}).get(metric)
            if not stored or old_self is None:
                continue
            reference = outcomes.decode(old_self)
            for order, steps in stored.items():
                drawn = [steps] + [p["outcomes"] for p in (pair.get("permutations") or {}).get(metric, [])
                                   if order == "random" and p.get("outcomes")]
                hits = [curve_steps.decoded(s) for s in drawn]
                entry = found.setdefault(order, {"fractions": pair["fractions"], "curves": [], "nfr": [], "pfr": [],
                                                 "areas": []})
                entry["curves"].append(pair["curves"][metric][order])
                if flips.defined_for(metric) and order != live.BOUND:  # the bound's queries each have their own refresh
                    nfr, pfr = curve_steps.step_rates(reference, hits[0])
                    entry["nfr"].append(nfr)
                    entry["pfr"].append(pfr)
                entry["areas"].append(np.stack([curve_steps.query_areas(pair["fractions"], h) for h in hits]))
    for entry in found.values():
        perms = min(len(a) for a in entry["areas"])
        entry["areas"] = np.concatenate([a[:perms] for a in entry["areas"]], axis=1)
        for key in ("curves", "nfr", "pfr"):
            entry[key] = np.mean(entry[key], axis=0) if entry[key] else None
    return found


def steps_markdown(table: Table, metric: str) -> str:
    """Per method and order: the area (%) with its 95% bootstrap interval over queries, for the random order also
    over queries and permutations, and the NFR and PFR along the curve; "" where no record holds per-step
    outcomes."""
    lines, permutations = [], 0
    for row in table.rows:
        for order, entry in row_steps(row, metric).items():
            one = curve_steps.bootstrap_area(entry["areas"][:1])
            every = curve_steps.bootstrap_area(entry["areas"]) if len(entry["areas"]) > 1 else None
            permutations = max(permutations, len(entry["areas"]))
            flips_cells = ["-"] * (len(FRACTIONS) + 2)
            if entry["nfr"] is not None:
                flips_cells = [f"{curve_steps.at_fraction(entry['fractions'], entry['nfr'], f):.1f}" for f in FRACTIONS] \
                    + [f"{np.max(entry['nfr']):.1f}", f"{curve_steps.at_fraction(entry['fractions'], entry['pfr'], 0.5):.1f}"]
            lines.append([escape(row.label), escape(order), f"{one[0]:.1f} [{one[1]:.1f}, {one[2]:.1f}]",
                          f"{every[0]:.1f} [{every[1]:.1f}, {every[2]:.1f}]" if every else "-", *flips_cells])
    if not lines:
        return ""
    headers = ["method", "order", "AUC [queries]", f"AUC [+{permutations} perms]",
               *(f"NFR {100 * f:.0f}%" for f in FRACTIONS), "NFR max", "PFR 50%"]
    spelled = tabulate(lines, headers=headers, tablefmt="github", disable_numparse=True)
    if len({line[1] for line in lines}) > COLLAPSED_ORDERS:
        spelled = f"<details><summary>{len(lines)} rows: every method and order</summary>\n\n{spelled}\n\n</details>"
    return (f"Backfilling along the curve, {escape(metric_name(metric))}: area under the curve (%) with a 95% bootstrap "
            "interval over the queries (of every seed and update), and under AUC [+P perms] for the random order over "
            "the queries and its P random permutations of the refresh (the order's own randomness); NFR and PFR (%) "
            "against the old "
            "self-test C[k][k] at a share of the gallery refreshed (0%: the cross-test's flips, 100%: the new "
            "self-test's)\n\n" + spelled)


@figures.cached
def steps_figure(table: Table, metric: str, path: Path) -> Path | None:
    """A panel per method: every order's mean curve (top) and its NFR against the old self-test (bottom), one colour
    per order; None where no record holds per-step outcomes."""
    rows = [(row, steps) for row in table.rows if (steps := row_steps(row, metric))]
    if not rows:
        return None
    orders = list(dict.fromkeys(order for _, steps in rows for order in steps))
    colour = {order: colormaps["tab10"](i % 10) for i, order in enumerate(orders)}
    cols = min(len(rows), PANELS_PER_LINE)
    lines = -(-len(rows) // cols)
    fig = Figure(figsize=(max(6.4, min(2.4 * cols + 0.6, 16.0)), 4.6 * lines + 0.4), dpi=figures.DPI,
                 layout="constrained")
    grid = fig.subplots(2 * lines, cols, sharex=True, squeeze=False)
    axes = np.concatenate([grid[2 * line:2 * line + 2] for line in range(lines)], axis=1)  # 2 x (lines * cols)
    for ax in axes[:, len(rows):].ravel():
        ax.set_visible(False)
    for top, bottom in zip(axes[0, 1:], axes[1, 1:]):
        top.sharey(axes[0, 0])
        bottom.sharey(axes[1, 0])
    for i, (row, steps) in enumerate(rows):
        for order, entry in steps.items():
            x = 100 * np.asarray(entry["fractions"])
            axes[0, i].plot(x, entry["curves"], color=colour[order], linewidth=1.4, label=order,
                            linestyle="--" if order == live.BOUND else "-")
            if entry["nfr"] is not None:
                axes[1, i].plot(x, entry["nfr"], color=colour[order], linewidth=1.4)
        axes[0, i].set_title(textwrap.shorten(plain_label(row.label), 30), fontsize=9)
        axes[1, i].set_xlabel("gallery refreshed (%)")
        for ax in axes[:, i]:
            ax.grid(alpha=0.3)
    for first in range(0, len(rows), cols):
        axes[0, first].set_ylabel(f"{metric_name(metric)} (%)")
        axes[1, first].set_ylabel("NFR vs old self-test (%)")
    axes[0, len(rows) - 1].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"{textwrap.shorten(plain_label(table.title), 100)}: backfilling curves by refresh order", fontsize=9)
    return figures._save(fig, path)
