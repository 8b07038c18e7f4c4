"""Feature extraction (each model once) and the compatibility matrices of a cell.

The official evaluation code re-extracts the gallery for every matrix entry (T(T+1)/2 passes);
here every model runs once over the query set and once over the gallery set, and the T(T+1)/2
entries are similarity computations on stored features.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from benchbackcompat.data.arrays import ImageArrays
from benchbackcompat.data.augment import normalise
from benchbackcompat.engine.device import autocast
from benchbackcompat.engine.features import FeatureBank, ModelFeatures
from benchbackcompat.runtime.faults import fault_point, halve_on_oom
from benchbackcompat.runtime.seeds import derive_seed, generator
from benchbackcompat.method import Method
from benchbackcompat.metrics import outcomes, protocols, retrieval
from benchbackcompat.scenarios.data import ScenarioData


@torch.no_grad()
def extract_features(
    model: nn.Module, method: Method, images: ImageArrays, *, mean, std, batch_size: int, device: torch.device, amp: str
) -> Tensor:
    """Retrieval features of every image (float32, on ``device``), in batches of ``batch_size``
    (halved and retried when the device runs out of memory).

    Model and images are channels-last (NHWC) meanwhile: the same arithmetic up to float rounding
    (about 1e-7 relative), and max-pooling on a CPU is about 10x faster than in NCHW."""
    model.eval().to(memory_format=torch.channels_last)
    chunks, start = [], 0
    try:
        while start < len(images):
            try:
                fault_point("extract-batch")
                batch = normalise(images.images[start : start + batch_size].to(device), mean, std)
                with autocast(device, amp):
                    chunks.append(method.features(model, batch.contiguous(memory_format=torch.channels_last)).float())
            except RuntimeError as error:
                batch_size = halve_on_oom(error, batch_size, "feature extraction")
                continue
            start += batch_size
    finally:
        model.to(memory_format=torch.contiguous_format)
    return torch.cat(chunks)


def model_features(model: nn.Module, method: Method, data: ScenarioData, *, batch_size: int, device, amp: str) -> ModelFeatures:
    mean, std = data.query_stats
    kwargs = dict(mean=mean, std=std, batch_size=batch_size, device=device, amp=amp)
    query = extract_features(model, method, data.query, **kwargs)
    gallery = extract_features(model, method, data.gallery, **kwargs) if data.gallery is not None else None
    return ModelFeatures(query, gallery)


def score(
    metric: str, protocol: str, query: Tensor, gallery: Tensor, data: ScenarioData, similarity, pairs: tuple | None,
    chunk_size: int = 4096, templates: retrieval.Templates = retrieval.normalised_templates, classes: int | None = None,
) -> tuple[float, np.ndarray | None]:
    """One matrix entry: ``metric`` of ``query`` features against ``gallery`` features under ``protocol``,
    scoring ``chunk_size`` queries at a time (halved and retried when the device runs out of memory).
    Returns the score (%) and its per-query outcomes (hits or average precisions; for verification, each pair's correctness at its fold's threshold).
    With ``classes`` (leave-one-out only) only the images of labels below it are queries and gallery; the
    other queries' outcomes are NaN, which the score and the bootstrap skip."""
    while True:
        try:
            return _score(metric, protocol, query, gallery, data, similarity, pairs, chunk_size, templates, classes)
        except RuntimeError as error:
            chunk_size = halve_on_oom(error, chunk_size, f"scoring {metric}")


def _score(
    metric: str, protocol: str, query: Tensor, gallery: Tensor, data: ScenarioData, similarity, pairs: tuple | None,
    chunk_size: int, templates: retrieval.Templates, classes: int | None,
) -> tuple[float, np.ndarray | None]:
    loo = protocol == "loo"
    ql = data.query.labels
    gl = ql if loo or data.gallery is None else data.gallery.labels
    kept = None if classes is None else ql < classes
    if kept is not None:
        query, gallery, ql = query[kept], gallery[kept], ql[kept]
        gl = ql
    entry = protocols.Entry(query, ql, gallery, gl, similarity, chunk_size, templates, exclude_self=loo, pairs=pairs)
    value, per_query = protocols.scorer(protocol, metric)(metric, entry)
    if kept is None or per_query is None:
        return value, per_query
    every_query = np.full(len(kept), np.nan)
    every_query[kept.cpu().numpy()] = per_query
    return value, every_query


def chance_level(metric: str, protocol: str, data: ScenarioData, classes: int | None = None) -> float:
    """The expected score (%) of ``metric`` for a model that ranks the gallery at random, as ``protocol`` declares
    it (``metrics.protocols.chance_level``) on this scenario's query and gallery labels (those below ``classes``
    when given: leave-one-out entries scored on the first classes)."""
    ql = data.query.labels
    gl = ql if data.gallery is None else data.gallery.labels
    if classes is not None:
        ql = gl = ql[ql < classes]
    return protocols.chance_level(protocol, metric, ql, gl)


@dataclass
class Evaluation:
    """The matrices of a cell (C[t][k] per metric, NaN where not computable), notes on what could not be
    computed, and each entry's encoded per-query outcomes (None where there are none)."""

    matrices: dict[str, list[list[float]]]
    notes: list[str]
    outcomes: dict[str, list[list[dict | None]]]


def evaluate_matrices(
    method: Method,
    features: list[ModelFeatures] | FeatureBank,
    data: ScenarioData,
    protocol: str,
    metrics: list[str],
    seed: int,
    verification_pairs: int = 3000,
    gallery_classes: list[int] | None = None,
) -> Evaluation:
    """Fill C[t][k] (query model t, gallery model k <= t) for every metric; NaN where an entry
    cannot be computed (for example feature sizes that differ), with a note saying why. ``features``
    may be a bank that keeps them on disk: each entry then loads only the two it compares. With
    ``gallery_classes`` (leave-one-out only), C[t][k] is scored on the images of the first
    ``gallery_classes[k]`` classes alone."""
    bank = features if isinstance(features, FeatureBank) else FeatureBank.in_memory(features)
    T = len(bank)
    pairs = None
    if protocol == "verification":
        pairs = retrieval.sample_verification_pairs(
            data.query.labels, verification_pairs, verification_pairs, generator=generator(derive_seed(seed, "pairs"))
        )
    result = Evaluation({m: [[math.nan] * T for _ in range(T)] for m in metrics}, [],
                        {m: [[None] * T for _ in range(T)] for m in metrics})
    similarity, templates = method.similarity(), method.templates()
    for t in range(T):
        query_t = bank.query(t)
        for k in range(t + 1):
            query, gallery = method.pair_features(query_t, bank.stored(k), t, k)
            if query.shape[1] != gallery.shape[1]:
                result.notes.append(f"C[{t}][{k}]: feature sizes differ ({query.shape[1]} vs {gallery.shape[1]})")
                continue
            for metric in metrics:
                value, per_query = score(metric, protocol, query, gallery, data, similarity, pairs, templates=templates,
                                         classes=None if gallery_classes is None else gallery_classes[k])
                result.matrices[metric][t][k] = value
                result.outcomes[metric][t][k] = outcomes.encode(per_query) if per_query is not None else None
    return result


def compatibility_matrices(
    method: Method, features: list[ModelFeatures], data: ScenarioData, protocol: str, metrics: list[str], seed: int,
    verification_pairs: int = 3000,
) -> tuple[dict[str, list[list[float]]], list[str]]:
    """The matrices and notes of ``evaluate_matrices``, without the per-query outcomes."""
    result = evaluate_matrices(method, features, data, protocol, metrics, seed, verification_pairs)
    return result.matrices, result.notes
