"""Lorentz geometry: closed forms, hand-computed values, and finiteness at the clamps."""
from __future__ import annotations

import math

import geoopt
import pytest
import torch

from benchbackcompat import geometry

CURVATURES = (0.5, 1.0, 2.0)


def closed_form_lift(c: torch.Tensor, K: float) -> torch.Tensor:
    n = c.double().norm(dim=-1, keepdim=True)
    return torch.cat([torch.cosh(math.sqrt(K) * n) / math.sqrt(K), torch.sinh(math.sqrt(K) * n) / (math.sqrt(K) * n) * c.double()], -1)


@pytest.mark.parametrize("K", CURVATURES)
def test_lift_matches_the_closed_form_after_rescale_and_clip(K):
    torch.manual_seed(0)
    z = torch.randn(16, 8) * torch.logspace(-1, 1.5, 16)[:, None]  # some below, some above the clip
    zeta = 1.2
    c = z / math.sqrt(8)
    c = c * torch.clamp(zeta / c.norm(dim=1, keepdim=True), max=1.0)
    h = geometry.lift(z, K, zeta)
    assert torch.allclose(h.double(), closed_form_lift(c, K), atol=1e-5)
    assert geometry.rescale_clip(z, zeta).norm(dim=1).max() <= zeta + 1e-6
    small = z.norm(dim=1) / math.sqrt(8) < zeta
    assert torch.allclose(geometry.rescale_clip(z, zeta)[small], z[small] / math.sqrt(8))
    assert torch.allclose(geometry.inner(h, h), torch.full((16,), -1.0 / K), atol=1e-4)  # on <x,x>_L = -1/K


@pytest.mark.parametrize("K", CURVATURES)
def test_distance_is_symmetric_zero_on_the_diagonal_and_is_arcosh_of_the_inner_product(K):
    torch.manual_seed(1)
    h = geometry.lift(torch.randn(12, 16) * 4, K, zeta=1.2)
    D = geometry.pairwise_distance(h, h, K)
    assert torch.allclose(D, D.T, atol=1e-5)
    assert D.diagonal().abs().max() < 3e-3  # arcosh(1 + 1e-6) ~ 1.4e-3 is the clamp's floor
    hd = h.double()
    inner = hd[:, 1:] @ hd[:, 1:].T - hd[:, :1] @ hd[:, :1].T
    expected = torch.acosh((-K * inner).clamp_min(1.0)) / math.sqrt(K)
    off = ~torch.eye(12, dtype=torch.bool)
    assert torch.allclose(D[off].double(), expected[off], atol=1e-4)
    # geoopt with k = 1/K is the same metric
    assert torch.allclose(D[off], geometry.manifold(K).dist(h[:, None], h[None, :])[off], atol=1e-4)
    assert torch.allclose(geometry.distance(h, h.flip(0), K), D.flip(1).diagonal(), atol=1e-5)


@pytest.mark.parametrize("K", CURVATURES)
def test_distance_from_the_origin_along_a_ray_is_the_tangent_norm(K):
    u = torch.nn.functional.normalize(torch.randn(1, 6), dim=1)
    points = geometry.expmap0(torch.tensor([[0.0], [0.3], [1.1]]) * u, K)
    D = geometry.pairwise_distance(points, points, K)
    assert D[0, 1].item() == pytest.approx(0.3, abs=2e-3)
    assert D[0, 2].item() == pytest.approx(1.1, abs=2e-3)
    assert D[1, 2].item() == pytest.approx(0.8, abs=2e-3)


@pytest.mark.parametrize("K", CURVATURES)
def test_child_on_the_parents_axis_is_entailed_and_one_outside_the_cone_is_not(K):
    torch.manual_seed(2)
    u = torch.nn.functional.normalize(torch.randn(5, 10), dim=1)
    parent = geometry.expmap0(0.8 * u, K)
    child = geometry.expmap0(1.5 * u, K)  # same ray, further out
    assert geometry.exterior_angle(parent, child, K).max() < 1e-2
    assert torch.equal(geometry.entailment_loss(parent, child, K), torch.zeros(5))
    inward = geometry.expmap0(0.2 * u, K)  # same ray, towards the origin: the angle is pi
    assert torch.allclose(geometry.exterior_angle(parent, inward, K), torch.full((5,), math.pi), atol=1e-2)
    orthogonal = torch.linalg.qr(torch.randn(10, 10))[0][:, :2].T  # two orthonormal directions
    p = geometry.expmap0(1.0 * orthogonal[:1], K)
    outside = geometry.expmap0(1.0 * orthogonal[1:], K)
    loss = geometry.entailment_loss(p, outside, K)
    assert loss.item() > 0.3
    assert loss.item() == pytest.approx(
        (geometry.exterior_angle(p, outside, K) - geometry.half_aperture(p, K)).item(), abs=1e-6)


@pytest.mark.parametrize("K", [1.0, 0.5, 2.0])
def test_exterior_angle_is_pi_minus_the_law_of_cosines_angle_at_general_points(K):
    """The angle at the parent x of the geodesic triangle (O, x, y) from the hyperbolic law of cosines,
    cosh(sK c) = cosh(sK a) cosh(sK b) - sinh(sK a) sinh(sK b) cos(gamma), sK = sqrt(K), with
    a = d(x, y), b = d(O, x), c = d(O, y) written out in float64 from the hyperboloid coordinates;
    the exterior angle is pi - gamma."""
    generator = torch.Generator().manual_seed(3)
    d = 5
    space_x = torch.randn(40, d, generator=generator, dtype=torch.float64) * 1.5
    space_y = torch.randn(40, d, generator=generator, dtype=torch.float64) * 1.5
    space_y[:20] = space_x[:20] * 1.8 + 0.3 * space_y[:20]  # children near the parent's axis: small angles

    def on_hyperboloid(space):  # x_t = sqrt(1/K + |x_s|^2)
        return torch.cat([(1 / K + space.pow(2).sum(1, keepdim=True)).sqrt(), space], dim=1)

    x, y = on_hyperboloid(space_x), on_hyperboloid(space_y)
    origin = torch.zeros(1, d + 1, dtype=torch.float64)
    origin[0, 0] = 1 / math.sqrt(K)
    sk = math.sqrt(K)

    def dist(u, v):
        lorentz = (u[:, 1:] * v[:, 1:]).sum(1) - u[:, 0] * v[:, 0]
        return torch.acosh((-K * lorentz).clamp_min(1.0)) / sk

    a, b, c = dist(x, y), dist(origin.expand_as(x), x), dist(origin.expand_as(y), y)
    cos_gamma = (torch.cosh(sk * a) * torch.cosh(sk * b) - torch.cosh(sk * c)) / (torch.sinh(sk * a) * torch.sinh(sk * b))
    expected = math.pi - torch.acos(cos_gamma.clamp(-1, 1))
    got = geometry.exterior_angle(x.float(), y.float(), K).double()
    assert torch.allclose(got, expected, atol=2e-3), (got - expected).abs().max()
    assert expected.min() < 1.0 and expected.max() > 2.3  # general points: a wide range of angles


def test_half_aperture_by_hand():
    # K = 1, |z| = 1: |h_s| = sinh(1), aper = asin(2 * 0.1 / sinh(1))
    h = geometry.expmap0(torch.tensor([[1.0, 0.0, 0.0]]), 1.0)
    assert geometry.half_aperture(h, 1.0, 0.1).item() == pytest.approx(math.asin(0.2 / math.sinh(1.0)), abs=1e-5)
    # K = 4: |h_s| = sinh(2 |z|) / 2, aper = asin(2 * 0.1 / (2 * |h_s|))
    h = geometry.expmap0(torch.tensor([[0.5, 0.0, 0.0]]), 4.0)
    assert geometry.half_aperture(h, 4.0, 0.1).item() == pytest.approx(math.asin(0.2 / math.sinh(1.0)), abs=1e-5)
    near_origin = geometry.expmap0(torch.tensor([[1e-3, 0.0, 0.0]]), 1.0)
    assert geometry.half_aperture(near_origin).item() == pytest.approx(math.pi / 2, abs=2e-3)


@pytest.mark.parametrize("K", CURVATURES)
def test_uncertainty_is_one_minus_the_poincare_norm(K):
    z = torch.randn(7, 5) * torch.linspace(0, 2, 7)[:, None]
    h = geometry.expmap0(z, K)
    poincare = h[:, 1:].norm(dim=1) / h[:, 0]
    assert torch.allclose(geometry.uncertainty(z, K), 1 - poincare, atol=1e-5)
    assert torch.allclose(geometry.uncertainty(z, K), 1 - torch.tanh(math.sqrt(K) * z.norm(dim=1)), atol=1e-6)
    assert geometry.uncertainty(torch.zeros(1, 5), K).item() == pytest.approx(1.0)


def test_zero_vectors_huge_norms_and_identical_points_stay_finite_with_finite_gradients():
    z = torch.cat([torch.zeros(2, 6), torch.randn(2, 6) * 1e30, torch.randn(2, 6)]).requires_grad_()
    h = geometry.lift(z, 1.0, zeta=None)
    assert torch.isfinite(h).all()
    assert torch.allclose(h[:2], geometry.manifold(1.0).origin(2, 7))  # zero -> origin
    terms = [
        geometry.pairwise_distance(h, h),  # identical points on the diagonal: clamped arcosh
        geometry.exterior_angle(h, h),  # identical points: clamped (c^2 - 1) and arccos
        geometry.exterior_angle(h, h.flip(0)),
        geometry.half_aperture(h),  # zero vectors: clamped arcsin
        geometry.uncertainty(z),
        geometry.rescale_clip(z, 1.0),
        geometry.lift(z, 1.0, zeta=1.0),
    ]
    for term in terms:
        assert torch.isfinite(term).all()
    sum(t.sum() for t in terms).backward()
    assert torch.isfinite(z.grad).all()


def test_gradients_at_the_clamps_are_finite():
    x = geometry.expmap0(torch.tensor([[0.5, 0.2, 0.0]]), 1.0).detach().requires_grad_()
    y = x.detach().clone().requires_grad_()
    (geometry.distance(x, y) + geometry.exterior_angle(x, y) + geometry.half_aperture(x)).sum().backward()
    assert torch.isfinite(x.grad).all() and torch.isfinite(y.grad).all()
    origin = geometry.expmap0(torch.zeros(1, 3)).requires_grad_()
    geometry.half_aperture(origin).sum().backward()  # arcsin input clamped at 1 - 1e-6
    assert torch.isfinite(origin.grad).all()


def test_runs_in_float32_under_bf16_autocast():
    z = torch.randn(4, 8).bfloat16()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = geometry.lift(z, 1.0, 1.2)
        D = geometry.pairwise_distance(h, h)
    assert h.dtype == torch.float32 and D.dtype == torch.float32


def test_negative_distance_ranks_the_nearest_first_and_geoopt_curvature_convention():
    assert geometry.manifold(2.0).k.item() == pytest.approx(0.5)  # paper K -> geoopt k = 1/K
    assert isinstance(geometry.manifold(1.0), geoopt.Lorentz)
    g = geometry.expmap0(torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    q = geometry.expmap0(torch.tensor([[0.9, 0.1]]))
    assert geometry.negative_distance()(q, g).argmax().item() == 1
    with pytest.raises(ValueError):
        geometry.manifold(0.0)
