"""Retrieval through a FAISS index (``pip install 'benchbackcompat[faiss]'``): CMC@k from top-k lists.

The index is built on the gallery features of an entry (for a cross-test: the old gallery that a deployed index
holds) and its coarse quantiser and codebooks are trained on them; the queries, from another model for a
cross-test, search it. Every method's similarity is mapped to a maximum inner product first
(``Method.index_features``): cosine on L2-normalised features; the Lorentz geodesic distance, which is monotone
decreasing in the Lorentz inner product -x0 y0 + <x_s, y_s>, on the query with its time coordinate negated.
``flat`` is exact search; ``ivf-pq`` visits ``nprobe`` of ``nlist`` inverted lists and compares product-quantised
codes (``pq_m`` sub-quantisers of ``pq_bits`` bits; features zero-padded to a multiple of ``pq_m``, which no inner
product sees).

**One criterion for lists.** An inverted list must hold the items that the queries probing it look for: a query
probes the lists whose centroids c maximise <q', c> (q' its mapped features), so a gallery item g must join the list
that maximises the same similarity with g as a query sees it, <g', c>. Where the mapping is symmetric (cosine, PSP)
g' is the stored vector and FAISS's own k-means and assignment do that. Where it is not (Lorentz: q' = (-q0, q_s),
stored g = (g0, g_s), and <q', g> = -q0 g0 + <q_s, g_s> = <q, g>_L), FAISS would file g by <g, c> = g0 c0 + <g_s, c_s>,
a criterion no query uses. There the lists come from Lloyd iterations on that one criterion, started from FAISS's
k-means of the stored vectors: each item joins the list j of largest <g', c_j>, and c_j is the mean of its members'
stored vectors, so that <x', c_j> = (1/|L_j|) sum_{g in L_j} <x', g>, the mean similarity of x to the list's
members, for items and queries alike (for Lorentz, -<x, c_j>_L is the mean of cosh d(x, g) over the list: the list
nearest x on average). Items are filed with those assignments, and the product codes are trained on the residuals
g - c_j to their own lists.

On galleries too small for the requested sizes, ``nlist`` is capped at a 39th of the gallery
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


def search(query: Tensor, gallery: Tensor, kind: str, config: Any, k: int,
           as_query: Tensor | None = None) -> np.ndarray:
    """The ``k`` gallery indices of largest inner product for each query (-1 where the index returns fewer).
    ``as_query``: the gallery mapped as queries are (:func:`build`)."""
    q = float32_rows(query)
    index = build(gallery, kind, config, as_query)
    if kind != "flat":
        q = _pad(q, index.d)
    return index.search(q, min(k, index.ntotal))[1]


def build(gallery: Tensor, kind: str, config: Any, as_query: Tensor | None = None) -> Any:
    """The filled FAISS index of ``kind`` on the stored ``gallery``; ``as_query``, the gallery mapped as queries
    are, files the items into IVF lists by the criterion queries probe with where it differs from ``gallery``."""
    faiss = require_faiss()
    faiss.omp_set_num_threads(torch.get_num_threads())
    g = float32_rows(gallery)
    if kind == "flat":
        index = faiss.IndexFlatIP(g.shape[1])
        index.add(g)
        return index
    sizes = effective(config, len(g))
    g = _pad(g, g.shape[1] + -g.shape[1] % sizes["pq_m"])
    quantiser = faiss.IndexFlatIP(g.shape[1])
    index = faiss.IndexIVFPQ(quantiser, g.shape[1], sizes["nlist"], sizes["pq_m"], sizes["pq_bits"],
                             faiss.METRIC_INNER_PRODUCT)
    index.cp.min_points_per_centroid = index.pq.cp.min_points_per_centroid = 1  # sizes capped: no warnings
    index.nprobe = sizes["nprobe"]
    mapped = None if as_query is None else _pad(float32_rows(as_query), g.shape[1])
    if mapped is None or np.array_equal(mapped, g):
        index.train(g)
        index.add(g)
        return index
    centroids, lists = consistent_lists(g, mapped, sizes["nlist"])
    quantiser.add(centroids)
    index.pq.train(np.ascontiguousarray(g - centroids[lists]))
    index.precompute_table()
    index.is_trained = True
    from faiss.contrib.ivf_tools import add_preassigned

    add_preassigned(index, g, lists)
    return index


def consistent_lists(stored: np.ndarray, mapped: np.ndarray, nlist: int, iterations: int = 20,
                     seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Centroids (float32, ``nlist`` x d) and each item's list by Lloyd iterations on one criterion: item i joins
    the list j of largest <mapped_i, c_j>, c_j is the mean of its members' ``stored`` vectors (an emptied list keeps
    its centroid). Starts from FAISS's k-means of the stored vectors (seeded with ``seed``)."""
    faiss = require_faiss()
    stored64, mapped64 = stored.astype(np.float64), mapped.astype(np.float64)
    start = faiss.Kmeans(stored.shape[1], nlist, niter=iterations, seed=seed, min_points_per_centroid=1)
    start.train(np.ascontiguousarray(stored, dtype=np.float32))
    centroids = start.centroids.astype(np.float64)
    for _ in range(iterations):
        lists = (mapped64 @ centroids.T).argmax(1)
        counts = np.bincount(lists, minlength=nlist)
        sums = np.zeros_like(centroids)
        np.add.at(sums, lists, stored64)
        filled = counts > 0
        centroids[filled] = sums[filled] / counts[filled, None]
    centroids = centroids.astype(np.float32)
    return centroids, (mapped @ centroids.T).argmax(1)


def float32_rows(x: Tensor | np.ndarray) -> np.ndarray:
    """Features as the contiguous float32 array an index library takes."""
    data = x if isinstance(x, np.ndarray) else x.detach().float().cpu().numpy()
    return np.ascontiguousarray(data, dtype=np.float32)


def _pad(x: np.ndarray, width: int) -> np.ndarray:
    """Zero-padded to ``width`` columns (PQ sub-quantisers split the dimension evenly; no inner product sees it)."""
    return np.ascontiguousarray(np.pad(x, ((0, 0), (0, width - x.shape[1]))))


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
