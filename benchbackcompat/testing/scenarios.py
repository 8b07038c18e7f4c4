"""Tiny scenarios of every kind for the conformance suite: seconds on a CPU, no download.

Six embedded classes of 16 x 16 images, 16 training images per class, one epoch, the
``convnet-s`` backbone (``convnet-m`` as the other architecture) with an 8-d embedding.
"""
from __future__ import annotations

from typing import Any

from benchbackcompat.config import NamedScenario

DATA: dict[str, Any] = {
    "name": "embedded", "num_classes": 6, "train_per_class": 16, "test_per_class": 4,
    "open_classes": 3, "pretrain_classes": 6, "image_size": 8,
}
TRAIN: dict[str, Any] = {"epochs": 1, "batch_size": 16, "lr": 0.01, "eval_batch_size": 256}
MODEL: dict[str, Any] = {"backbone": "convnet-s", "embedding_dim": 8}
TWO_ARCHS = ["convnet-s", "convnet-m"]

KIND_OPTIONS: dict[str, dict[str, Any]] = {
    "ext-data": {"old_fraction": 0.5},
    "ext-class": {},
    "new-arch": {"architectures": TWO_ARCHS},
    "both": {"architectures": TWO_ARCHS},
    "multi-step": {"num_models": 3},
    "cl2r": {"num_tasks": 3, "initial_class_fraction": 0.34, "memory_per_class": 4},
    "iam-cl2r": {"num_tasks": 3, "initial_class_fraction": 0.34, "memory_per_class": 4, "replacements": [3],
                 "pretrain_classes": [3, 6], "pretrain": TRAIN},
    "model-zoo": {"zoo": TWO_ARCHS, "pretrained": False},
}

# One representative per family, in order of preference: the default budget trains one
# single-update scenario, one multi-model scenario and the model zoo, where supported.
FAMILIES: tuple[tuple[str, ...], ...] = (
    ("ext-class", "both", "ext-data", "new-arch"),
    ("cl2r", "multi-step", "iam-cl2r"),
    ("model-zoo",),
)


def tiny_scenario(kind: str) -> NamedScenario:
    """The tiny scenario of ``kind`` (named after it)."""
    table = {"kind": kind, "data": DATA, "train": TRAIN, "model": MODEL, **KIND_OPTIONS[kind]}
    return NamedScenario.model_validate({"name": kind, "config": table})


def representative_kinds(supported: list[str]) -> list[str]:
    """The first supported kind of each family (see ``FAMILIES``)."""
    chosen = []
    for family in FAMILIES:
        chosen += [kind for kind in family if kind in supported][:1]
    return chosen
