"""The losses of the compatibility methods on small hand-checkable inputs."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from bbc_compat import advbct, bct, common, cvs, fan, lce, lwf
from bbc_compat.ift import IncrementalFineTuning
from benchbackcompat.scenarios.kinds import ExtClass, ModelZoo, NewArch
from benchbackcompat.data.arrays import ImageArrays


def arrays(labels: list[int]) -> ImageArrays:
    return ImageArrays(torch.zeros(len(labels), 3, 4, 4, dtype=torch.uint8), torch.tensor(labels))


# --- BCT ------------------------------------------------------------------------------------
def test_influence_loss_is_cross_entropy_of_the_old_head_on_new_features():
    weight, bias = torch.tensor([[1.0, 0.0], [0.0, 1.0]]), torch.tensor([0.0, 0.5])
    features = torch.tensor([[1.0, 0.0, 7.0], [2.0, 1.0, -3.0]])  # 3-d new features, truncated to the old 2
    labels = torch.tensor([0, 1])
    # by hand: logits [1, 0.5] -> -log(e/(e+e^.5)); [2, 1.5] -> -log(e^1.5/(e^2+e^1.5))
    expected = (math.log(1 + math.exp(-0.5)) + math.log(1 + math.exp(0.5))) / 2
    assert bct.influence_loss(features, labels, weight, bias).item() == pytest.approx(expected, rel=1e-6)
    reference = F.cross_entropy(F.linear(features[:, :2], weight, bias), labels)
    assert bct.influence_loss(features, labels, weight, bias).item() == pytest.approx(reference.item())


def test_influence_loss_zero_pads_small_features_and_skips_uncovered_classes():
    weight, bias = torch.eye(3), torch.zeros(3)
    features = torch.tensor([[2.0, 0.0], [5.0, 5.0]])
    labels = torch.tensor([0, 7])  # class 7 has no old row: left out
    expected = -math.log(math.exp(2) / (math.exp(2) + 2))
    assert bct.influence_loss(features, labels, weight, bias).item() == pytest.approx(expected, rel=1e-6)
    assert bct.influence_loss(features[1:], labels[1:], weight, bias).item() == 0.0


def test_old_classifier_synthesises_new_class_rows_from_old_class_means():
    head = nn.Linear(2, 2)
    old_model = SimpleNamespace(head=head)
    features = torch.tensor([[1.0, 1.0], [9.0, 9.0], [2.0, 0.0], [4.0, 2.0]])
    ctx = SimpleNamespace(train_data=arrays([0, 1, 2, 2]), memory=None, embed=lambda model, data: features)
    weight, bias = bct.old_classifier(old_model, ctx, num_classes=3, synthesis="mean")
    assert torch.equal(weight[:2], head.weight.detach()) and torch.equal(bias[:2], head.bias.detach())
    assert weight[2].tolist() == [3.0, 1.0] and bias[2].item() == 0.0  # mean of class 2's old features
    weight, _ = bct.old_classifier(old_model, ctx, num_classes=3, synthesis="none")
    assert weight.shape == (2, 2)
    weight, bias = bct.old_classifier(old_model, ctx, num_classes=3, synthesis="scaled-mean")
    norm = head.weight.detach().norm(dim=1).mean().item()
    assert weight[2].tolist() == pytest.approx([3 * norm / math.sqrt(10), norm / math.sqrt(10)], rel=1e-5)
    assert bias[2].item() == pytest.approx(head.bias.detach().mean().item())


def test_class_means_and_counts():
    means, counts = common.class_means(torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), torch.tensor([2, 0, 2]), 4)
    assert means.tolist() == [[3.0, 4.0], [0.0, 0.0], [3.0, 4.0], [0.0, 0.0]] and counts.tolist() == [1, 0, 2, 0]


# --- LCE ------------------------------------------------------------------------------------
def test_arcface_adds_the_angular_margin_to_the_target_only():
    logits = 16 * torch.tensor([[0.5, 0.2]])
    out = lce.arcface_logits(logits, torch.tensor([0]), scale=16, margin=0.1)
    assert out[0, 0].item() == pytest.approx(16 * math.cos(math.acos(0.5) + 0.1), rel=1e-5)
    assert out[0, 1].item() == pytest.approx(16 * 0.2, rel=1e-5)


def test_lce_statistics_alignment_and_boundary():
    features = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0]])
    centres, cos_min, present = lce.old_class_statistics(features, torch.tensor([0, 0, 1]), 3)
    r = 1 / math.sqrt(2)
    assert centres[0].tolist() == pytest.approx([r, r]) and cos_min[0].item() == pytest.approx(r)
    assert centres[1].tolist() == pytest.approx([1, 0]) and cos_min[1].item() == pytest.approx(1)
    assert present.tolist() == [True, True, False]
    # class weights equal to the centres (any scale) -> no alignment loss; else the MSE: (0 + (2r)^2) / 4 elements
    assert lce.alignment_loss(torch.tensor([[5.0, 5.0], [2.0, 0.0], [0.0, 1.0]]), centres, present).item() == pytest.approx(0, abs=1e-7)
    assert lce.alignment_loss(torch.tensor([[r, -r], [1.0, 0.0], [0.0, 1.0]]), centres, present).item() == pytest.approx(0.5)
    # boundary: on the centre -> 0; orthogonal to the centre -> cos_min - 0
    new = torch.tensor([[1.0, 1.0], [0.0, 4.0]])
    assert lce.boundary_loss(new, torch.tensor([0, 1]), centres, cos_min, present).item() == pytest.approx(0.5)


# --- AdvBCT ---------------------------------------------------------------------------------
def test_gradient_reversal_flips_and_scales_the_gradient():
    x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = common.grad_reverse(x, 0.5)
    assert torch.equal(y, x.detach())
    (y * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [-0.5, -1.0, -1.5]


def test_grl_schedule_and_elastic_radius():
    assert advbct.grl_alpha(0.0) == 0.0 and advbct.grl_alpha(1.0) == pytest.approx(2 / (1 + math.exp(-10)) - 1)
    radius = advbct.elastic_radius(torch.tensor([0.5, 1.5]), torch.zeros(2), threshold=1.0)
    assert radius.tolist() == pytest.approx([0.75, 1.25])  # sigmoid(0) = 1/2 of |r_max - T|, towards T


def test_boundary_meta_drops_iqr_outliers():
    # class 0: unit features at angles giving distances to the centre; one far outlier
    base = torch.tensor([[1.0, 0.0]] * 7 + [[-1.0, 0.0]])
    centres, r_max, valid = advbct.boundary_meta(base, torch.zeros(8, dtype=torch.long), 2)
    assert centres[0].tolist() == pytest.approx([0.75, 0.0])
    # distances: 0.25 (x7) and 1.75; q1 = q3 = 0.25 -> the 1.75 is an outlier
    assert r_max[0].item() == pytest.approx(0.25) and valid.tolist() == [True, False]


def official_r_max(distances: list[float], factor: float = 1.5) -> float | None:
    """extract_feat.gen_class_meta of Ashespt/AdvBCT written out on a Python list: None if skipped."""
    radius = sorted(distances)
    kept = radius
    if len(radius) >= 4:
        n = len(radius)
        q3, q1 = radius[int(3 * n / 4)], radius[int(n / 4)]
        iqr = q3 - q1
        kept = [r for r in radius if not (r < q1 - factor * iqr or r > q3 + factor * iqr)]
    return kept[-1] if len(kept) > 1 else None


def test_boundary_meta_reads_the_quartiles_from_the_sorted_distances_as_the_official_code():
    # unit vectors at 0, 2, 4 and 60 degrees: q1 = r[1], q3 = r[3] (the 60-degree one) keep every
    # distance, r_max = |v_60 - c| = 0.7271 (interpolated quartiles would drop it: 0.2733)
    angles = torch.deg2rad(torch.tensor([0.0, 2.0, 4.0, 60.0], dtype=torch.float64))
    unit = torch.stack([angles.cos(), angles.sin()], dim=1)
    _, r_max, valid = advbct.boundary_meta(unit, torch.zeros(4, dtype=torch.long), 1)
    assert r_max[0].item() == pytest.approx(0.7271, abs=1e-4) and valid.tolist() == [True]


def test_boundary_meta_matches_the_official_procedure_on_random_classes():
    generator = torch.Generator().manual_seed(0)
    sizes = [1, 2, 3, 4, 5, 6, 7, 9, 12, 17, 30]
    labels = torch.cat([torch.full((n,), k) for k, n in enumerate(sizes)])
    features = torch.randn(len(labels), 8, generator=generator) + 2 * torch.randn(len(sizes), 8, generator=generator)[labels]
    centres, r_max, valid = advbct.boundary_meta(features, labels, len(sizes))
    unit = F.normalize(features, dim=1)
    for k in range(len(sizes)):
        members = unit[labels == k]
        centre = members.mean(0)
        expected = official_r_max([(f - centre).norm().item() for f in members])
        assert valid[k].item() == (expected is not None)
        if expected is not None:
            assert r_max[k].item() == pytest.approx(expected, rel=1e-5)


def test_adversarial_weight_counts_epochs_from_zero_in_the_loss():
    """The official trainer weights L_adv by (E - e + 1) / E for e = 0..E-1: 3/2 then 1 for E = 2."""
    assert [advbct.adversarial_weight(e, 2) for e in range(2)] == [1.5, 1.0]

    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(4, 3)

        def forward(self, x):
            features = self.body(x.flatten(1)[:, :4])
            return SimpleNamespace(features=features, logits=features)

        def embed(self, x):
            return self.forward(x).features

    torch.manual_seed(0)
    model, old = Tiny(), Tiny()
    method = advbct.AdvBCT()
    ctx = SimpleNamespace(train=SimpleNamespace(epochs=2, batch_size=4), train_data=arrays([0, 1, 2, 0, 1, 2, 0, 1]),
                          memory=None, step=SimpleNamespace(replay=False), old_model=old, clock=lambda: (2, 4))
    batch = SimpleNamespace(images=torch.randn(4, 3, 4, 4), labels=torch.tensor([0, 1, 2, 0]))
    method.meta = advbct.boundary_meta(old.embed(ctx.train_data.images.float()).detach(), ctx.train_data.labels, 3)
    module = nn.Module()
    module.elastic = nn.Parameter(torch.zeros(3))
    module.discriminator = advbct.discriminator(3).eval()
    method.trainable = module  # what before_step returns as the step's trainable modules
    for iteration, weight in ((0, 1.5), (1, 1.5), (2, 1.0), (3, 1.0)):  # 2 batches per epoch
        method.iteration = iteration
        terms = method.loss(model, batch, ctx)
        extra = terms["loss"] - terms["ce"] - terms["compatibility"]
        assert extra.item() == pytest.approx(weight * terms["adversarial"].item(), rel=1e-5)


def test_compatibility_loss_averages_violating_samples_only():
    centres = torch.zeros(1, 2)
    new = torch.tensor([[1.2, 0.0], [0.9, 0.0], [1.4, 0.0]])
    loss = advbct.compatibility_loss(new, torch.zeros(3, dtype=torch.long), centres, torch.tensor([1.0]), torch.tensor([True]))
    assert loss.item() == pytest.approx(0.3)
    inside = advbct.compatibility_loss(new[1:2], torch.zeros(1, dtype=torch.long), centres, torch.tensor([1.0]), torch.tensor([True]))
    assert inside.item() == 0.0


def test_adversarial_gradient_to_new_features_is_reversed():
    torch.manual_seed(0)
    disc = advbct.discriminator(4)
    new, old = torch.randn(6, 4), torch.randn(6, 4)
    grads = []
    for alpha in (1.0, -1.0):  # alpha = -1 is an identity gradient: the plain discriminator loss
        x = new.clone().requires_grad_()
        advbct.adversarial_loss(disc, x, old, alpha).backward()
        grads.append(x.grad)
    assert torch.allclose(grads[0], -grads[1]) and grads[0].abs().sum() > 0


# --- CVS ------------------------------------------------------------------------------------
def test_triplet_uses_the_same_image_and_the_hardest_other_class():
    new = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    old = torch.tensor([[0.6, 0.8], [1.0, 0.0]])
    labels = torch.tensor([0, 1])
    # anchor 0: positive old[0] at 0.8944, negative old[1] at 0 -> 0.9944; anchor 1: positive old[1] at
    # sqrt(2), negative old[0] at sqrt(0.36+0.04) -> sqrt(2) - sqrt(0.4) + 0.1
    expected = ((math.sqrt(0.8) + 0.1) + (math.sqrt(2) - math.sqrt(0.4) + 0.1)) / 2
    assert cvs.hardest_negative_triplet(new, old, labels, 0.1).item() == pytest.approx(expected, rel=1e-5)
    same_class = cvs.hardest_negative_triplet(new, old, torch.tensor([0, 0]), 0.1)
    assert same_class.item() == 0.0


def test_triplet_picks_the_nearest_negative():
    new = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    old = torch.tensor([[1.0, 0.0], [0.0, -1.0], [0.8, 0.6]])
    labels = torch.tensor([0, 1, 2])
    loss = cvs.hardest_negative_triplet(new, old, labels, 0.1)
    expected = nn.TripletMarginLoss(margin=0.1)(new, old, old[[2, 0, 0]])  # hand-picked nearest other-class old features
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)


def test_centre_distillation_covers_previous_classes_only():
    centres = torch.tensor([[1.0, 0.0]])
    new = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    assert cvs.centre_distillation(new, torch.tensor([0, 1]), centres).item() == pytest.approx(2.0)


# --- FAN ------------------------------------------------------------------------------------
def random_adapter(d_in: int, d_out: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    shapes = {"w1": (5, d_in), "b1": (5,), "w2": (d_out, 5), "b2": (d_out,)}
    return {k: torch.randn(*s, generator=generator) for k, s in shapes.items()}


def test_fan_chained_transform_is_the_composition_of_its_steps():
    g = torch.Generator().manual_seed(0)
    method = fan.FAN()
    a1, a2 = random_adapter(3, 4, g), random_adapter(4, 4, g)
    method.state = {**{f"adapter1.{k}": v for k, v in a1.items()}, **{f"adapter2.{k}": v for k, v in a2.items()}}
    query, gallery = torch.randn(2, 4, generator=g), torch.randn(6, 3, generator=g)
    q, chained = method.pair_features(query, gallery, 2, 0)
    assert q is query and torch.allclose(chained, fan.adapt(fan.adapt(gallery, a1), a2))
    by_hand = F.linear(F.relu(F.linear(F.normalize(gallery, dim=1), a1["w1"], a1["b1"])), a1["w2"], a1["b2"])
    assert torch.allclose(method.pair_features(query, gallery, 1, 0)[1], by_hand)
    assert method.pair_features(query, gallery, 1, 1)[1] is gallery


def test_fan_missing_adapter_is_a_clear_error():
    from benchbackcompat.errors import BenchError

    with pytest.raises(BenchError, match="no adapter"):
        fan.FAN().pair_features(torch.zeros(1, 2), torch.zeros(1, 2), 1, 0)


def test_fan_adapter_learns_a_feature_map():
    torch.manual_seed(0)
    old = F.normalize(torch.randn(256, 6), dim=1)
    mixing = torch.randn(6, 4)
    new = old @ mixing
    params = fan.FANParams(epochs=60, hidden=64, lr=1e-2, batch_size=64, classification_weight=0)
    weights = fan.train_adapter(old, new, torch.zeros(256, dtype=torch.long), None, params)
    error = (fan.adapt(old, weights) - new).pow(2).sum(1).mean()
    assert error < 0.05 * new.pow(2).sum(1).mean()


# --- LwF / IFT / support --------------------------------------------------------------------
def test_lwf_distillation_on_old_classes_by_hand():
    old_logits = torch.tensor([[0.0, 0.0]])
    new_logits = torch.tensor([[0.0, 0.0, 5.0]])  # the new class is left out
    assert lwf.distillation_loss(new_logits, old_logits, 2.0).item() == pytest.approx(math.log(2))
    old_logits, new_logits = torch.tensor([[2.0, 0.0]]), torch.tensor([[0.0, 2.0]])
    p = torch.softmax(torch.tensor([1.0, 0.0]), 0)
    expected = -(p * torch.log_softmax(torch.tensor([0.0, 1.0]), 0)).sum()
    assert lwf.distillation_loss(new_logits, old_logits, 2.0).item() == pytest.approx(expected.item())


def test_fine_tuning_starts_from_the_old_model():
    old, new = nn.Linear(3, 2), nn.Linear(3, 2)
    ctx = SimpleNamespace(old_model=old, step=SimpleNamespace(init="scratch"))
    IncrementalFineTuning().initialise(new, None, ctx)
    assert torch.equal(new.weight, old.weight)


def test_unsupported_scenarios_have_reasons():
    from bbc_compat.advbct import AdvBCT
    from bbc_compat.bct import BCT
    from bbc_compat.cvs import CVS
    from bbc_compat.fan import FAN
    from bbc_compat.lce import LCE
    from bbc_compat.lwf import LwF

    zoo = ModelZoo(zoo=["convnet-s", "convnet-m"])
    new_arch = NewArch(architectures=["convnet-s", "convnet-m"])
    for method in (BCT(), LCE(), AdvBCT(), CVS(), FAN(), LwF(), IncrementalFineTuning()):
        assert "model-zoo" in method.unsupported_reason(zoo)
        assert method.unsupported_reason(ExtClass()) is None
    for method in (LwF(), IncrementalFineTuning()):
        assert "architecture" in method.unsupported_reason(new_arch)
    assert BCT().unsupported_reason(new_arch) is None
