"""Retrieval through a FAISS index (``pip install 'benchbackcompat[faiss]'``): CMC@k from top-k lists.

The index is built on the gallery features of an entry (for a cross-test: the old gallery that a deployed index
holds) and its coarse quantiser and codebooks are trained on them; the queries, from another model for a
cross-test, search it. Every method's similarity is mapped to a maximum inner product first
(``Method.index_features``): cosine on L2-normalised features; the Lorentz geodesic distance, which is monotone
decreasing in the Lorentz inner product -x0 y0 + <x_s, y_s>, on the query with its time coordinate negated.
``flat`` is exact search; ``ivf-pq`` visits ``nprobe`` of ``nlist`` inverted lists and compares product-quantised
codes (``pq_m`` sub-quantisers of ``pq_bits`` bits; features zero-padded to a multiple of ``pq_m``, which no inner
product sees). On galleries too small for the requested sizes, ``nlist`` is capped at a 39th of the gallery
(faiss's training floor per centroid) and ``pq_bits`` at log2 of it; :func:`effective` says what was used.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import Tensor

from benchbackcompat.errors import BenchError

INSTALL = "pip install 'benchbackcompat[faiss]'"


def require_faiss() -> Any:
    """The faiss module, or a one-line error naming the install command."""
    try:
        import faiss
    except ImportError:
        raise BenchError(f"the index option needs faiss, which is not installed: {INSTALL}") from None
    return faiss


def effective(config: Any, items: int) -> dict[str, int]:
    """The IVF-PQ sizes used on a gallery of ``items`` (``config``: an ``IndexConfig``)."""
    nlist = max(1, min(config.nlist, items // 39))
    return {"nlist": nlist, "nprobe": min(config.nprobe, nlist), "pq_m": config.pq_m,
            "pq_bits": max(1, min(config.pq_bits, int(math.log2(max(2, items)))))}


def search(query: Tensor, gallery: Tensor, kind: str, config: Any, k: int) -> np.ndarray:
    """The ``k`` gallery indices of largest inner product for each query (-1 where the index returns fewer)."""
    faiss = require_faiss()
    faiss.omp_set_num_threads(torch.get_num_threads())
    q, g = (np.ascontiguousarray(x.detach().float().cpu().numpy()) for x in (query, gallery))
    if kind == "flat":
        index = faiss.IndexFlatIP(g.shape[1])
    else:
        sizes = effective(config, len(g))
        pad = -g.shape[1] % sizes["pq_m"]
        q, g = (np.ascontiguousarray(np.pad(x, ((0, 0), (0, pad)))) for x in (q, g))
        quantiser = faiss.IndexFlatIP(g.shape[1])
        index = faiss.IndexIVFPQ(quantiser, g.shape[1], sizes["nlist"], sizes["pq_m"], sizes["pq_bits"],
                                 faiss.METRIC_INNER_PRODUCT)
        index.cp.min_points_per_centroid = index.pq.cp.min_points_per_centroid = 1  # sizes capped: no warnings
        index.train(g)
        index.nprobe = sizes["nprobe"]
    index.add(g)
    return index.search(q, min(k, len(g)))[1]


def cmc_hits(neighbours: np.ndarray, query_labels: Tensor, gallery_labels: Tensor, k: int,
             exclude_self: bool = False) -> np.ndarray:
    """Per query, whether one of its first ``k`` neighbours (after dropping the query's own item under
    leave-one-out) has its label."""
    ql, gl = query_labels.cpu().numpy(), gallery_labels.cpu().numpy()
    found = neighbours.copy()
    if exclude_self:
        own = found == np.arange(len(found))[:, None]
        found = np.where(own, -1, found)
        order = np.argsort(found < 0, axis=1, kind="stable")  # the returned neighbours first, in their order
        found = np.take_along_axis(found, order, axis=1)
    found = found[:, :k]
    same = (found >= 0) & (gl[np.maximum(found, 0)] == ql[:, None])
    return same.any(1)
