"""Backfilling curves: endpoints equal the matrix entries, a mixed gallery scores as a brute-force loop, the options
leave keys alone when unset."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from benchbackcompat.config import BackfillConfig
from benchbackcompat.scenarios.kinds import ExtClass, MultiStep
from benchbackcompat.data.arrays import ImageArrays
from benchbackcompat.engine.backfill import backfill_curves, refresh_orders
from benchbackcompat.engine.evaluate import compatibility_matrices
from benchbackcompat.engine.features import FeatureBank, ModelFeatures
from benchbackcompat.method import StandardMethod
from benchbackcompat.metrics.backfill import area_under_curve
from benchbackcompat.scenarios.data import ScenarioData

CLASSES, DIM = 4, 6


def labelled(n: int) -> ImageArrays:
    return ImageArrays(torch.zeros(n, 1, 1, 1, dtype=torch.uint8), torch.arange(n) % CLASSES)


def random_features(t: int, query: torch.Tensor, gallery: torch.Tensor | None, width: int = DIM) -> ModelFeatures:
    gen = torch.Generator().manual_seed(100 + t)
    centres = torch.randn(CLASSES, width, generator=gen)

    def draw(y: torch.Tensor) -> torch.Tensor:
        return centres[y] + 1.2 * torch.randn(len(y), width, generator=gen)

    return ModelFeatures(draw(query), draw(gallery) if gallery is not None else None)


def lorentz_method():
    from bbc_hyperbolic.common import LorentzMethod

    return LorentzMethod()


def psp_method():
    from bbc_outputs.psp import PSP

    return PSP()


def setup(protocol: str, T: int, method_name: str):
    query, gallery = labelled(30), labelled(22)
    loo = protocol == "loo"
    data = ScenarioData(query, query, None if loo else gallery, None, (0.5,), (0.25,), 1, CLASSES, "synthetic")
    method = {"standard": StandardMethod, "lorentz": lorentz_method, "psp": psp_method}[method_name]()
    held = []
    for t in range(T):
        width = 3 + t if method_name == "psp" else DIM  # PSP: logits over the model's classes, growing (two-class features all tie)
        item = random_features(t, query.labels, None if loo else gallery.labels, width)
        if method_name == "lorentz":
            from benchbackcompat import geometry

            item = ModelFeatures(*(geometry.lift(x) if x is not None else None for x in (item.query, item.gallery)))
        held.append(item)
    return method, FeatureBank.in_memory(held), data


@pytest.mark.parametrize("method_name", ["standard", "lorentz", "psp"])
@pytest.mark.parametrize("protocol,metrics", [("nn", ["cmc@1", "map"]), ("loo", ["cmc@1", "cmc@5", "map"])])
def test_endpoints_are_the_cross_and_the_new_self_test(protocol, metrics, method_name):
    method, bank, data = setup(protocol, 3, method_name)
    C, _ = compatibility_matrices(method, bank, data, protocol, metrics, seed=0)
    found = backfill_curves(method, bank, data, protocol, metrics, 0, BackfillConfig(steps=4))
    assert [(p["old"], p["new"]) for p in found["pairs"]] == [(0, 1), (1, 2)]
    for pair in found["pairs"]:
        k, t = pair["old"], pair["new"]
        assert pair["fractions"][0] == 0 and pair["fractions"][-1] == 1 and len(pair["fractions"]) == 5
        for metric in metrics:
            for order, curve in pair["curves"][metric].items():
                assert curve[0] == C[metric][t][k], (metric, order)
                assert curve[-1] == C[metric][t][t], (metric, order)
                assert pair["auc"][metric][order] == pytest.approx(area_under_curve(pair["fractions"], curve))


def brute_force_hits(q_old, g_old, q_new, g_new, refreshed, ql, gl) -> list[bool]:
    """Each query's top-1 hit in a mixed gallery, one query and one item at a time (cosine, lowest index wins ties)."""
    hits = []
    for i in range(len(q_old)):
        best, best_j = -math.inf, -1
        for j in range(len(g_old)):
            a, b = (q_new[i], g_new[j]) if refreshed[j] else (q_old[i], g_old[j])
            s = float(F.cosine_similarity(a[None], b[None])[0])
            if s > best:
                best, best_j = s, j
        hits.append(bool(gl[best_j] == ql[i]))
    return hits


def brute_force_top1(q_old, g_old, q_new, g_new, refreshed, ql, gl) -> float:
    """CMC@1 (%) of a mixed gallery, by :func:`brute_force_hits`."""
    hits = brute_force_hits(q_old, g_old, q_new, g_new, refreshed, ql, gl)
    return 100.0 * sum(hits) / len(hits)


def test_mixed_gallery_against_a_brute_force_loop():
    method, bank, data = setup("nn", 2, "standard")
    every = ["random", "class-distance", "class-balanced"]
    found = backfill_curves(method, bank, data, "nn", ["cmc@1"], 3, BackfillConfig(steps=5, orders=every))
    [pair] = found["pairs"]
    orders = refresh_orders(method, bank, data, 0, 3, every)
    q, ql, gl = bank.query(1), data.query.labels, data.gallery.labels
    for name, order in orders.items():
        for fraction, value in zip(pair["fractions"], pair["curves"]["cmc@1"][name]):
            refreshed = torch.zeros(len(gl), dtype=torch.bool)
            refreshed[order[: round(fraction * len(gl))]] = True
            assert value == pytest.approx(brute_force_top1(q, bank.stored(0), q, bank.stored(1), refreshed, ql, gl))


def test_class_distance_order_by_hand():
    method, bank, data = setup("nn", 2, "standard")
    order = refresh_orders(method, bank, data, 0, 0, ["class-distance"])["class-distance"]
    g, labels = F.normalize(bank.stored(0), dim=1), data.gallery.labels
    own = []
    for j in range(len(g)):
        template = F.normalize(g[labels == labels[j]].sum(0), dim=0)
        own.append(float(g[j] @ template))
    assert order.tolist() == sorted(range(len(g)), key=lambda j: (own[j], j))


# A hand-made leave-one-out gallery, labels 7 and 3 (not 0..C-1, interleaved). Class 7: (1,0) twice and (0,1); its
# template (cosine: normalised sum of normalised features) is (2,1)/sqrt(5), so (1,0) scores 2/sqrt(5) = 0.894 and
# (0,1) 1/sqrt(5) = 0.447. Class 3: (0,1), (0,2), (0,1) and (1,1); its template is (0.707, 3.707)/3.774, so (0,1)
# scores 0.982 and (1,1) 0.827. Lowest first, ties (identical normalised vectors) by index.
HAND_GALLERY = torch.tensor([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.0], [0.0, 2.0], [0.0, 1.0]])
HAND_LABELS = torch.tensor([3, 7, 3, 7, 7, 3, 3])
HAND_TIER = [3, 2, 1, 0, 2, 3, 3]  # each item's rank of score: 0.447 < 0.827 < 0.894 < 0.982
HAND_ORDER = [3, 2, 1, 4, 0, 5, 6]


@pytest.mark.parametrize("permutation", [list(range(7)), [6, 0, 5, 1, 4, 2, 3]])  # features and labels moved together
def test_class_distance_order_on_a_hand_made_gallery(permutation):
    images = ImageArrays(torch.zeros(7, 1, 1, 1, dtype=torch.uint8), HAND_LABELS[permutation])
    data = ScenarioData(images, images, None, None, (0.5,), (0.25,), 1, 2, "synthetic")
    bank = FeatureBank.in_memory([ModelFeatures(HAND_GALLERY[permutation], None)])
    order = refresh_orders(StandardMethod(), bank, data, 0, 0, ["class-distance"])["class-distance"]
    assert order.tolist() == sorted(range(7), key=lambda j: (HAND_TIER[permutation[j]], j))
    if permutation == list(range(7)):
        assert order.tolist() == HAND_ORDER


# The class-balanced order on the same gallery, by hand: class 3 most typical first is 0, 5, 6 (0.982, ties by index),
# then 2 (0.827); class 7 is 1, 4 (0.894), then 3 (0.447). Turn by turn, the more typical first: (0, 1), (5, 4),
# (6, 3), (2).
HAND_BALANCED = [0, 1, 5, 4, 6, 3, 2]


@pytest.mark.parametrize("permutation", [list(range(7)), [6, 0, 5, 1, 4, 2, 3]])
def test_class_balanced_order_on_a_hand_made_gallery(permutation):
    images = ImageArrays(torch.zeros(7, 1, 1, 1, dtype=torch.uint8), HAND_LABELS[permutation])
    data = ScenarioData(images, images, None, None, (0.5,), (0.25,), 1, 2, "synthetic")
    bank = FeatureBank.in_memory([ModelFeatures(HAND_GALLERY[permutation], None)])
    order = refresh_orders(StandardMethod(), bank, data, 0, 0, ["class-balanced"])["class-balanced"]
    # a plain loop over the hand-computed scores: each class's queue, most typical first (ties by position), then
    # one item per class in turn, the more typical first (ties by position)
    score, labels = [HAND_SCORE[i] for i in permutation], HAND_LABELS[permutation].tolist()
    queues = {c: sorted((j for j in range(7) if labels[j] == c), key=lambda j: (-score[j], j)) for c in set(labels)}
    expected = []
    while any(queues.values()):
        turn = [queue.pop(0) for queue in queues.values() if queue]
        expected += sorted(turn, key=lambda j: (-score[j], j))
    assert order.tolist() == expected
    if permutation == list(range(7)):
        assert order.tolist() == HAND_BALANCED


HAND_SCORE = [0.982, 0.894, 0.827, 0.447, 0.894, 0.982, 0.982]  # each item's similarity to its class template


def test_area_under_curve():
    assert area_under_curve([0, 0.5, 1], [10, 10, 10]) == pytest.approx(10)
    assert area_under_curve([0, 0.25, 0.5, 0.75, 1], [0, 25, 50, 75, 100]) == pytest.approx(50)
    assert area_under_curve([0, 0.5, 1], [0, 100, 100]) == pytest.approx(75)


def test_options_unset_leave_the_dump_and_set_ones_are_keyed():
    plain = ExtClass().model_dump(mode="json")
    assert "backfill" not in plain and "index" not in plain
    assert "backfill" not in MultiStep(eval_classes="seen").model_dump(mode="json")
    on = ExtClass(backfill={}, index={"kinds": ["flat"]})
    assert on.model_dump(mode="json")["backfill"] == {"steps": 10, "orders": ["random", "class-distance"]}
    assert on.as_trained().model_dump(mode="json") == ExtClass().as_trained().model_dump(mode="json")  # shared models


@pytest.mark.parametrize("fields,message", [
    ({"protocol": "template", "metrics": ["top1"], "backfill": {}}, "backfill needs protocol"),
    ({"eval_classes": "seen", "backfill": {}}, "backfill needs protocol"),
    ({"metrics": ["map"], "index": {}}, "index needs protocol"),
])
def test_options_refused_where_undefined(fields, message):
    with pytest.raises(ValueError, match=message):
        MultiStep(**fields)
