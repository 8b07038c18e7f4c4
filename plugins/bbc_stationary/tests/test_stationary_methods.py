"""The stationary methods: d-Simplex/ETF heads as built by the methods, the HOC loss against its
equation, d-Simplex-FD, ETF dot regression, CoReS initialisation, the IAM-CL2R label layout."""
from __future__ import annotations

import math

import pytest
import torch

from bbc_stationary.alignment import hoc_alignment, protocol_rho
from bbc_stationary.common import fine_tuning_targets, preallocated
from bbc_stationary.cores import CoReS, CoresParams
from bbc_stationary.dsimplex_fd import DSimplexFD, distillation_weight
from bbc_stationary.etf_ce import ETFCrossEntropy
from bbc_stationary.etf_dr import ETFDotRegression, dot_regression
from bbc_stationary.hoc import DSimplexHOC, HocParams
from benchbackcompat.config import TrainConfig
from benchbackcompat.scenarios.kinds import CL2R, IAMCL2R, MultiStep
from benchbackcompat.data.arrays import ImageArrays
from benchbackcompat.engine.train import make_optimizer
from benchbackcompat.errors import BenchError
from benchbackcompat.method import Batch, StepContext, frozen_copy

SMALL = {"model": {"backbone": "convnet-s", "embedding_dim": 16}}


def context(scenario, classes: int, step: int = 0, **fields) -> StepContext:
    steps = scenario.steps(classes)
    images = ImageArrays(torch.zeros(4, 3, 16, 16, dtype=torch.uint8), torch.zeros(4, dtype=torch.long))
    return StepContext(scenario=scenario, step=steps[step], steps=steps, train=TrainConfig(), device=torch.device("cpu"),
                       old_model=fields.pop("old_model", None), train_data=images, memory=None, mean=(0.5,) * 3,
                       std=(0.25,) * 3, image_size=16, **fields)


def batch(n: int = 8, memory: int = 0) -> Batch:
    g = torch.Generator().manual_seed(0)
    return Batch(torch.randn(n, 3, 16, 16, generator=g), torch.arange(n) % 3,
                 torch.arange(n) >= n - memory)


def test_hoc_model_has_a_fixed_unit_dsimplex_without_gradient_or_weight_decay():
    ctx = context(MultiStep(**SMALL, num_models=2), 6)
    model = DSimplexHOC().build_model(ctx, "convnet-s", 3)
    W = model.head.weight
    K = 6
    assert W.shape == (K, K - 1) and model.feature_dim == K - 1
    assert torch.allclose(W.norm(dim=1), torch.ones(K), atol=1e-6)
    cos = W @ W.T
    off = cos[~torch.eye(K, dtype=torch.bool)]
    assert torch.allclose(off, torch.full_like(off, -1 / (K - 1)), atol=1e-6)
    assert not W.requires_grad and all(p is not W for p in model.parameters())
    optimised = {id(p) for group in make_optimizer(model, ctx.train).param_groups for p in group["params"]}
    assert id(W) not in optimised
    assert model.projection.bias is None
    before = W.clone()
    DSimplexHOC().loss(model, batch(), ctx)["loss"].backward()
    assert W.grad is None and torch.equal(W, before)


def direct_nce(old, new, labels, rho, negatives):
    """Eq. 4 evaluated term by term with Python loops (batch mean)."""
    total = 0.0
    n = len(old)
    for i in range(n):
        def delta(j):
            a, b = old[i], new[j]
            return math.exp(rho * float(a @ b) / (float(a.norm()) * float(b.norm())))
        if negatives == "official":
            den = sum(1.0 if labels[i] == labels[j] else delta(j) for j in range(n))
        elif negatives == "paper":
            den = sum(delta(j) for j in range(n) if j != i)
        else:
            den = sum(delta(j) for j in range(n))
        total += -math.log(delta(i) / den)
    return total / n


@pytest.mark.parametrize("negatives", ["official", "paper", "infonce"])
def test_hoc_alignment_matches_its_equation(negatives):
    g = torch.Generator().manual_seed(1)
    old, new = torch.randn(7, 5, generator=g, dtype=torch.float64), torch.randn(7, 5, generator=g, dtype=torch.float64)
    labels = torch.tensor([0, 1, 0, 2, 1, 1, 3])
    got = hoc_alignment(old.double(), new.double(), labels, 5.0, negatives)
    assert float(got) == pytest.approx(direct_nce(old, new, labels, 5.0, negatives), rel=1e-5)


def test_hoc_options_differ_and_align_identical_features_better():
    g = torch.Generator().manual_seed(2)
    old = torch.randn(16, 8, generator=g)
    labels = torch.arange(16) % 4
    values = {n: float(hoc_alignment(old, torch.randn(16, 8, generator=g), labels, 10.0, n)) for n in ("official", "paper", "infonce")}
    assert len(set(values.values())) == 3
    assert float(hoc_alignment(old, old, labels, 10.0)) < values["official"]


def test_hoc_total_loss_weights_and_reference():
    ctx = context(IAMCL2R(**SMALL, num_tasks=3, replacements=[2], pretrain_classes=[4, 8]), 9, step=1)
    method = DSimplexHOC(HocParams(lam=0.25))
    model = method.build_model(ctx, "convnet-s", 3)
    ctx.old_model = frozen_copy(model)
    b = batch()
    terms = method.loss(model, b, ctx)
    terms = {k: v.detach() for k, v in terms.items()}
    assert float(terms["loss"]) == pytest.approx(0.25 * float(terms["ce"]) + 0.75 * float(terms["nce"]), rel=1e-5)
    # at a replacement task the frozen reference is the incoming model, not the previous one
    incoming = frozen_copy(method.build_model(ctx, "convnet-s", 3))
    ctx.align_to = incoming
    assert ctx.align_to is incoming and ctx.old_model is not incoming
    assert float(method.loss(model, b, ctx)["nce"].detach()) != pytest.approx(float(terms["nce"]))


def test_rho_defaults_per_protocol():
    iam = context(IAMCL2R(**SMALL, num_tasks=3, replacements=[2], pretrain_classes=[4, 8]), 9)
    cl2r = context(CL2R(**SMALL, num_tasks=3), 9)
    assert protocol_rho(None, iam) == 10 and protocol_rho(None, cl2r) == 5 and protocol_rho(2.0, cl2r) == 2
    cl2r.image_size = 64  # TinyImageNet-style CL2R
    assert protocol_rho(None, cl2r) == 10


def test_iam_label_reversal_and_preallocation():
    paper = IAMCL2R(**SMALL, num_tasks=7, initial_class_fraction=0.1, replacements=[3, 5], pretrain_classes=[100, 300, 600])
    ctx = context(paper, 100)
    assert preallocated(None, ctx) == 1024  # 600 pretraining + 100 fine-tuning classes, as the paper's K
    labels = torch.tensor([0, 1, 99])
    assert fine_tuning_targets(labels, 1024, paper).tolist() == [1023, 1022, 924]
    assert fine_tuning_targets(labels, 100, CL2R(num_tasks=3)).tolist() == [0, 1, 99]
    with pytest.raises(BenchError, match="classes >= 700"):
        preallocated(500, ctx)
    assert preallocated(None, context(MultiStep(**SMALL, num_models=2), 6)) == 6
    # the fine-tuning targets are the rightmost vertices: a fine-tuned model logits over all K
    method = DSimplexHOC()
    small = context(IAMCL2R(**SMALL, num_tasks=3, replacements=[2], pretrain_classes=[4, 8]), 9)
    model = method.build_model(small, "convnet-s", 3)
    assert model.head.num_classes == 32  # next power of two >= 8 + 9
    assert method.targets(model, batch(), small).tolist() == (31 - torch.arange(8) % 3).tolist()


def test_fd_distils_only_replayed_samples_with_the_cl2r_weight():
    scenario = CL2R(**SMALL, num_tasks=3, initial_class_fraction=0.4)  # 10 classes: 4, then 3 + 3
    ctx = context(scenario, 10, step=1)
    assert distillation_weight(5.0, ctx) == pytest.approx(5 * math.sqrt(3 / 4))
    method = DSimplexFD()
    model = method.build_model(ctx, "convnet-s", 7).eval()  # eval: batch-norm statistics do not depend on the batch
    ctx.old_model = frozen_copy(model)
    assert "fd" not in method.loss(model, batch(memory=0), ctx)  # nothing replayed: CE only
    terms = method.loss(model, batch(memory=4), ctx)
    assert float(terms["fd"]) == pytest.approx(0.0, abs=1e-6)  # identical models: no distance
    ctx.old_model = frozen_copy(method.build_model(ctx, "convnet-s", 7))
    b = batch(memory=4)
    with torch.no_grad():
        new, old = model.embed(b.images[4:]), ctx.old_model.embed(b.images[4:])
    expected = (1 - torch.nn.functional.cosine_similarity(new, old)).mean()
    terms = method.loss(model, b, ctx)
    assert float(terms["fd"]) == pytest.approx(float(expected), rel=1e-5)
    assert float(terms["loss"]) == pytest.approx(float(terms["ce"]) + 5 * math.sqrt(3 / 4) * float(expected), rel=1e-5)


def test_etf_methods_frame_and_dot_regression():
    ctx = context(MultiStep(**SMALL, num_models=2), 6)
    model = ETFCrossEntropy().build_model(ctx, "convnet-s", 3)
    W = model.head.weight
    assert W.shape == (6, 16) and not W.requires_grad  # the scenario's 16 dims, >= K-1
    assert torch.allclose(W.norm(dim=1), torch.ones(6), atol=1e-6)
    assert torch.allclose(W.sum(0), torch.zeros(16), atol=1e-6)
    off = (W @ W.T)[~torch.eye(6, dtype=torch.bool)]
    assert torch.allclose(off, torch.full_like(off, -1 / 5), atol=1e-6)
    # DR by hand: a feature on its own vertex costs 0, one on another vertex 1/2 (-1/5 - 1)^2
    features = torch.stack([3 * W[0], W[1]])
    targets = torch.tensor([0, 2])
    assert float(dot_regression(features, W, targets)) == pytest.approx(0.5 * (0 + (-1 / 5 - 1) ** 2) / 2, rel=1e-5)
    assert "dr" in ETFDotRegression().loss(model, batch(), ctx)


def test_cores_initialisation_options():
    scenario = MultiStep(**SMALL, num_models=3)
    weights = {}
    for init in ("same", "random"):
        method = CoReS(CoresParams(init=init))
        for step in (0, 1):
            ctx = context(scenario, 6, step=step, seed=3)
            model = method.build_model(ctx, "convnet-s", 6)
            method.initialise(model, None, ctx)
            weights[init, step] = model.projection.weight.clone()
    assert torch.equal(weights["same", 0], weights["same", 1])
    assert torch.equal(weights["random", 0], weights["same", 0])
    assert not torch.equal(weights["random", 1], weights["random", 0])
    ctx = context(scenario, 6, step=1)
    previous = CoReS().build_model(ctx, "convnet-s", 6)
    ctx.old_model = frozen_copy(previous)
    model = CoReS(CoresParams(init="fine-tune")).build_model(ctx, "convnet-s", 6)
    CoReS(CoresParams(init="fine-tune")).initialise(model, None, ctx)
    assert torch.equal(model.projection.weight, previous.projection.weight)
    assert CoReS().unsupported_reason(CL2R()) and CoReS().unsupported_reason(scenario) is None
