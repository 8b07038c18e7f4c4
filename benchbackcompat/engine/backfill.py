"""Backfilling curves of a cell (``scenario.backfill``): for every consecutive update k = t-1 -> t, the new model's
queries against a gallery refreshed in batches, in each configured order (``metrics.backfill``).

Features are the ones already extracted for the matrix (no model runs again): refreshing an item swaps its
model-k feature for its model-t feature. The curve's first point is the cross-test C[t][k] and its last the new
self-test C[t][t], scored by the same code. Every step keeps its per-query outcomes, beside those of the old
self-test C[k][k] (the flips along the curve, ``metrics.curve_steps``; hit metrics only: a float16 average
precision per query and step would make a record ten times heavier), and the random order may be drawn several
times (``permutations``), each permutation its own curve. ``oracle-bound`` among the orders adds the ceiling of every
order's curve (``metrics.refresh.least_refreshes``), for top-1 hits.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from benchbackcompat.config import BackfillConfig
from benchbackcompat.engine.evaluate import score
from benchbackcompat.engine.features import FeatureBank
from benchbackcompat.method import Method
from benchbackcompat.metrics import backfill as bf
from benchbackcompat.metrics import flips, live, outcomes, refresh
from benchbackcompat.runtime.logs import log
from benchbackcompat.runtime.seeds import derive_seed, generator
from benchbackcompat.scenarios.data import ScenarioData


def refresh_orders(method: Method, bank: FeatureBank, data: ScenarioData, old: int, seed: int,
                   orders: list[str], counts: list[int] | None = None) -> dict[str, torch.Tensor]:
    """Each order of the gallery items of model ``old``'s update old -> old + 1 (the random one drawn from the cell's
    seed; ``metrics.refresh`` for the literature's orders; ``counts``: the items refreshed after each batch, which
    the greedy oracle fills batch by batch, default ten batches)."""
    gallery = method.pair_features(bank.query(old), bank.stored(old), old, old)[1]
    labels = data.query.labels if data.gallery is None else data.gallery.labels
    similarity, templates = method.similarity(), method.templates()
    counts = bf.refresh_counts(len(gallery), 10) if counts is None else counts

    def learned() -> torch.Tensor:
        renewed = method.pair_features(bank.query(old + 1), bank.stored(old + 1), old + 1, old + 1)[1]
        target = refresh.class_fit_gain(gallery, renewed, labels, similarity, templates)
        return refresh.learned_order(gallery, target, generator(derive_seed(seed, "learned", old)))

    def oracle() -> torch.Tensor:
        query = bank.query(old + 1)
        q_old, g_old = method.pair_features(query, bank.stored(old), old + 1, old)
        q_new, g_new = method.pair_features(query, bank.stored(old + 1), old + 1, old + 1)
        return refresh.oracle_order(similarity(q_old, g_old), similarity(q_new, g_new), data.query.labels, labels,
                                    counts, loo=data.gallery is None)

    make = {
        "random": lambda: bf.random_order(len(gallery), generator(derive_seed(seed, "backfill", old))),
        "class-distance": lambda: bf.class_distance_order(gallery, labels, similarity, templates),
        "class-balanced": lambda: bf.class_balanced_order(gallery, labels, similarity, templates),
        "uncertainty": lambda: refresh.uncertainty_order(gallery, labels, similarity, templates),
        "hbct-uncertainty": lambda: refresh.hbct_uncertainty_order(gallery, labels, similarity, templates),
        "learned": learned,
        "oracle": oracle,
    }
    return {name: make[name]() for name in orders}


def further_permutations(items: int, seed: int, old: int, count: int) -> list[torch.Tensor]:
    """The random order's permutations after the first (``random_order``'s), ``count`` in all, each from its own
    seed."""
    return [bf.random_order(items, generator(derive_seed(seed, "backfill", old, "permutation", p)))
            for p in range(1, count)]


def backfill_curves(method: Method, bank: FeatureBank, data: ScenarioData, protocol: str, metrics: list[str],
                    seed: int, config: BackfillConfig, label: str = "") -> dict[str, Any]:
    """``{"pairs": [{"old": k, "new": t, "fractions": [...], "curves": {metric: {order: [%...]}},
    "auc": {metric: {order: %}}, "outcomes": {metric: {order: [encoded per step]}}, "old_self": {metric: encoded},
    "permutations": {metric: [{"curve", "auc", "outcomes"}]}}]}``, one pair per consecutive update (``record.Backfill``;
    permutations only with ``config.permutations`` > 1 and the random order); logs one line (the cell's ``label``)."""
    started = time.perf_counter()
    similarity, templates = method.similarity(), method.templates()
    pairs = []
    for t in range(1, len(bank)):
        k = t - 1
        query_t = bank.query(t)
        q_old, g_old = method.pair_features(query_t, bank.stored(k), t, k)
        q_new, g_new = method.pair_features(query_t, bank.stored(t), t, t)
        mixed, query = bf.mixed_similarity(similarity, q_old, q_new), bf.pack(q_old, q_new)
        counts = bf.refresh_counts(len(g_old), config.steps)
        fractions = [c / len(g_old) for c in counts]
        ends: dict[tuple[str, int], tuple[float, Any]] = {}  # nothing / everything refreshed: the same in every order

        def curve(order: torch.Tensor) -> dict[str, tuple[list[float], list[Any]]]:
            """Per metric, the curve's values and per-query outcomes at every count of refreshed items."""
            found: dict[str, tuple[list[float], list[Any]]] = {m: ([], []) for m in metrics}
            for count in counts:
                refreshed = torch.zeros(len(g_old), dtype=torch.bool)
                refreshed[order[:count]] = True
                gallery = bf.pack(g_old, g_new, refreshed)
                end = count in (0, len(g_old))
                for metric in metrics:
                    scored = ends.get((metric, count)) if end else None
                    if scored is None:
                        scored = score(metric, protocol, query, gallery, data, mixed, None, templates=templates)
                        if end:
                            ends[metric, count] = scored
                    found[metric][0].append(scored[0])
                    found[metric][1].append(scored[1])
            return found

        orders = [name for name in config.orders if name != live.BOUND]
        by_order = {name: curve(order) for name, order in refresh_orders(method, bank, data, k, seed, orders,
                                                                            counts).items()}
        if live.BOUND in config.orders:
            least = refresh.least_refreshes(similarity(q_old, g_old), similarity(q_new, g_new), data.query.labels,
                                            data.query.labels if data.gallery is None else data.gallery.labels,
                                            loo=protocol == "loo")
            by_order[live.BOUND] = ceiling(refresh.bound_hits(least, counts).numpy(),
                                              {m: ends.get((m, 0)) for m in metrics}, protocol)
        drawn = [curve(order) for order in further_permutations(len(g_old), seed, k, config.permutations)] \
            if "random" in by_order else []
        q_kk, g_kk = method.pair_features(bank.query(k), bank.stored(k), k, k)
        old_self = {m: score(m, protocol, q_kk, g_kk, data, similarity, None, templates=templates)[1] for m in metrics}
        pair = {"old": k, "new": t, "fractions": fractions,
                "curves": {m: {name: found[m][0] for name, found in by_order.items() if m in found} for m in metrics},
                "auc": {m: {name: bf.area_under_curve(fractions, found[m][0]) for name, found in by_order.items()
                            if m in found} for m in metrics}}
        kept = [m for m in metrics if flips.defined_for(m) and old_self[m] is not None
                and all(o is not None for found in [*by_order.values(), *drawn] if m in found for o in found[m][1])]
        if kept:
            pair["outcomes"] = {m: {name: [outcomes.encode(o) for o in found[m][1]] for name, found in by_order.items()
                                    if m in found} for m in kept}
            pair["old_self"] = {m: outcomes.encode(old_self[m]) for m in kept}
        if drawn:
            pair["permutations"] = {m: [{"curve": found[m][0], "auc": bf.area_under_curve(fractions, found[m][0]),
                                         **({"outcomes": [outcomes.encode(o) for o in found[m][1]]} if m in kept else {})}
                                        for found in drawn] for m in metrics}
        pairs.append(pair)
    log.info(f"  {label} backfill: {summary(pairs, metrics[0])}, {time.perf_counter() - started:.1f} s")
    return {"pairs": pairs}


def ceiling(hits: np.ndarray, cross: dict[str, tuple[float, Any] | None],
            protocol: str) -> dict[str, tuple[list[float], list[Any]]]:
    """The oracle bound's curve and per-step outcomes (steps x queries ``hits``, ``refresh.bound_hits``) for each
    metric it is defined for, the queries the cross-test (``cross``: the metric's score at nothing refreshed) skips
    skipped too."""
    found: dict[str, tuple[list[float], list[Any]]] = {}
    for metric, scored in cross.items():
        if metric not in refresh.BOUND_METRICS or protocol not in ("loo", "nn") or scored is None or scored[1] is None:
            continue
        skipped = np.isnan(np.asarray(scored[1], dtype=float))
        steps = [np.where(skipped, np.nan, step.astype(float)) if skipped.any() else step for step in hits]
        found[metric] = ([100.0 * float(np.nanmean(step)) for step in steps], steps)
    return found


def summary(pairs: list[dict[str, Any]], metric: str) -> str:
    """One line on the curves of ``metric``: per order the area and the lowest point, means over the updates."""
    orders = list(pairs[0]["auc"][metric]) if pairs else []
    parts = []
    for order in orders:
        lows = [min(p["curves"][metric][order]) for p in pairs]
        at = [100 * p["fractions"][p["curves"][metric][order].index(low)] for p, low in zip(pairs, lows)]
        parts.append(f"{order} AUC {sum(p['auc'][metric][order] for p in pairs) / len(pairs):.2f}, lowest "
                     f"{sum(lows) / len(lows):.2f} at {sum(at) / len(at):.0f}% refreshed")
    return (f"{len(pairs)} update{'s' * (len(pairs) != 1)}, {metric}: " + "; ".join(parts)) if parts else "no update"
