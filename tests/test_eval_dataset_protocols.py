"""CoReS verification pairs come from the eval dataset's test split, normalised with its own statistics
when asked (CoReS, IEEE TPAMI 2023: "We do not use the training-set of CIFAR-10"); IAM-CL2R keeps the training statistics."""
from __future__ import annotations

import pytest
import torch

from benchbackcompat.config import CL2R, MultiStep
from benchbackcompat.data.arrays import DatasetBundle, ImageArrays
from benchbackcompat.engine.evaluate import model_features
from benchbackcompat.method import Method
from benchbackcompat.scenarios import data as scenario_data


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
