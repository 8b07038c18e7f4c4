"""Which queries an update breaks, read from stored results: the flip rates of every update pair as a DataFrame, and
the flipped queries of one pair (``metrics.flips``: Yan et al., CVPR 2021; Zhang et al., ICLR 2022)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

import numpy as np

from benchbackcompat import evaluations
from benchbackcompat.errors import BenchError
from benchbackcompat.metrics import flips, live, outcomes
from benchbackcompat.record import CellRecord, FinishedRecord
from benchbackcompat.results.frames import CELL_COLUMNS, Paths, _cells, _pandas, read_records

if TYPE_CHECKING:
    import pandas as pd

FLIP_COLUMNS = [*CELL_COLUMNS[:12], "metric", "pairs", "query_model", "gallery_model", "queries", *flips.KEYS]
PAIRS = {"consecutive": False, "first gallery": True}  # the ``pairs`` column: k = t - 1, or k = 0 (never backfilled)


def flip_frame(records: Iterable[CellRecord]) -> pd.DataFrame:
    """One row per finished cell x hit metric x update pair: ``pairs`` "consecutive" (t, k = t - 1) and, for a sequence
    of three models or more, "first gallery" (t, k = 0 for every t >= 1: a team that never backfills); ``queries``
    compared and the flip rates (%) old self -> cross (``nfr_cross``, ``pfr_cross``: C[k][k] -> C[t][k]) and old self
    -> new self (``nfr_self``, ``pfr_self``: C[k][k] -> C[t][t])."""
    rows = []
    for record, fields in _cells(records):
        cell = {k: v for k, v in fields.items() if k in FLIP_COLUMNS}
        stored = record.outcomes if isinstance(record, FinishedRecord) else {}
        for metric in (m for m in stored if flips.defined_for(m)):
            sequence = len((stored[metric] or {}).get("C") or []) > 2
            try:
                rows += [{**cell, "metric": metric, "pairs": name, **pair} for name, first in PAIRS.items()
                         if sequence or not first for pair in flips.pair_rates(stored[metric], first)]
            except BenchError:
                continue  # outcomes that are not hits
    return _pandas().DataFrame(rows, columns=FLIP_COLUMNS)


def load_flips(path: Paths) -> pd.DataFrame:
    """:func:`flip_frame` of one or several results directories."""
    return flip_frame(read_records(path))


def flipped_queries(record: FinishedRecord, metric: str, query_model: int = 1, gallery_model: int | None = None,
                    after: Literal["cross", "self"] = "cross") -> tuple[np.ndarray, np.ndarray]:
    """(negative, positive): the indices, in the evaluated query set, of the queries that the update from model
    ``gallery_model`` (default ``query_model - 1``) to ``query_model`` breaks and fixes, old self -> ``after``
    (cross: the new model's queries on the old gallery; self: on a fully backfilled gallery)."""
    k = query_model - 1 if gallery_model is None else gallery_model
    entries = (record.outcomes.get(metric) or {}).get("C") or []
    t_entry = k if after == "cross" else query_model
    if not 0 <= k < query_model < len(entries) or entries[k][k] is None or entries[query_model][t_entry] is None:
        raise BenchError(f"{record.label} stores no per-query {metric} outcomes for the update {k} -> {query_model}")
    negative, positive, _ = flips.flip_masks(outcomes.decode(entries[k][k]), outcomes.decode(entries[query_model][t_entry]))
    return np.flatnonzero(negative), np.flatnonzero(positive)


def flip_lines(record: FinishedRecord, metric: str) -> list[str]:
    """One line per update pair of ``metric`` with its flip rates (``benchbackcompat show``); [] where flips are not
    defined (average precisions) or no per-query outcomes are stored."""
    stored = record.outcomes.get(metric) or {}
    try:
        pairs = flips.pair_rates(stored) if flips.defined_for(metric) else []
        first = flips.pair_rates(stored, first=True) if pairs and len(stored.get("C") or []) > 2 else []
    except BenchError:
        return []
    lines = [f"  flips {p['gallery_model']} -> {p['query_model']} ({p['queries']} queries, %): old self -> cross NFR "
             f"{p['nfr_cross']:.2f}, PFR {p['pfr_cross']:.2f}; old self -> new self NFR {p['nfr_self']:.2f}, "
             f"PFR {p['pfr_self']:.2f}" for p in pairs]
    return lines + ["  flips on the first gallery, never backfilled (C[0][0] -> C[t][0], %): " + "; ".join(
        f"t = {p['query_model']} NFR {p['nfr_cross']:.2f}, PFR {p['pfr_cross']:.2f}" for p in first)] * bool(first)


def live_lines(record: FinishedRecord, metric: str) -> list[str]:
    """The record's live-gallery statistics of ``metric`` (``metrics.live``): one line per backfilling order (its
    area, its lowest point against the old self-test and, where the record holds per-step outcomes, its highest NFR)
    and one for the index gaps; [] without them."""
    found = evaluations.statistics(record, metric)
    lines = [f"  backfill {order} order: AUC {found[f'auc_{order}']:.2f}%"
             + (f", lowest point {found[f'dip_{order}']:+.2f} points against the old self-test at "
                f"{found[f'dip_at_{order}']:.0f}% refreshed" if f"dip_{order}" in found else "")
             + (f", NFR up to {found[f'nfr_max_{order}']:.2f}% along it" if f"nfr_max_{order}" in found else "")
             for order in live.ORDERS if f"auc_{order}" in found]
    gaps = [f"{kind} {found[f'gap_cross_{kind}']:+.2f} (cross-tests), {found[f'gap_self_{kind}']:+.2f} (self-tests)"
            for kind in live.INDEX_KINDS if f"gap_cross_{kind}" in found and f"gap_self_{kind}" in found]
    return lines + (["  index gap, exact − through the index (points): " + "; ".join(gaps)] if gaps else [])
