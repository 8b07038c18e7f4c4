"""Cross- and self-tests through a FAISS or Milvus index (``scenario.index``), beside the exact matrix: for every entry
C[t][k], an index of each configured kind is built and trained on the gallery features the entry compares (model
k's, as the method compares them with model t's queries) and searched with model t's queries
(``metrics.index``). Only CMC@k metrics: an index returns top-k lists, not the full ranking mAP needs.
"""
from __future__ import annotations

import math
import time
from typing import Any

from benchbackcompat.config import IndexConfig
from benchbackcompat.engine.features import FeatureBank
from benchbackcompat.engine.timing import Throughput
from benchbackcompat.method import Method
from benchbackcompat.metrics import index as ix
from benchbackcompat.metrics import milvus, outcomes
from benchbackcompat.runtime.logs import log
from benchbackcompat.scenarios.data import ScenarioData


def index_matrices(method: Method, bank: FeatureBank, data: ScenarioData, protocol: str, metrics: list[str],
                   config: IndexConfig, label: str = "", timing: Throughput | None = None) -> dict[str, Any]:
    """``{"sizes": effective IVF-PQ sizes, "matrices": {kind: {metric: C}}}`` for the CMC@k ``metrics`` (NaN above
    the diagonal and where the feature sizes of an entry differ); logs one line (the cell's ``label``). ``timing``:
    counts, per kind, the gallery items indexed, the queries searched and the seconds of both."""
    started = time.perf_counter()
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
            as_query = method.index_features(gallery, gallery)[0]  # the criterion queries probe IVF lists with
            query, gallery = method.index_features(query, gallery)
            for kind in config.kinds:
                built = time.perf_counter()
                neighbours = (milvus.search(query, gallery, kind, config, depth, config.milvus_uri)
                              if config.backend == "milvus" else ix.search(query, gallery, kind, config, depth, as_query))
                if timing is not None:
                    timing.add(kind, len(gallery), time.perf_counter() - built, queries=len(query))
                for metric in cmc:
                    hits = ix.cmc_hits(neighbours, query_labels, gallery_labels, int(metric[4:]), exclude_self=loo)
                    result[kind][metric][t][k] = outcomes.score(hits)
    log.info(f"  {label} index: {summary(result, cmc[0])}, {time.perf_counter() - started:.1f} s")
    return {"sizes": ix.effective(config, len(gallery_labels)), "matrices": result}


def summary(result: dict[str, dict[str, list[list[float]]]], metric: str) -> str:
    """One line on the scores of ``metric`` through each index: the means over the cross-tests (k < t) and over
    the self-tests (k = t) that it scored."""
    parts = []
    for kind, by_metric in result.items():
        C = by_metric[metric]
        cross = [C[t][k] for t in range(len(C)) for k in range(t) if not math.isnan(C[t][k])]
        own = [C[t][t] for t in range(len(C)) if not math.isnan(C[t][t])]
        parts.append(f"{kind} cross {_mean(cross)}, self {_mean(own)}")
    return f"{metric} through the index (mean over the entries): " + "; ".join(parts)


def _mean(values: list[float]) -> str:
    return f"{sum(values) / len(values):.2f}" if values else "-"
