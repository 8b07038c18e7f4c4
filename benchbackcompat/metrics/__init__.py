"""Evaluation metrics: compatibility-matrix summaries and retrieval protocols.

The retrieval protocols (which need torch) are imported on first use, so that reading stored records
(compatibility summaries on plain matrices) does not import torch.
"""
from __future__ import annotations

import importlib
from typing import Any

from benchbackcompat.metrics.compatibility import (
    average_accuracy,
    average_accuracy_at,
    average_accuracy_curve,
    average_compatibility,
    average_compatibility_accuracy,
    average_compatibility_at,
    average_compatibility_curve,
    backward_compatibility,
    empirical_compatibility,
    forward_compatibility,
    p_com,
    p_up,
    update_gain,
)
from benchbackcompat.metrics.summary import summarise

__all__ = [
    "Similarity",
    "average_accuracy",
    "average_accuracy_at",
    "average_accuracy_curve",
    "average_compatibility",
    "average_compatibility_accuracy",
    "average_compatibility_at",
    "average_compatibility_curve",
    "backward_compatibility",
    "cmc",
    "cosine_similarity",
    "empirical_compatibility",
    "forward_compatibility",
    "leave_one_out_cmc",
    "leave_one_out_map",
    "mean_average_precision",
    "nearest_neighbour_top1",
    "negative_squared_euclidean",
    "p_com",
    "p_up",
    "pair_verification",
    "pair_verification_outcomes",
    "sample_verification_pairs",
    "summarise",
    "template_top1",
    "update_gain",
]

RETRIEVAL = frozenset({"Similarity", "cmc", "cosine_similarity", "leave_one_out_cmc", "leave_one_out_map",
                       "mean_average_precision", "nearest_neighbour_top1", "negative_squared_euclidean",
                       "pair_verification", "pair_verification_outcomes", "sample_verification_pairs", "template_top1"})


def __getattr__(name: str) -> Any:
    if name in RETRIEVAL:
        return getattr(importlib.import_module("benchbackcompat.metrics.retrieval"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | RETRIEVAL)
