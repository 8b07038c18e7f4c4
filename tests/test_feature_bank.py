"""Evaluation features spilled to disk give the same matrices as features held in memory."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from benchbackcompat.data.arrays import ImageArrays
from benchbackcompat.engine.evaluate import compatibility_matrices
from benchbackcompat.engine.features import FeatureBank, ModelFeatures
from benchbackcompat.method import StandardMethod
from benchbackcompat.scenarios.data import ScenarioData

CLASSES, DIM, T = 5, 8, 4


def labelled(n: int) -> ImageArrays:
    return ImageArrays(torch.zeros(n, 1, 1, 1, dtype=torch.uint8), torch.arange(n) % CLASSES)


def features(t: int, labels: torch.Tensor, with_gallery: torch.Tensor | None) -> ModelFeatures:
    gen = torch.Generator().manual_seed(t)
    centres = torch.randn(CLASSES, DIM, generator=gen)

    def draw(y: torch.Tensor) -> torch.Tensor:
        return F.normalize(centres[y] + 1.5 * torch.randn(len(y), DIM, generator=gen), dim=1)

    return ModelFeatures(draw(labels), draw(with_gallery) if with_gallery is not None else None)


@pytest.mark.parametrize("protocol,metrics", [("template", ["top1"]), ("nn", ["cmc@1", "map"]), ("loo", ["cmc@1", "map"])])
def test_spilled_features_give_the_same_matrices(tmp_path, protocol, metrics):
    query, gallery = labelled(60), labelled(25)
    single = protocol == "loo"
    data = ScenarioData(query, query, None if single else gallery, None, (0.5,), (0.25,), 1, CLASSES, "synthetic")
    held = [features(t, query.labels, None if single else gallery.labels) for t in range(T)]
    bank = FeatureBank(tmp_path / "spill", budget_bytes=0)
    for item in held:
        bank.append(item)
    assert bank.spilled and all(item is None for item in bank.held)
    in_memory, _ = compatibility_matrices(StandardMethod(), held, data, protocol, metrics, seed=0)
    streamed, _ = compatibility_matrices(StandardMethod(), bank, data, protocol, metrics, seed=0)
    assert streamed == in_memory
    bank.close()
    assert not (tmp_path / "spill").exists()


def test_template_entry_against_a_hand_computed_top1(tmp_path):
    query, gallery = labelled(60), labelled(25)
    data = ScenarioData(query, query, gallery, None, (0.5,), (0.25,), 1, CLASSES, "synthetic")
    held = [features(t, query.labels, gallery.labels) for t in range(2)]
    bank = FeatureBank(tmp_path, budget_bytes=0)
    for item in held:
        bank.append(item)
    C, _ = compatibility_matrices(StandardMethod(), bank, data, "template", ["top1"], seed=0)
    q, g = held[1].query, held[0].gallery  # C[1][0]: query model 1, gallery model 0
    correct = 0
    for i in range(len(q)):
        best, best_class = -2.0, -1
        for c in range(CLASSES):
            template = F.normalize(g[gallery.labels == c].mean(0), dim=0)
            score = float(q[i] @ template)
            if score > best:
                best, best_class = score, c
        correct += best_class == int(query.labels[i])
    assert C["top1"][1][0] == pytest.approx(100.0 * correct / len(q))


def test_a_bank_within_its_budget_keeps_features_in_memory(tmp_path):
    bank = FeatureBank(tmp_path / "spill", budget_bytes=1 << 20)
    item = ModelFeatures(torch.ones(10, DIM), None)
    bank.append(item)
    assert not bank.spilled and bank.query(0) is item.query and bank.stored(0) is item.query
    assert not (tmp_path / "spill").exists()
