"""Lorentz-model geometry on top of geoopt: lift, inner product, geodesic distance, entailment cones, uncertainty."""
from __future__ import annotations

from benchbackcompat.geometry.lorentz import (
    centroids,
    class_templates,
    distance,
    entailment_loss,
    expmap0,
    exterior_angle,
    float32,
    half_aperture,
    inner,
    lift,
    manifold,
    is_geodesic_similarity,
    negative_distance,
    pairwise_distance,
    pairwise_inner,
    rescale_clip,
    uncertainty,
)

__all__ = [
    "centroids",
    "class_templates",
    "distance",
    "entailment_loss",
    "expmap0",
    "exterior_angle",
    "float32",
    "half_aperture",
    "inner",
    "lift",
    "manifold",
    "is_geodesic_similarity",
    "negative_distance",
    "pairwise_distance",
    "pairwise_inner",
    "rescale_clip",
    "uncertainty",
]
