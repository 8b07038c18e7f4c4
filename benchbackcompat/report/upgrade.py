"""What a table's records say about upgrading a live gallery, where they hold it (scenario options ``backfill`` and
``index``): the backfilling curves per method (a figure; Hot-Refresh, ICLR 2022), their areas (FastFill, ICLR 2023)
and the gap between exact retrieval and retrieval through a FAISS index. Means over a row's seeds that have them."""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from scipy import stats
from tabulate import tabulate

from benchbackcompat.metrics import live
from benchbackcompat.metrics.sign_flip import sign_flip_p
from benchbackcompat.report import curve_steps, figures
from benchbackcompat.report.table_data import Row, Table
from benchbackcompat.report.columns import metric_name
from benchbackcompat.report.markdown import escape, plain_label

# the orders the methods' figure draws, one line style each; every order is drawn in the figure by order
# (``report.curve_steps``), one colour each, where the records hold per-step outcomes
ORDER_STYLES = {"random": ("-", "solid"), "class-distance": ("--", "dashed"), "class-balanced": (":", "dotted"),
                "oracle": ("-.", "dash-dot")}
WIDE_ORDERS = 3  # orders one backfilling table spells out with intervals; more go into a compact table
SHORT_ORDERS = {"class-distance": "c-dist", "class-balanced": "c-bal", "uncertainty": "unc",
                "hbct-uncertainty": "h-unc", "oracle-bound": "bound"}  # column names of the compact table
LISTED_DIFFERENCES = 12  # beyond this many, the p-floor note points to the compact table's marks
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


@figures.cached
def backfill_figure(table: Table, metric: str, path: Path) -> Path | None:
    """The backfilling curves of the orders of ``ORDER_STYLES`` (solid: random order, dashed: class-distance order),
    each method's old self-test C[k][k] marked at 0% (hollow) and its new self-test C[t][t] at 100% (star): for one
    update a panel per method, so that nineteen methods stay readable; for a sequence a panel per consecutive update
    (at most ``MAX_PANELS``, evenly spaced) with every method."""
    rows = [(row, mean_curves(row, metric)) for row in table.rows]
    rows = [(row, pairs) for row, pairs in rows if pairs]
    if not rows:
        return None
    updates = sorted({(p["old"], p["new"]) for _, pairs in rows for p in pairs})
    by_method = len(updates) == 1 and len(rows) > 1
    if len(updates) > MAX_PANELS:
        updates = [updates[round(i)] for i in np.linspace(0, len(updates) - 1, MAX_PANELS)]
    panels = len(rows) if by_method else len(updates)
    cols = min(panels, 5 if by_method else MAX_PANELS)
    grid = int(np.ceil(panels / cols))
    fig = Figure(figsize=(max(6.4, min(2.6 * cols + 0.6, 13.6)), 2.1 * grid + 1.0), dpi=figures.DPI, layout="constrained")
    axes = np.atleast_1d(fig.subplots(grid, cols, sharex=True, sharey=True, squeeze=False)).ravel()
    for i, (row, pairs) in enumerate(rows):
        colour, marker, _ = figures.method_style(i, len(rows))
        M = figures.mean_matrix(row, metric)
        for pair in (p for p in pairs if (p["old"], p["new"]) in updates):
            ax = axes[i if by_method else updates.index((pair["old"], pair["new"]))]
            x = 100 * np.asarray(pair["fractions"])
            for order, curve in ((o, c) for o, c in pair["curves"].items() if o in ORDER_STYLES):
                ax.plot(x, curve, ORDER_STYLES[order][0], color=colour, linewidth=1.5,
                        label=plain_label(row.label) if order == "random" and not by_method else None)
            if M is not None:
                ax.plot([0], [M[pair["old"]][pair["old"]]], marker, color=colour, fillstyle="none", clip_on=False)
                ax.plot([100], [M[pair["new"]][pair["new"]]], "*", color=colour, markersize=9, clip_on=False)
        if by_method:
            axes[i].set_title(plain_label(row.label), fontsize=9)
    if not by_method:
        for ax, (k, t) in zip(axes, updates):
            ax.set_title(f"model {k} → {t}", fontsize=9)
        axes[len(updates) - 1].legend(fontsize=7, loc="lower right")
    for ax in axes[panels:]:
        ax.set_visible(False)
    for ax in axes[:panels]:
        ax.grid(alpha=0.3)
    for ax in axes[(grid - 1) * cols:panels]:
        ax.set_xlabel("gallery refreshed (%)")
    for ax in axes[:panels:cols]:
        ax.set_ylabel(f"{metric_name(metric)} (%)")
    update = f", model {updates[0][0]} → {updates[0][1]}" if by_method else ""
    orders = dict.fromkeys(o for _, pairs in rows for p in pairs for o in p["curves"] if o in ORDER_STYLES)
    styles = ", ".join(f"{ORDER_STYLES[o][1]}: {o} order" for o in orders)
    fig.suptitle(f"{textwrap.shorten(plain_label(table.title), 100)}: backfilling curves{update}\n{styles}; hollow: old "
                 "self-test, star: new self-test", fontsize=9)
    return figures._save(fig, path)


def seed_aucs(row: Row, metric: str) -> dict[str, dict[int, float]]:
    """Per order, each seed's area under the curve (mean over the run's consecutive updates)."""
    found: dict[str, dict[int, list[float]]] = {}
    for record in row.finished:
        for pair in (record.backfill or {}).get("pairs", []):
            for order, area in pair["auc"].get(metric, {}).items():
                found.setdefault(order, {}).setdefault(record.seed, []).append(area)
    return {order: {seed: float(np.mean(a)) for seed, a in by_seed.items()} for order, by_seed in found.items()}


def seed_interval(values: dict[int, float]) -> tuple[float, float, float]:
    """Mean and 95% t-interval over seeds (NaN ends with one seed)."""
    v = np.asarray(list(values.values()), dtype=float)
    if len(v) < 2:
        return float(np.mean(v)), float("nan"), float("nan")
    half = float(stats.t.ppf(0.975, len(v) - 1) * np.std(v, ddof=1) / np.sqrt(len(v)))
    return float(np.mean(v)), float(np.mean(v)) - half, float(np.mean(v)) + half


def interval_text(mean: float, low: float, high: float, signed: bool = False) -> str:
    text = f"{mean:+.1f}" if signed else f"{mean:.1f}"
    return text + (f" [{low:+.1f}, {high:+.1f}]" if signed else f" [{low:.1f}, {high:.1f}]") * bool(np.isfinite(low))


def backfill_markdown(table: Table, metric: str) -> str:
    """The area under each method's backfilling curve per order with its interval over seeds, each other order
    against the first (random, by default; paired by seed, with the exact sign-flip test), beside the curve's ends
    (mean over updates). With more than :data:`WIDE_ORDERS` orders: the areas and differences in one compact table
    under a generated count of the orders against random, the intervals in a collapsed table below."""
    found = []
    for row in table.rows:
        pairs, aucs = mean_curves(row, metric), seed_aucs(row, metric)
        if pairs:
            orders = list(pairs[0]["auc"])
            found.append((row, orders, float(np.mean([p["curves"][orders[0]][0] for p in pairs])),
                          float(np.mean([p["curves"][orders[0]][-1] for p in pairs])), aucs))
    if not found:
        return ""
    orders = list(dict.fromkeys(o for _, mine, *_ in found for o in mine))
    intro = (f"Backfilling, {escape(metric_name(metric))}: area under the curve (mean accuracy over the refresh, %), with "
             "95% t-intervals over seeds; the difference of the orders is paired by seed, with the exact sign-flip "
             "test's p (with n seeds it cannot go below 2/2^n)")
    notes = "".join(f"\n\n{escape(text)}" for text in [p_floor_note(table, metric, len(orders) > WIDE_ORDERS)] if text)
    if len(orders) <= WIDE_ORDERS:
        lines = [[escape(row.label), f"{first:.1f}", *(interval_text(*seed_interval(aucs[o])) for o in mine),
                  *(difference_text(aucs, mine[0], o) for o in mine[1:]), f"{last:.1f}", len(next(iter(aucs.values())))]
                 for row, mine, first, last, aucs in found]
        headers = ["method", "0% (cross)", *(f"AUC {escape(o)}" for o in orders),
                   *(f"{escape(order)} − {escape(orders[0])}" for order in orders[1:]), "100% (new self)", "seeds"]
        return intro + "\n\n" + tabulate(lines, headers=headers, tablefmt="github", disable_numparse=True) + notes
    compact = [[escape(row.label), f"{first:.1f}", *(compact_cell(aucs, orders[0], o) for o in orders), f"{last:.1f}",
                len(next(iter(aucs.values())))] for row, _, first, last, aucs in found]
    legend = "; ".join(f"{SHORT_ORDERS.get(o, o)}: {o}" for o in orders if SHORT_ORDERS.get(o, o) != o)
    spelled = [[escape(row.label), escape(o), interval_text(*seed_interval(aucs[o])),
                difference_text(aucs, orders[0], o) if o != orders[0] else "-"]
               for row, _, _, _, aucs in found for o in orders if o in aucs]
    return (intro.replace("t-intervals over seeds", "t-intervals over seeds in the collapsed table below") + "\n\n"
            + escape(orders_finding(table, metric, orders[0])) + "\n\n"
            + tabulate(compact, headers=["method", "0%", *(escape(SHORT_ORDERS.get(o, o)) for o in orders), "100%",
                                         "seeds"], tablefmt="github", disable_numparse=True)
            + f"\n\n0%: the cross-test, 100%: the new self-test. Each order's cell: the area under the curve, and for the "
              f"other orders its difference to {escape(orders[0])} (mean over seeds; †: its t-interval excludes 0). "
              f"{escape(legend)}." + notes
            + f"\n\n<details><summary>every order with its interval, and against {escape(orders[0])}</summary>\n\n"
            + tabulate(spelled, headers=["method", "order", "AUC", f"− {escape(orders[0])}"], tablefmt="github",
                       disable_numparse=True) + "\n\n</details>")


def paired_difference(aucs: dict[str, dict[int, float]], first: str, order: str) -> dict[int, float]:
    """Seed -> the area of ``order`` minus that of ``first``, at the seeds that hold both."""
    return {s: aucs[order][s] - aucs[first][s] for s in sorted(set(aucs[first]) & set(aucs[order]))}


def difference_text(aucs: dict[str, dict[int, float]], first: str, order: str) -> str:
    """``order`` − ``first`` paired by seed: mean, 95% t-interval and the exact sign-flip p."""
    difference = paired_difference(aucs, first, order)
    return interval_text(*seed_interval(difference), signed=True) + f", p {sign_flip_p(np.array(list(difference.values()))):.2g}"


def compact_cell(aucs: dict[str, dict[int, float]], first: str, order: str) -> str:
    """The mean area of ``order``, and for another order its mean difference to ``first`` paired by seed (†: the
    difference's t-interval excludes 0); "-" where the row has no curve of the order."""
    if order not in aucs:
        return "-"
    mean = seed_interval(aucs[order])[0]
    if order == first:
        return f"{mean:.1f}"
    difference, low, high = seed_interval(paired_difference(aucs, first, order))
    return f"{mean:.1f} {difference:+.1f}" + "†" * bool(np.isfinite(low) and (low > 0 or high < 0))


def orders_finding(table: Table, metric: str, first: str) -> str:
    """One sentence per order against ``first`` (generated from :func:`order_differences`): for how many methods it
    raises and lowers the area, and how many of those differences have a t-interval over seeds that excludes 0."""
    found = order_differences(table, metric)
    parts = []
    for order in dict.fromkeys(o for _, o, *_ in found):
        mine = [interval for _, o, interval, _, _ in found if o == order]
        above = sum(mean > 0 for mean, _, _ in mine)
        below = sum(mean < 0 for mean, _, _ in mine)
        surely_above = sum(bool(np.isfinite(low) and low > 0) for _, low, _ in mine)
        surely_below = sum(bool(np.isfinite(high) and high < 0) for _, _, high in mine)
        parts.append(f"{order}: above {first} for {above} of {len(mine)} methods ({surely_above} with a t-interval "
                     f"above 0), below for {below} ({surely_below} below 0)")
    return (f"Each order against {first}, paired by seed ({plain_label(table.title)}): " + "; ".join(parts) + ".") \
        if parts else ""


def order_differences(table: Table, metric: str) -> list[tuple[str, str, tuple[float, float, float], float, int]]:
    """Per row and informed order: (label, order, (mean, low, high) of order − the first order paired by seed,
    the exact sign-flip p, seeds)."""
    found = []
    for row in table.rows:
        aucs = seed_aucs(row, metric)
        orders = list(aucs)
        for order in orders[1:]:
            if difference := paired_difference(aucs, orders[0], order):
                found.append((row.label, order, seed_interval(difference),
                              sign_flip_p(np.array(list(difference.values()))), len(difference)))
    return found


def p_floor_note(table: Table, metric: str, marked: bool = False) -> str:
    """Where a difference of the orders has a t-interval that excludes 0 but an exact p above 0.05: why both are
    printed (generated from the table; "" where there is none). ``marked``: the table marks them (†), so a long list
    is left out."""
    split = [(label, order, n) for label, order, (_, low, high), p, n in order_differences(table, metric)
             if np.isfinite(low) and (low > 0 or high < 0) and p > 0.05]
    if not split:
        return ""
    seeds = sorted({n for _, _, n in split})
    floor = ", ".join(f"{2 / 2 ** n:.2g} at {n} seeds" for n in seeds)
    named = "each marked † in the table" if marked and len(split) > LISTED_DIFFERENCES else \
        ", ".join(f"{label} {order}" for label, order, _ in split)
    return (f"{len(split)} of these differences ({named}) have a "
            f"t-interval that excludes 0 and an exact p above 0.05: the exact sign-flip test cannot go below 2/2^n "
            f"({floor}), so it cannot decide them at this many seeds; the t-interval does, assuming the seeds' "
            "differences are normal. Read them as suggestive, not decided.")


def seed_dips(row: Row, metric: str, seeds: set[int] | None = None) -> dict[str, dict[int, tuple[float, float]]]:
    """Per order, per seed (those in ``seeds``; None: all): the curve's lowest point minus the old self-test
    (points) and the % refreshed there (``metrics.live``: means over a sequence's updates)."""
    found: dict[str, dict[int, tuple[float, float]]] = {}
    for record in row.finished:
        if seeds is not None and record.seed not in seeds:
            continue
        values = live.backfill_values(record.backfill, record.matrices.get(metric), metric)
        for order in live.ORDERS:
            if f"dip_{order}" in values:
                found.setdefault(order, {})[record.seed] = (values[f"dip_{order}"], values[f"dip_at_{order}"])
    return found


def common_seeds(table: Table, metric: str) -> list[int]:
    """The seeds at which every row with backfilling curves of ``metric`` has them."""
    held = [{seed for by_seed in seed_dips(row, metric).values() for seed in by_seed} for row in table.rows]
    held = [seeds for seeds in held if seeds]
    return sorted(set.intersection(*held)) if held else []


def seeds_text(seeds: list[int]) -> str:
    """``0-2`` for consecutive seeds, else ``0, 2, 5``."""
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))


def regressions(table: Table, metric: str) -> list[dict]:
    """Per row and order over the table's common seeds: the lowest point of the curve against the old self-test
    (mean, 95% t-interval over seeds), the % refreshed there (mean) and the seeds where it is below."""
    seeds = set(common_seeds(table, metric))
    found = []
    for row in table.rows:
        for order, by_seed in seed_dips(row, metric, seeds).items():
            if order == live.BOUND:  # a ceiling, not a gallery that serves queries
                continue
            mean, low, high = seed_interval({s: dip for s, (dip, _) in by_seed.items()})
            found.append({"label": row.label, "order": order, "dip": (mean, low, high),
                          "at": float(np.mean([at for _, at in by_seed.values()])),
                          "below": sum(dip < 0 for dip, _ in by_seed.values()), "seeds": len(by_seed)})
    return found


def regression_finding(table: Table, metric: str) -> str:
    """One sentence per order, generated from :func:`regressions`: the rows whose lowest point is significantly below
    the old self-test (deepest first, with interval and % refreshed), and the rows never below it at any seed."""
    found, seeds = regressions(table, metric), common_seeds(table, metric)
    if not found:
        return ""
    sentences = []
    for order in dict.fromkeys(f["order"] for f in found):
        mine = [f for f in found if f["order"] == order]
        below = sorted((f for f in mine if f["dip"][2] < 0), key=lambda f: f["dip"][0])
        never = [f["label"] for f in mine if f["below"] == 0]
        parts = []
        if below:
            parts.append("significantly below the old self-test at the curve's lowest point: " + ", ".join(
                f"{f['label']} {interval_text(*f['dip'], signed=True)} points at {f['at']:.0f}% refreshed "
                f"(below in {f['below']} of {f['seeds']} seeds)" for f in below))
        else:
            parts.append("no method is significantly below the old self-test at the curve's lowest point")
        parts.append(("never below it at any seed: " + ", ".join(never)) if never else
                     "every method is below it at some seed")
        sentences.append(f"{order} order: " + "; ".join(parts) + ".")
    return (f"Regression during the refresh, {metric_name(metric)}, from the table below ({plain_label(table.title)}, "
            f"seeds {seeds_text(seeds)}, common to its rows): " + " ".join(sentences))


def regression_markdown(table: Table, metric: str) -> str:
    """The generated finding (:func:`regression_finding`) and its table: per method and order, the lowest point of
    the backfilling curve minus the old self-test C[k][k] (points, 95% t-interval over the common seeds) and the %
    refreshed there."""
    found = regressions(table, metric)
    if not found:
        return ""
    orders = list(dict.fromkeys(f["order"] for f in found))
    by_row: dict[str, dict[str, dict]] = {}
    for f in found:
        by_row.setdefault(f["label"], {})[f["order"]] = f
    if len(orders) > WIDE_ORDERS:  # one row per method and order, collapsed
        lines = [[escape(label), escape(o), f"{interval_text(*f['dip'], signed=True)}", f"{f['at']:.0f}%",
                  f"{f['below']} of {f['seeds']}"] for label, mine in by_row.items() for o, f in mine.items()]
        return (escape(regression_finding(table, metric)) + "\n\n<details><summary>the lowest point of every order's "
                "curve</summary>\n\n" + tabulate(lines, headers=["method", "order", "lowest − old self", "refreshed there",
                                                               "seeds below"], tablefmt="github", disable_numparse=True)
                + "\n\n</details>")
    lines = [[escape(label), *(f"{interval_text(*mine[o]['dip'], signed=True)} at {mine[o]['at']:.0f}%, "
                               f"{mine[o]['below']} of {mine[o]['seeds']} below" if o in mine else "-" for o in orders)]
             for label, mine in by_row.items()]
    headers = ["method", *(f"{o}: lowest − old self" for o in orders)]
    return (escape(regression_finding(table, metric)) + "\n\n"
            + tabulate(lines, headers=headers, tablefmt="github", disable_numparse=True))


def index_gaps(row: Row, metric: str) -> dict[str, dict[str, dict[int, tuple[float, float]]]]:
    """Per index kind, per kind of entry (cross-tests k < t, self-tests k = t), per seed: (exact, through the index),
    each the mean over the entries."""
    found: dict[str, dict[str, dict[int, tuple[float, float]]]] = {}
    for record in row.finished:
        exact = np.array(record.matrices.get(metric, []), dtype=float)
        for kind, by_metric in ((record.index or {}).get("matrices") or {}).items():
            if metric not in by_metric:
                continue
            through = np.array(by_metric[metric], dtype=float)
            t, k = np.tril_indices(len(exact))
            for which, mask in (("cross", k < t), ("self", k == t)):
                e, i = exact[t[mask], k[mask]], through[t[mask], k[mask]]
                both = np.isfinite(e) & np.isfinite(i)
                if both.any():
                    found.setdefault(kind, {}).setdefault(which, {})[record.seed] = (float(np.mean(e[both])),
                                                                                   float(np.mean(i[both])))
    return found


def index_markdown(table: Table, metric: str) -> str:
    """Exact scores, scores through each index and their gap (exact − index, points, with its 95% t-interval over
    seeds) per method."""
    lines = []
    for row in table.rows:
        for kind, by in index_gaps(row, metric).items():
            cells = []
            for which in ("cross", "self"):
                if which not in by:
                    cells.append("–")
                    continue
                seeds = by[which]
                gap = interval_text(*seed_interval({s: e - i for s, (e, i) in seeds.items()}), signed=True)
                cells.append(f"{np.mean([e for e, _ in seeds.values()]):.1f} / "
                             f"{np.mean([i for _, i in seeds.values()]):.1f} / {gap}")
            lines.append([escape(row.label), escape(kind), *cells])
    if not lines:
        return ""
    headers = ["method", "index", "cross-tests (k < t)", "self-tests (k = t)"]
    return (f"Retrieval through an index, {escape(metric_name(metric))}: exact / index / gap (exact − index, points, "
            "with its 95% t-interval over seeds), means over the entries C[t][k] and seeds\n\n"
            + tabulate(lines, headers=headers, tablefmt="github", disable_numparse=True)
            + "".join(f"\n\n{escape(text)}" for text in [flat_gap_note(table, metric)] if text))


def flat_gap_note(table: Table, metric: str) -> str:
    """Why a flat index can miss exact search (generated from the rows whose flat gap's interval excludes 0; ""
    where none does)."""
    found = []
    for row in table.rows:
        seeds = index_gaps(row, metric).get("flat", {})
        for which in ("cross", "self"):
            if which in seeds:
                mean, low, high = seed_interval({s: e - i for s, (e, i) in seeds[which].items()})
                if np.isfinite(low) and (low > 0 or high < 0):
                    found.append(f"{row.label} {mean:+.1f} [{low:+.1f}, {high:+.1f}] ({which}-tests)")
    if not found:
        return ""
    return ("A flat index searches exhaustively, but it scores the inner product in float32 (FAISS); the exact "
            "scores use the method's own similarity, in its own precision. A flat gap whose interval excludes 0 ("
            + "; ".join(found) + ") means that float32 inner products rank these features otherwise: features whose "
            "order lies in tiny differences (e.g. near one-hot softmax outputs, which an exact float64 score still "
            "orders) tie or swap in float32. It is the precision of the index, not an approximate search.")


def upgrade_sections(table: Table, page: str, out: Path) -> list[str]:
    """The Markdown parts of a table's page for the records that hold curves or index scores (none otherwise)."""
    parts = []
    for metric in table.metrics:
        if text := backfill_markdown(table, metric):
            path = backfill_figure(table, metric, out / "figures" / figures.figure_name(page, table, metric, "backfill"))
            parts += figures.with_figure(text, path, f"{escape(table.title)}: backfilling curves, "
                                                     f"{escape(metric_name(metric))}")
        if text := curve_steps.steps_markdown(table, metric):
            path = curve_steps.steps_figure(table, metric, out / "figures" / figures.figure_name(page, table, metric,
                                                                                               "backfill-orders"))
            parts += figures.with_figure(text, path, f"{escape(table.title)}: backfilling curves by refresh order, "
                                                     f"{escape(metric_name(metric))}")
        if text := regression_markdown(table, metric):
            parts.append(text)
        if text := index_markdown(table, metric):
            parts.append(text)
    return parts
