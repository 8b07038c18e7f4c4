"""CoReS verification pairs come from the eval dataset's test split, normalised with its own statistics
when asked (CoReS, IEEE TPAMI 2023: "We do not use the training-set of CIFAR-10"); IAM-CL2R keeps the training statistics."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from benchbackcompat.scenarios.kinds import CL2R, MultiStep
from benchbackcompat.data.arrays import DatasetBundle, ImageArrays
from benchbackcompat.engine.evaluate import evaluate_matrices, model_features
from benchbackcompat.engine.features import ModelFeatures
from benchbackcompat.method import Method, StandardMethod
from benchbackcompat.metrics import outcomes, retrieval
from benchbackcompat.scenarios import data as scenario_data
from benchbackcompat.runtime.seeds import derive_seed, generator


def arrays(value: int, n: int, classes: int) -> ImageArrays:
    return ImageArrays(torch.full((n, 3, 8, 8), value, dtype=torch.uint8), torch.arange(n) % classes)


BUNDLES = {
    "train-set": DatasetBundle("train-set", ["a", "b", "c", "d"], (0.5, 0.5, 0.5), (0.25, 0.25, 0.25),
                               {"train": arrays(10, 8, 4), "test": arrays(20, 4, 4)}),
    "eval-set": DatasetBundle("eval-set", ["x", "y"], (0.1, 0.2, 0.3), (0.5, 0.5, 0.5),
                              {"train": arrays(30, 6, 2), "test": arrays(40, 4, 2)}),
}


@pytest.fixture
def fake_datasets(monkeypatch):
    monkeypatch.setattr(scenario_data, "load_dataset", lambda name, request: BUNDLES[name])


def test_verification_uses_the_eval_datasets_test_split_and_its_statistics(fake_datasets, tmp_path):
    data = {"name": "train-set", "eval_dataset": "eval-set", "eval_normalisation": "eval"}
    scenario = MultiStep(num_models=2, protocol="verification", eval_split="open", metrics=["verification"], data=data)
    loaded = scenario_data.load_scenario_data(scenario, tmp_path, torch.device("cpu"))
    assert loaded.gallery is None and (loaded.query.images == 40).all()  # CIFAR-10 *test*, not train
    assert loaded.eval_stats == ((0.1, 0.2, 0.3), (0.5, 0.5, 0.5))

    class Identity(torch.nn.Module):
        def forward(self, x):
            return x

    class Pixels(Method):
        def features(self, model, images):
            return images.flatten(1)[:, :3]

    feats = model_features(Identity(), Pixels(), loaded, batch_size=4, device=torch.device("cpu"), amp="off")
    # pixel 40/255 in channel 0 normalised with the eval dataset's mean 0.1 and std 0.5, by hand
    assert feats.query[0, 0].item() == pytest.approx((40 / 255 - 0.1) / 0.5, rel=1e-5)


def test_template_protocol_keeps_the_training_statistics_by_default(fake_datasets, tmp_path):
    scenario = CL2R(num_tasks=2, initial_class_fraction=0.5, data={"name": "train-set", "eval_dataset": "eval-set"})
    loaded = scenario_data.load_scenario_data(scenario, tmp_path, torch.device("cpu"))
    assert (loaded.query.images == 30).all() and (loaded.gallery.images == 40).all()  # query train, gallery test
    assert loaded.eval_stats is None  # iamcl2r code: CIFAR-10 normalised with CIFAR-100 statistics


def test_stored_verification_pairs_reproduce_the_accuracy():
    # 3,000 + 3,000 pairs in 10 equal folds: the stored per-pair outcomes (each pair right or wrong at its fold's
    # threshold) average to the matrix entry, so pairs can be bootstrapped like queries; the entry is unchanged:
    # the same accuracy as the metric computed on its own on the pairs the engine draws for the seed
    labels = torch.arange(400) % 10
    images = ImageArrays(torch.zeros(400, 1, 1, 1, dtype=torch.uint8), labels)
    data = scenario_data.ScenarioData(images, images, None, None, (0.5,), (0.25,), 1, 10, "synthetic")
    gen = torch.Generator().manual_seed(0)
    centres = torch.randn(10, 8, generator=gen)[labels]  # both models place the classes alike: compatible
    feats = [F.normalize(centres + scale * torch.randn(400, 8, generator=gen), dim=1) for scale in (0.8, 1.0)]
    result = evaluate_matrices(StandardMethod(), [ModelFeatures(f, None) for f in feats], data, "verification",
                               ["verification"], seed=3)
    a, b, same = retrieval.sample_verification_pairs(labels, 3000, 3000, generator=generator(derive_seed(3, "pairs")))
    for t, k in ((0, 0), (1, 0), (1, 1)):
        stored = outcomes.decode(result.outcomes["verification"][t][k])
        value = result.matrices["verification"][t][k]
        assert len(stored) == 6000 and 100 * stored.mean() == pytest.approx(value, abs=1e-9)
        assert 50 < value < 100  # informative pairs: neither chance nor trivial
        assert value == retrieval.pair_verification(feats[t][a], feats[k][b], same)
        # by hand: the pairs right at their fold's threshold, chosen on the other nine folds (lowest on ties)
        dist = (feats[t][a].double() - feats[k][b].double()).pow(2).sum(1)
        thresholds = torch.arange(0, 4, 0.001, dtype=torch.float64)
        folds = torch.arange(6000).reshape(10, 600)
        expected = np.zeros(6000, dtype=bool)
        for f in range(10):
            rest = torch.cat([folds[g] for g in range(10) if g != f])
            right = ((dist[rest, None] < thresholds[None]) == same[rest, None]).sum(0)
            best = thresholds[int(torch.nonzero(right == right.max())[0, 0])]
            expected[folds[f].numpy()] = ((dist[folds[f]] < best) == same[folds[f]]).numpy()
        np.testing.assert_array_equal(stored.astype(bool), expected)
