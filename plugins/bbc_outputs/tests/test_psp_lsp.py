"""PSP/LSP: Algorithm 1 against the paper's Eqs. 2-4 and Propositions 1-2, top-k, tie-breaking, the
methods' models and an end-to-end multi-step run."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from bbc_outputs.lsp import LSP
from bbc_outputs.projection import centring_projection, keep_top_k, simplex_features, simplex_similarity
from bbc_outputs.psp import PSP
from benchbackcompat.scenarios.kinds import CL2R, MultiStep
from benchbackcompat.method import StandardRecipe
from benchbackcompat.metrics import retrieval
from benchbackcompat.store import ResultStore


def eq_2_4(f: torch.Tensor, c_k: int) -> torch.Tensor:
    """h = P_{t,k} f / ||P_{t,k} f|| evaluated literally, in float64."""
    h = f.double() @ centring_projection(c_k, f.shape[1]).T
    return h / h.norm(dim=1, keepdim=True)


def prototype(y: int, classes: int) -> torch.Tensor:
    """v_y = e_y - o (Eq. 5): 1 - 1/C at y, -1/C elsewhere."""
    return torch.eye(classes, dtype=torch.float64)[y] - 1.0 / classes


@pytest.mark.parametrize("c_k", [2, 3, 7, 10])
def test_projection_equals_eq_2_4_for_softmax_and_logits(c_k):
    logits = 3 * torch.randn(50, 10, generator=torch.Generator().manual_seed(c_k), dtype=torch.float64)
    psp = simplex_features(logits, c_k, softmax=True)
    lsp = simplex_features(logits, c_k, softmax=False)
    assert psp.shape == lsp.shape == (50, c_k)
    torch.testing.assert_close(psp.double(), eq_2_4(torch.softmax(logits, dim=1), c_k), atol=1e-6, rtol=0)
    torch.testing.assert_close(lsp.double(), eq_2_4(logits, c_k), atol=1e-6, rtol=0)
    no_centre = simplex_features(logits, c_k, softmax=False, center=False)  # Eq. 6
    torch.testing.assert_close(no_centre.double(), F.normalize(logits[:, :c_k], dim=1), atol=1e-6, rtol=0)


def test_projection_by_hand():
    # softmax(0, ln 3, ln 4) = (1/8, 3/8, 4/8); truncated to 2 classes (1/8, 3/8), centred (-1/8, 1/8)
    logits = torch.tensor([[0.0, math.log(3), math.log(4)]])
    s = 1 / math.sqrt(2)
    torch.testing.assert_close(simplex_features(logits, 2, softmax=True), torch.tensor([[-s, s]], dtype=torch.float64))
    # all three: (1/8, 3/8, 4/8) - 1/3 = (-5, 1, 4)/24 -> normalised by sqrt(42)/24
    expected = torch.tensor([[-5.0, 1.0, 4.0]], dtype=torch.float64) / math.sqrt(42)
    torch.testing.assert_close(simplex_features(logits, 3, softmax=True), expected)


def test_centring_projection_shape_and_zero_block():
    P = centring_projection(3, 5)
    assert P.shape == (3, 5) and torch.all(P[:, 3:] == 0)
    torch.testing.assert_close(P[:, :3], torch.eye(3, dtype=torch.float64) - 1 / 3)


@pytest.mark.parametrize(("c_k", "c_t"), [(2, 4), (5, 10), (20, 50)])
def test_projected_prototypes_equal_old_prototypes(c_k, c_t):
    """Proposition 2: P_{t,k} v^t_y = v^k_y for every old class y; Proposition 1: new prototypes are
    orthogonal to the zero-padded old ones."""
    P = centring_projection(c_k, c_t)
    for y in range(c_k):
        torch.testing.assert_close(P @ prototype(y, c_t), prototype(y, c_k))
    padded_old = torch.stack([F.pad(prototype(y, c_k), (0, c_t - c_k)) for y in range(c_k)])
    new = torch.stack([prototype(y, c_t) for y in range(c_k, c_t)])
    torch.testing.assert_close(padded_old @ new.T, torch.zeros(c_k, c_t - c_k, dtype=torch.float64))
    # a one-hot output of the new model projects onto the normalised old prototype
    feature = simplex_features(torch.eye(c_t)[:c_k], c_k, softmax=False)
    expected = torch.stack([prototype(y, c_k) for y in range(c_k)])
    torch.testing.assert_close(feature.double(), F.normalize(expected, dim=1), atol=1e-6, rtol=0)


def test_top_k_keeps_the_k_largest_entries():
    x = torch.tensor([[0.5, -0.1, 0.3, -0.7], [-0.2, 0.4, 0.1, 0.0]])
    expected = F.normalize(torch.tensor([[0.5, 0.0, 0.3, 0.0], [0.0, 0.4, 0.1, 0.0]]), dim=1)
    torch.testing.assert_close(keep_top_k(x, 2), expected)
    assert keep_top_k(x, 4) is x
    logits = torch.randn(8, 30, generator=torch.Generator().manual_seed(0))
    sparse = simplex_features(logits, 20, softmax=True, top_k=5)
    dense = simplex_features(logits, 20, softmax=True)
    assert ((sparse != 0).sum(1) == 5).all()
    assert torch.equal(sparse.argmax(1), dense.argmax(1))


def _first_match_top1(scores: torch.Tensor, ql, gl, exclude_self: bool) -> float:
    """Top-1 by a loop: the lowest gallery index among the highest scores."""
    correct = 0
    for i in range(scores.shape[0]):
        row = scores[i].clone()
        if exclude_self:
            row[i] = -math.inf
        j = min(int(c) for c in torch.nonzero(row == row.max()).flatten())
        correct += int(gl[j] == ql[i])
    return 100.0 * correct / scores.shape[0]


def test_two_class_step_gives_exact_ties_broken_by_the_lowest_gallery_index():
    gen = torch.Generator().manual_seed(3)
    logits_q, logits_g = torch.randn(40, 6, generator=gen), torch.randn(40, 2, generator=gen)
    labels = torch.randint(0, 2, (40,), generator=gen)
    q, g = PSP().pair_features(logits_q, logits_g, 3, 0)  # a query model vs a two-class gallery model
    assert q.shape == g.shape == (40, 2)
    scores = simplex_similarity(q, g)
    assert set(scores.unique().tolist()) == {-2.0, 0.0}  # two-valued features: exact ties (cos - 1 of -1 and 1)
    expected = _first_match_top1(scores, labels, labels, exclude_self=False)
    assert retrieval.nearest_neighbour_top1(q, labels, g, labels, similarity=simplex_similarity) == expected
    assert retrieval.cmc(q, labels, g, labels, ks=(1,), similarity=simplex_similarity)[1] == expected
    loo = _first_match_top1(scores, labels, labels, exclude_self=True)
    assert retrieval.leave_one_out_cmc(q, g, labels, similarity=simplex_similarity)[1] == loo
    # the result does not depend on chunking
    assert retrieval.leave_one_out_cmc(q, g, labels, similarity=simplex_similarity, chunk_size=7)[1] == loo


def confident_logits(first_label: int, n: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    """10-class logits of 2n items that a confident model puts at vertex 0 (its logit leads the others by 20), the
    first n of class ``first_label``, the last n of the other class; what tells the classes apart is the residual
    entries alone: class 0 items lean towards output 1, class 1 items towards output 2."""
    logits = torch.zeros(2 * n, 10)
    logits[:, 0] = 20.0
    lean = torch.linspace(0.2, 0.4, n)  # a distinct lean per item, so that no two items tie
    labels = torch.tensor([first_label] * n + [1 - first_label] * n)
    for i, y in enumerate(labels.tolist()):
        logits[i, 1 + y] = lean[i % n]
    return logits, labels


@pytest.mark.parametrize("first_label", [0, 1])
def test_a_confident_model_is_ranked_by_its_residuals_not_by_the_gallery_index(first_label):
    """All 12 items sit at one vertex (softmax residuals ~e^-20): leave-one-out top-1 must find the item of the
    same lean, whichever class comes first in the gallery. Rounding the cosine to a grid, or computing the
    projection in float32, ties all 12 and the lowest gallery index wins (50%)."""
    logits, labels = confident_logits(first_label)
    features = simplex_features(logits, 10, softmax=True)
    scores = simplex_similarity(features, features)
    assert _first_match_top1(scores, labels, labels, exclude_self=True) == 100.0  # the brute-force loop
    assert retrieval.leave_one_out_cmc(features, features, labels, similarity=simplex_similarity)[1] == 100.0
    float32 = simplex_features(logits.float(), 10, softmax=True).float()
    float32_scores = float32 @ float32.T  # the float32 cosine ties them all
    assert _first_match_top1(float32_scores, labels, labels, exclude_self=True) == 50.0


def test_the_similarity_is_the_cosine_minus_one():
    q, g = F.normalize(torch.randn(7, 5, dtype=torch.float64), dim=1), F.normalize(torch.randn(4, 5, dtype=torch.float64), dim=1)
    torch.testing.assert_close(simplex_similarity(q, g), q @ g.T - 1)


def test_query_features_depend_on_the_gallery_model():
    query = torch.randn(5, 12)
    for method in (PSP(), LSP()):
        for c_k in (3, 8, 12):
            q, g = method.pair_features(query, torch.randn(4, c_k), 2, 0)
            assert q.shape == (5, c_k) and g.shape == (4, c_k)
            torch.testing.assert_close(q, simplex_features(query, c_k, softmax=method.softmax))
    q, _ = LSP(LSP.Params(center=False)).pair_features(query, torch.randn(4, 3), 1, 0)
    torch.testing.assert_close(q, F.normalize(query[:, :3].double(), dim=1))


def test_temperature_is_part_of_the_model_and_psp_lsp_share_their_models():
    from types import SimpleNamespace

    ctx = SimpleNamespace(scenario=MultiStep(), image_size=32, train_data=SimpleNamespace(images=torch.zeros(1, 3, 32, 32)))
    model = PSP().build_model(ctx, "convnet-s", 4)
    features = torch.randn(3, model.feature_dim)
    torch.testing.assert_close(model.head(features), model.head.inner(features) / 12)
    hot = PSP(PSP.Params(temperature=2, temperature_mode="multiply")).build_model(ctx, "convnet-s", 4)
    torch.testing.assert_close(hot.head(features), hot.head.inner(features) * 2)
    identity = StandardRecipe(PSP()).model_key()
    assert identity == StandardRecipe(LSP()).model_key() == StandardRecipe(LSP(LSP.Params(center=False))).model_key()
    assert identity != StandardRecipe(PSP(PSP.Params(temperature=1))).model_key()
    assert StandardRecipe(PSP()).head == PSP.head == "linear"  # the head is a head's name, not an identity
    # the paper's other reading: the temperature in the training loss only (train mode), not at extraction (eval mode)
    loss_only = PSP(PSP.Params(temperature_scope="loss"))
    trained = loss_only.build_model(ctx, "convnet-s", 4)
    torch.testing.assert_close(trained.head.train()(features), trained.head.inner(features) / 12)
    torch.testing.assert_close(trained.head.eval()(features), trained.head.inner(features))
    assert StandardRecipe(loss_only).model_key() != identity


def test_replay_scenarios_are_not_applicable():
    assert "cl2r" in PSP().unsupported_reason(CL2R())
    assert "replay memory" in LSP().unsupported_reason(MultiStep(memory_per_class=20))
    assert LSP().unsupported_reason(MultiStep()) is None


@pytest.mark.slow
def test_multi_step_run_psp_lsp_share_models_and_fill_matrices(tmp_path):
    from benchbackcompat.cli import main

    tiny = ["--set", "data.num_classes=6", "--set", "data.train_per_class=40", "--set", "data.test_per_class=12",
            "--set", "train.epochs=2", "--set", "train.batch_size=32", "--set", "model.embedding_dim=16",
            "--set", "num_models=3"]
    assert main(["run", "--out", str(tmp_path), "--scenario", "multi-step", "--methods", "psp,lsp", *tiny]) == 0
    records = {r.method: r for r in ResultStore(tmp_path).records()}
    assert records["psp"].shared_models == records["lsp"].shared_models
    for record in records.values():
        C = record.matrices["cmc@1"]
        assert record.status == "finished" and not record.notes
        assert all(0 <= C[t][k] <= 100 for t in range(3) for k in range(t + 1))
