"""Item-6 fidelity fixes: the Frobenius d-Simplex, ETF-DR and LCE references trained with the method's own
loss, model-zoo applicability, IFT = ER with a replay memory."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from bbc_baselines.l2 import L2
from bbc_compat.ift import IncrementalFineTuning
from bbc_compat.lce import LCE
from bbc_compat.hot_refresh import HotRefresh
from bbc_outputs.lsp import LSP
from bbc_outputs.psp import PSP
from bbc_baselines.independent import Independent
from bbc_stationary.etf_ce import ETFCrossEntropy
from bbc_stationary.etf_dr import ETFDotRegression
from bbc_stationary.hoc import DSimplexHOC, HocParams
from bbc_stationary.hoc_euclidean import EuclideanHOC
from benchbackcompat.config import TrainConfig
from benchbackcompat.scenarios.kinds import CL2R, IAMCL2R, ExtClass, ModelZoo, MultiStep
from benchbackcompat.data.arrays import ImageArrays
from benchbackcompat.method import Batch, StepContext
from benchbackcompat.models.heads import dsimplex, dsimplex_frobenius

SMALL = {"model": {"backbone": "convnet-s", "embedding_dim": 16}}


def context(scenario, classes: int, step: int = 0) -> StepContext:
    steps = scenario.steps(classes)
    images = ImageArrays(torch.zeros(4, 3, 16, 16, dtype=torch.uint8), torch.zeros(4, dtype=torch.long))
    return StepContext(scenario=scenario, step=steps[step], steps=steps, train=TrainConfig(), device=torch.device("cpu"),
                       old_model=None, train_data=images, memory=None, mean=(0.5,) * 3, std=(0.25,) * 3, image_size=16)


def test_the_frobenius_dsimplex_can_be_selected():
    ctx = context(MultiStep(**SMALL, num_models=2), 6)
    unit = DSimplexHOC().build_model(ctx, "convnet-s", 3).head.weight
    frobenius = DSimplexHOC(HocParams(simplex="frobenius")).build_model(ctx, "convnet-s", 3).head.weight
    assert torch.allclose(unit, dsimplex(6)) and torch.allclose(frobenius, dsimplex_frobenius(6))
    # same directions, rows shorter than one
    assert torch.allclose(F.normalize(frobenius, dim=1), unit, atol=1e-5) and (frobenius.norm(dim=1) < 0.5).all()
    assert DSimplexHOC(HocParams(simplex="frobenius")).reference().model_key() != DSimplexHOC().reference().model_key()


def test_etf_dr_references_are_trained_with_dot_regression_labels_left_to_right():
    scenario = IAMCL2R(**SMALL, num_tasks=6, pretrain_classes=[4, 6, 8], memory_per_class=2)
    ctx = context(scenario, 22)
    method = ETFDotRegression()
    recipe = method.reference()
    model = recipe.build_model(ctx, "convnet-s", 22)
    images, labels = torch.randn(5, 3, 16, 16), torch.tensor([0, 1, 2, 3, 0])
    terms = recipe.loss(model, Batch(images, labels, torch.zeros(5, dtype=torch.bool)), ctx)
    h = F.normalize(model.embed(images), dim=1)
    cosines = [float(h[i] @ model.head.weight[int(y)]) for i, y in enumerate(labels)]  # label y's own vertex
    assert terms["loss"].item() == pytest.approx(sum(0.5 * (c - 1) ** 2 for c in cosines) / 5, rel=1e-5)
    assert "dr" in terms and "ce" not in terms


def test_lce_trains_its_old_model_with_the_arcface_margin():
    method = LCE()
    assert method.standard_steps == "none" and type(method.reference()) is LCE
    ctx = context(ExtClass(**SMALL), 6)
    model = method.build_model(ctx, "convnet-s", 3)
    images, labels = torch.randn(4, 3, 16, 16), torch.tensor([0, 1, 2, 0])
    terms = method.loss(model, Batch(images, labels, torch.zeros(4, dtype=torch.bool)), ctx)  # no old model
    cos = F.normalize(model.embed(images), dim=1) @ F.normalize(model.head.weight, dim=1).T
    s, m = 16.0, 0.1
    expected = 0.0
    for i, y in enumerate(labels.tolist()):
        logits = [s * float(c) for c in cos[i]]
        logits[y] = s * math.cos(math.acos(float(cos[i, y])) + m)
        expected += -logits[y] + math.log(sum(math.exp(v) for v in logits))
    assert terms["loss"].item() == pytest.approx(expected / 4, rel=1e-4)


def test_methods_that_train_their_models_do_not_run_on_a_model_zoo():
    zoo = ModelZoo(zoo=["convnet-s", "convnet-m"])
    for method in (DSimplexHOC(), ETFCrossEntropy(), ETFDotRegression(), L2(), HotRefresh(), EuclideanHOC()):
        assert "already trained" in method.unsupported_reason(zoo)  # the "trains" trait, in the scenario's words
        assert method.unsupported_reason(ExtClass()) is None
    for method in (Independent(), PSP(), LSP()):
        assert method.unsupported_reason(zoo) is None


def test_ift_is_er_with_a_replay_memory():
    for scenario in (CL2R(num_tasks=3), IAMCL2R(num_tasks=6, pretrain_classes=[4, 6, 8])):
        assert "er" in IncrementalFineTuning().unsupported_reason(scenario)
    assert IncrementalFineTuning().unsupported_reason(MultiStep(num_models=3)) is None
