"""Refresh orders of the backfilling literature (``metrics.backfill`` scores the curves they give).

- ``uncertainty`` (Hot-Refresh: Zhang et al., "Hot-Refresh Model Upgrades with Regression-Free Compatible Training in
  Image Retrieval", ICLR 2022): the gallery items whose old embedding is least certain first. The paper scores an
  item's uncertainty with the old model's classifier on the old embedding; the harness keeps the features, not the
  classifier heads, so the classifier here is the old gallery's class templates in the method's own similarity (the
  template protocol's classifier), and the uncertainty is the classification margin: the similarity to the most
  similar class template minus that to the second (smallest margin first). A margin needs no softmax temperature,
  which template similarities do not define.
- ``hbct-uncertainty`` (HBCT: "Learning Along the Arrow of Time: Hyperbolic Geometry for Backward-Compatible
  Representation Learning", ICML 2025): Unc(h) = 1 - tanh(sqrt(K) ||z||) of the old embedding's pre-exp-map vector
  z, the weight HBCT's loss gives an old embedding, highest first. On the hyperboloid h = expmap0(z) it is
  1 - ||h_space|| / h_time, whatever K, so it is read from the stored old gallery point. A method that does not embed
  on the hyperboloid (its similarity is not the geodesic one) has no Unc(h): it falls back to ``uncertainty``.
- ``learned`` (after FastFill: Jaeckle et al., "FastFill: Efficient Compatible Model Update", ICLR 2023): a ridge
  regression from the old gallery feature to the item's refresh benefit (:func:`refresh_benefit`), largest predicted
  benefit first. FastFill trains an uncertainty head with its feature transformation on the training set, predicting
  the old-to-new alignment loss; the harness keeps no training features and no transformation, so this fits a linear
  model on the gallery itself, cross-fitted in two random halves (each half ordered by the model fitted on the other,
  so no item's score sees its own target), and its target is read from the test queries' new features. It is the
  learnability of the oracle from the old features, not FastFill's training.
- ``oracle``: the refresh benefit itself, computed from the new features and the labels: an upper reference, not an
  order a live system can use.
"""
from __future__ import annotations

import torch
from torch import Tensor

from benchbackcompat import geometry
from benchbackcompat.metrics.retrieval import Similarity, Templates

RIDGE = 1e-3  # the ridge's penalty, relative to the mean squared feature norm


def template_margin(gallery: Tensor, labels: Tensor, similarity: Similarity, templates: Templates) -> Tensor:
    """Each gallery item's similarity to its most similar class template (of the old gallery) minus that to the
    second, on the CPU in float64; +inf with fewer than two classes."""
    classes, index = torch.unique(labels.to(gallery.device), return_inverse=True)
    if len(classes) < 2:
        return torch.full((len(gallery),), float("inf"), dtype=torch.float64)
    top = similarity(gallery, templates(gallery, index, len(classes))).double().topk(2, dim=1).values.cpu()
    return top[:, 0] - top[:, 1]


def uncertainty_order(gallery: Tensor, labels: Tensor, similarity: Similarity, templates: Templates) -> Tensor:
    """Hot-Refresh's order: the smallest classification margin (:func:`template_margin`) first, ties by index."""
    return torch.sort(template_margin(gallery, labels, similarity, templates), stable=True).indices


def hyperbolic_uncertainty(points: Tensor) -> Tensor:
    """HBCT's Unc(h) = 1 - ||h_space|| / h_time of points on the hyperboloid (time coordinate first), float64."""
    h = points.double().cpu()
    return 1.0 - h[:, 1:].norm(dim=1) / h[:, 0]


def hbct_uncertainty_order(gallery: Tensor, labels: Tensor, similarity: Similarity, templates: Templates) -> Tensor:
    """HBCT's order: the highest Unc(h) of the old embedding first, ties by index; :func:`uncertainty_order` for a
    similarity other than the geodesic one."""
    if not geometry.is_geodesic_similarity(similarity):
        return uncertainty_order(gallery, labels, similarity, templates)
    return torch.sort(-hyperbolic_uncertainty(gallery), stable=True).indices


def refresh_benefit(similarity: Similarity, cross: tuple[Tensor, Tensor], new: tuple[Tensor, Tensor],
                    query_labels: Tensor, gallery_labels: Tensor, loo: bool = False, chunk_size: int = 4096) -> Tensor:
    """Per gallery item, what refreshing it gains in the mixed ranking: the mean rise of its score (new block −
    cross block: the mixed gallery ranks both blocks' scores side by side) over the queries of its class minus that
    over the other queries (it rises for its matches, and for the queries it is a distractor to). ``cross`` and
    ``new``: the (query, gallery) features each block scores with ``similarity``; ``loo``: query i is gallery item i,
    not its own match. Queries ``chunk_size`` at a time; float64 on the CPU."""
    sums = torch.zeros(2, len(gallery_labels), dtype=torch.float64)
    counts = torch.zeros(2, len(gallery_labels), dtype=torch.float64)
    gallery_labels = gallery_labels.cpu()
    for start in range(0, len(query_labels), chunk_size):
        rows = slice(start, start + chunk_size)
        rise = (similarity(new[0][rows], new[1]).double() - similarity(cross[0][rows], cross[1]).double()).cpu()
        same = query_labels.cpu()[rows, None] == gallery_labels[None, :]
        counted = torch.ones_like(same)
        if loo:
            index = torch.arange(start, start + len(rise))
            counted[index - start, index] = False
        for i, mask in enumerate((same & counted, ~same & counted)):
            sums[i] += (rise * mask).sum(0)
            counts[i] += mask.sum(0)
    means = sums / counts.clamp(min=1)
    return means[0] - means[1]


def oracle_order(benefit: Tensor) -> Tensor:
    """The largest refresh benefit first, ties by index."""
    return torch.sort(-benefit, stable=True).indices


def ridge_predictions(features: Tensor, target: Tensor, train: Tensor, penalty: float = RIDGE) -> Tensor:
    """Predictions for every row of a ridge regression (with intercept) of ``target`` on ``features`` fitted on the
    rows ``train`` (a boolean mask), in float64."""
    x = torch.cat([features.double().cpu(), torch.ones(len(features), 1, dtype=torch.float64)], 1)
    fit = x[train]
    scale = penalty * float((fit[:, :-1] ** 2).sum(1).mean().clamp(min=1e-12))
    regulariser = scale * torch.eye(x.shape[1], dtype=torch.float64)
    regulariser[-1, -1] = 0.0  # the intercept is not penalised
    weights = torch.linalg.solve(fit.T @ fit + regulariser, fit.T @ target.double().cpu()[train])
    return x @ weights


def learned_order(features: Tensor, benefit: Tensor, generator: torch.Generator) -> Tensor:
    """The FastFill-style order: the largest benefit predicted from the old feature first, cross-fitted over two
    random halves of the items (:func:`ridge_predictions`), ties by index."""
    half = torch.zeros(len(features), dtype=torch.bool)
    half[torch.randperm(len(features), generator=generator)[: len(features) // 2]] = True
    predicted = torch.where(half, ridge_predictions(features, benefit, ~half), ridge_predictions(features, benefit, half))
    return torch.sort(-predicted, stable=True).indices
