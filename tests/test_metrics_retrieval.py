from __future__ import annotations

import math

import pytest
import torch

from benchbackcompat.errors import BenchError
from benchbackcompat.metrics import (
    cmc,
    cosine_similarity,
    leave_one_out_cmc,
    leave_one_out_map,
    mean_average_precision,
    nearest_neighbour_top1,
    negative_squared_euclidean,
    pair_verification,
    pair_verification_outcomes,
    sample_verification_pairs,
    template_top1,
)


def T(x) -> torch.Tensor:
    return torch.tensor(x, dtype=torch.float32)


def L(x) -> torch.Tensor:
    return torch.tensor(x, dtype=torch.long)


def unit(*degrees: float) -> torch.Tensor:
    r = torch.deg2rad(torch.tensor(degrees, dtype=torch.float64))
    return torch.stack([r.cos(), r.sin()], 1).float()


# ----------------------------------------------------------------------------- similarities


def test_similarities_by_hand():
    q, g = T([[3, 4], [0, 0]]), T([[1, 0], [0, 2]])
    assert torch.allclose(cosine_similarity(q, g), T([[0.6, 0.8], [0, 0]]))  # zero vector -> 0, not nan
    assert torch.allclose(negative_squared_euclidean(q, g), T([[-20, -13], [-1, -4]]))


# ----------------------------------------------------------------------------- top-1 / CMC


def test_nearest_neighbour_top1_by_hand():
    g, gl = T([[1, 0], [0, 1], [-1, 0]]), L([0, 1, 2])
    q, ql = T([[0.9, 0.1], [0.1, 0.9], [-1, -0.2], [0.2, 1]]), L([0, 0, 2, 1])
    assert nearest_neighbour_top1(q, ql, g, gl) == pytest.approx(75.0)
    assert cmc(q, ql, g, gl, ks=(1, 2))[1] == pytest.approx(75.0)


def test_ties_go_to_the_lowest_gallery_index():
    q, ql = T([[1, 0]]), L([3])
    # [2,0] and [1,0] have the same cosine to the query: index 0 (label 7) wins
    assert nearest_neighbour_top1(q, ql, T([[2, 0], [1, 0], [0, 1]]), L([7, 3, 3])) == 0.0
    assert nearest_neighbour_top1(q, ql, T([[1, 0], [2, 0], [0, 1]]), L([3, 7, 3])) == 100.0
    assert cmc(q, ql, T([[2, 0], [1, 0], [0, 1]]), L([7, 3, 3]), ks=(1, 2)) == {1: 0.0, 2: 100.0}
    # Euclidean: the exact match wins; equidistant items tie and the lowest index wins
    assert nearest_neighbour_top1(q, ql, T([[2, 0], [1, 0]]), L([7, 3]),
                                  similarity=negative_squared_euclidean) == 100.0
    assert nearest_neighbour_top1(q, ql, T([[0, 1], [0, -1]]), L([4, 3]),
                                  similarity=negative_squared_euclidean) == 0.0
    assert nearest_neighbour_top1(q, ql, T([[0, 1], [0, -1]]), L([3, 4]),
                                  similarity=negative_squared_euclidean) == 100.0


def test_cmc_at_k_by_hand():
    g, gl = unit(0, 30, 60, 90), L([0, 0, 1, 1])
    q, ql = unit(0, 90), L([1, 1])  # first relevant at rank 3 and rank 1
    assert cmc(q, ql, g, gl, ks=(1, 2, 3, 5)) == pytest.approx({1: 50.0, 2: 50.0, 3: 100.0, 5: 100.0})
    # a query whose label is absent from the gallery is a miss
    q2, ql2 = unit(0, 90, 45), L([1, 1, 9])
    assert cmc(q2, ql2, g, gl, ks=(3,))[3] == pytest.approx(200 / 3)


# ----------------------------------------------------------------------------- mAP


def test_map_by_hand():
    g, gl = unit(0, 30, 60, 90), L([1, 0, 1, 0])
    q, ql = unit(0, 90), L([1, 1])
    # query 0: relevant at ranks 1, 3 -> AP (1 + 2/3)/2 = 5/6; query 1 (90,60,30,0): ranks 2, 4 -> (1/2 + 2/4)/2
    assert mean_average_precision(q, ql, g, gl) == pytest.approx(100 * (5 / 6 + 1 / 2) / 2)
    # mAP@R (R = 2): query 0 -> 1/2; query 1 -> (1/2)/2
    assert mean_average_precision(q, ql, g, gl, at="R") == pytest.approx(100 * (0.5 + 0.25) / 2)
    # mAP@k normalised by min(k, #relevant)
    assert mean_average_precision(q[:1], ql[:1], g, gl, at=1) == pytest.approx(100.0)
    assert mean_average_precision(q[:1], ql[:1], g, gl, at=2) == pytest.approx(50.0)
    assert mean_average_precision(q[:1], ql[:1], g, gl, at=3) == pytest.approx(100 * 5 / 6)
    assert mean_average_precision(q[:1], ql[:1], g, gl, at=100) == pytest.approx(100 * 5 / 6)


def test_map_skips_queries_without_relevant_items_and_breaks_ties_by_index():
    g, gl = unit(0, 30, 60, 90), L([1, 0, 1, 0])
    q, ql = unit(0, 45), L([1, 9])
    assert mean_average_precision(q, ql, g, gl) == pytest.approx(100 * 5 / 6)
    assert math.isnan(mean_average_precision(q[1:], ql[1:], g, gl))
    # identical gallery items: the irrelevant one (index 0) ranks first
    assert mean_average_precision(T([[1, 0]]), L([1]), T([[1, 0], [1, 0]]), L([0, 1])) == pytest.approx(50.0)
    assert mean_average_precision(T([[1, 0]]), L([1]), T([[1, 0], [1, 0]]), L([1, 0])) == pytest.approx(100.0)


@pytest.mark.parametrize("at", [0, -1, "r", 1.5, True])
def test_map_rejects_bad_at(at):
    with pytest.raises(BenchError, match="at"):
        mean_average_precision(T([[1, 0]]), L([1]), T([[1, 0]]), L([1]), at=at)


# ----------------------------------------------------------------------------- templates


def test_template_compares_labels_not_positions():
    g, gl = T([[1, 0], [0.8, 0.6], [0, 1], [0, 2]]), L([9, 9, 5, 5])
    q, ql = T([[1, 0.1], [0.1, 1]]), L([9, 5])
    assert template_top1(q, ql, g, gl) == 100.0


def test_template_averages_per_class():
    g, gl = T([[1, 0], [0, 1], [1, 0.2]]), L([5, 5, 9])
    q, ql = T([[1, 0]]), L([5])
    assert nearest_neighbour_top1(q, ql, g, gl) == 100.0  # the [1,0] gallery image matches
    assert template_top1(q, ql, g, gl) == 0.0  # the class-5 template points at 45 degrees


def test_template_normalises_features_before_averaging():
    # normalised average of class 5 points at 45 deg; the raw average would point at ~5.7 deg
    g, gl = T([[10, 0], [0, 1], [0.6, 0.8]]), L([5, 5, 9])
    q = unit(41.3)
    assert template_top1(q, L([5]), g, gl) == 100.0


def test_template_ties_go_to_the_smallest_label():
    g, gl = T([[1, 0], [1, 0]]), L([9, 5])
    assert template_top1(T([[1, 0]]), L([5]), g, gl) == 100.0
    assert template_top1(T([[1, 0]]), L([9]), g, gl) == 0.0


# ----------------------------------------------------------------------------- leave-one-out


def test_leave_one_out_excludes_self():
    x, y = T([[1, 0], [0.9, 0.1], [0, 1]]), L([0, 1, 1])
    assert cmc(x, y, x, y, ks=(1,))[1] == 100.0  # self always matches
    assert leave_one_out_cmc(x, x, y)[1] == pytest.approx(100 / 3)
    assert leave_one_out_cmc(x, x, y, ks=(1, 2)) == pytest.approx({1: 100 / 3, 2: 200 / 3})
    # query 0 has no other relevant item (skipped); query 1: rank 2 -> 1/2; query 2: rank 1 -> 1
    assert leave_one_out_map(x, x, y) == pytest.approx(75.0)
    assert mean_average_precision(x, y, x, y, exclude_self=True) == pytest.approx(75.0)


def test_leave_one_out_cross_model_excludes_the_same_image():
    gallery = T([[1, 0], [0, 1], [0.9, 0.1]])  # old-model features of images 0..2
    query = T([[1, 0], [0, 1], [1, 0]])  # new-model features of the same images
    y = L([0, 1, 0])
    assert cmc(query, y, gallery, y, ks=(1,))[1] == 100.0
    assert leave_one_out_cmc(query, gallery, y)[1] == pytest.approx(200 / 3)
    # image 1 has no other label-1 image: skipped; images 0 and 2 find their partner at rank 1
    assert leave_one_out_map(query, gallery, y) == pytest.approx(100.0)


def test_exclude_self_needs_same_images():
    with pytest.raises(BenchError, match="same images"):
        cmc(T([[1, 0]]), L([0]), T([[1, 0], [0, 1]]), L([0, 1]), exclude_self=True)


# ----------------------------------------------------------------------------- chunking and a brute-force reference


def _random_sets(seed: int):
    g = torch.Generator().manual_seed(seed)
    qf = torch.randint(-2, 3, (37, 3), generator=g).float()  # small integers: many exact ties
    gf = torch.randint(-2, 3, (23, 3), generator=g).float()
    ql = torch.randint(0, 5, (37,), generator=g)
    ql[:3] = 9  # labels absent from the gallery
    gl = torch.randint(0, 5, (23,), generator=g)
    return qf, ql, gf, gl


def _reference(qf, ql, gf, gl, exclude_self=False):
    """Per-query stable rankings by -squared distance, with Python loops."""
    ranks, aps, aps_r, aps_3 = [], [], [], []
    for i in range(len(qf)):
        items = [j for j in range(len(gf)) if not (exclude_self and j == i)]
        score = {j: -int(((qf[i] - gf[j]) ** 2).sum()) for j in items}
        order = sorted(items, key=lambda j: -score[j])  # stable: lower index first on ties
        rel = [int(gl[j] == ql[i]) for j in order]
        ranks.append(rel.index(1) if 1 in rel else len(gf))
        n_rel = sum(rel)
        if n_rel == 0:
            continue
        prec = [sum(rel[: r + 1]) / (r + 1) for r in range(len(rel))]
        aps.append(sum(p for p, r in zip(prec, rel) if r) / n_rel)
        aps_r.append(sum(p * r for p, r in zip(prec[:n_rel], rel[:n_rel])) / n_rel)
        aps_3.append(sum(p * r for p, r in zip(prec[:3], rel[:3])) / min(3, n_rel))
    cmcs = {k: 100 * sum(r < k for r in ranks) / len(qf) for k in (1, 2, 5)}
    mean = lambda v: 100 * sum(v) / len(v)  # noqa: E731
    return cmcs, mean(aps), mean(aps_r), mean(aps_3)


@pytest.mark.parametrize("chunk_size", [1, 5, 4096])
def test_matches_brute_force_reference_for_any_chunk_size(chunk_size):
    qf, ql, gf, gl = _random_sets(0)
    kw = dict(similarity=negative_squared_euclidean, chunk_size=chunk_size)
    cmcs, ap, ap_r, ap_3 = _reference(qf, ql, gf, gl)
    assert cmc(qf, ql, gf, gl, ks=(1, 2, 5), **kw) == pytest.approx(cmcs)
    assert nearest_neighbour_top1(qf, ql, gf, gl, **kw) == pytest.approx(cmcs[1])
    assert mean_average_precision(qf, ql, gf, gl, **kw) == pytest.approx(ap)
    assert mean_average_precision(qf, ql, gf, gl, at="R", **kw) == pytest.approx(ap_r)
    assert mean_average_precision(qf, ql, gf, gl, at=3, **kw) == pytest.approx(ap_3)
    # leave-one-out on one set of the same images
    xf, xl = qf[:23], ql[:23]
    cmcs, ap, ap_r, ap_3 = _reference(xf, xl, xf, xl, exclude_self=True)
    assert leave_one_out_cmc(xf, xf, xl, ks=(1, 2, 5), **kw) == pytest.approx(cmcs)
    assert leave_one_out_map(xf, xf, xl, **kw) == pytest.approx(ap)
    assert leave_one_out_map(xf, xf, xl, at="R", **kw) == pytest.approx(ap_r)


def test_chunked_equals_unchunked_with_cosine_and_templates():
    qf, ql, gf, gl = _random_sets(1)
    for fn in (nearest_neighbour_top1, template_top1, mean_average_precision):
        assert fn(qf, ql, gf, gl, chunk_size=4) == pytest.approx(fn(qf, ql, gf, gl))
    assert cmc(qf, ql, gf, gl, chunk_size=3) == pytest.approx(cmc(qf, ql, gf, gl))


def test_input_errors_name_the_field():
    with pytest.raises(BenchError, match="dimension"):
        nearest_neighbour_top1(T([[1, 0]]), L([0]), T([[1, 0, 0]]), L([0]))
    with pytest.raises(BenchError, match="gallery_labels"):
        nearest_neighbour_top1(T([[1, 0]]), L([0]), T([[1, 0]]), L([0, 1]))
    with pytest.raises(BenchError, match="chunk_size"):
        nearest_neighbour_top1(T([[1, 0]]), L([0]), T([[1, 0]]), L([0]), chunk_size=0)
    with pytest.raises(BenchError, match="ks"):
        cmc(T([[1, 0]]), L([0]), T([[1, 0]]), L([0]), ks=(0,))


# ----------------------------------------------------------------------------- verification


def test_verification_separable_pairs_is_100():
    g = torch.Generator().manual_seed(0)
    a = torch.randn(60, 8, generator=g)
    same = torch.arange(60) % 3 == 0
    b = torch.where(same[:, None], 2 * a, -a)  # distance 0 for same pairs, 4 for different ones
    assert pair_verification(a, b, same) == pytest.approx(100.0)


def test_verification_contiguous_folds_and_lowest_best_threshold():
    # squared distances of unit vectors: 2 - 2 cos; pairs 0..3 -> 1, 3, 2, 4
    q = unit(0, 0, 0, 0)
    g = unit(60, 120, 90, 180)
    same = torch.tensor([True, False, True, False])
    # fold {0,1}: threshold chosen on {2,3} is 2.5 -> both right.
    # fold {2,3}: on {0,1} thresholds 1.5 and 2.5 tie -> 1.5 (lowest) -> pair 2 (dist 2) is wrong.
    acc = pair_verification(q, g, same, folds=2, thresholds=torch.tensor([0.5, 1.5, 2.5]))
    assert acc == pytest.approx(75.0)
    # each pair's outcome at its fold's threshold, by hand: 1 < 2.5 same, 3 >= 2.5 different, 2 >= 1.5 called
    # different although same (wrong), 4 >= 1.5 different
    acc, correct = pair_verification_outcomes(q, g, same, folds=2, thresholds=torch.tensor([0.5, 1.5, 2.5]))
    assert acc == pytest.approx(75.0) and correct.tolist() == [True, True, False, True]


def test_verification_rejects_bad_folds():
    with pytest.raises(BenchError, match="folds"):
        pair_verification(T([[1, 0]]), T([[1, 0]]), torch.tensor([True]))


def test_sample_verification_pairs():
    labels = L([0, 0, 0, 1, 1, 2, 5, 5, 5, 5])
    a, b, same = sample_verification_pairs(labels, 200, 300, torch.Generator().manual_seed(0))
    assert int(same.sum()) == 200 and int((~same).sum()) == 300
    assert torch.equal(same, labels[a] == labels[b])
    assert bool((a != b).all())
    assert 0 < int(same[:100].sum()) < 100  # positives and negatives are interleaved
    a2, b2, _ = sample_verification_pairs(labels, 200, 300, torch.Generator().manual_seed(0))
    assert torch.equal(a, a2) and torch.equal(b, b2)
    a3, _, _ = sample_verification_pairs(labels, 200, 300, torch.Generator().manual_seed(1))
    assert not torch.equal(a, a3)
    # positives are uniform over ordered same-label pairs: 12 of 20 are in class 5
    a, b, same = sample_verification_pairs(labels, 20000, 0, torch.Generator().manual_seed(2))
    assert float((labels[a] == 5).float().mean()) == pytest.approx(0.6, abs=0.02)
    assert len(set(zip(a.tolist(), b.tolist()))) == 20


def test_sample_verification_pairs_impossible_quota():
    with pytest.raises(BenchError, match="single class"):
        sample_verification_pairs(L([3, 3, 3]), 1, 1, torch.Generator().manual_seed(0))
    with pytest.raises(BenchError, match="two items"):
        sample_verification_pairs(L([0, 1, 2]), 1, 1, torch.Generator().manual_seed(0))


def test_nan_scores_rank_last():
    g, gl = T([[float("nan"), 0], [1, 0]]), L([1, 0])
    assert nearest_neighbour_top1(T([[1, 0]]), L([0]), g, gl) == 100.0
    assert mean_average_precision(T([[1, 0]]), L([1]), g, gl) == pytest.approx(50.0)
