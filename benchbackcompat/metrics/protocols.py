"""Which retrieval metrics each evaluation protocol scores, and how: a registry keyed by (protocol, metric).

``loo`` (one set as query and gallery, self excluded) and ``nn`` (a separate gallery) score CMC@k and
mAP on ranked galleries; ``template`` scores top-1 against per-class templates of the gallery;
``verification`` scores threshold accuracy on sampled pairs. A scorer returns the score (%) and its
per-query outcomes (hits or average precisions; None where there are none).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from torch import Tensor

from benchbackcompat.metrics import outcomes, retrieval


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


def scores(protocol: str, *metrics: str) -> Callable[[Scorer], Scorer]:
    """Register a scorer of ``metrics`` under ``protocol``."""
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
def _verification(metric: str, e: Entry) -> tuple[float, None]:
    a, b, same = e.pairs
    return retrieval.pair_verification(e.query[a], e.gallery[b], same, similarity=e.similarity), None
