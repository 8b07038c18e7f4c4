"""multi-step's ``eval_classes = "seen"``: C[t][k] scored on the classes gallery model k was trained on."""
from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from pydantic import ValidationError

from benchbackcompat.cli import main
from benchbackcompat.scenarios.kinds import MultiStep
from benchbackcompat.data.arrays import ImageArrays
from benchbackcompat.engine.evaluate import chance_level, evaluate_matrices
from benchbackcompat.engine.features import ModelFeatures
from benchbackcompat.method import StandardMethod
from benchbackcompat.metrics import outcomes
from benchbackcompat.scenarios.data import ScenarioData
from benchbackcompat.testing.scenarios import tiny_run_args

CLASSES, DIM = 6, 5


def brute_force_cmc1(query: torch.Tensor, gallery: torch.Tensor, labels: torch.Tensor, classes: int) -> list[float]:
    """Leave-one-out CMC@1 per query by explicit loops over the images of labels below ``classes`` (NaN elsewhere)."""
    hits = []
    for i in range(len(labels)):
        if labels[i] >= classes:
            hits.append(math.nan)
            continue
        best, best_label = -math.inf, -1
        for j in range(len(labels)):
            if j != i and labels[j] < classes:
                similarity = sum(float(query[i, d]) * float(gallery[j, d]) for d in range(DIM))
                if similarity > best:
                    best, best_label = similarity, int(labels[j])
        hits.append(1.0 if best_label == int(labels[i]) else 0.0)
    return hits


def test_entries_are_scored_on_the_gallery_models_classes():
    labels = torch.arange(48) % CLASSES
    images = ImageArrays(torch.zeros(48, 1, 1, 1, dtype=torch.uint8), labels)
    data = ScenarioData(images, images, None, None, (0.5,), (0.25,), 1, CLASSES, "synthetic")
    gen = torch.Generator().manual_seed(0)
    feats = [F.normalize(torch.randn(CLASSES, DIM, generator=gen)[labels] + torch.randn(48, DIM, generator=gen), dim=1)
             for _ in range(3)]
    models = [ModelFeatures(f, None) for f in feats]
    seen = [2, 4, 6]
    result = evaluate_matrices(StandardMethod(), models, data, "loo", ["cmc@1"], seed=0, gallery_classes=seen)
    for t in range(3):
        for k in range(t + 1):
            expected = brute_force_cmc1(feats[t], feats[k], labels, seen[k])
            stored = outcomes.decode(result.outcomes["cmc@1"][t][k])
            np.testing.assert_array_equal(stored, expected)
            assert result.matrices["cmc@1"][t][k] == pytest.approx(100 * np.nanmean(expected))
    everything = evaluate_matrices(StandardMethod(), models, data, "loo", ["cmc@1"], seed=0)
    # the last gallery model saw every class: its column is the all-class one
    assert result.matrices["cmc@1"][2][2] == everything.matrices["cmc@1"][2][2]
    # chance on 2 classes of 8 images each: 7 of the 15 other images share the query's class
    assert chance_level("cmc@1", "loo", data, classes=2) == pytest.approx(100 * 7 / 15)


def test_default_keeps_the_keys_and_seen_needs_leave_one_out():
    assert "eval_classes" not in MultiStep().model_dump(mode="json")  # cells keyed before the option keep their keys
    assert MultiStep(eval_classes="seen").model_dump(mode="json")["eval_classes"] == "seen"
    with pytest.raises(ValidationError, match="needs protocol"):
        MultiStep(eval_classes="seen", protocol="nn")
    with pytest.raises(ValidationError, match="update_gain"):
        MultiStep(eval_classes="seen", update_gain=True)


def test_the_seen_variant_evaluates_the_models_multi_step_trained(tmp_path):
    """multi-step and multi-step-seen differ only in words and evaluation: the second cell loads every step."""
    base = ["run", "--preset", "cpu", "--methods", "l2", "--out", str(tmp_path), "-q", *tiny_run_args(1),
            "--set", "num_models=2"]
    assert main([*base, "--scenario", "multi-step"]) == 0
    trained = sorted(p.stat().st_mtime_ns for p in tmp_path.glob("cells/*/step-*.pt"))
    assert len(trained) == 2
    assert main([*base, "--scenario", "multi-step-seen"]) == 0
    stored = [json.loads(gzip.decompress(p.read_bytes())) for p in tmp_path.glob("cells/*/record.json.gz")]
    records = {record["scenario"]: record for record in stored}
    assert set(records) == {"multi-step", "multi-step-seen"} and records["multi-step"]["key"] != records["multi-step-seen"]["key"]
    assert sorted(p.stat().st_mtime_ns for p in tmp_path.glob("cells/*/step-*.pt")) == trained  # none trained again
    all_classes, seen = (records[name]["matrices"]["cmc@1"] for name in ("multi-step", "multi-step-seen"))
    assert all_classes[1][1] == seen[1][1]  # model 1 saw every class: the same model on the same test images
    assert all_classes[0][0] != seen[0][0]  # model 0 on all 6 classes, then on its own 3
    seen_folder = tmp_path / "cells" / records["multi-step-seen"]["key"]
    assert main([*base, "--scenario", "multi-step-seen", "--force"]) == 0  # forced: trained, not loaded
    assert len(list(seen_folder.glob("step-*.pt"))) == 2
