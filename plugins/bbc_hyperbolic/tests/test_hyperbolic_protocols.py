"""Template and verification protocols in the Lorentz geometry: synthetic hyperbolic clusters, where the
true class must win (the centroid is built on the hyperboloid, verification thresholds the geodesic distance)."""
from __future__ import annotations

import math

import pytest
import torch

from benchbackcompat import geometry
from benchbackcompat.metrics import retrieval
from bbc_hyperbolic.hbct import HBCT
from bbc_hyperbolic.common import HBCTParams


def clusters(K: float, per_class: int = 40, classes: int = 6, seed: int = 0):
    """Points exp_0(c_k + noise): class centres of tangent norm 3 in distinct directions, far from the
    origin, where hyperboloid coordinates are dominated by the time coordinate."""
    directions = torch.nn.functional.normalize(torch.randn(classes, 8, generator=torch.Generator().manual_seed(99)), dim=1)
    generator = torch.Generator().manual_seed(seed)  # the samples; the class centres are fixed
    labels = torch.arange(classes).repeat_interleave(per_class)
    tangent = 3.0 * directions[labels] + 0.15 * torch.randn(len(labels), 8, generator=generator)
    return geometry.expmap0(tangent, K), labels


@pytest.mark.parametrize("K", [1.0, 0.5])
def test_lorentz_centroid_lies_on_the_hyperboloid_and_is_the_point_itself_for_one_point(K):
    points, labels = clusters(K)
    c = geometry.centroids(points, labels, 6, K).double()
    lorentz_norm = c[:, 1:].pow(2).sum(1) - c[:, 0].pow(2)
    assert torch.allclose(lorentz_norm, torch.full((6,), -1 / K, dtype=torch.float64), rtol=1e-4)
    single = geometry.centroids(points[:1], torch.zeros(1, dtype=torch.long), 1, K)
    assert torch.allclose(single, points[:1], rtol=1e-5, atol=1e-5)
    # two points: the centroid is the geodesic midpoint, equidistant from both
    pair = points[[0, 50]]
    mid = geometry.centroids(pair, torch.zeros(2, dtype=torch.long), 1, K)
    d = geometry.distance(mid.expand(2, -1), pair, K)
    assert d[0].item() == pytest.approx(d[1].item(), rel=1e-3)


@pytest.mark.parametrize("K", [1.0, 0.5])
def test_template_top1_with_lorentz_templates_finds_the_true_class(K):
    method = HBCT(HBCTParams(curvature=K))
    gallery, gallery_labels = clusters(K, seed=0)
    query, query_labels = clusters(K, seed=1)
    query, query_labels = query[:: 4], query_labels[:: 4]
    accuracy = retrieval.template_top1(query, query_labels, gallery, gallery_labels,
                                       similarity=method.similarity(), templates=method.templates())
    assert accuracy == 100.0


def test_verification_thresholds_the_methods_own_distance():
    K = 1.0
    points, labels = clusters(K, per_class=30, seed=2)
    a, b, same = retrieval.sample_verification_pairs(labels, 300, 300, generator=torch.Generator().manual_seed(0))
    similarity = geometry.negative_distance(K)
    accuracy = retrieval.pair_verification(points[a], points[b], same, similarity=similarity)
    # brute force: the best single threshold on the geodesic distance over all pairs bounds the 10-fold accuracy
    d = geometry.distance(points[a], points[b], K)
    best = max(((d < t) == same).float().mean().item() for t in d.tolist() + [math.inf])
    assert accuracy >= 95.0 and accuracy <= 100.0 * best + 1e-9
