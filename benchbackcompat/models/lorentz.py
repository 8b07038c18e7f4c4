"""Hybrid Lorentz encoder (backbone -> projection -> rescale/clip -> exp map at the origin) and the
Lorentz multinomial logistic regression head (HBCT Eq. 9, Bdeir et al. 2023)."""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from benchbackcompat import geometry
from benchbackcompat.models.network import Network, NetworkOutput


class LorentzMLR(nn.Module):
    """Hyperbolic MLR over hyperboloid points h = [h_t, h_s] (HBCT Eq. 9).

    Class y has a in R and z in R^d, giving the hyperplane normal w = [sinh(sqrt(K) a)|z|, cosh(sqrt(K) a) z]
    in T_0; alpha = <w, h>_L = cosh(sqrt(K) a) <z, h_s> - sinh(sqrt(K) a)|z| h_t, beta = ||w||_L = |z|, and
    logit = sign(alpha) beta d(h, H_w) = (|z| / sqrt(K)) asinh(sqrt(K) alpha / |z|). Rows can be copied
    into a grown head (``a`` and ``z`` have one leading entry per class)."""

    def __init__(self, dim: int, num_classes: int, curvature: float = 1.0) -> None:
        super().__init__()
        bound = 1.0 / math.sqrt(dim)
        self.curvature = curvature
        self.a = nn.Parameter(torch.empty(num_classes).uniform_(-bound, bound))
        self.z = nn.Parameter(torch.empty(num_classes, dim).uniform_(-bound, bound))

    @property
    def num_classes(self) -> int:
        return self.z.shape[0]

    @geometry.float32
    def forward(self, h: Tensor) -> Tensor:
        root = math.sqrt(self.curvature)
        scaled = root * self.a.float()
        z = self.z.float()
        beta = geometry.lorentz.safe_norm(z)
        alpha = torch.cosh(scaled) * (h[:, 1:] @ z.T) - torch.sinh(scaled) * beta * h[:, :1]
        return beta / root * torch.asinh(root * alpha / beta)


class LorentzNetwork(Network):
    """The hybrid encoder: ``embed`` gives the Euclidean projection z, ``tangent`` z / sqrt(d) clipped to
    ``zeta``, ``lift`` its point on the hyperboloid of curvature -K (the retrieval feature), and the
    forward pass that point with the Lorentz MLR logits. Lorentz math runs in float32 outside autocast."""

    def __init__(self, backbone: nn.Module, num_classes: int, embedding_dim: int | None, curvature: float, zeta: float) -> None:
        dim = embedding_dim or backbone.out_dim
        super().__init__(backbone, LorentzMLR(dim, num_classes, curvature), embedding_dim)
        self.curvature, self.zeta = curvature, zeta

    def tangent(self, x: Tensor) -> Tensor:
        return geometry.rescale_clip(self.embed(x), self.zeta)

    def lift(self, x: Tensor) -> Tensor:
        return geometry.expmap0(self.tangent(x), self.curvature)

    def forward(self, x: Tensor) -> NetworkOutput:
        h = self.lift(x)
        return NetworkOutput(h, self.head(h))
