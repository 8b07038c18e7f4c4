"""Lorentz-model operations (HBCT, Bui et al. ICML'25, Sec. 3-4) on top of ``geoopt.Lorentz``.

Points are (d+1)-vectors ``[x_time, x_space]`` on the hyperboloid <x, x>_L = -1/K of curvature
-K (paper convention, K > 0); geoopt's ``Lorentz(k)`` has <x, x>_L = -k, so ``k = 1/K``.
Every function runs in float32 with autocast disabled, clamps its arcosh / arcsin / arccos
inputs, and stays finite (values and gradients) for zero vectors, huge norms and identical points.
"""
from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from typing import TypeVar

import torch
from torch import Tensor

with warnings.catch_warnings():  # geoopt scripts its math with torch.jit.script, deprecated in recent torch
    warnings.filterwarnings("ignore", message=".*torch.jit.script.*", category=FutureWarning)
    import geoopt

F = TypeVar("F", bound=Callable[..., Tensor])

ACOSH_EPS = 1e-6  # arcosh inputs >= 1 + ACOSH_EPS: float32 resolves it and d/dx arcosh stays < 710
ANGLE_EPS = 1e-6  # arcsin / arccos inputs within [-1 + eps, 1 - eps]
NORM_EPS = 1e-8
MAX_SINH_INPUT = math.asinh(2.0**15)  # sqrt(K)|z| is clamped here so cosh/sinh never overflow (MERU)


def float32(fn: F) -> F:
    """Run ``fn`` with autocast disabled and floating-point tensor arguments cast to float32, and
    without TorchScript graph optimisation: geoopt's scripted functions would otherwise switch to a
    fused graph after a few calls, whose last-bit differences make results depend on call history."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        device = next((a.device.type for a in args if isinstance(a, Tensor)), "cpu")
        cast = [a.float() if isinstance(a, Tensor) and a.is_floating_point() else a for a in args]
        with torch.autocast(device, enabled=False), torch.jit.optimized_execution(False):
            return fn(*cast, **kwargs)

    return wrapper  # type: ignore[return-value]


@functools.lru_cache(maxsize=8)
def manifold(curvature: float = 1.0) -> geoopt.Lorentz:
    """geoopt's hyperboloid for paper curvature -K: ``Lorentz(k=1/K)``."""
    if curvature <= 0:
        raise ValueError(f"curvature K must be > 0, got {curvature}")
    return geoopt.Lorentz(k=1.0 / curvature)


def safe_norm(x: Tensor, dim: int = -1, keepdim: bool = False) -> Tensor:
    """Euclidean norm with a finite gradient at 0 that does not overflow for huge entries (the
    vector is divided by its largest |entry|, at least 1, before squaring)."""
    scale = x.detach().abs().amax(dim, keepdim=True).clamp_min(1.0)
    norm = scale * (x / scale).pow(2).sum(dim, keepdim=True).clamp_min(NORM_EPS**2).sqrt()
    return norm if keepdim else norm.squeeze(dim)


@float32
def rescale_clip(z: Tensor, zeta: float) -> Tensor:
    """HBCT Sec. 4.4: z / sqrt(d), then the norm clipped to ``zeta`` (z * min(1, zeta / |z|))."""
    z = z / math.sqrt(z.shape[-1])
    return z * (zeta / safe_norm(z, keepdim=True)).clamp(max=1.0)


@float32
def expmap0(z: Tensor, curvature: float = 1.0) -> Tensor:
    """Lift a tangent vector z at the origin to the hyperboloid: exp_0([0, z]) (Eq. 5), i.e.
    [cosh(sqrt(K)|z|) / sqrt(K), sinh(sqrt(K)|z|) z / (sqrt(K)|z|)]; sqrt(K)|z| is clamped to asinh(2^15)."""
    limit = MAX_SINH_INPUT / math.sqrt(curvature)
    z = z * (limit / safe_norm(z, keepdim=True)).clamp(max=1.0)
    tangent = torch.cat([torch.zeros_like(z[..., :1]), z], dim=-1)
    return manifold(curvature).expmap0(tangent)


def lift(z: Tensor, curvature: float = 1.0, zeta: float | None = None) -> Tensor:
    """The hybrid encoder's lift (Khrulkov et al.; HBCT Sec. 4.4): rescale by 1/sqrt(d), clip to
    ``zeta`` (skipped when None), then :func:`expmap0`."""
    return expmap0(rescale_clip(z, zeta) if zeta is not None else z, curvature)


@float32
def inner(x: Tensor, y: Tensor) -> Tensor:
    """Lorentz inner product <x, y>_L = <x_s, y_s> - x_t y_t of matching rows (Eq. 1)."""
    return geoopt.manifolds.lorentz.math.inner(x, y)


@float32
def pairwise_inner(x: Tensor, y: Tensor) -> Tensor:
    """<x_i, y_j>_L for every row of x (n x (d+1)) and y (m x (d+1)): an n x m matrix."""
    return x[..., 1:] @ y[..., 1:].transpose(-1, -2) - x[..., :1] * y[..., :1].transpose(-1, -2)


def _arcosh_distance(minus_k_inner: Tensor, curvature: float) -> Tensor:
    return torch.acosh(minus_k_inner.clamp_min(1.0 + ACOSH_EPS)) / math.sqrt(curvature)


@float32
def distance(x: Tensor, y: Tensor, curvature: float = 1.0) -> Tensor:
    """Geodesic distance of matching rows, arcosh(-K <x, y>_L) / sqrt(K) (Eq. 3)."""
    return _arcosh_distance(-curvature * inner(x, y), curvature)


@float32
def pairwise_distance(x: Tensor, y: Tensor, curvature: float = 1.0) -> Tensor:
    """Geodesic distance of every row of x to every row of y (n x m), Eq. 3. Identical points give
    arcosh(1 + 1e-6) ~ 1.4e-3 (the clamp), not 0."""
    return _arcosh_distance(-curvature * pairwise_inner(x, y), curvature)


def negative_distance(curvature: float = 1.0) -> Callable[[Tensor, Tensor], Tensor]:
    """A retrieval similarity (higher = more similar): minus the pairwise geodesic distance."""
    return functools.partial(_negative_distance, curvature=curvature)


def is_geodesic_similarity(similarity: Callable[[Tensor, Tensor], Tensor]) -> bool:
    """Whether ``similarity`` is one made by :func:`negative_distance`."""
    return isinstance(similarity, functools.partial) and similarity.func is _negative_distance


def _negative_distance(query: Tensor, gallery: Tensor, curvature: float) -> Tensor:
    return -pairwise_distance(query, gallery, curvature)


def centroids(points: Tensor, index: Tensor, num_classes: int, curvature: float = 1.0) -> Tensor:
    """The Lorentzian centroid of the points of each class (Law et al., ICML'19): their sum in the ambient
    space projected back onto the hyperboloid, s / (sqrt(K) sqrt(-<s, s>_L)), so <c, c>_L = -1/K. In float64."""
    sums = torch.zeros(num_classes, points.shape[1], dtype=torch.float64, device=points.device)
    sums.index_add_(0, index, points.to(torch.float64))
    norm = (sums[:, :1].pow(2) - sums[:, 1:].pow(2).sum(1, keepdim=True)).clamp_min(1e-30).sqrt()
    return (sums / (math.sqrt(curvature) * norm)).to(points.dtype)


def class_templates(curvature: float = 1.0) -> Callable[[Tensor, Tensor, int], Tensor]:
    """Class templates on the hyperboloid (the Lorentzian centroid), for the template retrieval protocol."""
    return functools.partial(centroids, curvature=curvature)


@float32
def half_aperture(x: Tensor, curvature: float = 1.0, min_radius: float = 0.1) -> Tensor:
    """Half-aperture of the entailment cone at x, arcsin(2 eps / (sqrt(K) |x_s|)) (Eq. 11);
    saturates at ~pi/2 near the origin."""
    ratio = 2.0 * min_radius / (math.sqrt(curvature) * safe_norm(x[..., 1:]))
    return torch.asin(ratio.clamp(-1.0 + ANGLE_EPS, 1.0 - ANGLE_EPS))


@float32
def exterior_angle(x: Tensor, y: Tensor, curvature: float = 1.0) -> Tensor:
    """Exterior angle pi - angle(O, x, y) of child y seen from parent x (HBCT Sec. 4.3):
    arccos((y_t + x_t K<x,y>_L) / (|x_s| sqrt((K<x,y>_L)^2 - 1))); 0 when y lies on the geodesic
    from the origin through x, beyond x."""
    c = curvature * inner(x, y)
    numerator = y[..., 0] + x[..., 0] * c
    denominator = safe_norm(x[..., 1:]) * (c.pow(2) - 1.0).clamp_min(ANGLE_EPS).sqrt()
    return torch.acos((numerator / denominator).clamp(-1.0 + ANGLE_EPS, 1.0 - ANGLE_EPS))


@float32
def entailment_loss(parent: Tensor, child: Tensor, curvature: float = 1.0, min_radius: float = 0.1) -> Tensor:
    """max(0, ext(parent, child) - aper(parent)) per pair (HBCT Eq. after 11): zero inside the cone."""
    return torch.relu(exterior_angle(parent, child, curvature) - half_aperture(parent, curvature, min_radius))


@float32
def uncertainty(z: Tensor, curvature: float = 1.0) -> Tensor:
    """Unc = 1 - |h_s| / h_t = 1 - tanh(sqrt(K) |z|) of the lifted z (Eq. 10 with the exact 1/sqrt(K)
    factors, which cancel); in (0, 1], 1 at the origin."""
    return 1.0 - torch.tanh(math.sqrt(curvature) * safe_norm(z))
