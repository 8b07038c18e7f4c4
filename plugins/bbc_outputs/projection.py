"""Algorithm 1 of "The Probability Simplex is Compatible": classifier outputs as retrieval features.

For a query model t (C_t outputs) compared with a gallery model k (C_k <= C_t outputs),

    h = P_{t,k} f / ||P_{t,k} f||,   P_{t,k} = [P_{k,k} | 0],   P_{k,k} = I - J / C_k      (Eqs. 2-4)

with f the softmax (PSP) or the logits (LSP): keep the first C_k entries, subtract their mean,
L2-normalise. For PSP the truncated softmax is computed as softmax of the truncated logits: it
differs from softmax(z)[:C_k] only by a positive factor, which normalisation removes, and it
cannot underflow to an all-zero vector when the query model is confident about a new class.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from benchbackcompat.metrics.retrieval import cosine_similarity

SCORE_GRID = 2.0**-16  # similarities are rounded to this grid (far above float32 rounding error)


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
    keep the ``top_k`` largest entries (selected after centring, which keeps the order)."""
    x = logits[:, :num_classes].float()
    if softmax:
        x = torch.softmax(x, dim=1)
    if center:
        x = x - x.mean(dim=1, keepdim=True)
    x = F.normalize(x, dim=1)
    return keep_top_k(x, top_k) if top_k is not None else x


def tie_exact_cosine(query: Tensor, gallery: Tensor) -> Tensor:
    """Cosine similarity rounded to ``SCORE_GRID``: features that are equal in exact arithmetic (a
    two-class step gives two-valued features) score exactly equal, so the retrieval's rule (lowest
    gallery index wins a tie) decides, not float rounding noise."""
    return torch.round(cosine_similarity(query, gallery) / SCORE_GRID) * SCORE_GRID
