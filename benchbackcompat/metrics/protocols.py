"""Which retrieval metrics each evaluation protocol scores, and how: a registry keyed by (protocol, metric).

``loo`` (one set as query and gallery, self excluded) and ``nn`` (a separate gallery) score CMC@k and
mAP on ranked galleries; ``template`` scores top-1 against per-class templates of the gallery;
``verification`` scores threshold accuracy on sampled pairs. A scorer returns the score (%) and its
per-query outcomes (hits or average precisions; for verification each pair's correctness at its fold's
threshold). Each protocol also declares
its chance level: the expected score (%) of a model that ranks the gallery at random.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from benchbackcompat.metrics import outcomes, retrieval
from benchbackcompat.metrics.names import METRICS


@dataclass(frozen=True)
class Entry:
    """One matrix entry to score: query features against gallery features, with their labels."""

    query: Tensor
    query_labels: Tensor
    gallery: Tensor
    gallery_labels: Tensor
    similarity: retrieval.Similarity
    chunk_size: int
    templates: retrieval.Templates = retrieval.normalised_templates
    exclude_self: bool = False  # leave-one-out: the query's own item is not in its gallery
    pairs: tuple[Tensor, Tensor, Tensor] | None = None  # verification: query index, gallery index, same class


Scorer = Callable[[str, Entry], tuple[float, np.ndarray | None]]
SCORERS: dict[tuple[str, str], Scorer] = {}
ChanceLevel = Callable[[str, Tensor, Tensor], float]  # (metric, query labels, gallery labels) -> %
CHANCE: dict[str, ChanceLevel] = {}


def scores(protocol: str, *metrics: str) -> Callable[[Scorer], Scorer]:
    """Register a scorer of ``metrics`` under ``protocol``; each metric is one of ``metrics.names.METRICS``."""
    if unnamed := [metric for metric in metrics if metric not in METRICS]:
        raise ValueError(f"metric {', '.join(unnamed)}: not in metrics.names.METRICS; add it there with the name "
                         "the leaderboard shows")

    def register(scorer: Scorer) -> Scorer:
        SCORERS.update({(protocol, metric): scorer for metric in metrics})
        return scorer

    return register


def scorer(protocol: str, metric: str) -> Scorer:
    """The scorer of ``metric`` under ``protocol``; a ValueError when the protocol does not define the metric."""
    found = SCORERS.get((protocol, metric))
    if found is None:
        raise ValueError(f"metric {metric!r} is not defined for protocol {protocol!r}")
    return found


def metrics_of(protocol: str) -> list[str]:
    """The metrics ``protocol`` defines (those a scenario with it may list)."""
    return [metric for (registered, metric) in SCORERS if registered == protocol]


def chance_of(*protocols: str) -> Callable[[ChanceLevel], ChanceLevel]:
    """Register the chance level of ``protocols``."""
    def register(level: ChanceLevel) -> ChanceLevel:
        CHANCE.update(dict.fromkeys(protocols, level))
        return level

    return register


def chance_level(protocol: str, metric: str, query_labels: Tensor, gallery_labels: Tensor) -> float:
    """The expected score (%) of ``metric`` under ``protocol`` for a model that ranks the gallery at random;
    a ValueError for a protocol that declares none."""
    level = CHANCE.get(protocol)
    if level is None:
        raise ValueError(f"protocol {protocol!r} declares no chance level")
    return level(metric, query_labels.cpu(), gallery_labels.cpu())


@chance_of("nn")
def _ranked_chance(metric: str, query_labels: Tensor, gallery_labels: Tensor, exclude_self: bool = False) -> float:
    """CMC@k: the chance that one of k random gallery items is relevant; mAP: the fraction of relevant gallery
    items (its large-gallery limit); both averaged over queries."""
    classes, counts = torch.unique(gallery_labels, return_counts=True)
    relevant = torch.zeros(int(max(query_labels.max(), gallery_labels.max())) + 1, dtype=torch.float64)
    relevant[classes] = counts.to(torch.float64)
    size = float(len(gallery_labels))
    if exclude_self:
        relevant, size = relevant - 1, size - 1
    fraction = (relevant[query_labels] / size).clamp(0, 1)
    if metric.startswith("cmc@"):
        return 100.0 * float((1 - (1 - fraction) ** int(metric[4:])).mean())
    return 100.0 * float(fraction.mean())


@chance_of("loo")
def _loo_chance(metric: str, query_labels: Tensor, gallery_labels: Tensor) -> float:
    """As ``nn`` with the query set as its own gallery, each query's own item left out."""
    return _ranked_chance(metric, query_labels, query_labels, exclude_self=True)


@chance_of("template")
def _template_chance(metric: str, query_labels: Tensor, gallery_labels: Tensor) -> float:
    """Top-1 among the gallery's class templates: one over the number of classes."""
    return 100.0 / len(torch.unique(gallery_labels))


@chance_of("verification")
def _verification_chance(metric: str, query_labels: Tensor, gallery_labels: Tensor) -> float:
    """Same/different pairs, balanced: 50."""
    return 50.0


@scores("loo", "cmc@1", "cmc@5")
@scores("nn", "cmc@1", "cmc@5")
def _cmc(metric: str, e: Entry) -> tuple[float, np.ndarray]:
    ranks = retrieval.first_relevant_ranks(e.query, e.query_labels, e.gallery, e.gallery_labels, similarity=e.similarity,
                                           chunk_size=e.chunk_size, exclude_self=e.exclude_self)
    per_query = (ranks < int(metric[4:])).numpy()
    return outcomes.score(per_query), per_query


@scores("loo", "map", "map@r")
@scores("nn", "map", "map@r")
def _map(metric: str, e: Entry) -> tuple[float, np.ndarray]:
    per_query = retrieval.average_precisions(e.query, e.query_labels, e.gallery, e.gallery_labels,
                                             at="R" if metric == "map@r" else None, exclude_self=e.exclude_self,
                                             similarity=e.similarity, chunk_size=e.chunk_size).numpy()
    return outcomes.score(per_query), per_query


@scores("template", "top1", "cmc@1")
def _template(metric: str, e: Entry) -> tuple[float, np.ndarray]:
    per_query = retrieval.template_hits(e.query, e.query_labels, e.gallery, e.gallery_labels, similarity=e.similarity,
                                        templates=e.templates, chunk_size=e.chunk_size).numpy()
    return outcomes.score(per_query), per_query


@scores("verification", "verification")
def _verification(metric: str, e: Entry) -> tuple[float, np.ndarray]:
    """The accuracy and, as per-query outcomes, each pair's correctness at its fold's threshold."""
    a, b, same = e.pairs
    value, correct = retrieval.pair_verification_outcomes(e.query[a], e.gallery[b], same, similarity=e.similarity)
    return value, correct.numpy()
