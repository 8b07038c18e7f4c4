"""Tiny scenarios of every kind for the conformance suite: seconds on a CPU, no download.

Six embedded classes of 16 x 16 images, 16 training images per class, one epoch, the
``convnet-s`` backbone (``convnet-m`` as the other architecture) with an 8-d embedding.
"""
from __future__ import annotations

from typing import Any

from benchbackcompat.scenarios.kinds import SCENARIO_KINDS, NamedScenario, kind_class

DATA: dict[str, Any] = {
    "name": "embedded", "num_classes": 6, "train_per_class": 16, "test_per_class": 4,
    "open_classes": 3, "pretrain_classes": 6, "image_size": 8,
}
TRAIN: dict[str, Any] = {"epochs": 1, "batch_size": 16, "lr": 0.01, "eval_batch_size": 256}
MODEL: dict[str, Any] = {"backbone": "convnet-s", "embedding_dim": 8}


def tiny_run_args(epochs: int) -> list[str]:
    """``--set`` options of ``benchbackcompat run`` for end-to-end tests: six embedded classes of 40 training and
    12 test images, batch 32, a 16-d embedding and exactly ``epochs`` epochs (no step floor from the preset;
    seconds per cell on a CPU)."""
    options = {"data.num_classes": 6, "data.train_per_class": 40, "data.test_per_class": 12, "data.open_classes": 4,
               "data.pretrain_classes": 8, "train.epochs": epochs, "train.min_steps": 0, "train.batch_size": 32,
               "model.embedding_dim": 16}
    return [arg for key, value in options.items() for arg in ("--set", f"{key}={value}")]


def tiny_scenario(kind: str) -> NamedScenario:
    """The tiny scenario of ``kind`` (named after it): the shared tiny data, training and model, and the kind's
    own ``example`` options."""
    table = {"kind": kind, "data": DATA, "train": TRAIN, "model": MODEL, **kind_class(kind).example}
    return NamedScenario.model_validate({"name": kind, "config": table})


def representative_kinds(supported: list[str]) -> list[str]:
    """The first supported kind of each family (``ScenarioBase.family``), in the order of ``SCENARIO_CLASSES``:
    the default budget trains one single-update scenario, one sequence and the model zoo, where supported."""
    chosen: dict[str, str] = {}
    for kind in SCENARIO_KINDS:
        if kind in supported:
            chosen.setdefault(kind_class(kind).family, kind)
    return list(chosen.values())
