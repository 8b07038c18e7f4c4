"""Classifier heads: learnable linear and cosine heads that can grow with new classes, and fixed
heads (d-Simplex, simplex ETF) stored as buffers."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from benchbackcompat.errors import BenchError


def _simplex_vertices(num_classes: int) -> Tensor:
    """T = [I_n; v 1^T] with v = (1 - sqrt(1 + n)) / n, n = K - 1: K points of a regular simplex, float64."""
    if num_classes < 2:
        raise BenchError(f"a simplex needs at least 2 classes, got num_classes={num_classes}")
    n = num_classes - 1
    t = torch.zeros(n + 1, n, dtype=torch.float64)
    t[:n] = torch.eye(n, dtype=torch.float64)
    t[n] = (1 - math.sqrt(1 + n)) / n
    return t


def dsimplex(num_classes: int) -> Tensor:
    """The K x (K-1) d-Simplex of iamcl2r / CoReS (Pernici et al.): the simplex vertices centred
    (column mean removed) and each row L2-normalised (+1e-8). Unit rows, pairwise cosine -1/(K-1)."""
    t = _simplex_vertices(num_classes)
    t = t - t.mean(0)
    t = t / (t.norm(dim=1, keepdim=True) + 1e-8)
    return t.to(torch.get_default_dtype())


def dsimplex_frobenius(num_classes: int) -> Tensor:
    """The older-code variant (CoReS before commit d43845b): the vertex matrix divided by its
    Frobenius norm before centring; same directions, row norm sqrt((K-1)/K) / ||T||_F ~ 1/sqrt(K)."""
    t = _simplex_vertices(num_classes)
    t = t / t.norm()
    return (t - t.mean(0)).to(torch.get_default_dtype())


def etf(num_classes: int, dim: int | None = None) -> Tensor:
    """A simplex equiangular tight frame: K unit rows in R^dim with pairwise cosine -1/(K-1), summing to 0.

    For dim = K-1 (the default) this is :func:`dsimplex`; for dim > K-1 the d-Simplex is embedded with a
    fixed orthonormal map R^{K-1} -> R^dim (QR of a Gaussian matrix drawn from torch.Generator seed 0),
    so the same (K, dim) always gives the same matrix."""
    dim = num_classes - 1 if dim is None else dim
    if dim < num_classes - 1:
        raise BenchError(f"an ETF of {num_classes} classes needs dim >= {num_classes - 1}, got dim={dim}")
    base = dsimplex(num_classes).double()
    if dim == num_classes - 1:
        return base.to(torch.get_default_dtype())
    gaussian = torch.randn(dim, num_classes - 1, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    basis, _ = torch.linalg.qr(gaussian)  # dim x (K-1), orthonormal columns
    return (base @ basis.T).to(torch.get_default_dtype())


class _GrowingHead(nn.Module):
    """A head with one learnable weight row per class (and an optional bias) that can grow."""

    def __init__(self, in_dim: int, num_classes: int, bias: bool) -> None:
        super().__init__()
        layer = nn.Linear(in_dim, num_classes, bias=bias)
        self.in_dim = in_dim
        self.weight = layer.weight
        self.bias = layer.bias

    @property
    def num_classes(self) -> int:
        return self.weight.shape[0]

    @torch.no_grad()
    def expand(self, num_classes: int) -> None:
        """Grow to ``num_classes`` rows: old rows are kept bit for bit, new rows are initialised as
        ``nn.Linear`` does. The parameters are new objects: rebuild the optimiser afterwards."""
        if num_classes < self.num_classes:
            raise BenchError(f"cannot shrink a head of {self.num_classes} classes to {num_classes}")
        if num_classes == self.num_classes:
            return
        new = nn.Linear(self.in_dim, num_classes - self.num_classes, bias=self.bias is not None)
        new = new.to(device=self.weight.device, dtype=self.weight.dtype)
        self.weight = nn.Parameter(torch.cat([self.weight, new.weight]))
        if self.bias is not None:
            self.bias = nn.Parameter(torch.cat([self.bias, new.bias]))


class LinearHead(_GrowingHead):
    """logits = f W^T + b."""

    def __init__(self, in_dim: int, num_classes: int, bias: bool = True) -> None:
        super().__init__(in_dim, num_classes, bias)

    def forward(self, features: Tensor) -> Tensor:
        return F.linear(features, self.weight, self.bias)


class CosineHead(_GrowingHead):
    """logits = s * cos(f, w_k) (a normalised-softmax classifier, e.g. CosFace without margin)."""

    def __init__(self, in_dim: int, num_classes: int, scale: float = 16.0) -> None:
        super().__init__(in_dim, num_classes, bias=False)
        self.scale = scale

    def forward(self, features: Tensor) -> Tensor:
        return self.scale * F.linear(F.normalize(features, dim=1), F.normalize(self.weight, dim=1))


class FixedHead(nn.Module):
    """logits = f W^T with a fixed K x d matrix W held as a buffer: no gradient, no weight decay, no bias."""

    def __init__(self, weight: Tensor) -> None:
        super().__init__()
        self.register_buffer("weight", weight.detach().clone())

    @property
    def num_classes(self) -> int:
        return self.weight.shape[0]

    def expand(self, num_classes: int) -> None:
        """No-op: all K classes are pre-allocated; asking for more is an error."""
        if num_classes > self.num_classes:
            raise BenchError(
                f"the fixed head pre-allocates {self.num_classes} classes and cannot grow to {num_classes}; "
                "pre-allocate more classes (num_classes) when building the network"
            )

    def forward(self, features: Tensor) -> Tensor:
        return F.linear(features, self.weight)
