"""HBCT: RINCE, the Lorentz MLR head, the objective's parts, zeta growth and Lorentz references."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from bbc_hyperbolic.common import HBCTParams, LorentzMethod, rince
from bbc_hyperbolic.hbct import HBCT
from bbc_hyperbolic.hbct_no_entail import HBCTNoEntail

from benchbackcompat import geometry
from benchbackcompat.cli import main
from benchbackcompat.scenarios.kinds import ExtClass, ModelZoo
from benchbackcompat.method import Batch
from benchbackcompat.models.lorentz import LorentzMLR, LorentzNetwork
from benchbackcompat.store import ResultStore


def test_rince_tends_to_infonce_plus_log_beta_as_q_goes_to_zero():
    torch.manual_seed(0)
    D = torch.rand(8, 8) * 4
    beta = 0.01
    infonce = F.cross_entropy(-D, torch.arange(8)) + math.log(beta)
    gaps = [abs(rince(D, torch.full((8,), q), beta) - infonce).item() for q in (0.5, 0.1, 0.01, 0.001)]
    assert gaps == sorted(gaps, reverse=True) and gaps[-1] < 0.03


def test_rince_at_q_one_by_hand_and_per_sample_q():
    D = torch.tensor([[0.5, 2.0], [3.0, 1.0]])
    beta = 0.01
    by_hand = [-math.exp(-0.5) + beta * (math.exp(-0.5) + math.exp(-2.0)),
               -math.exp(-1.0) + beta * (math.exp(-3.0) + math.exp(-1.0))]
    assert rince(D, torch.ones(2), beta).item() == pytest.approx(sum(by_hand) / 2, rel=1e-5)
    q = torch.tensor([1.0, 0.5])
    row1 = -math.exp(-0.5) / 0.5 + (beta * (math.exp(-3.0) + math.exp(-1.0))) ** 0.5 / 0.5
    assert rince(D, q, beta).item() == pytest.approx((by_hand[0] + row1) / 2, rel=1e-5)
    far = torch.full((3, 3), 500.0)  # every exp underflows: still finite
    far.requires_grad_()
    rince(far, torch.full((3,), 0.3), beta).backward()
    assert torch.isfinite(far.grad).all()


def test_lorentz_mlr_logit_is_the_signed_distance_to_the_class_hyperplane():
    head = LorentzMLR(3, 2, curvature=1.0)
    with torch.no_grad():
        head.a.zero_()
        head.z.copy_(torch.tensor([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0]]))
    t = 0.7
    h = geometry.expmap0(torch.tensor([[t, 0.0, 0.0], [-t, 0.0, 0.0]]))
    logits = head(h)
    # hyperplane through the origin orthogonal to e1: the signed distance of exp0(t e1) is t;
    # the second class's hyperplane contains both points (logit 0)
    assert logits[:, 0].tolist() == pytest.approx([t, -t], abs=1e-5)
    assert logits[:, 1].tolist() == pytest.approx([0.0, 0.0], abs=1e-6)
    with torch.no_grad():
        head.a.fill_(0.3)  # shifted hyperplane: alpha = cosh(a)<z, h_s> - sinh(a)|z| h_t
    alpha = math.cosh(0.3) * math.sinh(t) - math.sinh(0.3) * math.cosh(t)
    assert head(h[:1])[0, 0].item() == pytest.approx(math.asinh(alpha), abs=1e-5)


def _context(step: int, old=None, embedding_dim: int = 16):
    scenario = SimpleNamespace(model=SimpleNamespace(embedding_dim=embedding_dim))
    return SimpleNamespace(scenario=scenario, step=SimpleNamespace(index=step), image_size=16,
                           train_data=SimpleNamespace(images=torch.zeros(1, 3, 16, 16)), old_model=old)


def test_zeta_grows_by_0_2_per_update_and_bounds_the_tangent_norm():
    method = HBCT()
    models = [method.build_model(_context(t), "convnet-s", 5) for t in range(4)]
    assert [m.zeta for m in models] == pytest.approx([1.0, 1.2, 1.4, 1.6])
    assert isinstance(models[0], LorentzNetwork) and models[0].head.num_classes == 5
    x = torch.randn(6, 3, 16, 16) * 50
    for model in models:
        z = model.tangent(x)
        assert z.norm(dim=1).max() <= model.zeta + 1e-5
        assert torch.allclose(model.lift(x), geometry.expmap0(z))


def test_loss_is_ce_plus_lambda_entail_plus_contrast_and_the_ablation_drops_entail():
    torch.manual_seed(0)
    old = LorentzMethod().build_model(_context(0), "convnet-s", 3).eval()
    for p in old.parameters():
        p.requires_grad_(False)
    batch = Batch(torch.randn(8, 3, 16, 16), torch.randint(0, 5, (8,)), torch.zeros(8, dtype=torch.bool))
    for cls in (HBCT, HBCTNoEntail):
        method = cls()
        torch.manual_seed(1)
        model = method.build_model(_context(1), "convnet-s", 5)
        terms = method.loss(model, batch, _context(1, old))
        p = method.params
        align = terms["contrast"] + (terms["entail"] if cls is HBCT else 0.0)
        assert terms["loss"].item() == pytest.approx((terms["ce"] + p.lam * align).item(), rel=1e-6)
        assert ("entail" in terms) == (cls is HBCT)
        # the parts written out in float64 from the hyperboloid coordinates (K = 1), not through geometry
        h_new, h_old = model.lift(batch.images).double(), old.lift(batch.images).double()
        lorentz = h_new[:, 1:] @ h_old[:, 1:].T - h_new[:, :1] * h_old[:, :1].T
        D = torch.acosh((-lorentz).clamp_min(1.0)) / p.tau
        q = 1 - h_old[:, 1:].norm(dim=1) / h_old[:, 0]  # Eq. 10: 1 - |h_s| / h_t
        per_sample = -torch.exp(-q * D.diagonal()) / q + (p.beta * torch.exp(-D).sum(1)) ** q / q  # Eq. 12
        assert terms["contrast"].item() == pytest.approx(per_sample.mean().item(), rel=1e-4)
        assert 1 - math.tanh(1.0) - 1e-6 <= terms["q"].item() <= 1.0  # |z_old| <= zeta_old = 1
        if cls is HBCT:
            # exterior angle at the parent h_old by the hyperbolic law of cosines in the triangle (O, h_old, h_new)
            a = torch.acosh((-(h_new[:, 1:] * h_old[:, 1:]).sum(1) + h_new[:, 0] * h_old[:, 0]).clamp_min(1.0))
            b, c = torch.acosh(h_old[:, 0]), torch.acosh(h_new[:, 0])
            cos_gamma = (torch.cosh(a) * torch.cosh(b) - torch.cosh(c)) / (torch.sinh(a) * torch.sinh(b))
            exterior = math.pi - torch.acos(cos_gamma.clamp(-1, 1))
            aperture = torch.asin((2 * p.min_radius / h_old[:, 1:].norm(dim=1)).clamp(max=1.0))
            entail = torch.relu(exterior - aperture).mean()
            assert terms["entail"].item() == pytest.approx(entail.item(), abs=3e-3)  # float32 arccos near +-1
        terms["loss"].backward()
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        assert grads and all(torch.isfinite(g).all() for g in grads)
    first = HBCT().loss(model, batch, _context(0))
    assert set(first) == {"loss", "ce"}


def test_references_are_lorentz_models_and_params_validate():
    method = HBCT(HBCTParams(curvature=0.7))
    reference = method.reference()
    assert type(reference) is LorentzMethod and reference.params.curvature == 0.7
    assert reference.build_model.__qualname__ == method.build_model.__qualname__  # old model shared with the reference
    q = geometry.expmap0(torch.tensor([[0.5, 0.0]]), 0.7)
    g = geometry.expmap0(torch.tensor([[0.4, 0.0], [-0.5, 0.0]]), 0.7)
    assert torch.allclose(method.similarity()(q, g), -geometry.pairwise_distance(q, g, 0.7))
    assert method.unsupported_reason(ModelZoo(zoo=["a", "b"])) and method.unsupported_reason(ExtClass()) is None
    with pytest.raises(ValueError):
        HBCTParams(tau=0)


TINY = ["--set", "data.num_classes=6", "--set", "data.train_per_class=40", "--set", "data.test_per_class=12",
        "--set", "data.open_classes=4", "--set", "data.pretrain_classes=8", "--set", "train.batch_size=32",
        "--set", "model.embedding_dim=16"]


@pytest.mark.slow
def test_ext_class_run_reports_lorentz_references_and_beats_independent(tmp_path, capsys):
    args = ["run", "--out", str(tmp_path), *TINY, "--set", "train.epochs=3", "--scenario", "ext-class"]
    assert main([*args, "--methods", "hbct,independent"]) == 0
    assert "| hbct" in capsys.readouterr().out
    records = {r.method: r for r in ResultStore(tmp_path).records()}
    hbct, independent = records["hbct"].metrics["map"], records["independent"].metrics["map"]
    assert records["hbct"].status == "finished"
    # Lorentz references: P_com divides by HBCT's own old model, a Lorentz model unlike the Euclidean one
    assert hbct.p_com == pytest.approx((hbct.cross - hbct.old_self) / (hbct.reference_self - hbct.old_self))
    assert hbct.old_self != pytest.approx(independent.old_self)
    assert hbct.cross > independent.cross


def test_the_alignment_terms_put_each_new_embedding_next_to_its_old_one_inside_its_cone():
    """Free new tangent vectors (clip 1.2) optimised with RINCE + L_entail against confident old
    points (|z_o| = zeta_old = 1): each new point's nearest old point becomes its own, and it ends in
    the old point's cone, further from the origin (the arrow of time)."""
    torch.manual_seed(0)
    z_old = F.normalize(torch.randn(8, 16), dim=1)
    h_old, q = geometry.expmap0(z_old), geometry.uncertainty(z_old)
    z_new = (torch.randn(8, 16) * 0.4).requires_grad_()
    new = lambda: geometry.expmap0(geometry.rescale_clip(z_new * 4, 1.2))  # noqa: E731
    assert not torch.equal(geometry.pairwise_distance(new(), h_old).argmin(1), torch.arange(8))
    optimiser = torch.optim.Adam([z_new], lr=0.05)
    for _ in range(150):
        h_new = new()
        loss = rince(geometry.pairwise_distance(h_new, h_old) / 0.5, q, 0.01) + geometry.entailment_loss(h_old, h_new).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    with torch.no_grad():
        h_new = new()
        assert torch.equal(geometry.pairwise_distance(h_new, h_old).argmin(1), torch.arange(8))
        assert geometry.entailment_loss(h_old, h_new).mean() < 0.02
        assert (h_new[:, 1:].norm(dim=1) > h_old[:, 1:].norm(dim=1)).all()


@pytest.mark.slow
def test_sequential_updates_fine_tune_previous_with_growing_zeta(tmp_path):
    args = ["run", "--out", str(tmp_path), *TINY, "--set", "train.epochs=1", "--scenario", "multi-step",
            "--set", "num_models=3", "--set", "init=previous", "--methods", "hbct"]
    assert main(args) == 0
    (record,) = ResultStore(tmp_path).records()
    C = record.matrices["cmc@1"]
    assert record.status == "finished" and all(math.isfinite(C[t][k]) for t in range(3) for k in range(t + 1))
    curves = ResultStore(tmp_path).curves(record.key)
    assert all("entail" in curves[str(t)][0] for t in (1, 2))  # aligned to the previous model
