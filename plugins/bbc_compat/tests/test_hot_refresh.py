"""Hot-Refresh: the contrastive term against a per-sample loop, its negative selection, and the loss."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from bbc_compat.hot_refresh import HotRefresh, HotRefreshParams, hot_refresh_loss

from benchbackcompat.method import Batch
from benchbackcompat.models.network import build_network


def loop_reference(new, old, labels, tau):
    total = 0.0
    for i in range(len(labels)):
        positive = math.exp(float(new[i] @ old[i]) / tau)
        others = [j for j in range(len(labels)) if labels[j] != labels[i]]
        negatives = sum(math.exp(float(new[i] @ old[j]) / tau) + math.exp(float(new[i] @ new[j]) / tau) for j in others)
        total += -math.log(positive / (positive + negatives))
    return total / len(labels)


@pytest.mark.parametrize("tau", (0.5, 0.1))
def test_loss_matches_a_per_sample_loop(tau):
    torch.manual_seed(0)
    new, old = F.normalize(torch.randn(10, 6), dim=1), F.normalize(torch.randn(10, 6), dim=1)
    labels = torch.tensor([0, 0, 1, 1, 1, 2, 2, 3, 3, 3])
    assert hot_refresh_loss(new, old, labels, tau).item() == pytest.approx(loop_reference(new, old, labels, tau), rel=1e-5)


def test_same_class_samples_are_not_negatives_other_class_ones_are():
    torch.manual_seed(1)
    new, old = F.normalize(torch.randn(4, 3), dim=1), F.normalize(torch.randn(4, 3), dim=1)
    one_class = torch.zeros(4, dtype=torch.long)  # only the positive is left: -log(1) = 0
    assert hot_refresh_loss(new, old, one_class, 0.5).item() == pytest.approx(0.0, abs=1e-6)
    labels = torch.tensor([0, 0, 1, 1])
    base = hot_refresh_loss(new, old, labels, 0.5).item()
    crowded = new.clone()
    crowded[1] = new[0]  # a same-class new feature on top of sample 0: not a negative of row 0
    expected = loop_reference(crowded, old, labels, 0.5)
    assert hot_refresh_loss(crowded, old, labels, 0.5).item() == pytest.approx(expected, rel=1e-5)
    hard = old.clone()
    hard[2] = new[0]  # another class's old feature on top of sample 0: a hard negative
    assert hot_refresh_loss(new, hard, labels, 0.5).item() > base


def test_method_loss_is_ce_plus_weight_times_contrast():
    torch.manual_seed(0)
    ctx_model = dict(num_classes=4, embedding_dim=8, image_size=16)
    old = build_network("convnet-s", **ctx_model).eval()
    new = build_network("convnet-s", **ctx_model)
    batch = Batch(torch.randn(6, 3, 16, 16), torch.tensor([0, 1, 2, 3, 0, 1]), torch.zeros(6, dtype=torch.bool))
    method = HotRefresh(HotRefreshParams(weight=0.7, tau=0.5))
    terms = method.loss(new, batch, SimpleNamespace(old_model=old))
    with torch.no_grad():
        expected = hot_refresh_loss(F.normalize(new.embed(batch.images), dim=1), F.normalize(old.embed(batch.images), dim=1),
                                    batch.labels, 0.5)
    assert terms["contrast"].item() == pytest.approx(expected.item(), rel=1e-5)
    assert terms["loss"].item() == pytest.approx((terms["ce"] + 0.7 * terms["contrast"]).item(), rel=1e-6)
    assert set(method.loss(new, batch, SimpleNamespace(old_model=None))) == {"loss", "ce"}
