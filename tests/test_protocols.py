"""The protocol registry (metrics.protocols): which metrics a protocol scores, on hand-computed entries."""
from __future__ import annotations

import pytest
import torch

from benchbackcompat.metrics import protocols
from benchbackcompat.metrics.retrieval import cosine_similarity


def entry(gallery_labels: list[int]) -> protocols.Entry:
    query = torch.tensor([[1.0, 0.0], [0.0, 1.0]])  # classes 0 and 1
    gallery = torch.tensor([[1.0, 0.1], [0.1, 1.0]])  # query 0 ranks gallery 0 first, query 1 gallery 1
    return protocols.Entry(query, torch.tensor([0, 1]), gallery, torch.tensor(gallery_labels), cosine_similarity, 16)


def test_nearest_neighbour_cmc_and_map_by_hand():
    value, hits = protocols.scorer("nn", "cmc@1")("cmc@1", entry([1, 1]))  # query 0 misses, query 1 hits
    assert value == pytest.approx(50.0) and hits.tolist() == [False, True]
    swapped = entry([1, 0])  # each query's class is the second gallery item it ranks
    value, hits = protocols.scorer("nn", "cmc@1")("cmc@1", swapped)
    assert value == 0.0 and hits.tolist() == [False, False]
    value, hits = protocols.scorer("nn", "cmc@5")("cmc@5", swapped)
    assert value == pytest.approx(100.0) and hits.tolist() == [True, True]
    value, precisions = protocols.scorer("nn", "map")("map", swapped)  # one relevant item at rank 2: AP = 1/2
    assert precisions.tolist() == pytest.approx([0.5, 0.5]) and value == pytest.approx(50.0)


def test_template_top1_compares_labels_not_positions():
    value, hits = protocols.scorer("template", "top1")("top1", entry([1, 1]))  # one template (class 1) for both queries
    assert hits.tolist() == [False, True] and value == pytest.approx(50.0)


@pytest.mark.parametrize(("protocol", "metric"), [("template", "map"), ("verification", "cmc@1"), ("loo", "top1")])
def test_a_metric_the_protocol_does_not_define_is_a_one_line_error(protocol, metric):
    with pytest.raises(ValueError, match=f"metric '{metric}' is not defined for protocol '{protocol}'"):
        protocols.scorer(protocol, metric)


def test_each_protocol_declares_its_chance_level_by_hand():
    assert {protocol for protocol, _ in protocols.SCORERS} == set(protocols.CHANCE)  # every protocol declares one
    query, gallery = torch.tensor([0, 1]), torch.tensor([0, 1, 1, 2])
    # nn: class 0 has 1 relevant item of 4, class 1 has 2 of 4; CMC@3 with replacement: 1 - (1 - p)^3
    assert protocols.chance_level("nn", "cmc@1", query, gallery) == pytest.approx(100 * (0.25 + 0.5) / 2)
    assert protocols.chance_level("nn", "cmc@3", query, gallery) == pytest.approx(100 * (1 - 0.75**3 + 1 - 0.5**3) / 2)
    assert protocols.chance_level("nn", "map", query, gallery) == pytest.approx(37.5)
    # loo ignores the gallery: the queries [0, 0, 0, 1] see 2 of 3 (class 0) or 0 of 3 (class 1) relevant others
    assert protocols.chance_level("loo", "map", torch.tensor([0, 0, 0, 1]), gallery) == pytest.approx(100 * 2 / 4)
    assert protocols.chance_level("template", "top1", query, gallery) == pytest.approx(100 / 3)
    assert protocols.chance_level("verification", "verification", query, gallery) == 50.0
    with pytest.raises(ValueError, match="protocol 'knn' declares no chance level"):
        protocols.chance_level("knn", "cmc@1", query, gallery)
