"""Cross- and self-tests through a FAISS index (``scenario.index``), beside the exact matrix: for every entry
C[t][k], an index of each configured kind is built and trained on the gallery features the entry compares (model
k's, as the method compares them with model t's queries) and searched with model t's queries
(``metrics.index``). Only CMC@k metrics: an index returns top-k lists, not the full ranking mAP needs.
"""
from __future__ import annotations

import math
from typing import Any

from benchbackcompat.config import IndexConfig
from benchbackcompat.engine.features import FeatureBank
from benchbackcompat.method import Method
from benchbackcompat.metrics import index as ix
from benchbackcompat.metrics import outcomes
from benchbackcompat.scenarios.data import ScenarioData


def index_matrices(method: Method, bank: FeatureBank, data: ScenarioData, protocol: str, metrics: list[str],
                   config: IndexConfig) -> dict[str, Any]:
    """``{"sizes": effective IVF-PQ sizes, "matrices": {kind: {metric: C}}}`` for the CMC@k ``metrics`` (NaN above
    the diagonal and where the feature sizes of an entry differ)."""
    cmc = [m for m in metrics if m.startswith("cmc@")]
    loo = protocol == "loo"
    query_labels = data.query.labels
    gallery_labels = query_labels if loo or data.gallery is None else data.gallery.labels
    T = len(bank)
    result = {kind: {m: [[math.nan] * T for _ in range(T)] for m in cmc} for kind in config.kinds}
    depth = max(int(m[4:]) for m in cmc) + loo  # one more under leave-one-out: the query's own item is dropped
    for t in range(T):
        query_t = bank.query(t)
        for k in range(t + 1):
            query, gallery = method.pair_features(query_t, bank.stored(k), t, k)
            if query.shape[1] != gallery.shape[1]:
                continue
            query, gallery = method.index_features(query, gallery)
            for kind in config.kinds:
                neighbours = ix.search(query, gallery, kind, config, depth)
                for metric in cmc:
                    hits = ix.cmc_hits(neighbours, query_labels, gallery_labels, int(metric[4:]), exclude_self=loo)
                    result[kind][metric][t][k] = outcomes.score(hits)
    return {"sizes": ix.effective(config, len(gallery_labels)), "matrices": result}
