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
  regression from the old gallery feature to how much the new model changes the item (:func:`class_fit_gain`: its
  similarity to its class template among the new features minus that among the old), largest predicted change first.
  FastFill trains an uncertainty head with its feature transformation on the training set, predicting the
  old-to-new alignment loss; the harness keeps no training features and no transformation, so this fits a linear
  model on the gallery itself, cross-fitted in two random halves (each half ordered by the model fitted on the other
  half's new features, so no item's score sees its own new feature). A linear stand-in, not FastFill's training.
- ``oracle``: greedy, batch by batch, the items whose refresh alone fixes the most queries' top-1 in the current
  mixed gallery (:func:`oracle_order`), read from the new features and the labels: a reference a live system cannot
  use, and not a bound (greedy: it does not see later batches, and for CoReS on the quick preset's ext-class it
  ends below the random order).
- ``oracle-bound`` (``metrics.live.BOUND``): not an order but the ceiling of every order's curve. At each step it
  counts the queries whose top-1 *some* refresh of that many items makes right, each query on its own
  (:func:`least_refreshes`); no order can do better at any step, so its area bounds every order's.
"""
from __future__ import annotations

import torch
from torch import Tensor

from benchbackcompat import geometry
from benchbackcompat.metrics.backfill import own_class_similarity
from benchbackcompat.metrics.retrieval import Similarity, Templates

RIDGE = 1e-3  # the ridge's penalty, relative to the mean squared feature norm
BOUND_METRICS = ("cmc@1",)  # the metrics the ceiling is defined for: top-1 hits
QUERY_CHUNK = 1024  # queries scored at once by :func:`least_refreshes`


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


def oracle_order(cross: Tensor, new: Tensor, query_labels: Tensor, gallery_labels: Tensor, counts: list[int],
                 loo: bool = False) -> Tensor:
    """The greedy oracle: batch by batch (``counts``: items refreshed after each batch, as the curve's steps), the
    items whose refresh alone would turn the most queries' top-1 from wrong to right (net of right to wrong) in the
    current mixed gallery, ties by index. ``cross`` and ``new``: queries x gallery scores of the two blocks (the mixed
    gallery ranks them side by side); ``loo``: query i is gallery item i, never its own result. It reads the new
    features and the labels: a reference, not an order a live system can use, and not a bound (greedy)."""
    cross, new = cross.float().cpu().clone(), new.float().cpu().clone()
    if loo:
        cross.fill_diagonal_(-torch.inf)
        new.fill_diagonal_(-torch.inf)
    same = (query_labels.cpu()[:, None] == gallery_labels.cpu()[None, :]).float()
    rows = torch.arange(len(cross))
    refreshed = torch.zeros(cross.shape[1], dtype=torch.bool)
    order: list[Tensor] = []
    for done, target in zip(counts, counts[1:]):
        current = torch.where(refreshed[None, :], new, cross)
        top = current.topk(min(2, current.shape[1]), dim=1)
        best, first = top.values[:, 0], top.indices[:, 0]
        hit = same[rows, first]
        gain = ((new > best[:, None]).float() * (same - hit[:, None])).sum(0)  # j refreshed becomes the top-1
        if current.shape[1] > 1:  # where j is the top-1 already (unrefreshed), its refresh may hand it to the second
            second, runner_up = top.values[:, 1], top.indices[:, 1]
            own = new[rows, first]
            after = torch.where(own > second, same[rows, first], same[rows, runner_up])
            assumed = (own > best).float() * (same[rows, first] - hit)
            gain.index_add_(0, first, after - hit - assumed)
        gain[refreshed] = -torch.inf
        batch = torch.sort(-gain.double(), stable=True).indices[: target - done]
        refreshed[batch] = True
        order.append(batch)
    return torch.cat(order) if order else torch.zeros(0, dtype=torch.long)


def class_fit_gain(old: Tensor, new: Tensor, labels: Tensor, similarity: Similarity, templates: Templates) -> Tensor:
    """How much the new model changes each gallery item: its similarity to its own class template among the new
    gallery features minus that among the old ones, each in the method's similarity (``own_class_similarity``)."""
    return own_class_similarity(new, labels, similarity, templates).double() - \
        own_class_similarity(old, labels, similarity, templates).double()


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


def learned_order(features: Tensor, target: Tensor, generator: torch.Generator) -> Tensor:
    """The FastFill-style order: the largest ``target`` (:func:`class_fit_gain`) predicted from the old feature first,
    cross-fitted over two random halves of the items (:func:`ridge_predictions`), ties by index."""
    half = torch.zeros(len(features), dtype=torch.bool)
    half[torch.randperm(len(features), generator=generator)[: len(features) // 2]] = True
    predicted = torch.where(half, ridge_predictions(features, target, ~half), ridge_predictions(features, target, half))
    return torch.sort(-predicted, stable=True).indices


def least_refreshes(cross: Tensor, new: Tensor, query_labels: Tensor, gallery_labels: Tensor,
                    loo: bool = False) -> Tensor:
    """Per query, the fewest refreshed items with which its top-1 in the mixed gallery is of its class (inf where no
    refresh does it), float64 on the CPU; ties go to the relevant item, so the count is never above the true one.

    With old scores a (``cross``) and new scores b (``new``), a query is right when its best relevant score t beats
    every irrelevant item's score in that item's current model. t is either the best old relevant score (nothing
    refreshed for it) or a relevant item's new score (one refresh); every irrelevant item with a > t must then be
    refreshed, which works only if its b <= t. So the count is min over those t of [t needs a refresh] +
    #{irrelevant: a > t}, over the t with no irrelevant item above it in both models. ``loo``: query i is gallery
    item i, never its own result."""
    counts = []
    gallery_labels = gallery_labels.cpu()
    for start in range(0, len(cross), QUERY_CHUNK):
        rows = slice(start, start + QUERY_CHUNK)
        a, b = cross[rows].double().cpu().clone(), new[rows].double().cpu().clone()
        if loo:
            own = torch.arange(start, start + len(a))
            a[torch.arange(len(a)), own] = -torch.inf
            b[torch.arange(len(b)), own] = -torch.inf
        relevant = query_labels[rows].cpu()[:, None] == gallery_labels[None, :]
        lowest = torch.tensor(-torch.inf, dtype=torch.float64)
        kept_old = torch.where(relevant, a, lowest).max(1).values  # t with nothing refreshed for it
        thresholds = torch.cat([kept_old[:, None], torch.where(relevant, torch.maximum(b, kept_old[:, None]), lowest)], 1)
        cost = torch.ones_like(thresholds)
        cost[:, 0] = 0.0
        irrelevant_old = torch.where(relevant, lowest, a).sort(dim=1).values
        cost += a.shape[1] - torch.searchsorted(irrelevant_old, thresholds.contiguous(), right=True)
        blocking = torch.where(relevant, lowest, torch.minimum(a, b)).max(1).values  # above t whatever is refreshed
        usable = (thresholds > -torch.inf) & (thresholds >= blocking[:, None])
        counts.append(torch.where(usable, cost, torch.inf).min(1).values)
    return torch.cat(counts) if counts else torch.zeros(0, dtype=torch.float64)


def bound_hits(least: Tensor, counts: list[int]) -> Tensor:
    """Steps x queries: whether each query's top-1 can be right with ``counts[s]`` items refreshed
    (:func:`least_refreshes`), the ceiling of every refresh order's per-query hits at that step."""
    return least[None, :] <= torch.tensor(counts, dtype=torch.float64)[:, None]
