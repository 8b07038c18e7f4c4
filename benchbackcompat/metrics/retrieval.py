"""Retrieval protocols on features: nearest-neighbour top-1 / CMC@k, class templates, leave-one-out,
mAP (full, @k, @R) and pair verification.

Scores come from a ``Similarity`` (an nq x ng matrix, higher = more similar) computed in chunks
of ``chunk_size`` query rows, so memory stays O(chunk_size x ng). Rankings are deterministic:
among equal scores the lowest gallery index ranks first; NaN scores rank last. Accuracies and
mAP are returned in percent (0-100). Features and labels may live on any device (the gallery
and labels are moved to the query features' device).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from benchbackcompat.errors import BenchError

Similarity = Callable[[Tensor, Tensor], Tensor]
Templates = Callable[[Tensor, Tensor, int], Tensor]  # (features, class index of each row, classes) -> one row per class

_NEG_INF = float("-inf")


def cosine_similarity(q: Tensor, g: Tensor) -> Tensor:
    """Cosine similarity of every query row with every gallery row; zero vectors score 0."""
    return F.normalize(q, dim=1) @ F.normalize(g, dim=1).T


def negative_squared_euclidean(q: Tensor, g: Tensor) -> Tensor:
    """-||q - g||^2 for every query/gallery pair (clamped so the distance is never negative)."""
    d = q.pow(2).sum(1, keepdim=True) + g.pow(2).sum(1)[None, :] - 2.0 * (q @ g.T)
    return -d.clamp_min(0.0)


# ----------------------------------------------------------------------------- internals


def _check_set(name: str, feats: Tensor, labels: Tensor) -> None:
    if not isinstance(feats, Tensor) or feats.ndim != 2 or feats.shape[0] == 0:
        shape = tuple(feats.shape) if isinstance(feats, Tensor) else type(feats).__name__
        raise BenchError(f"{name}_feats must be a non-empty 2-D tensor (n x d), got {shape}")
    if not isinstance(labels, Tensor) or labels.ndim != 1 or labels.shape[0] != feats.shape[0]:
        shape = tuple(labels.shape) if isinstance(labels, Tensor) else type(labels).__name__
        raise BenchError(f"{name}_labels must be a 1-D tensor with one label per {name} feature "
                         f"({feats.shape[0]}), got {shape}")


def _prepare(qf: Tensor, ql: Tensor, gf: Tensor, gl: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    _check_set("query", qf, ql)
    _check_set("gallery", gf, gl)
    if qf.shape[1] != gf.shape[1]:
        raise BenchError(f"query and gallery features differ in dimension ({qf.shape[1]} vs {gf.shape[1]}); "
                         "project them to a shared space first")
    return ql.to(qf.device), gf.to(qf.device), gl.to(qf.device)


def _relevance(query_labels: Tensor, gallery_labels: Tensor, valid: Tensor | None) -> Tensor:
    """Query x gallery mask of same-label pairs, restricted to the valid gallery items (leave-one-out)."""
    rel = query_labels[:, None] == gallery_labels[None, :]
    return rel if valid is None else rel & valid


def _score_chunks(qf: Tensor, gf: Tensor, similarity: Similarity, chunk_size: int,
                  exclude_self: bool) -> Iterator[tuple[slice, Tensor, Tensor | None]]:
    """Yield (query rows, scores with NaN -> -inf, valid-gallery mask or None) per query chunk."""
    if chunk_size < 1:
        raise BenchError(f"chunk_size must be >= 1, got {chunk_size}")
    if exclude_self and qf.shape[0] != gf.shape[0]:
        raise BenchError(f"exclude_self needs the query and gallery to be the same images, got "
                         f"{qf.shape[0]} queries and {gf.shape[0]} gallery items")
    cols = torch.arange(gf.shape[0], device=qf.device)
    for start in range(0, qf.shape[0], chunk_size):
        rows = slice(start, min(start + chunk_size, qf.shape[0]))
        scores = similarity(qf[rows], gf)
        nan = scores.isnan()
        if nan.any():
            scores = scores.masked_fill(nan, _NEG_INF)
        valid = None
        if exclude_self:
            valid = cols[None, :] != torch.arange(rows.start, rows.stop, device=qf.device)[:, None]
        yield rows, scores, valid


def _columns(scores: Tensor) -> Tensor:
    """Gallery indices 0..ng-1 (int32 keeps the per-chunk index matrices small)."""
    return torch.arange(scores.shape[1], device=scores.device, dtype=torch.int32)


def _top1_index(scores: Tensor) -> Tensor:
    """Index of the highest score per row; the lowest index wins ties."""
    cols = _columns(scores)
    is_max = scores == scores.amax(1, keepdim=True)
    return torch.where(is_max, cols, scores.shape[1]).amin(1).long()


def _first_relevant_rank(scores: Tensor, rel: Tensor, valid: Tensor | None) -> Tensor:
    """0-based rank of the best-ranked relevant item per row (ng when there is none).

    Rank = valid items with a higher score, plus valid items with an equal score and a lower
    index: the position in a stable descending sort, computed without sorting.
    """
    ng = scores.shape[1]
    cols = _columns(scores)
    best = scores.masked_fill(~rel, _NEG_INF).amax(1, keepdim=True)
    first = torch.where(rel & (scores == best), cols, ng).amin(1, keepdim=True)
    ahead = (scores > best) | ((scores == best) & (cols < first))
    if valid is not None:
        ahead &= valid
    rank = ahead.sum(1)
    return torch.where(rel.any(1), rank, torch.full_like(rank, ng))


def _average_precision(scores: Tensor, rel: Tensor, valid: Tensor | None,
                       at: int | Literal["R"] | None) -> tuple[Tensor, Tensor]:
    """Per-row AP (fraction) and a mask of rows with at least one relevant item."""
    order = torch.sort(scores, dim=1, descending=True, stable=True).indices
    rel_sorted = rel.gather(1, order)
    hits = rel_sorted.cumsum(1)
    if valid is None:
        pos = torch.arange(1, scores.shape[1] + 1, device=scores.device).expand_as(hits)
    else:
        pos = valid.gather(1, order).cumsum(1)
    n_rel = hits[:, -1]
    prec = hits / pos.clamp_min(1)
    if at is None:
        within, denom = rel_sorted, n_rel
    elif at == "R":
        within, denom = rel_sorted & (pos <= n_rel[:, None]), n_rel
    else:
        within, denom = rel_sorted & (pos <= at), n_rel.clamp_max(at)
    ap = (prec * within).sum(1) / denom.clamp_min(1)
    return ap, n_rel > 0


def _check_ks(ks: Sequence[int]) -> list[int]:
    ks = list(ks)
    if not ks or any(not isinstance(k, int) or k < 1 for k in ks):
        raise BenchError(f"ks must be a non-empty list of positive integers, got {ks}")
    return ks


# ----------------------------------------------------------------------------- protocols


def nearest_neighbour_top1(query_feats: Tensor, query_labels: Tensor, gallery_feats: Tensor,
                           gallery_labels: Tensor, *, similarity: Similarity = cosine_similarity,
                           chunk_size: int = 4096) -> float:
    """Recall@1 / CMC@1 (%): the most similar gallery item has the query's label (lowest index wins ties)."""
    ql, gf, gl = _prepare(query_feats, query_labels, gallery_feats, gallery_labels)
    correct = 0
    for rows, scores, _ in _score_chunks(query_feats, gf, similarity, chunk_size, False):
        correct += int((gl[_top1_index(scores)] == ql[rows]).sum())
    return 100.0 * correct / query_feats.shape[0]


def first_relevant_ranks(query_feats: Tensor, query_labels: Tensor, gallery_feats: Tensor, gallery_labels: Tensor, *,
                         similarity: Similarity = cosine_similarity, chunk_size: int = 4096,
                         exclude_self: bool = False) -> Tensor:
    """Per query, the 0-based rank of its best-ranked same-label gallery item (ng when there is none),
    on the CPU: query i is a CMC@k hit when its rank is < k. ``exclude_self`` drops gallery item i for query i."""
    ql, gf, gl = _prepare(query_feats, query_labels, gallery_feats, gallery_labels)
    ranks = []
    for rows, scores, valid in _score_chunks(query_feats, gf, similarity, chunk_size, exclude_self):
        ranks.append(_first_relevant_rank(scores, _relevance(ql[rows], gl, valid), valid).cpu())
    return torch.cat(ranks)


def cmc(query_feats: Tensor, query_labels: Tensor, gallery_feats: Tensor, gallery_labels: Tensor, *,
        ks: Sequence[int] = (1, 5), similarity: Similarity = cosine_similarity, chunk_size: int = 4096,
        exclude_self: bool = False) -> dict[int, float]:
    """CMC@k (%) for each k (HBCT): a query is correct if a same-label gallery item is in its top k.

    Queries with no same-label gallery item count as misses. ``exclude_self`` drops gallery
    item i for query i (leave-one-out; query and gallery must be the same images).
    """
    ks = _check_ks(ks)
    rank = first_relevant_ranks(query_feats, query_labels, gallery_feats, gallery_labels, similarity=similarity,
                                chunk_size=chunk_size, exclude_self=exclude_self)
    return {k: 100.0 * int((rank < k).sum()) / query_feats.shape[0] for k in ks}


def normalised_templates(features: Tensor, index: Tensor, num_classes: int) -> Tensor:
    """Class templates of the IAM-CL2R code: features L2-normalised, summed per class (float64, so the
    result does not depend on the summation order on GPU) and re-normalised."""
    sums = torch.zeros(num_classes, features.shape[1], dtype=torch.float64, device=features.device)
    sums.index_add_(0, index, F.normalize(features.to(torch.float64), dim=1))
    return F.normalize(sums, dim=1).to(features.dtype)


def template_hits(query_feats: Tensor, query_labels: Tensor, gallery_feats: Tensor, gallery_labels: Tensor, *,
                  similarity: Similarity = cosine_similarity, templates: Templates = normalised_templates,
                  chunk_size: int = 4096) -> Tensor:
    """Per query (bool, on the CPU): its most similar class template has its label (see ``template_top1``)."""
    ql, gf, gl = _prepare(query_feats, query_labels, gallery_feats, gallery_labels)
    classes, inverse = torch.unique(gl, sorted=True, return_inverse=True)
    class_templates = templates(gf, inverse, len(classes))
    hits = [(classes[_top1_index(scores)] == ql[rows]).cpu()
            for rows, scores, _ in _score_chunks(query_feats, class_templates, similarity, chunk_size, False)]
    return torch.cat(hits)


def template_top1(query_feats: Tensor, query_labels: Tensor, gallery_feats: Tensor, gallery_labels: Tensor, *,
                  similarity: Similarity = cosine_similarity, templates: Templates = normalised_templates,
                  chunk_size: int = 4096) -> float:
    """Top-1 accuracy (%) against class templates (the IAM-CL2R evaluation code).

    ``templates`` builds one template per gallery class (default: L2-normalised features averaged and
    re-normalised; a method in another geometry passes its own, e.g. the Lorentz centroid); a query is
    correct if its most similar template (ties: smallest label) has the query's label. Labels are
    compared, not template positions (the official code compares positions, which is only right for
    labels 0..C-1).
    """
    hits = template_hits(query_feats, query_labels, gallery_feats, gallery_labels, similarity=similarity,
                         templates=templates, chunk_size=chunk_size)
    return 100.0 * int(hits.sum()) / query_feats.shape[0]


def average_precisions(query_feats: Tensor, query_labels: Tensor, gallery_feats: Tensor, gallery_labels: Tensor, *,
                       at: int | Literal["R"] | None = None, exclude_self: bool = False,
                       similarity: Similarity = cosine_similarity, chunk_size: int = 4096) -> Tensor:
    """Per-query average precision (fraction, float64 on the CPU; NaN for a query without any relevant
    gallery item); see ``mean_average_precision`` for ``at``."""
    if not (at is None or at == "R" or (isinstance(at, int) and not isinstance(at, bool) and at >= 1)):
        raise BenchError(f"mAP 'at' must be None, a positive integer or 'R', got {at!r}")
    ql, gf, gl = _prepare(query_feats, query_labels, gallery_feats, gallery_labels)
    aps = []
    for rows, scores, valid in _score_chunks(query_feats, gf, similarity, chunk_size, exclude_self):
        ap, has_rel = _average_precision(scores, _relevance(ql[rows], gl, valid), valid, at)
        aps.append(torch.where(has_rel, ap.to(torch.float64), torch.nan).cpu())
    return torch.cat(aps)


def mean_average_precision(query_feats: Tensor, query_labels: Tensor, gallery_feats: Tensor,
                           gallery_labels: Tensor, *, at: int | Literal["R"] | None = None,
                           exclude_self: bool = False, similarity: Similarity = cosine_similarity,
                           chunk_size: int = 4096) -> float:
    """Mean average precision (%) over queries; relevant = same label.

    - ``at=None``: AP over the full ranking, mean of precision at each relevant item (the
      non-interpolated area under the PR curve; HBCT "mAP@1.0").
    - ``at=k``: mAP@k, precision summed over relevant items in the top k, divided by
      min(k, #relevant) (GLDv2 mAP@100 as used by CoReS).
    - ``at="R"``: mAP@R (Musgrave et al. 2020), R = #relevant for that query, divided by R.

    Queries without any relevant gallery item are skipped; ``nan`` if every query is skipped.
    ``exclude_self`` drops gallery item i for query i (leave-one-out).
    """
    aps = average_precisions(query_feats, query_labels, gallery_feats, gallery_labels, at=at,
                             exclude_self=exclude_self, similarity=similarity, chunk_size=chunk_size)
    counted = aps[~aps.isnan()]
    return 100.0 * float(counted.sum()) / len(counted) if len(counted) else float("nan")


def leave_one_out_cmc(query_feats: Tensor, gallery_feats: Tensor, labels: Tensor, *, ks: Sequence[int] = (1,),
                      similarity: Similarity = cosine_similarity, chunk_size: int = 4096) -> dict[int, float]:
    """Leave-one-out CMC@k (%) (BCT / openBCT): one image set is both query and gallery, self excluded.

    ``query_feats[i]`` and ``gallery_feats[i]`` are the same image (from the query and the gallery
    model; pass the same tensor twice for a self-test); the pair (i, i) is never ranked.
    """
    return cmc(query_feats, labels, gallery_feats, labels, ks=ks, similarity=similarity,
               chunk_size=chunk_size, exclude_self=True)


def leave_one_out_map(query_feats: Tensor, gallery_feats: Tensor, labels: Tensor, *,
                      at: int | Literal["R"] | None = None, similarity: Similarity = cosine_similarity,
                      chunk_size: int = 4096) -> float:
    """Leave-one-out mAP (%) on one image set, self excluded (see ``leave_one_out_cmc``)."""
    return mean_average_precision(query_feats, labels, gallery_feats, labels, at=at, exclude_self=True,
                                  similarity=similarity, chunk_size=chunk_size)


# ----------------------------------------------------------------------------- verification


def pair_verification(query_feats: Tensor, gallery_feats: Tensor, same: Tensor, *, folds: int = 10,
                      thresholds: Tensor | None = None, similarity: Similarity = cosine_similarity) -> float:
    """Pair verification accuracy (%) with k-fold threshold selection (CoReS / insightface); see
    :func:`pair_verification_outcomes`."""
    return pair_verification_outcomes(query_feats, gallery_feats, same, folds=folds, thresholds=thresholds,
                                      similarity=similarity)[0]


def pair_verification_outcomes(query_feats: Tensor, gallery_feats: Tensor, same: Tensor, *, folds: int = 10,
                               thresholds: Tensor | None = None,
                               similarity: Similarity = cosine_similarity) -> tuple[float, Tensor]:
    """Pair verification accuracy (%) with k-fold threshold selection (CoReS / insightface), and each pair's
    outcome: whether it is decided correctly at the threshold its fold selected (so that pairs can be
    bootstrapped like queries; the mean of the outcomes is the accuracy when the folds are equal in size).

    Pair i is (query_feats[i], gallery_feats[i]). With the default cosine similarity both are
    L2-normalised and the pair is called "same" when their squared Euclidean distance is < threshold,
    ``thresholds`` defaulting to arange(0, 4, 0.001) (the CoReS code). With another similarity (a method
    in another geometry, e.g. minus the geodesic distance) the distance is minus that similarity and the
    default thresholds are 4,000 equal steps from its smallest to just above its largest value. Folds
    are contiguous blocks of pairs in order (KFold without shuffling); for each fold the threshold with
    the best accuracy on the other folds (lowest threshold on ties) is applied to it, and the fold
    accuracies are averaged.
    """
    if query_feats.ndim != 2 or query_feats.shape != gallery_feats.shape:
        raise BenchError(f"query_feats and gallery_feats must be 2-D with one row per pair and equal shapes, "
                         f"got {tuple(query_feats.shape)} and {tuple(gallery_feats.shape)}")
    n = query_feats.shape[0]
    if same.ndim != 1 or same.shape[0] != n:
        raise BenchError(f"same must be a 1-D boolean tensor with one entry per pair ({n}), got {tuple(same.shape)}")
    if not 2 <= folds <= n:
        raise BenchError(f"folds must be between 2 and the number of pairs ({n}), got {folds}")
    if similarity is cosine_similarity:
        q = F.normalize(query_feats.detach().to(torch.float64), dim=1)
        g = F.normalize(gallery_feats.detach().to(query_feats.device, torch.float64), dim=1)
        dist = (q - g).pow(2).sum(1).cpu()
        default = torch.arange(0, 4, 0.001, dtype=torch.float64)
    else:
        dist = -paired_similarity(query_feats.detach(), gallery_feats.detach().to(query_feats.device), similarity)
        dist = dist.to("cpu", torch.float64)
        low, high = float(dist.min()), float(dist.max())
        default = torch.linspace(low, high + 1e-6 * max(1.0, abs(high)), 4001, dtype=torch.float64)
    thr = default if thresholds is None else thresholds.detach().to("cpu", torch.float64).flatten()
    if thr.numel() == 0:
        raise BenchError("thresholds must not be empty")
    same = same.detach().cpu().bool()

    def correct_counts(idx: Tensor) -> Tensor:  # correct decisions per threshold within idx
        pos, neg = dist[idx][same[idx]].sort().values, dist[idx][~same[idx]].sort().values
        below_pos = torch.searchsorted(pos, thr, side="left")  # pos pairs with dist < thr
        below_neg = torch.searchsorted(neg, thr, side="left")
        return below_pos + (neg.numel() - below_neg)

    fold_idx = torch.tensor_split(torch.arange(n), folds)
    per_fold = torch.stack([correct_counts(idx) for idx in fold_idx])  # folds x thresholds
    total = per_fold.sum(0)
    accs = []
    correct = torch.zeros(n, dtype=torch.bool)
    for f, idx in enumerate(fold_idx):
        train = total - per_fold[f]
        best = int(torch.nonzero(train == train.max())[0, 0])
        accs.append(float(per_fold[f, best]) / idx.numel())
        correct[idx] = (dist[idx] < thr[best]) == same[idx]
    return 100.0 * sum(accs) / folds, correct


def paired_similarity(query_feats: Tensor, gallery_feats: Tensor, similarity: Similarity, chunk_size: int = 1024) -> Tensor:
    """similarity(query_feats[i], gallery_feats[i]) for every row i (the diagonal, chunk by chunk)."""
    parts = [similarity(query_feats[i : i + chunk_size], gallery_feats[i : i + chunk_size]).diagonal()
             for i in range(0, len(query_feats), chunk_size)]
    return torch.cat(parts)


def sample_verification_pairs(labels: Tensor, n_pos: int = 3000, n_neg: int = 3000,
                              generator: torch.Generator | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """Random verification pairs (CoReS: 3,000 positive + 3,000 negative pairs of test images).

    Positives are uniform over ordered same-label pairs of two distinct images, negatives
    uniform over ordered different-label pairs; the pairs are then shuffled together so that
    contiguous verification folds mix both kinds. Deterministic for a seeded ``generator``
    (tensors are returned on its device). Returns (idx_a, idx_b, same).
    """
    if labels.ndim != 1:
        raise BenchError(f"labels must be a 1-D tensor, got shape {tuple(labels.shape)}")
    if n_pos < 0 or n_neg < 0:
        raise BenchError(f"n_pos and n_neg must be >= 0, got {n_pos} and {n_neg}")
    device = generator.device if generator is not None else torch.device("cpu")
    lab = labels.to(device)
    n = lab.shape[0]
    _, inverse, counts = torch.unique(lab, return_inverse=True, return_counts=True)
    order = torch.argsort(inverse, stable=True)  # item indices grouped by class
    starts = counts.cumsum(0) - counts
    rank_in_class = torch.empty_like(order)
    rank_in_class[order] = torch.arange(n, device=device) - starts[inverse[order]]
    size = counts[inverse]  # class size of each item

    def uniform_below(m: Tensor) -> Tensor:  # one uniform integer in [0, m) per entry
        u = torch.rand(m.shape, generator=generator, device=device, dtype=torch.float64)
        return (u * m).floor().long().clamp_max(m - 1)

    pos_w, neg_w = (size - 1).to(torch.float64), (n - size).to(torch.float64)
    if n_pos and pos_w.sum() == 0:
        raise BenchError("labels have no class with two items, so no positive verification pair exists")
    if n_neg and neg_w.sum() == 0:
        raise BenchError("labels hold a single class, so no negative verification pair exists")
    empty = torch.empty(0, dtype=torch.long, device=device)
    pa = torch.multinomial(pos_w, n_pos, replacement=True, generator=generator) if n_pos else empty
    r = uniform_below(size[pa] - 1)
    pb = order[starts[inverse[pa]] + r + (r >= rank_in_class[pa]).long()]
    na = torch.multinomial(neg_w, n_neg, replacement=True, generator=generator) if n_neg else empty
    r = uniform_below(n - size[na])
    nb = order[r + size[na] * (r >= starts[inverse[na]]).long()]
    perm = torch.randperm(n_pos + n_neg, generator=generator, device=device)
    idx_a, idx_b = torch.cat([pa, na])[perm], torch.cat([pb, nb])[perm]
    return idx_a, idx_b, lab[idx_a] == lab[idx_b]
