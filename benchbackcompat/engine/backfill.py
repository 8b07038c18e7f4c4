"""Backfilling curves of a cell (``scenario.backfill``): for every consecutive update k = t-1 -> t, the new model's
queries against a gallery refreshed in batches, in each configured order (``metrics.backfill``).

Features are the ones already extracted for the matrix (no model runs again): refreshing an item swaps its
model-k feature for its model-t feature. The curve's first point is the cross-test C[t][k] and its last the new
self-test C[t][t], scored by the same code.
"""
from __future__ import annotations

import time
from typing import Any

import torch

from benchbackcompat.config import BackfillConfig
from benchbackcompat.engine.evaluate import score
from benchbackcompat.engine.features import FeatureBank
from benchbackcompat.method import Method
from benchbackcompat.metrics import backfill as bf
from benchbackcompat.runtime.logs import log
from benchbackcompat.runtime.seeds import derive_seed, generator
from benchbackcompat.scenarios.data import ScenarioData


def refresh_orders(method: Method, bank: FeatureBank, data: ScenarioData, old: int, seed: int,
                   orders: list[str]) -> dict[str, torch.Tensor]:
    """Each order of the gallery items of model ``old``'s update (the random one drawn from the cell's seed)."""
    gallery = method.pair_features(bank.query(old), bank.stored(old), old, old)[1]
    labels = data.query.labels if data.gallery is None else data.gallery.labels
    make = {
        "random": lambda: bf.random_order(len(gallery), generator(derive_seed(seed, "backfill", old))),
        "class-distance": lambda: bf.class_distance_order(gallery, labels, method.similarity(), method.templates()),
        "class-balanced": lambda: bf.class_balanced_order(gallery, labels, method.similarity(), method.templates()),
    }
    return {name: make[name]() for name in orders}


def backfill_curves(method: Method, bank: FeatureBank, data: ScenarioData, protocol: str, metrics: list[str],
                    seed: int, config: BackfillConfig, label: str = "") -> dict[str, Any]:
    """``{"pairs": [{"old": k, "new": t, "fractions": [...], "curves": {metric: {order: [%...]}},
    "auc": {metric: {order: %}}}]}``, one pair per consecutive update; logs one line (the cell's ``label``)."""
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
        curves: dict[str, dict[str, list[float]]] = {m: {} for m in metrics}
        ends: dict[tuple[str, int], float] = {}  # nothing / everything refreshed: the same in every order
        for name, order in refresh_orders(method, bank, data, k, seed, config.orders).items():
            for count in counts:
                refreshed = torch.zeros(len(g_old), dtype=torch.bool)
                refreshed[order[:count]] = True
                gallery = bf.pack(g_old, g_new, refreshed)
                end = count in (0, len(g_old))
                for metric in metrics:
                    value = ends.get((metric, count)) if end else None
                    if value is None:
                        value = score(metric, protocol, query, gallery, data, mixed, None, templates=templates)[0]
                        if end:
                            ends[metric, count] = value
                    curves[metric].setdefault(name, []).append(value)
        fractions = [c / len(g_old) for c in counts]
        pairs.append({"old": k, "new": t, "fractions": fractions, "curves": curves,
                      "auc": {m: {name: bf.area_under_curve(fractions, curve) for name, curve in by_order.items()}
                              for m, by_order in curves.items()}})
    log.info(f"  {label} backfill: {summary(pairs, metrics[0])}, {time.perf_counter() - started:.1f} s")
    return {"pairs": pairs}


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
