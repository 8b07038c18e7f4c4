"""Feature extraction (each model once) and the compatibility matrices of a cell.

The official evaluation code re-extracts the gallery for every matrix entry (T(T+1)/2 passes);
here every model runs once over the query set and once over the gallery set, and the T(T+1)/2
entries are similarity computations on stored features.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from benchbackcompat.data.arrays import ImageArrays
from benchbackcompat.data.augment import normalise
from benchbackcompat.engine.device import autocast, derive_seed, generator
from benchbackcompat.engine.faults import fault_point, halve_on_oom
from benchbackcompat.method import Method
from benchbackcompat.metrics import retrieval
from benchbackcompat.scenarios.data import ScenarioData


@torch.no_grad()
def extract_features(
    model: nn.Module, method: Method, images: ImageArrays, *, mean, std, batch_size: int, device: torch.device, amp: str
) -> Tensor:
    """Retrieval features of every image (float32, on ``device``), in batches of ``batch_size``
    (halved and retried when the device runs out of memory)."""
    model.eval()
    chunks, start = [], 0
    while start < len(images):
        try:
            fault_point("extract-batch")
            batch = normalise(images.images[start : start + batch_size].to(device), mean, std)
            with autocast(device, amp):
                chunks.append(method.features(model, batch).float())
        except RuntimeError as error:
            batch_size = halve_on_oom(error, batch_size, "feature extraction")
            continue
        start += batch_size
    return torch.cat(chunks)


@dataclass
class ModelFeatures:
    query: Tensor
    gallery: Tensor | None  # None for leave-one-out


def model_features(model: nn.Module, method: Method, data: ScenarioData, *, batch_size: int, device, amp: str) -> ModelFeatures:
    mean, std = data.eval_stats or (data.mean, data.std)
    kwargs = dict(mean=mean, std=std, batch_size=batch_size, device=device, amp=amp)
    query = extract_features(model, method, data.query, **kwargs)
    gallery = extract_features(model, method, data.gallery, **kwargs) if data.gallery is not None else None
    return ModelFeatures(query, gallery)


def score(
    metric: str, protocol: str, query: Tensor, gallery: Tensor, data: ScenarioData, similarity, pairs: tuple | None,
    chunk_size: int = 4096, templates: retrieval.Templates = retrieval.normalised_templates,
) -> float:
    """One matrix entry: ``metric`` of ``query`` features against ``gallery`` features under ``protocol``,
    scoring ``chunk_size`` queries at a time (halved and retried when the device runs out of memory)."""
    while True:
        try:
            return _score(metric, protocol, query, gallery, data, similarity, pairs, chunk_size, templates)
        except RuntimeError as error:
            chunk_size = halve_on_oom(error, chunk_size, f"scoring {metric}")


def _score(
    metric: str, protocol: str, query: Tensor, gallery: Tensor, data: ScenarioData, similarity, pairs: tuple | None,
    chunk_size: int, templates: retrieval.Templates,
) -> float:
    ql = data.query.labels
    if protocol == "loo":
        if metric.startswith("cmc@"):
            k = int(metric[4:])
            return retrieval.leave_one_out_cmc(query, gallery, ql, ks=(k,), similarity=similarity, chunk_size=chunk_size)[k]
        if metric in ("map", "map@r"):
            at = "R" if metric == "map@r" else None
            return retrieval.leave_one_out_map(query, gallery, ql, at=at, similarity=similarity, chunk_size=chunk_size)
    gl = data.gallery.labels if data.gallery is not None else ql
    if protocol == "nn":
        if metric.startswith("cmc@"):
            k = int(metric[4:])
            return retrieval.cmc(query, ql, gallery, gl, ks=(k,), similarity=similarity, chunk_size=chunk_size)[k]
        if metric in ("map", "map@r"):
            return retrieval.mean_average_precision(query, ql, gallery, gl, at="R" if metric == "map@r" else None,
                                                    similarity=similarity, chunk_size=chunk_size)
    if protocol == "template" and metric in ("top1", "cmc@1"):
        return retrieval.template_top1(query, ql, gallery, gl, similarity=similarity, templates=templates,
                                       chunk_size=chunk_size)
    if protocol == "verification" and metric == "verification":
        a, b, same = pairs
        return retrieval.pair_verification(query[a], gallery[b], same, similarity=similarity)
    raise ValueError(f"metric {metric!r} is not defined for protocol {protocol!r}")


def compatibility_matrices(
    method: Method,
    features: list[ModelFeatures],
    data: ScenarioData,
    protocol: str,
    metrics: list[str],
    seed: int,
    verification_pairs: int = 3000,
) -> tuple[dict[str, list[list[float]]], list[str]]:
    """Fill C[t][k] (query model t, gallery model k <= t) for every metric; NaN where an entry
    cannot be computed (for example feature sizes that differ), with a note saying why."""
    T = len(features)
    pairs = None
    if protocol == "verification":
        pairs = retrieval.sample_verification_pairs(
            data.query.labels, verification_pairs, verification_pairs, generator=generator(derive_seed(seed, "pairs"))
        )
    matrices = {m: [[math.nan] * T for _ in range(T)] for m in metrics}
    notes: list[str] = []
    similarity = method.similarity()
    for t in range(T):
        for k in range(t + 1):
            stored = features[k].gallery if features[k].gallery is not None else features[k].query
            query, gallery = method.pair_features(features[t].query, stored, t, k)
            if query.shape[1] != gallery.shape[1]:
                notes.append(f"C[{t}][{k}]: feature sizes differ ({query.shape[1]} vs {gallery.shape[1]})")
                continue
            for metric in metrics:
                matrices[metric][t][k] = score(metric, protocol, query, gallery, data, similarity, pairs,
                                               templates=method.templates())
    return matrices, notes
