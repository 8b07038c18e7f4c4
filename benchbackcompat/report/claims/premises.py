"""Named premises: conditions of a paper's setting that each compared row must show before its claim is judged.

A premise measures one value per seed of a row (``measure(row, metric)`` gives seed -> value) and holds when the
t-interval of those values lies above its ``threshold``; it fails when the interval lies below, and leaves the
claim undecidable otherwise.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from benchbackcompat.report.table_data import Row

PREMISE_TOLERANCE = 2.0  # points: the convergence calibration's tolerance; a smaller move is within noise


@dataclass(frozen=True)
class Premise:
    statement: str
    measure: Callable[[Row, str], dict[int, float]]
    threshold: float
    unit: str


def fine_tuning_gain(row: Row, metric: str) -> dict[int, float]:
    """IAM-CL2R's premise: models pretrained elsewhere are improved by fine-tuning on the task data, so later models
    can beat earlier galleries. Per seed, the mean over runs of fine-tuning (from a model that starts from a
    pretrained one to the last before the next replacement) of the self-test change, in points."""
    gains = {}
    for record in row.finished:
        diagonal = [line[i] for i, line in enumerate(record.matrices.get(metric) or [])]
        starts = [i for i, step in enumerate(record.steps) if step.get("init") == "pretrained"] + [len(diagonal)]
        changes = [diagonal[end - 1] - diagonal[start] for start, end in itertools.pairwise(starts)
                   if end - start > 1 and None not in (diagonal[start], diagonal[end - 1])]
        if changes:
            gains[record.seed] = float(np.mean(changes))
    return gains


PREMISES = {
    "fine-tuning-improves": Premise("fine-tuning on the task data improves the models pretrained elsewhere",
                                    fine_tuning_gain, PREMISE_TOLERANCE, "points of self-test per run of fine-tuning"),
}
