"""Hand-computed values of the l2, lwf and er objectives (CoReS Sec. 5, openBCT ``--l2`` / ``--lwf``)."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from bbc_baselines import l2
from bbc_baselines.er import ExperienceReplay
from bbc_compat import lwf
from benchbackcompat.config import TrainConfig
from benchbackcompat.engine.train import batch_indices
from benchbackcompat.models.heads import LinearHead


class Fixed(nn.Module):
    """A model whose features are given per image index (images carry their index in pixel 0)."""

    def __init__(self, features: list[list[float]], head: nn.Module | None = None) -> None:
        super().__init__()
        self.table = nn.Parameter(torch.tensor(features))
        self.head = head

    def embed(self, images):
        return self.table[images[:, 0, 0, 0].long()]

    def forward(self, images):
        features = self.embed(images)
        return SimpleNamespace(features=features, logits=self.head(features) if self.head is not None else None)


def images(n: int) -> torch.Tensor:
    x = torch.zeros(n, 1, 1, 1)
    x[:, 0, 0, 0] = torch.arange(n)
    return x


def head(weight: list[list[float]], bias: list[float] | None = None) -> LinearHead:
    module = LinearHead(len(weight[0]), len(weight))
    with torch.no_grad():
        module.weight.copy_(torch.tensor(weight))
        module.bias.copy_(torch.tensor(bias or [0.0] * len(weight)))
    return module


def ce(logits: list[float], label: int) -> float:
    return -logits[label] + math.log(sum(math.exp(v) for v in logits))


# --- l2 -------------------------------------------------------------------------------------
def test_cores_distance_is_the_mean_euclidean_distance_over_old_class_samples():
    new = torch.tensor([[3.0, 4.0], [1.0, 0.0]])  # the second sample's class 2 is new: left out
    old = torch.tensor([[5.0, 0.0], [0.0, 1.0]])
    # |(0.6, 0.8) - (1, 0)| = sqrt(0.16 + 0.64)
    assert l2.cores_distance(new, old, torch.tensor([0, 2]), 2).item() == pytest.approx(math.sqrt(0.8))
    assert l2.cores_distance(new, old, torch.tensor([2, 3]), 2).item() == 0.0


def test_openbct_mse_normalises_only_when_the_sizes_differ():
    assert l2.openbct_mse(torch.tensor([[1.0, 2.0]]), torch.tensor([[3.0, 5.0]])).item() == pytest.approx((4 + 9) / 2)
    # new truncated to 2 dims and normalised: (0.6, 0.8) against the raw old (2, 0)
    assert l2.openbct_mse(torch.tensor([[3.0, 4.0, 7.0]]), torch.tensor([[2.0, 0.0]])).item() == pytest.approx(
        ((0.6 - 2) ** 2 + 0.8**2) / 2)


def test_l2_objectives_by_hand():
    new_feats, old_feats = [[3.0, 4.0], [0.0, 2.0]], [[1.0, 0.0], [0.0, 1.0]]
    labels = torch.tensor([0, 2])
    w = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    model = Fixed(new_feats, head(w))
    ctx = SimpleNamespace(old_model=Fixed(old_feats, head(w[:2])))
    batch = SimpleNamespace(images=images(2), labels=labels)
    cross_entropy = (ce([3.0, 4.0, 7.0], 0) + ce([0.0, 2.0, 2.0], 2)) / 2
    cores = l2.L2(l2.L2Params(weight=2.0)).loss(model, batch, ctx)
    assert cores["ce"].item() == pytest.approx(cross_entropy, rel=1e-6)
    assert cores["loss"].item() == pytest.approx(cross_entropy + 2 * math.sqrt(0.8), rel=1e-6)  # old class 0 only
    openbct = l2.L2(l2.L2Params(objective="openbct")).loss(model, batch, ctx)
    assert openbct["loss"].item() == pytest.approx((4 + 16 + 0 + 1) / 4)  # MSE alone, raw features
    squared = l2.L2(l2.L2Params(objective="squared")).loss(model, batch, ctx)
    # |(0.6, 0.8) - (1, 0)|^2 = 0.8 and |(0, 1) - (0, 1)|^2 = 0 over every sample
    assert squared["loss"].item() == pytest.approx(cross_entropy + 0.8 / 2, rel=1e-6)


# --- lwf ------------------------------------------------------------------------------------
def test_lwf_old_head_distils_the_old_classifier_on_new_against_old_features():
    w_old = [[1.0, 0.0], [0.0, 1.0]]
    model = Fixed([[2.0, 0.0]], head([[0.0, 0.0], [0.0, 0.0], [5.0, 5.0]]))
    ctx = SimpleNamespace(old_model=Fixed([[0.0, 1.0]], head(w_old)))
    batch = SimpleNamespace(images=images(1), labels=torch.tensor([1]))
    terms = lwf.LwF().loss(model, batch, ctx)
    # target softmax(W_old phi_old) = softmax(0, 1); prediction log softmax(W_old phi_new) = log softmax(2, 0); T = 1
    p = [1 / (1 + math.e), math.e / (1 + math.e)]
    log_q = [2 - math.log(math.exp(2) + 1), -math.log(math.exp(2) + 1)]
    expected = -(p[0] * log_q[0] + p[1] * log_q[1])
    assert terms["distillation"].item() == pytest.approx(expected, rel=1e-6)
    assert terms["loss"].item() == pytest.approx(ce([0.0, 0.0, 10.0], 1) + expected, rel=1e-6)
    new_head = lwf.LwF(lwf.LwFParams(target="new-head")).loss(model, batch, ctx)
    # new head's logits (0, 0) on the old classes vs old logits (0, 1), T = 2
    p2 = [1 / (1 + math.exp(0.5)), math.exp(0.5) / (1 + math.exp(0.5))]
    assert new_head["distillation"].item() == pytest.approx(math.log(2) * (p2[0] + p2[1]), rel=1e-6)


# --- er -------------------------------------------------------------------------------------
def test_er_is_cross_entropy_over_new_and_replayed_samples_half_each():
    model = Fixed([[1.0, 0.0], [0.0, 3.0]], head([[1.0, 0.0], [0.0, 1.0]]))
    batch = SimpleNamespace(images=images(2), labels=torch.tensor([1, 1]), from_memory=torch.tensor([False, True]))
    terms = ExperienceReplay().loss(model, batch, SimpleNamespace(old_model=None))
    assert terms["loss"].item() == pytest.approx((ce([1.0, 0.0], 1) + ce([0.0, 3.0], 1)) / 2, rel=1e-6)
    cfg = TrainConfig(batch_size=8)
    batches = list(batch_indices(20, 12, cfg, torch.Generator().manual_seed(0)))
    assert len(batches) == (20 + 12) // 8
    assert all(len(new) == 4 and len(memory) == 4 for new, memory in batches)
    assert set(torch.cat([m for _, m in batches]).tolist()) == set(range(12))  # every stored sample is replayed
