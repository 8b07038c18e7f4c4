"""Algorithm 1 of "The Probability Simplex is Compatible": classifier outputs as retrieval features.

For a query model t (C_t outputs) compared with a gallery model k (C_k <= C_t outputs),

    h = P_{t,k} f / ||P_{t,k} f||,   P_{t,k} = [P_{k,k} | 0],   P_{k,k} = I - J / C_k      (Eqs. 2-4)

with f the softmax (PSP) or the logits (LSP): keep the first C_k entries, subtract their mean,
L2-normalise. For PSP the truncated softmax is computed as softmax of the truncated logits: it
differs from softmax(z)[:C_k] only by a positive factor, which normalisation removes, and it
cannot underflow to an all-zero vector when the query model is confident about a new class.

Precision. After long training the softmax is nearly one-hot: a confident model maps every image of a
class next to one vertex, and what orders them is the other entries (about e^-20 when the top logit leads
by 20). In float32 the centring (entries near 1/C_k, resolution ~1e-8) erases them, and a cosine near 1
cannot resolve 1 - cos ~ 1e-18 in any precision. So the projection runs in float64 and
:func:`simplex_similarity` scores cos - 1 = -||q - g||^2 / 2 from the coordinate differences, which keeps
that order. Only two-class features (C_k = 2: every feature is +-(1, -1)/sqrt(2)) are equal in exact
arithmetic, and only there are scores rounded so that exact ties stay ties.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

SCORE_GRID = 2.0**-16  # two-class scores are rounded to this grid (far above float64 rounding error)


def centring_projection(num_classes: int, total: int | None = None, dtype: torch.dtype = torch.float64) -> Tensor:
    """P_{t,k} = [I - J/C_k | 0] in R^{C_k x C_t} (Eq. 4; the zero block is C_k x (C_t - C_k))."""
    total = num_classes if total is None else total
    centre = torch.eye(num_classes, dtype=dtype) - torch.full((num_classes, num_classes), 1.0 / num_classes, dtype=dtype)
    return torch.cat([centre, torch.zeros(num_classes, total - num_classes, dtype=dtype)], dim=1)


def keep_top_k(features: Tensor, k: int) -> Tensor:
    """Zero every entry but the k largest of each row (App. K: top-128), then L2-normalise again."""
    if k >= features.shape[1]:
        return features
    index = features.topk(k, dim=1).indices
    sparse = torch.zeros_like(features).scatter(1, index, features.gather(1, index))
    return F.normalize(sparse, dim=1)


def simplex_features(
    logits: Tensor, num_classes: int, *, softmax: bool, center: bool = True, top_k: int | None = None
) -> Tensor:
    """Algorithm 1 on a batch of logits (N x C_t): truncate to ``num_classes`` = C_k, softmax (PSP)
    or not (LSP), centre (unless ``center`` is False: LSP as in Eq. 6), L2-normalise, optionally
    keep the ``top_k`` largest entries (selected after centring, which keeps the order). Float64 (module
    docstring: the residuals of a near one-hot softmax)."""
    x = logits[:, :num_classes].double()
    if softmax:
        x = torch.softmax(x, dim=1)
    if center:
        x = x - x.mean(dim=1, keepdim=True)
    x = F.normalize(x, dim=1)
    return keep_top_k(x, top_k) if top_k is not None else x


def simplex_similarity(query: Tensor, gallery: Tensor) -> Tensor:
    """cos(q, g) - 1 = -||q - g||^2 / 2 for the unit features of Algorithm 1, from the coordinate differences in
    float64 (the same order as the cosine, without its cancellation near 1: module docstring). Two-class
    features (C_k = 2) are two-valued in exact arithmetic: their scores are rounded to ``SCORE_GRID`` so that
    equal features tie exactly and the retrieval's rule (lowest gallery index wins a tie) decides, not
    rounding noise."""
    distance = torch.cdist(query.double(), gallery.double(), compute_mode="donot_use_mm_for_euclid_dist")
    scores = -0.5 * distance.square()
    return torch.round(scores / SCORE_GRID) * SCORE_GRID if query.shape[1] == 2 else scores
